// IR lowering for the offload-rs CPU JIT, the C++ half of src/jit/compile.rs: GPU kernels (nvptx64,
// amdgcn, spirv64 bitcode, already retargeted to the host triple and datalayout by the Rust side) become
// work-group functions `void __ol_wg.<kernel>(const WgCtx *)` (the ABI is documented in src/jit/mod.rs).
//
// Entry point: ol_rs_jit_lower() (at the end of the file). It lowers the module's kernels in place and
// reports each work-group function to Rust as an OlRsKernelInfo struct through a callback; on failure it
// returns a message (freed with ol_rs_jit_free()). After it, at the end of the file too, the clean-up's
// two primitives. Everything else is file-local. No exceptions, no RTTI.
//
// Why C++: the lowering needs what LLVM's C API lacks: CloneFunctionInto, InlineFunction,
// DemoteRegToStack, dominator and post-dominator trees, loop info, ConstantExpr -> instruction
// conversion, IRBuilder inside inlined code (shared/reference/cpu-kernels.md section 7). The module-wide
// steps before it are in Rust and run first (src/jit/compile.rs calls them in order): the recursion
// check (src/jit/llvm/callgraph.rs); the warp width, the normalisation of every function (host target
// attributes, calling conventions, addrspace(5) allocas), the one kernel of a launch-time
// specialisation, llvm.global_ctors/dtors -> __ol_rs_init/__ol_rs_fini, host bitcode's exports
// (src/jit/llvm/normalise.rs). The GPU intrinsic table (which names are GPU intrinsics, what each becomes) is
// Rust data too (src/jit/llvm/intrinsics.rs), asked through OlRsLowerOptions::classify_intrinsic; the IR for
// each operation is built here (replaceIntrinsics), inside the kernel's inlined body. The clean-up after
// the per-kernel lowering is in Rust as well (src/jit/llvm/cleanup.rs), with two thin primitives from here
// (ol_rs_jit_remove_dead_constant_users, ol_rs_jit_erase_named_metadata) for what the C API lacks.
// What stays here needs C++-only LLVM: every step of lowerKernel (cloning, inlining, demotion,
// dominator/post-dominator trees, loop info, ConstantExpr expansion, IRBuilder in inlined code).
//
// Steps (Lowering::run), on a module the Rust steps above have normalised:
//  1. (in Rust, see above)
//  2. per kernel (lowerKernel): the kernel cloned into K.body(params..., extras) with every callee inlined
//     and every GPU intrinsic replaced (replaceIntrinsics: an extra argument, inline code, or a barrier /
//     exit marker; warp collectives are two barriers around an exchange through scratch, the warp width
//     being the one clang folded into the bitcode); __gpu_local variables -> offsets into local memory
//     (lowerLocals); then the WG function:
//     * without barriers: a top-tested z/y/x work-item loop around the inlined body, the x loop marked
//       parallel and narrowed to the ids that pass an `i < n`-style guard (narrowToGuards; a guard on
//       the flat id `tx + ty * nx` narrows each row's x loop), then the y and x loops cut into segments
//       at `y == c` / `x == c`-style guards (i32, or i64 size_t indices) so that the segments between
//       them run without the checks (splitAtEqualities);
//     * with barriers (buildCbs): blocks split at barriers into regions, each cloned into its own
//       work-item loop; values live across barriers kept per work-item in scratch, recomputed, or shared
//       when uniform; under uniform barriers the regions follow each other through a group-level `next`
//       (guarded regions loop only over the ids that pass: ranges such as `t < k`, `t + c >= n`, and runs
//       such as `(t ^ j) > t`, `(t & m) == 0`, `t % q == 0`, matchRunGuard / addRunLoop, also on the
//       flat id of 2-D and 3-D groups, per row; run loops of 1, 2 or 4 ids get copies with constant
//       runs, versionShortRuns; equality guards split the x loop; conditional shared-memory stores to
//       elements the work-item read become selects, speculateSharedStores, the decision in front of
//       them too, flattenDecision; a region's exit chosen by a uniform branch is decided once before
//       its loops, the loop nest copied per side, cbsUnswitchExit);
//       otherwise a per-work-item resume id and a scan pick the next region; barrier-free loops with a
//       uniform trip count get implicit barriers, so the work-item loop runs inside them
//       (interchangeLoops); a loop's exit value that is also its header PHI's back-edge value shares
//       the PHI's slot (shareHeaderSlot), and every demotion slot has an alias scope of its own
//       (scopeSlots); buildCbs runs these steps as member functions cbs* (cbsCheckAllocas ... cbsFinish),
//       each commented with what it takes and gives, on one CbsState (one CbsRegion per region);
//     atomics on the group's own shared memory become plain loads and stores (markSharedAtomics);
//  3. (in Rust, src/jit/llvm/cleanup.rs) clean-up: the original kernels and unused helpers removed, GPU
//     intrinsics left over and CUDA printf/assert are errors, the module verified.

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
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

#include "shim.h"

using namespace llvm;
using namespace llvm::PatternMatch;

// What a call to a GPU intrinsic becomes: the operations of `IntrinsicOp` in src/jit/llvm/intrinsics.rs
// (same values; the meaning of `arg` is documented there), the table of names being in Rust.
enum IntrinsicOp : uint32_t {
  IOP_NOT_GPU, IOP_UNSUPPORTED, IOP_LOCAL_ID, IOP_GROUP_SIZE, IOP_GROUP_ID, IOP_NUM_GROUPS, IOP_WARP_SIZE,
  IOP_LANE_ID, IOP_LANE_MASK, IOP_BARRIER, IOP_SPV_BARRIER, IOP_NO_OP, IOP_FENCE, IOP_EXIT, IOP_ACTIVE_MASK,
  IOP_SHFL, IOP_VOTE, IOP_IMPLICITARG_PTR, IOP_DISPATCH_PTR, IOP_MBCNT, IOP_BALLOT, IOP_SPV_BALLOT,
  IOP_READ_LANE, IOP_SPV_ID,
};
// Must match `Intrinsic` in src/jit/llvm/intrinsics.rs.
struct OlRsIntrinsic {
  uint32_t op; // IntrinsicOp
  int32_t arg;
};
static_assert(sizeof(OlRsIntrinsic) == 8, "OlRsIntrinsic must match Intrinsic in src/jit/llvm/intrinsics.rs");
// `classify_intrinsic` in src/jit/llvm/intrinsics.rs: the name need not be NUL-terminated.
typedef OlRsIntrinsic (*OlRsClassifyFn)(const char *name, size_t len);

namespace {

enum Arch { ARCH_NVPTX = 0, ARCH_AMDGCN = 1, ARCH_SPIRV = 2, ARCH_HOST = 3 };

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
constexpr bool kUniformFastPath = true;

struct Lowering {
  Module &M;
  int arch;
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

  Lowering(Module &M, int arch, const char *cpu, const char *features)
      : M(M), arch(arch), warp(1), cpu(cpu), features(features), C(M.getContext()),
        DL(M.getDataLayout()) {
    I8 = Type::getInt8Ty(C);
    I16 = Type::getInt16Ty(C);
    I32 = Type::getInt32Ty(C);
    I64 = Type::getInt64Ty(C);
    Ptr = PointerType::get(C, 0);
    Void = Type::getVoidTy(C);
  }

  bool fail(const std::string &m) {
    if (err.empty())
      err = m;
    return false;
  }

  Function *markerFn(StringRef name, Type *ret, ArrayRef<Type *> args) {
    FunctionCallee fc = M.getOrInsertFunction(name, FunctionType::get(ret, args, false));
    return cast<Function>(fc.getCallee());
  }
  Function *barrierMarker() { return markerFn("__ol_rs.barrier", Void, {}); }
  Function *exitMarker() { return markerFn("__ol_rs.exit", Void, {}); }

  static bool isGpuKernelCC(CallingConv::ID cc) {
    return cc == CallingConv::PTX_Kernel || cc == CallingConv::AMDGPU_KERNEL ||
           cc == CallingConv::SPIR_KERNEL;
  }
  // The GPU intrinsic table is in Rust (src/jit/llvm/intrinsics.rs): what a call to the function named n becomes.
  OlRsClassifyFn classify = nullptr;
  OlRsIntrinsic classifyName(StringRef n) const {
    return classify ? classify(n.data(), n.size()) : OlRsIntrinsic{IOP_NOT_GPU, 0};
  }
  bool isGpuIntrinsicName(StringRef n) const { return classifyName(n).op != IOP_NOT_GPU; }

  // ---------------------------------------------------------------- per-kernel lowering
  struct KInfo {
    std::string name, wgName;
    uint64_t staticLocal = 0;
    uint64_t scratchPerWi = 0;
    bool barriers = false;
    bool specialisable = false; // no mutable global state: a separately loaded copy behaves the same
    std::vector<std::pair<uint64_t, uint64_t>> params; // size, align
  };
  // what run() produced, one entry per work-group function (handed to Rust by ol_rs_jit_lower)
  std::vector<KInfo> lowered;

  bool inlineAll(Function *F) {
    unsigned rounds = 0;
    for (;;) {
      SmallVector<CallBase *, 16> calls;
      for (BasicBlock &BB : *F)
        for (Instruction &I : BB)
          if (auto *CB = dyn_cast<CallBase>(&I))
            if (Function *Callee = CB->getCalledFunction())
              if (!Callee->isDeclaration() && !Callee->isIntrinsic())
                calls.push_back(CB);
      if (calls.empty())
        return true;
      if (++rounds > 64 || F->getInstructionCount() > 2000000)
        return fail("kernel '" + F->getName().str() + "' has a call graph too deep to inline");
      for (CallBase *CB : calls) {
        if (isa<InvokeInst>(CB))
          return fail("exception handling (invoke) is not supported in kernels");
        Function *Callee = CB->getCalledFunction();
        InlineFunctionInfo IFI;
        InlineResult R = InlineFunction(*CB, IFI);
        if (!R.isSuccess())
          return fail("cannot inline '" + Callee->getName().str() + "' into kernel: " +
                      R.getFailureReason());
      }
    }
  }

  // Emits code computing the collective result at the position of CI (which is erased afterwards).
  // Layout: xchg slots are i64 at E_SCRATCH + 8 * lwi (CBS reserves them), see buildCbs().
  Value *emitExchange(IRBuilder<> &B, Function *F, Value *val64,
                      function_ref<Value *(IRBuilder<> &, Value * /*xchg*/, Value * /*lane*/,
                                           Value * /*warpBase*/, Value * /*nInWarp*/)>
                          compute) {
    Value *lwi = F->getArg(F->arg_size() - E_COUNT + E_LWI);
    Value *scratch = F->getArg(F->arg_size() - E_COUNT + E_SCRATCH);
    Value *lwi64 = B.CreateZExt(lwi, I64);
    Value *slot = B.CreateGEP(I64, scratch, lwi64);
    B.CreateStore(val64, slot);
    B.CreateCall(barrierMarker());
    Value *W = ConstantInt::get(I32, warp);
    Value *lane = B.CreateURem(lwi, W);
    Value *base = B.CreateSub(lwi, lane);
    Value *nwi = nwiOf(B, F);
    Value *left = B.CreateSub(nwi, base);
    Value *nInWarp = B.CreateSelect(B.CreateICmpULT(left, W), left, W);
    Value *r = compute(B, scratch, lane, base, nInWarp);
    B.CreateCall(barrierMarker());
    return r;
  }

  Value *nwiOf(IRBuilder<> &B, Function *F) {
    unsigned o = F->arg_size() - E_COUNT;
    return B.CreateMul(B.CreateMul(F->getArg(o + E_GSX), F->getArg(o + E_GSY)), F->getArg(o + E_GSZ));
  }

  Value *laneMaskOf(IRBuilder<> &B, Function *F, Type *Ty) {
    // mask of the lanes of this work-item's warp that exist (the group may end inside a warp).
    unsigned o = F->arg_size() - E_COUNT;
    Value *lwi = F->getArg(o + E_LWI);
    Value *W = ConstantInt::get(I32, warp);
    Value *lane = B.CreateURem(lwi, W);
    Value *base = B.CreateSub(lwi, lane);
    Value *left = B.CreateSub(nwiOf(B, F), base);
    Value *n = B.CreateSelect(B.CreateICmpULT(left, W), left, W);
    Value *n64 = B.CreateZExt(n, I64);
    Value *full = B.CreateSelect(B.CreateICmpUGE(n64, ConstantInt::get(I64, 64)),
                                 ConstantInt::get(I64, ~0ULL),
                                 B.CreateSub(B.CreateShl(ConstantInt::get(I64, 1), n64), ConstantInt::get(I64, 1)));
    return B.CreateTrunc(full, Ty);
  }

  Value *toI64(IRBuilder<> &B, Value *v) {
    Type *T = v->getType();
    if (T->isPointerTy())
      return B.CreatePtrToInt(v, I64);
    unsigned bits = DL.getTypeSizeInBits(T);
    Value *iv = T->isIntegerTy() ? v : B.CreateBitCast(v, IntegerType::get(C, bits));
    return B.CreateZExt(iv, I64);
  }
  Value *fromI64(IRBuilder<> &B, Value *v, Type *T) {
    if (T->isPointerTy())
      return B.CreateIntToPtr(v, T);
    unsigned bits = DL.getTypeSizeInBits(T);
    Value *iv = B.CreateTrunc(v, IntegerType::get(C, bits));
    return T->isIntegerTy() ? iv : B.CreateBitCast(iv, T);
  }

  // Reads lane j's slot (j relative to warp base).
  Value *readSlot(IRBuilder<> &B, Value *xchg, Value *base, Value *j) {
    Value *idx = B.CreateZExt(B.CreateAdd(base, j), I64);
    return B.CreateLoad(I64, B.CreateGEP(I64, xchg, idx));
  }

  Value *ballotCompute(IRBuilder<> &B, Value *xchg, Value *base, Value *nInWarp) {
    // OR over lanes 0..nInWarp of (slot != 0) << lane: a small loop.
    Function *F = B.GetInsertBlock()->getParent();
    BasicBlock *pre = B.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(C, "ballot.loop", F);
    BasicBlock *done = BasicBlock::Create(C, "ballot.done", F);
    // split: everything after the insert point must move to `done`.
    BasicBlock *rest = pre->splitBasicBlock(B.GetInsertPoint(), "ballot.rest");
    pre->getTerminator()->eraseFromParent();
    B.SetInsertPoint(pre);
    B.CreateBr(loop);
    B.SetInsertPoint(loop);
    PHINode *i = B.CreatePHI(I32, 2);
    PHINode *acc = B.CreatePHI(I64, 2);
    i->addIncoming(ConstantInt::get(I32, 0), pre);
    acc->addIncoming(ConstantInt::get(I64, 0), pre);
    Value *s = readSlot(B, xchg, base, i);
    Value *bit = B.CreateShl(B.CreateZExt(B.CreateICmpNE(s, ConstantInt::get(I64, 0)), I64),
                             B.CreateZExt(i, I64));
    Value *acc2 = B.CreateOr(acc, bit);
    Value *i2 = B.CreateAdd(i, ConstantInt::get(I32, 1));
    i->addIncoming(i2, loop);
    acc->addIncoming(acc2, loop);
    B.CreateCondBr(B.CreateICmpULT(i2, nInWarp), loop, done);
    B.SetInsertPoint(done);
    B.CreateBr(rest);
    B.SetInsertPoint(done->getTerminator());
    return acc2;
  }

