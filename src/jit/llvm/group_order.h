// ol-group-order: a 2-D tile kernel whose next group along x is rows away, and along y the next piece of
// the same rows, runs its groups y fastest (src/jit/llvm/group_order.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// The work-group function attribute ol-group-order sets ("y-first"), which ol-prefetch-next-group reads.
inline constexpr const char *kGroupOrderAttr = "ol-group-order";
// The suffix of the name of the global (an i8) that tells the CPU plugin, in the compiled object, that
// the work-group function of that name runs its groups y fastest.
inline constexpr const char *kYFirstSuffix = ".ol.groups_y_first";

// ol-group-order: see group_order.cpp.
struct GroupOrderPass : llvm::PassInfoMixin<GroupOrderPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
