// ol-unroll-barrier-loops: in a launch-time specialisation, a loop with a barrier whose trip count the
// group size decides (a tree reduction's `for (k = n / 2; k > 0; k >>= 1)`, a Hillis-Steele scan's
// `for (off = 1; off < n; off <<= 1)`, with n = __gpu_num_threads_x()) is fully unrolled before the
// barrier regions are formed.
//
// The GPU compiler cannot unroll such a loop: the group size is a run-time value in the bitcode. Left as
// a loop, each of its regions runs with a variable bound (a vector loop plus its scalar remainders,
// guards that narrow only at run time) and the scheduler dispatches each region once per trip, with the
// loop counter and its bound kept in group slots between them. Unrolled, every copy's counter is a
// constant: the regions' work-item loops get constant bounds (ol-narrow-guards: `t < 64` is 0..63), the
// vectoriser needs no remainder, and the group slots go. In a specialisation the group size is known: the
// loop-control values (the exiting branches' conditions, through the header's PHIs, back to constants and
// the group size) get the constant in place of the group size, and where scalar evolution then finds a
// constant trip count of at most kUnrollBarrierMaxTrips whose copies stay within
// kUnrollBarrierMaxInstructions, LLVM's UnrollLoop unrolls it completely; otherwise the substitution is
// undone. Innermost barrier loops first; a loop whose inner loops were unrolled is then considered in turn.
//
// Why it is legal: the group size is the specialisation's constant (the work-group function passes exactly
// it), and a complete unroll runs the same instructions, barriers included, in the same order for every
// work-item: each work-item's i-th trip is the i-th copy. A trip count that only constants and the group
// size decide is the same for every work-item, so every work-item reaches the same copies' barriers.
//
// Measured (Intel Xeon, AVX-512, 2 threads, best of 20, alternated): reduce 2.2-2.4 -> 1.6-2.3 ms on
// nvptx64 (one thread, `taskset -c 0`: 5.4-7.7 -> 3.3-3.5), scan 3.0 -> 2.5, softmax (two trees) 3.0-3.15 ->
// 2.9; amdgcn reduce 2.9-4.0 -> 1.8, scan 3.2-3.5 -> 2.6-2.8. The full compile costs more (scan 48 -> 66-87
// ms, reduce 18 -> 33, softmax 97-110 -> 152-159: regions of constant bounds, which LLVM unrolls), so a
// quick specialisation, which serves the first launch, leaves it out (src/jit/llvm/lowering.rs, `quick_skips`).
#include "../lowering.h"

#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/UnrollLoop.h"