  // Replace GPU intrinsics inside F (= K.body). Sets `collective` if any barrier-like op was introduced.
  bool replaceIntrinsics(Function *F, bool &collective, bool &hasExit) {
    unsigned o = F->arg_size() - E_COUNT;
    auto X = [&](int e) -> Value * { return F->getArg(o + e); };
    SmallVector<CallInst *, 32> calls;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CI = dyn_cast<CallInst>(&I))
          if (Function *Callee = CI->getCalledFunction())
            if (isGpuIntrinsicName(Callee->getName()))
              calls.push_back(CI);
    for (CallInst *CI : calls) {
      StringRef n = CI->getCalledFunction()->getName();
      std::string name = n.str();
      OlRsIntrinsic in = classifyName(n);
      IRBuilder<> B(CI);
      Value *R = nullptr;
      bool erased = false;
      auto asTy = [&](Value *v) -> Value * {
        Type *T = CI->getType();
        if (v->getType() == T)
          return v;
        if (T->isIntegerTy() && v->getType()->isIntegerTy())
          return B.CreateZExtOrTrunc(v, T);
        if (T->isPointerTy() && v->getType()->isPointerTy())
          return B.CreateAddrSpaceCast(v, T);
        return nullptr;
      };
      switch (in.op) {
      case IOP_LOCAL_ID:
        R = asTy(X(E_LX + in.arg));
        break;
      case IOP_GROUP_SIZE:
        R = asTy(X(E_GSX + in.arg));
        break;
      case IOP_GROUP_ID:
        R = asTy(X(E_GIDX + in.arg));
        break;
      case IOP_NUM_GROUPS:
        R = asTy(X(E_NGX + in.arg));
        break;
      case IOP_WARP_SIZE:
        R = asTy(ConstantInt::get(I32, warp));
        break;
      case IOP_LANE_ID:
        R = asTy(B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp)));
        break;
      case IOP_LANE_MASK: { // arg: 0 eq, 1 lt, 2 le, 3 ge, 4 gt
        Value *lane = B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp));
        Value *one = B.CreateShl(ConstantInt::get(I32, 1), lane);
        if (in.arg == 0) R = one;
        else if (in.arg == 1) R = B.CreateSub(one, ConstantInt::get(I32, 1));
        else if (in.arg == 2) R = B.CreateOr(one, B.CreateSub(one, ConstantInt::get(I32, 1)));
        else if (in.arg == 3) R = B.CreateNot(B.CreateSub(one, ConstantInt::get(I32, 1)));
        else R = B.CreateNot(B.CreateOr(one, B.CreateSub(one, ConstantInt::get(I32, 1))));
        R = asTy(R);
        break;
      }
      case IOP_BARRIER: { // arg 1: returns whether this is the first work-item to arrive (never)
        bool isFirst = in.arg == 1;
        if (!CI->getType()->isVoidTy() && !isFirst)
          return fail("unsupported barrier intrinsic '" + name + "' (reduction barriers are not supported)");
        B.CreateCall(barrierMarker());
        collective = true;
        if (!CI->getType()->isVoidTy())
          R = ConstantInt::getFalse(C);
        else
          erased = true;
        break;
      }
      case IOP_NO_OP:
        erased = true;
        break;
      case IOP_FENCE:
        B.CreateFence(AtomicOrdering::SequentiallyConsistent);
        erased = true;
        break;
      case IOP_EXIT:
        B.CreateCall(exitMarker());
        hasExit = true;
        erased = true;
        break;
      case IOP_ACTIVE_MASK:
        R = laneMaskOf(B, F, I32);
        break;
      case IOP_SHFL: {
        // (mask, a, b, c) -> a from lane j, PTX shfl semantics; arg & 3: up, down, bfly, idx; arg & 4: the
        // predicate form.
        int mode = in.arg & 3;
        bool pred = (in.arg & 4) != 0;
        Type *VT = pred ? cast<StructType>(CI->getType())->getElementType(0) : CI->getType();
        Value *a = CI->getArgOperand(1), *bval = CI->getArgOperand(2), *cval = CI->getArgOperand(3);
        collective = true;
        Value *res = emitExchange(B, F, toI64(B, a), [&](IRBuilder<> &B2, Value *xchg, Value *lane, Value *base, Value *nIn) -> Value * {
          Value *b5 = B2.CreateAnd(bval, 31), *c5 = B2.CreateAnd(cval, 31);
          Value *segMask = B2.CreateAnd(B2.CreateLShr(cval, 8), 31);
          Value *minLane = B2.CreateAnd(lane, segMask);
          Value *maxLane = B2.CreateOr(minLane, B2.CreateAnd(c5, B2.CreateNot(segMask)));
          Value *j, *p;
          if (mode == 0) {
            j = B2.CreateSub(lane, b5);
            p = B2.CreateICmpSGE(j, maxLane);
          } else if (mode == 1) {
            j = B2.CreateAdd(lane, b5);
            p = B2.CreateICmpSLE(j, maxLane);
          } else if (mode == 2) {
            j = B2.CreateXor(lane, b5);
            p = B2.CreateICmpSLE(j, maxLane);
          } else {
            j = B2.CreateOr(minLane, B2.CreateAnd(b5, B2.CreateNot(segMask)));
            p = B2.CreateICmpSLE(j, maxLane);
          }
          j = B2.CreateSelect(p, j, lane);
          // lanes past the end of a partial warp read their own value
          j = B2.CreateSelect(B2.CreateICmpULT(j, nIn), j, lane);
          Value *v = fromI64(B2, readSlot(B2, xchg, base, j), VT);
          if (!pred)
            return v;
          Value *s = UndefValue::get(CI->getType());
          s = B2.CreateInsertValue(s, v, 0);
          return B2.CreateInsertValue(s, p, 1);
        });
        R = res;
        break;
      }
      case IOP_VOTE: { // arg: 0 ballot, 1 any, 2 all, 3 uni
        Value *p = CI->arg_size() == 2 ? CI->getArgOperand(1) : CI->getArgOperand(0);
        collective = true;
        Value *ballot = emitExchange(B, F, B.CreateZExt(p, I64), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
          return ballotCompute(B2, xchg, base, nIn);
        });
        Value *exist = laneMaskOf(B, F, I64);
        if (in.arg == 0)
          R = B.CreateTrunc(ballot, I32);
        else if (in.arg == 1)
          R = B.CreateICmpNE(ballot, ConstantInt::get(I64, 0));
        else if (in.arg == 2)
          R = B.CreateICmpEQ(ballot, exist);
        else
          R = B.CreateOr(B.CreateICmpEQ(ballot, exist), B.CreateICmpEQ(ballot, ConstantInt::get(I64, 0)));
        break;
      }
      case IOP_IMPLICITARG_PTR:
        R = asTy(X(E_IMPLARG));
        break;
      case IOP_DISPATCH_PTR:
        R = asTy(X(E_DISPATCH));
        break;
      case IOP_MBCNT: { // arg 1: the high half
        bool hi = in.arg == 1;
        Value *mask = CI->getArgOperand(0), *acc = CI->getArgOperand(1);
        Value *lane = B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp));
        Value *l = hi ? B.CreateSelect(B.CreateICmpULE(lane, ConstantInt::get(I32, 32)), ConstantInt::get(I32, 0),
                                       B.CreateSub(lane, ConstantInt::get(I32, 32)))
                      : B.CreateSelect(B.CreateICmpUGE(lane, ConstantInt::get(I32, 32)), ConstantInt::get(I32, 32), lane);
        Value *l64 = B.CreateZExt(l, I64);
        Value *below = B.CreateTrunc(B.CreateSub(B.CreateShl(ConstantInt::get(I64, 1), l64), ConstantInt::get(I64, 1)), I32);
        Function *pop = Intrinsic::getOrInsertDeclaration(&M, Intrinsic::ctpop, {I32});
        R = B.CreateAdd(acc, B.CreateCall(pop, {B.CreateAnd(mask, below)}));
        break;
      }
      case IOP_BALLOT: {
        collective = true;
        Value *p = CI->getArgOperand(0);
        Value *ballot = emitExchange(B, F, B.CreateZExt(p, I64), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
          return ballotCompute(B2, xchg, base, nIn);
        });
        R = B.CreateTrunc(ballot, CI->getType());
        break;
      }
      case IOP_READ_LANE: { // arg: 0 the first lane, 1 the lane in operand 1, 2 ds.bpermute
        collective = true;
        bool bperm = in.arg == 2;
        Value *v = bperm ? CI->getArgOperand(1) : CI->getArgOperand(0);
        Value *sel = bperm ? CI->getArgOperand(0) : (in.arg == 1 ? CI->getArgOperand(1) : nullptr);
        Type *VT = CI->getType();
        R = emitExchange(B, F, toI64(B, v), [&](IRBuilder<> &B2, Value *xchg, Value *lane, Value *base, Value *nIn) {
          Value *j = ConstantInt::get(I32, 0);
          if (sel) {
            j = bperm ? B2.CreateAnd(B2.CreateLShr(sel, 2), warp - 1) : B2.CreateAnd(sel, warp - 1);
            j = B2.CreateSelect(B2.CreateICmpULT(j, nIn), j, lane);
          }
          return fromI64(B2, readSlot(B2, xchg, base, j), VT);
        });
        break;
      }
      case IOP_SPV_ID: { // arg: 0 local id, 1 group id, 2 group size, 3 number of groups
        auto *c = CI->arg_size() == 1 ? dyn_cast<ConstantInt>(CI->getArgOperand(0)) : nullptr;
        if (!c || c->getZExtValue() > 2)
          return fail("'" + name + "' with a non-constant dimension is not supported");
        int d = (int)c->getZExtValue();
        static constexpr int base[4] = {E_LX, E_GIDX, E_GSX, E_NGX};
        R = asTy(X(base[in.arg & 3] + d));
        break;
      }
      case IOP_SPV_BARRIER:
        B.CreateCall(barrierMarker());
        collective = true;
        erased = true;
        break;
      case IOP_SPV_BALLOT: {
        collective = true;
        Value *p = CI->getArgOperand(0);
        Value *ballot = emitExchange(B, F, B.CreateZExt(p, I64), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
          return ballotCompute(B2, xchg, base, nIn);
        });
        auto *VT = dyn_cast<FixedVectorType>(CI->getType());
        if (!VT || VT->getNumElements() != 4 || !VT->getElementType()->isIntegerTy(32))
          return fail("unsupported form of '" + name + "'");
        Value *v = Constant::getNullValue(VT);
        v = B.CreateInsertElement(v, B.CreateTrunc(ballot, I32), (uint64_t)0);
        v = B.CreateInsertElement(v, B.CreateTrunc(B.CreateLShr(ballot, 32), I32), (uint64_t)1);
        R = v;
        break;
      }
      default: // IOP_UNSUPPORTED
        break;
      }
      if (!R && !erased)
        return fail("unsupported GPU intrinsic '" + name + "' in kernel (the CPU JIT cannot emulate it)");
      if (R) {
        if (R->getType() != CI->getType())
          return fail("internal: type mismatch replacing '" + name + "'");
        CI->replaceAllUsesWith(R);
      }
      CI->eraseFromParent();
    }
    // Workgroup-scope fences are meaningless when a whole group runs on one thread.
    for (BasicBlock &BB : *F)
      for (Instruction &I : make_early_inc_range(BB))
        if (auto *FI = dyn_cast<FenceInst>(&I)) {
          SmallVector<StringRef, 8> names;
          C.getSyncScopeNames(names);
          StringRef sc = FI->getSyncScopeID() < names.size() ? names[FI->getSyncScopeID()] : "";
          if (sc == "workgroup" || sc == "wavefront" || sc == "singlethread" || sc.starts_with("workgroup-") ||
              sc.starts_with("wavefront-") || sc == "cta")
            FI->eraseFromParent();
        }
    return true;
  }

  // addrspace(3) globals used by F -> local_mem + offset / dyn_local_mem.
  // In a launch-time specialisation, a division or remainder by the group size (`(t + 1) % n`, with n
  // from __gpu_num_threads_x() or amdgcn's implicit-argument / dispatch-packet fields) divides by the
  // value loaded at run time (E_GSR*), not by the constant: LLVM 22.1's loop vectoriser takes
  // `base + ((t + 1) & (n - 1))` as consecutive in t once n is a power-of-two constant and loads past the
  // group (src/jit/llvm/tests.rs, neighbour_indices_wrap_around*). Trip counts and every other use keep the
  // constant.
  void runtimeDivisors(Function *F) {
    unsigned o = F->arg_size() - E_COUNT;
    // the dimension whose group size v is (through casts), or -1
    auto dimOf = [&](Value *v) -> int {
      while (auto *CI = dyn_cast<CastInst>(v))
        if (CI->getOpcode() == Instruction::Trunc || CI->getOpcode() == Instruction::ZExt ||
            CI->getOpcode() == Instruction::SExt)
          v = CI->getOperand(0);
        else
          break;
      for (int d = 0; d < 3; ++d)
        if (v == F->getArg(o + E_GSX + d))
          return d;
      auto *LI = dyn_cast<LoadInst>(v);
      if (!LI || !LI->getType()->isIntegerTy(16) || LI->isVolatile())
        return -1;
      APInt off(64, 0);
      Value *base = LI->getPointerOperand();
      for (int k = 0; k < 4; ++k) { // GEPs, and the address-space casts replaceIntrinsics puts on the arguments
        APInt o64(DL.getIndexTypeSizeInBits(base->getType()), 0);
        base = base->stripAndAccumulateConstantOffsets(DL, o64, true);
        off += o64.sextOrTrunc(64);
        if (auto *AC = dyn_cast<AddrSpaceCastOperator>(base))
          base = AC->getPointerOperand();
        else
          break;
      }
      for (int d = 0; d < 3; ++d)
        if ((base == F->getArg(o + E_IMPLARG) && off == 12 + 2 * d) ||
            (base == F->getArg(o + E_DISPATCH) && off == 4 + 2 * d))
          return d;
      return -1;
    };
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        auto *BO = dyn_cast<BinaryOperator>(&I);
        if (!BO || (BO->getOpcode() != Instruction::URem && BO->getOpcode() != Instruction::UDiv &&
                    BO->getOpcode() != Instruction::SRem && BO->getOpcode() != Instruction::SDiv))
          continue;
        int d = dimOf(BO->getOperand(1));
        if (d < 0)
          continue;
        IRBuilder<> B(BO);
        BO->setOperand(1, B.CreateZExtOrTrunc(F->getArg(o + E_GSRX + d), BO->getType()));
      }
  }

  bool lowerLocals(Function *F, uint64_t &staticBytes) {
    unsigned o = F->arg_size() - E_COUNT;
    std::vector<GlobalVariable *> gvs;
    for (GlobalVariable &G : M.globals())
      if (G.getAddressSpace() == 3)
        gvs.push_back(&G);
    if (gvs.empty())
      return true;
    std::vector<Constant *> cs(gvs.begin(), gvs.end());
    convertUsersOfConstantsToInstructions(cs, F);
    uint64_t off = 0;
    IRBuilder<> B(&*F->getEntryBlock().getFirstInsertionPt());
    for (GlobalVariable *G : gvs) {
      SmallVector<Use *, 8> uses;
      for (Use &U : G->uses())
        if (auto *I = dyn_cast<Instruction>(U.getUser()))
          if (I->getFunction() == F)
            uses.push_back(&U);
      if (uses.empty())
        continue;
      uint64_t size = G->getValueType()->isSized() ? DL.getTypeAllocSize(G->getValueType()) : 0;
      Value *p;
      if (size == 0 || G->isDeclaration()) {
        p = X(o, F, E_DYN);
      } else {
        uint64_t al = std::max<uint64_t>(G->getAlign() ? G->getAlign()->value() : 1,
                                         DL.getPrefTypeAlign(G->getValueType()).value());
        al = std::min<uint64_t>(al, 64);
        off = (off + al - 1) / al * al;
        p = B.CreateGEP(I8, X(o, F, E_LOCAL), ConstantInt::get(I64, off), G->getName());
        off += size;
      }
      Value *cst = B.CreateAddrSpaceCast(p, G->getType());
      for (Use *U : uses)
        U->set(cst);
    }
    staticBytes = (off + 63) / 64 * 64;
    return true;
  }
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
  void markSharedAtomics(Function *F) {
    unsigned o = F->arg_size() - E_COUNT;
    auto shared = [&](Value *P) {
      SmallVector<const Value *, 4> objs;
      getUnderlyingObjects(P, objs);
      for (const Value *V : objs)
        if (V != X(o, F, E_LOCAL) && V != X(o, F, E_DYN))
          return false;
      return !objs.empty();
    };
    MDNode *mark = MDNode::get(C, {});
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        auto *RMW = dyn_cast<AtomicRMWInst>(&I);
        auto *CX = dyn_cast<AtomicCmpXchgInst>(&I);
        if ((RMW && !RMW->isVolatile() && shared(RMW->getPointerOperand())) ||
            (CX && !CX->isVolatile() && shared(CX->getPointerOperand())))
          I.setMetadata(kSharedAtomicMD, mark);
      }
  }
  void plainSharedAtomics(Function *F) {
    std::vector<Instruction *> v;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (I.getMetadata(kSharedAtomicMD))
          v.push_back(&I);
    for (Instruction *I : v) {
      if (auto *RMW = dyn_cast<AtomicRMWInst>(I))
        lowerAtomicRMWInst(RMW);
      else if (auto *CX = dyn_cast<AtomicCmpXchgInst>(I))
        lowerAtomicCmpXchgInst(CX);
    }
  }

  // Replace `call __ol_rs.exit; unreachable` by `ret void` (plain work-item functions).
  void exitsToReturns(Function *F) {
    Function *EM = M.getFunction("__ol_rs.exit");
    if (!EM)
      return;
    std::vector<CallInst *> v;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CI = dyn_cast<CallInst>(&I))
          if (CI->getCalledFunction() == EM)
            v.push_back(CI);
    for (CallInst *CI : v) {
      BasicBlock *BB = CI->getParent();
      BB->splitBasicBlock(CI->getIterator());
      BB->getTerminator()->eraseFromParent();
      ReturnInst::Create(C, BB);
    }
    removeUnreachableBlocks(*F);
  }

  // Work-items of one barrier region are independent under GPU semantics (no data races between
  // work-items without a barrier), so the work-item loops are marked parallel for the vectoriser.
  MDNode *newAccessGroup() { return MDNode::getDistinct(C, {}); }
  void addAccessGroup(Instruction &I, MDNode *AG) {
    if (!I.mayReadOrWriteMemory())
      return;
    MDNode *old = I.getMetadata(LLVMContext::MD_access_group);
    if (!old) {
      I.setMetadata(LLVMContext::MD_access_group, AG);
      return;
    }
    SmallVector<Metadata *, 4> ops;
    if (old->getNumOperands() == 0)
      ops.push_back(old);
    else
      for (const MDOperand &Op : old->operands())
        ops.push_back(Op.get());
    ops.push_back(AG);
    I.setMetadata(LLVMContext::MD_access_group, MDNode::get(C, ops));
  }
  void markParallelLoop(Instruction *latchBr, MDNode *AG, bool noInterleave = false) {
    MDNode *PA = MDNode::get(C, {MDString::get(C, "llvm.loop.parallel_accesses"), AG});
    MDNode *IC = MDNode::get(C, {MDString::get(C, "llvm.loop.interleave.count"),
                                 ConstantAsMetadata::get(ConstantInt::get(I32, 1))});
    MDNode *ID = noInterleave ? MDNode::getDistinct(C, {nullptr, PA, IC}) : MDNode::getDistinct(C, {nullptr, PA});
    ID->replaceOperandWith(0, ID);
    latchBr->setMetadata(LLVMContext::MD_loop, ID);
  }

  // Which SSA values are the same for every work-item of the group (under GPU semantics: race-free
  // memory, convergent barriers)? Sources of divergence: the local ids, allocas (per-work-item memory),
  // atomics, non-intrinsic calls; propagated through operands, loads from divergent addresses, PHIs at
  // joins of divergent branches (blocks reachable from the branch before its immediate post-dominator)
  // and values leaving loops with a divergent exit.
  std::set<Value *> divergentValues(Function *F) {
    unsigned o = F->arg_size() - E_COUNT;
    std::set<Value *> div;
    for (int e : {E_LX, E_LY, E_LZ, E_LWI})
      div.insert(F->getArg(o + e));
    DominatorTree DT(*F);
    LoopInfo LI(DT);
    PostDominatorTree PDT(*F);
    auto isDiv = [&](Value *v) { return div.count(v) != 0; };
    for (bool changed = true; changed;) {
      changed = false;
      // join blocks of divergent branches
      std::set<BasicBlock *> joins;
      for (BasicBlock &BB : *F) {
        Instruction *T = BB.getTerminator();
        Value *cond = nullptr;
        if (auto *BI = dyn_cast<BranchInst>(T))
          cond = BI->isConditional() ? BI->getCondition() : nullptr;
        else if (auto *SI = dyn_cast<SwitchInst>(T))
          cond = SI->getCondition();
        if (!cond || !isDiv(cond))
          continue;
        DomTreeNode *N = PDT.getNode(&BB);
        BasicBlock *P = (N && N->getIDom()) ? N->getIDom()->getBlock() : nullptr;
        if (P)
          joins.insert(P);
        std::vector<BasicBlock *> wl(succ_begin(&BB), succ_end(&BB));
        std::set<BasicBlock *> seen;
        while (!wl.empty()) {
          BasicBlock *X = wl.back();
          wl.pop_back();
          if (X == P || !seen.insert(X).second)
            continue;
          joins.insert(X);
          for (BasicBlock *Su : successors(X))
            wl.push_back(Su);
        }
      }
      for (BasicBlock &BB : *F)
        for (Instruction &I : BB) {
          if (isDiv(&I))
            continue;
          bool d = false;
          auto *LdI = dyn_cast<LoadInst>(&I);
          if (isa<AllocaInst>(&I) || isa<AtomicRMWInst>(&I) || isa<AtomicCmpXchgInst>(&I) ||
              (LdI && (LdI->isAtomic() || LdI->isVolatile()))) {
            d = true;
          } else if (auto *CB = dyn_cast<CallBase>(&I)) {
            Function *Cal = CB->getCalledFunction();
            if (!Cal || !Cal->isIntrinsic() || CB->mayReadOrWriteMemory())
              d = true;
            else
              for (Value *A : CB->args())
                d = d || isDiv(A);
          } else if (auto *PN = dyn_cast<PHINode>(&I)) {
            d = joins.count(&BB) != 0;
            for (Value *V : PN->incoming_values())
              d = d || isDiv(V);
          } else {
            for (Value *Op : I.operands())
              d = d || isDiv(Op);
          }
          if (!d && !I.getType()->isVoidTy())
            if (Loop *L = LI.getLoopFor(&BB)) {
              bool usedOutside = false;
              for (User *U : I.users())
                if (auto *UI = dyn_cast<Instruction>(U))
                  usedOutside = usedOutside || !L->contains(UI->getParent());
              if (usedOutside) {
                SmallVector<BasicBlock *, 4> exiting;
                L->getExitingBlocks(exiting);
                for (BasicBlock *EB : exiting) {
                  Instruction *T = EB->getTerminator();
                  if (auto *BI = dyn_cast<BranchInst>(T))
                    d = d || (BI->isConditional() && isDiv(BI->getCondition()));
                  else
                    d = true;
                }
              }
            }
          if (d) {
            div.insert(&I);
            changed = true;
          }
        }
    }
    return div;
  }

  // Can a region be run once for the whole group instead of once per work-item? Yes when nothing in
  // it depends on the work-item: no divergent value or branch, loads only of group-invariant values,
  // stores only to the shared slots of group-invariant values (every work-item would store the same).
  static bool groupInvariant(const std::vector<BasicBlock *> &set, const std::set<Value *> &div,
                             const std::set<Instruction *> &divTerm, const std::set<AllocaInst *> &uniSlots,
                             Function *BM, Function *EM) {
    for (BasicBlock *BB : set)
      for (Instruction &I : *BB) {
        if (I.isTerminator()) {
          if (divTerm.count(&I))
            return false;
          continue;
        }
        if (auto *CI = dyn_cast<CallInst>(&I))
          if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
            continue;
        if (auto *Ld = dyn_cast<LoadInst>(&I)) {
          if (Ld->isVolatile() || Ld->isAtomic())
            return false;
          if (auto *A = dyn_cast<AllocaInst>(Ld->getPointerOperand())) {
            if (!uniSlots.count(A))
              return false;
            continue;
          }
          if (div.count(&I))
            return false;
          continue;
        }
        if (auto *St = dyn_cast<StoreInst>(&I)) {
          auto *A = dyn_cast<AllocaInst>(St->getPointerOperand());
          if (!A || !uniSlots.count(A) || St->isVolatile())
            return false;
          continue;
        }
        if (div.count(&I) || I.mayHaveSideEffects() || I.mayReadFromMemory())
          return false;
      }
    return true;
  }

  // Every work-item runs the start of a region's entry block RE: a store there of a group-invariant
  // value (available in the region's preheader Pre) to a shared slot that nothing else in the region
  // writes is done once in Pre instead, and the region's loads of that slot take the stored value.
  // (A slot written again in the region, e.g. the counter of a uniform loop inside the work-item
  // loop, must be re-initialised by every work-item: its store stays.)
  void hoistSlotStores(BasicBlock *RE, BasicBlock *Pre, BasicBlock *NE, const std::set<Value *> &slots,
                       ArrayRef<BasicBlock *> clones) {
    std::map<Value *, unsigned> stores;
    for (BasicBlock *NB : clones)
      for (Instruction &I : *NB)
        if (auto *St = dyn_cast<StoreInst>(&I))
          ++stores[St->getPointerOperand()];
    std::map<Value *, Value *> fwd;
    auto availInPre = [&](Value *V) {
      auto *I = dyn_cast<Instruction>(V);
      return !I || I->getParent() == Pre || I->getParent() == NE;
    };
    // a load of a slot already hoisted reads the hoisted value
    auto resolve = [&](Value *V) {
      auto *Ld = dyn_cast<LoadInst>(V);
      auto it = Ld ? fwd.find(Ld->getPointerOperand()) : fwd.end();
      return it != fwd.end() && it->second->getType() == V->getType() ? it->second : V;
    };
    // the stored value, available in Pre as it is or once a pure computation of such values (`k >> 1`)
    // moves there; nullptr if not
    std::function<Value *(Value *, int)> inPre = [&](Value *V, int depth) -> Value * {
      V = resolve(V);
      if (availInPre(V))
        return V;
      auto *I = cast<Instruction>(V);
      if (depth > 4 || !(isa<BinaryOperator>(I) || isa<CastInst>(I)) || !isSafeToSpeculativelyExecute(I) ||
          std::find(clones.begin(), clones.end(), I->getParent()) == clones.end())
        return nullptr;
      std::vector<Value *> ops;
      for (Value *Op : I->operands())
        if (Value *R = inPre(Op, depth + 1))
          ops.push_back(R);
        else
          return nullptr;
      for (unsigned i = 0; i < ops.size(); ++i)
        I->setOperand(i, ops[i]);
      I->moveBefore(Pre->getTerminator()->getIterator());
      return I;
    };
    // RE and the blocks it falls through to unconditionally (every work-item runs them)
    for (BasicBlock *BB = RE; BB;) {
      bool stop = false;
      for (Instruction &I : make_early_inc_range(*BB)) {
        if (I.isTerminator())
          break;
        if (auto *St = dyn_cast<StoreInst>(&I)) {
          Value *P = St->getPointerOperand();
          Value *V = slots.count(P) && stores[P] == 1 && !St->isVolatile() ? inPre(St->getValueOperand(), 0) : nullptr;
          if (!V) {
            stop = true;
            break;
          }
          St->setOperand(0, V);
          fwd[P] = V;
          St->setMetadata(LLVMContext::MD_access_group, nullptr);
          St->moveBefore(Pre->getTerminator()->getIterator());
          continue;
        }
        if (auto *Ld = dyn_cast<LoadInst>(&I)) {
          if (slots.count(Ld->getPointerOperand()) && !fwd.count(Ld->getPointerOperand())) {
            stop = true;
            break;
          }
          continue;
        }
        if (I.mayHaveSideEffects()) {
          stop = true;
          break;
        }
      }
      auto *Br = dyn_cast<BranchInst>(BB->getTerminator());
      BasicBlock *Nx = !stop && Br && Br->isUnconditional() ? Br->getSuccessor(0) : nullptr;
      BB = Nx && Nx->getSinglePredecessor() == BB && std::find(clones.begin(), clones.end(), Nx) != clones.end() ? Nx : nullptr;
    }
    // the slot holds the hoisted value throughout the region
    for (BasicBlock *NB : clones)
      for (Instruction &I : make_early_inc_range(*NB))
        if (auto *Ld = dyn_cast<LoadInst>(&I)) {
          auto it = fwd.find(Ld->getPointerOperand());
          if (it != fwd.end() && it->second->getType() == Ld->getType() && !Ld->isVolatile()) {
            Ld->replaceAllUsesWith(it->second);
            Ld->eraseFromParent();
          }
        }
  }

  // Do two pointer values compute the same address (the same value, or identical casts / GEPs of such)?
  static bool sameAddress(Value *A, Value *B, int depth = 0) {
    if (A == B)
      return true;
    auto *IA = dyn_cast<Instruction>(A), *IB = dyn_cast<Instruction>(B);
    if (!IA || !IB || depth > 3 || IA->getOpcode() != IB->getOpcode() || IA->getType() != IB->getType() ||
        IA->getNumOperands() != IB->getNumOperands() || !(isa<GetElementPtrInst>(IA) || isa<CastInst>(IA)) ||
        !IA->isSameOperationAs(IB))
      return false;
    for (unsigned i = 0; i < IA->getNumOperands(); ++i)
      if (!sameAddress(IA->getOperand(i), IB->getOperand(i), depth + 1))
        return false;
    return true;
  }

  // `if (c) { s[t] = b; s[p] = a; }` with s[t] and s[p] read by the same work-item earlier in the region
  // (shared memory): the stores become unconditional, `s[t] = c ? b : s[t]`, after the if. Under the GPU
  // model no other work-item of the group may touch a location this one reads between two barriers (that
  // would be a data race), so storing its current value back is invisible; the region loop then has no
  // data-dependent branch or masked store (bitonic's compare-and-swap). S: a block of such stores only,
  // ending in a branch to J; the new block before J takes the edges from blocks the loads dominate.
  void speculateSharedStores(Function *F, ArrayRef<BasicBlock *> clones, MDNode *AG,
                             const std::function<bool(BasicBlock *)> &leaves) {
    for (BasicBlock *S : clones) {
      auto *Br = dyn_cast<BranchInst>(S->getTerminator());
      if (!Br || Br->isConditional() || leaves(S))
        continue;
      BasicBlock *J = Br->getSuccessor(0);
      bool shared = false;
      for (Instruction &I : *S)
        if (auto *St = dyn_cast<StoreInst>(&I))
          shared = shared || St->getPointerAddressSpace() == 3;
      if (J == S || !shared)
        continue;
      DominatorTree DT(*F);
      std::vector<std::pair<StoreInst *, LoadInst *>> sts;
      bool ok = true;
      for (Instruction &I : *S) {
        if (I.isTerminator())
          break;
        if (auto *St = dyn_cast<StoreInst>(&I)) {
          LoadInst *Ld = nullptr;
          if (St->isSimple() && St->getPointerAddressSpace() == 3)
            for (BasicBlock *D : clones)
              if (D != S && DT.dominates(D, S))
                for (Instruction &K : *D)
                  if (auto *L = dyn_cast<LoadInst>(&K))
                    if (!Ld && L->isSimple() && L->getType() == St->getValueOperand()->getType() &&
                        sameAddress(L->getPointerOperand(), St->getPointerOperand()))
                      Ld = L;
          Value *V = St->getValueOperand();
          auto *VI = dyn_cast<Instruction>(V);
          ok = ok && Ld && (!VI || VI->getParent() != S);
          sts.push_back({St, Ld});
          continue;
        }
        if (I.mayHaveSideEffects() || I.mayReadFromMemory())
          ok = false;
        for (User *U : I.users())
          ok = ok && !isa<PHINode>(U) && cast<Instruction>(U)->getParent() == S;
      }
      if (!ok || sts.empty())
        continue;
      // the edges into J from blocks every load dominates; the stored values must dominate them too
      SmallVector<BasicBlock *, 4> preds;
      for (BasicBlock *P : predecessors(J)) {
        bool dom = true;
        for (auto &[St, Ld] : sts) {
          auto *VI = dyn_cast<Instruction>(St->getValueOperand());
          auto *PI = dyn_cast<Instruction>(Ld->getPointerOperand());
          dom = dom && DT.dominates(Ld->getParent(), P) && (!VI || DT.dominates(VI->getParent(), P)) &&
                (!PI || DT.dominates(PI->getParent(), P));
        }
        if (dom)
          preds.push_back(P);
        else if (P == S)
          ok = false;
      }
      if (!ok)
        continue;
      BasicBlock *N = SplitBlockPredecessors(J, preds, ".spec");
      if (!N)
        continue;
      IRBuilder<> NB(&*N->getFirstInsertionPt());
      PHINode *ran = NB.CreatePHI(I1Ty(), preds.size(), "spec.ran");
      for (BasicBlock *P : predecessors(N))
        ran->addIncoming(P == S ? NB.getTrue() : NB.getFalse(), P);
      for (auto &[St, Ld] : sts) {
        Value *P = Ld->getPointerOperand();
        LoadInst *Old = NB.CreateLoad(St->getValueOperand()->getType(), P);
        Old->setAlignment(std::min(Ld->getAlign(), St->getAlign()));
        StoreInst *New = NB.CreateStore(NB.CreateSelect(ran, St->getValueOperand(), Old), P);
        New->setAlignment(std::min(Ld->getAlign(), St->getAlign()));
        New->copyMetadata(*St, {LLVMContext::MD_tbaa});
        if (AG) {
          addAccessGroup(*Old, AG);
          addAccessGroup(*New, AG);
        }
        St->eraseFromParent();
      }
      flattenDecision(N);
    }
  }

  // If-conversion of the decision in front of N: when the blocks between N's predecessors' nearest
  // common dominator D and N form an acyclic single-entry region of a few side-effect-free,
  // speculatable instructions (compares, casts, address arithmetic: bitonic's
  // `(t & k) == 0 ? a > b : a < b`, which clang emits as branches), those instructions move to the end
  // of D, each block's reachability becomes an i1 value (poison-safe logical and/or of the branch
  // conditions) and every PHI of N and of the region a chain of selects on its incoming edges, so that
  // D goes straight to N. Without it InstCombine folds speculateSharedStores' `select spec.ran` into
  // the branches' PHIs and the stores become conditional again (a masked store in the vector loop, a
  // branch in the scalar one). Returns whether it changed anything.
  bool flattenDecision(BasicBlock *N) {
    constexpr size_t kMaxBlocks = 8, kMaxInsts = 32;
    Function *F = N->getParent();
    DominatorTree DT(*F);
    if (pred_empty(N))
      return false;
    BasicBlock *D = nullptr;
    for (BasicBlock *P : predecessors(N))
      D = D ? DT.findNearestCommonDominator(D, P) : P;
    auto *DBr = D ? dyn_cast<BranchInst>(D->getTerminator()) : nullptr;
    if (!DBr || !DBr->isConditional() || D == N)
      return false;
    // the region: what D reaches before N, in topological order (a DFS post-order, reversed)
    std::vector<BasicBlock *> post;
    std::set<BasicBlock *> seen, onStack;
    bool ok = true;
    size_t insts = 0;
    std::function<void(BasicBlock *)> visit = [&](BasicBlock *B) {
      if (!ok || B == N)
        return;
      if (onStack.count(B) || B == D) { // a cycle
        ok = false;
        return;
      }
      if (!seen.insert(B).second)
        return;
      auto *Br = dyn_cast<BranchInst>(B->getTerminator());
      if (!Br || !DT.dominates(D, B) || seen.size() > kMaxBlocks) {
        ok = false;
        return;
      }
      for (Instruction &I : *B) {
        if (I.isTerminator() || isa<PHINode>(I))
          continue;
        if (++insts > kMaxInsts || I.mayHaveSideEffects() || I.mayReadFromMemory() ||
            !isSafeToSpeculativelyExecute(&I) || isa<AllocaInst>(I)) {
          ok = false;
          return;
        }
      }
      onStack.insert(B);
      for (BasicBlock *S : successors(B))
        visit(S);
      onStack.erase(B);
      post.push_back(B);
    };
    for (BasicBlock *S : successors(D))
      visit(S);
    if (!ok)
      return false;
    std::set<BasicBlock *> region(post.begin(), post.end());
    for (BasicBlock *B : post)
      for (BasicBlock *P : predecessors(B))
        if (P != D && !region.count(P))
          return false; // entered from outside
    for (BasicBlock *P : predecessors(N))
      if (P != D && !region.count(P))
        return false;
    std::reverse(post.begin(), post.end());
    // the conditions, computed at the end of D (instructions of a block after its PHIs' selects)
    IRBuilder<> B(DBr);
    std::map<BasicBlock *, Value *> reach = {{D, B.getTrue()}};
    auto edge = [&](BasicBlock *P, BasicBlock *S) -> Value * {
      auto *Br = cast<BranchInst>(P->getTerminator());
      Value *c = reach.at(P);
      if (!Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
        return c;
      Value *bc = Br->getCondition();
      return B.CreateLogicalAnd(c, Br->getSuccessor(0) == S ? bc : B.CreateNot(bc));
    };
    auto toSelects = [&](BasicBlock *BB) {
      for (PHINode &PN : make_early_inc_range(BB->phis())) {
        Value *V = PN.getIncomingValue(PN.getNumIncomingValues() - 1);
        for (unsigned i = PN.getNumIncomingValues() - 1; i-- > 0;)
          V = B.CreateSelect(edge(PN.getIncomingBlock(i), BB), PN.getIncomingValue(i), V);
        PN.replaceAllUsesWith(V);
        PN.eraseFromParent();
      }
    };
    for (BasicBlock *BB : post) {
      Value *r = nullptr;
      for (BasicBlock *P : predecessors(BB)) {
        Value *e = edge(P, BB);
        r = r ? B.CreateLogicalOr(r, e) : e;
      }
      reach[BB] = r;
      toSelects(BB);
      for (Instruction &I : make_early_inc_range(*BB))
        if (!I.isTerminator()) {
          I.dropPoisonGeneratingAnnotations(); // it now runs where it did not
          I.moveBefore(DBr->getIterator());
        }
    }
    toSelects(N);
    B.CreateBr(N);
    DBr->eraseFromParent();
    // The emptied blocks stay (unreachable, removed at the end of buildCbs): the caller's list of the
    // region's blocks still names them.
    for (BasicBlock *BB : post) {
      BB->getTerminator()->eraseFromParent();
      new UnreachableInst(C, BB);
    }
    return true;
  }

  // A load of a shared slot (a demoted group-invariant value): rematerialisable when the slot still
  // holds the loaded value where the copy goes (slotUnchanged).
  static bool uniSlotLoad(Instruction *I, const std::set<AllocaInst *> &uniSlots) {
    auto *Ld = dyn_cast<LoadInst>(I);
    auto *A = Ld ? dyn_cast<AllocaInst>(Ld->getPointerOperand()) : nullptr;
    return A && Ld->isSimple() && uniSlots.count(A);
  }

  // Does the slot read by Ld (in block D, the block of the value being recomputed) hold the same value in
  // block UB, which D dominates? Yes when no store to it follows Ld in D, and no block storing to it
  // reaches UB without passing through D again (which recomputes the value): `k` of `for (k ..; k <<= 1)`
  // read in the loop header and used inside the loop.
  static bool slotUnchanged(LoadInst *Ld, BasicBlock *D, BasicBlock *UB) {
    if (Ld->getParent() != D)
      return false;
    Value *A = Ld->getPointerOperand();
    for (User *U : A->users()) {
      if (isa<LoadInst>(U))
        continue;
      auto *St = dyn_cast<StoreInst>(U);
      if (!St || St->getValueOperand() == A)
        return false;
      BasicBlock *SB = St->getParent();
      if (SB == D) {
        if (Ld->comesBefore(St))
          return false;
        continue;
      }
      if (SB == UB)
        return false;
      std::set<BasicBlock *> seen;
      std::vector<BasicBlock *> wl(succ_begin(SB), succ_end(SB));
      while (!wl.empty()) {
        BasicBlock *Xb = wl.back();
        wl.pop_back();
        if (Xb == D || !seen.insert(Xb).second)
          continue;
        if (Xb == UB)
          return false;
        for (BasicBlock *Su : successors(Xb))
          wl.push_back(Su);
      }
    }
    return true;
  }

  // Values known to be a power of two or zero: the preloaded copies of demoted PHIs that pow2OrZero
  // proved (buildCbs records them; after demotion the induction is no longer visible).
  std::set<Value *> pow2Vals;

  // Is V a power of two or zero, for every work-item and every time it is computed? Induction through
  // PHIs (`for (k = 2; ...; k <<= 1)`, `for (j = k >> 1; j > 0; j >>= 1)`), which ValueTracking's depth
  // limit does not reach: a PHI on the current path is assumed to hold while its inputs are checked.
  bool pow2OrZero(Value *V, std::set<Value *> &visiting, int depth = 0) {
    if (pow2Vals.count(V))
      return true;
    if (auto *K = dyn_cast<ConstantInt>(V))
      return K->isZero() || K->getValue().isPowerOf2();
    if (depth > 8)
      return false;
    Value *X, *Y;
    if (auto *PN = dyn_cast<PHINode>(V)) {
      if (!visiting.insert(PN).second)
        return true;
      for (Value *In : PN->incoming_values())
        if (!pow2OrZero(In, visiting, depth + 1))
          return false;
      return true;
    }
    if (match(V, m_Shl(m_Value(X), m_Value())) || match(V, m_LShr(m_Value(X), m_Value())) ||
        match(V, m_ZExt(m_Value(X))) || match(V, m_Trunc(m_Value(X))))
      return pow2OrZero(X, visiting, depth + 1);
    if (match(V, m_Select(m_Value(), m_Value(X), m_Value(Y))))
      return pow2OrZero(X, visiting, depth + 1) && pow2OrZero(Y, visiting, depth + 1);
    return V->getType()->isIntegerTy() && isKnownToBeAPowerOfTwo(V, DL, /*OrZero=*/true);
  }
  bool pow2OrZero(Value *V) {
    std::set<Value *> visiting;
    return pow2OrZero(V, visiting);
  }

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
                     const std::function<bool(Value *)> &avail, IRBuilder<> &PB, RunGuard &g) {
    ICmpInst::Predicate pr = want ? Cmp->getPredicate() : Cmp->getInversePredicate();
    Value *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1), *X, *J;
    Value *zero32 = ConstantInt::get(I32, 0), *one64 = ConstantInt::get(I64, 1);
    auto z64 = [&](Value *V) { return PB.CreateZExt(V, I64); };
    auto ctpop = [&](Value *V) { return PB.CreateUnaryIntrinsic(Intrinsic::ctpop, V); };
    if (pr == ICmpInst::ICMP_ULT) {
      std::swap(A, Bv);
      pr = ICmpInst::ICMP_UGT;
    }
    auto idFirst = [&]() { // the id operand as X, the other as J
      if (idDim(X) < 0)
        std::swap(X, J);
    };
    if (pr == ICmpInst::ICMP_UGT && match(A, m_Xor(m_Value(X), m_Value(J)))) {
      idFirst();
      int d = idDim(X);
      if (d < 0 || idDim(Bv) != d || !avail(J))
        return false;
      Value *hb = PB.CreateLShr(ConstantInt::get(I32, 0x80000000u),
                                PB.CreateBinaryIntrinsic(Intrinsic::ctlz, J, PB.getFalse()));
      hb = z64(PB.CreateSelect(PB.CreateICmpEQ(J, zero32), zero32, hb));
      g = {d, PB.CreateBinaryIntrinsic(Intrinsic::umax, PB.CreateShl(hb, 1), one64), ConstantInt::get(I64, 0), hb,
           PB.getTrue(), pow2OrZero(J) ? J : nullptr};
      return true;
    }
    if (pr != ICmpInst::ICMP_EQ && pr != ICmpInst::ICMP_NE)
      return false;
    if (match(A, m_Zero()))
      std::swap(A, Bv);
    if (!match(Bv, m_Zero()))
      return false;
    if (match(A, m_And(m_Value(X), m_Value(J))) && (idFirst(), idDim(X) >= 0) && avail(J)) {
      Value *m = z64(J);
      Value *p2 = PB.CreateICmpULE(ctpop(J), ConstantInt::get(I32, 1));
      bool known = pow2OrZero(J);
      if (pr == ICmpInst::ICMP_NE) {
        g = {idDim(X), PB.CreateBinaryIntrinsic(Intrinsic::umax, PB.CreateShl(m, 1), one64), m, m,
             known ? PB.getTrue() : p2, nullptr};
        return true;
      }
      Value *isP2 = PB.CreateICmpEQ(ctpop(J), ConstantInt::get(I32, 1));
      Value *isMask = PB.CreateICmpEQ(PB.CreateAnd(m, PB.CreateAdd(m, one64)), ConstantInt::get(I64, 0));
      g = {idDim(X), PB.CreateSelect(isP2, PB.CreateShl(m, 1), PB.CreateAdd(m, one64)), ConstantInt::get(I64, 0),
           PB.CreateSelect(isP2, m, one64), known ? PB.getTrue() : PB.CreateOr(isP2, isMask), known ? J : nullptr};
      return true;
    }
    if (pr == ICmpInst::ICMP_EQ && match(A, m_URem(m_Value(X), m_Value(J))) && idDim(X) >= 0 && avail(J)) {
      Value *q = z64(J);
      g = {idDim(X), PB.CreateBinaryIntrinsic(Intrinsic::umax, q, one64), ConstantInt::get(I64, 0), one64,
           PB.CreateICmpNE(J, zero32), nullptr};
      return true;
    }
    return false;
  }

  // Turns the work-item loop of `id` (header: id's block, `inDim` its bound check, entered from `from`)
  // into runs: for rb from the run at or below lo in steps of P: id from max(rb + off, lo) to
  // min(rb + off + len, hi). len >= P is one contiguous range.
  void addRunLoop(PHINode *id, ICmpInst *inDim, BasicBlock *from, Value *lo, Value *hi, const RunGuard &g,
                  IRBuilder<> &PB) {
    BasicBlock *H = id->getParent();
    auto *HT = cast<BranchInst>(H->getTerminator());
    BasicBlock *exitBB = HT->getSuccessor(1);
    Function *F = H->getParent();
    Value *contig = PB.CreateICmpUGE(g.len, g.P);
    Value *whole = ConstantInt::get(I64, 4096); // more than any group dimension
    Value *P = PB.CreateSelect(contig, whole, g.P), *off = PB.CreateSelect(contig, ConstantInt::get(I64, 0), g.off);
    Value *len = PB.CreateSelect(contig, whole, g.len);
    Value *rb0 = PB.CreateSub(lo, PB.CreateURem(lo, P));
    BasicBlock *RH = BasicBlock::Create(C, "cbs.run", F, H), *RL = BasicBlock::Create(C, "cbs.run.next", F, H);
    from->getTerminator()->replaceSuccessorWith(H, RH);
    H->replacePhiUsesWith(from, RH);
    exitBB->replacePhiUsesWith(H, RH);
    IRBuilder<> RB(RH);
    PHINode *rb = RB.CreatePHI(I64, 2, "rb");
    rb->addIncoming(rb0, from);
    Value *s = RB.CreateAdd(rb, off);
    Value *start = RB.CreateBinaryIntrinsic(Intrinsic::smax, s, lo);
    Value *end = RB.CreateBinaryIntrinsic(Intrinsic::smax, RB.CreateBinaryIntrinsic(Intrinsic::smin, RB.CreateAdd(s, len), hi), start);
    id->setIncomingValueForBlock(RH, RB.CreateTrunc(start, I32));
    inDim->setOperand(1, RB.CreateTrunc(end, I32));
    RB.CreateCondBr(RB.CreateICmpSLT(s, hi), H, exitBB);
    HT->setSuccessor(1, RL);
    RB.SetInsertPoint(RL);
    auto *step = cast<Instruction>(RB.CreateAdd(rb, P));
    rb->addIncoming(step, RL);
    RB.CreateBr(RH);
    runLoops.push_back({id, inDim, RH, exitBB, cast<Instruction>(s), step, lo, hi, P, off, len, g.bit});
  }

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

  // Short runs (bitonic's j = 1, 2, 4 phases of `(t ^ j) > t`, `(t & m) == 0` with small m): a run loop
  // of runs shorter than a vector is a loop of tiny scalar loops, each with its own bounds. For run
  // lengths c = 1, 2, 4 the run loop gets a copy where P = 2c and len = c are constants, every run is
  // whole (checked where the loop is entered: lo and hi - lo multiples of P, off + c <= P) so the id loop
  // runs exactly c times from the run's start, and the disjoint bit (if any, checked equal to c) is the
  // constant c: O3 then unrolls the id loop fully and vectorises the run loop with interleaved accesses
  // (stride 2c), what clang does with the hand-written loop. A switch on the run length picks the copy;
  // other lengths run the original. Only for a small closed loop: every block branches within it (or,
  // from its header, to the exit) and no value defined in it is used outside.
  void versionShortRuns(Function *F) {
    constexpr size_t kMaxInsts = 160;
    std::vector<RunLoop> todo;
    todo.swap(runLoops);
    for (const RunLoop &r : todo) {
      std::set<BasicBlock *> blocks = {r.RH};
      std::vector<BasicBlock *> order = {r.RH}, wl = {r.RH};
      bool ok = true;
      size_t insts = 0;
      while (!wl.empty() && ok) {
        BasicBlock *B = wl.back();
        wl.pop_back();
        insts += B->size();
        for (BasicBlock *S : successors(B)) {
          if (S == r.exitBB) {
            ok = ok && B == r.RH;
            continue;
          }
          if (blocks.insert(S).second) {
            order.push_back(S);
            wl.push_back(S);
          }
        }
      }
      if (!ok || insts > kMaxInsts)
        continue;
      BasicBlock *from = nullptr;
      for (BasicBlock *Pd : predecessors(r.RH))
        if (!blocks.count(Pd)) {
          ok = ok && !from;
          from = Pd;
        }
      for (BasicBlock *B : order) {
        for (BasicBlock *Pd : predecessors(B))
          ok = ok && (B == r.RH || blocks.count(Pd));
        for (Instruction &I : *B)
          for (User *U : I.users())
            ok = ok && blocks.count(cast<Instruction>(U)->getParent());
      }
      for (Instruction *I : {cast<Instruction>(r.id), cast<Instruction>(r.inDim), r.s, r.step})
        ok = ok && blocks.count(I->getParent());
      if (!ok || !from)
        continue;
      for (PHINode &PN : r.exitBB->phis())
        for (BasicBlock *Pd : PN.blocks())
          ok = ok && !blocks.count(Pd); // (none expected: kept simple)
      if (!ok)
        continue;
      // the dispatch on the run length, where the run loop is entered (its bounds may be per row:
      // narrowToGuards computes those inside the y loop)
      BasicBlock *Dsp = BasicBlock::Create(C, "cbs.runlen", F, r.RH);
      IRBuilder<> PB(Dsp);
      const uint64_t lens[] = {1, 2, 4};
      Value *key = ConstantInt::get(I64, 0);
      for (uint64_t c : lens) {
        Value *P2 = ConstantInt::get(I64, 2 * c), *c64 = ConstantInt::get(I64, c), *z = ConstantInt::get(I64, 0);
        Value *v = PB.CreateAnd(PB.CreateICmpEQ(r.len, c64), PB.CreateICmpEQ(r.P, P2));
        v = PB.CreateAnd(v, PB.CreateICmpULE(r.off, c64));
        v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateURem(r.lo, P2), z));
        v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateURem(PB.CreateSub(r.hi, r.lo), P2), z));
        if (r.bit)
          v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateZExt(r.bit, I64), c64));
        key = PB.CreateSelect(v, c64, key);
      }
      from->getTerminator()->replaceSuccessorWith(r.RH, Dsp);
      r.RH->replacePhiUsesWith(from, Dsp);
      SwitchInst *Sw = PB.CreateSwitch(key, r.RH, 3);
      for (uint64_t c : lens) {
        ValueToValueMapTy VM;
        SmallVector<BasicBlock *, 16> copy;
        for (BasicBlock *B : order) {
          BasicBlock *NB = CloneBasicBlock(B, VM, ".run" + Twine(c), F);
          VM[B] = NB;
          copy.push_back(NB);
        }
        remapInstructionsInBlocks(copy, VM);
        Sw->addCase(cast<ConstantInt>(ConstantInt::get(I64, c)), cast<BasicBlock>(VM[r.RH]));
        auto *RH = cast<BasicBlock>(VM[r.RH]);
        IRBuilder<> B(RH->getTerminator());
        auto *s = cast<Instruction>(VM[r.s]);
        Value *start = B.CreateTrunc(s, I32);
        cast<PHINode>(VM[r.id])->setIncomingValueForBlock(RH, start);
        // exactly c ids (no wrap: the run lies in [lo, hi), within the group)
        cast<ICmpInst>(VM[r.inDim])->setOperand(1, B.CreateAdd(start, ConstantInt::get(I32, c), "", /*HasNUW=*/true));
        cast<Instruction>(VM[r.step])->setOperand(1, ConstantInt::get(I64, 2 * c));
        if (r.bit)
          for (BasicBlock *NB : copy)
            for (Instruction &I : *NB)
              I.replaceUsesOfWith(r.bit, ConstantInt::get(r.bit->getType(), c));
      }
    }
  }

  // Inside a loop that runs only ids without bit m, t ^ m and t | m are t + m (affine: vectorisable).
  // (The id may be seen through trunc(zext id), as amdgcn bitcode has it.)
  static void rewriteDisjointBit(PHINode *id, Value *m) {
    std::vector<Value *> forms = {id};
    for (User *Z : id->users())
      if (isa<ZExtInst>(Z))
        for (User *T : Z->users())
          if (isa<TruncInst>(T) && T->getType() == id->getType())
            forms.push_back(T);
    for (Value *V : forms)
      for (User *U : make_early_inc_range(V->users())) {
        auto *BO = dyn_cast<BinaryOperator>(U);
        if (!BO || (BO->getOpcode() != Instruction::Xor && BO->getOpcode() != Instruction::Or) ||
            BO->getOperand(BO->getOperand(0) == V ? 1 : 0) != m)
          continue;
        IRBuilder<> B(BO);
        Value *sum = B.CreateAdd(V, m, "", /*HasNUW=*/true);
        BO->replaceAllUsesWith(sum);
        BO->eraseFromParent();
      }
  }

  // Is V available before the work-item loops: group-level already (a value of a `groupLevel` block,
  // an argument, a constant), or a pure computation of such values in the loop body (`gid * gsx`,
  // invariant loads of dereferenceable memory), which is then moved to the end of Pre?
  static bool hoistIfUniform(Value *V, const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, int depth = 0) {
    if (isa<Constant>(V) || isa<Argument>(V))
      return true;
    auto *I = dyn_cast<Instruction>(V);
    if (!I)
      return false;
    if (groupLevel.count(I->getParent()))
      return true;
    if (depth > 4 || isa<PHINode>(I))
      return false;
    // an invariant load from memory that is always there (the group size in amdgcn's implicit
    // arguments: a load from the WG function's own `implicitargs` alloca)
    auto *Ld = dyn_cast<LoadInst>(I);
    bool invariantLoad = Ld && Ld->isSimple() && Ld->hasMetadata(LLVMContext::MD_invariant_load) &&
                         isDereferenceablePointer(Ld->getPointerOperand(), Ld->getType(), I->getDataLayout());
    if (!invariantLoad && (I->mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(I) ||
                           !(isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<GetElementPtrInst>(I))))
      return false;
    for (Value *Op : I->operands())
      if (!hoistIfUniform(Op, groupLevel, Pre, depth + 1))
        return false;
    I->moveBefore(Pre->getTerminator()->getIterator());
    return true;
  }

  // Is V the same for every work-item of one row of the x loop: a pure function of the row's ids
  // `rowIds` (y, z) and of uniform values (`ty * nx`, `(tz * ny + ty) * nx`)? Then its uniform parts
  // are moved to the end of Pre (hoistIfUniform) and the rest to the end of Row, the x loop's entry
  // block (which the y and z loop headers dominate).
  static bool hoistIfRowUniform(Value *V, std::array<PHINode *, 2> rowIds, const std::set<BasicBlock *> &groupLevel,
                                BasicBlock *Pre, BasicBlock *Row, int depth = 0) {
    if (hoistIfUniform(V, groupLevel, Pre))
      return true;
    auto *I = dyn_cast<Instruction>(V);
    if (!I)
      return false;
    if (I == rowIds[0] || I == rowIds[1] || I->getParent() == Row ||
        (rowIds[1] && I->getParent() == rowIds[1]->getParent()))
      return true;
    if (depth > 6 || isa<PHINode>(I) || I->mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(I) ||
        !(isa<BinaryOperator>(I) || isa<CastInst>(I)))
      return false;
    for (Value *Op : I->operands())
      if (!hoistIfRowUniform(Op, rowIds, groupLevel, Pre, Row, depth + 1))
        return false;
    I->moveBefore(Row->getTerminator()->getIterator());
    return true;
  }

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
                         PHINode *id, ICmpInst *inDim, BasicBlock *from) {
    BasicBlock *H = id->getParent();
    if (id->getBasicBlockIndex(from) < 0 || inDim->getParent() != H) // already a run loop
      return;
    auto peel = [&](Value *V) {
      Value *inner;
      if (match(V, m_Trunc(m_ZExt(m_Value(inner)))) && inner->getType() == V->getType())
        return inner;
      if (V->getType()->isIntegerTy(64) && (match(V, m_ZExt(m_Value(inner))) || match(V, m_SExt(m_Value(inner)))) &&
          inner == id) // ids are below 1024: sext is zext
        return inner;
      return V;
    };
    // V == id + c (V i32, or i64 with id zero-extended): c (nullptr for 0)
    auto affine = [&](Value *V, Value *&c) {
      V = peel(V);
      c = nullptr;
      if (V == id)
        return true;
      auto *BO = dyn_cast<BinaryOperator>(V);
      if (!BO || BO->getOpcode() != Instruction::Add)
        return false;
      for (int s = 0; s < 2; ++s)
        if (peel(BO->getOperand(s)) == id && hoistIfUniform(BO->getOperand(1 - s), groupLevel, Pre)) {
          c = BO->getOperand(1 - s);
          return true;
        }
      return false;
    };
    std::set<BasicBlock *> blocks;
    std::vector<BasicBlock *> wl = {body};
    while (!wl.empty()) {
      BasicBlock *Bb = wl.back();
      wl.pop_back();
      if (Bb == latch || Bb == H || !blocks.insert(Bb).second)
        continue;
      for (BasicBlock *Su : successors(Bb))
        wl.push_back(Su);
    }
    // Only comparisons that decide a branch (directly or through i1 logic) pay for a segment loop: a
    // branch around loads and stores keeps the loop from vectorising, a select is cheap in it.
    std::function<bool(Value *, int)> decidesBranch = [&](Value *V, int depth) {
      for (User *U : V->users()) {
        if (isa<BranchInst>(U))
          return true;
        if (depth < 4 && U->getType()->isIntegerTy(1) && (isa<BinaryOperator>(U) || isa<SelectInst>(U)) &&
            decidesBranch(U, depth + 1))
          return true;
      }
      return false;
    };
    IRBuilder<> PB(Pre->getTerminator());
    std::vector<std::pair<ICmpInst *, Value *>> found; // comparison, its point (i64)
    // in the function's block order, not the set's (pointer) order: the same bitcode must always give
    // the same code, and which points are split when there are more than kMaxEqualityPoints
    for (BasicBlock &Blk : *H->getParent()) {
      BasicBlock *Bb = &Blk;
      if (!blocks.count(Bb))
        continue;
      for (Instruction &I : *Bb) {
        auto *Cmp = dyn_cast<ICmpInst>(&I);
        if (!Cmp || !Cmp->isEquality() || !decidesBranch(Cmp, 0) || found.size() >= kMaxEqualityPoints)
          continue;
        Type *Ty = Cmp->getOperand(0)->getType();
        if (!Ty->isIntegerTy(32) && !Ty->isIntegerTy(64))
          continue;
        Value *c = nullptr, *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1);
        if (!affine(A, c)) {
          if (!affine(Bv, c))
            continue;
          std::swap(A, Bv);
        }
        if (!hoistIfUniform(Bv, groupLevel, Pre))
          continue;
        Value *p = c ? PB.CreateSub(Bv, c) : Bv;
        found.push_back({Cmp, PB.CreateZExtOrBitCast(p, I64)});
      }
    }
    if (found.empty())
      return;
    auto *HT = cast<BranchInst>(H->getTerminator());
    BasicBlock *exitBB = HT->getSuccessor(1);
    Function *F = H->getParent();
    IRBuilder<> FB(from->getTerminator());
    Value *lo = FB.CreateZExt(id->getIncomingValueForBlock(from), I64);
    Value *hi = FB.CreateZExt(inDim->getOperand(1), I64);
    BasicBlock *SH = BasicBlock::Create(C, "eq.seg", F, H), *SL = BasicBlock::Create(C, "eq.seg.next", F, H);
    from->getTerminator()->replaceSuccessorWith(H, SH);
    H->replacePhiUsesWith(from, SH);
    exitBB->replacePhiUsesWith(H, SH);
    IRBuilder<> SB(SH);
    PHINode *s = SB.CreatePHI(I64, 2, "seg");
    s->addIncoming(lo, from);
    Value *end = hi, *one = ConstantInt::get(I64, 1);
    for (auto &[Cmp, p] : found) {
      // the next cut above s: p, else p + 1, else none
      Value *p1 = SB.CreateAdd(p, one);
      Value *cut = SB.CreateSelect(SB.CreateICmpUGT(p, s), p, SB.CreateSelect(SB.CreateICmpUGT(p1, s), p1, hi));
      end = SB.CreateBinaryIntrinsic(Intrinsic::umin, end, cut);
    }
    for (auto &[Cmp, p] : found) {
      Value *at = SB.CreateICmp(Cmp->getPredicate(), s, p);
      Cmp->replaceAllUsesWith(at);
      Cmp->eraseFromParent();
    }
    id->setIncomingValueForBlock(SH, SB.CreateTrunc(s, I32));
    inDim->setOperand(1, SB.CreateTrunc(end, I32));
    SB.CreateCondBr(SB.CreateICmpULT(s, hi), H, exitBB);
    HT->setSuccessor(1, SL);
    SB.SetInsertPoint(SL);
    s->addIncoming(end, SL);
    SB.CreateBr(SH);
  }

  // With `assumed` (initially true), guards whose exactness is only known at run time are removed
  // anyway and the run-time condition is and-ed into *assumed: the caller runs this loop nest only
  // when it holds (and an unmodified one otherwise).
  // `leaves(B)`: B does nothing but leave the region; values defined in `groupLevel` blocks (and
  // arguments, constants) are the same for every work-item and available before the loops; bounds
  // are computed at the end of Pre.
  void narrowToGuards(BasicBlock *RE, const std::function<bool(BasicBlock *)> &leaves,
                      const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, std::array<PHINode *, 3> ids,
                      std::array<ICmpInst *, 3> inDim, std::array<Value *, 3> gs, std::array<BasicBlock *, 3> from,
                      Value **assumed = nullptr) {
    std::function<bool(BasicBlock *, int)> trivial = [&](BasicBlock *Sc, int depth) -> bool {
      if (leaves(Sc))
        return true;
      Instruction *first = &*Sc->getFirstNonPHIIt();
      if (auto *Br = dyn_cast<BranchInst>(first))
        if (Br->isUnconditional() && depth < 4)
          return trivial(Br->getSuccessor(0), depth + 1);
      return false;
    };
    auto avail = [&](Value *V) { return hoistIfUniform(V, groupLevel, Pre); };
    auto peel = [&](Value *V) {
      Value *inner;
      if (match(V, m_Trunc(m_ZExt(m_Value(inner)))) && inner->getType() == V->getType())
        return inner;
      return V;
    };
    auto affine = [&](Value *V, int &dim, Value *&c) {
      V = peel(V);
      for (int d = 0; d < 3; ++d)
        if (V == ids[d]) {
          dim = d;
          c = ConstantInt::get(I32, 0);
          return true;
        }
      auto *BO = dyn_cast<BinaryOperator>(V);
      if (!BO || BO->getOpcode() != Instruction::Add)
        return false;
      for (int s = 0; s < 2; ++s)
        for (int d = 0; d < 3; ++d)
          if (peel(BO->getOperand(s)) == ids[d] && avail(BO->getOperand(1 - s))) {
            dim = d;
            c = BO->getOperand(1 - s);
            return true;
          }
      return false;
    };
    // the parts of `cond` that must all be true (want = true) or all false (want = false)
    std::function<void(Value *, bool, std::vector<std::pair<Value *, bool>> &)> parts =
        [&](Value *V, bool want, std::vector<std::pair<Value *, bool>> &out) {
          Value *a, *b;
          if (want && match(V, m_LogicalAnd(m_Value(a), m_Value(b)))) {
            parts(a, want, out);
            parts(b, want, out);
          } else if (!want && match(V, m_LogicalOr(m_Value(a), m_Value(b)))) {
            parts(a, want, out);
            parts(b, want, out);
          } else {
            out.push_back({V, want});
          }
        };
    auto idDim = [&](Value *V) {
      V = peel(V);
      for (int d = 0; d < 3; ++d)
        if (V == ids[d])
          return d;
      return -1;
    };
    RunGuard run[3];
    IRBuilder<> PB(Pre->getTerminator());
    Value *zero64 = ConstantInt::get(I64, 0);
    // Row-affine ids (2-D and 3-D groups): V = x + B, an add without wrap-around (nuw; nsw for signed
    // comparisons) of the x id and a B that is the same in a whole row of the x loop (the flat id
    // x + y * nx + z * nx * ny). Each row's x loop is narrowed to the ids whose x + B passes, with the
    // bounds computed per row at the end of from[0] (RowB); B as i64 (zext or sext), nullptr if V is not.
    IRBuilder<> RowB(from[0]->getTerminator());
    std::map<std::pair<Value *, bool>, Value *> rowBaseMemo;
    auto rowBase = [&](Value *V, bool sgn) -> Value * {
      V = peel(V);
      auto key = std::make_pair(V, sgn);
      if (auto it = rowBaseMemo.find(key); it != rowBaseMemo.end())
        return it->second;
      Value *r = nullptr;
      auto *BO = dyn_cast<BinaryOperator>(V);
      if (BO && BO->getOpcode() == Instruction::Add && (sgn ? BO->hasNoSignedWrap() : BO->hasNoUnsignedWrap()))
        for (int s = 0; s < 2 && !r; ++s) {
          Value *Bv = BO->getOperand(1 - s);
          if (peel(BO->getOperand(s)) == ids[0] &&
              hoistIfRowUniform(Bv, {ids[1], ids[2]}, groupLevel, Pre, from[0]))
            r = sgn ? RowB.CreateSExt(Bv, I64) : RowB.CreateZExt(Bv, I64);
        }
      rowBaseMemo[key] = r;
      return r;
    };
    // matchRunGuard's ids: the dimension of a work-item id, 3 + i for the i-th row-affine id seen
    std::vector<Value *> rowIds;
    auto runDim = [&](Value *V) {
      int d = idDim(V);
      if (d >= 0 || !rowBase(V, false))
        return d;
      V = peel(V);
      auto it = std::find(rowIds.begin(), rowIds.end(), V);
      if (it == rowIds.end())
        it = rowIds.insert(rowIds.end(), V);
      return 3 + (int)(it - rowIds.begin());
    };
    bool rowX = false; // x's bounds are per row (built with RowB)
    Value *lo[3], *hi[3], *gs64[3];
    bool touched[3] = {false, false, false};
    for (int d = 0; d < 3; ++d) {
      gs64[d] = PB.CreateZExt(gs[d], I64);
      lo[d] = zero64;
      hi[d] = gs64[d];
    }
    BasicBlock *cur = RE;
    for (int step = 0; step < 4 && cur; ++step) {
      bool pure = true;
      for (Instruction &I : *cur)
        if (!I.isTerminator() && (I.mayHaveSideEffects() || isa<PHINode>(&I)))
          pure = false;
      auto *BI = dyn_cast<BranchInst>(cur->getTerminator());
      if (pure && BI && BI->isUnconditional()) { // falls through: the guard may be in the next block
        BasicBlock *Nx = BI->getSuccessor(0);
        cur = Nx->getSinglePredecessor() == cur && !leaves(Nx) ? Nx : nullptr;
        continue;
      }
      if (!pure || !BI || !BI->isConditional())
        break;
      bool t0 = trivial(BI->getSuccessor(0), 0), t1 = trivial(BI->getSuccessor(1), 0);
      if (t0 == t1)
        break;
      bool want = t1; // the condition value that continues into the region
      BasicBlock *T = BI->getSuccessor(want ? 0 : 1);
      std::vector<std::pair<Value *, bool>> ps;
      parts(BI->getCondition(), want, ps);
      bool allKnown = true;
      Value *allExact = ConstantInt::getTrue(C);
      Value *rowExact = ConstantInt::getTrue(C); // per-row conditions: never part of *assumed
      for (auto &[V, w] : ps) {
        auto *Cmp = dyn_cast<ICmpInst>(V);
        if (!Cmp || !Cmp->getOperand(0)->getType()->isIntegerTy(32)) {
          allKnown = false;
          continue;
        }
        RunGuard rg;
        if (matchRunGuard(Cmp, w, runDim, avail, PB, rg)) {
          if (rg.dim >= 3) {
            // runs of x + B: x mod P in [o, o + len) cyclically, o = (off - B) mod P; runs starting at
            // o - P from the period at or below x's lower bound cover the one that wraps around
            // (B mod P per row without a division: Lemire's fastmod, B < 2^32 as x + B does not wrap,
            // with its multiplier computed once per group; P >= 2^32 leaves B as it is)
            Value *B64 = rowBase(rowIds[rg.dim - 3], false);
            Type *I128 = Type::getInt128Ty(C);
            Value *big = PB.CreateICmpUGT(rg.P, ConstantInt::get(I64, 0xffffffffu));
            Value *P32 = PB.CreateBinaryIntrinsic(Intrinsic::umin, rg.P, ConstantInt::get(I64, 0xffffffffu));
            Value *Mul = PB.CreateAdd(PB.CreateUDiv(ConstantInt::get(I64, ~0ULL), P32), ConstantInt::get(I64, 1));
            Value *frac = RowB.CreateZExt(RowB.CreateMul(Mul, B64), I128);
            Value *Bm = RowB.CreateTrunc(RowB.CreateLShr(RowB.CreateMul(frac, RowB.CreateZExt(P32, I128)), 64), I64);
            Bm = RowB.CreateSelect(big, B64, Bm);
            Value *o = RowB.CreateSelect(RowB.CreateICmpUGE(rg.off, Bm), RowB.CreateSub(rg.off, Bm),
                                         RowB.CreateSub(RowB.CreateAdd(rg.off, rg.P), Bm));
            rg.off = RowB.CreateSub(o, rg.P);
            rg.dim = 0;
            rg.bit = nullptr;
            rowX = true;
          }
          if (run[rg.dim].dim >= 0) { // one run form per dimension
            allKnown = false;
            continue;
          }
          if (!match(rg.exact, m_One()))
            rg.len = PB.CreateSelect(rg.exact, rg.len, ConstantInt::get(I64, 4096)); // not the form: all ids
          run[rg.dim] = rg;
          allExact = PB.CreateAnd(allExact, rg.exact);
          continue;
        }
        ICmpInst::Predicate pr = w ? Cmp->getPredicate() : Cmp->getInversePredicate();
        Value *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1), *c = nullptr;
        bool sgn = ICmpInst::isSigned(pr);
        Value *rowOff = nullptr; // B of a row-affine id: V = x + B + c
        bool rowNoWrap = false;  // V = x + B + c without wrap-around for every x (its adds' flags)
        auto rowAffine = [&](Value *V) {
          c = ConstantInt::get(I32, 0);
          if ((rowOff = rowBase(V, sgn)))
            return rowNoWrap = true;
          auto *BO = dyn_cast<BinaryOperator>(peel(V));
          if (BO && BO->getOpcode() == Instruction::Add)
            for (int s = 0; s < 2; ++s)
              if ((rowOff = rowBase(BO->getOperand(s), sgn)) && avail(BO->getOperand(1 - s))) {
                c = BO->getOperand(1 - s);
                rowNoWrap = sgn ? BO->hasNoSignedWrap() : BO->hasNoUnsignedWrap();
                return true;
              }
          rowOff = nullptr;
          return false;
        };
        int d = -1;
        bool swapped = false;
        if (!affine(A, d, c)) {
          if (affine(Bv, d, c))
            swapped = true;
          else if (rowAffine(A))
            d = 0;
          else if (rowAffine(Bv))
            d = 0, swapped = true;
          else {
            allKnown = false;
            continue;
          }
        }
        if (swapped) {
          std::swap(A, Bv);
          pr = ICmpInst::getSwappedPredicate(pr);
        }
        if (!avail(Bv) || pr == ICmpInst::ICMP_NE) {
          allKnown = false;
          continue;
        }
        rowX = rowX || rowOff;
        IRBuilder<> &XB = d == 0 && rowX ? RowB : PB;
        Value *c64 = sgn ? XB.CreateSExt(c, I64) : XB.CreateZExt(c, I64);
        if (rowOff)
          c64 = XB.CreateAdd(c64, rowOff);
        Value *b64 = sgn ? XB.CreateSExt(Bv, I64) : XB.CreateZExt(Bv, I64);
        Value *base = XB.CreateSub(b64, c64); // id + c <pred> b  <=>  id <pred> b - c, without wrap-around
        Value *one = ConstantInt::get(I64, 1);
        Value *l = zero64, *h = gs64[d];
        switch (ICmpInst::getUnsignedPredicate(pr)) {
        case ICmpInst::ICMP_ULT: h = base; break;
        case ICmpInst::ICMP_ULE: h = XB.CreateAdd(base, one); break;
        case ICmpInst::ICMP_UGT: l = XB.CreateAdd(base, one); break;
        case ICmpInst::ICMP_UGE: l = base; break;
        case ICmpInst::ICMP_EQ: l = base; h = XB.CreateAdd(base, one); break;
        default: allKnown = false; continue;
        }
        Value *limit = ConstantInt::get(I64, sgn ? (1ULL << 31) : (1ULL << 32));
        // group sizes are at most 1024 per dimension (launch validation), so a constant c decides here
        // (a row-affine V whose adds have the flags: every work-item of the row evaluates it, so it
        // does not wrap around)
        Value *exact = XB.CreateICmpSLE(
            XB.CreateAdd(c64, isa<ConstantInt>(c64) ? ConstantInt::get(I64, 1024) : gs64[d]), limit);
        if (rowOff && sgn) // B + c may also be below -2^31
          exact = XB.CreateAnd(exact, XB.CreateICmpSGE(c64, ConstantInt::get(I64, -(1LL << 31))));
        if (rowOff && rowNoWrap)
          exact = ConstantInt::getTrue(C);
        l = XB.CreateBinaryIntrinsic(Intrinsic::smin, XB.CreateBinaryIntrinsic(Intrinsic::smax, l, zero64), gs64[d]);
        h = XB.CreateBinaryIntrinsic(Intrinsic::smin, h, gs64[d]);
        lo[d] = XB.CreateBinaryIntrinsic(Intrinsic::smax, lo[d], XB.CreateSelect(exact, l, zero64));
        hi[d] = XB.CreateBinaryIntrinsic(Intrinsic::smin, hi[d], XB.CreateSelect(exact, h, gs64[d]));
        touched[d] = true;
        if (&XB == &RowB)
          rowExact = RowB.CreateAnd(rowExact, exact);
        else
          allExact = PB.CreateAnd(allExact, exact);
      }
      if (allKnown) {
        auto *K = dyn_cast<ConstantInt>(allExact);
        if (assumed && !(K && K->isOne())) {
          *assumed = PB.CreateAnd(*assumed, allExact);
          K = ConstantInt::getTrue(C);
        }
        if (!match(rowExact, m_One())) {
          allExact = K && K->isOne() ? rowExact : RowB.CreateAnd(allExact, rowExact);
          K = nullptr;
        }
        if (K && K->isOne()) {
          BranchInst::Create(T, BI->getIterator());
          BI->eraseFromParent();
        } else {
          IRBuilder<> GB(BI);
          Value *cond = BI->getCondition();
          BI->setCondition(want ? GB.CreateOr(allExact, cond) : GB.CreateAnd(GB.CreateNot(allExact), cond));
        }
      }
      cur = T->getSinglePredecessor() == cur ? T : nullptr;
    }
    for (int d = 0; d < 3; ++d) {
      IRBuilder<> &DB = d == 0 && rowX ? RowB : PB;
      if (run[d].dim >= 0) {
        addRunLoop(ids[d], inDim[d], from[d], lo[d], DB.CreateBinaryIntrinsic(Intrinsic::smax, hi[d], lo[d]), run[d], DB);
        if (run[d].bit && match(run[d].exact, m_One()))
          rewriteDisjointBit(ids[d], run[d].bit);
        continue;
      }
      if (!touched[d])
        continue;
      ids[d]->setIncomingValueForBlock(from[d], DB.CreateTrunc(lo[d], I32));
      // an empty range has hi <= lo; never below 0, which would read as a huge unsigned bound
      inDim[d]->setOperand(1, DB.CreateTrunc(DB.CreateBinaryIntrinsic(Intrinsic::smax, hi[d], lo[d]), I32));
    }
  }

  // Does F read or write a global variable that is not constant (device globals, not __gpu_local)?
  static bool usesMutableGlobals(Function *F) {
    std::set<const Value *> seen;
    std::function<bool(const Value *)> walk = [&](const Value *V) -> bool {
      if (auto *G = dyn_cast<GlobalVariable>(V))
        return !G->isConstant() && G->getAddressSpace() != 3;
      auto *CE = dyn_cast<ConstantExpr>(V);
      if (!CE || !seen.insert(CE).second)
        return false;
      for (const Value *Op : CE->operands())
        if (walk(Op))
          return true;
      return false;
    };
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        for (Value *Op : I.operands())
          if (walk(Op))
            return true;
    return false;
  }

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
  std::set<BasicBlock *> interchangeLoops(Function *F, const std::set<Instruction *> &divTerm, Function *BM, Function *EM,
                        std::map<BasicBlock *, std::set<BasicBlock *>> &reach,
                        const std::function<void()> &computeReach, const std::function<bool(BasicBlock *)> &isSync) {
    std::set<BasicBlock *> underDivergence;
    auto stillUniform = [&]() {
      computeReach();
      underDivergence.clear();
      std::unique_ptr<PostDominatorTree> PDT;
      for (BasicBlock &D : *F) {
        if (isSync(&D) || !divTerm.count(D.getTerminator()) || reach[&D].size() <= 1)
          continue;
        if (!PDT)
          PDT = std::make_unique<PostDominatorTree>(*F);
        DomTreeNode *N = PDT->getNode(&D);
        BasicBlock *P = (N && N->getIDom()) ? N->getIDom()->getBlock() : nullptr;
        if (!P)
          return false;
        std::vector<BasicBlock *> wl(succ_begin(&D), succ_end(&D));
        std::set<BasicBlock *> seen;
        while (!wl.empty()) {
          BasicBlock *Xb = wl.back();
          wl.pop_back();
          if (Xb == P || !seen.insert(Xb).second)
            continue;
          if (isSync(Xb))
            return false;
          underDivergence.insert(Xb);
          for (BasicBlock *Su : successors(Xb))
            wl.push_back(Su);
        }
      }
      return true;
    };
    std::vector<BasicBlock *> headers;
    {
      DominatorTree DT(*F);
      LoopInfo LI(DT);
      AssumptionCache AC(*F);
      TargetLibraryInfoImpl TLII(M.getTargetTriple());
      TargetLibraryInfo TLI(TLII);
      ScalarEvolution SE(*F, TLI, AC, DT, LI);
      auto qualifies = [&](Loop *L) {
        unsigned body = 0;
        for (BasicBlock *BB : L->blocks()) {
          if (succ_empty(BB))
            return false;
          for (Instruction &I : *BB) {
            if (auto *CI = dyn_cast<CallInst>(&I))
              if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
                return false;
            if (!isa<PHINode>(&I) && !I.isTerminator() && !isa<DbgInfoIntrinsic>(&I))
              ++body;
          }
        }
        SmallVector<BasicBlock *, 4> exiting;
        L->getExitingBlocks(exiting);
        if (exiting.empty())
          return false;
        for (BasicBlock *EB : exiting)
          if (divTerm.count(EB->getTerminator()))
            return false;
        unsigned trips = SE.getSmallConstantTripCount(L);
        return body >= kInterchangeMinBody && (trips == 0 || trips > kInterchangeMaxUnrolled);
      };
      // innermost first: a loop is a candidate when none of its inner loops is
      std::function<bool(Loop *)> visit = [&](Loop *L) {
        bool inner = false;
        for (Loop *S : *L)
          inner = visit(S) || inner;
        if (inner || !qualifies(L))
          return inner;
        headers.push_back(L->getHeader());
        return true;
      };
      for (Loop *L : LI)
        visit(L);
    }
    for (BasicBlock *H : headers) {
      std::vector<BasicBlock *> preds;
      for (BasicBlock *P : predecessors(H))
        if (std::find(preds.begin(), preds.end(), P) == preds.end())
          preds.push_back(P);
      std::vector<std::pair<BasicBlock *, BasicBlock *>> added; // (predecessor, barrier block)
      for (BasicBlock *P : preds) {
        BasicBlock *N = BasicBlock::Create(C, "cbs.lbar", F, H);
        IRBuilder<> B(N);
        B.CreateCall(barrierMarker());
        B.CreateBr(H);
        P->getTerminator()->replaceSuccessorWith(H, N);
        H->replacePhiUsesWith(P, N);
        added.push_back({P, N});
      }
      if (stillUniform())
        continue;
      for (auto &[P, N] : added) {
        P->getTerminator()->replaceSuccessorWith(N, H);
        H->replacePhiUsesWith(N, P);
        N->eraseFromParent();
      }
    }
    stillUniform(); // the reach sets of the final CFG
    return underDivergence;
  }

  // Demotion slots are arrays of their own in scratch, reached only through the demotion's loads and
  // stores: give each one an alias scope, so that the slot accesses of a work-item loop do not keep
  // LLVM from hoisting a uniform load of shared or global memory out of it (n-body's `tile[j]`), nor
  // from vectorising next to them. Every other memory access of F is marked noalias with all of them.
  void scopeSlots(Function *F, const std::vector<AllocaInst *> &slots) {
    MDBuilder MDB(C);
    MDNode *dom = MDB.createAnonymousAliasScopeDomain("cbs.slots");
    std::map<Value *, MDNode *> scopeOf;
    SmallVector<Metadata *, 32> all;
    for (AllocaInst *A : slots) {
      bool onlyLoadStore = all_of(A->uses(), [&](Use &U) {
        if (auto *Ld = dyn_cast<LoadInst>(U.getUser()))
          return !Ld->isVolatile();
        auto *St = dyn_cast<StoreInst>(U.getUser());
        return St && !St->isVolatile() && U.getOperandNo() == StoreInst::getPointerOperandIndex();
      });
      if (!onlyLoadStore || scopeOf.count(A))
        continue;
      MDNode *S = MDB.createAnonymousAliasScope(dom);
      scopeOf[A] = S;
      all.push_back(S);
    }
    if (all.empty())
      return;
    MDNode *allList = MDNode::get(C, all);
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        if (!I.mayReadOrWriteMemory() || isa<AllocaInst>(&I))
          continue;
        Value *P = nullptr;
        if (auto *Ld = dyn_cast<LoadInst>(&I))
          P = Ld->getPointerOperand();
        else if (auto *St = dyn_cast<StoreInst>(&I))
          P = St->getPointerOperand();
        auto it = P ? scopeOf.find(P) : scopeOf.end();
        if (it == scopeOf.end()) {
          I.setMetadata(LLVMContext::MD_noalias, MDNode::concatenate(I.getMetadata(LLVMContext::MD_noalias), allList));
          continue;
        }
        SmallVector<Metadata *, 32> others;
        for (Metadata *S : all)
          if (S != it->second)
            others.push_back(S);
        I.setMetadata(LLVMContext::MD_alias_scope, MDNode::get(C, {it->second}));
        I.setMetadata(LLVMContext::MD_noalias, MDNode::get(C, others));
      }
  }

  // A per-work-item value I that leaves a loop and is also what a demoted header PHI receives on its
  // back edges (an accumulator: `store I, slotP` in each latch predecessor of the header H, and I read
  // after the loop) would be stored twice per trip, to P's slot and to its own. When H dominates I's
  // block and every predecessor of H goes only to H, P's slot holds I from I's definition until the
  // next trip redefines it (every path from H to a use of I passes I's definition), so I is stored
  // there once, at its definition, and its uses read that slot. Returns false (nothing changed) where
  // this does not apply; phiSlot: P's slot -> H, for the per-work-item PHI slots.
  bool shareHeaderSlot(Instruction *I, const std::map<AllocaInst *, BasicBlock *> &phiSlot, DominatorTree &DT) {
    for (User *U : I->users()) {
      auto *St = dyn_cast<StoreInst>(U);
      if (!St || St->getValueOperand() != I)
        continue;
      auto *A = dyn_cast<AllocaInst>(St->getPointerOperand());
      auto it = A ? phiSlot.find(A) : phiSlot.end();
      if (it == phiSlot.end())
        continue;
      BasicBlock *H = it->second;
      if (!DT.dominates(H, I->getParent()))
        continue;
      std::set<BasicBlock *> preds(pred_begin(H), pred_end(H));
      bool ok = all_of(preds, [&](BasicBlock *P) { return P->getSingleSuccessor() == H; });
      std::vector<StoreInst *> latchStores;
      std::vector<Use *> rest;
      for (Use &V : I->uses()) {
        auto *S2 = dyn_cast<StoreInst>(V.getUser());
        if (S2 && S2->getValueOperand() == I && S2->getPointerOperand() == A) {
          latchStores.push_back(S2);
          continue;
        }
        auto *UI = cast<Instruction>(V.getUser());
        BasicBlock *at = isa<PHINode>(UI) ? cast<PHINode>(UI)->getIncomingBlock(V) : UI->getParent();
        // in a predecessor of H, another value may already have been stored to the slot
        if (preds.count(at) || (at == I->getParent() && isa<PHINode>(UI)))
          ok = false;
        rest.push_back(&V);
      }
      if (!ok)
        continue;
      for (StoreInst *S2 : latchStores)
        S2->eraseFromParent();
      BasicBlock::iterator pt = isa<PHINode>(I) ? I->getParent()->getFirstInsertionPt() : std::next(I->getIterator());
      new StoreInst(I, A, pt);
      for (Use *V : rest) {
        auto *UI = cast<Instruction>(V->getUser());
        Instruction *pos = isa<PHINode>(UI) ? cast<PHINode>(UI)->getIncomingBlock(*V)->getTerminator() : UI;
        V->set(new LoadInst(I->getType(), A, I->getName() + ".acc", pos->getIterator()));
      }
      return true;
    }
    return false;
  }

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
    // step 5 (cbsRegionEntries): the original blocks, the region each barrier block resumes at, the
    // region entries, the new entry block NE
    std::vector<BasicBlock *> origBlocks;
    std::map<BasicBlock *, int> barrierId;
    std::vector<BasicBlock *> regionEntry;
    BasicBlock *NE = nullptr;
    // step 5 (cbsScheduler): the group prologue's values and the scheduler's blocks
    Value *scratch = nullptr, *nwi64 = nullptr, *xchg = nullptr, *resume = nullptr, *uniV = nullptr;
    std::vector<Value *> uniPtr; // per alloca: its shared slot in scratch (uniform slots), else null
    AllocaInst *next = nullptr;
    BasicBlock *sched = nullptr, *done = nullptr, *scanStart = nullptr;
    SwitchInst *SW = nullptr;

    bool isBarrierBlk(BasicBlock *BB) const {
      auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
      return CI && BM && CI->getCalledFunction() == BM;
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
    MDNode *AG = nullptr;                          // the x loop's access group
    SmallVector<BasicBlock *, 32> clones;          // cbsCloneRegion: the cloned blocks, in `set` order
    std::map<BasicBlock *, BasicBlock *> origOf;   // clone -> original
  };

  static bool firstCallTo(BasicBlock *BB, Function *Fn) {
    auto *CI = dyn_cast<CallInst>(&*BB->getFirstNonPHIIt());
    return CI && CI->getCalledFunction() == Fn && Fn;
  }

  // Continuation-based synchronisation. F = K.body with barrier/exit markers; sets scratchPerWi to
  // the scratch bytes each work-item needs. The steps below run in order on one CbsState.
  bool buildCbs(Function *F, uint64_t &scratchPerWi) {
    CbsState st;
    st.F = F;
    st.o = F->arg_size() - E_COUNT;
    st.BM = M.getFunction("__ol_rs.barrier");
    st.EM = M.getFunction("__ol_rs.exit");
    removeUnreachableBlocks(*F);
    if (!cbsCheckAllocas(st))
      return false;
    st.entry = &F->getEntryBlock();
    cbsDivergence(st);
    cbsIsolateMarkers(st);
    cbsUniformBarriers(st);
    cbsDemotePhis(st);
    cbsFindHoistable(st);
    cbsDemoteLiveAcross(st);
    scopeSlots(F, st.demoted);
    cbsLayout(st);
    scratchPerWi = st.S + 12;
    cbsRegionEntries(st);
    IRBuilder<> B(st.NE);
    cbsScheduler(st, B);
    for (size_t k = 0; k < st.regionEntry.size(); ++k)
      cbsRegion(st, B, k);
    return cbsFinish(st);
  }

  // Step 1 (takes F; gives false with an error if it cannot be lowered): dynamic allocas are not supported.
  bool cbsCheckAllocas(CbsState &st) {
    for (BasicBlock &BB : *st.F)
      for (Instruction &I : BB)
        if (auto *AI = dyn_cast<AllocaInst>(&I))
          if (!AI->isStaticAlloca() || !AI->getAllocatedType()->isSized())
            return fail("dynamic alloca in a kernel with barriers is not supported");
    return true;
  }

  // Step 1 (takes F; gives st.div, st.divTerm): the divergent values, and the terminators whose
  // successor choice may differ between work-items (taken before PHI demotion, which replaces i1 PHI
  // conditions by loads the analysis has not seen).
  void cbsDivergence(CbsState &st) {
    Function *F = st.F;
    st.div = divergentValues(F);
    auto &div = st.div;
    auto &divTerm = st.divTerm;
    for (BasicBlock &BB : *F) {
      Instruction *T = BB.getTerminator();
      if (auto *BI = dyn_cast<BranchInst>(T)) {
        if (BI->isConditional() && div.count(BI->getCondition()))
          divTerm.insert(T);
      } else if (auto *SI = dyn_cast<SwitchInst>(T)) {
        if (div.count(SI->getCondition()))
          divTerm.insert(T);
      } else if (!isa<ReturnInst>(T) && !isa<UnreachableInst>(T)) {
        divTerm.insert(T);
      }
    }
  }

  // Step 2 (takes F; changes its blocks): isolate markers into their own blocks: a barrier is alone in
  // its block (which then has a single successor), an exit marker starts its block.
  void cbsIsolateMarkers(CbsState &st) {
    Function *F = st.F, *BM = st.BM, *EM = st.EM;
    std::vector<CallInst *> marks;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CI = dyn_cast<CallInst>(&I))
          if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
            marks.push_back(CI);
    for (CallInst *CI : marks) {
      BasicBlock *BB = CI->getParent();
      if (&*BB->getFirstNonPHIIt() != CI || BB == &F->getEntryBlock() || isa<PHINode>(BB->front()))
        BB = BB->splitBasicBlock(CI->getIterator(), "cbs.mark");
      if (CI->getCalledFunction() == BM)
        BB->splitBasicBlock(std::next(CI->getIterator()), "cbs.after");
    }
  }

  // st.reach[B]: the barrier blocks (nullptr = exit) reachable from B without crossing a barrier.
  void cbsComputeReach(CbsState &st) {
    auto &reach = st.reach;
    reach.clear();
    for (bool changed = true; changed;) {
      changed = false;
      for (BasicBlock &BB : *st.F) {
        std::set<BasicBlock *> r;
        if (st.isBarrierBlk(&BB))
          r.insert(&BB);
        else if (st.isExitBlk(&BB))
          r.insert(nullptr);
        else
          for (BasicBlock *S : successors(&BB)) {
            auto it = reach.find(S);
            if (it != reach.end())
              r.insert(it->second.begin(), it->second.end());
          }
        std::set<BasicBlock *> &cur = reach[&BB];
        if (r != cur) {
          cur = std::move(r);
          changed = true;
        }
      }
    }
  }

  // Step 2b (takes st.divTerm; gives st.uniform, st.reach; may add barriers): uniform barriers. When
  // every branch whose direction may differ between work-items leads (without crossing a barrier) to
  // a single barrier or exit, all work-items of a group reach the same barriers in the same order.
  // Then no per-work-item resume state is needed (see step 5), and every uniform branch that chooses
  // between different barriers/exits gets an implicit barrier on each out-edge, so the choice is made
  // once per group and each region starts at its own code (where a guard on the work-item id can
  // narrow the work-item loop).
  void cbsUniformBarriers(CbsState &st) {
    Function *F = st.F, *BM = st.BM, *EM = st.EM;
    auto &divTerm = st.divTerm;
    auto &reach = st.reach;
    bool &uniform = st.uniform;
    auto isBarrierBlk = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
    auto isExitBlk = [&](BasicBlock *BB) { return st.isExitBlk(BB); };
    auto computeReach = [&]() { cbsComputeReach(st); };
    computeReach();
    uniform = true;
    for (BasicBlock &BB : *F)
      if (!isBarrierBlk(&BB) && !isExitBlk(&BB) && divTerm.count(BB.getTerminator()) && reach[&BB].size() > 1)
        uniform = false;
    std::set<BasicBlock *> underDivergence;
    if (uniform)
      underDivergence = interchangeLoops(F, divTerm, BM, EM, reach, computeReach,
                                         [&](BasicBlock *BB) { return isBarrierBlk(BB) || isExitBlk(BB); });
    if (uniform) {
      std::vector<BasicBlock *> blks;
      for (BasicBlock &BB : *F)
        blks.push_back(&BB);
      for (BasicBlock *Xb : blks) {
        Instruction *T = Xb->getTerminator();
        if (isBarrierBlk(Xb) || T->getNumSuccessors() < 2 || reach[Xb].size() <= 1 || divTerm.count(T) ||
            underDivergence.count(Xb))
          continue;
        std::map<BasicBlock *, unsigned> edges;
        for (unsigned i = 0; i < T->getNumSuccessors(); ++i)
          ++edges[T->getSuccessor(i)];
        for (unsigned i = 0; i < T->getNumSuccessors(); ++i) {
          BasicBlock *S = T->getSuccessor(i);
          if (isBarrierBlk(S) || edges[S] != 1)
            continue;
          BasicBlock *N = BasicBlock::Create(C, "cbs.ibar", F);
          IRBuilder<> B(N);
          B.CreateCall(barrierMarker());
          B.CreateBr(S);
          S->replacePhiUsesWith(Xb, N);
          T->setSuccessor(i, N);
        }
      }
      computeReach();
    }
  }

  // Step 2c (takes st.div; gives st.demoted, st.uniSlots, st.pow2Slots, st.phiSlot): PHIs are demoted
  // to slots (shared ones for group-invariant PHIs), except those of blocks inside regions: not a
  // region entry, not a barrier/exit block, all predecessors in every region that contains the block
  // (a loop without barriers inside a region keeps its counter and accumulators in registers, which
  // the vectoriser needs).
  void cbsDemotePhis(CbsState &st) {
    Function *F = st.F;
    BasicBlock &Entry = *st.entry;
    auto &div = st.div;
    auto isBarrierBlk = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
    auto isExitBlk = [&](BasicBlock *BB) { return st.isExitBlk(BB); };
    std::vector<BasicBlock *> rEntries = {&Entry};
    for (BasicBlock &BB : *F)
      if (isBarrierBlk(&BB) && BB.getSingleSuccessor())
        rEntries.push_back(BB.getSingleSuccessor());
    std::set<BasicBlock *> entrySet(rEntries.begin(), rEntries.end());
    std::vector<std::set<BasicBlock *>> rBlocks;
    for (BasicBlock *E0 : rEntries) {
      std::set<BasicBlock *> in;
      std::vector<BasicBlock *> wl = {E0};
      while (!wl.empty()) {
        BasicBlock *BB = wl.back();
        wl.pop_back();
        if (!in.insert(BB).second || isBarrierBlk(BB))
          continue;
        for (BasicBlock *Su : successors(BB))
          wl.push_back(Su);
      }
      rBlocks.push_back(std::move(in));
    }
    auto keepPhis = [&](BasicBlock *BB) {
      if (entrySet.count(BB) || isBarrierBlk(BB) || isExitBlk(BB))
        return false;
      for (auto &in : rBlocks) {
        if (!in.count(BB))
          continue;
        for (BasicBlock *P : predecessors(BB))
          if (!in.count(P) || isBarrierBlk(P))
            return false;
      }
      return true;
    };
    std::vector<PHINode *> phis;
    for (BasicBlock &BB : *F)
      if (!keepPhis(&BB))
        for (PHINode &P : BB.phis())
          phis.push_back(&P);
    std::set<PHINode *> p2; // proved before any demotion hides the induction
    for (PHINode *P : phis)
      if (!div.count(P) && P->getType()->isIntegerTy() && pow2OrZero(P))
        p2.insert(P);
    for (PHINode *P : phis) {
      bool uni = !div.count(P);
      bool isP2 = p2.count(P) != 0;
      BasicBlock::iterator pt = Entry.begin();
      while (isa<AllocaInst>(&*pt))
        ++pt;
      BasicBlock *H = P->getParent();
      AllocaInst *A = DemotePHIToStack(P, pt);
      if (A)
        st.demoted.push_back(A);
      if (uni && A)
        st.uniSlots.insert(A);
      else if (A)
        st.phiSlot[A] = H;
      if (isP2 && A)
        st.pow2Slots.insert(A);
    }
  }

  // Step 3, first part (takes the entry block; gives st.hoistable): the work-item-invariant
  // ("uniform") side-effect-free instructions of the entry block. They are not demoted: step 5 hoists
  // them to the group prologue, computed once per group.
  void cbsFindHoistable(CbsState &st) {
    unsigned o = st.o;
    auto &hoistable = st.hoistable;
    for (Instruction &I : *st.entry) {
      if (isa<AllocaInst>(&I) || isa<PHINode>(&I) || I.isTerminator() || isa<CallBase>(&I) ||
          I.mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(&I))
        continue;
      bool ok = true;
      for (Value *Op : I.operands()) {
        if (isa<Constant>(Op))
          continue;
        if (auto *A = dyn_cast<Argument>(Op)) {
          unsigned n = A->getArgNo();
          // (the scratch argument stands for the exchange area inside the regions, not in the prologue)
          if (n == o + E_LX || n == o + E_LY || n == o + E_LZ || n == o + E_LWI || n == o + E_SCRATCH)
            ok = false;
          continue;
        }
        if (auto *OI = dyn_cast<Instruction>(Op))
          if (hoistable.count(OI))
            continue;
        ok = false;
      }
      if (ok)
        hoistable.insert(&I);
    }
  }

  // Step 3 (takes st.hoistable, st.div, st.uniSlots, st.phiSlot; adds to st.demoted, st.uniSlots):
  // demote every value that crosses a block boundary (reg2mem) and is live across a barrier
  // (cbsLiveAcross), except the hoistable ones and those recomputed at their uses instead
  // (cbsRematerialise); a loop exit value may share its header PHI's slot (shareHeaderSlot).
  void cbsDemoteLiveAcross(CbsState &st) {
    BasicBlock::iterator allocaPt = st.entry->begin();
    while (isa<AllocaInst>(&*allocaPt))
      ++allocaPt;
    std::vector<Instruction *> keep = cbsRematerialise(st, cbsLiveAcross(st));
    DominatorTree DT(*st.F);
    for (Instruction *I : keep) {
      bool uni = !st.div.count(I);
      if (auto *LI = dyn_cast<LoadInst>(I))
        if (auto *A = dyn_cast<AllocaInst>(LI->getPointerOperand()))
          uni = st.uniSlots.count(A) != 0;
      if (!uni && shareHeaderSlot(I, st.phiSlot, DT))
        continue;
      AllocaInst *A = DemoteRegToStack(*I, false, allocaPt);
      if (A)
        st.demoted.push_back(A);
      if (uni && A)
        st.uniSlots.insert(A);
    }
  }

  // Step 3 (takes F, st.hoistable; gives the values live across a barrier). Regions: the blocks
  // reachable from the entry or from a barrier's successor without crossing another barrier. A value
  // needs scratch only if, in some region containing a use, its definition is not in that region or
  // does not dominate the use there (i.e. it is live across a barrier).
  std::vector<Instruction *> cbsLiveAcross(CbsState &st) {
    Function *F = st.F;
    BasicBlock &Entry = *st.entry;
    auto &hoistable = st.hoistable;
    std::vector<BasicBlock *> blocks;
    std::map<BasicBlock *, unsigned> idx;
    for (BasicBlock &BB : *F) {
      idx[&BB] = blocks.size();
      blocks.push_back(&BB);
    }
    unsigned nb = blocks.size();
    auto isBarrierBlock = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
    std::vector<BasicBlock *> entries = {&Entry};
    for (BasicBlock *BB : blocks)
      if (isBarrierBlock(BB) && BB->getSingleSuccessor())
        entries.push_back(BB->getSingleSuccessor());
    std::vector<std::vector<bool>> inR;                // [region][block]
    std::vector<std::vector<std::vector<bool>>> dom;   // [region][block][dominator]
    for (BasicBlock *E0 : entries) {
      std::vector<bool> in(nb, false);
      std::vector<BasicBlock *> wl = {E0};
      while (!wl.empty()) {
        BasicBlock *BB = wl.back();
        wl.pop_back();
        if (in[idx[BB]])
          continue;
        in[idx[BB]] = true;
        if (isBarrierBlock(BB))
          continue;
        for (BasicBlock *Su : successors(BB))
          wl.push_back(Su);
      }
      std::vector<std::vector<bool>> d(nb);
      for (unsigned b = 0; b < nb; ++b)
        if (in[b])
          d[b] = std::vector<bool>(nb, true);
      d[idx[E0]] = std::vector<bool>(nb, false);
      d[idx[E0]][idx[E0]] = true;
      for (bool changed = true; changed;) {
        changed = false;
        for (unsigned b = 0; b < nb; ++b) {
          if (!in[b] || blocks[b] == E0)
            continue;
          std::vector<bool> nd(nb, true);
          bool any = false;
          for (BasicBlock *P : predecessors(blocks[b])) {
            unsigned p = idx[P];
            if (!in[p] || isBarrierBlock(P))
              continue;
            any = true;
            for (unsigned x = 0; x < nb; ++x)
              nd[x] = nd[x] && d[p][x];
          }
          if (!any)
            nd.assign(nb, false);
          nd[b] = true;
          if (nd != d[b]) {
            d[b] = nd;
            changed = true;
          }
        }
      }
      inR.push_back(in);
      dom.push_back(d);
    }
    std::vector<Instruction *> work;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        if (isa<AllocaInst>(&I) || hoistable.count(&I) || I.getType()->isVoidTy())
          continue;
        unsigned D = idx[&BB];
        bool need = false;
        for (User *U : I.users()) {
          auto *UI = cast<Instruction>(U);
          // a (kept) PHI uses its incoming value at the end of the incoming block
          std::vector<BasicBlock *> at;
          if (auto *PN = dyn_cast<PHINode>(UI)) {
            for (unsigned i = 0; i < PN->getNumIncomingValues(); ++i)
              if (PN->getIncomingValue(i) == &I)
                at.push_back(PN->getIncomingBlock(i));
          } else {
            at.push_back(UI->getParent());
          }
          for (BasicBlock *UB : at) {
            unsigned Ub = idx[UB];
            for (unsigned k = 0; k < entries.size() && !need; ++k)
              if (inR[k][Ub] && (!inR[k][D] || !dom[k][Ub][D]))
                need = true;
          }
          if (need)
            break;
        }
        if (need)
          work.push_back(&I);
      }
    return work;
  }

  // Step 3 (takes the live-across values; gives those that must be kept in slots; adds the clones to
  // st.div). Cheap pure functions of the work-item ids, arguments and group-invariant entry values
  // (`&s[t]`, `t * 4 + base`) are recomputed next to each use in another block instead of being kept
  // per work-item in scratch: a per-item pointer reloaded from scratch makes every access through it a
  // gather/scatter, which AVX2 cannot vectorise.
  std::vector<Instruction *> cbsRematerialise(CbsState &st, const std::vector<Instruction *> &work) {
    auto &hoistable = st.hoistable;
    auto &uniSlots = st.uniSlots;
    auto &div = st.div;
    std::map<Instruction *, bool> rematMemo;
    std::function<bool(Instruction *, unsigned)> canRemat = [&](Instruction *I, unsigned depth) -> bool {
      if (depth > 0 && uniSlotLoad(I, uniSlots)) // checked per use below (slotUnchanged)
        return true;
      auto it = rematMemo.find(I);
      if (it != rematMemo.end())
        return it->second;
      bool ok = depth < 8 &&
                (isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<GetElementPtrInst>(I) || isa<CmpInst>(I) ||
                 isa<SelectInst>(I)) &&
                !I->mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(I);
      for (Value *Op : I->operands()) {
        if (!ok)
          break;
        if (isa<Constant>(Op) || isa<Argument>(Op))
          continue;
        auto *OI = dyn_cast<Instruction>(Op);
        ok = OI && (hoistable.count(OI) || canRemat(OI, depth + 1));
      }
      rematMemo[I] = ok;
      return ok;
    };
    std::function<Value *(Value *, Instruction *, std::map<Instruction *, Instruction *> &)> cloneAt =
        [&](Value *V, Instruction *pos, std::map<Instruction *, Instruction *> &m) -> Value * {
      auto *I = dyn_cast<Instruction>(V);
      if (!I || hoistable.count(I) || isa<AllocaInst>(I))
        return V;
      auto it = m.find(I);
      if (it != m.end())
        return it->second;
      Instruction *Cl = I->clone();
      for (unsigned i = 0; i < Cl->getNumOperands(); ++i)
        Cl->setOperand(i, cloneAt(Cl->getOperand(i), pos, m));
      Cl->insertBefore(pos->getIterator());
      if (div.count(I))
        div.insert(Cl);
      m[I] = Cl;
      return Cl;
    };
    std::vector<Instruction *> keep;
    for (Instruction *I : work) {
      if (!canRemat(I, 0)) {
        keep.push_back(I);
        continue;
      }
      // where a use is: before its user, or for a (kept) PHI at the end of the incoming block
      auto usePoint = [](Use &U) -> Instruction * {
        auto *UI = cast<Instruction>(U.getUser());
        if (auto *PN = dyn_cast<PHINode>(UI))
          return PN->getIncomingBlock(U)->getTerminator();
        return UI;
      };
      std::vector<Use *> far;
      for (Use &U : I->uses())
        if (usePoint(U)->getParent() != I->getParent())
          far.push_back(&U);
      // a shared slot read on the way must still hold the same value at every use
      std::vector<LoadInst *> slotLoads;
      std::function<void(Value *)> collect = [&](Value *V) {
        auto *VI = dyn_cast<Instruction>(V);
        if (!VI || hoistable.count(VI) || isa<AllocaInst>(VI))
          return;
        if (uniSlotLoad(VI, uniSlots))
          slotLoads.push_back(cast<LoadInst>(VI));
        else
          for (Value *Op : VI->operands())
            collect(Op);
      };
      collect(I);
      bool stable = true;
      for (Use *U : far)
        for (LoadInst *Ld : slotLoads)
          stable = stable && slotUnchanged(Ld, I->getParent(), usePoint(*U)->getParent());
      if (!stable) {
        keep.push_back(I);
        continue;
      }
      for (Use *U : far) {
        std::map<Instruction *, Instruction *> m;
        U->set(cloneAt(I, usePoint(*U), m));
      }
    }
    return keep;
  }

  // Step 4 (takes F's allocas; gives st.allocas, st.offs, st.sizes, st.S): the per-work-item layout
  // of all allocas in scratch.
  void cbsLayout(CbsState &st) {
    auto &allocas = st.allocas;
    auto &offs = st.offs;
    auto &sizes = st.sizes;
    uint64_t &S = st.S;
    for (BasicBlock &BB : *st.F)
      for (Instruction &I : BB)
        if (auto *AI = dyn_cast<AllocaInst>(&I))
          allocas.push_back(AI);
    S = 0;
    for (AllocaInst *AI : allocas) {
      uint64_t sz = AI->getAllocationSize(DL).value_or(TypeSize::getFixed(0)).getFixedValue();
      uint64_t al = std::min<uint64_t>(AI->getAlign().value(), 64);
      sz = (sz + al - 1) / al * al;
      if (sz == 0) sz = al;
      S = (S + al - 1) / al * al;
      offs.push_back(S);
      sizes.push_back(sz);
      S += sz;
    }
    S = (S + 7) / 8 * 8;
  }

  // Step 5: one work-item loop per region. A region starts at the kernel entry or right after a
  // barrier and runs to the next barriers/exits; its blocks are cloned into a loop over the
  // work-items. General case: the loop runs the work-items whose resume id is the region's, and a
  // scheduler picks the region of the first unfinished work-item. Uniform case (step 2b): every
  // work-item leaves a region through the same barrier, so the region records it in one group-level
  // `next` and the regions simply follow each other (barriers in loops become a loop around region
  // loops).
  //
  // cbsRegionEntries (takes st.uniform, st.allocas, st.hoistable; gives st.origBlocks, st.barrierId,
  // st.regionEntry, st.NE): numbers the regions (under uniform barriers, barriers that resume at the
  // same block share a region) and creates the new entry block NE holding the allocas and the
  // hoisted values.
  void cbsRegionEntries(CbsState &st) {
    Function *F = st.F, *BM = st.BM;
    bool uniform = st.uniform;
    BasicBlock *oldEntry = st.entry;
    auto &origBlocks = st.origBlocks;
    auto &barrierId = st.barrierId;
    auto &regionEntry = st.regionEntry;
    for (BasicBlock &BB : *F)
      origBlocks.push_back(&BB);
    regionEntry = {oldEntry};
    std::map<BasicBlock *, int> entryRegion = {{oldEntry, 0}};
    for (BasicBlock *BB : origBlocks)
      if (firstCallTo(BB, BM)) {
        BasicBlock *S = BB->getSingleSuccessor();
        auto it = entryRegion.find(S);
        if (uniform && it != entryRegion.end()) {
          barrierId[BB] = it->second;
          continue;
        }
        barrierId[BB] = (int)regionEntry.size();
        entryRegion[S] = (int)regionEntry.size();
        regionEntry.push_back(S);
      }
    BasicBlock *NE = BasicBlock::Create(C, "cbs.entry", F, oldEntry);
    st.NE = NE;
    for (AllocaInst *AI : st.allocas) {
      AI->removeFromParent();
      AI->insertInto(NE, NE->end());
    }
    std::vector<Instruction *> hoist;
    for (Instruction &I : *oldEntry)
      if (st.hoistable.count(&I))
        hoist.push_back(&I);
    for (Instruction *I : hoist) {
      I->removeFromParent();
      I->insertInto(NE, NE->end());
    }
  }

  // Step 5 (takes st.NE, st.uniform, the layout; gives the group prologue's values and the scheduler
  // blocks of CbsState, B left at the end of cbs.sched): the group prologue in NE (the exchange area,
  // the resume ids, the shared slots, `next`, `uni`) and the scheduler: cbs.sched switches on `next`
  // to the region's preload block (default: cbs.done, the return); a region's work-item loop ends at
  // cbs.scan, which under uniform barriers goes straight back to cbs.sched, otherwise scans the resume
  // ids first.
  void cbsScheduler(CbsState &st, IRBuilder<> &B) {
    Function *F = st.F;
    unsigned o = st.o;
    uint64_t S = st.S;
    bool uniform = st.uniform;
    auto &allocas = st.allocas;
    auto &offs = st.offs;
    auto &uniSlots = st.uniSlots;
    Value *scratch = X(o, F, E_SCRATCH);
    st.scratch = scratch;
    Value *nwi = nwiOf(B, F);
    Value *nwi64 = B.CreateZExt(nwi, I64);
    st.nwi64 = nwi64;
    st.xchg = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, S)), "cbs.xchg");
    Value *resume = nullptr;
    if (!uniform) {
      resume = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, S + 8)), "cbs.resume");
      B.CreateMemSet(resume, ConstantInt::get(I8, 0), B.CreateMul(nwi64, ConstantInt::get(I64, 4)), MaybeAlign(4));
    }
    st.resume = resume;
    std::vector<Value *> &uniPtr = st.uniPtr;
    uniPtr.assign(allocas.size(), nullptr);
    for (size_t j = 0; j < allocas.size(); ++j)
      if (uniSlots.count(allocas[j]))
        uniPtr[j] = B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, offs[j])), "cbs.uslot");
    AllocaInst *next = B.CreateAlloca(I32, nullptr, "cbs.next");
    st.next = next;
    B.CreateStore(ConstantInt::get(I32, 0), next);
    // General case, `uni`: every work-item waits at the region `next` (the common, convergent case).
    // Region loops test it (loop-invariant) before the per-item resume check, so O3's loop unswitching
    // can produce a check-free loop that the vectoriser can handle.
    AllocaInst *uni = B.CreateAlloca(I1Ty(), nullptr, "cbs.uni");
    B.CreateStore(ConstantInt::getTrue(C), uni);
    BasicBlock *sched = BasicBlock::Create(C, "cbs.sched", F);
    BasicBlock *done = BasicBlock::Create(C, "cbs.done", F);
    BasicBlock *scanStart = BasicBlock::Create(C, "cbs.scan", F);
    st.sched = sched;
    st.done = done;
    st.scanStart = scanStart;
    B.CreateBr(sched);
    B.SetInsertPoint(done);
    B.CreateRetVoid();
    B.SetInsertPoint(sched);
    st.uniV = B.CreateLoad(I1Ty(), uni, "uni");
    st.SW = B.CreateSwitch(B.CreateLoad(I32, next), done);
    if (uniform) {
      // after a region: straight to the next one
      B.SetInsertPoint(scanStart);
      B.CreateBr(sched);
    } else {
      // After a region: min/max of all resume ids (EXIT is the largest unsigned value). All exited ->
      // done; otherwise run the smallest pending region next; uniform iff every work-item waits there.
      BasicBlock *scanHead = BasicBlock::Create(C, "cbs.scan.head", F);
      BasicBlock *scanBody = BasicBlock::Create(C, "cbs.scan.body", F);
      BasicBlock *scanNext = BasicBlock::Create(C, "cbs.scan.next", F);
      BasicBlock *scanFound = BasicBlock::Create(C, "cbs.scan.found", F);
      B.SetInsertPoint(scanStart);
      B.CreateBr(scanHead);
      B.SetInsertPoint(scanHead);
      PHINode *si = B.CreatePHI(I32, 2, "scan.i");
      PHINode *mn = B.CreatePHI(I32, 2, "scan.min");
      PHINode *mx = B.CreatePHI(I32, 2, "scan.max");
      si->addIncoming(ConstantInt::get(I32, 0), scanStart);
      mn->addIncoming(ConstantInt::get(I32, RESUME_EXIT), scanStart);
      mx->addIncoming(ConstantInt::get(I32, 0), scanStart);
      B.CreateCondBr(B.CreateICmpULT(si, nwi), scanBody, scanFound);
      B.SetInsertPoint(scanBody);
      Value *sr = B.CreateLoad(I32, B.CreateGEP(I32, resume, B.CreateZExt(si, I64)));
      Value *mn2 = B.CreateSelect(B.CreateICmpULT(sr, mn), sr, mn);
      Value *mx2 = B.CreateSelect(B.CreateICmpUGT(sr, mx), sr, mx);
      si->addIncoming(B.CreateAdd(si, ConstantInt::get(I32, 1), "", true, true), scanBody);
      mn->addIncoming(mn2, scanBody);
      mx->addIncoming(mx2, scanBody);
      B.CreateBr(scanHead);
      B.SetInsertPoint(scanFound);
      B.CreateStore(mn, next);
      B.CreateStore(B.CreateICmpEQ(mn, mx), uni);
      B.CreateCondBr(B.CreateICmpEQ(mn, ConstantInt::get(I32, RESUME_EXIT)), done, scanNext);
      B.SetInsertPoint(scanNext);
      B.CreateBr(sched);
    }
  }

  // the id a work-item leaving through exit block `e` (a barrier block, or nullptr = exit) resumes at
  int cbsExitId(CbsState &st, BasicBlock *e) { return e ? st.barrierId[e] : RESUME_EXIT; }

  // Step 5, region k (takes CbsState as steps 1-5 left it, B; adds the region's blocks): its preload
  // block, its work-item loop nest (or a single run for a group-invariant region), its blocks cloned
  // into it, and its exits turned into a record of where the work-items resume.
  void cbsRegion(CbsState &st, IRBuilder<> &B, size_t k) {
    CbsRegion R;
    R.k = k;
    R.sfx = ".r" + std::to_string(k);
    R.set = cbsRegionBlocks(st, k);
    R.reach = &st.reach[st.regionEntry[k]];
    R.once = st.uniform && groupInvariant(R.set, st.div, st.divTerm, st.uniSlots, st.BM, st.EM);
    cbsRegionPrologue(st, B, R);
    cbsRegionLoops(st, B, R);
    cbsCloneRegion(st, R);
    cbsUsePreloads(st, R);
    cbsEnterRegion(st, B, R);
    cbsLeaveRegion(st, R);
    if (!runLoops.empty()) // what narrowToGuards made, once the region loop is closed
      versionShortRuns(st.F);
    cbsSplitEqualities(st, R);
    cbsUnswitchExit(st, R);
  }

  // Step 5, region, last (takes R's finished loop nest; gives a copy of it): under uniform barriers a
  // region with several exits leaves through the one a uniform branch chooses (a loop's latch inside
  // the region: `j + 8 == n` back to its barrier or on, the amdgcn n-body's loop unrolled by 8), and
  // every work-item records it in `next` and the shared slots. Inside the x loop that branch keeps
  // the loop from vectorising, and O3 unswitches it only when the body is small. So the first such
  // branch whose condition is available before the loops (hoistIfUniform) is decided once in Pre:
  // the nest is copied, the original takes the branch's true side, the copy its false side.
  void cbsUnswitchExit(CbsState &st, CbsRegion &R) {
    if (!st.uniform || R.once || R.reach->size() <= 1)
      return;
    std::set<BasicBlock *> exits;
    for (size_t c = 0; c < R.set.size(); ++c)
      if (st.barrierId.count(R.set[c]))
        exits.insert(R.clones[c]);
    auto avail = [&](Value *V) { // hoistIfUniform, also for the compare a latch tests
      auto *Cmp = dyn_cast<CmpInst>(V);
      if (!Cmp || Cmp->getParent() == R.Pre || Cmp->getParent() == st.NE)
        return hoistIfUniform(V, {R.Pre, st.NE}, R.Pre);
      if (!hoistIfUniform(Cmp->getOperand(0), {R.Pre, st.NE}, R.Pre) ||
          !hoistIfUniform(Cmp->getOperand(1), {R.Pre, st.NE}, R.Pre))
        return false;
      Cmp->moveBefore(R.Pre->getTerminator()->getIterator());
      return true;
    };
    BranchInst *Br = nullptr;
    for (BasicBlock *NB : R.clones) {
      auto *BI = dyn_cast<BranchInst>(NB->getTerminator());
      if (BI && BI->isConditional() && !isa<Constant>(BI->getCondition()) && BI->getSuccessor(0) != BI->getSuccessor(1) &&
          (exits.count(BI->getSuccessor(0)) || exits.count(BI->getSuccessor(1))) &&
          avail(BI->getCondition())) {
        Br = BI;
        break;
      }
    }
    auto *T = dyn_cast<BranchInst>(R.Pre->getTerminator());
    if (!Br || !T || T->isConditional() || T->getSuccessor(0) != R.Hz)
      return;
    // the nest: everything reachable from its z header up to the scheduler
    std::vector<BasicBlock *> nest;
    std::set<BasicBlock *> seen = {st.scanStart, st.sched};
    std::vector<BasicBlock *> work = {R.Hz};
    while (!work.empty()) {
      BasicBlock *BB = work.back();
      work.pop_back();
      if (!seen.insert(BB).second)
        continue;
      nest.push_back(BB);
      for (BasicBlock *Su : successors(BB))
        work.push_back(Su);
    }
    std::set<BasicBlock *> inNest(nest.begin(), nest.end());
    for (BasicBlock *BB : nest)
      for (Instruction &I : *BB)
        for (User *U : I.users())
          if (!inNest.count(cast<Instruction>(U)->getParent()))
            return; // (not expected: the regions share values through slots only)
    ValueToValueMapTy VM;
    SmallVector<BasicBlock *, 64> copy;
    for (BasicBlock *BB : nest) {
      BasicBlock *NB = CloneBasicBlock(BB, VM, ".f", st.F);
      VM[BB] = NB;
      copy.push_back(NB);
    }
    remapInstructionsInBlocks(copy, VM);
    for (BasicBlock *NB : copy) // each copied loop its own loop id
      if (MDNode *LID = NB->getTerminator()->getMetadata(LLVMContext::MD_loop)) {
        SmallVector<Metadata *, 4> ops = {nullptr};
        for (unsigned i = 1; i < LID->getNumOperands(); ++i)
          ops.push_back(LID->getOperand(i));
        MDNode *N = MDNode::getDistinct(C, ops);
        N->replaceOperandWith(0, N);
        NB->getTerminator()->setMetadata(LLVMContext::MD_loop, N);
      }
    Value *cond = Br->getCondition();
    auto decide = [&](BranchInst *B, unsigned keep) {
      BasicBlock *From = B->getParent(), *Drop = B->getSuccessor(1 - keep);
      Drop->removePredecessor(From);
      BranchInst::Create(B->getSuccessor(keep), B->getIterator());
      B->eraseFromParent();
    };
    decide(cast<BranchInst>(cast<BasicBlock>(VM[Br->getParent()])->getTerminator()), 1);
    decide(Br, 0);
    BranchInst::Create(R.Hz, cast<BasicBlock>(VM[R.Hz]), cond, T->getIterator());
    T->eraseFromParent();
  }

  // Step 5, region k (takes st.regionEntry, st.barrierId; gives its original blocks): the blocks
  // reachable from its entry without crossing a barrier block (included).
  std::vector<BasicBlock *> cbsRegionBlocks(CbsState &st, size_t k) {
    std::vector<BasicBlock *> set;
    std::set<BasicBlock *> seen;
    std::vector<BasicBlock *> work = {st.regionEntry[k]};
    while (!work.empty()) {
      BasicBlock *BB = work.back();
      work.pop_back();
      if (!seen.insert(BB).second)
        continue;
      set.push_back(BB);
      if (st.barrierId.count(BB))
        continue;
      for (BasicBlock *Su : successors(BB))
        work.push_back(Su);
    }
    return set;
  }

  // Step 5, region (takes R.k, R.reach; gives R.Pre, R.preVal, B at the end of Pre): the block the
  // scheduler enters the region at. It loads the shared slots' values (the region's loads that no
  // store can precede use them, cbsUsePreloads), and a region with one exit records it up front:
  // its loop may run no work-item at all (guards).
  void cbsRegionPrologue(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
    auto &allocas = st.allocas;
    auto &uniPtr = st.uniPtr;
    BasicBlock *Pre = BasicBlock::Create(C, "cbs.preload" + R.sfx, st.F);
    R.Pre = Pre;
    st.SW->addCase(cast<ConstantInt>(ConstantInt::get(I32, R.k)), Pre);
    B.SetInsertPoint(Pre);
    std::vector<Value *> &preVal = R.preVal;
    preVal.assign(allocas.size(), nullptr);
    for (size_t j = 0; j < allocas.size(); ++j)
      if (uniPtr[j]) {
        preVal[j] = B.CreateLoad(allocas[j]->getAllocatedType(), uniPtr[j], "pre");
        if (st.pow2Slots.count(allocas[j]))
          pow2Vals.insert(preVal[j]);
      }
    if (st.uniform && R.reach->size() == 1)
      B.CreateStore(ConstantInt::get(I32, cbsExitId(st, *R.reach->begin())), st.next);
  }

  // Step 5, region (takes R.Pre, R.once; gives R.VM's slot and id mappings, the loop nest's blocks and
  // ids in R, B at the end of the block the region's body is entered from): for a group-invariant
  // region, nothing (it runs once, as work-item 0); otherwise top-tested z, y, x loops over the
  // work-items, x innermost and marked parallel, each work-item's slots at its offset in scratch.
  void cbsRegionLoops(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
    Function *F = st.F;
    unsigned o = st.o;
    bool uniform = st.uniform;
    auto &allocas = st.allocas;
    auto &offs = st.offs;
    auto &sizes = st.sizes;
    auto &uniPtr = st.uniPtr;
    Value *scratch = st.scratch, *nwi64 = st.nwi64, *xchg = st.xchg, *resume = st.resume;
    const std::string &sfx = R.sfx;
    ValueToValueMapTy &VM = R.VM;
    BasicBlock *Pre = R.Pre;
    Value *gsx = X(o, F, E_GSX), *gsy = X(o, F, E_GSY), *gsz = X(o, F, E_GSZ);
    if (R.once) {
      // every instruction is group-invariant: run it once for the group (as work-item 0)
      Value *z0 = ConstantInt::get(I32, 0);
      for (size_t j = 0; j < allocas.size(); ++j)
        VM[allocas[j]] = uniPtr[j] ? uniPtr[j] : B.CreateGEP(I8, scratch, B.CreateMul(nwi64, ConstantInt::get(I64, offs[j])));
      VM[X(o, F, E_LX)] = z0;
      VM[X(o, F, E_LY)] = z0;
      VM[X(o, F, E_LZ)] = z0;
      VM[X(o, F, E_LWI)] = z0;
      VM[scratch] = xchg;
      return;
    }
    // z, y, x loops so that the local x id is the inner induction variable (affine: vectorisable)
    BasicBlock *&Hz = R.Hz, *&Hy = R.Hy, *&P = R.P, *&L = R.L;
    PHINode *&lx = R.lx, *&ly = R.ly, *&lz = R.lz;
    ICmpInst *&inX = R.inX, *&inY = R.inY, *&inZ = R.inZ;
    Hz = BasicBlock::Create(C, "cbs.hz" + sfx, F);
    Hy = BasicBlock::Create(C, "cbs.hy" + sfx, F);
    BasicBlock *H = BasicBlock::Create(C, "cbs.hx" + sfx, F);
    P = BasicBlock::Create(C, "cbs.pre" + sfx, F);
    L = BasicBlock::Create(C, "cbs.latch" + sfx, F);
    BasicBlock *Ly = BasicBlock::Create(C, "cbs.ly" + sfx, F);
    BasicBlock *Lz = BasicBlock::Create(C, "cbs.lz" + sfx, F);
    B.CreateBr(Hz);
    B.SetInsertPoint(Hz);
    lz = B.CreatePHI(I32, 2, "lz" + sfx);
    lz->addIncoming(ConstantInt::get(I32, 0), Pre);
    inZ = cast<ICmpInst>(B.CreateICmpULT(lz, gsz));
    B.CreateCondBr(inZ, Hy, st.scanStart);
    B.SetInsertPoint(Hy);
    ly = B.CreatePHI(I32, 2, "ly" + sfx);
    ly->addIncoming(ConstantInt::get(I32, 0), Hz);
    Value *rowBase = B.CreateMul(B.CreateAdd(B.CreateMul(lz, gsy), ly), gsx);
    inY = cast<ICmpInst>(B.CreateICmpULT(ly, gsy));
    B.CreateCondBr(inY, H, Lz);
    B.SetInsertPoint(H);
    lx = B.CreatePHI(I32, 2, "lx" + sfx);
    lx->addIncoming(ConstantInt::get(I32, 0), Hy);
    inX = cast<ICmpInst>(B.CreateICmpULT(lx, gsx));
    B.CreateCondBr(inX, P, Ly);
    B.SetInsertPoint(L);
    lx->addIncoming(B.CreateAdd(lx, ConstantInt::get(I32, 1), "", true, true), L);
    R.AG = newAccessGroup();
    markParallelLoop(B.CreateBr(H), R.AG, /*noInterleave=*/true); // keeps barrier kernels' code small
    B.SetInsertPoint(Ly);
    ly->addIncoming(B.CreateAdd(ly, ConstantInt::get(I32, 1), "", true, true), Ly);
    B.CreateBr(Hy);
    B.SetInsertPoint(Lz);
    lz->addIncoming(B.CreateAdd(lz, ConstantInt::get(I32, 1), "", true, true), Lz);
    B.CreateBr(Hz);
    B.SetInsertPoint(P);
    Value *wi = B.CreateAdd(rowBase, lx, "wi" + sfx, true, true);
    Value *wi64 = B.CreateZExt(wi, I64);
    if (!uniform)
      R.myResume = B.CreateGEP(I32, resume, wi64);
    for (size_t j = 0; j < allocas.size(); ++j) {
      if (uniPtr[j]) {
        VM[allocas[j]] = uniPtr[j];
        continue;
      }
      Value *base = B.CreateMul(nwi64, ConstantInt::get(I64, offs[j]));
      VM[allocas[j]] = B.CreateGEP(I8, scratch, B.CreateAdd(base, B.CreateMul(wi64, ConstantInt::get(I64, sizes[j]))));
    }
    VM[X(o, F, E_LX)] = lx;
    VM[X(o, F, E_LY)] = ly;
    VM[X(o, F, E_LZ)] = lz;
    VM[X(o, F, E_LWI)] = wi;
    VM[scratch] = xchg;
  }

  // Step 5, region (takes R.set, R.VM; gives R.clones, R.origOf, the clones' mappings in R.VM): the
  // region's blocks cloned, their operands remapped to the loop's ids and slots.
  void cbsCloneRegion(CbsState &st, CbsRegion &R) {
    for (BasicBlock *BB : R.set) {
      BasicBlock *NB = CloneBasicBlock(BB, R.VM, R.sfx, st.F);
      R.VM[BB] = NB;
      R.origOf[NB] = BB;
      R.clones.push_back(NB);
    }
    remapInstructionsInBlocks(R.clones, R.VM);
  }

  // Step 5, region (takes R.set, R.VM, R.preVal; changes the clones): loads of a shared (uniform) slot
  // that no store of this region can precede read the value the slot had when the region started:
  // use the preloaded copy (other work-items may already have stored the next value).
  void cbsUsePreloads(CbsState &st, CbsRegion &R) {
    auto &allocas = st.allocas;
    auto &uniPtr = st.uniPtr;
    auto &barrierId = st.barrierId;
    auto &set = R.set;
    auto &preVal = R.preVal;
    ValueToValueMapTy &VM = R.VM;
    std::set<BasicBlock *> inSet(set.begin(), set.end());
    std::map<AllocaInst *, size_t> slotIdx;
    for (size_t j = 0; j < allocas.size(); ++j)
      if (uniPtr[j])
        slotIdx[allocas[j]] = j;
    std::map<size_t, std::set<BasicBlock *>> reached; // blocks reachable after a store
    for (BasicBlock *BB : set)
      for (Instruction &I : *BB)
        if (auto *St = dyn_cast<StoreInst>(&I))
          if (auto *A = dyn_cast<AllocaInst>(St->getPointerOperand()))
            if (slotIdx.count(A)) {
              size_t j = slotIdx[A];
              if (barrierId.count(BB))
                continue;
              std::vector<BasicBlock *> wl(succ_begin(BB), succ_end(BB));
              while (!wl.empty()) {
                BasicBlock *Xb = wl.back();
                wl.pop_back();
                if (!inSet.count(Xb) || !reached[j].insert(Xb).second || barrierId.count(Xb))
                  continue;
                for (BasicBlock *Su : successors(Xb))
                  wl.push_back(Su);
              }
            }
    for (BasicBlock *BB : set) {
      std::set<size_t> storedHere;
      for (Instruction &I : *BB) {
        if (auto *St = dyn_cast<StoreInst>(&I))
          if (auto *A = dyn_cast<AllocaInst>(St->getPointerOperand()))
            if (slotIdx.count(A))
              storedHere.insert(slotIdx[A]);
        auto *Ld = dyn_cast<LoadInst>(&I);
        if (!Ld)
          continue;
        auto *A = dyn_cast<AllocaInst>(Ld->getPointerOperand());
        if (!A || !slotIdx.count(A))
          continue;
        size_t j = slotIdx[A];
        if (storedHere.count(j) || reached[j].count(BB))
          continue;
        auto *Lc = cast<Instruction>(VM[Ld]);
        Lc->replaceAllUsesWith(preVal[j]);
        Lc->eraseFromParent();
      }
    }
  }

  // Step 5, region (takes R; changes the clones, Pre; B's block gets its branch into the region):
  // the clones join the x loop's access group; under uniform barriers the region's one-time slot
  // stores move to Pre (hoistSlotStores), the loop is narrowed to the ids that pass a guard
  // (narrowToGuards) and conditional shared stores become selects (speculateSharedStores, with
  // flattenDecision); in the general case a work-item runs the region only if its resume id is the
  // region's. (cbsRegion then gives short run loops their copies, versionShortRuns.)
  void cbsEnterRegion(CbsState &st, IRBuilder<> &B, CbsRegion &R) {
    Function *F = st.F, *EM = st.EM;
    unsigned o = st.o;
    bool uniform = st.uniform, once = R.once;
    auto &barrierId = st.barrierId;
    auto &uniPtr = st.uniPtr;
    auto &origOf = R.origOf;
    auto &clones = R.clones;
    MDNode *AG = R.AG;
    BasicBlock *Pre = R.Pre, *NE = st.NE;
    if (AG)
      for (BasicBlock *NB : clones)
        for (Instruction &I : *NB)
          addAccessGroup(I, AG);
    BasicBlock *RE = cast<BasicBlock>(R.VM[st.regionEntry[R.k]]);
    if (uniform && !once)
      hoistSlotStores(RE, Pre, NE, std::set<Value *>(uniPtr.begin(), uniPtr.end()), clones);
    auto leavesRegion = [&](BasicBlock *Sc) {
      auto it = origOf.find(Sc);
      if (it == origOf.end())
        return false;
      BasicBlock *Ob = it->second;
      return barrierId.count(Ob) || firstCallTo(Ob, EM) || isa<ReturnInst>(&*Sc->getFirstNonPHIIt());
    };
    runLoops.clear(); // (what narrowToGuards adds is versioned once the region loop is closed)
    if (uniform && !once && R.reach->size() == 1)
      narrowToGuards(
          RE, leavesRegion, {Pre, NE}, Pre, {R.lx, R.ly, R.lz}, {R.inX, R.inY, R.inZ},
          {X(o, F, E_GSX), X(o, F, E_GSY), X(o, F, E_GSZ)}, {R.Hy, R.Hz, Pre});
    if (once) {
      B.CreateBr(RE);
    } else if (uniform) {
      B.CreateBr(RE);
      speculateSharedStores(F, clones, AG, leavesRegion); // (needs the region reachable)
    } else {
      // Convergent case (every work-item waits here): no per-item check. Only worth the duplicated
      // loop at O3 with large groups; the check is cheap and if-converted by the vectoriser anyway.
      BasicBlock *Chk = BasicBlock::Create(C, "cbs.check" + R.sfx, F);
      if (kUniformFastPath)
        B.CreateCondBr(st.uniV, RE, Chk);
      else
        B.CreateBr(Chk);
      B.SetInsertPoint(Chk);
      LoadInst *rl = B.CreateLoad(I32, R.myResume);
      addAccessGroup(*rl, AG);
      B.CreateCondBr(B.CreateICmpEQ(rl, ConstantInt::get(I32, R.k)), RE, R.L);
    }
  }

  // Step 5, region (takes R; changes the clones): where a work-item goes after leaving the region
  // (the scheduler for a region run once, else the x loop's latch), and how it records its resume
  // point: in `next` under uniform barriers (unless Pre did already), else in its resume id.
  void cbsLeaveRegion(CbsState &st, CbsRegion &R) {
    bool uniform = st.uniform;
    auto &barrierId = st.barrierId;
    auto &set = R.set;
    auto &clones = R.clones;
    const std::set<BasicBlock *> &regionReach = *R.reach;
    BasicBlock *after = R.once ? st.sched : R.L;
    auto leave = [&](BasicBlock *NB, int id) {
      IRBuilder<> B2(NB);
      if (uniform) {
        if (regionReach.size() != 1)
          B2.CreateStore(ConstantInt::get(I32, id), st.next);
      } else {
        addAccessGroup(*B2.CreateStore(ConstantInt::get(I32, id), R.myResume), R.AG);
      }
      B2.CreateBr(after);
    };
    for (size_t c = 0; c < set.size(); ++c) {
      BasicBlock *NB = clones[c];
      if (barrierId.count(set[c])) {
        NB->getTerminator()->eraseFromParent();
        NB->front().eraseFromParent();
        leave(NB, barrierId[set[c]]);
      } else if (firstCallTo(NB, st.EM)) {
        while (!NB->empty())
          NB->back().eraseFromParent();
        leave(NB, RESUME_EXIT);
      } else if (isa<ReturnInst>(NB->getTerminator())) {
        NB->getTerminator()->eraseFromParent();
        leave(NB, RESUME_EXIT);
      }
    }
  }

  // Step 5, region (takes R's loop nest, with its exits at the latch, cbsLeaveRegion): under uniform
  // barriers, the x loop is cut into segments at equality guards (splitAtEqualities).
  void cbsSplitEqualities(CbsState &st, CbsRegion &R) {
    if (st.uniform && !R.once)
      splitAtEqualities(R.P, R.L, {R.Pre, st.NE}, R.Pre, R.lx, R.inX, R.Hy);
  }

  // Step 5, last (takes st.origBlocks, st.allocas; gives false with an error if a marker is left):
  // the original body, now unreachable, and its allocas removed.
  bool cbsFinish(CbsState &st) {
    Function *F = st.F, *BM = st.BM, *EM = st.EM;
    for (BasicBlock *BB : st.origBlocks)
      BB->dropAllReferences();
    for (BasicBlock *BB : st.origBlocks)
      BB->eraseFromParent();
    for (AllocaInst *AI : st.allocas) {
      AI->replaceAllUsesWith(PoisonValue::get(AI->getType()));
      AI->eraseFromParent();
    }
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CI = dyn_cast<CallInst>(&I))
          if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
            return fail("internal: unsplit barrier marker");
    removeUnreachableBlocks(*F);
    return true;
  }

  bool lowerKernel(Function *K, KInfo &ki) {
    pow2Vals.clear(); // values of the previous kernel, possibly erased
    ki.name = K->getName().str();
    ki.wgName = "__ol_wg." + ki.name;
    FunctionType *FT = K->getFunctionType();
    if (!FT->getReturnType()->isVoidTy())
      return fail("kernel '" + ki.name + "' does not return void");
    if (FT->isVarArg())
      return fail("kernel '" + ki.name + "' is variadic");
    // params layout (host C ABI, natural alignment)
    for (unsigned i = 0; i < FT->getNumParams(); ++i) {
      Type *T = FT->getParamType(i);
      uint64_t sz, al;
      Type *BT = K->getParamByValType(i);
      if (!BT)
        BT = K->getParamByRefType(i);
      if (BT) {
        sz = DL.getTypeAllocSize(BT);
        al = DL.getABITypeAlign(BT).value();
        if (MaybeAlign pa = K->getParamAlign(i))
          al = std::max<uint64_t>(al, pa->value());
      } else {
        if (!T->isSized())
          return fail("kernel '" + ki.name + "' has an unsized parameter");
        sz = DL.getTypeAllocSize(T);
        al = DL.getABITypeAlign(T).value();
      }
      ki.params.push_back({sz, al});
    }
    // K.body
    std::vector<Type *> ps(FT->param_begin(), FT->param_end());
    for (int e = 0; e < E_COUNT; ++e)
      ps.push_back((e == E_LOCAL || e == E_DYN || e == E_IMPLARG || e == E_DISPATCH || e == E_SCRATCH) ? Ptr : I32);
    Function *NF = Function::Create(FunctionType::get(Void, ps, false), GlobalValue::InternalLinkage,
                                    ki.name + ".body", M);
    ValueToValueMapTy VM;
    for (unsigned i = 0; i < FT->getNumParams(); ++i)
      VM[K->getArg(i)] = NF->getArg(i);
    SmallVector<ReturnInst *, 8> rets;
    CloneFunctionInto(NF, K, VM, CloneFunctionChangeType::LocalChangesOnly, rets);
    NF->setCallingConv(CallingConv::C);
    NF->setLinkage(GlobalValue::InternalLinkage);
    NF->setVisibility(GlobalValue::DefaultVisibility);
    NF->removeFnAttr(Attribute::NoInline);
    NF->removeFnAttr(Attribute::OptimizeNone);
    NF->setMemoryEffects(MemoryEffects::unknown());
    NF->removeFnAttr(Attribute::NoSync);
    for (unsigned i = 0; i < FT->getNumParams(); ++i) {
      // amdgcn marks kernel args inreg / noalias etc.; keep byval (gives per-call copies), drop the rest
      // that would be wrong for a shared argument buffer.
      NF->removeParamAttr(i, Attribute::InReg);
    }
    if (!inlineAll(NF))
      return false;
    bool collective = false, hasExit = false;
    if (!replaceIntrinsics(NF, collective, hasExit))
      return false;
    if (!lowerLocals(NF, ki.staticLocal))
      return false;
    if (!specKernel.empty())
      runtimeDivisors(NF);
    markSharedAtomics(NF);
    ki.barriers = collective;
    ki.specialisable = !usesMutableGlobals(NF);
    if (collective) {
      if (!buildCbs(NF, ki.scratchPerWi))
        return false;
    } else {
      exitsToReturns(NF);
      NF->addFnAttr(Attribute::AlwaysInline);
    }
    // WG function
    Function *WG = Function::Create(FunctionType::get(Void, {Ptr}, false), GlobalValue::ExternalLinkage,
                                    ki.wgName, M);
    WG->setVisibility(GlobalValue::DefaultVisibility);
    WG->setCallingConv(CallingConv::C);
    if (!cpu.empty()) WG->addFnAttr("target-cpu", cpu);
    if (!features.empty()) WG->addFnAttr("target-features", features);
    WG->addFnAttr(Attribute::NoUnwind);
    Argument *ctx = WG->getArg(0);
    ctx->addAttr(Attribute::NoAlias);
    ctx->addAttr(Attribute::ReadOnly);
    BasicBlock *E = BasicBlock::Create(C, "entry", WG);
    IRBuilder<> B(E);
    auto ldp = [&](unsigned off) { return B.CreateLoad(Ptr, B.CreateConstGEP1_64(I8, ctx, off)); };
    auto ld32 = [&](unsigned off) { return B.CreateLoad(I32, B.CreateConstGEP1_64(I8, ctx, off)); };
    Value *args = ldp(CTX_ARGS);
    Value *local = ldp(CTX_LOCAL), *dyn = ldp(CTX_DYN), *scratch = ldp(CTX_SCRATCH);
    Value *gid[3], *ng[3], *gs[3], *gsr[3];
    for (int d = 0; d < 3; ++d) {
      gid[d] = ld32(CTX_GID + 4 * d);
      ng[d] = ld32(CTX_NG + 4 * d);
      gsr[d] = ld32(CTX_GS + 4 * d);
      gs[d] = specKernel.empty() ? gsr[d] : static_cast<Value *>(ConstantInt::get(I32, specGs[d]));
    }
    // amdgcn COV5 implicit args and HSA dispatch packet, per group.
    AllocaInst *impl = B.CreateAlloca(ArrayType::get(I8, 256), nullptr, "implicitargs");
    impl->setAlignment(Align(64));
    AllocaInst *disp = B.CreateAlloca(ArrayType::get(I8, 64), nullptr, "dispatch");
    disp->setAlignment(Align(64));
    B.CreateMemSet(impl, ConstantInt::get(I8, 0), 256, MaybeAlign(64));
    B.CreateMemSet(disp, ConstantInt::get(I8, 0), 64, MaybeAlign(64));
    for (int d = 0; d < 3; ++d) {
      B.CreateStore(ng[d], B.CreateConstGEP1_64(I8, impl, 4 * d));
      B.CreateStore(B.CreateTrunc(gs[d], I16), B.CreateConstGEP1_64(I8, impl, 12 + 2 * d));
      B.CreateStore(B.CreateTrunc(gs[d], I16), B.CreateConstGEP1_64(I8, disp, 4 + 2 * d));
      B.CreateStore(B.CreateMul(ng[d], gs[d]), B.CreateConstGEP1_64(I8, disp, 12 + 4 * d));
    }
    B.CreateStore(ConstantInt::get(I16, 3), B.CreateConstGEP1_64(I8, impl, 64)); // grid dims
    B.CreateStore(ConstantInt::get(I16, 3), B.CreateConstGEP1_64(I8, disp, 2));  // setup: dims
    std::vector<Value *> cargs;
    uint64_t off = 0;
    for (unsigned i = 0; i < FT->getNumParams(); ++i) {
      off = (off + ki.params[i].second - 1) / ki.params[i].second * ki.params[i].second;
      Value *p = B.CreateConstGEP1_64(I8, args, off);
      if (K->getParamByValType(i) || K->getParamByRefType(i))
        cargs.push_back(B.CreateAddrSpaceCast(p, FT->getParamType(i)));
      else
        cargs.push_back(B.CreateAlignedLoad(FT->getParamType(i), p, Align(1)));
      off += ki.params[i].first;
    }
    auto callBody = [&](Value *x, Value *y, Value *z, Value *lwi) {
      std::vector<Value *> a = cargs;
      Value *ex[E_COUNT] = {x,     y,   z,    lwi,  gid[0],  gid[1], gid[2], ng[0],  ng[1],  ng[2], gs[0],
                            gs[1], gs[2], local, dyn, impl, disp, scratch, gsr[0], gsr[1], gsr[2]};
      a.insert(a.end(), ex, ex + E_COUNT);
      CallInst *CI = B.CreateCall(NF, a);
      CI->setCallingConv(CallingConv::C);
    };
    if (collective) {
      Value *z0 = ConstantInt::get(I32, 0);
      callBody(z0, z0, z0, z0);
      B.CreateRetVoid();
    } else {
      // for z, y, x (top-tested, like the region loops of buildCbs), around the inlined body
      BasicBlock *ex = BasicBlock::Create(C, "exit", WG);
      struct Nest {
        BasicBlock *hz, *hy, *P, *L;
        PHINode *x, *y, *z;
        ICmpInst *inX, *inY, *inZ;
        bool inlined;
      };
      auto buildNest = [&](BasicBlock *from) {
        Value *zero = ConstantInt::get(I32, 0), *one = ConstantInt::get(I32, 1);
        BasicBlock *hz = BasicBlock::Create(C, "z", WG, ex), *hy = BasicBlock::Create(C, "y", WG, ex),
                   *hx = BasicBlock::Create(C, "x", WG, ex), *P = BasicBlock::Create(C, "wi", WG, ex),
                   *L = BasicBlock::Create(C, "x.latch", WG, ex), *ly = BasicBlock::Create(C, "y.latch", WG, ex),
                   *lz = BasicBlock::Create(C, "z.latch", WG, ex);
        IRBuilder<> NB(hz);
        PHINode *z = NB.CreatePHI(I32, 2, "lz");
        z->addIncoming(zero, from);
        auto *inZ = cast<ICmpInst>(NB.CreateICmpULT(z, gs[2]));
        NB.CreateCondBr(inZ, hy, ex);
        NB.SetInsertPoint(hy);
        PHINode *y = NB.CreatePHI(I32, 2, "ly");
        y->addIncoming(zero, hz);
        Value *rowBase = NB.CreateMul(NB.CreateAdd(NB.CreateMul(z, gs[1]), y), gs[0]);
        auto *inY = cast<ICmpInst>(NB.CreateICmpULT(y, gs[1]));
        NB.CreateCondBr(inY, hx, lz);
        NB.SetInsertPoint(hx);
        PHINode *x = NB.CreatePHI(I32, 2, "lx");
        x->addIncoming(zero, hy);
        auto *inX = cast<ICmpInst>(NB.CreateICmpULT(x, gs[0]));
        NB.CreateCondBr(inX, P, ly);
        B.SetInsertPoint(P);
        MDNode *AG = newAccessGroup();
        callBody(x, y, z, B.CreateAdd(rowBase, x));
        auto *CB = cast<CallInst>(&P->back());
        CB->setMetadata(LLVMContext::MD_access_group, AG); // propagated to the inlined body
        B.CreateBr(L);
        NB.SetInsertPoint(L);
        x->addIncoming(NB.CreateAdd(x, one, "", true, true), L);
        markParallelLoop(NB.CreateBr(hx), AG);
        NB.SetInsertPoint(ly);
        y->addIncoming(NB.CreateAdd(y, one, "", true, true), ly);
        NB.CreateBr(hy);
        NB.SetInsertPoint(lz);
        z->addIncoming(NB.CreateAdd(z, one, "", true, true), lz);
        NB.CreateBr(hz);
        // Inline the body now (O3 would) so that guards such as `if (i < n)` can narrow the x loop.
        InlineFunctionInfo IFI;
        bool inl = InlineFunction(*CB, IFI).isSuccess();
        return Nest{hz, hy, P, L, x, y, z, inX, inY, inZ, inl};
      };
      BranchInst *toNest = B.CreateBr(ex); // retargeted below
      B.SetInsertPoint(ex);
      B.CreateRetVoid();
      Nest A = buildNest(E);
      toNest->setSuccessor(0, A.hz);
      if (A.inlined) {
        // Bounds checks: the in-range part of the x loop runs without the check (no masked loads and
        // stores). Where `gid * n + tid` could wrap around, a second, unchanged nest runs instead.
        Value *assumed = ConstantInt::getTrue(C);
        BasicBlock *L = A.L;
        narrowToGuards(
            A.P, [&](BasicBlock *Sc) { return Sc == L; }, {E}, E, {A.x, A.y, A.z}, {A.inX, A.inY, A.inZ},
            {gs[0], gs[1], gs[2]}, {A.hy, A.hz, E}, &assumed);
        runLoops.clear(); // (versionShortRuns is for barrier regions)
        splitAtEqualities(A.P, L, {E}, E, A.y, A.inY, A.hz);
        splitAtEqualities(A.P, L, {E}, E, A.x, A.inX, A.hy);
        if (!isa<ConstantInt>(assumed)) {
          Nest Bn = buildNest(E);
          toNest->eraseFromParent();
          IRBuilder<> EB(E);
          EB.CreateCondBr(assumed, A.hz, Bn.hz);
        }
      }
    }
    // NF is called from WG without an access group on the barrier path; a body left un-inlined on
    // the plain path is inlined later under the work-item loop's group, so it keeps its atomics.
    if (collective || NF->use_empty())
      plainSharedAtomics(NF);
    plainSharedAtomics(WG);
    attachDebugInfo(K, NF, WG);
    return true;
  }

  // Bitcode built with -g: the kernel's subprogram (the body's copy of it) moves to its work-group
  // function (the body loses it), and the work-group function's
  // instructions without a location (the work-item loops, the call of the body) get the kernel's first
  // line, so the kernel's code keeps its line table and variables and debuggers and profilers name the
  // work-group function by the kernel.
  void attachDebugInfo(Function *K, Function *NF, Function *WG) {
    // (CloneFunctionInto gave the body a copy of the kernel's subprogram; the body's code is what WG
    // holds or will inline)
    DISubprogram *SP = NF->getSubprogram();
    if (!SP || WG->getSubprogram())
      return;
    (void)K;
    NF->setSubprogram(nullptr);
    WG->setSubprogram(SP);
    DILocation *L = DILocation::get(C, SP->getScopeLine(), 0, SP);
    for (BasicBlock &BB : *WG)
      for (Instruction &I : BB)
        if (!I.getDebugLoc())
          I.setDebugLoc(L);
  }

  // After the module-wide steps in Rust (src/jit/llvm/normalise.rs: normalisation, the kernel of a
  // specialisation, constructors/destructors): every kernel lowered (the clean-up follows in Rust,
  // src/jit/llvm/cleanup.rs).
  bool run() {
    std::vector<Function *> kernels;
    for (Function &F : M)
      if (!F.isDeclaration() && isGpuKernelCC(F.getCallingConv()))
        kernels.push_back(&F);
    std::vector<KInfo> infos;
    for (Function *K : kernels) {
      KInfo ki;
      if (!lowerKernel(K, ki))
        return false;
      infos.push_back(ki);
    }
    lowered = std::move(infos);
    return true;
  }
};


} // namespace

