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
  // (declared here if no kernel has them yet: the implicit barriers of a barrier-free kernel's loops,
  // ol-implicit-loop-barriers, are the first)
  st.BM = barrierMarker();
  st.EM = exitMarker();
  removeUnreachableBlocks(*F);
  if (!cbsCheckAllocas(st))
    return false;
  if (!chunk && on(T_GROUP_LOOPS))
    groupLoops(F);
  if (!chunk && !strideLoopsDone && on(T_BLOCK_STRIDE_LOOPS) && on(T_UNIFORM_BARRIERS) &&
      on(T_IMPLICIT_LOOP_BARRIERS))
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
  // bytes of padding per work-item (none of the exchanges' where their areas are on the stack,
  // ol-warp-local-exchanges)
  st.localXchg = cbsWarpLocalExchanges(st);
  bool reach = exchangeReach && !st.localXchg;
  if (reach)
    st.S = std::max<uint64_t>(st.S, 8);
  st.xchgBytes = st.localXchg ? 0 : secondArea ? 16 : 8;
  // (and with active-lane markers under the general scheduler, a mask per warp after the resume ids: 8
  // bytes per work-item cover them, whatever the warp width and group size)
  scratchPerWi = st.S + st.xchgBytes + 4 + (reach || !st.activeCalls.empty() || st.gone ? 8 : 0);
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
// resume ids that the scheduler sets before such a region (cbsActiveFlags). Under ol-early-exits the
// lanes of the warp that have not exited (`uni ? every lane : the warp's mask`, which cbsLiveLanes keeps).
void Lowering::cbsActiveLanes(CbsState &st) {
  Function *WA = M.getFunction("__ol_rs.warp_active");
  if (!WA)
    return;
  for (User *U : make_early_inc_range(WA->users()))
    if (auto *CI = dyn_cast<CallInst>(U); CI && CI->getFunction() == st.F) {
      if ((st.warpMode || st.uniform) && !st.gone) {
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


// The masks of cbsActiveLanes (st.act, after the resume ids), for the work-items [lo, hi) (default: those
// the scan covers): bit i % W of warp i / W's is whether work-item i resumes at `region`; the scheduler
// sets them before a region that not every work-item runs. Gives the number of bits set. No region: the
// markers become `uni ? every lane : their warp's mask` (`uni`: every work-item runs the region; the
// region loops' version for it has no load; ol-early-exits keeps its markers for cbsLiveMasks).
Value *Lowering::cbsActiveFlags(CbsState &st, IRBuilder<> &B, Value *region, Value *lo0, Value *hi0) {
  Value *W = ConstantInt::get(I32, warp);
  if (!region) {
    for (CallInst *CI : st.activeCalls) {
      IRBuilder<> BI(CI);
      Value *w = BI.CreateZExt(BI.CreateUDiv(CI->getArgOperand(0), W), I64);
      Value *mask = BI.CreateAlignedLoad(I64, BI.CreateGEP(I64, st.act, w), Align(1));
      CI->replaceAllUsesWith(BI.CreateSelect(st.uniV, allLanes(BI, CI->getArgOperand(1)), mask));
      CI->eraseFromParent();
    }
    return nullptr;
  }
  // for each warp, a loop over its lanes that ORs their bits in a register (an or-reduction the loop
  // vectoriser takes), one store per warp
  Function *F = st.F;
  Value *wiLo = lo0 ? lo0 : st.wiLo, *wiHi = hi0 ? hi0 : st.wiHi;
  Value *w0 = B.CreateUDiv(wiLo, W);
  Value *w1 = B.CreateUDiv(B.CreateAdd(wiHi, ConstantInt::get(I32, warp - 1)), W);
  BasicBlock *pre = B.GetInsertBlock();
  BasicBlock *wHead = BasicBlock::Create(C, "cbs.active.warp", F);
  BasicBlock *loop = BasicBlock::Create(C, "cbs.active.lane", F);
  BasicBlock *wEnd = BasicBlock::Create(C, "cbs.active.store", F);
  BasicBlock *done = BasicBlock::Create(C, "cbs.active.done", F);
  B.CreateCondBr(B.CreateICmpULT(w0, w1), wHead, done);
  B.SetInsertPoint(wHead);
  PHINode *w = B.CreatePHI(I32, 2, "act.w");
  PHINode *n = B.CreatePHI(I32, 2, "act.n");
  w->addIncoming(w0, pre);
  n->addIncoming(ConstantInt::get(I32, 0), pre);
  Value *lo = B.CreateBinaryIntrinsic(Intrinsic::umax, B.CreateMul(w, W), wiLo);
  Value *end = B.CreateMul(B.CreateAdd(w, ConstantInt::get(I32, 1)), W);
  Value *hi = B.CreateBinaryIntrinsic(Intrinsic::umin, end, wiHi);
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
  Value *n2 = B.CreateAdd(n, B.CreateTrunc(B.CreateUnaryIntrinsic(Intrinsic::ctpop, m2), I32));
  Value *wn = B.CreateAdd(w, ConstantInt::get(I32, 1), "", true, true);
  w->addIncoming(wn, wEnd);
  n->addIncoming(n2, wEnd);
  B.CreateCondBr(B.CreateICmpULT(wn, w1), wHead, done);
  B.SetInsertPoint(done);
  PHINode *count = B.CreatePHI(I32, 2, "act.count");
  count->addIncoming(ConstantInt::get(I32, 0), pre);
  count->addIncoming(n2, wEnd);
  return count;
}


// ol-early-exits, region R: whether every lane the region runs for is still running, computed once in its
// prologue (R.liveAll): under ol-warp-lanes whether the warp's mask of them is full, otherwise `uni`.
Value *Lowering::cbsAllLive(CbsState &st, CbsRegion &R) {
  if (R.liveAll)
    return R.liveAll;
  IRBuilder<> B(R.Pre->getTerminator());
  if (st.warpMode) {
    Value *w = B.CreateLShr(B.CreateAdd(R.wrow, R.xw), Log2_32(warp));
    R.liveMask = B.CreateAlignedLoad(I64, B.CreateGEP(I64, st.act, B.CreateZExt(w, I64)), Align(1), "live");
    R.liveAll = B.CreateICmpEQ(R.liveMask, allLanes(B, ConstantInt::get(I32, warp)), "all.live");
  } else {
    R.liveAll = B.CreateLoad(I1Ty(), st.uniA, "uni");
  }
  return R.liveAll;
}


// ol-early-exits, region R (takes R's clones): its active-lane markers are the masks of the lanes that
// have not exited, which cbsLiveLanes keeps current for every warp: under ol-warp-lanes the warp's, loaded
// once in the region's prologue; otherwise the work-item's warp's, every lane while all run (`uni`).
void Lowering::cbsLiveMasks(CbsState &st, CbsRegion &R) {
  for (CallInst *CI : st.activeCalls) {
    auto it = R.VM.find(CI);
    if (it == R.VM.end() || !it->second)
      continue;
    auto *Cl = cast<CallInst>(it->second);
    Value *all = cbsAllLive(st, R);
    IRBuilder<> B(Cl);
    Value *mask = R.liveMask;
    if (!st.warpMode) {
      Value *w = B.CreateZExt(B.CreateUDiv(Cl->getArgOperand(0), ConstantInt::get(I32, warp)), I64);
      mask = B.CreateAlignedLoad(I64, B.CreateGEP(I64, st.act, w), Align(1), "live");
    }
    // (every lane, not the same mask loaded, where all run: a constant in the region loop's copy for it)
    Cl->replaceAllUsesWith(B.CreateSelect(all, allLanes(B, Cl->getArgOperand(1)), mask));
    Cl->eraseFromParent();
  }
}


// ol-early-exits, after a region (B at the end of cbs.scan, which then goes to `then`; nullptr: in the group
// prologue, every lane of every warp running, `uni` true): what the region's prologue set in `exits`
// (LIVE_*). Where work-items may have exited, the masks of those still running (resume id 0) of the warp
// just run (ol-warp-lanes: one vector compare of its resume ids) or of every warp (cbsActiveFlags; `uni`
// false once one has exited); where none is left, the group is done, or under ol-warp-lanes the warp, and
// `next` what the other warps made it (`prev`). Where every lane of the warp left, its mask is 0.
void Lowering::cbsLiveLanes(CbsState &st, IRBuilder<> &B, BasicBlock *then) {
  if (!then) { // (each warp's mask of its lanes: a loop of stores the vectoriser takes)
    Value *W = ConstantInt::get(I32, warp);
    Value *w0 = B.CreateUDiv(st.wiLo, W);
    Value *w1 = B.CreateUDiv(B.CreateAdd(st.wiHi, ConstantInt::get(I32, warp - 1)), W);
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(C, "cbs.live.all", st.F);
    BasicBlock *done = BasicBlock::Create(C, "cbs.live.done", st.F);
    B.CreateCondBr(B.CreateICmpULT(w0, w1), loop, done);
    B.SetInsertPoint(loop);
    PHINode *w = B.CreatePHI(I32, 2, "live.w");
    w->addIncoming(w0, pre);
    Value *lanes = B.CreateBinaryIntrinsic(Intrinsic::umin, W, B.CreateSub(st.wiHi, B.CreateMul(w, W)));
    B.CreateAlignedStore(allLanes(B, lanes), B.CreateGEP(I64, st.act, B.CreateZExt(w, I64)), Align(1));
    Value *wn = B.CreateAdd(w, ConstantInt::get(I32, 1), "", true, true);
    w->addIncoming(wn, loop);
    B.CreateCondBr(B.CreateICmpULT(wn, w1), loop, done);
    B.SetInsertPoint(done);
    return;
  }
  Function *F = st.F;
  BasicBlock *scan = BasicBlock::Create(C, "cbs.live", F);
  BasicBlock *left = BasicBlock::Create(C, "cbs.left", F);
  Value *code = B.CreateLoad(I32, st.exitsA);
  SwitchInst *SW = B.CreateSwitch(code, then, 2);
  SW->addCase(ConstantInt::get(cast<IntegerType>(I32), LIVE_SCAN), scan);
  SW->addCase(ConstantInt::get(cast<IntegerType>(I32), LIVE_LEFT), left);
  auto warpIndex = [&]() { return B.CreateZExt(B.CreateLoad(I32, st.wp), I64); };
  B.SetInsertPoint(left); // (ol-warp-lanes only)
  if (st.warpMode)
    B.CreateAlignedStore(ConstantInt::get(I64, 0), B.CreateGEP(I64, st.act, warpIndex()), Align(1));
  B.CreateBr(then);
  B.SetInsertPoint(scan);
  Value *none;
  if (st.warpMode) {
    Value *w = warpIndex();
    auto *VT = FixedVectorType::get(I32, warp);
    Value *first = B.CreateGEP(I32, st.resume, B.CreateMul(w, ConstantInt::get(I64, warp)));
    Value *ids = B.CreateAlignedLoad(VT, first, Align(4));
    Value *bits = B.CreateBitCast(B.CreateICmpEQ(ids, Constant::getNullValue(VT)), IntegerType::get(C, warp));
    Value *mask = B.CreateZExtOrTrunc(bits, I64);
    B.CreateAlignedStore(mask, B.CreateGEP(I64, st.act, w), Align(1));
    none = B.CreateICmpEQ(mask, ConstantInt::get(I64, 0));
    B.CreateStore(B.CreateSelect(none, B.CreateLoad(I32, st.prevA), B.CreateLoad(I32, st.next)), st.next);
    B.CreateStore(B.CreateSelect(none, ConstantInt::get(I32, WARP_LEAVE), B.CreateLoad(I32, st.wnext)), st.wnext);
  } else {
    Value *count = cbsActiveFlags(st, B, ConstantInt::get(I32, 0), st.wiLo, st.wiHi);
    Value *all = B.CreateICmpEQ(count, B.CreateSub(st.wiHi, st.wiLo));
    B.CreateStore(B.CreateAnd(B.CreateLoad(I1Ty(), st.uniA), all), st.uniA);
    none = B.CreateICmpEQ(count, ConstantInt::get(I32, 0));
    B.CreateStore(B.CreateSelect(none, ConstantInt::get(I32, RESUME_EXIT), B.CreateLoad(I32, st.next)), st.next);
  }
  B.CreateBr(then);
}


// Step 1 (takes F; gives false with an error if it cannot be lowered): dynamic allocas are not supported.
bool Lowering::cbsCheckAllocas(CbsState &st) {
  std::vector<Instruction *> lifetimes;
  for (BasicBlock &BB : *st.F)
    for (Instruction &I : BB) {
      if (auto *AI = dyn_cast<AllocaInst>(&I))
        if (!AI->isStaticAlloca() || !AI->getAllocatedType()->isSized())
          return fail("dynamic alloca in a kernel with barriers is not supported");
      if (isa<LifetimeIntrinsic>(I))
        lifetimes.push_back(&I);
    }
  // (an alloca becomes slots in scratch or on the stack, addresses its lifetime markers may not name;
  // the markers only let LLVM reuse a variable's stack after it)
  for (Instruction *I : lifetimes)
    I->eraseFromParent();
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


// Step 2b (takes st.divTerm; gives st.uniform, st.gone, st.reach; may add barriers): uniform barriers.
// When every branch whose direction may differ between work-items leads (without crossing a barrier) to
// a single barrier or exit, all work-items of a group reach the same barriers in the same order. When
// each leads to a single barrier, the exit or both (a bounds guard around barriers or warp collectives:
// `if (i < n) { ... }`), every work-item that has not exited does: ol-early-exits (st.gone).
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
  bool gone = false;
  for (BasicBlock &BB : *F)
    if (!isBarrierBlk(&BB) && !isExitBlk(&BB) && divTerm.count(BB.getTerminator()) && reach[&BB].size() > 1) {
      gone = true;
      if (reach[&BB].size() - reach[&BB].count(nullptr) > 1)
        uniform = false;
    }
  if (uniform && (!on(T_UNIFORM_BARRIERS) || (gone && !on(T_EARLY_EXITS))))
    uniform = false;
  else if (uniform)
    fired(gone ? T_EARLY_EXITS : T_UNIFORM_BARRIERS);
  st.gone = uniform && gone;
  std::set<BasicBlock *> underDivergence;
  if (uniform && !gone && on(T_IMPLICIT_LOOP_BARRIERS))
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
