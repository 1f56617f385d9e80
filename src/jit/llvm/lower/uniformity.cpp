// Uniformity: which values and terminators differ between the work-items of a group
// (divergentValues), and which region sets are group-invariant (groupInvariant).
#include "lowering.h"

namespace ol_rs::lower {


// Which SSA values are the same for every work-item of the group (under GPU semantics: race-free
// memory, convergent barriers)? Sources of divergence: the local ids, allocas (per-work-item memory),
// atomics, non-intrinsic calls; propagated through operands, loads from divergent addresses, PHIs at
// joins of divergent branches (blocks reachable from the branch before its immediate post-dominator)
// and values leaving loops with a divergent exit.
std::set<Value *> Lowering::divergentValues(Function *F) {
  unsigned o = F->arg_size() - E_COUNT;
  std::set<Value *> div;
  for (int e : {E_LX, E_LY, E_LZ, E_LWI})
    div.insert(F->getArg(o + e));
  DominatorTree DT(*F);
  LoopInfo LI(DT);
  PostDominatorTree PDT(*F);
  auto isDiv = [&](Value *v) { return div.count(v) != 0; };
  for (bool changed = true; changed;) {
    changed = false;
    // join blocks of divergent branches
    std::set<BasicBlock *> joins;
    for (BasicBlock &BB : *F) {
      Instruction *T = BB.getTerminator();
      Value *cond = nullptr;
      if (auto *BI = dyn_cast<BranchInst>(T))
        cond = BI->isConditional() ? BI->getCondition() : nullptr;
      else if (auto *SI = dyn_cast<SwitchInst>(T))
        cond = SI->getCondition();
      if (!cond || !isDiv(cond))
        continue;
      DomTreeNode *N = PDT.getNode(&BB);
      BasicBlock *P = (N && N->getIDom()) ? N->getIDom()->getBlock() : nullptr;
      if (P)
        joins.insert(P);
      std::vector<BasicBlock *> wl(succ_begin(&BB), succ_end(&BB));
      std::set<BasicBlock *> seen;
      while (!wl.empty()) {
        BasicBlock *X = wl.back();
        wl.pop_back();
        if (X == P || !seen.insert(X).second)
          continue;
        joins.insert(X);
        for (BasicBlock *Su : successors(X))
          wl.push_back(Su);
      }
    }
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        if (isDiv(&I))
          continue;
        bool d = false;
        auto *LdI = dyn_cast<LoadInst>(&I);
        if (isa<AllocaInst>(&I) || isa<AtomicRMWInst>(&I) || isa<AtomicCmpXchgInst>(&I) ||
            (LdI && (LdI->isAtomic() || LdI->isVolatile()))) {
          d = true;
        } else if (auto *CB = dyn_cast<CallBase>(&I)) {
          Function *Cal = CB->getCalledFunction();
          if (!Cal || !Cal->isIntrinsic() || CB->mayReadOrWriteMemory())
            d = true;
          else
            for (Value *A : CB->args())
              d = d || isDiv(A);
        } else if (auto *PN = dyn_cast<PHINode>(&I)) {
          d = joins.count(&BB) != 0;
          for (Value *V : PN->incoming_values())
            d = d || isDiv(V);
        } else {
          for (Value *Op : I.operands())
            d = d || isDiv(Op);
        }
        if (!d && !I.getType()->isVoidTy())
          if (Loop *L = LI.getLoopFor(&BB)) {
            bool usedOutside = false;
            for (User *U : I.users())
              if (auto *UI = dyn_cast<Instruction>(U))
                usedOutside = usedOutside || !L->contains(UI->getParent());
            if (usedOutside) {
              SmallVector<BasicBlock *, 4> exiting;
              L->getExitingBlocks(exiting);
              for (BasicBlock *EB : exiting) {
                Instruction *T = EB->getTerminator();
                if (auto *BI = dyn_cast<BranchInst>(T))
                  d = d || (BI->isConditional() && isDiv(BI->getCondition()));
                else
                  d = true;
              }
            }
          }
        if (d) {
          div.insert(&I);
          changed = true;
        }
      }
  }
  return div;
}


// Can a region be run once for the whole group instead of once per work-item? Yes when nothing in
// it depends on the work-item: no divergent value or branch, loads only of group-invariant values,
// stores only to the shared slots of group-invariant values (every work-item would store the same).
bool Lowering::groupInvariant(const std::vector<BasicBlock *> &set, const std::set<Value *> &div,
                           const std::set<Instruction *> &divTerm, const std::set<AllocaInst *> &uniSlots,
                           Function *BM, Function *EM) {
  for (BasicBlock *BB : set)
    for (Instruction &I : *BB) {
      if (I.isTerminator()) {
        if (divTerm.count(&I))
          return false;
        continue;
      }
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
          continue;
      if (auto *Ld = dyn_cast<LoadInst>(&I)) {
        if (Ld->isVolatile() || Ld->isAtomic())
          return false;
        if (auto *A = dyn_cast<AllocaInst>(Ld->getPointerOperand())) {
          if (!uniSlots.count(A))
            return false;
          continue;
        }
        if (div.count(&I))
          return false;
        continue;
      }
      if (auto *St = dyn_cast<StoreInst>(&I)) {
        auto *A = dyn_cast<AllocaInst>(St->getPointerOperand());
        if (!A || !uniSlots.count(A) || St->isVolatile())
          return false;
        continue;
      }
      if (div.count(&I) || I.mayHaveSideEffects() || I.mayReadFromMemory())
        return false;
    }
  return true;
}

} // namespace ol_rs::lower