// Must match `LowerOptions` in src/jit/compile.rs.
struct OlRsLowerOptions {
  const char *spec_kernel; // NULL: the generic lowering of every kernel
  uint32_t spec_group_size[3];
  uint32_t warp_size; // the warp width the kernels were built for
  OlRsClassifyFn classify_intrinsic; // the GPU intrinsic table (src/jit/llvm/intrinsics.rs)
};
static_assert(sizeof(OlRsLowerOptions) == 32 && offsetof(OlRsLowerOptions, spec_group_size) == 8 &&
                  offsetof(OlRsLowerOptions, warp_size) == 20 && offsetof(OlRsLowerOptions, classify_intrinsic) == 24,
              "OlRsLowerOptions must match LowerOptions in src/jit/compile.rs");

// One kernel parameter's size and alignment, and one kernel's metadata: must match `ParamAbi` and
// `KernelInfo` in src/jit/compile.rs. The pointers are valid only during the callback.
struct OlRsParam {
  uint64_t size, align;
};
struct OlRsKernelInfo {
  const char *name;   // the kernel's name
  const char *symbol; // its work-group function
  const OlRsParam *params;
  uint64_t num_params;
  uint64_t static_local_bytes;
  uint64_t scratch_bytes_per_wi;
  uint32_t warp_size;
  bool has_barriers;
  bool specialisable; // uses no mutable global variable
};
static_assert(sizeof(OlRsParam) == 16, "OlRsParam must match ParamAbi in src/jit/compile.rs");
static_assert(sizeof(OlRsKernelInfo) == 56 && offsetof(OlRsKernelInfo, symbol) == 8 &&
                  offsetof(OlRsKernelInfo, params) == 16 && offsetof(OlRsKernelInfo, num_params) == 24 &&
                  offsetof(OlRsKernelInfo, static_local_bytes) == 32 &&
                  offsetof(OlRsKernelInfo, scratch_bytes_per_wi) == 40 &&
                  offsetof(OlRsKernelInfo, warp_size) == 48 && offsetof(OlRsKernelInfo, has_barriers) == 52 &&
                  offsetof(OlRsKernelInfo, specialisable) == 53,
              "OlRsKernelInfo must match KernelInfo in src/jit/compile.rs");

