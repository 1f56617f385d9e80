// ol-prefetch-next-group: software prefetches, in a work-group function, for what the next work-group
// will read and write (src/jit/llvm/prefetch_next_group.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-prefetch-next-group: see prefetch_next_group.cpp.
struct PrefetchNextGroupPass : llvm::PassInfoMixin<PrefetchNextGroupPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
