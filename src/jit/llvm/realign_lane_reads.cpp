// ol-realign-lane-reads: a vector load of a warp's exchange area at a lane distance that is not a multiple
// of the vector length (`v[lane - 1]` over lanes 8i..8i+7 reads lanes 8i-1..8i+6) becomes the two
// vector-aligned loads around it and a shuffle (lanes 8i-8..8i-1 and 8i..8i+7, elements 7..14).
//
// Why: the region before wrote the area with one vector store per 8 lanes, a few instructions earlier. A
// load that straddles two stores still in the store buffer cannot be forwarded from them: it waits until
// both reach the cache (perf: a fifth of nvptx64 wscan's samples on the instruction after its first
// exchange read, a blend waiting for it). Each aligned load matches one store exactly and is forwarded.
// Run after the loop vectoriser (src/jit/llvm/passes.cpp, with the workarounds' flag), when the lane
// loop's reads are vectors.
//
// Which loads: those the lowering tagged with the alias scope kLaneReadScope (readLane's reads at fixed
// lane distances, ol-lane-offset-reads), as a pointer plus a constant byte offset that is a whole number of
// elements and not of vectors: the pointer is the vector's first lane's own slot, whose lane is a multiple
// of the vector length where the lane loop runs from the warp's first lane by whole vectors (ol-warp-lanes'
// lane loops); where it is not, the result is the same, with one load more.
//
// Legal: the two loads cover the original one's bytes, and the shuffle picks exactly them. Together they
// reach at most one element further below or above the warp's area than readLane's own reads could (those
// reach W - 1 slots past either end: a distance of at most W - 1 from lanes of the warp; the aligned pair
// around a distance e spans floor(e / n) * n to that plus 2n, n the vector's elements, W a multiple of n):
// W slots of at most 8 bytes, inside the padding buildCbs gives a whole-warp specialisation whose reads
// reach (exchangeReach: at least 8 bytes of slots per work-item below the area, the resume ids and 8 bytes
// per work-item above it, and at least W work-items). Freezes keep the code generator from putting the two
// loads back into one (X86's combine of consecutive loads); a freeze changes no element that is not poison,
// and the shuffle picks only the original load's elements.
#include "realign_lane_reads.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;

namespace ol_rs {

namespace {

bool isLaneRead(const LoadInst &LI) {
  MDNode *scopes = LI.getMetadata(LLVMContext::MD_alias_scope);
  if (!scopes)
    return false;
  for (const MDOperand &op : scopes->operands())
    if (auto *scope = dyn_cast<MDNode>(op.get()); scope && scope->getNumOperands() > 0)
      if (auto *name = dyn_cast<MDString>(scope->getOperand(0)); name && name->getString() == kLaneReadScope)
        return true;
  return false;
}

} // namespace

PreservedAnalyses RealignLaneReadsPass::run(Function &F, FunctionAnalysisManager &) {
  const DataLayout &DL = F.getParent()->getDataLayout();
  SmallVector<LoadInst *, 16> loads;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *LI = dyn_cast<LoadInst>(&I); LI && LI->isSimple() && isa<FixedVectorType>(LI->getType()) &&
                                             isLaneRead(*LI))
        loads.push_back(LI);
  bool changed = false;
  for (LoadInst *LI : loads) {
    auto *VT = cast<FixedVectorType>(LI->getType());
    int64_t n = VT->getNumElements(), esz = DL.getTypeStoreSize(VT->getElementType());
    if (n < 2 || n > 16 || (n & (n - 1)) || esz <= 0 || (int64_t)DL.getTypeAllocSize(VT->getElementType()) != esz)
      continue;
    APInt off(DL.getIndexTypeSizeInBits(LI->getPointerOperandType()), 0);
    Value *P = LI->getPointerOperand()->stripAndAccumulateConstantOffsets(DL, off, /*AllowNonInbounds=*/true);
    if (off.getSignificantBits() > 32 || off.getSExtValue() % esz)
      continue;
    int64_t e = off.getSExtValue() / esz;              // the distance in elements
    int64_t lo = divideFloorSigned(e, n) * n;           // the aligned vector at or below it
    int64_t sh = e - lo;                                // 0 <= sh < n
    if (sh == 0)
      continue;
    IRBuilder<> B(LI);
    auto load = [&](int64_t elems) {
      Value *p = elems ? B.CreateConstGEP1_64(B.getInt8Ty(), P, elems * esz) : P;
      LoadInst *L = B.CreateAlignedLoad(VT, p, commonAlignment(LI->getAlign(), (uint64_t)std::abs(elems - e) * esz));
      L->copyMetadata(*LI);
      return B.CreateFreeze(L);
    };
    Value *a = load(lo), *b = load(lo + n);
    SmallVector<int, 16> mask;
    for (int64_t i = 0; i < n; ++i)
      mask.push_back((int)(sh + i));
    Value *r = B.CreateShuffleVector(a, b, mask, LI->getName() + ".realigned");
    LI->replaceAllUsesWith(r);
    LI->eraseFromParent();
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

// ol-warp-local-exchanges' areas, hidden until now: SROA, run after the unrolling but before the realignment
// above, split an area at the misaligned reads of a lane distance, into pieces whose vectors no longer
// matched the stores' (wscan's code 2x slower); hidden from it, an area is whole until its reads are
// realigned (run before this, at VectorizerEnd) and SROA, run after, takes it at once. Where this pass does
// not run (a pipeline without VectorizerEnd), the asm stays: a register move, the area in memory.
PreservedAnalyses ExposeWarpAreasPass::run(Function &F, FunctionAnalysisManager &) {
  SmallVector<CallInst *, 4> calls;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (isWarpArea(&I))
        calls.push_back(cast<CallInst>(&I));
  for (CallInst *CI : calls) {
    CI->replaceAllUsesWith(CI->getArgOperand(0));
    CI->eraseFromParent();
  }
  return calls.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
}

} // namespace ol_rs
