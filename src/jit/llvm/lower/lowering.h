// The shared declarations of the CPU lowering (src/jit/llvm/lower/): the intrinsic table's ABI, the
// extra parameters of a kernel body, the WgCtx offsets, the switchable transforms, and struct Lowering,
// whose member functions are defined in the file of their step (src/jit/llvm/lower/README.md: the steps
// in order, the transforms, and which file holds what).
#pragma once

#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/ConstantFolding.h"
#include "llvm/Analysis/InstructionSimplify.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Support/KnownBits.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PatternMatch.h"
#include "llvm/IR/ReplaceConstant.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LowerAtomic.h"
#include "llvm-c/Core.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../shim.h"

using namespace llvm;
using namespace llvm::PatternMatch;

// The types shared with Rust (IntrinsicOp, OlRsIntrinsic, OlRsClassifyFn, OlRsLowerOptions, OlRsKernelInfo):
// generated from src/jit/llvm/abi.rs.
#include "../abi.h"

namespace ol_rs::lower {

// Dominators, loops and scalar evolution of a function as it is now (built where a step needs them: the
// steps change the CFG in between).
struct LoopAnalyses {
  DominatorTree DT;
  LoopInfo LI;
  AssumptionCache AC;
  TargetLibraryInfoImpl TLII;
  TargetLibraryInfo TLI;
  ScalarEvolution SE;
  LoopAnalyses(Function &F, const Triple &T) : DT(F), LI(DT), AC(F), TLII(T), TLI(TLII), SE(F, TLI, AC, DT, LI) {}
};

// LLVM's complete unroll of L by its constant trip count `trips` (loop-simplify form, then LCSSA; each
// copy's exit folds by the count), for ol-unroll-barrier-loops and ol-unroll-private-loops (both in opt/):
// NotSimplifiable leaves L as it was; UnrollLoop refuses only before changing anything, else it unrolls at
// least partially (NotComplete).
enum class Unrolled { NotSimplifiable, NotComplete, Complete };
Unrolled unrollCompletely(Loop *L, unsigned trips, LoopAnalyses &A);

// The blocks reachable from `from`, depth first (the last successor first), each once: none of `seen`
// (what is already in it is never entered), and not past a block where stop(BB) holds (it is in the
// result, its successors are not visited). The regions' blocks up to their barriers, a nest's blocks up
// to the scheduler.
template <typename Stop>
std::vector<BasicBlock *> reachable(ArrayRef<BasicBlock *> from, Stop stop, std::set<BasicBlock *> seen = {}) {
  std::vector<BasicBlock *> out;
  SmallVector<BasicBlock *, 16> work(from.begin(), from.end());
  while (!work.empty()) {
    BasicBlock *BB = work.pop_back_val();
    if (!seen.insert(BB).second)
      continue;
    out.push_back(BB);
    if (!stop(BB))
      work.append(succ_begin(BB), succ_end(BB));
  }
  return out;
}

// A block-stride loop's shape (opt/block_stride_loops.cpp, used by opt/group_loops.cpp too): whether Br
// goes to Into exactly when `x < n` (unsigned; sets x and n); V without zext/trunc around it; clang's
// latch `j < n - S` for constants taken as `j + S < n` (sets nextV to j's next value and n to guardN).
bool entersWhenBelow(BranchInst *Br, BasicBlock *Into, Value *&x, Value *&n, bool *isSigned = nullptr);
Value *stripCasts(Value *V);
// X where V is `X & 0xffffffff` (64-bit: SPIR-V's 32-bit ids), else null.
Value *low32(Value *V);
// Pointer P as its base and a constant byte offset (64 bits, set): constant-index GEPs and the
// address-space casts replaceIntrinsics puts on the arguments stripped (intrinsics.cpp; groupSizeDim, and
// opt/block_stride_loops.cpp's loads of the implicit arguments).
Value *constantOffsetBase(Value *P, const DataLayout &DL, APInt &off);
// Whether L is a simple load within amdgcn's implicit arguments (256 bytes) or dispatch packet (64), the
// extra arguments o + E_IMPLARG and o + E_DISPATCH of F: the same for every work-item of a group.
bool readsImplicitArgs(Function *F, unsigned o, LoadInst *L);
// Whether I is arithmetic, a compare, a select, a cast or an address computation: what a value computed
// again elsewhere from its operands may be made of (atFirstLane, and the warp-uniformity of new values in
// opt/warp_uniform_loops.cpp).
inline bool isPureArithmetic(const Instruction *I) {
  return isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<CmpInst>(I) || isa<SelectInst>(I) || isa<GetElementPtrInst>(I);
}
bool constantLatch(BasicBlock *H, BasicBlock *LB, Value *&nextV, Value *&n, Value *guardN);

// Which memory `ptr` (in K.body or a work-group function F) reaches: SPACE_SHARED the group's shared
// memory (static or dynamic), SPACE_ARGS the kernel's arguments' (buffers, which may alias each other),
// SPACE_ANY either or unknown (local_memory.cpp).
enum : unsigned { SPACE_SHARED = 1, SPACE_ARGS = 2, SPACE_ANY = 3 };
unsigned memorySpaceOf(Value *ptr, Function *F);

// Extra trailing parameters of K.body, in this order.
enum Extra {
  E_LX, E_LY, E_LZ, E_LWI,
  E_GIDX, E_GIDY, E_GIDZ,
  E_NGX, E_NGY, E_NGZ,
  E_GSX, E_GSY, E_GSZ,
  E_LOCAL, E_DYN, E_IMPLARG, E_DISPATCH, E_SCRATCH,
  E_GSRX, E_GSRY, E_GSRZ, // the group size as loaded at run time, also in a specialisation (runtimeDivisors)
  E_COUNT
};

// WgCtx field offsets (must match `WgCtx` in src/jit/mod.rs).
constexpr unsigned CTX_ARGS = 0, CTX_LOCAL = 8, CTX_DYN = 16, CTX_SCRATCH = 24, CTX_GID = 32,
                   CTX_NG = 44, CTX_GS = 56;

constexpr int RESUME_EXIT = -1;
constexpr int WARP_LEAVE = -1; // a warp's `wnext` once it has reached a group barrier or the exit
// ol-early-exits: what cbsLiveLanes does after a region (`exits`): nothing, look for lanes that exited, or
// (ol-warp-lanes) mark the warp left, every lane having exited
enum : int { LIVE_KEEP, LIVE_SCAN, LIVE_LEFT };

// The lowering's transforms that can be switched off (OFFLOAD_RS_JIT_LOWERING) and that count what they
// did (OFFLOAD_RS_JIT_STATS): bit i of OlRsLowerOptions::transforms, entry i of OlRsKernelInfo::stats.
// Must match `Transform` in src/jit/llvm/lowering.rs (the names, and which kernels each is for), and
// src/jit/llvm/lower/README.md describes each.
enum Transform : unsigned {
  T_UNIFORM_BARRIERS,        // barriers.cpp: regions follow each other through a group-level `next`
  T_ONCE_REGIONS,            // regions.cpp: group-invariant regions run once per group
  T_IMPLICIT_LOOP_BARRIERS,  // implicit_loop_barriers.cpp
  T_REMATERIALISE,           // demotion.cpp: values recomputed after a barrier instead of kept in scratch
  T_SHARE_HEADER_SLOT,       // demotion.cpp
  T_SCOPE_SLOTS,             // opt/scope_slots.cpp
  T_HOIST_SLOT_STORES,       // opt/slot_stores.cpp
  T_NARROW_GUARDS,           // opt/guard_narrowing.cpp
  T_RUN_GUARDS,              // opt/run_guards.cpp (matchRunGuard, addRunLoop)
  T_SHORT_RUNS,              // opt/run_guards.cpp (versionShortRuns)
  T_EQUALITY_SPLIT,          // opt/equality_split.cpp
  T_SPECULATE_SHARED_STORES, // opt/shared_store_speculation.cpp
  T_FLATTEN_DECISION,        // opt/shared_store_speculation.cpp
  T_UNSWITCH_REGION_EXIT,    // opt/unswitch_regions.cpp
  T_PLAIN_SHARED_ATOMICS,    // local_memory.cpp
  T_RUNTIME_DIVISORS,        // ../workarounds/runtime_divisors.cpp (an LLVM 22.1 miscompile's workaround)
  T_BLOCK_STRIDE_LOOPS,      // opt/block_stride_loops.cpp
  T_WARP_LANES,              // warp_lanes.cpp: each warp runs its lanes between warp barriers on its own
  T_LOCKSTEP_LOOPS,          // opt/lockstep_loops.cpp: divergent loops of barrier-free kernels over chunks of work-items
  T_PROMOTE_SLOTS,           // opt/promote_slots.cpp: a general-scheduler region's slots as SSA values, stored once
  T_RELOAD_SLOTS,            // demotion.cpp: a PHI's value read again from its slot after a barrier (with ol-rematerialise)
  T_LANE_OFFSET_READS,       // intrinsics.cpp (readLane), warp_lanes.cpp: warp exchanges read at fixed lane distances
  T_REROLL_LOOPS,            // opt/reroll_loops.cpp: reduction loops the GPU compiler unrolled, rolled back
  T_RANGE_SPLIT,             // opt/equality_split.cpp: work-item loops cut at `id < b`-style choices
  T_UNSWITCH_WARP_BRANCHES,  // opt/unswitch_regions.cpp: a lane loop copied per side of a warp-uniform branch
  T_ALTERNATE_EXCHANGES,     // warp_lanes.cpp: consecutive warp exchanges in two areas, the barrier after a read dropped
  T_GROUP_LOOPS,             // opt/group_loops.cpp: a block-stride loop of the whole group run by one work-item
  T_WARP_UNIFORM_LOOPS,      // opt/warp_uniform_loops.cpp: a loop the same for a warp's lanes run once per warp
  T_UNROLL_BARRIER_LOOPS,    // opt/unroll_barrier_loops.cpp: barrier loops the group size decides, unrolled in a specialisation
  T_UNROLL_LANE_VECTORS,     // warp_lanes.cpp: the vector loop of a lane loop comparing lane ids may be unrolled after the vectoriser
  T_EARLY_EXITS,             // barriers.cpp: uniform barriers and warp lanes where work-items that leave early leave for good
  T_MATCH_LOOPS,             // opt/match_loops.cpp: gpuintrin's match_any loop (amdgcn, spirv64) as one warp collective
  T_CHAIN_WARP_REGIONS,      // warp_lanes.cpp: a warp's region that leaves through one warp barrier goes on to its region
  T_WARP_LOCAL_SLOTS,        // warp_lanes.cpp: slots no group barrier separates from their loads on the stack, per lane
  T_FULL_GROUPS,             // opt/full_groups.cpp: groups whose work-items all pass the bounds guards run a copy without them
  T_WARP_LOCAL_EXCHANGES,    // warp_lanes.cpp: the warp exchanges' areas on the stack, one warp's, indexed by lane
  T_UNROLL_PRIVATE_LOOPS,    // opt/unroll_private_loops.cpp: loops indexing a private array, fully unrolled
  T_KEEP_SHORT_ROWS,         // work_item_loops.cpp: short branch-free x loops left to the loop vectoriser, not unrolled first
  T_COUNT
};

struct Lowering {
  Module &M;
  unsigned warp;
  std::string cpu, features;
  std::string err;
  LLVMContext &C;
  const DataLayout &DL;
  Type *I8, *I16, *I32, *I64, *Ptr, *Void;
  Type *I1Ty() { return Type::getInt1Ty(C); }

