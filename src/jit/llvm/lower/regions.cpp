// Regions between barriers, each in its own work-item loop: layout, entries, the scheduler and each
// region's prologue, loops, preloads, entry and exit (cbsLayout ... cbsFinish).
#include "lowering.h"
#include "../realign_lane_reads.h"

namespace ol_rs::lower {


// Step 4 (takes F's allocas; gives st.allocas, st.offs, st.sizes, st.S): the per-work-item layout
// of all allocas in scratch.
void Lowering::cbsLayout(CbsState &st) {
  auto &allocas = st.allocas;
  auto &offs = st.offs;
  auto &sizes = st.sizes;
  uint64_t &S = st.S;
  for (BasicBlock &BB : *st.F)
    for (Instruction &I : BB)
      if (auto *AI = dyn_cast<AllocaInst>(&I))
        allocas.push_back(AI);
  S = 0;
  for (AllocaInst *AI : allocas) {
    uint64_t sz = AI->getAllocationSize(DL).value_or(TypeSize::getFixed(0)).getFixedValue();
    uint64_t al = std::min<uint64_t>(AI->getAlign().value(), 64);
    sz = (sz + al - 1) / al * al;
    if (sz == 0) sz = al;
    S = (S + al - 1) / al * al;
    offs.push_back(S);
    sizes.push_back(sz);
    S += sz;
  }
  S = (S + 7) / 8 * 8;
}


// Step 5: one work-item loop per region. A region starts at the kernel entry or right after a
// barrier and runs to the next barriers/exits; its blocks are cloned into a loop over the
// work-items. General case: the loop runs the work-items whose resume id is the region's, and a
// scheduler picks the region of the first unfinished work-item. Uniform case (step 2b): every
// work-item leaves a region through the same barrier, so the region records it in one group-level
// `next` and the regions simply follow each other (barriers in loops become a loop around region
// loops).
//
// cbsRegionEntries (takes st.uniform, st.allocas, st.hoistable; gives st.origBlocks, st.barrierId,
// st.regionEntry, st.NE): numbers the regions (under uniform barriers, barriers that resume at the
// same block share a region) and creates the new entry block NE holding the allocas and the
// hoisted values.
void Lowering::cbsRegionEntries(CbsState &st) {
  Function *F = st.F, *BM = st.BM;
  bool uniform = st.uniform;
  BasicBlock *oldEntry = st.entry;
  auto &origBlocks = st.origBlocks;
  auto &barrierId = st.barrierId;
  auto &regionEntry = st.regionEntry;
  for (BasicBlock &BB : *F)
    origBlocks.push_back(&BB);
  regionEntry = {oldEntry};
  std::map<BasicBlock *, int> entryRegion = {{oldEntry, 0}};
  if (st.warpMode)
    st.groupEntries.insert(0);
  // Warp barriers' regions first: the general scheduler runs the smallest pending region, so work-items
  // at a group barrier wait there until those of other warps, in their own warp collectives (a shuffle
  // loop with a trip count per warp), have caught up. Each kind in reverse post-order there: lanes that
  // went different ways meet again before a collective after the join (a barrier before it comes first),
  // as a GPU's lanes reconverge, and a collective sees the lanes that reach it together (cbsActiveLanes:
  // gpuintrin's match_any loop, whose lanes that are done wait at the loop's ballot for the others).
  // (Under uniform barriers and ol-warp-lanes the lanes of a warp are at one barrier: the blocks' order.)
  std::vector<BasicBlock *> order = origBlocks;
  if (!uniform && !st.warpMode) {
    ReversePostOrderTraversal<Function *> rpo(F);
    order.assign(rpo.begin(), rpo.end());
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (BasicBlock *BB : order)
      if (firstCallTo(BB, BM) && st.isWarpBarrierBlk(BB) == (pass == 0)) {
        BasicBlock *S = BB->getSingleSuccessor();
        auto it = entryRegion.find(S);
        if (uniform && it != entryRegion.end()) {
          barrierId[BB] = it->second;
        } else {
          barrierId[BB] = (int)regionEntry.size();
          entryRegion[S] = (int)regionEntry.size();
          regionEntry.push_back(S);
        }
        if (st.warpMode && !st.isWarpBarrierBlk(BB))
          st.groupEntries.insert(barrierId[BB]);
      }
  }
  BasicBlock *NE = BasicBlock::Create(C, "cbs.entry", F, oldEntry);
  st.NE = NE;
  for (AllocaInst *AI : st.allocas) {
    AI->removeFromParent();
    AI->insertInto(NE, NE->end());
  }
  std::vector<Instruction *> hoist;
  for (Instruction &I : *oldEntry)
    if (st.hoistable.count(&I))
      hoist.push_back(&I);
  for (Instruction *I : hoist) {
    I->removeFromParent();
    I->insertInto(NE, NE->end());
  }
}


// Step 5 (takes st.NE, st.uniform, the layout; gives the group prologue's values and the scheduler
// blocks of CbsState, B left at the end of cbs.sched): the group prologue in NE (the exchange area,
// the resume ids, the shared slots, `next`, `uni`) and the scheduler: cbs.sched switches on `next`
// to the region's preload block (default: cbs.done, the return); a region's work-item loop ends at
// cbs.scan, which under uniform barriers goes straight back to cbs.sched, otherwise scans the resume
// ids first.
void Lowering::cbsScheduler(CbsState &st, IRBuilder<> &B) {
  Function *F = st.F;
  unsigned o = st.o;
  uint64_t S = st.S;
  bool uniform = st.uniform;
  auto &allocas = st.allocas;
  auto &offs = st.offs;
  auto &uniSlots = st.uniSlots;
  Value *scratch = X(o, F, E_SCRATCH);
  st.scratch = scratch;
  Value *nwi = nwiOf(B, F);
  Value *nwi64 = B.CreateZExt(nwi, I64);
  st.nwi64 = nwi64;
  st.xchg = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, S)), "cbs.xchg");
  // the work-items the region loops and the scan cover: the group, or one chunk of a row (chunk mode:
  // from the x id E_LX, at most st.chunk of them, in row E_LY of layer E_LZ)
  Value *one = ConstantInt::get(I32, 1), *wiLo = ConstantInt::get(I32, 0), *wiHi = nwi;
  for (int d = 0; d < 3; ++d) {
    st.lo[d] = ConstantInt::get(I32, 0);
    st.hi[d] = X(o, F, E_GSX + d);
  }
  if (st.chunk) {
    for (int d = 0; d < 3; ++d) {
      st.lo[d] = X(o, F, E_LX + d);
      st.hi[d] = B.CreateAdd(st.lo[d], one, "", true, true);
    }
    Value *left = B.CreateSub(X(o, F, E_GSX), st.lo[0]);
    // (whole chunks in a specialisation whose rows are a number of them: a constant trip count, so that
    // the vectoriser needs no masked tail)
    Value *n = !specKernel.empty() && specGs[0] % st.chunk == 0
                   ? static_cast<Value *>(ConstantInt::get(I32, st.chunk))
                   : B.CreateBinaryIntrinsic(Intrinsic::umin, left, ConstantInt::get(I32, st.chunk));
    st.hi[0] = B.CreateAdd(st.lo[0], n, "cbs.chunk.end", true, true);
    wiLo = X(o, F, E_LWI);
    wiHi = B.CreateAdd(wiLo, n, "", true, true);
  }
  Value *resume = nullptr;
  if (!uniform || st.gone) {
    resume = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, S + st.xchgBytes)), "cbs.resume");
    B.CreateMemSet(B.CreateGEP(I32, resume, B.CreateZExt(wiLo, I64)), ConstantInt::get(I8, 0),
                   B.CreateMul(B.CreateZExt(B.CreateSub(wiHi, wiLo), I64), ConstantInt::get(I64, 4)), MaybeAlign(4));
  }
  st.resume = resume;
  st.wiLo = wiLo;
  st.wiHi = wiHi;
  if (!st.activeCalls.empty() || st.gone)
    st.act = B.CreateGEP(I8, resume, B.CreateMul(nwi64, ConstantInt::get(I64, 4)), "cbs.active");
  std::vector<Value *> &uniPtr = st.uniPtr;
  uniPtr.assign(allocas.size(), nullptr);
  for (size_t j = 0; j < allocas.size(); ++j)
    if (uniSlots.count(allocas[j]))
      uniPtr[j] = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, offs[j])), "cbs.uslot");
  if (st.warpMode)
    cbsWarpLocalSlots(st, B);
  if (st.localXchg) { // (ol-warp-local-exchanges: a warp's areas, lane 0's slot at slot W)
    for (unsigned a = 0; a < (secondArea ? 2u : 1u); ++a) {
      AllocaInst *A = B.CreateAlloca(ArrayType::get(I8, 3 * warp * 8), nullptr, "cbs.warpxchg");
      A->setAlignment(Align(64));
      // (through an empty asm until ExposeWarpAreasPass, after the vectoriser: realign_lane_reads.h)
      st.warpXchg.push_back(hideWarpArea(B, A));
    }
    fired(T_WARP_LOCAL_EXCHANGES, st.warpXchg.size());
  }
  AllocaInst *next = B.CreateAlloca(I32, nullptr, "cbs.next");
  st.next = next;
  B.CreateStore(ConstantInt::get(I32, 0), next);
  // General case, `uni`: every work-item waits at the region `next` (the common, convergent case).
  // Region loops test it (loop-invariant) before the per-item resume check, so O3's loop unswitching
  // can produce a check-free loop that the vectoriser can handle.
  AllocaInst *uni = B.CreateAlloca(I1Ty(), nullptr, "cbs.uni");
  st.uniA = uni;
  B.CreateStore(ConstantInt::getTrue(C), uni);
  if (st.gone) { // (every lane of every warp runs)
    st.exitsA = B.CreateAlloca(I32, nullptr, "cbs.exits");
    st.prevA = B.CreateAlloca(I32, nullptr, "cbs.prev");
    cbsLiveLanes(st, B, nullptr);
  }
  BasicBlock *sched = BasicBlock::Create(C, "cbs.sched", F);
  BasicBlock *done = BasicBlock::Create(C, "cbs.done", F);
  BasicBlock *scanStart = BasicBlock::Create(C, "cbs.scan", F);
  st.sched = sched;
  st.done = done;
  st.scanStart = scanStart;
  B.CreateBr(sched);
  B.SetInsertPoint(done);
  B.CreateRetVoid();
  B.SetInsertPoint(sched);
  st.uniV = B.CreateLoad(I1Ty(), uni, "uni");
  if (st.act && !st.gone)
    cbsActiveFlags(st, B, nullptr);
  st.SW = B.CreateSwitch(B.CreateLoad(I32, next), done);
  if (st.warpMode) {
    cbsWarpScheduler(st, B); // after a region: the warp's next one
  } else if (uniform) {
    // after a region: straight to the next one (ol-early-exits: the lanes still running first)
    B.SetInsertPoint(scanStart);
    if (st.gone)
      cbsLiveLanes(st, B, sched);
    else
      B.CreateBr(sched);
  } else {
    // After a region: min/max of all resume ids (EXIT is the largest unsigned value). All exited ->
    // done; otherwise run the smallest pending region next; uniform iff every work-item waits there.
    BasicBlock *scanHead = BasicBlock::Create(C, "cbs.scan.head", F);
    BasicBlock *scanBody = BasicBlock::Create(C, "cbs.scan.body", F);
    BasicBlock *scanNext = BasicBlock::Create(C, "cbs.scan.next", F);
    BasicBlock *scanFound = BasicBlock::Create(C, "cbs.scan.found", F);
    B.SetInsertPoint(scanStart);
    B.CreateBr(scanHead);
    B.SetInsertPoint(scanHead);
    PHINode *si = B.CreatePHI(I32, 2, "scan.i");
    PHINode *mn = B.CreatePHI(I32, 2, "scan.min");
    PHINode *mx = B.CreatePHI(I32, 2, "scan.max");
    si->addIncoming(wiLo, scanStart);
    mn->addIncoming(ConstantInt::get(I32, RESUME_EXIT), scanStart);
    mx->addIncoming(ConstantInt::get(I32, 0), scanStart);
    B.CreateCondBr(B.CreateICmpULT(si, wiHi), scanBody, scanFound);
    B.SetInsertPoint(scanBody);
    Value *sr = B.CreateLoad(I32, B.CreateGEP(I32, resume, B.CreateZExt(si, I64)));
    Value *mn2 = B.CreateSelect(B.CreateICmpULT(sr, mn), sr, mn);
    Value *mx2 = B.CreateSelect(B.CreateICmpUGT(sr, mx), sr, mx);
    si->addIncoming(B.CreateAdd(si, ConstantInt::get(I32, 1), "", true, true), scanBody);
    mn->addIncoming(mn2, scanBody);
    mx->addIncoming(mx2, scanBody);
    B.CreateBr(scanHead);
    B.SetInsertPoint(scanFound);
    B.CreateStore(mn, next);
    B.CreateStore(B.CreateICmpEQ(mn, mx), uni);
    B.CreateCondBr(B.CreateICmpEQ(mn, ConstantInt::get(I32, RESUME_EXIT)), done, scanNext);
    B.SetInsertPoint(scanNext);
    if (st.act) { // the work-items that run the region next, where not all do: the active lanes
      BasicBlock *fill = BasicBlock::Create(C, "cbs.active.fill", F);
      B.CreateCondBr(B.CreateICmpEQ(mn, mx), sched, fill);
      B.SetInsertPoint(fill);
      cbsActiveFlags(st, B, mn);
    }
    B.CreateBr(sched);
  }
}


