// A region's exit chosen by a uniform branch decided once before its loops, the loop nest copied
// per side (cbsUnswitchExit).
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
  auto avail = [&](Value *V) { // hoistIfUniform, also for the compare a latch tests
    auto *Cmp = dyn_cast<CmpInst>(V);
    if (!Cmp || Cmp->getParent() == R.Pre || Cmp->getParent() == st.NE)
      return hoistIfUniform(V, {R.Pre, st.NE}, R.Pre);
    if (!hoistIfUniform(Cmp->getOperand(0), {R.Pre, st.NE}, R.Pre) ||
        !hoistIfUniform(Cmp->getOperand(1), {R.Pre, st.NE}, R.Pre))
      return false;
    Cmp->moveBefore(R.Pre->getTerminator()->getIterator());
    return true;
  };
  BranchInst *Br = nullptr;
  for (BasicBlock *NB : R.clones) {
    auto *BI = dyn_cast<BranchInst>(NB->getTerminator());
    if (BI && BI->isConditional() && !isa<Constant>(BI->getCondition()) && BI->getSuccessor(0) != BI->getSuccessor(1) &&
        (exits.count(BI->getSuccessor(0)) || exits.count(BI->getSuccessor(1))) &&
        avail(BI->getCondition())) {
      Br = BI;
      break;
    }
  }
  auto *T = dyn_cast<BranchInst>(R.Pre->getTerminator());
  if (!Br || !T || T->isConditional() || T->getSuccessor(0) != R.Hz)
    return;
  // the nest: everything reachable from its z header up to the scheduler
  std::vector<BasicBlock *> nest;
  std::set<BasicBlock *> seen = {st.scanStart, st.sched};
  std::vector<BasicBlock *> work = {R.Hz};
  while (!work.empty()) {
    BasicBlock *BB = work.back();
    work.pop_back();
    if (!seen.insert(BB).second)
      continue;
    nest.push_back(BB);
    for (BasicBlock *Su : successors(BB))
      work.push_back(Su);
  }
  std::set<BasicBlock *> inNest(nest.begin(), nest.end());
  for (BasicBlock *BB : nest)
    for (Instruction &I : *BB)
      for (User *U : I.users())
        if (!inNest.count(cast<Instruction>(U)->getParent()))
          return; // (not expected: the regions share values through slots only)
  ValueToValueMapTy VM;
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
  BranchInst::Create(R.Hz, cast<BasicBlock>(VM[R.Hz]), cond, T->getIterator());
  fired(T_UNSWITCH_REGION_EXIT);
  T->eraseFromParent();
}

} // namespace ol_rs::lower
