// ol-group-order: in the work-group function of a 2-D tile kernel whose next group along x reads and
// writes rows away from this group's, and whose next group along y none (`c[r * cols + k]` with
// `r = block_x * 16 + ty`, `k = block_y * 16 + tx`: a grid whose x goes down the rows, as CUDA code often
// maps blockIdx.x), the CPU device runs the groups y fastest: each thread's next group then continues the
// same rows, which the hardware's prefetchers follow, instead of starting 16 rows further down.
//
// Why: the CPU device runs a thread's work-groups one after another (src/plugin/cpu/launch.rs). Such a
// group reads and writes 64 bytes of each of 16 rows; x fastest, every one of those lines is a demand
// miss, the next group's rows far away (ol-prefetch-next-group's prefetches only hide part of it). The same
// sum on a grid whose x goes along the rows took 2.1 ms where this one took 11-12 (bench/tiles, 3 x 32 MiB).
//
// Which kernels: a work-group function (`__ol_wg.*`) with an access of the work-items' code whose address
// NextGroup (next_group.h) calls a 2-D tile's row for the group's x id and none for its y id. Not a
// transpose (its reads are far along y, its writes along x: either order leaves one side far), nor a
// stencil or a tile whose rows follow y (far along y only: x fastest is already the next piece of the
// same rows). The mark: the function attribute kGroupOrderAttr = "y-first" (ol-prefetch-next-group then
// inserts nothing: the next group it would prefetch for is not the next one run) and, for the CPU plugin,
// an i8 global named after the function with kYFirstSuffix in the compiled object (src/jit/mod.rs reads it
// into KernelCode::groups_y_first; the object in the JIT's disk cache keeps it). A launch runs the order of
// the code it starts with: a first launch's quick version (which does not run this pass) runs x fastest to
// the end, and later launches, with the full version, y fastest.
//
// Legal: work-groups are independent; a GPU runs them in any order, at once.
#include "group_order.h"
#include "next_group.h"

#include "llvm/IR/Module.h"

using namespace llvm;

namespace ol_rs {

PreservedAnalyses GroupOrderPass::run(Function &F, FunctionAnalysisManager &) {
  // (a kernel that does not read its y id: y fastest would change nothing worth having)
  SmallVector<LoadInst *, 2> xs = groupIdLoads(F, 0), ys = groupIdLoads(F, 1);
  if (xs.empty() || ys.empty() || F.hasFnAttribute(kGroupOrderAttr))
    return PreservedAnalyses::all();
  SmallVector<Access, 16> accesses = workItemAccesses(F, 64);
  NextGroup nextX(F.getArg(0), xs), nextY(F.getArg(0), ys);
  bool farX = any_of(accesses, [&](const Access &a) { return nextX.far(a.ptr); });
  bool farY = any_of(accesses, [&](const Access &a) { return nextY.far(a.ptr); });
  if (!farX || farY)
    return PreservedAnalyses::all();
  F.addFnAttr(kGroupOrderAttr, "y-first");
  Module &M = *F.getParent();
  auto *I8 = Type::getInt8Ty(M.getContext());
  std::string name = (F.getName() + kYFirstSuffix).str();
  if (!M.getNamedGlobal(name))
    new GlobalVariable(M, I8, true, GlobalValue::ExternalLinkage, ConstantInt::get(I8, 1), name);
  return PreservedAnalyses::all(); // (no instruction changed)
}

} // namespace ol_rs
