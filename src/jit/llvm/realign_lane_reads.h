// ol-realign-lane-reads: warp exchange reads at a lane distance loaded as the two vectors the exchange's
// stores wrote (src/jit/llvm/realign_lane_reads.cpp).
#pragma once

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/PassManager.h"

namespace ol_rs {

// The alias scope the lowering puts on a warp exchange's reads at a fixed lane distance (readLane,
// ol-lane-offset-reads): the exchange area is padded so that such a read may reach a vector's length
// further on either side (src/jit/llvm/lower/intrinsics.cpp).
inline constexpr const char *kLaneReadScope = "ol.lane.offset.read";

// ol-warp-local-exchanges' areas (allocas, src/jit/llvm/lower/warp_lanes.cpp) reach their accesses through
// an empty inline asm of this constraint string that returns its pointer operand (the warp number's asm,
// lower/warp_lanes.cpp, has the same constraints on an i32), so that SROA leaves
// them whole until ExposeWarpAreasPass, after the loop vectoriser and the unrolling, takes the asm away.
inline constexpr const char *kWarpAreaAsmConstraints = "=r,0";

// Area A (an alloca) behind such an asm, its result `noalias`: the alloca is accessed only through it, so
// alias analysis keeps knowing it for a local object of its own, apart from the scratch and the kernel's
// memory.
inline llvm::CallInst *hideWarpArea(llvm::IRBuilderBase &B, llvm::AllocaInst *A) {
  auto *IA = llvm::InlineAsm::get(llvm::FunctionType::get(A->getType(), {A->getType()}, false), "",
                                  kWarpAreaAsmConstraints, false);
  llvm::CallInst *P = B.CreateCall(IA, {A}, "cbs.warparea");
  P->addRetAttr(llvm::Attribute::NoAlias);
  return P;
}

// Whether V is such an asm's result: an exchange area, an alloca (the lowering's analyses of scratch and
// stack memory take it for one).
inline bool isWarpArea(const llvm::Value *V) {
  auto *CI = llvm::dyn_cast<llvm::CallInst>(V);
  auto *IA = CI ? llvm::dyn_cast<llvm::InlineAsm>(CI->getCalledOperand()) : nullptr;
  return IA && IA->getAsmString().empty() && IA->getConstraintString() == kWarpAreaAsmConstraints &&
         CI->getType()->isPointerTy() && CI->arg_size() == 1 && CI->getArgOperand(0)->getType() == CI->getType();
}

// ol-realign-lane-reads: see realign_lane_reads.cpp.
struct RealignLaneReadsPass : llvm::PassInfoMixin<RealignLaneReadsPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

// Takes ol-warp-local-exchanges' empty asm away (kWarpAreaAsmConstraints): see realign_lane_reads.cpp.
struct ExposeWarpAreasPass : llvm::PassInfoMixin<ExposeWarpAreasPass> {
  llvm::PreservedAnalyses run(llvm::Function &F, llvm::FunctionAnalysisManager &AM);
};

} // namespace ol_rs