  // Launch-time specialisation: lower only this kernel, for this group size (constants), without the
  // module's constructors and destructors (they run in the generic instance).
  std::string specKernel;
  uint32_t specGs[3] = {0, 0, 0};

  Lowering(Module &M, const char *cpu, const char *features)
      : M(M), warp(1), cpu(cpu), features(features), C(M.getContext()),
        DL(M.getDataLayout()) {
    I8 = Type::getInt8Ty(C);
    I16 = Type::getInt16Ty(C);
    I32 = Type::getInt32Ty(C);
    I64 = Type::getInt64Ty(C);
    Ptr = PointerType::get(C, 0);
    Void = Type::getVoidTy(C);
  }
  bool fail(const std::string &m);
  Function *markerFn(StringRef name, Type *ret, ArrayRef<Type *> args);
  Function *barrierMarker() { return markerFn("__ol_rs.barrier", Void, {}); }
  Function *exitMarker() { return markerFn("__ol_rs.exit", Void, {}); }
  // A barrier that only the lanes of one warp need (the two around a warp collective's exchange):
  // a barrier marker tagged kWarpBarrierMD. Without ol-warp-lanes it is an ordinary barrier.
  static constexpr const char *kWarpBarrierMD = "ol.warp.barrier";
  CallInst *warpBarrier(IRBuilder<> &B);
  // Values that are the number of lanes of the work-item's warp (min(W, work-items left from the warp's
  // first)): W in a group of whole warps (ol-warp-lanes' cbsWarpLaneIds).
  static constexpr const char *kLanesInMD = "ol.lanes.in";
  Value *tagLanesIn(Value *n);
  // v, or what InstSimplify folds the instruction v to (v then erased)
  Value *simplified(Value *v);
  static bool isGpuKernelCC(CallingConv::ID cc);
  // The GPU intrinsic table is in Rust (src/jit/llvm/intrinsics.rs): what a call to the function named n becomes.
  OlRsClassifyFn classify = nullptr;
  OlRsIntrinsic classifyName(StringRef n) const;
  bool isGpuIntrinsicName(StringRef n) const { return classifyName(n).op != INTRINSIC_OP_NOT_GPU; }

