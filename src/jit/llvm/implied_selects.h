// ol-implied-selects: selects decided by an enclosing select's condition (src/jit/llvm/implied_selects.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-implied-selects: see implied_selects.cpp.
struct ImpliedSelectsPass : llvm::PassInfoMixin<ImpliedSelectsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
