// ol-nested-selects: `select C1, (select C2, A, B), A` is `select (C1 && !C2), B, A`, and
// `select C1, A, (select C2, B, A)` is `select (!C1 && C2), B, A`, where the inner select has no other use.
//
// Why: the loop vectoriser predicates nested branches as a chain of selects: a lockstep loop's update of
// its state (ol-lockstep-loops: `if (this work-item runs the loop) { if (it leaves) keep; else update; }`)
// becomes `select active, (select leaves, old, new), old` for each value the loop carries: two blends per
// value and iteration (a masked move each with AVX-512), where one blend with one mask, shared by every
// value, does. InstCombine folds the forms where the shared value is in the same arm of both selects,
// not these. Run at the vectoriser's end (src/jit/llvm/passes.cpp), on the selects it made.
//
// Legal: where C1 holds, the outer select takes the inner one, which takes B exactly where C2 does not
// hold; elsewhere it takes A: the new select's condition is C1 && !C2. The `&&` is LLVM's logical and
// (`select C1, !C2, false`): where C1 is false the result is false even if C2 is poison, as the original
// took A without looking at C2 there.
#include "nested_selects.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/ValueHandle.h"
#include "llvm/Transforms/Utils/Local.h"

using namespace llvm;

namespace ol_rs {

PreservedAnalyses NestedSelectsPass::run(Function &F, FunctionAnalysisManager &) {
  SmallVector<SelectInst *, 32> outer;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *S = dyn_cast<SelectInst>(&I); S && S->getCondition()->getType()->isIntOrIntVectorTy(1))
        outer.push_back(S);
  // (replaced selects are erased at the end, with what only they used: a later one of `outer` may be
  // one's inner select)
  SmallVector<WeakTrackingVH, 8> replaced;
  for (SelectInst *S : outer) {
    if (S->use_empty())
      continue; // replaced, or dead anyway
    Value *C1 = S->getCondition(), *T = S->getTrueValue(), *E = S->getFalseValue();
    // the inner select in the outer one's true arm (sharing its false value), or in its false arm
    // (sharing its true value)
    bool innerInTrue = true;
    auto *In = dyn_cast<SelectInst>(T);
    if (!In || !In->hasOneUse() || In->getTrueValue() != E) {
      In = dyn_cast<SelectInst>(E);
      innerInTrue = false;
      if (!In || !In->hasOneUse() || In->getFalseValue() != T)
        continue;
    }
    Value *C2 = In->getCondition();
    if (C2->getType() != C1->getType())
      continue; // (a scalar condition of a vector select)
    IRBuilder<> B(S);
    Value *Cond, *Taken, *Kept;
    if (innerInTrue) { // select C1, (select C2, A, B), A -> select (C1 && !C2), B, A
      Cond = B.CreateLogicalAnd(C1, B.CreateNot(C2));
      Taken = In->getFalseValue();
      Kept = E;
    } else { // select C1, A, (select C2, B, A) -> select (!C1 && C2), B, A
      Cond = B.CreateLogicalAnd(B.CreateNot(C1), C2);
      Taken = In->getTrueValue();
      Kept = T;
    }
    Value *N = B.CreateSelect(Cond, Taken, Kept);
    N->takeName(S);
    S->replaceAllUsesWith(N);
    replaced.push_back(S);
  }
  if (replaced.empty())
    return PreservedAnalyses::all();
  RecursivelyDeleteTriviallyDeadInstructions(replaced);
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace ol_rs