// Step 5, region k (takes CbsState as steps 1-5 left it, B; adds the region's blocks): its preload
// block, its work-item loop nest (or a single run for a group-invariant region), its blocks cloned
// into it, and its exits turned into a record of where the work-items resume.
void Lowering::cbsRegion(CbsState &st, IRBuilder<> &B, size_t k) {
  CbsRegion R;
  R.k = k;
  R.sfx = ".r" + std::to_string(k);
  R.set = cbsRegionBlocks(st, k);
  R.reach = &st.reach[st.regionEntry[k]];
  R.once = st.uniform && !st.warpMode && !st.gone && on(T_ONCE_REGIONS) &&
           groupInvariant(R.set, st.div, st.divTerm, st.uniSlots, st.BM, st.EM);
  if (R.once)
    fired(T_ONCE_REGIONS);
  cbsRegionPrologue(st, B, R);
  cbsRegionLoops(st, B, R);
  cbsCloneRegion(st, R);
  if (st.gone)
    cbsLiveMasks(st, R);
  cbsUsePreloads(st, R);
  cbsEnterRegion(st, B, R);
  cbsLeaveRegion(st, R);
  if (st.chunk)
    cbsChunkRepeat(st, R);
  cbsPromoteSlots(st, R);
  if (st.warpMode) // (the transforms below assume a loop nest over the whole group)
    cbsWarpLaneIds(st, R);
  if (st.gone) { // a copy of the region's loops without the check for work-items that exited
    ValueToValueMapTy VM;
    if (BasicBlock *head = R.uniBr ? R.Pre->getSingleSuccessor() : nullptr)
      unswitchNest(st, R.Pre, head, R.uniBr, VM);
    return; // (the transforms below assume that every work-item of the group runs the region loop)
  }
  if (st.warpMode || st.chunk)
    return;
  if (!runLoops.empty() && on(T_SHORT_RUNS)) // what narrowToGuards made, once the region loop is closed
    versionShortRuns(st.F);
  if (on(T_EQUALITY_SPLIT) || on(T_RANGE_SPLIT))
    cbsSplitEqualities(st, R);
  if (on(T_UNSWITCH_REGION_EXIT))
    cbsUnswitchExit(st, R);
}


