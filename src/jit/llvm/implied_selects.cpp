// ol-implied-selects: in an arm of `select C', P, Q`, a `select C, X, Y` whose condition C' decides
// (LLVM's isImpliedCondition: `lane >= 2` makes `lane < 2` false) is the arm C takes there.
//
// Why: a warp shuffle read at a fixed lane distance with wrap-around (ol-lane-offset-reads, readLane) is
// `lane < k ? slot[own + W - k] : slot[own - k]`, and a scan's `if (lane >= k) v += up` keeps v for the
// lanes below k, so the wrapped read is dead in every lane that would use it. InstCombine replaces only
// a select's own condition value in its arms, and not through the add and the shuffle's bounds select
// between them; vectorised, the dead read was a masked load per vector, after a compare of the lane
// ids that it waited for. Run at the vectoriser's start (with the workarounds, src/jit/llvm/passes.cpp),
// after LLVM's own clean-up has made equal conditions one value.
//
// How: from each select T = `select C', P, Q`, down the operands of P (where C' holds) and of Q (where
// it does not), through instructions used only there (depth 6), a select S whose condition C' decides
// is replaced there by its chosen arm.
//
// Legal: where T takes an arm, the rewritten arm computes the same value (S would have chosen that arm).
// Where T takes the other one, the arm's value is unused; the instructions rewritten have T's arm as
// their only use, and are operations without undefined behaviour for any operand (no integer division or
// remainder, no memory access, no call but a speculatable intrinsic), so a different value there, poison
// included, changes nothing.
#include "implied_selects.h"

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

using namespace llvm;

namespace ol_rs {

namespace {

constexpr unsigned kMaxDepth = 6;

// May I be rewritten to compute from a different operand value, unused by T where it differs?
bool freeOfUB(const Instruction *I) {
  if (auto *BO = dyn_cast<BinaryOperator>(I))
    switch (BO->getOpcode()) {
    case Instruction::UDiv: case Instruction::SDiv: case Instruction::URem: case Instruction::SRem:
      return false;
    default:
      return true;
    }
  if (isa<UnaryOperator>(I) || isa<CastInst>(I) || isa<SelectInst>(I) || isa<CmpInst>(I))
    return true;
  if (auto *II = dyn_cast<IntrinsicInst>(I))
    return !II->mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(II);
  return false;
}

// U: a use within T's arm where T's condition is `armTrue`.
bool rewrite(Use &U, Value *Cond, bool armTrue, const DataLayout &DL, unsigned depth) {
  auto *I = dyn_cast<Instruction>(U.get());
  if (!I)
    return false;
  if (auto *S = dyn_cast<SelectInst>(I))
    if (S->getCondition()->getType()->isIntegerTy(1))
      if (std::optional<bool> known = isImpliedCondition(Cond, S->getCondition(), DL, armTrue)) {
        U.set(*known ? S->getTrueValue() : S->getFalseValue());
        rewrite(U, Cond, armTrue, DL, depth);
        return true;
      }
  if (depth >= kMaxDepth || !I->hasOneUse() || !freeOfUB(I))
    return false;
  bool changed = false;
  for (Use &Op : I->operands())
    changed |= rewrite(Op, Cond, armTrue, DL, depth + 1);
  return changed;
}

} // namespace

PreservedAnalyses ImpliedSelectsPass::run(Function &F, FunctionAnalysisManager &) {
  const DataLayout &DL = F.getDataLayout();
  std::vector<SelectInst *> selects;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *T = dyn_cast<SelectInst>(&I))
        if (T->getCondition()->getType()->isIntegerTy(1))
          selects.push_back(T);
  bool changed = false;
  for (SelectInst *T : selects) {
    changed |= rewrite(T->getOperandUse(1), T->getCondition(), true, DL, 0);
    changed |= rewrite(T->getOperandUse(2), T->getCondition(), false, DL, 0);
  }
  if (!changed)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace ol_rs