namespace ol_rs::lower {

namespace {

bool hasCallTo(const Loop *L, const Function *Fn) {
  for (BasicBlock *BB : L->blocks())
    for (Instruction &I : *BB)
      if (auto *CI = dyn_cast<CallInst>(&I); CI && CI->getCalledFunction() == Fn)
        return true;
  return false;
}

} // namespace

Unrolled unrollCompletely(Loop *L, unsigned trips, LoopAnalyses &A) {
  Function *F = L->getHeader()->getParent();
  simplifyLoop(L, &A.DT, &A.LI, &A.SE, &A.AC, nullptr, /*PreserveLCSSA=*/false); // (true: it changed the CFG)
  if (!L->isLoopSimplifyForm())
    return Unrolled::NotSimplifiable;
  formLCSSARecursively(*L, A.DT, &A.LI, &A.SE);
  TargetTransformInfo TTI(F->getDataLayout());
  OptimizationRemarkEmitter ORE(F);
  UnrollLoopOptions ULO{};
  ULO.Count = trips;
  ULO.Force = true;
  ULO.Runtime = false;
  ULO.AllowExpensiveTripCount = false;
  ULO.UnrollRemainder = false;
  ULO.ForgetAllSCEV = true;
  ULO.SCEVExpansionBudget = 0;
  return UnrollLoop(L, ULO, &A.LI, &A.SE, &A.DT, &A.AC, &TTI, &ORE, /*PreserveLCSSA=*/true) ==
                 LoopUnrollResult::FullyUnrolled
             ? Unrolled::Complete
             : Unrolled::NotComplete;
}

unsigned Lowering::unrollBarrierLoops(Function *F) {
  Function *BM = M.getFunction("__ol_rs.barrier");
  if (specKernel.empty() || !BM)
    return 0;
  unsigned unrolled = 0;
  std::set<BasicBlock *> refused; // headers of loops looked at and left
  for (unsigned round = 0; round < 16; ++round) {
    LoopAnalyses A(*F, M.getTargetTriple());
    // an innermost loop with a barrier not yet refused: no inner loop of it still has a barrier
    Loop *L = nullptr;
    for (Loop *Cand : A.LI.getLoopsInPreorder()) {
      if (refused.count(Cand->getHeader()) || !hasCallTo(Cand, BM))
        continue;
      bool innerBarrier = false;
      for (Loop *Sub : Cand->getSubLoops())
        innerBarrier |= hasCallTo(Sub, BM);
      if (!innerBarrier) {
        L = Cand;
        break;
      }
    }
    if (!L)
      break;
    refused.insert(L->getHeader());
    BasicBlock *Latch = L->getLoopLatch();
    auto *LatchBr = Latch ? dyn_cast<BranchInst>(Latch->getTerminator()) : nullptr;
    if (!LatchBr || !LatchBr->isConditional() || L->getExitingBlock() != Latch || !L->isSafeToClone())
      continue;
    // the latch condition's operands, through the header's PHIs and arithmetic, back to constants and the
    // group size: each use of the group size there, and of a value that then folds to a constant (the
    // header PHI's start `n / 2`), gets the constant (undone if the loop stays)
    std::vector<std::pair<Use *, Value *>> substituted;
    std::map<Value *, Constant *> folded;
    std::function<Constant *(Value *, int)> fold = [&](Value *V, int depth) -> Constant * {
      if (auto *Cn = dyn_cast<Constant>(V))
        return Cn;
      if (int d = groupSizeDim(F, V); d >= 0 && V->getType()->isIntegerTy() && specGs[d] < (1u << 15))
        return ConstantInt::get(V->getType(), specGs[d]);
      auto *I = dyn_cast<Instruction>(V);
      if (!I || depth > 16 || !isa<BinaryOperator, CastInst, CmpInst, SelectInst, PHINode>(I))
        return nullptr;
      if (auto *P = dyn_cast<PHINode>(I); P && P->getParent() != L->getHeader())
        return nullptr;
      if (auto it = folded.find(I); it != folded.end())
        return it->second;
      folded[I] = nullptr; // (a cycle through the header's PHIs)
      bool all = !isa<PHINode>(I);
      for (Use &U : I->operands()) {
        Constant *Cn = fold(U.get(), depth + 1);
        if (Cn && !isa<Constant>(U.get())) {
          substituted.push_back({&U, U.get()});
          U.set(Cn);
        }
        all &= Cn != nullptr;
      }
      return folded[I] = all ? ConstantFoldInstruction(I, DL) : nullptr;
    };
    fold(LatchBr->getCondition(), 0);
    auto undo = [&] {
      for (auto &[U, old] : substituted)
        U->set(old);
    };
    A.SE.forgetLoop(L);
    unsigned trips = A.SE.getSmallConstantTripCount(L);
    uint64_t size = 0;
    for (BasicBlock *BB : L->blocks())
      size += BB->size();
    if (trips < 2 || trips > kUnrollBarrierMaxTrips || size * trips > kUnrollBarrierMaxInstructions) {
      undo();
      continue;
    }
    Unrolled u = unrollCompletely(L, trips, A);
    if (u == Unrolled::NotSimplifiable) {
      undo();
      continue;
    }
    if (u != Unrolled::Complete) {
      // (UnrollLoop only refuses before changing anything, else it unrolls partially: either way the
      // substituted constants are the group size, which the work-group function passes)
      continue;
    }
    ++unrolled;
  }
  return unrolled;
}

} // namespace ol_rs::lower
