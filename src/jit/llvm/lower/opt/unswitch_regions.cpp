// A region's loop nest copied per side of a branch decided once before it (unswitchNest): a region's
// exit chosen by a uniform branch (ol-unswitch-region-exit, cbsUnswitchExit), and a branch that is the
// same for a warp's lanes in a warp's lane loop (ol-unswitch-warp-branches, cbsUnswitchWarpBranch).
#include "../lowering.h"

namespace ol_rs::lower {


// Step 5, region, last (takes R's finished loop nest; gives a copy of it): under uniform barriers a
// region with several exits leaves through the one a uniform branch chooses (a loop's latch inside
// the region: `j + 8 == n` back to its barrier or on, the amdgcn n-body's loop unrolled by 8), and
// every work-item records it in `next` and the shared slots. Inside the x loop that branch keeps
// the loop from vectorising, and O3 unswitches it only when the body is small. So the first such
// branch whose condition is available before the loops (hoistIfUniform) is decided once in Pre:
// the nest is copied, the original takes the branch's true side, the copy its false side.
void Lowering::cbsUnswitchExit(CbsState &st, CbsRegion &R) {
  if (!st.uniform || R.once || R.reach->size() <= 1)
    return;
  std::set<BasicBlock *> exits;
  for (size_t c = 0; c < R.set.size(); ++c)
    if (st.barrierId.count(R.set[c]))
      exits.insert(R.clones[c]);
  BranchInst *Br = nullptr;
  for (BasicBlock *NB : R.clones) {
    auto *BI = dyn_cast<BranchInst>(NB->getTerminator());
    if (BI && BI->isConditional() && !isa<Constant>(BI->getCondition()) && BI->getSuccessor(0) != BI->getSuccessor(1) &&
        (exits.count(BI->getSuccessor(0)) || exits.count(BI->getSuccessor(1))) &&
        availableBefore(st, R, BI->getCondition())) {
      Br = BI;
      break;
    }
  }
  ValueToValueMapTy VM;
  if (Br && unswitchNest(st, R.Pre, R.Hz, Br, VM))
    fired(T_UNSWITCH_REGION_EXIT);
}


// Whether V (a branch condition of R's clones) can be computed in R.Pre, before R's loops: a uniform
// value (hoistIfUniform, which moves it there), or a compare of two.
bool Lowering::availableBefore(CbsState &st, CbsRegion &R, Value *V) {
  auto *Cmp = dyn_cast<CmpInst>(V);
  if (!Cmp || Cmp->getParent() == R.Pre || Cmp->getParent() == st.NE)
    return hoistIfUniform(V, {R.Pre, st.NE}, R.Pre);
  if (!hoistIfUniform(Cmp->getOperand(0), {R.Pre, st.NE}, R.Pre) ||
      !hoistIfUniform(Cmp->getOperand(1), {R.Pre, st.NE}, R.Pre))
    return false;
  Cmp->moveBefore(R.Pre->getTerminator()->getIterator());
  return true;
}


// Under ol-warp-lanes, a branch in a region's lane loop LL that is the same for the warp's lanes (not
// divergent at the warp's width: `t / W == 0`, `t < W`, `lane < 16` is not; R.origOf: the region's original
// block of each of the loop's blocks, its copies' too) is decided once per warp: its condition is computed
// for the warp's first lane before the loop (atFirstLane, at the end of LL.Pre, which may already choose
// between copies: the loop is then entered through a block of its own, the new LL.Pre) and the lane loop is
// copied per side (unswitchNest; VM: the loop's blocks and values to the copy's). After the first
// (`exitsOnly`), only a branch to one of the region's exits, whose sides store to different slots. LLVM's
// loop unswitching would do it for a small loop, but scales its cost by the number of sibling loops, and
// every region's lane loop is a sibling inside the warp scheduler's loop; a branch left in the lane loop
// around a load keeps it from vectorising.
bool Lowering::cbsUnswitchWarpBranch(CbsState &st, CbsRegion &R, CbsState::LaneLoop &LL, bool exitsOnly,
                                     ValueToValueMapTy &VM) {
  if (!st.warpMode || !LL.head)
    return false;
  std::vector<BasicBlock *> nest = reachable({LL.head}, [](BasicBlock *) { return false; }, {st.scanStart, st.sched});
  for (BasicBlock *NB : nest) {
    auto *BI = dyn_cast<BranchInst>(NB->getTerminator());
    auto orig = R.origOf.find(NB);
    if (!BI || !BI->isConditional() || isa<Constant>(BI->getCondition()) || BI->getSuccessor(0) == BI->getSuccessor(1) ||
        orig == R.origOf.end() || st.divTerm.count(orig->second->getTerminator()))
      continue;
    if (exitsOnly && none_of(successors(orig->second), [&](BasicBlock *S) { return st.barrierId.count(S) > 0; }))
      continue;
    std::vector<Instruction *> made;
    Value *cond = atFirstLane(st, LL, BI->getCondition(), made);
    if (!cond) {
      for (Instruction *I : reverse(made))
        I->eraseFromParent();
      continue;
    }
    BI->setCondition(cond); // (the same value for every lane)
    auto *T = dyn_cast<BranchInst>(LL.Pre->getTerminator());
    if (!T || T->isConditional()) { // (the way in chooses between copies already: a block of its own)
      BasicBlock *P = BasicBlock::Create(C, "cbs.wpre" + R.sfx, st.F, LL.head);
      BranchInst::Create(LL.head, P);
      LL.Pre->getTerminator()->replaceSuccessorWith(LL.head, P);
      LL.head->replacePhiUsesWith(LL.Pre, P);
      LL.Pre = P;
    }
    if (!unswitchNest(st, LL.Pre, LL.head, BI, VM))
      return false;
    fired(T_UNSWITCH_WARP_BRANCHES);
    return true;
  }
  return false;
}


// V, a value of a lane loop LL, as the warp's first lane computes it, computed at the end of LL.Pre (its
// new instructions appended to `made`): the x id lx is the warp's first xw, the flat id wi wrow + xw;
// values of Pre and the group prologue as they are. Pure, speculatable arithmetic, compares, selects and
// address computations only, a few deep; nullptr otherwise. Loads from the pointers in `slots` too (the
// lane's slots that the lane loop does not store to: the first lane's holds at Pre what it holds where
// that lane reads it).
Value *Lowering::atFirstLane(CbsState &st, const CbsState::LaneLoop &LL, Value *V, std::vector<Instruction *> &made,
                             const std::set<Value *> *slots, int depth) {
  if (isa<Constant>(V) || isa<Argument>(V))
    return V;
  if (V == LL.lx)
    return LL.xw;
  if (V == LL.lane)
    return ConstantInt::get(V->getType(), 0);
  auto *I = dyn_cast<Instruction>(V);
  if (!I || depth > 8)
    return nullptr;
  IRBuilder<> B(LL.Pre->getTerminator());
  if (V == LL.wi) {
    made.push_back(cast<Instruction>(B.CreateAdd(LL.wrow, LL.xw, "", true, true)));
    return made.back();
  }
  if (I->getParent() == LL.Pre || I->getParent() == LL.entry || I->getParent() == st.NE)
    return I;
  auto *Ld = dyn_cast<LoadInst>(I);
  bool slotLoad = Ld && slots && Ld->isSimple() && slots->count(Ld->getPointerOperand());
  if (!slotLoad && (I->mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(I) || !isPureArithmetic(I)))
    return nullptr;
  SmallVector<Value *, 4> ops;
  for (Value *Op : I->operands()) {
    Value *v = atFirstLane(st, LL, Op, made, slots, depth + 1);
    if (!v)
      return nullptr;
    ops.push_back(v);
  }
  Instruction *N = I->clone();
  for (unsigned i = 0; i < ops.size(); ++i)
    N->setOperand(i, ops[i]);
  N->dropPoisonGeneratingAnnotations(); // (computed where the loop might not have: no poison)
  N->setMetadata(LLVMContext::MD_access_group, nullptr);
  N->insertBefore(LL.Pre->getTerminator()->getIterator());
  made.push_back(N);
  return N;
}


// The loop nest entered at `head` from Pre (everything reachable from it up to the scheduler) copied:
// the original takes Br's true side, the copy its false side, and Pre chooses on Br's condition, which
// must be available there; VM maps the nest's blocks to the copy's. False (nothing changed) when a value
// of the nest is used outside it.
bool Lowering::unswitchNest(CbsState &st, BasicBlock *Pre, BasicBlock *head, BranchInst *Br, ValueToValueMapTy &VM) {
  auto *T = dyn_cast<BranchInst>(Pre->getTerminator());
  if (!T || T->isConditional() || T->getSuccessor(0) != head)
    return false;
  std::vector<BasicBlock *> nest = reachable({head}, [](BasicBlock *) { return false; }, {st.scanStart, st.sched});
  std::set<BasicBlock *> inNest(nest.begin(), nest.end());
  // (blocks a branch decided before left unreachable, still using the nest's values, do not count; their
  // edges into the nest go, so that its PHIs name only the ways in that run, in the copy too)
  std::set<BasicBlock *> live;
  for (BasicBlock *BB : depth_first(&st.F->getEntryBlock()))
    live.insert(BB);
  for (BasicBlock *BB : nest)
    for (BasicBlock *P : make_early_inc_range(predecessors(BB)))
      if (!live.count(P) && !isa<UnreachableInst>(P->getTerminator())) {
        for (BasicBlock *S : successors(P))
          S->removePredecessor(P);
        P->getTerminator()->eraseFromParent();
        new UnreachableInst(C, P);
      }
  for (BasicBlock *BB : nest)
    for (Instruction &I : *BB)
      for (User *U : I.users())
        if (BasicBlock *UB = cast<Instruction>(U)->getParent(); !inNest.count(UB) && live.count(UB))
          return false; // (not expected: the regions share values through slots only)
  SmallVector<BasicBlock *, 64> copy;
  for (BasicBlock *BB : nest) {
    BasicBlock *NB = CloneBasicBlock(BB, VM, ".f", st.F);
    VM[BB] = NB;
    copy.push_back(NB);
  }
  remapInstructionsInBlocks(copy, VM);
  for (BasicBlock *NB : copy) // each copied loop its own loop id
    if (MDNode *LID = NB->getTerminator()->getMetadata(LLVMContext::MD_loop)) {
      SmallVector<Metadata *, 4> ops = {nullptr};
      for (unsigned i = 1; i < LID->getNumOperands(); ++i)
        ops.push_back(LID->getOperand(i));
      MDNode *N = MDNode::getDistinct(C, ops);
      N->replaceOperandWith(0, N);
      NB->getTerminator()->setMetadata(LLVMContext::MD_loop, N);
    }
  Value *cond = Br->getCondition();
  auto decide = [&](BranchInst *B, unsigned keep) {
    BasicBlock *From = B->getParent(), *Drop = B->getSuccessor(1 - keep);
    Drop->removePredecessor(From);
    BranchInst::Create(B->getSuccessor(keep), B->getIterator());
    B->eraseFromParent();
  };
  decide(cast<BranchInst>(cast<BasicBlock>(VM[Br->getParent()])->getTerminator()), 1);
  decide(Br, 0);
  BranchInst::Create(head, cast<BasicBlock>(VM[head]), cond, T->getIterator());
  T->eraseFromParent();
  return true;
}

} // namespace ol_rs::lower
