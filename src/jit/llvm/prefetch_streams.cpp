// ol-prefetch-streams: in a kernel's own inner loops (not the work-item loops), each stream of loads that
// walks memory by at most a cache line per iteration gets a software prefetch kPrefetchBytesAhead bytes
// ahead of it.
//
// Why: such a loop is short and entered once per work-item, and the next work-item's loop usually goes on
// where this one stopped (a CSR row after the row before it: spmv's `for (k = row_ptr[r]; k < row_ptr[r +
// 1]; k++)` over col[] and val[]). Its trip count changes from one work-item to the next, so its exit is
// mispredicted about once per work-item, and the out-of-order window that would have run ahead into the
// next rows' loads starts again each time; the hardware's stream prefetchers stop at each 4 KiB page and
// retrain. On the suite's spmv (Intel AVX-512, two threads) the JIT's code goes 37-38 -> 24 ms on both
// bitcode targets (a hand-written C loop with the same prefetches, one thread: 77 -> 53); prefetching the
// gathered x[col[k]] instead, only where that load could not fault, gained nothing: the streams' page
// crossings were the cost. BENCHMARKS.md has the kernels it fires on and what it changes on each.
//
// Which loops: innermost loops of the kernel's own inside a work-item loop (re-entered for each work-item,
// so a stream may go on past their end). The lowering marks each work-item and lane loop
// `llvm.loop.parallel_accesses` with an access group on each memory access of its body
// (work_item_loops.cpp), and the loop vectoriser keeps the mark on the loops it makes of them: a loop with
// the mark is a work-item loop (long streams, which the hardware prefetchers follow), and a loop is inside
// one when an enclosing loop's mark names the access group of the loads considered. A loop without the
// mark inside none (a remainder copy of a work-item loop, which loses its metadata) is left alone. Which
// loads: simple loads in such an access group, not from group memory (address space 3, small and in the
// first-level cache; so are allocas) nor amdgcn's private memory, whose address scalar evolution sees as
// an affine recurrence of the loop with a constant step of at most 64 bytes. Loads whose addresses differ
// by a constant under 64 bytes are one stream (an unrolled loop's copies): one prefetch each, before the
// stream's first load (one that dominates the others where one does), at most 8 per loop.
//
// Legal: a prefetch is a hint that never faults and changes no value; its address is computed without
// `inbounds` (plain wrapping arithmetic), so an address past the end of a buffer is defined. Run after the
// loop unroller (hooked at VectorizerEnd, src/jit/llvm/passes.cpp), so that an unrolled body has one
// prefetch per stream, not one per copy.
#include "prefetch_streams.h"
#include "prefetch.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;

namespace ol_rs {

namespace {

constexpr int64_t kLineBytes = 64;
constexpr unsigned kMaxStreams = 8;

// The access groups a loop's metadata says are parallel (llvm.loop.parallel_accesses): the lowering marks
// each work-item and lane loop so, with an access group on each memory access of its body
// (work_item_loops.cpp), and the loop vectoriser keeps the mark on the loops it makes of them.
void parallelGroups(const Loop &L, SmallPtrSetImpl<const MDNode *> &out) {
  if (MDNode *prop = findOptionMDForLoop(&L, "llvm.loop.parallel_accesses"))
    for (unsigned j = 1; j < prop->getNumOperands(); ++j)
      if (auto *g = dyn_cast<MDNode>(prop->getOperand(j)))
        out.insert(g);
}

// Whether I belongs to one of `groups` (its access-group metadata is one group or a list of them).
bool inGroups(const Instruction &I, const SmallPtrSetImpl<const MDNode *> &groups) {
  MDNode *ag = I.getMetadata(LLVMContext::MD_access_group);
  if (!ag)
    return false;
  if (ag->getNumOperands() == 0)
    return groups.contains(ag);
  for (const MDOperand &op : ag->operands())
    if (auto *g = dyn_cast<MDNode>(op.get()); g && groups.contains(g))
      return true;
  return false;
}

struct Stream {
  const SCEVAddRecExpr *addr; // the first load's address
  int64_t step;               // bytes per iteration
  LoadInst *at;               // where the prefetch goes: a load of the stream that dominates the others
};

} // namespace

PreservedAnalyses PrefetchStreamsPass::run(Function &F, FunctionAnalysisManager &AM) {
  auto &LI = AM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return PreservedAnalyses::all();
  auto &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
  auto &DT = AM.getResult<DominatorTreeAnalysis>(F);
  bool changed = false;
  for (Loop *L : LI.getLoopsInPreorder()) {
    if (!L->isInnermost() || !L->getParentLoop())
      continue;
    SmallPtrSet<const MDNode *, 4> own, outer;
    parallelGroups(*L, own);
    if (!own.empty())
      continue; // a work-item or lane loop
    for (Loop *P = L->getParentLoop(); P; P = P->getParentLoop())
      parallelGroups(*P, outer);
    if (outer.empty())
      continue; // not inside a work-item loop: maybe one that lost its mark (a remainder loop's copy)
    SmallVector<Stream, kMaxStreams> streams;
    for (BasicBlock *BB : L->blocks())
      for (Instruction &I : *BB) {
        auto *Ld = dyn_cast<LoadInst>(&I);
        if (!Ld || !Ld->isSimple() || !inGroups(*Ld, outer))
          continue;
        if (unsigned as = Ld->getPointerAddressSpace(); as == kGroupAddressSpace || as == kPrivateAddressSpace)
          continue;
        if (isa<AllocaInst>(getUnderlyingObject(Ld->getPointerOperand())))
          continue;
        auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(Ld->getPointerOperand()));
        if (!AR || AR->getLoop() != L || !AR->isAffine())
          continue;
        auto *C = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
        if (!C || C->getAPInt().getSignificantBits() > 32)
          continue;
        int64_t step = C->getAPInt().getSExtValue();
        if (step == 0 || step > kLineBytes || step < -kLineBytes)
          continue;
        Stream *same = nullptr;
        for (Stream &s : streams)
          if (s.step == step)
            if (auto *d = dyn_cast<SCEVConstant>(SE.getMinusSCEV(AR, s.addr));
                d && d->getAPInt().getSignificantBits() <= 32 && std::abs(d->getAPInt().getSExtValue()) < kLineBytes) {
              same = &s;
              break;
            }
        if (same) {
          if (DT.dominates(Ld, same->at))
            same->at = Ld;
          continue;
        }
        if (streams.size() < kMaxStreams)
          streams.push_back({AR, step, Ld});
      }
    if (streams.empty())
      continue;
    SCEVExpander expander(SE, "ol.prefetch");
    for (Stream &s : streams) {
      int64_t ahead = (kPrefetchBytesAhead + std::abs(s.step) - 1) / std::abs(s.step) * s.step;
      Type *offTy = s.addr->getStepRecurrence(SE)->getType();
      const SCEV *next = SE.getAddExpr(s.addr, SE.getConstant(offTy, ahead, /*isSigned=*/true));
      if (!expander.isSafeToExpand(next))
        continue;
      Value *p = expander.expandCodeFor(next, s.at->getPointerOperandType(), s.at->getIterator());
      insertPrefetch(s.at, p, /*write=*/false);
      changed = true;
    }
  }
  if (!changed)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace ol_rs