// Lowers module MR in place (see the header comment). On success calls on_kernel(cx, info) once per
// work-group function and returns 0; otherwise returns 1 with a malloc'ed message in *err_out.
extern "C" int ol_rs_jit_lower(LLVMModuleRef MR, int arch, const char *cpu, const char *features,
                               const OlRsLowerOptions *opts,
                               void (*on_kernel)(void *cx, const OlRsKernelInfo *info), void *cx,
                               char **err_out) {
  *err_out = nullptr;
  Module *M = unwrap(MR);
  Lowering L(*M, arch, cpu ? cpu : "", features ? features : "");
  if (opts) {
    L.warp = opts->warp_size;
    L.classify = opts->classify_intrinsic;
  }
  if (opts && opts->spec_kernel) {
    L.specKernel = opts->spec_kernel;
    for (int d = 0; d < 3; ++d)
      L.specGs[d] = opts->spec_group_size[d];
  }
  bool ok = L.run();
  if (!ok) {
    *err_out = ol_rs::dup_for_rust(L.err.empty() ? std::string("unknown lowering failure") : L.err);
    return 1;
  }
  for (const auto &ki : L.lowered) {
    std::vector<OlRsParam> params;
    for (const auto &p : ki.params)
      params.push_back({p.first, p.second});
    OlRsKernelInfo info = {ki.name.c_str(), ki.wgName.c_str(), params.data(), params.size(), ki.staticLocal,
                           ki.scratchPerWi, L.warp, ki.barriers, ki.specialisable};
    on_kernel(cx, &info);
  }
  return 0;
}