// Step 5, region k (takes st.regionEntry, st.barrierId; gives its original blocks): the blocks
// reachable from its entry without crossing a barrier block (included).
std::vector<BasicBlock *> Lowering::cbsRegionBlocks(CbsState &st, size_t k) {
  return reachable({st.regionEntry[k]}, [&](BasicBlock *BB) { return st.barrierId.count(BB) > 0; });
}


// Step 5, region (takes R.k, R.reach; gives R.Pre, R.preVal, B at the end of Pre): the block the
// scheduler enters the region at. It loads the shared slots' values (the region's loads that no
// store can precede use them, cbsUsePreloads), and a region with one exit records it up front:
// its loop may run no work-item at all (guards).
void Lowering::cbsRegionPrologue(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
  auto &allocas = st.allocas;
  auto &uniPtr = st.uniPtr;
  BasicBlock *Pre = BasicBlock::Create(C, "cbs.preload" + R.sfx, st.F);
  R.Pre = Pre;
  ConstantInt *id = cast<ConstantInt>(ConstantInt::get(I32, R.k));
  if (!st.warpMode) {
    st.SW->addCase(id, Pre);
  } else {
    // under warp lanes: entered by each warp from cbs.wsched, and a group-level region first by the group
    st.WSW->addCase(id, Pre);
    if (st.groupEntries.count(R.k)) {
      BasicBlock *G = BasicBlock::Create(C, "cbs.group" + R.sfx, st.F);
      st.SW->addCase(id, G);
      B.SetInsertPoint(G);
      B.CreateStore(id, st.wstart);
      B.CreateStore(ConstantInt::get(I32, 0), st.wp);
      if (st.gone) // (until a warp records a group barrier)
        B.CreateStore(ConstantInt::get(I32, RESUME_EXIT), st.next);
      B.CreateBr(st.whead);
    }
  }
  B.SetInsertPoint(Pre);
  if (st.warpMode)
    cbsWarpIds(st, B, R);
  const std::vector<Value *> &slot = st.warpMode ? R.uniPtrW : uniPtr;
  std::vector<Value *> &preVal = R.preVal;
  preVal.assign(allocas.size(), nullptr);
  for (size_t j = 0; j < allocas.size(); ++j)
    if (slot[j]) {
      preVal[j] = B.CreateLoad(allocas[j]->getAllocatedType(), slot[j], "pre");
      if (st.pow2Slots.count(allocas[j]))
        pow2Vals.insert(preVal[j]);
    }
  // ol-early-exits: the one barrier that the work-items that do not exit leave through is recorded up front
  // too (cbsLiveLanes takes it back if none is left: `next` as it was before the warp's region, prev);
  // those that exit set their resume ids
  std::set<BasicBlock *> to(R.reach->begin(), R.reach->end());
  bool exits = st.gone && to.erase(nullptr);
  if (exits && st.warpMode)
    B.CreateStore(B.CreateLoad(I32, st.next), st.prevA);
  if (st.warpMode) { // (ol-chain-warp-regions)
    CbsState::WarpRegion WR{Pre, -1, {}};
    for (BasicBlock *e : *R.reach)
      if (e && st.isWarpBarrierBlk(e))
        WR.leaves.push_back(cbsExitId(st, e));
    if (R.reach->size() == 1 && WR.leaves.size() == 1)
      WR.next = WR.leaves[0];
    st.warpRegions.push_back(WR);
  }
  if (st.uniform && R.reach->size() == 1)
    cbsRecordExit(st, B, *R.reach->begin());
  else if (exits && to.size() == 1)
    cbsRecordExit(st, B, *to.begin());
  if (st.gone) // (under uniform barriers, where all exit, the group is done)
    B.CreateStore(
        ConstantInt::get(I32, !exits ? LIVE_KEEP : !to.empty() ? LIVE_SCAN : st.warpMode ? LIVE_LEFT : LIVE_KEEP),
        st.exitsA);
}