  // ---------------------------------------------------------------- per-kernel lowering
  using Stats = std::array<uint32_t, T_COUNT>;
  struct KInfo {
    std::string name, wgName;
    uint64_t staticLocal = 0;
    uint64_t scratchPerWi = 0;
    bool barriers = false;
    bool specialisable = false; // no mutable global state: a separately loaded copy behaves the same
    std::vector<std::pair<uint64_t, uint64_t>> params; // size, align
    Stats stats{};                                     // what each transform did (see `stats`)
  };
  // Which transforms run (bit i: Transform i), and what each did in the kernel being lowered: the
  // number of loops, values, stores, ... it changed (lowerKernel resets them; KInfo::stats keeps them).
  uint64_t transforms = ~uint64_t(0);
  Stats stats{};
  bool on(Transform t) const { return (transforms >> t) & 1; }
  void fired(Transform t, uint32_t n = 1) { stats[t] += n; }
  // what run() produced, one entry per work-group function (handed to Rust by ol_rs_jit_lower)
  std::vector<KInfo> lowered;
  bool inlineAll(Function *F);
  Value *emitExchange(IRBuilder<> &B, Function *F, Value *val,
                      function_ref<Value *(IRBuilder<> &, Value * /*xchg*/, Value * /*lane*/,
                                           Value * /*warpBase*/, Value * /*nInWarp*/)>
                          compute);
  Value *nwiOf(IRBuilder<> &B, Function *F);
  Value *lanesIn(IRBuilder<> &B, Function *F, Value *base, bool whole);
  Value *laneMaskOf(IRBuilder<> &B, Function *F, Type *Ty);
  Value *areaPtr(IRBuilder<> &B, Function *F, unsigned area);
  // The addresses of the exchange areas' accesses: lane 0's slot of a warp's part (warpArea, which the
  // reads index by lane) or a lane's own slot (the store's), tagged with the area and which of the two
  // (warpAreaTag) for ol-warp-local-exchanges.
  static constexpr const char *kWarpAreaMD = "ol.warp.area";
  MDNode *warpAreaTag(unsigned area, bool own);
  Value *warpArea(IRBuilder<> &B, Function *F, unsigned area, Value *base, Type *T);
  Value *readSlot(IRBuilder<> &B, Value *xchg, Value *j, Type *T);
  bool isLaneOf(Value *v, Value *id);
  bool isWarpOf(Value *v, Value *id);
  bool wholeWarps() const;
  Value *readLane(IRBuilder<> &B, Function *F, Value *xchg, Value *lane, Value *j, Type *T);
  // the kernel being lowered reads the exchange area up to W - 1 slots beyond its ends (readLane)
  bool exchangeReach = false;
  // ol-alternate-exchanges: the exchanges of a whole-warp specialisation take turns between two areas
  // (the second 8 bytes per work-item after the first); the store and the barrier after the reads of
  // each are tagged kExchangeAreaMD with its area (0 or 1)
  static constexpr const char *kExchangeAreaMD = "ol.exchange.area";
  unsigned exchanges = 0;
  bool secondArea = false;
  // with `apart`, only the lanes the active markers name (a collective the lanes may reach apart); `wide`:
  // the exchange's slots are whole (8-byte) ones
  Value *ballotCompute(IRBuilder<> &B, Value *xchg, Value *base, Value *nInWarp, bool apart = false,
                       bool wide = false);
  // whether lanes of one warp (work-items of one group) may wait at different collectives at once: a
  // divergent branch with a collective before its immediate post-dominator and collectives reachable from
  // two of its successors
  bool collectivesApart(Function *F, const std::vector<CallInst *> &coll);
  // nvptx64's active masks (apart) whose value the next collective in their block can give: what uses
  // them before it moves after it, and it computes their lanes in its exchange (pairedMask) instead of an
  // exchange of their own
  std::map<CallInst *, CallInst *> pairMasks(const std::vector<CallInst *> &coll, const std::set<CallInst *> &apart);
  CallInst *pairedMask = nullptr;
  // a warp collective: an exchange between lanes (or nvptx64's active mask)
  bool isCollectiveCall(CallInst *CI) const;
  // a small loop over the lanes i < nInWarp (at least one): acc = step(i, acc) from init
  Value *laneFold(IRBuilder<> &B, Value *nInWarp, Value *init,
                  function_ref<Value *(IRBuilder<> &, Value * /*i*/, Value * /*acc*/)> step);
  // OR over the lanes i < nInWarp of bit(i) << i (i64)
  Value *laneBits(IRBuilder<> &B, Value *nInWarp, function_ref<Value *(IRBuilder<> &, Value * /*i*/)> bit);
  // the lanes of the warp whose first work-item is `base` (nInWarp of them) that take part in the warp
  // collective being computed, in code the lanes of a warp may reach apart (the GPU's active lanes), as an
  // i64 mask: a marker `i64 __ol_rs.warp_active(i32 base, i32 nInWarp)` that buildCbs replaces
  // (cbsActiveLanes)
  Value *activeLanes(IRBuilder<> &B, Value *base, Value *nInWarp);
  // in a specialisation of whole warps (W <= 64) a warp's slots are read as one vector, a <W x i1> made
  // an i64 mask (laneMask)
  bool vectorLanes() const;
  Value *laneMask(IRBuilder<> &B, Value *set);
  // the blocks that the work-items of a group (the lanes of a warp, where the specialisation's x size is
  // whole warps) may reach apart: those a divergent branch reaches before its immediate post-dominator
  std::set<BasicBlock *> divergentBlocks(Function *F);
  // the blocks that the work-items taking different ways out of BB may be in before they meet again
  // (reachable from its successors before P, its immediate post-dominator; null: they meet at the exit)
  static std::set<BasicBlock *> beforeJoin(BasicBlock *BB, const PostDominatorTree &PDT, BasicBlock *&P);
  // whether they meet again before any block `isSync` holds for (`before`: beforeJoin's blocks)
  static bool meetBeforeSync(BasicBlock *BB, const PostDominatorTree &PDT, function_ref<bool(BasicBlock *)> isSync,
                             std::set<BasicBlock *> &before);
  bool replaceIntrinsics(Function *F, bool &collective);
  unsigned blockStrideLoops(Function *F);
  unsigned blockStrideRound(Function *F, std::set<BasicBlock *> &cold);
  // the kernel being lowered is barrier-free and blockStrideLoops made its grid-stride loops uniform
  // (kernel_body.cpp): buildCbs does not look for them again
  bool strideLoopsDone = false;
  Value *groupSizeFactor(Function *F, Value *S, int d);
  unsigned groupLoops(Function *F);
  unsigned matchLoops(Function *F);
  int groupSizeDim(Function *F, Value *v);
  void runtimeDivisors(Function *F);
  bool lowerLocals(Function *F, uint64_t &staticBytes);
  static Value *X(unsigned o, Function *F, int e) { return F->getArg(o + e); }

