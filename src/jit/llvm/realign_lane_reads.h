// ol-realign-lane-reads: warp exchange reads at a lane distance loaded as the two vectors the exchange's
// stores wrote (src/jit/llvm/realign_lane_reads.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// The alias scope the lowering puts on a warp exchange's reads at a fixed lane distance (readLane,
// ol-lane-offset-reads): the exchange area is padded so that such a read may reach a vector's length
// further on either side (src/jit/llvm/lower/intrinsics.cpp).
inline constexpr const char *kLaneReadScope = "ol.lane.offset.read";

// ol-realign-lane-reads: see realign_lane_reads.cpp.
struct RealignLaneReadsPass : llvm::PassInfoMixin<RealignLaneReadsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