// Step 5, region (takes R.Pre, R.once; gives R.VM's slot and id mappings, the loop nest's blocks and
// ids in R, B at the end of the block the region's body is entered from): for a group-invariant
// region, nothing (it runs once, as work-item 0); otherwise top-tested z, y, x loops over the
// work-items, x innermost and marked parallel, each work-item's slots at its offset in scratch.
void Lowering::cbsRegionLoops(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
  Function *F = st.F;
  unsigned o = st.o;
  bool uniform = st.uniform;
  auto &allocas = st.allocas;
  auto &offs = st.offs;
  auto &sizes = st.sizes;
  auto &uniPtr = st.uniPtr;
  Value *scratch = st.scratch, *nwi64 = st.nwi64, *xchg = st.xchg, *resume = st.resume;
  const std::string &sfx = R.sfx;
  ValueToValueMapTy &VM = R.VM;
  BasicBlock *Pre = R.Pre;
  Value *gsx = X(o, F, E_GSX), *gsy = X(o, F, E_GSY);
  if (st.warpMode) {
    cbsWarpRegionLoop(st, B, R);
    return;
  }
  if (R.once) {
    // every instruction is group-invariant: run it once for the group (as work-item 0)
    Value *z0 = ConstantInt::get(I32, 0);
    for (size_t j = 0; j < allocas.size(); ++j)
      VM[allocas[j]] = uniPtr[j] ? uniPtr[j] : B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, offs[j])));
    VM[X(o, F, E_LX)] = z0;
    VM[X(o, F, E_LY)] = z0;
    VM[X(o, F, E_LZ)] = z0;
    VM[X(o, F, E_LWI)] = z0;
    VM[scratch] = xchg;
    return;
  }
  // z, y, x loops so that the local x id is the inner induction variable (affine: vectorisable)
  BasicBlock *&Hz = R.Hz, *&Hy = R.Hy, *&P = R.P, *&L = R.L;
  PHINode *&lx = R.lx, *&ly = R.ly, *&lz = R.lz;
  ICmpInst *&inX = R.inX, *&inY = R.inY, *&inZ = R.inZ;
  Hz = BasicBlock::Create(C, "cbs.hz" + sfx, F);
  Hy = BasicBlock::Create(C, "cbs.hy" + sfx, F);
  BasicBlock *H = BasicBlock::Create(C, "cbs.hx" + sfx, F);
  P = BasicBlock::Create(C, "cbs.pre" + sfx, F);
  L = BasicBlock::Create(C, "cbs.latch" + sfx, F);
  BasicBlock *Ly = BasicBlock::Create(C, "cbs.ly" + sfx, F);
  BasicBlock *Lz = BasicBlock::Create(C, "cbs.lz" + sfx, F);
  B.CreateBr(Hz);
  B.SetInsertPoint(Hz);
  lz = B.CreatePHI(I32, 2, "lz" + sfx);
  lz->addIncoming(st.lo[2], Pre);
  inZ = cast<ICmpInst>(B.CreateICmpULT(lz, st.hi[2]));
  B.CreateCondBr(inZ, Hy, st.scanStart);
  B.SetInsertPoint(Hy);
  ly = B.CreatePHI(I32, 2, "ly" + sfx);
  ly->addIncoming(st.lo[1], Hz);
  Value *rowBase = B.CreateMul(B.CreateAdd(B.CreateMul(lz, gsy), ly), gsx);
  inY = cast<ICmpInst>(B.CreateICmpULT(ly, st.hi[1]));
  B.CreateCondBr(inY, H, Lz);
  B.SetInsertPoint(H);
  lx = B.CreatePHI(I32, 2, "lx" + sfx);
  lx->addIncoming(st.lo[0], Hy);
  inX = cast<ICmpInst>(B.CreateICmpULT(lx, st.hi[0]));
  B.CreateCondBr(inX, P, Ly);
  B.SetInsertPoint(L);
  lx->addIncoming(B.CreateAdd(lx, ConstantInt::get(I32, 1), "", true, true), L);
  R.AG = newAccessGroup();
  markParallelLoop(B.CreateBr(H), R.AG, /*noInterleave=*/true); // keeps barrier kernels' code small
  B.SetInsertPoint(Ly);
  ly->addIncoming(B.CreateAdd(ly, ConstantInt::get(I32, 1), "", true, true), Ly);
  B.CreateBr(Hy);
  B.SetInsertPoint(Lz);
  lz->addIncoming(B.CreateAdd(lz, ConstantInt::get(I32, 1), "", true, true), Lz);
  B.CreateBr(Hz);
  B.SetInsertPoint(P);
  Value *wi = B.CreateAdd(rowBase, lx, "wi" + sfx, true, true);
  Value *wi64 = B.CreateZExt(wi, I64);
  if (!uniform || st.gone)
    R.myResume = B.CreateGEP(I32, resume, wi64);
  for (size_t j = 0; j < allocas.size(); ++j) {
    if (uniPtr[j]) {
      VM[allocas[j]] = uniPtr[j];
      continue;
    }
    Value *base = B.CreateMul(nwi64, ConstantInt::get(I64, offs[j]));
    VM[allocas[j]] = B.CreateGEP(I8, scratch, B.CreateAdd(base, B.CreateMul(wi64, ConstantInt::get(I64, sizes[j]))));
  }
  VM[X(o, F, E_LX)] = lx;
  VM[X(o, F, E_LY)] = ly;
  VM[X(o, F, E_LZ)] = lz;
  VM[X(o, F, E_LWI)] = wi;
  VM[scratch] = xchg;
}


