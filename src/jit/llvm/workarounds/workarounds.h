// The JIT's workarounds for LLVM bugs, one new-PM pass each (registered by name in src/jit/llvm/passes.cpp,
// hooked in at VectorizerStart of every CPU compile's `default<On>`).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-hoist-invariant-divisions: see hoist_invariant_divisions.cpp.
struct HoistInvariantDivisionsPass : llvm::PassInfoMixin<HoistInvariantDivisionsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

// ol-opaque-wrapping-masks: see opaque_wrapping_masks.cpp.
struct OpaqueWrappingMasksPass : llvm::PassInfoMixin<OpaqueWrappingMasksPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