  // Shared-memory atomics without the lock prefix: a work-group runs on one host thread and its
  // __gpu_local memory (static: E_LOCAL, dynamic: E_DYN, per worker) is its own, so an atomicrmw or
  // cmpxchg whose pointer provably points there (every underlying object is one of those two
  // arguments; a pointer loaded from memory or passed in is not) needs no atomic instruction. Marked
  // here, while the SSA values still show where pointers come from (CBS demotes them to scratch), and
  // made plain by plainSharedAtomics() once the work-group function is built, so that the plain loads
  // and stores are in no parallel-accesses group: two work-items of one region loop may update the
  // same element, and the vectoriser must see that dependence. Volatile atomics stay as they are.
  static constexpr const char *kSharedAtomicMD = "ol.shared.atomic";
  void markSharedAtomics(Function *F);
  void plainSharedAtomics(Function *F);
  void exitsToReturns(Function *F);
  MDNode *newAccessGroup();
  void addAccessGroup(Instruction &I, MDNode *AG);
  void markParallelLoop(Instruction *latchBr, MDNode *AG, bool noInterleave = false);
  void addLoopProperty(Instruction *latchBr, MDNode *property);
  MDNode *vectorisedFollowup(Instruction *latchBr);
  unsigned keepShortRows(Function *F, Function *WG);
  static constexpr uint64_t kShortRowMax = 64; // (ol-keep-short-rows: longer loops LLVM does not unroll early)
  // laneWidth 0: the values that may differ between the work-items of the group; laneWidth W (a power of
  // two dividing the specialised group size's x): those that may differ between the lanes of one warp.
  std::set<Value *> divergentValues(Function *F, unsigned laneWidth = 0);
  static std::set<Instruction *> divergentTerms(Function *F, const std::set<Value *> &div);
  static bool groupInvariant(const std::vector<BasicBlock *> &set, const std::set<Value *> &div,
                             const std::set<Instruction *> &divTerm, const std::set<AllocaInst *> &uniSlots,
                             Function *BM, Function *EM);
  void hoistSlotStores(BasicBlock *RE, BasicBlock *Pre, BasicBlock *NE, const std::set<Value *> &slots,
                       ArrayRef<BasicBlock *> clones);
  static bool sameAddress(Value *A, Value *B, int depth = 0);
  void speculateSharedStores(Function *F, ArrayRef<BasicBlock *> clones, MDNode *AG,
                             const std::function<bool(BasicBlock *)> &leaves);
  bool flattenDecision(BasicBlock *N);
  static bool slotLoad(Instruction *I, const std::set<AllocaInst *> &slots);
  static bool slotUnchanged(LoadInst *Ld, BasicBlock *D, Instruction *at);