// Step 5, region (takes R.set, R.VM; gives R.clones, R.origOf, the clones' mappings in R.VM): the
// region's blocks cloned, their operands remapped to the loop's ids and slots.
void Lowering::cbsCloneRegion(CbsState &st, CbsRegion &R) {
  for (BasicBlock *BB : R.set) {
    BasicBlock *NB = CloneBasicBlock(BB, R.VM, R.sfx, st.F);
    R.VM[BB] = NB;
    R.origOf[NB] = BB;
    R.clones.push_back(NB);
  }
  remapInstructionsInBlocks(R.clones, R.VM);
}


// Step 5, region (takes R.set, R.VM, R.preVal; changes the clones): loads of a shared (uniform) slot
// that no store of this region can precede read the value the slot had when the region started:
// use the preloaded copy (other work-items may already have stored the next value).
void Lowering::cbsUsePreloads(CbsState &st, CbsRegion &R) {
  auto &allocas = st.allocas;
  auto &uniPtr = st.uniPtr;
  auto &barrierId = st.barrierId;
  auto &set = R.set;
  auto &preVal = R.preVal;
  ValueToValueMapTy &VM = R.VM;
  std::set<BasicBlock *> inSet(set.begin(), set.end());
  std::map<AllocaInst *, size_t> slotIdx;
  for (size_t j = 0; j < allocas.size(); ++j)
    if (uniPtr[j])
      slotIdx[allocas[j]] = j;
  std::map<size_t, std::set<BasicBlock *>> reached; // blocks reachable after a store
  for (BasicBlock *BB : set)
    for (Instruction &I : *BB)
      if (auto *St = dyn_cast<StoreInst>(&I))
        if (auto *A = dyn_cast<AllocaInst>(St->getPointerOperand()))
          if (slotIdx.count(A)) {
            size_t j = slotIdx[A];
            if (barrierId.count(BB))
              continue;
            std::vector<BasicBlock *> wl(succ_begin(BB), succ_end(BB));
            while (!wl.empty()) {
              BasicBlock *Xb = wl.back();
              wl.pop_back();
              if (!inSet.count(Xb) || !reached[j].insert(Xb).second || barrierId.count(Xb))
                continue;
              for (BasicBlock *Su : successors(Xb))
                wl.push_back(Su);
            }
          }
  for (BasicBlock *BB : set) {
    std::set<size_t> storedHere;
    for (Instruction &I : *BB) {
      if (auto *St = dyn_cast<StoreInst>(&I))
        if (auto *A = dyn_cast<AllocaInst>(St->getPointerOperand()))
          if (slotIdx.count(A))
            storedHere.insert(slotIdx[A]);
      auto *Ld = dyn_cast<LoadInst>(&I);
      if (!Ld)
        continue;
      auto *A = dyn_cast<AllocaInst>(Ld->getPointerOperand());
      if (!A || !slotIdx.count(A))
        continue;
      size_t j = slotIdx[A];
      if (storedHere.count(j) || reached[j].count(BB))
        continue;
      auto *Lc = cast<Instruction>(VM[Ld]);
      Lc->replaceAllUsesWith(preVal[j]);
      Lc->eraseFromParent();
    }
  }
}


