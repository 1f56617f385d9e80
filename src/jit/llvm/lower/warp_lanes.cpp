// ol-warp-lanes: warps scheduled on their own between group barriers, so that the barriers of a warp
// collective (a shuffle's, a ballot's exchange through scratch, tagged kWarpBarrierMD by emitExchange)
// only split a warp's W-lane loop, not the group's, and a branch that is the same for the lanes of a
// warp but not for the group (`if (t < lanes)` around the shuffles of the warps' totals) no longer
// sends the kernel to the general scheduler.
//
// The schedule (cbsWarpScheduler): at a group-level region (the kernel entry, a group barrier's
// successor: st.groupEntries) every warp wp = 0 .. nwarps-1 in turn runs from that region through the
// regions its warp barriers lead to (`wnext`, switched on in cbs.wsched), each region an x loop over the
// warp's W lanes (cbsWarpRegionLoop, parallel like every region loop), until it reaches a group barrier
// or the exit (cbsRecordExit: `next` for the group, `wnext` = WARP_LEAVE); then the next warp; after
// the last, the group goes on at `next`.
//
// Why it is legal (cbsWarpLanes checks it): a branch whose direction may differ between the lanes of a
// warp (divergentValues with the warp's width) reaches at most one barrier or exit, so all lanes of a
// warp leave a region through the same barrier; a branch that may differ between the group's
// work-items reaches at most one group barrier or exit, warp barriers crossed, so all warps reach the
// same group barriers in the same order. Between two group barriers GPU code may not rely on any order
// of its warps. Values the same for a warp's lanes live in one slot per warp (CbsRegion::uniPtrW).
// It needs a specialisation whose group size's x is a multiple of W (a warp is W consecutive x ids of
// one row, its first x id xw a multiple of W): then the lane id and a warp's number of lanes are known
// in the region loop (cbsWarpLaneIds: `lx - xw`, the loop's second induction variable, and W).
#include "lowering.h"