  // Values known to be a power of two or zero: the preloaded copies of demoted PHIs that pow2OrZero
  // proved (buildCbs records them; after demotion the induction is no longer visible).
  std::set<Value *> pow2Vals;
  bool pow2OrZero(Value *V, std::set<Value *> &visiting, int depth = 0);
  bool pow2OrZero(Value *V);

  // A guard that keeps the work-items whose id t (in dimension `dim`) has t mod P in [off, off + len):
  //   (t ^ j) > t     bit hb(j) of t clear (hb: the highest set bit; j = 0 keeps none): P = 2hb, len = hb
  //   (t & m) == 0    m a power of two: P = 2m, len = m; m = 2^k - 1: every 2^k-th id, P = m + 1, len = 1
  //   (t & m) != 0    m a power of two: P = 2m, off = m, len = m
  //   t % q == 0      every q-th id: P = q, len = 1
  // P, off, len are i64 values computed with PB; `exact` says (at run time) that the form applies (m is a
  // power of two or a mask, q != 0); where it does not, the caller keeps the guard and loops over all ids.
  // `bit`: a power of two (or zero) m that t is known not to contain, so that t ^ m == t | m == t + m.
  struct RunGuard {
    int dim = -1;
    Value *P = nullptr, *off = nullptr, *len = nullptr, *exact = nullptr;
    Value *bit = nullptr;
  };
  bool matchRunGuard(ICmpInst *Cmp, bool want, const std::function<int(Value *)> &idDim,
                     const std::function<bool(Value *)> &avail, IRBuilder<> &PB, RunGuard &g);
  void addRunLoop(PHINode *id, ICmpInst *inDim, BasicBlock *from, Value *lo, Value *hi, const RunGuard &g,
                  IRBuilder<> &PB);

  // A run loop made by addRunLoop, for versionShortRuns: `s` the run's first id before clamping to lo,
  // `step` rb + P; P, off, len as used (after the contiguous-range selects), lo/hi the id range; `bit`
  // the run guard's disjoint bit (rewritten to + in the body) or null.
  struct RunLoop {
    PHINode *id;
    ICmpInst *inDim;
    BasicBlock *RH, *exitBB;
    Instruction *s, *step;
    Value *lo, *hi, *P, *off, *len, *bit;
  };
  std::vector<RunLoop> runLoops; // filled by addRunLoop, consumed by versionShortRuns
  void versionShortRuns(Function *F);
  static void rewriteDisjointBit(PHINode *id, Value *m);
  static bool hoistIfUniform(Value *V, const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, int depth = 0);
  static bool hoistIfRowUniform(Value *V, std::array<PHINode *, 2> rowIds, const std::set<BasicBlock *> &groupLevel,
                                BasicBlock *Pre, BasicBlock *Row, int depth = 0);

  // Index-set splitting at equality guards: in a work-item loop (`id`, its header's bound check
  // `inDim`, entered from `from`, body from `body` up to the latch `latch`), comparisons
  // `id + c == b` / `!=` with c and b uniform (i32, so exactly `id == (b - c) mod 2^32`; or i64 on
  // zext(id), size_t index arithmetic: `id == b - c` mod 2^64) are answered per segment: the id's range
  // is cut at each such point p into [.., p), [p, p + 1), [p + 1, ..), a segment loop around the id's
  // loop, and within a segment starting at s the comparison is `s == p`, invariant in the loop
  // (unswitched by O3), so the segments between the points run without it and vectorise (a stencil's
  // `x == 0 || x == w - 1`). Uniform values are computed at the end of Pre, the segment bounds at the
  // end of `from` (the range may be per row, narrowToGuards).
  static constexpr size_t kMaxEqualityPoints = 4;
  void splitAtEqualities(BasicBlock *body, BasicBlock *latch, const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre,
                         PHINode *id, ICmpInst *inDim, BasicBlock *from);
  void narrowToGuards(BasicBlock *RE, const std::function<bool(BasicBlock *)> &leaves,
                      const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, std::array<PHINode *, 3> ids,
                      std::array<ICmpInst *, 3> inDim, std::array<Value *, 3> gs, std::array<BasicBlock *, 3> from,
                      Value **assumed = nullptr);
  static bool usesMutableGlobals(Function *F);