// Step 5, region (takes R; changes the clones, Pre; B's block gets its branch into the region):
// the clones join the x loop's access group; under uniform barriers the region's one-time slot
// stores move to Pre (hoistSlotStores), the loop is narrowed to the ids that pass a guard
// (narrowToGuards) and conditional shared stores become selects (speculateSharedStores, with
// flattenDecision); in the general case a work-item runs the region only if its resume id is the
// region's. (cbsRegion then gives short run loops their copies, versionShortRuns.)
void Lowering::cbsEnterRegion(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
  Function *F = st.F, *EM = st.EM;
  unsigned o = st.o;
  bool uniform = st.uniform, once = R.once;
  auto &barrierId = st.barrierId;
  auto &uniPtr = st.uniPtr;
  auto &origOf = R.origOf;
  auto &clones = R.clones;
  MDNode *AG = R.AG;
  BasicBlock *Pre = R.Pre, *NE = st.NE;
  if (AG)
    for (BasicBlock *NB : clones)
      for (Instruction &I : *NB)
        addAccessGroup(I, AG);
  BasicBlock *RE = cast<BasicBlock>(R.VM[st.regionEntry[R.k]]);
  bool warpMode = st.warpMode;
  if (uniform && !once && !warpMode && !st.gone && on(T_HOIST_SLOT_STORES))
    hoistSlotStores(RE, Pre, NE, std::set<Value *>(uniPtr.begin(), uniPtr.end()), clones);
  auto leavesRegion = [&](BasicBlock *Sc) {
    auto it = origOf.find(Sc);
    if (it == origOf.end())
      return false;
    BasicBlock *Ob = it->second;
    return barrierId.count(Ob) || firstCallTo(Ob, EM) || isa<ReturnInst>(&*Sc->getFirstNonPHIIt());
  };
  runLoops.clear(); // (what narrowToGuards adds is versioned once the region loop is closed)
  if (uniform && !once && !warpMode && !st.gone && R.reach->size() == 1 && on(T_NARROW_GUARDS))
    narrowToGuards(
        RE, leavesRegion, {Pre, NE}, Pre, {R.lx, R.ly, R.lz}, {R.inX, R.inY, R.inZ},
        {X(o, F, E_GSX), X(o, F, E_GSY), X(o, F, E_GSZ)}, {R.Hy, R.Hz, Pre});
  if (once) {
    B.CreateBr(RE);
  } else if (uniform && (!st.gone || R.k == 0)) {
    B.CreateBr(RE);
    if (!warpMode && !st.gone && on(T_SPECULATE_SHARED_STORES))
      speculateSharedStores(F, clones, AG, leavesRegion); // (needs the region reachable)
  } else {
    // Convergent case (every work-item waits here): no per-item check. Only worth the duplicated
    // loop at O3 with large groups; the check is cheap and if-converted by the vectoriser anyway.
    // (ol-early-exits: every work-item that has not exited runs the region, resume id 0; `uni` as the
    // region starts, which the warp scheduler may have changed since cbs.sched)
    Value *uni = st.gone ? cbsAllLive(st, R) : st.uniV;
    BasicBlock *Chk = BasicBlock::Create(C, "cbs.check" + R.sfx, F);
    R.uniBr = B.CreateCondBr(uni, RE, Chk);
    B.SetInsertPoint(Chk);
    LoadInst *rl = B.CreateLoad(I32, R.myResume);
    addAccessGroup(*rl, AG);
    B.CreateCondBr(B.CreateICmpEQ(rl, ConstantInt::get(I32, st.gone ? 0 : R.k)), RE, R.L);
  }
}


