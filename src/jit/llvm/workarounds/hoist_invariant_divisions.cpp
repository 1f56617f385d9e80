// ol-hoist-invariant-divisions: a workaround for an LLVM 22.1 loop-vectoriser miscompile.
//
// The bug (LLVM 22.1.8, LoopVectorize; reproducer and analysis in shared/evidence/lv-predicated-urem-gather):
// a loop-invariant integer division or remainder by a value that is not a constant stays inside the loop
// under a condition, because LLVM cannot prove the divisor non-zero (isSafeToSpeculativelyExecute accepts
// only constant divisors), so neither LICM nor the vectoriser may execute it unconditionally. The
// vectoriser then predicates it per lane but treats its result as uniform: a masked gather (or any other
// user of the uniform value) takes lane 0's result, which is `poison` when lane 0 is masked off. Active
// lanes read the wrong element or a wild address. It shows on every CPU where LLVM uses masked gathers
// (skylake and later, znver4, x86-64-v4), at O2/O3, for the generic and the specialised builds, in our
// lowered kernels (`(j * 5) % n` with n the group size) and in users' own code alike.
//
// The workaround removes the class, not the case: just before the vectoriser (the pass runs at
// VectorizerStart, after the last InstCombine that could sink it back), every scalar integer
// udiv/urem/sdiv/srem whose operands are both invariant in its loop and whose divisor is not a safe
// constant is moved to the loop's preheader (and on out through every enclosing loop it is invariant in),
// its divisor made safe there:
//     d' = freeze(d) == 0 ? 1 : freeze(d)                                   (udiv, urem)
//     d' = freeze(d) == 0 || (freeze(d) == -1 && freeze(x) == INT_MIN) ? 1 : freeze(d)   (sdiv, srem,
//          with freeze(x) as the dividend)
// Why it is sound: the operands are loop-invariant, so the value computed in the preheader is the value
// the original computed wherever it ran; d' differs from d only where the original was undefined
// behaviour (a zero divisor, signed overflow, a poison divisor), so no defined result changes, and the
// division can no longer trap where the original did not run. The vectoriser then sees an unconditional
// uniform value outside the loop: nothing to predicate.
//
// Delete when the LLVM the JIT links no longer has the bug (the regression test
// `predicated_invariant_division_feeding_a_gather` in src/jit/llvm/tests.rs runs the pattern for a
// gather-capable CPU on any x86-64 machine).
#include "workarounds.h"

#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <vector>

using namespace llvm;

namespace ol_rs {

namespace {

bool isDivision(const Instruction &I) {
  switch (I.getOpcode()) {
  case Instruction::UDiv:
  case Instruction::URem:
  case Instruction::SDiv:
  case Instruction::SRem:
    return I.getType()->isIntegerTy();
  default:
    return false;
  }
}

bool isSigned(const Instruction &I) {
  return I.getOpcode() == Instruction::SDiv || I.getOpcode() == Instruction::SRem;
}

// A divisor LLVM already treats as safe: a constant other than 0 (and -1 for the signed forms).
bool safeConstantDivisor(const Instruction &I) {
  auto *C = dyn_cast<ConstantInt>(I.getOperand(1));
  return C && !C->isZero() && !(isSigned(I) && C->isMinusOne());
}

// Moves `I` (a division whose operands are invariant in the loop `Pre` is the preheader of) before
// `Pre`'s terminator, with a divisor that cannot trap.
void hoistWithSafeDivisor(Instruction &I, BasicBlock *Pre) {
  IRBuilder<> B(Pre->getTerminator());
  Value *X = I.getOperand(0), *D = I.getOperand(1);
  Type *T = D->getType();
  auto frozen = [&](Value *V) { return isGuaranteedNotToBeUndefOrPoison(V) ? V : B.CreateFreeze(V, V->getName() + ".fr"); };
  Value *FD = frozen(D);
  Value *Bad = B.CreateICmpEQ(FD, ConstantInt::get(T, 0));
  if (isSigned(I)) {
    Value *FX = frozen(X);
    Value *Overflow = B.CreateAnd(B.CreateICmpEQ(FD, ConstantInt::getSigned(T, -1)),
                                  B.CreateICmpEQ(FX, ConstantInt::get(T, APInt::getSignedMinValue(T->getIntegerBitWidth()))));
    Bad = B.CreateOr(Bad, Overflow);
    I.setOperand(0, FX);
  }
  I.setOperand(1, B.CreateSelect(Bad, ConstantInt::get(T, 1), FD, "ol.safe.divisor"));
  I.moveBefore(Pre->getTerminator()->getIterator());
  I.updateLocationAfterHoist();
}

} // namespace

PreservedAnalyses HoistInvariantDivisionsPass::run(Function &F, FunctionAnalysisManager &AM) {
  LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return PreservedAnalyses::all();
  // Blocks in reverse post-order, so that a division whose dividend is another hoisted division (also
  // invariant) is seen after it.
  std::vector<Instruction *> work;
  ReversePostOrderTraversal<Function *> RPOT(&F);
  for (BasicBlock *BB : RPOT)
    if (LI.getLoopFor(BB))
      for (Instruction &I : *BB)
        if (isDivision(I) && !safeConstantDivisor(I))
          work.push_back(&I);
  bool changed = false, cfgChanged = false;
  DominatorTree *DT = nullptr;
  // A preheader for `L` (LoopSimplify's, made here when the loop has none yet: before the vectoriser's
  // own loop passes, loops need not be in simplified form), or null when none can be made.
  auto preheader = [&](Loop *L) {
    if (BasicBlock *P = L->getLoopPreheader())
      return P;
    if (!DT)
      DT = &AM.getResult<DominatorTreeAnalysis>(F);
    BasicBlock *P = InsertPreheaderForLoop(L, DT, &LI, nullptr, false);
    cfgChanged |= P != nullptr;
    return P;
  };
  for (Instruction *I : work) {
    // The outermost loop the division is invariant in.
    Loop *L = LI.getLoopFor(I->getParent());
    if (!L->hasLoopInvariantOperands(I))
      continue;
    while (Loop *P = L->getParentLoop()) {
      if (!P->hasLoopInvariantOperands(I))
        break;
      L = P;
    }
    BasicBlock *Pre = preheader(L);
    if (!Pre)
      continue;
    hoistWithSafeDivisor(*I, Pre);
    changed = true;
  }
  if (!changed && !cfgChanged)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  if (cfgChanged) {
    // new preheader blocks: the dominator tree and loop info are kept up to date, the rest is recomputed
    PA.preserve<DominatorTreeAnalysis>();
    PA.preserve<LoopAnalysis>();
  } else {
    // only instructions moved between existing blocks
    PA.preserveSet<CFGAnalyses>();
  }
  return PA;
}

} // namespace ol_rs