  // Implicit loop barriers (what PoCL's -pocl-implicit-loop-barriers does): in a kernel on the uniform
  // barrier path (step 2b of buildCbs), a loop without barriers, exits or divergent exits (so its trip
  // count is the same for every work-item) gets a barrier on each edge into its header. Inserting a
  // barrier that every work-item reaches the same number of times, in the same order, is legal for
  // race-free GPU code. The regions then run `for j { for t { body } }`: what crosses the new barriers
  // (accumulators, values loaded before the loop) lives in per-work-item arrays indexed by the work-item
  // id, the counter in a shared slot, and the work-item loop is the inner one, which vectorises with
  // plain loads and stores. Only the innermost such loops are chosen, and only where it pays: a body of
  // at least kInterchangeMinBody instructions and no constant trip count of kInterchangeMaxUnrolled or
  // less (those the unroller flattens better). After inserting a loop's barriers, buildCbs' condition
  // must still hold for every divergent branch D: the barriers/exits reachable from D without crossing
  // a barrier (`reach`, refreshed by `computeReach`) are one, or D's work-items meet again at D's
  // immediate post-dominator before any barrier or exit (`isSync`); then they all reach the same
  // barriers (the divergent `if (i < n)` in a uniform loop, whose latch then chooses between barriers).
  // Otherwise the loop is not reached by every work-item, and its barriers are taken out again.
  // Returns the blocks between such a D and its post-dominator: step 2b must not put implicit barriers
  // on their (uniform) branches, which not every work-item runs.
  static constexpr unsigned kInterchangeMinBody = 4, kInterchangeMaxUnrolled = 4;
  // Under ol-warp-lanes (`warp`: its divergence at the warp's width, and whether the conditions of
  // ol-warp-lanes still hold), the implicit barriers are warp barriers, around loops whose trip count is the
  // same for a warp's lanes and whose body computes something that is not (a warp-stride loop that
  // ol-block-stride-loops took: `for (b = 0; b < n; b += W) if (b + lane < n) ...`).
  struct WarpInterchange {
    const std::set<Value *> &div;
    std::function<bool()> holds;
  };
  std::set<BasicBlock *> interchangeLoops(Function *F, const std::set<Instruction *> &divTerm, Function *BM, Function *EM,
                        std::map<BasicBlock *, std::set<BasicBlock *>> &reach,
                        const std::function<void()> &computeReach, const std::function<bool(BasicBlock *)> &isSync,
                        const WarpInterchange *warpLoops = nullptr);
  void scopeSlots(Function *F, const std::vector<AllocaInst *> &slots);
  // ol-lockstep-loops (opt/lockstep_loops.cpp): in a barrier-free kernel, implicit barriers on the edges
  // into and out of each outermost memory-free loop whose exit may differ between work-items; returns how
  // many loops got them (then buildCbs runs in chunk mode, chunks of kLockstepChunk x ids).
  static constexpr unsigned kLockstepChunk = 16, kLockstepMaxPrivate = 1024;
  unsigned lockstepLoops(Function *F);
  // ol-reroll-loops (opt/reroll_loops.cpp): single-block reduction loops unrolled by the GPU compiler
  // rolled back (with barriers: only loops whose trip count differs between work-items); how many.
  unsigned rerollLoops(Function *F, bool withBarriers);
  // ol-unroll-barrier-loops (opt/unroll_barrier_loops.cpp): in a specialisation, loops with barriers whose
  // trip count the group size decides (at most kUnrollBarrierMaxTrips, kUnrollBarrierMaxInstructions in all
  // copies) unrolled completely; how many.
  static constexpr unsigned kUnrollBarrierMaxTrips = 16, kUnrollBarrierMaxInstructions = 4096;
  unsigned unrollBarrierLoops(Function *F);
  unsigned unrollPrivateLoops(Function *F);
  bool shareHeaderSlot(Instruction *I, const std::map<AllocaInst *, BasicBlock *> &phiSlot, DominatorTree &DT);

  // What crosses the steps of one buildCbs run, filled in step order (the step that sets a field is
  // named beside it).
  struct CbsState {
    Function *F = nullptr;                 // K.body with barrier/exit markers
    unsigned o = 0;                        // index of F's first extra argument (enum Extra)
    Function *BM = nullptr, *EM = nullptr; // the barrier and exit markers (null if the module has none)
    BasicBlock *entry = nullptr;           // F's entry block as the steps found it (the region 0 entry)
    std::set<Value *> div;                 // step 1: values that may differ between work-items (step 3 adds clones)
    std::set<Instruction *> divTerm;       // step 1: terminators whose successor choice may differ
    bool uniform = true;                   // step 2b: all work-items reach the same barriers in the same order
    // step 2b, ol-early-exits: uniform (or warp lanes) for the work-items that have not exited, which are
    // marked in their resume ids (RESUME_EXIT; 0 while they run), skipped by the region loops, and left
    // out of the active lanes (cbsLiveLanes)
    bool gone = false;
    std::map<BasicBlock *, std::set<BasicBlock *>> reach; // step 2b: cbsComputeReach
    std::set<AllocaInst *> uniSlots;  // steps 2c, 3: demotion slots of work-item-invariant values: one shared copy
    std::set<AllocaInst *> pow2Slots; // step 2c: uniform slots that only ever hold a power of two or zero
    std::vector<AllocaInst *> demoted; // steps 2c, 3: every demotion slot
    std::map<AllocaInst *, BasicBlock *> phiSlot; // step 2c: per-work-item PHI slot -> the PHI's block
    std::set<Instruction *> hoistable; // step 3: uniform entry-block values computed once per group
    // step 4: the per-work-item layout of all allocas (offsets, sizes; S bytes per work-item)
    std::vector<AllocaInst *> allocas;
    std::vector<uint64_t> offs, sizes;
    uint64_t S = 0;
    uint64_t xchgBytes = 8; // step 4: the exchange areas' bytes per work-item (after the slots)
    // step 5 (cbsRegionEntries): the original blocks, the region each barrier block resumes at, the
    // region entries, the new entry block NE
    std::vector<BasicBlock *> origBlocks;
    std::map<BasicBlock *, int> barrierId;
    std::vector<BasicBlock *> regionEntry;
    BasicBlock *NE = nullptr;
    // step 5 (cbsScheduler): the group prologue's values and the scheduler's blocks
    Value *scratch = nullptr, *nwi64 = nullptr, *xchg = nullptr, *resume = nullptr, *uniV = nullptr;
    AllocaInst *uniA = nullptr;   // `uni` (uniV its value at cbs.sched)
    AllocaInst *exitsA = nullptr; // ol-early-exits: what cbsLiveLanes does after the region just run (LIVE_*)
    AllocaInst *prevA = nullptr;  // ol-early-exits under ol-warp-lanes: `next` before the warp's region
    std::vector<Value *> uniPtr; // per alloca: its shared slot in scratch (uniform slots), else null
    AllocaInst *next = nullptr;                     // the region to run next
    BasicBlock *sched = nullptr, *done = nullptr, *scanStart = nullptr;
    SwitchInst *SW = nullptr;
    // the general scheduler with active-lane markers (cbsActiveLanes): the markers, and after the resume
    // ids an i64 per warp, the mask of its lanes that run the region being run (cbsActiveFlags sets them
    // for the work-items [wiLo, wiHi) the scheduler's scan covers)
    std::vector<CallInst *> activeCalls;
    Value *act = nullptr, *wiLo = nullptr, *wiHi = nullptr;
    // ol-warp-lanes (warp_lanes.cpp): every warp runs on its own from a group-level region (the kernel
    // entry or a group barrier's successor: groupEntries) through its warp barriers' regions (`wnext`,
    // the scheduler cbs.wsched) to the next group barrier or the exit; then the next warp (`wp`).
    bool warpMode = false;
    std::set<size_t> groupEntries;
    // ol-lockstep-loops: chunk mode (chunk x ids): the body runs one chunk of one row per call, the x id
    // E_LX its first; the region loops and the scheduler's scan cover [lo, hi) of each dimension
    // (cbsScheduler), the whole group otherwise
    unsigned chunk = 0;
    Value *lo[3] = {}, *hi[3] = {};
    AllocaInst *wnext = nullptr, *wstart = nullptr, *wp = nullptr;
    BasicBlock *wsched = nullptr, *whead = nullptr;
    SwitchInst *WSW = nullptr;
    // ol-warp-lanes: each region's loop over a warp's lanes (and its copy by ol-unswitch-warp-branches):
    // Pre, where the warp enters it, its header and latch, the lane's x id and flat id, the warp's first x
    // id and its row's first flat id (cbsWarpLaneIds; ol-warp-uniform-loops takes them in cbsFinish)
    struct LaneLoop {
      BasicBlock *Pre, *head, *latch;
      Value *lx, *wi, *xw, *wrow, *lane;
      BasicBlock *entry; // the region's Pre (its preloads), Pre itself or before it
    };
    std::vector<LaneLoop> laneLoops;
    // ol-warp-lanes, per region in id order: where the warp enters it, and the regions its warp barriers
    // lead to (ol-chain-warp-regions, cbsChainWarpRegions)
    struct WarpRegion {
      BasicBlock *Pre;
      int next;                 // the region of the one warp barrier it leaves through, else -1
      std::vector<int> leaves;  // the regions of the warp barriers it can leave through
    };
    std::vector<WarpRegion> warpRegions;
    // ol-warp-local-slots (cbsScheduler): per alloca, the one warp's copy of its slots, indexed by lane
    // (a slot per warp for a uniform one), on the stack, where no group barrier lets its value outlive the
    // warp's run (else null); empty where no slot is
    std::vector<Value *> warpSlot;
    // ol-warp-local-exchanges (cbsWarpLocalExchanges): per exchange area, the one warp's copy on the
    // stack (3W slots of 8 bytes, lane 0's at slot W); empty where the areas stay in scratch
    bool localXchg = false;
    std::vector<Value *> warpXchg;
    // ol-warp-lanes: the instructions of the regions' lane loops cloned from F's (and their copies), with
    // whether the original is the same for a warp's lanes (st.div, st.divTerm; cbsWarpLaneIds)
    ValueMap<Value *, bool> laneUniform;

