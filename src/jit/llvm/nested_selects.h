// ol-nested-selects: a select of a select that keeps the same value in both is one select
// (src/jit/llvm/nested_selects.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-nested-selects: see nested_selects.cpp.
struct NestedSelectsPass : llvm::PassInfoMixin<NestedSelectsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