extern "C" void ol_rs_jit_free(char *p) { std::free(p); }

// Thin primitives for src/jit/llvm/cleanup.rs, where LLVM's C API has no equivalent.
// Constant users of global value V (a function or variable) that nothing uses are destroyed.
extern "C" void ol_rs_jit_remove_dead_constant_users(LLVMValueRef V) {
  cast<GlobalValue>(unwrap(V))->removeDeadConstantUsers();
}
// The module's named metadata NAME, if it has one, is erased.
extern "C" void ol_rs_jit_erase_named_metadata(LLVMModuleRef MR, const char *name) {
  Module *M = unwrap(MR);
  if (NamedMDNode *N = M->getNamedMetadata(name))
    M->eraseNamedMetadata(N);
}

// Ends the block of instruction I right after it (devicelib.rs: a trap's work-item exits): what follows
// I in its block becomes `unreachable` (llvm::changeToUnreachable, successors' PHIs updated). Returns the
// `unreachable`.
extern "C" LLVMValueRef ol_rs_jit_unreachable_after(LLVMValueRef IR) {
  Instruction *I = unwrap<Instruction>(IR);
  Instruction *N = I->getNextNode();
  if (!N)
    return nullptr;
  changeToUnreachable(N);
  return wrap(I->getNextNode());
}