    bool isBarrierBlk(BasicBlock *BB) const {
      auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
      return CI && BM && CI->getCalledFunction() == BM;
    }
    bool isWarpBarrierBlk(BasicBlock *BB) const {
      auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
      return isBarrierBlk(BB) && CI->getMetadata(kWarpBarrierMD);
    }
    bool isExitBlk(BasicBlock *BB) const {
      auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
      return (CI && EM && CI->getCalledFunction() == EM) || succ_empty(BB);
    }
  };

  // One region of step 5 while it is built (cbsRegion's sub-steps fill it in order).
  struct CbsRegion {
    size_t k = 0;                                  // the region's id (its `next` value)
    std::string sfx;                               // suffix of its block names
    std::vector<BasicBlock *> set;                 // its original blocks (cbsRegionBlocks)
    const std::set<BasicBlock *> *reach = nullptr; // the barriers (nullptr = exit) it can leave through
    bool once = false;                             // group-invariant: run once for the group
    BasicBlock *Pre = nullptr;                     // cbsRegionPrologue: where the scheduler enters it
    std::vector<Value *> preVal;                   // per alloca: the shared slot's value at Pre
    ValueToValueMapTy VM;                          // original -> clone (cbsRegionLoops, cbsCloneRegion)
    BasicBlock *L = nullptr, *P = nullptr, *Hz = nullptr, *Hy = nullptr; // cbsRegionLoops: the loop nest
    PHINode *lx = nullptr, *ly = nullptr, *lz = nullptr;
    ICmpInst *inX = nullptr, *inY = nullptr, *inZ = nullptr;
    Value *myResume = nullptr;                     // the work-item's resume id (non-uniform case)
    BranchInst *uniBr = nullptr;                   // non-uniform case: the branch on `uni` around the check
    Value *liveAll = nullptr, *liveMask = nullptr; // ol-early-exits: cbsAllLive
    MDNode *AG = nullptr;                          // the x loop's access group
    // ol-warp-lanes: the warp's first x id, its first flat id's row start (cbsWarpIds) and, per alloca,
    // the warp's copy of a shared slot
    Value *xw = nullptr, *wrow = nullptr, *wy = nullptr, *wz = nullptr, *wi = nullptr;
    PHINode *lane = nullptr; // the lane loop's second induction variable, the lane id lx - xw (0 .. W - 1)
    std::vector<Value *> uniPtrW;
    SmallVector<BasicBlock *, 32> clones;          // cbsCloneRegion: the cloned blocks, in `set` order
    std::map<BasicBlock *, BasicBlock *> origOf;   // clone -> original
    // its lane loop under ol-warp-lanes, entered at `head` from Pre
    CbsState::LaneLoop laneLoop(BasicBlock *head) const { return {Pre, head, L, lx, wi, xw, wrow, lane, Pre}; }
  };
  static bool firstCallTo(BasicBlock *BB, Function *Fn);
  bool buildCbs(Function *F, uint64_t &scratchPerWi, unsigned chunk = 0);
  void cbsActiveLanes(CbsState &st);
  Value *cbsActiveFlags(CbsState &st, IRBuilder<> &B, Value *region, Value *lo = nullptr, Value *hi = nullptr);
  void cbsLiveLanes(CbsState &st, IRBuilder<> &B, BasicBlock *then);
  void cbsLiveMasks(CbsState &st, CbsRegion &R);
  Value *firstLaneId(IRBuilder<> &B, CbsRegion &R, Value *id);
  Value *warpBaseOf(CbsState &st, CbsRegion &R, Instruction &I);
  Value *cbsAllLive(CbsState &st, CbsRegion &R);
  Value *allLanes(IRBuilder<> &B, Value *nInWarp);
  bool cbsCheckAllocas(CbsState &st);
  void cbsDivergence(CbsState &st);
  void cbsIsolateMarkers(CbsState &st);
  void cbsComputeReach(CbsState &st);
  void cbsUniformBarriers(CbsState &st);
  void cbsDemotePhis(CbsState &st);
  void cbsFindHoistable(CbsState &st);
  void cbsDemoteLiveAcross(CbsState &st);
  void cbsWidenBoolSlots(CbsState &st);
  std::vector<Instruction *> cbsLiveAcross(CbsState &st);
  std::vector<Instruction *> cbsRematerialise(CbsState &st, const std::vector<Instruction *> &work, bool reload);
  void cbsLayout(CbsState &st);
  void cbsRegionEntries(CbsState &st);
  void cbsScheduler(CbsState &st, IRBuilder<> &B);

