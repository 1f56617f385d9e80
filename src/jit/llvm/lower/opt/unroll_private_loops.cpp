// ol-unroll-private-loops: a loop that indexes a small private array (a work-item's own `float v[9]`, an
// alloca) with a value that changes from one trip to the next, and whose trip count is a small constant,
// is fully unrolled before the lowering, innermost loops first; a loop whose trip count is not constant
// (the inner loop of a triangular nest, `for (b = 0; b < 8 - a; b++)`) is left, and its parent, once
// unrolled, gives each copy of it a constant trip count in turn.
//
// Why: every index into the array then is a constant, SROA puts the array in registers, and the work-item
// loop around the body has no loop inside it: it vectorises. Left as a loop, the array stays in memory
// (one copy per work-item on the stack, loads and stores at a variable offset) and the work-item loop,
// with a loop inside, runs one work-item at a time. The GPU compilers do this themselves where they
// can (nvcc unrolls constant trip counts; amdgcn's pipeline raises its unroll threshold for loops over
// private arrays, which live in registers on a GPU only when every index is a constant), so the same
// kernel differs by target: a 3x3 median filter (a bubble sort of 9 values) ran 11x slower from nvptx64
// bitcode, whose clang left the sort's loops in place, than from amdgcn's, which unrolled them.
//
// Which loops: loops of the kernel's body (after inlining, before the work-item loops exist) with a load
// or store whose address is a non-constant offset into a static alloca of at most kPrivateUnrollMaxBytes
// (the loop's own trips, or an inner loop's), a constant trip count of 2 to kPrivateUnrollMaxTrips,
// whose copies stay within kPrivateUnrollMaxInstructions, and the function's unrolled instructions within
// kPrivateUnrollMaxTotal.
//
// Why it is legal: a complete unroll runs the same instructions in the same order for every trip.
#include "../lowering.h"

#include "llvm/Analysis/ValueTracking.h"

namespace ol_rs::lower {

namespace {

constexpr uint64_t kPrivateUnrollMaxBytes = 1024, kPrivateUnrollMaxTrips = 64;
constexpr uint64_t kPrivateUnrollMaxInstructions = 4096, kPrivateUnrollMaxTotal = 16384;

// Whether P addresses one of `arrays` at an offset that is not a constant.
bool variableOffset(Value *P, const std::set<AllocaInst *> &arrays, const DataLayout &DL) {
  auto *A = dyn_cast<AllocaInst>(getUnderlyingObject(P));
  if (!A || !arrays.count(A))
    return false;
  APInt off(DL.getIndexTypeSizeInBits(P->getType()), 0);
  return P->stripAndAccumulateConstantOffsets(DL, off, true) != A;
}

} // namespace

unsigned Lowering::unrollPrivateLoops(Function *F) {
  std::set<AllocaInst *> arrays;
  for (Instruction &I : F->getEntryBlock())
    if (auto *A = dyn_cast<AllocaInst>(&I); A && A->isStaticAlloca())
      if (auto sz = A->getAllocationSize(DL); sz && !sz->isScalable() && sz->getFixedValue() <= kPrivateUnrollMaxBytes)
        arrays.insert(A);
  if (arrays.empty())
    return 0;
  unsigned unrolled = 0;
  uint64_t total = 0;
  std::set<BasicBlock *> refused; // headers of loops looked at and left
  for (unsigned round = 0; round < 128; ++round) {
    LoopAnalyses A(*F, M.getTargetTriple());
    // the deepest loop with such an access, not yet refused
    Loop *L = nullptr;
    for (Loop *Cand : A.LI.getLoopsInPreorder()) {
      if (refused.count(Cand->getHeader()) || (L && Cand->getLoopDepth() <= L->getLoopDepth()))
        continue;
      bool access = any_of(Cand->blocks(), [&](BasicBlock *BB) {
        return any_of(*BB, [&](Instruction &I) {
          Value *P = getLoadStorePointerOperand(&I);
          return P && variableOffset(P, arrays, DL);
        });
      });
      if (access)
        L = Cand;
    }
    if (!L)
      break;
    refused.insert(L->getHeader());
    unsigned trips = A.SE.getSmallConstantTripCount(L);
    uint64_t size = 0;
    for (BasicBlock *BB : L->blocks())
      size += BB->size();
    if (trips < 2 || trips > kPrivateUnrollMaxTrips || size * trips > kPrivateUnrollMaxInstructions ||
        total + size * trips > kPrivateUnrollMaxTotal || !L->isSafeToClone())
      continue;
    if (unrollCompletely(L, trips, A) != Unrolled::Complete)
      continue;
    total += size * trips;
    ++unrolled;
  }
  return unrolled;
}

} // namespace ol_rs::lower
