// ol-stream-stores: a 2-D tile kernel's stores to rows far from the next work-group's written around the
// caches (non-temporal) in large launches (src/jit/llvm/stream_stores.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// ol-stream-stores: see stream_stores.cpp.
struct StreamStoresPass : llvm::PassInfoMixin<StreamStoresPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
