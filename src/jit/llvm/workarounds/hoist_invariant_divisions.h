// The JIT's workarounds for LLVM bugs, one new-PM pass each (registered by name in src/jit/llvm/passes.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-hoist-invariant-divisions: see hoist_invariant_divisions.cpp.
struct HoistInvariantDivisionsPass : llvm::PassInfoMixin<HoistInvariantDivisionsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
