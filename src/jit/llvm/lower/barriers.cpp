// The barrier side of the work-group function with barriers (buildCbs): markers isolated, the blocks
// each barrier reaches, and which barriers are uniform.
#include "lowering.h"

namespace ol_rs::lower {


bool Lowering::firstCallTo(BasicBlock *BB, Function *Fn) {
  auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
  return CI && CI->getCalledFunction() == Fn && Fn;
}


// Continuation-based synchronisation. F = K.body with barrier/exit markers; sets scratchPerWi to
// the scratch bytes each work-item needs. The steps below run in order on one CbsState.
bool Lowering::buildCbs(Function *F, uint64_t &scratchPerWi, unsigned chunk) {
  CbsState st;
  st.F = F;
  st.chunk = chunk;
  st.o = F->arg_size() - E_COUNT;
  st.BM = M.getFunction("__ol_rs.barrier");
  st.EM = M.getFunction("__ol_rs.exit");
  removeUnreachableBlocks(*F);
  if (!cbsCheckAllocas(st))
    return false;
  if (!chunk && on(T_GROUP_LOOPS))
    groupLoops(F);
  if (!chunk && on(T_BLOCK_STRIDE_LOOPS) && on(T_UNIFORM_BARRIERS) && on(T_IMPLICIT_LOOP_BARRIERS))
    blockStrideLoops(F); // (for ol-implicit-loop-barriers: before the divergence it changes)
  st.entry = &F->getEntryBlock();
  cbsDivergence(st);
  cbsIsolateMarkers(st);
  cbsWarpLanes(st);
  if (chunk) // (the implicit barriers of ol-lockstep-loops are divergent: the general scheduler)
    st.uniform = false;
  else if (!st.warpMode)
    cbsUniformBarriers(st);
  cbsActiveLanes(st);
  cbsDemotePhis(st);
  cbsFindHoistable(st);
  cbsDemoteLiveAcross(st);
  cbsWidenBoolSlots(st);
  if (on(T_SCOPE_SLOTS))
    scopeSlots(F, st.demoted);
  cbsLayout(st);
  // per work-item: the slots (S bytes), an exchange slot (8; a second with ol-alternate-exchanges), a
  // resume id (4); readLane's loads reach up to W - 1 exchange slots before and after the areas (a
  // whole-warp specialisation: at least W work-items), into the slots (at least 8 bytes each) and 8
  // bytes of padding per work-item
  if (exchangeReach)
    st.S = std::max<uint64_t>(st.S, 8);
  st.xchgBytes = secondArea ? 16 : 8;
  // (and with active-lane markers under the general scheduler, a mask per warp after the resume ids: 8
  // bytes per work-item cover them, whatever the warp width and group size)
  scratchPerWi = st.S + st.xchgBytes + 4 + (exchangeReach || !st.activeCalls.empty() ? 8 : 0);
  cbsRegionEntries(st);
  IRBuilder<> B(st.NE);
  cbsScheduler(st, B);
  for (size_t k = 0; k < st.regionEntry.size(); ++k)
    cbsRegion(st, B, k);
  return cbsFinish(st);
}


// Step 2d (takes st.warpMode, st.uniform; gives st.activeCalls): the lanes a warp collective computes over
// where the lanes of a warp may reach it apart (replaceIntrinsics' `__ol_rs.warp_active(base, n)` markers).
// Under ol-warp-lanes and uniform barriers all lanes of a warp leave each region through the same
// barrier, so every lane that exists runs each exchange: the mask of the warp's n lanes. Under the
// general scheduler the work-items that run a region in one pass are those waiting at its barrier (it
// runs the smallest pending region), the lanes that reach the collective together: each marker is
// every lane where all work-items run the region (`uni`), else its warp's mask, an i64 per warp after the
// resume ids that the scheduler sets before such a region (cbsActiveFlags).
void Lowering::cbsActiveLanes(CbsState &st) {
  Function *WA = M.getFunction("__ol_rs.warp_active");
  if (!WA)
    return;
  for (User *U : make_early_inc_range(WA->users()))
    if (auto *CI = dyn_cast<CallInst>(U); CI && CI->getFunction() == st.F) {
      if (st.warpMode || st.uniform) {
        IRBuilder<> B(CI);
        CI->replaceAllUsesWith(allLanes(B, CI->getArgOperand(1)));
        CI->eraseFromParent();
      } else {
        st.activeCalls.push_back(CI);
      }
    }
}


// The mask of a warp's n lanes.
Value *Lowering::allLanes(IRBuilder<> &B, Value *nInWarp) {
  Value *n = B.CreateZExt(nInWarp, I64);
  return B.CreateSelect(B.CreateICmpUGE(n, ConstantInt::get(I64, 64)), ConstantInt::get(I64, ~0ULL),
                        B.CreateSub(B.CreateShl(ConstantInt::get(I64, 1), n), ConstantInt::get(I64, 1)));
}


// The masks of cbsActiveLanes (st.act, after the resume ids), for the work-items the scan covers: bit
// i % W of warp i / W's is whether work-item i resumes at `region`; the scheduler sets them before a
// region that not every work-item runs. No region: the markers become `uni ? every lane : their warp's
// mask` (`uni`: every work-item runs the region; the region loops' version for it has no load).
void Lowering::cbsActiveFlags(CbsState &st, IRBuilder<> &B, Value *region) {
  Value *W = ConstantInt::get(I32, warp);
  if (!region) {
    for (CallInst *CI : st.activeCalls) {
      IRBuilder<> BI(CI);
      Value *w = BI.CreateZExt(BI.CreateUDiv(CI->getArgOperand(0), W), I64);
      Value *mask = BI.CreateAlignedLoad(I64, BI.CreateGEP(I64, st.act, w), Align(1));
      CI->replaceAllUsesWith(BI.CreateSelect(st.uniV, allLanes(BI, CI->getArgOperand(1)), mask));
      CI->eraseFromParent();
    }
    return;
  }
  // for each warp, a loop over its lanes that ORs their bits in a register (an or-reduction the loop
  // vectoriser takes), one store per warp
  Function *F = st.F;
  Value *w0 = B.CreateUDiv(st.wiLo, W);
  Value *w1 = B.CreateUDiv(B.CreateAdd(st.wiHi, ConstantInt::get(I32, warp - 1)), W);
  BasicBlock *pre = B.GetInsertBlock();
  BasicBlock *wHead = BasicBlock::Create(C, "cbs.active.warp", F);
  BasicBlock *loop = BasicBlock::Create(C, "cbs.active.lane", F);
  BasicBlock *wEnd = BasicBlock::Create(C, "cbs.active.store", F);
  BasicBlock *done = BasicBlock::Create(C, "cbs.active.done", F);
  B.CreateCondBr(B.CreateICmpULT(w0, w1), wHead, done);
  B.SetInsertPoint(wHead);
  PHINode *w = B.CreatePHI(I32, 2, "act.w");
  w->addIncoming(w0, pre);
  Value *lo = B.CreateBinaryIntrinsic(Intrinsic::umax, B.CreateMul(w, W), st.wiLo);
  Value *end = B.CreateMul(B.CreateAdd(w, ConstantInt::get(I32, 1)), W);
  Value *hi = B.CreateBinaryIntrinsic(Intrinsic::umin, end, st.wiHi);
  B.CreateBr(loop);
  B.SetInsertPoint(loop);
  PHINode *i = B.CreatePHI(I32, 2, "act.i");
  PHINode *m = B.CreatePHI(I64, 2, "act.m");
  i->addIncoming(lo, wHead);
  m->addIncoming(ConstantInt::get(I64, 0), wHead);
  Value *r = B.CreateLoad(I32, B.CreateGEP(I32, st.resume, B.CreateZExt(i, I64)));
  Value *bit = B.CreateShl(B.CreateZExt(B.CreateICmpEQ(r, region), I64), B.CreateZExt(B.CreateURem(i, W), I64));
  Value *m2 = B.CreateOr(m, bit);
  Value *i2 = B.CreateAdd(i, ConstantInt::get(I32, 1), "", true, true);
  i->addIncoming(i2, loop);
  m->addIncoming(m2, loop);
  B.CreateCondBr(B.CreateICmpULT(i2, hi), loop, wEnd);
  B.SetInsertPoint(wEnd);
  B.CreateAlignedStore(m2, B.CreateGEP(I64, st.act, B.CreateZExt(w, I64)), Align(1));
  Value *wn = B.CreateAdd(w, ConstantInt::get(I32, 1), "", true, true);
  w->addIncoming(wn, wEnd);
  B.CreateCondBr(B.CreateICmpULT(wn, w1), wHead, done);
  B.SetInsertPoint(done);
}


// Step 1 (takes F; gives false with an error if it cannot be lowered): dynamic allocas are not supported.
bool Lowering::cbsCheckAllocas(CbsState &st) {
  for (BasicBlock &BB : *st.F)
    for (Instruction &I : BB)
      if (auto *AI = dyn_cast<AllocaInst>(&I))
        if (!AI->isStaticAlloca() || !AI->getAllocatedType()->isSized())
          return fail("dynamic alloca in a kernel with barriers is not supported");
  return true;
}


// Step 1 (takes F; gives st.div, st.divTerm): the divergent values, and the terminators whose
// successor choice may differ between work-items (taken before PHI demotion, which replaces i1 PHI
// conditions by loads the analysis has not seen).
void Lowering::cbsDivergence(CbsState &st) {
  Function *F = st.F;
  st.div = divergentValues(F);
  st.divTerm = divergentTerms(F, st.div);
}


// Step 2 (takes F; changes its blocks): isolate markers into their own blocks: a barrier is alone in
// its block (which then has a single successor), an exit marker starts its block.
void Lowering::cbsIsolateMarkers(CbsState &st) {
  Function *F = st.F, *BM = st.BM, *EM = st.EM;
  std::vector<CallInst *> marks;
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
          marks.push_back(CI);
  for (CallInst *CI : marks) {
    BasicBlock *BB = CI->getParent();
    if (&*BB->getFirstNonPHIIt() != CI || BB == &F->getEntryBlock() || isa<PHINode>(BB->front()))
      BB = BB->splitBasicBlock(CI->getIterator(), "cbs.mark");
    if (CI->getCalledFunction() == BM)
      BB->splitBasicBlock(std::next(CI->getIterator()), "cbs.after");
  }
}


// st.reach[B]: the barrier blocks (nullptr = exit) reachable from B without crossing a barrier.
void Lowering::cbsComputeReach(CbsState &st) {
  auto &reach = st.reach;
  reach.clear();
  for (bool changed = true; changed;) {
    changed = false;
    for (BasicBlock &BB : *st.F) {
      std::set<BasicBlock *> r;
      if (st.isBarrierBlk(&BB))
        r.insert(&BB);
      else if (st.isExitBlk(&BB))
        r.insert(nullptr);
      else
        for (BasicBlock *S : successors(&BB)) {
          auto it = reach.find(S);
          if (it != reach.end())
            r.insert(it->second.begin(), it->second.end());
        }
      std::set<BasicBlock *> &cur = reach[&BB];
      if (r != cur) {
        cur = std::move(r);
        changed = true;
      }
    }
  }
}


// Step 2b (takes st.divTerm; gives st.uniform, st.reach; may add barriers): uniform barriers. When
// every branch whose direction may differ between work-items leads (without crossing a barrier) to
// a single barrier or exit, all work-items of a group reach the same barriers in the same order.
// Then no per-work-item resume state is needed (see step 5), and every uniform branch that chooses
// between different barriers/exits gets an implicit barrier on each out-edge, so the choice is made
// once per group and each region starts at its own code (where a guard on the work-item id can
// narrow the work-item loop).
void Lowering::cbsUniformBarriers(CbsState &st) {
  Function *F = st.F, *BM = st.BM, *EM = st.EM;
  auto &divTerm = st.divTerm;
  auto &reach = st.reach;
  bool &uniform = st.uniform;
  auto isBarrierBlk = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
  auto isExitBlk = [&](BasicBlock *BB) { return st.isExitBlk(BB); };
  auto computeReach = [&]() { cbsComputeReach(st); };
  computeReach();
  uniform = true;
  for (BasicBlock &BB : *F)
    if (!isBarrierBlk(&BB) && !isExitBlk(&BB) && divTerm.count(BB.getTerminator()) && reach[&BB].size() > 1)
      uniform = false;
  if (uniform && !on(T_UNIFORM_BARRIERS))
    uniform = false;
  else if (uniform)
    fired(T_UNIFORM_BARRIERS);
  std::set<BasicBlock *> underDivergence;
  if (uniform && on(T_IMPLICIT_LOOP_BARRIERS))
    underDivergence = interchangeLoops(F, divTerm, BM, EM, reach, computeReach,
                                       [&](BasicBlock *BB) { return isBarrierBlk(BB) || isExitBlk(BB); });
  if (uniform) {
    std::vector<BasicBlock *> blks;
    for (BasicBlock &BB : *F)
      blks.push_back(&BB);
    for (BasicBlock *Xb : blks) {
      Instruction *T = Xb->getTerminator();
      if (isBarrierBlk(Xb) || T->getNumSuccessors() < 2 || reach[Xb].size() <= 1 || divTerm.count(T) ||
          underDivergence.count(Xb))
        continue;
      std::map<BasicBlock *, unsigned> edges;
      for (unsigned i = 0; i < T->getNumSuccessors(); ++i)
        ++edges[T->getSuccessor(i)];
      for (unsigned i = 0; i < T->getNumSuccessors(); ++i) {
        BasicBlock *S = T->getSuccessor(i);
        if (isBarrierBlk(S) || edges[S] != 1)
          continue;
        BasicBlock *N = BasicBlock::Create(C, "cbs.ibar", F);
        IRBuilder<> B(N);
        B.CreateCall(barrierMarker());
        B.CreateBr(S);
        S->replacePhiUsesWith(Xb, N);
        T->setSuccessor(i, N);
      }
    }
    computeReach();
  }
}

} // namespace ol_rs::lower