// Step 5, region (takes R; changes the clones): where a work-item goes after leaving the region
// (the scheduler for a region run once, else the x loop's latch), and how it records its resume
// point: in `next` under uniform barriers (unless Pre did already), else in its resume id.
void Lowering::cbsLeaveRegion(CbsState &st, CbsRegion &R) {
  bool uniform = st.uniform;
  auto &barrierId = st.barrierId;
  auto &set = R.set;
  auto &clones = R.clones;
  const std::set<BasicBlock *> &regionReach = *R.reach;
  BasicBlock *after = R.once ? st.sched : R.L;
  // e: the barrier block left through, or nullptr (the exit)
  auto leave = [&](BasicBlock *NB, BasicBlock *e) {
    IRBuilder<> B2(NB);
    if (uniform && st.gone && !e) { // (not needed where every work-item exits: cbsLiveLanes)
      if (regionReach.size() > 1)
        addAccessGroup(*B2.CreateStore(ConstantInt::get(I32, RESUME_EXIT), R.myResume), R.AG);
    } else if (uniform && st.gone) {
      if (regionReach.size() - regionReach.count(nullptr) > 1)
        cbsRecordExit(st, B2, e);
    } else if (uniform) {
      if (regionReach.size() != 1)
        cbsRecordExit(st, B2, e);
    } else {
      addAccessGroup(*B2.CreateStore(ConstantInt::get(I32, cbsExitId(st, e)), R.myResume), R.AG);
    }
    B2.CreateBr(after);
  };
  for (size_t c = 0; c < set.size(); ++c) {
    BasicBlock *NB = clones[c];
    if (barrierId.count(set[c])) {
      NB->getTerminator()->eraseFromParent();
      NB->front().eraseFromParent();
      leave(NB, set[c]);
    } else if (firstCallTo(NB, st.EM)) {
      while (!NB->empty())
        NB->back().eraseFromParent();
      leave(NB, nullptr);
    } else if (isa<ReturnInst>(NB->getTerminator())) {
      NB->getTerminator()->eraseFromParent();
      leave(NB, nullptr);
    }
  }
}


