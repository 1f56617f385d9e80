// ol-lockstep-loops: a barrier-free kernel whose work-items run a loop a different number of times (an
// escape-time loop, an iterative solver, a data-dependent `while`) runs that loop in lockstep over a
// chunk of consecutive work-items, the way a SIMD machine (and a hand-written vector loop) does.
//
// Without it the work-item loop holds the whole per-item loop: LLVM cannot vectorise an outer loop, so
// the kernel runs one work-item at a time, scalar. With it, each edge into the loop's header and each
// edge out of the loop gets an implicit barrier and the kernel takes the barrier path (buildCbs) in chunk
// mode: the work-group function runs chunks of kLockstepChunk consecutive x ids of one row one after
// another (the chunk's bounds: cbsScheduler), and within a chunk the general scheduler runs the region
// before the loop for every work-item, then the loop's iteration region for the work-items still in it
// (one iteration each, the per-item state in scratch, the region loop over the chunk vectorised with the
// resume check as its mask; cbsChunkRepeat runs it again at once while any is left), then what follows
// the loop. The chunk keeps the lockstep short: a chunk waits for its slowest work-item, not the group's.
// An exit block that only computes on its way to another exit block (the GPU compiler unrolled the loop
// by 2 and its first copy leaves through a block computing `k + 1`) shares that block's barrier: one way
// out of the loop is one resume id, and the iteration region blends one resume state instead of two
// (mandel 10.2 -> 9.7-9.9 ms on nvptx64, 10.1 -> 9.0 on amdgcn, Intel AVX-512).
//
// Why it is legal: the implicit barriers are the CPU device's own. Between the kernel's barriers (it has
// none) GPU code may not rely on any order of its work-items, and chunks are independent for the same
// reason. The general scheduler is correct for any barrier placement (divergent ones included).
//
// Where it does not apply: kernels with barriers or warp collectives (their own schedule decides),
// dynamic allocas or more than kLockstepMaxPrivate bytes of private arrays (the barrier path keeps
// allocas per work-item in scratch, for the whole group, instead of one copy on the stack), loops whose
// exits are the same for every work-item (the work-item loop is already the vectorised one around them),
// loops of at most kInterchangeMaxUnrolled iterations (the unroller flattens those), and loops that read
// or write memory (a CSR row's loop streams through its row: per work-item it reads consecutive
// elements, across work-items it would gather, and a chunk would wait for its longest row; measured on
// spmv, 4-8x slower).
#include "../lowering.h"

namespace ol_rs::lower {

unsigned Lowering::lockstepLoops(Function *F) {
  uint64_t privateBytes = 0;
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      if (auto *AI = dyn_cast<AllocaInst>(&I)) {
        if (!AI->isStaticAlloca() || !AI->getAllocatedType()->isSized())
          return 0;
        privateBytes += AI->getAllocationSize(DL).value_or(TypeSize::getFixed(0)).getFixedValue();
      }
  if (privateBytes > kLockstepMaxPrivate)
    return 0;
  std::set<Value *> div = divergentValues(F);
  std::set<Instruction *> divTerm = divergentTerms(F, div);
  std::vector<BasicBlock *> headers;
  std::vector<std::pair<BasicBlock *, std::vector<BasicBlock *>>> exits; // exit block, its preds in the loop
  {
    LoopAnalyses A(*F, M.getTargetTriple());
    LoopInfo &LI = A.LI;
    ScalarEvolution &SE = A.SE;
    // outermost first: a loop with a divergent exit is chosen (its inner loops run inside its
    // iteration region); a loop without one is looked into
    std::function<void(Loop *)> visit = [&](Loop *L) {
      SmallVector<BasicBlock *, 4> exiting;
      L->getExitingBlocks(exiting);
      bool divergentExit = false;
      for (BasicBlock *EB : exiting)
        divergentExit |= divTerm.count(EB->getTerminator()) > 0;
      unsigned maxTrips = SE.getSmallConstantMaxTripCount(L);
      // (a loop that reads or writes memory stays per work-item: its accesses, consecutive along one
      // work-item's iterations (a CSR row), would be gathers across the chunk's, and a chunk would wait
      // for its longest row)
      bool touchesMemory = any_of(L->blocks(), [](BasicBlock *BB) {
        return any_of(*BB, [](Instruction &I) { return I.mayReadOrWriteMemory(); });
      });
      if (divergentExit && !touchesMemory && (maxTrips == 0 || maxTrips > kInterchangeMaxUnrolled)) {
        headers.push_back(L->getHeader());
        SmallVector<BasicBlock *, 4> exitBlocks;
        L->getUniqueExitBlocks(exitBlocks);
        // an exit block that only computes on its way to another exit block (the GPU compiler's unrolled
        // copy of the loop leaving in its middle: `k + 1` to the common exit's PHI) joins that one's
        // barrier: one way out, so one resume id for the work-items that left instead of two, and a
        // blend less per iteration
        auto joins = [&](BasicBlock *X) -> BasicBlock * {
          auto *Br = dyn_cast<BranchInst>(X->getTerminator());
          if (!Br || !Br->isUnconditional() || !is_contained(exitBlocks, Br->getSuccessor(0)) ||
              Br->getSuccessor(0) == X || !X->getSinglePredecessor())
            return nullptr;
          for (Instruction &I : *X)
            if (I.mayHaveSideEffects() || isa<PHINode>(I))
              return nullptr;
          return Br->getSuccessor(0);
        };
        for (BasicBlock *X : exitBlocks) {
          if (joins(X))
            continue;
          std::vector<BasicBlock *> in;
          for (BasicBlock *P : predecessors(X))
            if ((L->contains(P) || (joins(P) == X)) && std::find(in.begin(), in.end(), P) == in.end())
              in.push_back(P);
          exits.push_back({X, in});
        }
        return;
      }
      for (Loop *S : *L)
        visit(S);
    };
    for (Loop *L : LI)
      visit(L);
  }
  // a barrier on the way out of each loop: what follows runs in a region of its own, once every work-item
  // of the chunk has left the loop (then without the per-item check: plain vector stores). (Before the
  // headers' barriers: a loop's exit block may be the next loop's header, whose predecessors those change.)
  for (auto &[X, in] : exits) {
    BasicBlock *N = SplitBlockPredecessors(X, in, ".lsx", static_cast<DominatorTree *>(nullptr));
    IRBuilder<> B(N, N->getFirstInsertionPt());
    B.CreateCall(barrierMarker());
  }
  for (BasicBlock *H : headers) {
    // and one barrier block for every edge into the header (entry and back edges), so that the work-items
    // entering the loop and those iterating run in one region
    std::vector<BasicBlock *> preds;
    for (BasicBlock *P : predecessors(H))
      if (std::find(preds.begin(), preds.end(), P) == preds.end())
        preds.push_back(P);
    BasicBlock *N = SplitBlockPredecessors(H, preds, ".ls", static_cast<DominatorTree *>(nullptr));
    IRBuilder<> B(N, N->getFirstInsertionPt());
    B.CreateCall(barrierMarker());
  }
  fired(T_LOCKSTEP_LOOPS, headers.size());
  return headers.size();
}

} // namespace ol_rs::lower