  // the id a work-item leaving through exit block `e` (a barrier block, or nullptr = exit) resumes at
  int cbsExitId(CbsState &st, BasicBlock *e) { return e ? st.barrierId[e] : RESUME_EXIT; }
  void cbsRegion(CbsState &st, IRBuilder<> &B, size_t k);
  void cbsPromoteSlots(CbsState &st, CbsRegion &R);
  void cbsChunkRepeat(CbsState &st, CbsRegion &R);
  void cbsUnswitchExit(CbsState &st, CbsRegion &R);
  bool cbsUnswitchWarpBranch(CbsState &st, CbsRegion &R, CbsState::LaneLoop &LL, bool exitsOnly,
                             ValueToValueMapTy &VM);
  static constexpr size_t kMaxLaneLoops = 4; // (a region's lane loop and its copies, ol-unswitch-warp-branches)
  bool availableBefore(CbsState &st, CbsRegion &R, Value *V);
  Value *atFirstLane(CbsState &st, const CbsState::LaneLoop &LL, Value *V, std::vector<Instruction *> &made,
                     const std::set<Value *> *slots = nullptr, int depth = 0);
  void warpUniformLoops(CbsState &st);
  bool unswitchNest(CbsState &st, BasicBlock *Pre, BasicBlock *head, BranchInst *Br, ValueToValueMapTy &VM);
  std::vector<BasicBlock *> cbsRegionBlocks(CbsState &st, size_t k);
  void cbsRegionPrologue(CbsState &st, IRBuilder<> &B, CbsRegion &R);
  void cbsRegionLoops(CbsState &st, IRBuilder<> &B, CbsRegion &R);
  void cbsCloneRegion(CbsState &st, CbsRegion &R);
  void cbsUsePreloads(CbsState &st, CbsRegion &R);
  void cbsEnterRegion(CbsState &st, IRBuilder<> &B, CbsRegion &R);
  void cbsLeaveRegion(CbsState &st, CbsRegion &R);
  void cbsSplitEqualities(CbsState &st, CbsRegion &R);
  void cbsWarpLanes(CbsState &st);
  bool warpLanesHold(CbsState &st, const std::set<Instruction *> &wdivTerm);
  void cbsDropExchangeEnds(CbsState &st, const std::set<Instruction *> &wdivTerm);
  void cbsWarpScheduler(CbsState &st, IRBuilder<> &B);
  void cbsWarpIds(CbsState &st, IRBuilder<> &B, CbsRegion &R);
  void cbsChainWarpRegions(CbsState &st);
  // ol-full-groups (opt/full_groups.cpp): bounds guards (a branch one way of which only returns) and the
  // copy of the body without them for the groups all of whose work-items pass them
  struct BoundsGuard {
    BranchInst *br;
    bool want; // the condition's value that takes the way in
  };
  int localIdDim(Function *F, unsigned o, Value *v) const;
  bool groupValue(Function *F, unsigned o, Value *v, int depth = 0) const;
  bool idChain(Function *F, unsigned o, Value *v, int depth = 0) const;
  bool guardCondition(Function *F, unsigned o, Value *c, bool want, int depth = 0) const;
  // (where `into` is given, a guard's way in may reach one of its blocks instead of a barrier)
  std::vector<BoundsGuard> boundsGuards(Function *F, const std::set<BasicBlock *> *into = nullptr);
  Function *fullGroupsBody(Function *F, std::vector<BoundsGuard> &guards, const std::set<BasicBlock *> *into = nullptr);
  // the headers of a barrier-free body's loops that ol-implicit-loop-barriers would put the work-item
  // loop inside: exits the same for every work-item, a trip count that is not a constant, accesses
  // consecutive across x
  std::set<BasicBlock *> uniformLoopHeaders(Function *F);
  Function *fullGroupsCheck(Function *F, const std::vector<BoundsGuard> &guards);
  static constexpr uint64_t kWarpSlotBytes = 64 << 10;
  void cbsWarpLocalSlots(CbsState &st, IRBuilder<> &B);
  bool cbsWarpLocalExchanges(CbsState &st);
  void cbsWarpAreas(CbsState &st, CbsRegion &R);
  void cbsWarpRegionLoop(CbsState &st, IRBuilder<> &B, CbsRegion &R);
  void cbsRecordExit(CbsState &st, IRBuilder<> &B, BasicBlock *e);
  void cbsWarpLaneIds(CbsState &st, CbsRegion &R);
  bool cbsFinish(CbsState &st);
  bool lowerKernel(Function *K, KInfo &ki);
  void attachDebugInfo(Function *K, Function *NF, Function *WG);
  bool run();
};

} // namespace ol_rs::lower
