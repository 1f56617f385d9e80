// ol-prefetch-streams: software prefetches for the memory streams of a kernel's short inner loops
// (src/jit/llvm/prefetch_streams.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// How far ahead of a stream's current address the prefetch reads, in bytes.
inline constexpr int64_t kPrefetchBytesAhead = 1024;

// ol-prefetch-streams: see prefetch_streams.cpp.
struct PrefetchStreamsPass : llvm::PassInfoMixin<PrefetchStreamsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