// Step 5, region in chunk mode (ol-lockstep-loops; takes the loop nest, R.myResume and R.uniBr): a region
// that some work-item of the chunk is to run again (a lockstep loop's iteration) runs again at once,
// without the scan for the smallest pending region: `again` is the OR over the chunk of `resume == k` (a
// reduction the vectoriser keeps in a register), and the region's preload block is entered again
// straight away, with `uni` false (some work-items have left). The repeat is then a loop of its own,
// not a path through the scheduler's switch, so once the vectoriser has made the chunk's loop one
// straight-line pass, LICM keeps the chunk's slots in registers across passes (promotion: the slots'
// addresses are the same on every pass and nothing else in the loop may touch them). Legal in chunk mode
// only: there are no barriers of the kernel's own whose order the scan keeps.
void Lowering::cbsChunkRepeat(CbsState &st, CbsRegion &R) {
  if (!R.myResume || R.once || !R.Hz || !R.uniBr)
    return;
  Function *F = st.F;
  IRBuilder<> B(&*st.NE->getFirstInsertionPt());
  AllocaInst *again = B.CreateAlloca(I1Ty(), nullptr, "cbs.again" + R.sfx);
  B.SetInsertPoint(R.Pre->getTerminator());
  B.CreateStore(ConstantInt::getFalse(C), again);
  B.SetInsertPoint(R.L->getTerminator());
  Value *r = B.CreateLoad(I32, R.myResume);
  addAccessGroup(*cast<Instruction>(r), R.AG);
  B.CreateStore(B.CreateOr(B.CreateLoad(I1Ty(), again), B.CreateICmpEQ(r, ConstantInt::get(I32, R.k))), again);
  BasicBlock *A = BasicBlock::Create(C, "cbs.again" + R.sfx, F);
  BasicBlock *Rep = BasicBlock::Create(C, "cbs.repeat" + R.sfx, F);
  R.Hz->getTerminator()->replaceSuccessorWith(st.scanStart, A);
  B.SetInsertPoint(A);
  B.CreateCondBr(B.CreateLoad(I1Ty(), again), Rep, st.scanStart);
  B.SetInsertPoint(Rep);
  B.CreateBr(R.Pre);
  PHINode *uni = PHINode::Create(I1Ty(), 2, "cbs.uni" + R.sfx, R.Pre->begin());
  uni->addIncoming(st.uniV, st.sched);
  uni->addIncoming(ConstantInt::getFalse(C), Rep);
  R.uniBr->setCondition(uni);
}


// Step 5, last (takes st.origBlocks, st.allocas; gives false with an error if a marker is left):
// the original body, now unreachable, and its allocas removed.
bool Lowering::cbsFinish(CbsState &st) {
  Function *F = st.F, *BM = st.BM, *EM = st.EM;
  for (BasicBlock *BB : st.origBlocks)
    BB->dropAllReferences();
  for (BasicBlock *BB : st.origBlocks)
    BB->eraseFromParent();
  for (AllocaInst *AI : st.allocas) {
    AI->replaceAllUsesWith(PoisonValue::get(AI->getType()));
    AI->eraseFromParent();
  }
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
          return fail("internal: unsplit barrier marker");
  if (st.warpMode && !st.gone && on(T_WARP_UNIFORM_LOOPS))
    warpUniformLoops(st);
  if (st.warpMode && on(T_CHAIN_WARP_REGIONS))
    cbsChainWarpRegions(st);
  removeUnreachableBlocks(*F);
  for (BasicBlock &BB : *F) // (what only ol-warp-lanes reads)
    for (Instruction &I : BB)
      I.setMetadata(kLanesInMD, nullptr);
  return true;
}

} // namespace ol_rs::lower