namespace ol_rs::lower {


// Step 2b, first (takes st.div, st.divTerm, the isolated markers; gives st.warpMode and, when set,
// st.uniform, st.reach, and the warp-level st.div and st.divTerm): whether the kernel runs warp by warp.
void Lowering::cbsWarpLanes(CbsState &st) {
  Function *F = st.F;
  if (!on(T_WARP_LANES) || !on(T_UNIFORM_BARRIERS) || specKernel.empty() || warp < 2 || !isPowerOf2_32(warp) ||
      specGs[0] % warp != 0)
    return;
  unsigned warpBarriers = 0;
  for (BasicBlock &BB : *F)
    warpBarriers += st.isWarpBarrierBlk(&BB);
  if (!warpBarriers)
    return;
  std::set<Value *> wdiv = divergentValues(F, warp);
  std::set<Instruction *> wdivTerm = divergentTerms(F, wdiv);
  if (!warpLanesHold(st, wdivTerm)) {
    st.gone = false;
    return;
  }
  if (on(T_IMPLICIT_LOOP_BARRIERS)) {
    WarpInterchange wl{wdiv, [&]() { return warpLanesHold(st, wdivTerm); }};
    interchangeLoops(
        F, wdivTerm, st.BM, st.EM, st.reach, [&]() { cbsComputeReach(st); },
        [&](BasicBlock *BB) { return st.isBarrierBlk(BB) || st.isExitBlk(BB); }, &wl);
  }
  if (on(T_ALTERNATE_EXCHANGES))
    cbsDropExchangeEnds(st, wdivTerm);
  warpLanesHold(st, wdivTerm); // (st.gone for the final barriers)
  if (st.gone)
    fired(T_EARLY_EXITS);
  st.warpMode = true;
  st.uniform = true;
  st.div = std::move(wdiv);
  st.divTerm = std::move(wdivTerm);
  fired(T_WARP_LANES, warpBarriers);
}


// Whether warps can run on their own with the barriers F has now (st.divTerm the group-level divergent
// terminators, wdivTerm the warp-level ones; gives st.reach, st.gone): every branch that may differ
// between a warp's lanes reaches at most one barrier or exit, every branch that may differ between warps at
// most one group barrier or exit, warp barriers crossed. With ol-early-exits, a barrier, the exit or both:
// then the lanes that have not exited do (st.gone).
bool Lowering::warpLanesHold(CbsState &st, const std::set<Instruction *> &wdivTerm) {
  Function *F = st.F;
  st.gone = false;
  std::unique_ptr<PostDominatorTree> PDT;
  auto isGroupBarrier = [&](BasicBlock *BB) { return st.isBarrierBlk(BB) && !st.isWarpBarrierBlk(BB); };
  // whether lanes that take different ways from BB's branch to the sync points `r` may be apart there: not
  // when its ways meet again before any sync point (`if (b + lane < n)` in a loop whose uniform latch then
  // chooses between barriers, ol-implicit-loop-barriers); else with ol-early-exits, where the others exit
  auto apart = [&](BasicBlock *BB, const std::set<BasicBlock *> &r, bool group) {
    if (r.size() <= 1)
      return false;
    if (!PDT)
      PDT = std::make_unique<PostDominatorTree>(*F);
    std::set<BasicBlock *> before;
    if (meetBeforeSync(BB, *PDT, [&](BasicBlock *X) {
          return (group ? isGroupBarrier(X) : st.isBarrierBlk(X)) || st.isExitBlk(X);
        }, before))
      return false;
    st.gone = true;
    return !on(T_EARLY_EXITS) || r.size() - r.count(nullptr) > 1;
  };
  cbsComputeReach(st);
  for (BasicBlock &BB : *F)
    if (!st.isBarrierBlk(&BB) && !st.isExitBlk(&BB) && wdivTerm.count(BB.getTerminator()) &&
        apart(&BB, st.reach[&BB], false))
      return false;
  // the group barriers (nullptr = exit) reachable without crossing one, warp barriers crossed
  std::map<BasicBlock *, std::set<BasicBlock *>> greach;
  for (bool changed = true; changed;) {
    changed = false;
    for (BasicBlock &BB : *F) {
      std::set<BasicBlock *> r;
      if (isGroupBarrier(&BB))
        r.insert(&BB);
      else if (st.isExitBlk(&BB))
        r.insert(nullptr);
      else
        for (BasicBlock *S : successors(&BB)) {
          auto it = greach.find(S);
          if (it != greach.end())
            r.insert(it->second.begin(), it->second.end());
        }
      std::set<BasicBlock *> &cur = greach[&BB];
      if (r != cur) {
        cur = std::move(r);
        changed = true;
      }
    }
  }
  for (BasicBlock &BB : *F)
    if (!isGroupBarrier(&BB) && !st.isExitBlk(&BB) && st.divTerm.count(BB.getTerminator()) &&
        apart(&BB, greach[&BB], true))
      return false;
  return true;
}


// ol-alternate-exchanges (takes the exchanges' area tags, emitExchange; gives st.reach): the warp barrier
// after an exchange's reads (there so that no lane overwrites the area before every lane has read it)
// goes where every exchange store reachable from it before another barrier writes the other area:
// consecutive exchanges take turns (a shuffle loop clang unrolled: wscan's five), so the next one's store
// cannot clobber what this one's lanes still read. Then an exchange is one region boundary, not two: its
// reads, the code after them and the next exchange's store run in one lane loop. Legal under ol-warp-lanes
// only: a warp's lanes run each region to its end before any of them runs the next, so every lane has
// read this exchange before any lane passes the next one's barrier, after which the area may be written
// again. Kept where that would break the conditions of ol-warp-lanes (warpLanesHold) or where the same
// area is written again before a barrier (an exchange alone in a loop).
void Lowering::cbsDropExchangeEnds(CbsState &st, const std::set<Instruction *> &wdivTerm) {
  auto areaOf = [&](Instruction *I) -> int {
    MDNode *N = I->getMetadata(kExchangeAreaMD);
    return N ? (int)mdconst::extract<ConstantInt>(N->getOperand(0))->getZExtValue() : -1;
  };
  std::vector<BasicBlock *> ends;
  for (BasicBlock &BB : *st.F)
    if (st.isWarpBarrierBlk(&BB) && areaOf(&*BB.getFirstNonPHIIt()) >= 0)
      ends.push_back(&BB);
  for (BasicBlock *E : ends) {
    auto *CI = cast<CallInst>(&*E->getFirstNonPHIIt());
    int area = areaOf(CI);
    SmallVector<BasicBlock *, 2> next(successors(E));
    bool clash = any_of(reachable(next, [&](BasicBlock *BB) { return st.isBarrierBlk(BB) || st.isExitBlk(BB); }),
                        [&](BasicBlock *BB) {
                          return any_of(*BB, [&](Instruction &I) { return isa<StoreInst>(&I) && areaOf(&I) == area; });
                        });
    if (clash)
      continue;
    MDNode *warpTag = CI->getMetadata(kWarpBarrierMD), *areaTag = CI->getMetadata(kExchangeAreaMD);
    CI->eraseFromParent();
    if (warpLanesHold(st, wdivTerm)) {
      fired(T_ALTERNATE_EXCHANGES);
      continue;
    }
    CallInst *back = CallInst::Create(barrierMarker(), {}, "", E->begin());
    back->setMetadata(kWarpBarrierMD, warpTag);
    back->setMetadata(kExchangeAreaMD, areaTag);
  }
  cbsComputeReach(st);
}


// Step 5, scheduler (takes st.NE, st.sched, st.scanStart; gives st.wnext, st.wstart, st.wp, st.whead,
// st.wsched, st.WSW): the warp loop. A group-level region's case of cbs.sched (cbsRegionPrologue) sets
// wstart and wp = 0 and goes to cbs.whead, which runs warp wp from wstart (cbs.wbody) or, after the last
// warp, goes back to cbs.sched; cbs.wsched runs the region `wnext` of the warp, its default (WARP_LEAVE)
// the next warp. A region's loop ends at cbs.scan, which goes to cbs.wsched.
void Lowering::cbsWarpScheduler(CbsState &st, IRBuilder<> &B) {
  Function *F = st.F;
  IRBuilder<> NB(st.NE->getTerminator());
  st.wnext = NB.CreateAlloca(I32, nullptr, "cbs.wnext");
  st.wstart = NB.CreateAlloca(I32, nullptr, "cbs.wstart");
  st.wp = NB.CreateAlloca(I32, nullptr, "cbs.wp");
  Value *nwarps = NB.CreateUDiv(NB.CreateTrunc(st.nwi64, I32), ConstantInt::get(I32, warp), "cbs.nwarps");
  st.whead = BasicBlock::Create(C, "cbs.whead", F);
  BasicBlock *wbody = BasicBlock::Create(C, "cbs.wbody", F);
  st.wsched = BasicBlock::Create(C, "cbs.wsched", F);
  BasicBlock *wnextwarp = BasicBlock::Create(C, "cbs.wnextwarp", F);
  B.SetInsertPoint(st.whead);
  Value *wp = B.CreateLoad(I32, st.wp, "wp");
  B.CreateCondBr(B.CreateICmpULT(wp, nwarps), wbody, st.sched);
  B.SetInsertPoint(wbody);
  B.CreateStore(B.CreateLoad(I32, st.wstart), st.wnext);
  if (st.gone) { // (ol-early-exits: not a warp whose lanes have all exited)
    Value *live = B.CreateAlignedLoad(I64, B.CreateGEP(I64, st.act, B.CreateZExt(wp, I64)), Align(1));
    B.CreateCondBr(B.CreateICmpEQ(live, ConstantInt::get(I64, 0)), wnextwarp, st.wsched);
  } else {
    B.CreateBr(st.wsched);
  }
  B.SetInsertPoint(st.wsched);
  st.WSW = B.CreateSwitch(B.CreateLoad(I32, st.wnext), wnextwarp);
  B.SetInsertPoint(wnextwarp);
  B.CreateStore(B.CreateAdd(B.CreateLoad(I32, st.wp), ConstantInt::get(I32, 1), "", true, true), st.wp);
  B.CreateBr(st.whead);
  B.SetInsertPoint(st.scanStart);
  if (st.gone)
    cbsLiveLanes(st, B, st.wsched);
  else
    B.CreateBr(st.wsched);
}


// ol-warp-local-slots (in the group prologue, B in it; takes the regions, st.reach, the layout; gives
// st.warpSlot): each warp runs from a group-level region to the next group barrier before the next warp
// starts, so a slot whose value never crosses a group barrier (no load of it in a region that a store's
// region leads to through a group barrier, warp barriers crossed or not) is only ever read by the warp
// that wrote it, in the same run: one warp's copy serves every warp, as an alloca (one per slot, W lanes
// of it, or one for a slot the same for a warp's lanes), not in the group's scratch. A region's lane loop
// indexes it by lane (R.lane): once the loop vectoriser's vector loop is unrolled (cbsWarpLaneIds),
// every access is at a constant offset, and SROA, after the unrolling, keeps the slots in registers (a
// warp butterfly's value between its exchanges). At most kWarpSlotBytes of stack (the kernel stack is 16
// MiB, its use checked at launch).
void Lowering::cbsWarpLocalSlots(CbsState &st, IRBuilder<> &B) {
  if (!on(T_WARP_LOCAL_SLOTS) || st.chunk || st.allocas.empty())
    return;
  size_t n = st.regionEntry.size(), na = st.allocas.size();
  // the regions each region's warp barriers and group barriers lead to, and the regions of each block
  std::vector<std::vector<size_t>> warpTo(n), groupTo(n);
  std::map<BasicBlock *, std::vector<size_t>> regionsOf;
  for (size_t k = 0; k < n; ++k) {
    for (BasicBlock *b : st.reach[st.regionEntry[k]])
      if (b)
        (st.isWarpBarrierBlk(b) ? warpTo : groupTo)[k].push_back(size_t(st.barrierId[b]));
    for (BasicBlock *BB : cbsRegionBlocks(st, k))
      regionsOf[BB].push_back(k);
  }
  // from each region: every region it leads to (itself too), and those it leads to through a group barrier
  std::vector<std::set<size_t>> all(n), after(n);
  for (size_t k = 0; k < n; ++k) {
    std::vector<size_t> work = {k};
    while (!work.empty()) {
      size_t r = work.back();
      work.pop_back();
      if (!all[k].insert(r).second)
        continue;
      work.insert(work.end(), warpTo[r].begin(), warpTo[r].end());
      work.insert(work.end(), groupTo[r].begin(), groupTo[r].end());
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < n; ++k) {
      size_t before = after[k].size();
      for (size_t g : groupTo[k])
        after[k].insert(all[g].begin(), all[g].end());
      for (size_t w : warpTo[k])
        after[k].insert(after[w].begin(), after[w].end());
      changed |= after[k].size() != before;
    }
  }
  // per slot: the regions that read it and those that write it (its address kept anywhere: not local)
  std::vector<Value *> local(na, nullptr);
  uint64_t bytes = 0;
  for (size_t j = 0; j < na; ++j) {
    std::set<size_t> reads, writes;
    bool escapes = false;
    SmallVector<Value *, 8> work = {st.allocas[j]};
    while (!work.empty() && !escapes) {
      Value *P = work.pop_back_val();
      for (User *U : P->users()) {
        auto *I = cast<Instruction>(U);
        if (isa<GetElementPtrInst>(I) || isa<BitCastInst>(I) || isa<AddrSpaceCastInst>(I)) {
          work.push_back(I);
          continue;
        }
        auto *S = dyn_cast<StoreInst>(I);
        if ((S && S->getValueOperand() == P) || !(S || isa<LoadInst>(I) || isa<MemIntrinsic>(I))) {
          escapes = true; // (stored, or through a PHI, a select, a call: where it goes is not followed)
          break;
        }
        for (size_t k : regionsOf[I->getParent()]) {
          if (!S)
            reads.insert(k);
          if (!isa<LoadInst>(I))
            writes.insert(k);
        }
      }
    }
    bool crosses = escapes || any_of(writes, [&](size_t w) {
      return any_of(reads, [&](size_t r) { return after[w].count(r) > 0; });
    });
    uint64_t size = st.uniPtr[j] ? st.sizes[j] : st.sizes[j] * warp;
    if (crosses || bytes + size > kWarpSlotBytes)
      continue;
    bytes += size;
    AllocaInst *A = B.CreateAlloca(ArrayType::get(I8, size), nullptr, "cbs.warpslot");
    A->setAlignment(Align(64));
    local[j] = A;
    fired(T_WARP_LOCAL_SLOTS);
  }
  if (bytes)
    st.warpSlot = std::move(local);
}


// ol-warp-local-exchanges (step 4, before the layout; takes st.warpMode and the kernel's exchange accesses,
// kWarpAreaMD; gives whether the areas go on the stack): a warp runs each exchange from its store to its
// reads without another warp in between (they are in the regions one warp barrier apart, which the warp
// runs before the next warp starts), so one warp's copy of the areas serves every warp, as allocas of
// 3W slots of 8 bytes each (lane 0's at slot W, readLane's reach and ol-realign-lane-reads' below and
// above), not 8 bytes per work-item of the group's scratch. With the lane loops unrolled after the
// vectoriser (cbsWarpLaneIds) every access is at a constant offset, and SROA after ol-realign-lane-reads
// (passes.cpp) keeps the exchanged values in registers: a shuffle becomes a vector shuffle. Only where
// every access to the areas has a tagged address (warpArea) that goes straight to loads and stores: the
// rewrite (cbsWarpAreas) moves all of them or none.
bool Lowering::cbsWarpLocalExchanges(CbsState &st) {
  if (!st.warpMode || st.chunk || !on(T_WARP_LOCAL_EXCHANGES))
    return false;
  Value *scratch = X(st.o, st.F, E_SCRATCH);
  // (an address only loads and stores use, as their address)
  std::function<bool(Value *)> direct = [&](Value *P) {
    return all_of(P->users(), [&](User *U) {
      if (isa<GetElementPtrInst>(U))
        return direct(U);
      auto *S = dyn_cast<StoreInst>(U);
      return isa<LoadInst>(U) || (S && S->getPointerOperand() == P && S->getValueOperand() != P);
    });
  };
  auto tagged = [&](User *U) {
    auto *I = dyn_cast<Instruction>(U);
    return I && I->getMetadata(kWarpAreaMD) && direct(I);
  };
  bool any = false;
  for (User *U : scratch->users()) {
    if (tagged(U)) {
      any = true;
      continue;
    }
    // (the second area's start, which only tagged addresses use)
    auto *G = dyn_cast<GetElementPtrInst>(U);
    if (!G || G->getMetadata(kWarpAreaMD) || G->getPointerOperand() != scratch || G->use_empty() ||
        !all_of(G->users(), tagged))
      return false;
  }
  return any;
}


// ol-warp-local-exchanges, in a region's lane loop (takes R.clones, R.lane, st.warpXchg): each tagged
// exchange address on the warp's copy of its area, lane 0's slot at slot W, a lane's own at W + its lane.
void Lowering::cbsWarpAreas(CbsState &st, CbsRegion &R) {
  if (st.warpXchg.empty())
    return;
  for (BasicBlock *NB : R.clones)
    for (Instruction &I : make_early_inc_range(*NB)) {
      MDNode *N = I.getMetadata(kWarpAreaMD);
      if (!N)
        continue;
      auto *G = cast<GetElementPtrInst>(&I);
      unsigned area = mdconst::extract<ConstantInt>(N->getOperand(0))->getZExtValue();
      bool own = mdconst::extract<ConstantInt>(N->getOperand(1))->isOne();
      IRBuilder<> B(&I);
      Value *idx = ConstantInt::get(I64, warp);
      if (own)
        idx = B.CreateAdd(B.CreateZExt(R.lane, I64), idx, "", true, true);
      Value *P = B.CreateGEP(G->getSourceElementType(), st.warpXchg[area], idx, "cbs.wxchg");
      I.replaceAllUsesWith(P);
      I.eraseFromParent();
    }
}


// Step 5, region prologue (takes st.wp, the layout; gives R.xw, R.wrow, R.wy, R.wz, R.uniPtrW; B at Pre):
// where warp wp's lanes are: its first flat id wp * W, as x id xw (a multiple of W), y, z, and the flat id
// of its row's first work-item; its copies of the shared slots. The warp number is read through an empty
// asm, so that LLVM computes each region's addresses in its own prologue, not all of them in cbs.wbody
// (where every region's would be live through every other's).
void Lowering::cbsWarpIds(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
  Function *F = st.F;
  unsigned o = st.o;
  InlineAsm *keep = InlineAsm::get(FunctionType::get(I32, {I32}, false), "", "=r,0", /*hasSideEffects=*/true);
  CallInst *wp = B.CreateCall(keep, {B.CreateLoad(I32, st.wp)}, "wp" + R.sfx);
  // (below the group's number of warps: a specialisation's size)
  unsigned nwarps = specGs[0] * specGs[1] * specGs[2] / warp;
  wp->addRetAttr(Attribute::get(C, Attribute::Range, ConstantRange(APInt(32, 0), APInt(32, nwarps))));
  Value *flat = B.CreateMul(wp, ConstantInt::get(I32, warp), "", true, true);
  Value *gsx = X(o, F, E_GSX), *gsy = X(o, F, E_GSY);
  R.xw = B.CreateURem(flat, gsx, "xw" + R.sfx);
  Value *rest = B.CreateUDiv(flat, gsx);
  R.wy = B.CreateURem(rest, gsy, "wy" + R.sfx);
  R.wz = B.CreateUDiv(rest, gsy, "wz" + R.sfx);
  R.wrow = B.CreateSub(flat, R.xw, "wrow" + R.sfx, true, true);
  Value *wp64 = B.CreateZExt(wp, I64);
  R.uniPtrW.assign(st.allocas.size(), nullptr);
  for (size_t j = 0; j < st.allocas.size(); ++j)
    if (st.uniPtr[j])
      R.uniPtrW[j] = !st.warpSlot.empty() && st.warpSlot[j]
                         ? st.warpSlot[j]
                         : B.CreateGEP(I8, st.uniPtr[j], B.CreateMul(wp64, ConstantInt::get(I64, st.sizes[j])), "cbs.wslot");
}


// ol-chain-warp-regions (in cbsFinish, once every region is built; takes st.warpRegions, st.scanStart,
// st.WSW): a region that a warp leaves through one warp barrier (a shuffle's second barrier, its exit
// recorded up front) goes on to that barrier's region straight from its loop, not back through cbs.scan
// and cbs.wsched's switch. Where every way into the next region is such an edge from one region (not a
// group-level region, no other region can leave for it), its case goes from the switch: then a warp's
// exchanges are one line of code, one block once LLVM has unrolled the lane loops, which the code
// generator schedules as one. (Each region still reads the warp number through its own empty asm,
// cbsWarpIds: taking the predecessor's instead made wscan slower on nvptx64, 2.1-2.7 -> 2.7-3.0 ms.)
// Legal: the recorded region is where every lane of the warp goes next (cbsRecordExit writes it before
// the loop); the scheduler would run it next for this warp.
void Lowering::cbsChainWarpRegions(CbsState &st) {
  std::vector<CbsState::WarpRegion> &WR = st.warpRegions;
  size_t n = WR.size();
  std::vector<unsigned> chainedInto(n, 0);
  std::vector<int> from(n, -1);
  for (size_t k = 0; k < n; ++k) {
    int to = WR[k].next;
    if (to < 0 || size_t(to) >= n || size_t(to) == k)
      continue;
    // the region's blocks: from its prologue to cbs.scan (its loops, their copies)
    std::vector<BasicBlock *> blocks = reachable({WR[k].Pre}, [](BasicBlock *) { return false; }, {st.scanStart});
    bool own = none_of(blocks, [&](BasicBlock *BB) {
      return BB == st.wsched || BB == st.whead || BB == st.sched ||
             any_of(WR, [&](const CbsState::WarpRegion &O) { return O.Pre == BB && O.Pre != WR[k].Pre; });
    });
    if (!own)
      continue;
    for (BasicBlock *BB : blocks)
      BB->getTerminator()->replaceSuccessorWith(st.scanStart, WR[to].Pre);
    ++chainedInto[to];
    from[to] = int(k);
    fired(T_CHAIN_WARP_REGIONS);
  }
  // regions entered only from the one region chained into them: no case
  for (size_t k = 0; k < n; ++k) {
    if (chainedInto[k] != 1 || st.groupEntries.count(k))
      continue;
    bool others = false;
    for (size_t j = 0; j < n; ++j)
      if (int(j) != from[k] && is_contained(WR[j].leaves, int(k)))
        others = true;
    if (!others)
      st.WSW->removeCase(st.WSW->findCaseValue(ConstantInt::get(cast<IntegerType>(I32), k)));
  }
}


// Step 5, region loops (takes R.Pre, R.xw, R.wrow, R.wy, R.wz, R.uniPtrW; gives R.VM's slot and id
// mappings, R.lx, R.inX, R.P, R.L, R.AG; B at the end of R.P): one x loop over the warp's lanes
// xw .. xw + W - 1, marked parallel, leaving to cbs.scan.
void Lowering::cbsWarpRegionLoop(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
  Function *F = st.F;
  unsigned o = st.o;
  BasicBlock *H = BasicBlock::Create(C, "cbs.hx" + R.sfx, F);
  R.P = BasicBlock::Create(C, "cbs.pre" + R.sfx, F);
  R.L = BasicBlock::Create(C, "cbs.latch" + R.sfx, F);
  Value *end = B.CreateAdd(R.xw, ConstantInt::get(I32, warp), "", true, true);
  B.CreateBr(H);
  B.SetInsertPoint(H);
  R.lx = B.CreatePHI(I32, 2, "lx" + R.sfx);
  R.lx->addIncoming(R.xw, R.Pre);
  // (the lane id as an induction variable of its own, from 0: the loop vectoriser widens it as it is, so
  // that once the vector loop is unrolled a lane's id and what it indexes are constants, where `lx - xw`
  // widened to 64 bits was a difference of two forms of xw that nothing folded)
  R.lane = B.CreatePHI(I32, 2, "lane" + R.sfx);
  R.lane->addIncoming(ConstantInt::get(I32, 0), R.Pre);
  R.inX = cast<ICmpInst>(B.CreateICmpULT(R.lx, end));
  B.CreateCondBr(R.inX, R.P, st.scanStart);
  B.SetInsertPoint(R.L);
  R.lx->addIncoming(B.CreateAdd(R.lx, ConstantInt::get(I32, 1), "", true, true), R.L);
  R.lane->addIncoming(B.CreateAdd(R.lane, ConstantInt::get(I32, 1), "", true, true), R.L);
  R.AG = newAccessGroup();
  markParallelLoop(B.CreateBr(H), R.AG, /*noInterleave=*/true);
  B.SetInsertPoint(R.P);
  R.wi = B.CreateAdd(R.wrow, R.lx, "wi" + R.sfx, true, true);
  Value *wi64 = B.CreateZExt(R.wi, I64);
  if (st.gone)
    R.myResume = B.CreateGEP(I32, st.resume, wi64);
  for (size_t j = 0; j < st.allocas.size(); ++j) {
    if (R.uniPtrW[j]) {
      R.VM[st.allocas[j]] = R.uniPtrW[j];
      continue;
    }
    if (!st.warpSlot.empty() && st.warpSlot[j]) { // (ol-warp-local-slots: the lane's)
      Value *lane = B.CreateZExt(R.lane, I64);
      R.VM[st.allocas[j]] = B.CreateGEP(I8, st.warpSlot[j], B.CreateMul(lane, ConstantInt::get(I64, st.sizes[j])));
      continue;
    }
    Value *base = B.CreateMul(st.nwi64, ConstantInt::get(I64, st.offs[j]));
    R.VM[st.allocas[j]] =
        B.CreateGEP(I8, st.scratch, B.CreateAdd(base, B.CreateMul(wi64, ConstantInt::get(I64, st.sizes[j]))));
  }
  R.VM[X(o, F, E_LX)] = R.lx;
  R.VM[X(o, F, E_LY)] = R.wy;
  R.VM[X(o, F, E_LZ)] = R.wz;
  R.VM[X(o, F, E_LWI)] = R.wi;
  R.VM[st.scratch] = st.xchg;
}


// Where the work-items leaving through exit block `e` (a barrier block, or nullptr = exit) go on: under
// warp lanes a warp barrier's region for the warp (`wnext`), otherwise `next` for the group (and the
// warp has finished its part).
void Lowering::cbsRecordExit(CbsState &st, IRBuilder<> &B, BasicBlock *e) {
  if (st.warpMode && e && st.isWarpBarrierBlk(e)) {
    B.CreateStore(ConstantInt::get(I32, cbsExitId(st, e)), st.wnext);
    return;
  }
  // (ol-early-exits: the group's `next` is the exit until a warp records a group barrier)
  if (!(st.gone && st.warpMode && !e))
    B.CreateStore(ConstantInt::get(I32, cbsExitId(st, e)), st.next);
  if (st.warpMode)
    B.CreateStore(ConstantInt::get(I32, WARP_LEAVE), st.wnext);
}


// The x id (id = lx) or flat id (id = wi) of the warp's first lane in a lane loop: xw, or wrow + xw.
Value *Lowering::firstLaneId(IRBuilder<> &B, CbsRegion &R, Value *id) {
  return id == R.lx ? R.xw : B.CreateAdd(R.wrow, R.xw, "", true, true);
}


// The global warp index `(A + lx) / W` or `(A + wi) / W` in a lane loop (`gid / W`, gid = the group's first
// id plus the x id, a row per warp), A a multiple of W the same for the loop's lanes (arithmetic of the
// kernel's arguments, the group ids, the group's size and constants): the same quotient for every lane, as
// the warp's first lane has it (lx - xw and wi - wrow - xw are the lane id, below W, and A + xw a multiple
// of W, also where the sum wraps around 2^32). Gives the dividend for the first lane, computed before I, or
// nullptr.
Value *Lowering::warpBaseOf(CbsState &st, CbsRegion &R, Instruction &I) {
  if (!isa<BinaryOperator>(I) || !isWarpOf(&I, I.getOperand(0)))
    return nullptr;
  auto *Sum = dyn_cast<BinaryOperator>(I.getOperand(0));
  if (!Sum || Sum->getOpcode() != Instruction::Add)
    return nullptr;
  std::function<bool(Value *, int)> laneFree = [&](Value *V, int depth) {
    if (isa<Constant>(V) || isa<Argument>(V) || groupSizeDim(st.F, V) >= 0)
      return true;
    auto *J = dyn_cast<Instruction>(V);
    return J && depth < 6 && J != R.lx && J != R.wi && J != R.lane && isPureArithmetic(J) && !isa<PHINode>(J) &&
           all_of(J->operands(), [&](Value *Op) { return laneFree(Op, depth + 1); });
  };
  // (a multiple of W: by its known bits, or a product with the group's x size, a multiple of W here: the
  // argument or amdgcn's implicit-argument field)
  std::function<bool(Value *, int)> multiple = [&](Value *V, int depth) {
    if (groupSizeDim(st.F, V) == 0 || computeKnownBits(V, DL).countMinTrailingZeros() >= Log2_32(warp))
      return true;
    auto *M = dyn_cast<BinaryOperator>(V);
    if (!M || depth > 4)
      return false;
    if (M->getOpcode() == Instruction::Mul)
      return multiple(M->getOperand(0), depth + 1) || multiple(M->getOperand(1), depth + 1);
    if (M->getOpcode() == Instruction::Add)
      return multiple(M->getOperand(0), depth + 1) && multiple(M->getOperand(1), depth + 1);
    return M->getOpcode() == Instruction::Shl && multiple(M->getOperand(0), depth + 1);
  };
  for (int k = 0; k < 2; ++k) {
    Value *A = Sum->getOperand(k), *id = Sum->getOperand(1 - k);
    if ((id != R.lx && id != R.wi) || !laneFree(A, 0) || !multiple(A, 0))
      continue;
    IRBuilder<> B(&I);
    return B.CreateAdd(A, firstLaneId(B, R, id));
  }
  return nullptr;
}


// Step 5, region, last under warp lanes (takes R.clones, R.lx, R.lane, R.xw, R.wi, R.L; changes the clones):
// the lane id (`urem` or `and` of the x or flat id by W) is the lane loop's lane (lx - xw), the warp's index
// (`udiv` or `lshr` of either by W) xw / W (or its flat id's), the same for the loop's lanes, and a warp's
// number of lanes (kLanesInMD) W. Then a branch the same for the warp's lanes is decided once per warp
// (ol-unswitch-warp-branches: the loop copied per side). A lane loop left without branches keeps its W
// iterations: the loop vectoriser takes it as W / VF vector iterations, its exchanges read with consecutive
// loads (readLane); where it compares lanes, that vector loop may then be unrolled (ol-unroll-lane-vectors:
// its followup properties have no `llvm.loop.unroll.disable`), which makes each vector's lane compares
// constants (`lane >= off` on amdgcn's 64 lanes was, with AVX2, a 64-bit compare sequence per vector of 8:
// wscan 6.6-7.0 -> 3.6-3.7 ms). Fully unrolled first (LLVM's early full unroll takes a 32-iteration loop of a
// few instructions), each region's W copies were left to SLP, which did not vectorise the exchanges, and cost
// the compile most of its time. A region with a branch (`if (lane == 0)`) may still be unrolled, so that its
// branches fold per lane.
void Lowering::cbsWarpLaneIds(CbsState &st, CbsRegion &R) {
  cbsWarpAreas(st, R);
  Value *wi = R.wi;
  for (BasicBlock *NB : R.clones)
    for (Instruction &I : make_early_inc_range(*NB)) {
      if (I.getMetadata(kLanesInMD)) {
        I.replaceAllUsesWith(ConstantInt::get(I.getType(), warp));
        I.eraseFromParent();
        continue;
      }
      if (!I.getType()->isIntegerTy(32))
        continue;
      IRBuilder<> B(&I);
      if (isLaneOf(&I, R.lx) || isLaneOf(&I, wi)) {
        I.replaceAllUsesWith(R.lane);
        I.eraseFromParent();
      } else if (isWarpOf(&I, R.lx) || isWarpOf(&I, wi)) {
        // (lx and wi are xw and wrow + xw plus the lane id, below W: the same quotient for every lane)
        I.replaceAllUsesWith(B.CreateLShr(firstLaneId(B, R, I.getOperand(0)), Log2_32(warp), "warp" + R.sfx, true));
        I.eraseFromParent();
      } else if (Value *first = warpBaseOf(st, R, I)) {
        I.replaceAllUsesWith(B.CreateLShr(first, Log2_32(warp), "warp" + R.sfx));
        I.eraseFromParent();
      }
    }
  BasicBlock *head = R.Pre->getSingleSuccessor();
  std::vector<CbsState::LaneLoop> loops = {R.laneLoop(head)};
  bool uniformLoops = on(T_WARP_UNIFORM_LOOPS) && !st.gone; // (a gone first lane's slots)
  if (uniformLoops) { // (whether each clone's original is the same for the warp's lanes, st.laneUniform)
    std::set<BasicBlock *> clones(R.clones.begin(), R.clones.end());
    for (BasicBlock *BB : R.set) // (a clone replaced since, by the lane id `lx - xw` say: its replacement)
      for (Instruction &I : *BB)
        if (auto it = R.VM.find(&I); it != R.VM.end())
          if (auto *CI = dyn_cast_or_null<Instruction>(it->second); CI && clones.count(CI->getParent())) {
            bool u = !st.div.count(&I) && !st.divTerm.count(&I);
            auto at = st.laneUniform.insert({CI, u}).first;
            at->second = at->second && u;
          }
  }
  // (each lane loop in turn, the original again after each branch it gave up, while there are at most
  // kMaxLaneLoops: `b + max off < n` and the loop's exit test of a grid-stride loop's region, say)
  // (R.origOf gets the copies' blocks: nothing after this step reads it)
  for (size_t i = 0; on(T_UNSWITCH_WARP_BRANCHES) && i < loops.size() && loops.size() < kMaxLaneLoops;) {
    ValueToValueMapTy VM;
    CbsState::LaneLoop &LL = loops[i];
    if (!cbsUnswitchWarpBranch(st, R, LL, loops.size() > 1, VM)) {
      ++i;
      continue;
    }
    CbsState::LaneLoop copy = {LL.Pre, cast<BasicBlock>(VM[LL.head]), cast<BasicBlock>(VM[LL.latch]), VM[LL.lx],
                               VM[LL.wi], LL.xw, LL.wrow, VM[LL.lane], LL.entry};
    std::vector<std::pair<Value *, bool>> copies;
    for (auto KV : VM) {
      if (auto it = st.laneUniform.find(const_cast<Value *>(KV.first)); KV.second && it != st.laneUniform.end())
        copies.push_back({KV.second, it->second});
      if (auto *BB = dyn_cast<BasicBlock>(const_cast<Value *>(KV.first)); BB && R.origOf.count(BB))
        R.origOf[cast<BasicBlock>(KV.second)] = R.origOf[BB];
    }
    for (auto [v, u] : copies)
      st.laneUniform.insert({v, u});
    loops.push_back(copy);
  }
  if (uniformLoops)
    st.laneLoops.insert(st.laneLoops.end(), loops.begin(), loops.end());
  if (!on(T_LANE_OFFSET_READS))
    return;
  for (const CbsState::LaneLoop &LL : loops) { // a lane loop without a branch but its own exit test
    SmallVector<BasicBlock *, 2> body(successors(LL.head));
    std::vector<BasicBlock *> blocks =
        reachable(body, [](BasicBlock *) { return false; }, {LL.head, st.scanStart});
    if (any_of(blocks, [](BasicBlock *BB) { return BB->getTerminator()->getNumSuccessors() > 1; }))
      continue;
    Instruction *latchBr = LL.latch->getTerminator();
    addLoopProperty(latchBr, MDNode::get(C, {MDString::get(C, "llvm.loop.unroll.disable")}));
    // Where the lanes' values are compared with something (`lane >= off`, the runs of lanes readLane's
    // selects take), the vector loop the vectoriser makes of it (W / VF iterations) may be unrolled, by
    // loop-unroll after the vectoriser: each copy's lane compares are then constants.
    std::set<BasicBlock *> in(blocks.begin(), blocks.end());
    in.insert(LL.head);
    // (a compare that only dead arithmetic uses does not count: amdgcn's lane ids of half-warps)
    auto used = [](Instruction *I) {
      SmallVector<Instruction *, 16> work = {I};
      SmallPtrSet<Instruction *, 32> seen;
      while (!work.empty())
        for (User *U : work.pop_back_val()->users()) {
          auto *UI = cast<Instruction>(U);
          if (!isPureArithmetic(UI))
            return true;
          if (seen.insert(UI).second)
            work.push_back(UI);
        }
      return false;
    };
    SmallVector<Value *, 16> work = {LL.lx, LL.lane};
    SmallPtrSet<Value *, 32> seen;
    bool comparesLanes = false; // (ol-unroll-lane-vectors)
    while (!work.empty() && !comparesLanes)
      for (User *U : work.pop_back_val()->users()) {
        auto *I = dyn_cast<Instruction>(U);
        if (!I || !in.count(I->getParent()) || !isPureArithmetic(I) || !seen.insert(I).second)
          continue;
        bool exitTest = is_contained(I->users(), latchBr) || is_contained(I->users(), LL.head->getTerminator());
        if (isa<ICmpInst>(I) && !exitTest && used(I))
          comparesLanes = true;
        work.push_back(I);
      }
    // (ol-warp-local-slots, ol-warp-local-exchanges: unrolled, the lanes' slots and the exchanges are at
    // constant offsets, which SROA takes)
    if ((comparesLanes && on(T_UNROLL_LANE_VECTORS)) || !st.warpSlot.empty() || !st.warpXchg.empty()) {
      addLoopProperty(latchBr, vectorisedFollowup(latchBr));
      if (comparesLanes && on(T_UNROLL_LANE_VECTORS))
        fired(T_UNROLL_LANE_VECTORS);
    }
  }
}

} // namespace ol_rs::lower
