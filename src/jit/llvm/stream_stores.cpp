// ol-stream-stores: in the work-group function of a 2-D tile kernel, the vector stores to rows far from
// the next work-group's become non-temporal (`!nontemporal`: written around the caches, without reading
// each line for ownership first) in a copy of the function's body that runs where the launch stores at
// least kStreamMinBytes through them; smaller launches run the body as it was.
//
// Why: a tile kernel's group writes a short piece of each of many rows (the suite's transpose: 64 bytes
// of 16 rows of `out`, 16 rows further down for the next group). Each such line is a demand miss that a
// plain store must first read for ownership: a third stream of memory traffic beside the reads and the
// writes, and a miss in the way of everything else. A non-temporal store writes a whole line from the
// core's write-combining buffers without reading it. The suite's transpose, two threads, 4096x2048 floats
// (BENCHMARKS.md has the rest): 3.3-6.6 ms with ol-prefetch-next-group's write prefetches, 2.3-2.6 with
// non-temporal stores, where the fastest hand-written transpose we know (whole tiles in registers,
// non-temporal stores) takes 2.2-2.3 and a memcpy of the same bytes 1.3; one thread 16.5 -> 4.6 ms.
// Small launches keep plain stores: their output may still be in the caches when the next kernel or the
// host reads it, which a non-temporal store would have sent to memory.
//
// Which kernels: a work-group function (`__ol_wg.*`) of an x86 module whose vector stores of global
// memory (far_tiles.h's vectorAccesses) include one whose address NextGroup::far calls a 2-D tile's row:
// the same kernels ol-prefetch-next-group fires on (a row from the group's x id and a loop's induction
// variable, times a kernel argument). Not a function that orders memory itself (an atomic, a fence, or a
// call that may write memory): non-temporal stores are not ordered with other stores, and an atomic or a
// release fence (no instruction on x86) would not publish them.
// Ordering: a work-group's non-temporal stores must be visible to whoever sees the launch complete. The
// CPU device issues a store fence (`sfence`) on each thread after each range of work-groups it ran, before
// the pool or a cooperative launch counts them done (src/plugin/cpu/launch.rs); within the work-group function one thread runs
// every work-item, and a thread's own loads see its non-temporal stores.
// What the copy costs: the function's code twice, the ids and the context's loads shared (the entry block
// up to its first write stays where it is); a launch decides once per work-group from the context's group
// counts and sizes. Unaligned stores stay correct: the backend splits them into 4- or 8-byte non-temporal
// stores (`movnti`), which combine into whole lines in the same buffers.
#include "stream_stores.h"
#include "far_tiles.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;

namespace ol_rs {

namespace {

// The bytes a launch must store through the far stores for its work-groups to run the non-temporal copy:
// more than a core's share of the last-level cache holds on the machines we measured.
constexpr uint64_t kStreamMinBytes = 8 << 20;

constexpr unsigned kMaxAccesses = 64;

// Whether F orders memory itself: an atomic, a fence, or a call (not an intrinsic) that may write memory.
bool ordersMemory(Function &F) {
  for (Instruction &I : instructions(F)) {
    if (I.isAtomic() || isa<FenceInst>(I))
      return true;
    if (auto *CB = dyn_cast<CallBase>(&I); CB && !isa<IntrinsicInst>(CB) && CB->mayWriteToMemory())
      return true;
  }
  return false;
}

// Whether the launch F runs in stores at least kStreamMinBytes through stores of `perItem` bytes per
// work-item: the product of the context's group counts and group sizes, computed before `at`.
Value *largeLaunch(Instruction *at, uint64_t perItem) {
  IRBuilder<> B(at);
  Value *ctx = at->getFunction()->getArg(0);
  Value *items = B.getInt64(1);
  for (unsigned field : {lower::CTX_NG, lower::CTX_GS})
    for (unsigned d = 0; d < 3; ++d) {
      Value *p = B.CreateConstInBoundsGEP1_64(B.getInt8Ty(), ctx, field + 4 * d);
      items = B.CreateMul(items, B.CreateZExt(B.CreateLoad(B.getInt32Ty(), p), B.getInt64Ty()));
    }
  // (a product past 2^64 wraps: a launch that large may run the plain copy, which is as correct)
  return B.CreateICmpUGE(items, B.getInt64(divideCeil(kStreamMinBytes, perItem)), "ol.stream.large");
}

} // namespace

PreservedAnalyses StreamStoresPass::run(Function &F, FunctionAnalysisManager &) {
  if (!F.getParent()->getTargetTriple().isX86())
    return PreservedAnalyses::all(); // (the CPU device's store fence is x86's)
  SmallVector<LoadInst *, 2> ids = tiles::groupIdLoads(F);
  if (ids.empty() || ordersMemory(F))
    return PreservedAnalyses::all();
  tiles::NextGroup next(F.getArg(0), ids);
  const DataLayout &DL = F.getDataLayout();
  SmallVector<StoreInst *, 8> stores;
  uint64_t perItem = 0;
  for (const tiles::Access &a : tiles::vectorAccesses(F, kMaxAccesses))
    if (auto *St = dyn_cast<StoreInst>(a.I); St && next.far(a.ptr)) {
      stores.push_back(St);
      perItem += DL.getTypeStoreSize(St->getValueOperand()->getType()->getScalarType());
    }
  if (stores.empty())
    return PreservedAnalyses::all();

  // the entry block up to its first write (the context's loads, the ids) stays shared; static allocas
  // after that point move up to it, so that neither copy has an alloca outside the entry block
  BasicBlock *entry = &F.getEntryBlock();
  Instruction *split = entry->getTerminator();
  for (Instruction &I : *entry)
    if (I.mayWriteToMemory()) {
      split = &I;
      break;
    }
  for (Instruction &I : make_early_inc_range(make_range(split->getIterator(), entry->end())))
    if (auto *A = dyn_cast<AllocaInst>(&I); A && A->isStaticAlloca())
      A->moveBefore(split->getIterator());
  Value *large = largeLaunch(split, perItem);
  BasicBlock *plain = entry->splitBasicBlock(split, "ol.stream.plain");

  SmallVector<BasicBlock *, 32> blocks;
  for (BasicBlock &BB : F)
    if (&BB != entry)
      blocks.push_back(&BB);
  ValueToValueMapTy map;
  SmallVector<BasicBlock *, 32> copies;
  for (BasicBlock *BB : blocks) {
    BasicBlock *C = CloneBasicBlock(BB, map, ".stream", &F);
    map[BB] = C;
    copies.push_back(C);
  }
  remapInstructionsInBlocks(copies, map);
  entry->getTerminator()->eraseFromParent();
  BranchInst::Create(cast<BasicBlock>(map[plain]), plain, large, entry);

  LLVMContext &C = F.getContext();
  MDNode *nontemporal = MDNode::get(C, ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(C), 1)));
  for (StoreInst *St : stores)
    cast<StoreInst>(map[St])->setMetadata(LLVMContext::MD_nontemporal, nontemporal);
  return PreservedAnalyses::none();
}

} // namespace ol_rs
