// ol-stop-points: the places where JIT'd code checks whether it must stop (src/jit/llvm/stop_points.cpp).
#pragma once

#include "llvm/IR/PassManager.h"

namespace ol_rs {

// The function JIT'd code calls at a due stop point (src/jit/stop.c; must match `RT_POLL` in
// src/jit/stop.rs).
inline constexpr const char *kPollName = "__ol_rs_rt_poll";

// ol-stop-points: see stop_points.cpp.
struct StopPointsPass : llvm::PassInfoMixin<StopPointsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
