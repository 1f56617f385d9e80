// ol-prefetch-next-group: in the work-group function of a kernel whose groups are 2-D tiles of rows far
// apart from one group to the next, each vector access of global memory in the work-items' code gets a
// software prefetch of the address the same access has in the next group along x (group id x + 1): a
// write prefetch before a store, a read prefetch before a load.
//
// Why: the CPU device runs a thread's work-groups one after another, x fastest (src/plugin/cpu/launch.rs;
// y fastest where ol-group-order marked the function, which this pass then leaves alone), and a 2-D tile
// kernel's group reads and writes a short piece of each of many rows (the suite's transpose: 64 bytes of
// 16 rows of `in`, 64 bytes of 16 rows of `out`). Where the next group's rows are
// far from this group's (`out`'s, 16 rows further down; `c[r * cols + k]` on a grid whose x goes down the
// rows), the hardware's prefetchers, which follow streams within a page, do not see where the next group
// goes; each line is a demand miss, each store's line is fetched for ownership before the store
// completes, and with those misses in the way they do not keep up with the near rows either. A prefetch
// of everything the next group touches overlaps its misses with this group's work. A C copy of the hand
// loop (two threads, 4096x2048 floats): 7.1 -> 4.7 ms with write prefetches of the next group's `out`
// rows, 3.9-4.7 with read prefetches of its `in` rows too (a memcpy of the same 32 MB: 1.3 ms;
// non-temporal stores instead: 2.9). BENCHMARKS.md has the kernels it fires on and what it changes.
//
// Which kernels: a work-group function (`__ol_wg.*`, src/jit/llvm/lower/kernel_body.cpp) with an address
// that NextGroup::far calls a 2-D tile's row: a row computed from the group's x id and a loop's induction
// variable (the work-item's row in the tile) times a kernel argument (the pitch). Not a stencil or a tile
// whose next group is the next piece of the same rows (the id times a constant or the group size), which
// the hardware follows: prefetching those cost a stencil 8-10% on the suite's; nor a group per row (the id
// alone times the pitch), whose next group starts where this one ends.
// Which accesses, in such a kernel: the vector loads and stores, and masked vector loads and stores, of
// the work-items' code (an access group of the lowering's on them, lower/work_item_loops.cpp, which stays
// on the vectoriser's and the unroller's copies) whose address depends on the group's x id, not of group
// memory, amdgcn's private memory or an alloca; at most kMaxPrefetches. Scalar ones are left alone: a
// vectorised loop's remainder (prefetches there cost the suite's transpose 9 -> 13 ms, and an element-wise
// tile kernel 15 -> 27, with the vector code itself unchanged), or a kernel that did not vectorise.
// The next group's address is computed by copying the instructions between the group's x id and the
// address with the id plus one (arithmetic, casts, address computations, selects, compares and freezes;
// what the id reaches through a phi or a load is taken as it is: see NextGroup), without their
// poison-generating flags (`inbounds`, `nsw`, ...): the next group's address may be outside every buffer,
// or the group may not exist, and a prefetch never faults and changes no value.
#include "prefetch_next_group.h"
#include "group_order.h"
#include "next_group.h"
#include "prefetch.h"

#include "llvm/IR/Module.h"

using namespace llvm;

namespace ol_rs {

namespace {
constexpr unsigned kMaxPrefetches = 16;
} // namespace

PreservedAnalyses PrefetchNextGroupPass::run(Function &F, FunctionAnalysisManager &) {
  SmallVector<LoadInst *, 2> ids = groupIdLoads(F);
  if (ids.empty())
    return PreservedAnalyses::all();
  if (F.getFnAttribute(kGroupOrderAttr).getValueAsString() == "y-first")
    return PreservedAnalyses::all(); // (ol-group-order: its next group continues the same rows)
  SmallVector<Access, 16> accesses = workItemAccesses(F, kMaxPrefetches);
  if (accesses.empty())
    return PreservedAnalyses::all();
  NextGroup next(F.getArg(0), ids);
  if (none_of(accesses, [&](const Access &a) { return next.far(a.ptr); }))
    return PreservedAnalyses::all(); // the hardware's prefetchers follow the groups' rows
  bool changed = false;
  for (const Access &a : accesses) {
    if (!next.depends(a.ptr))
      continue; // the same in every group
    insertPrefetch(a.I, next.build(a.ptr), a.write);
    changed = true;
  }
  if (!changed)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace ol_rs
