// ol-opaque-wrapping-masks: a workaround for an LLVM 22.1 loop-vectoriser miscompile.
//
// The bug (LLVM 22.1.8, LoopVectorize with ScalarEvolution's wrap predicates; reproducer in
// src/jit/llvm/workaround_tests.rs, `wrapping_masked_index_is_not_consecutive`): an index that is an
// induction variable masked to its low bits, `(i + c) & (2^k - 1)`, and then offset by a loop-invariant
// value, `| base` or `+ base` (a ring buffer, a warp's lane rotated within its warp: `(lane - 1) & 63`
// plus the warp's first slot), wraps inside the loop. ScalarEvolution cannot fold the mask into an add
// recurrence, so the vectoriser asks for one under a no-wrap predicate, but the run-time check it emits
// tests the wider sum (`base + c + trip count` in 32 bits) instead of the masked k bits: the check passes,
// the wrapping index is treated as consecutive and a wide load reads `base + c .. base + c + VF - 1`
// instead of wrapping to `base`. clang-22 -O2 gets the same C wrong (3 of 64 elements with SSE, 15 with
// AVX2, constant or run-time trip count, 6 to 16 mask bits): users' kernels are affected as much as ours.
//
// The workaround removes the class, not the case: just before the vectoriser (at VectorizerStart, after
// the last InstCombine that would drop it), every scalar `and x, 2^k - 1` in a loop whose x is an add
// recurrence of that loop and whose result ScalarEvolution cannot express as one (the mask may wrap) gets
// a `freeze` that its users read instead. ScalarEvolution sees a freeze as an opaque value, so there is no
// recurrence to predicate: the vectoriser gathers, or keeps the loop scalar. Sound: a freeze returns its operand
// wherever that is not poison (and any value refines poison); the InstCombine after the vectoriser
// removes it. Masks ScalarEvolution folds (the index provably stays
// within the mask, e.g. `lane & 63` over 64 lanes) are left alone and still vectorise as consecutive.
//
// Delete when the LLVM the JIT links no longer has the bug (the regression test runs the pattern without
// the workaround and reports whether LLVM still gets it wrong).
#include "workarounds.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/PatternMatch.h"

#include <vector>

using namespace llvm;
using namespace llvm::PatternMatch;

namespace ol_rs {

namespace {

// `I` is `and x, 2^k - 1` (k less than the width) in loop `L`, x an add recurrence of `L` (or of
// something built from one) that ScalarEvolution cannot keep as a recurrence through the mask.
bool wrappingMask(Instruction &I, Loop *L, ScalarEvolution &SE) {
  Value *X;
  const APInt *M;
  if (!I.getType()->isIntegerTy() || !match(&I, m_And(m_Value(X), m_APInt(M))) || !M->isMask() || M->isAllOnes())
    return false;
  if (!SE.isSCEVable(I.getType()))
    return false;
  const SCEV *SX = SE.getSCEV(X);
  bool varies = SCEVExprContains(SX, [&](const SCEV *S) {
    auto *AR = dyn_cast<SCEVAddRecExpr>(S);
    return AR && AR->getLoop() == L;
  });
  if (!varies)
    return false;
  auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&I));
  return !(AR && AR->getLoop() == L);
}

} // namespace

PreservedAnalyses OpaqueWrappingMasksPass::run(Function &F, FunctionAnalysisManager &AM) {
  LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return PreservedAnalyses::all();
  ScalarEvolution &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
  std::vector<Instruction *> work;
  for (BasicBlock &BB : F)
    if (Loop *L = LI.getLoopFor(&BB))
      for (Instruction &I : BB)
        if (wrappingMask(I, L, SE))
          work.push_back(&I);
  if (work.empty())
    return PreservedAnalyses::all();
  for (Instruction *I : work) {
    IRBuilder<> B(I->getNextNode());
    Value *Fr = B.CreateFreeze(I, I->getName() + ".ol.opaque");
    I->replaceUsesWithIf(Fr, [&](Use &U) { return U.getUser() != Fr; });
  }
  // new instructions only, no block changed
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace ol_rs
