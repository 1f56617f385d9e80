// Kernel memory, the parts LLVM's C API cannot reach (see src/jit/stack.rs and src/jit/memcheck.rs for
// the policy):
// * ol_rs_jit_emit_stack_sizes: makes a TargetMachine emit the `.stack_sizes` section (the frame size of
//   every function), which the loader reads to know how much stack a work-group function needs;
// * ol_rs_jit_memcheck_instrument: the OFFLOAD_RS_MEMCHECK pass, run on the GPU-form module before the
//   lowering (so the work-item id is still the target's intrinsic). Every load, store, atomic and memory
//   intrinsic of every function reachable from a kernel becomes
//       ok = __ol_rs_memcheck_hook(generic ptr, size, kind, tid.x, tid.y, tid.z)
//       if (ok) <the access>          ; a skipped load yields zero
//   where `__ol_rs_memcheck_hook` is a global function pointer the loader fills in. kind: 0 read,
//   1 write, 2 atomic. Functions reachable from the global constructors/destructors are instrumented
//   too, with work-item id 0 (they run outside any launch, where there is no work-item id; the loader
//   runs them under the checker, see src/plugin/cpu/memcheck.rs run_structors).
#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "shim.h"

using namespace llvm;

extern "C" void ol_rs_jit_emit_stack_sizes(LLVMTargetMachineRef TM) {
  reinterpret_cast<TargetMachine *>(TM)->Options.EmitStackSizeSection = true;
}

namespace {

enum { ARCH_NVPTX = 0, ARCH_AMDGCN = 1, ARCH_SPIRV = 2, ARCH_HOST = 3 };
enum { K_READ = 0, K_WRITE = 1, K_ATOMIC = 2 };

// Functions called (directly or not) from the global constructors/destructors: they run outside any
// launch, where there is no work-item id, so their checks pass id 0.
std::set<Function *> structorReachable(Module &M) {
  std::vector<Function *> work;
  for (const char *gv : {"llvm.global_ctors", "llvm.global_dtors"})
    if (GlobalVariable *G = M.getGlobalVariable(gv))
      if (G->hasInitializer())
        if (auto *CA = dyn_cast<ConstantArray>(G->getInitializer()))
          for (Use &U : CA->operands())
            if (auto *CS = dyn_cast<ConstantStruct>(U.get()))
              if (CS->getNumOperands() >= 2)
                if (auto *F = dyn_cast<Function>(CS->getOperand(1)->stripPointerCasts()))
                  work.push_back(F);
  std::set<Function *> seen;
  while (!work.empty()) {
    Function *F = work.back();
    work.pop_back();
    if (!seen.insert(F).second || F->isDeclaration())
      continue;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CB = dyn_cast<CallBase>(&I))
          if (Function *Callee = CB->getCalledFunction())
            work.push_back(Callee);
  }
  return seen;
}

struct Access {
  Value *ptr;
  Value *size; // i64
  int kind;
  Value *ptr2 = nullptr; // memcpy/memmove source
};

struct Instrumenter {
  Module &M;
  int arch;
  LLVMContext &C;
  const DataLayout &DL;
  Type *I32, *I64, *I1, *Ptr;
  GlobalVariable *hook = nullptr;
  FunctionType *hookTy = nullptr;

  Instrumenter(Module &M, int arch)
      : M(M), arch(arch), C(M.getContext()), DL(M.getDataLayout()), I32(Type::getInt32Ty(C)),
        I64(Type::getInt64Ty(C)), I1(Type::getInt1Ty(C)), Ptr(PointerType::get(C, 0)) {}

  // the function being instrumented is reachable from a constructor or destructor
  bool inStructor = false;

  Value *tid(IRBuilder<> &B, int d) {
    if (inStructor)
      return ConstantInt::get(I32, 0);
    const char *xyz[] = {"x", "y", "z"};
    if (arch == ARCH_NVPTX) {
      FunctionCallee f = M.getOrInsertFunction(std::string("llvm.nvvm.read.ptx.sreg.tid.") + xyz[d],
                                               FunctionType::get(I32, false));
      return B.CreateCall(f);
    }
    if (arch == ARCH_AMDGCN) {
      FunctionCallee f = M.getOrInsertFunction(std::string("llvm.amdgcn.workitem.id.") + xyz[d],
                                               FunctionType::get(I32, false));
      return B.CreateCall(f);
    }
    // spirv64: llvm.spv.thread.id.in.group.<anyint>(i32 dim)
    FunctionCallee f = M.getOrInsertFunction("llvm.spv.thread.id.in.group.i32", FunctionType::get(I32, {I32}, false));
    return B.CreateCall(f, {ConstantInt::get(I32, d)});
  }

  Value *check(IRBuilder<> &B, Value *ptr, Value *size, int kind) {
    Value *p = ptr->getType() == Ptr ? ptr : B.CreateAddrSpaceCast(ptr, Ptr);
    Value *fn = B.CreateLoad(Ptr, hook, "memcheck.fn");
    return B.CreateCall(hookTy, fn,
                        {p, B.CreateZExtOrTrunc(size, I64), ConstantInt::get(I32, kind), tid(B, 0), tid(B, 1), tid(B, 2)},
                        "memcheck.ok");
  }

  // The memory access `I` makes, read when it is instrumented (operands may be results of accesses
  // instrumented before, now replaced by their phis). false: not an access.
  bool access(Instruction &I, Access &a) {
    auto sz = [&](Type *T) { return ConstantInt::get(I64, DL.getTypeStoreSize(T).getKnownMinValue()); };
    if (auto *L = dyn_cast<LoadInst>(&I)) {
      a = {L->getPointerOperand(), sz(L->getType()), L->isAtomic() ? K_ATOMIC : K_READ};
    } else if (auto *S = dyn_cast<StoreInst>(&I)) {
      a = {S->getPointerOperand(), sz(S->getValueOperand()->getType()), S->isAtomic() ? K_ATOMIC : K_WRITE};
    } else if (auto *A = dyn_cast<AtomicRMWInst>(&I)) {
      a = {A->getPointerOperand(), sz(A->getValOperand()->getType()), K_ATOMIC};
    } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
      a = {X->getPointerOperand(), sz(X->getNewValOperand()->getType()), K_ATOMIC};
    } else if (auto *MT = dyn_cast<MemTransferInst>(&I)) {
      a = {MT->getRawDest(), MT->getLength(), K_WRITE, MT->getRawSource()};
    } else if (auto *MS = dyn_cast<MemSetInst>(&I)) {
      a = {MS->getRawDest(), MS->getLength(), K_WRITE};
    } else {
      return false;
    }
    return true;
  }

  void instrument(Instruction *I) {
    Access a;
    if (!access(*I, a))
      return;
    IRBuilder<> B(I);
    Value *ok = check(B, a.ptr, a.size, a.kind);
    if (a.ptr2)
      ok = B.CreateAnd(ok, check(B, a.ptr2, a.size, K_READ));
    // if (ok) I; a value it produced is zero on the skipped path
    BasicBlock *head = I->getParent();
    Instruction *thenTerm = SplitBlockAndInsertIfThen(ok, I, false);
    BasicBlock *thenBB = thenTerm->getParent();
    BasicBlock *merge = thenBB->getSingleSuccessor();
    I->moveBefore(thenTerm->getIterator());
    if (!I->getType()->isVoidTy() && !I->use_empty()) {
      IRBuilder<> BM(&*merge->getFirstInsertionPt());
      PHINode *phi = BM.CreatePHI(I->getType(), 2);
      std::vector<Use *> uses;
      for (Use &U : I->uses())
        uses.push_back(&U);
      for (Use *U : uses)
        U->set(phi);
      phi->addIncoming(I, thenBB);
      phi->addIncoming(Constant::getNullValue(I->getType()), head);
    }
  }

  bool run(std::string &err) {
    if (arch == ARCH_HOST)
      return true;
    hookTy = FunctionType::get(I1, {Ptr, I64, I32, I32, I32, I32}, false);
    hook = new GlobalVariable(M, Ptr, false, GlobalValue::ExternalLinkage, ConstantPointerNull::get(cast<PointerType>(Ptr)),
                              "__ol_rs_memcheck_hook");
    hook->setVisibility(GlobalValue::DefaultVisibility);
    std::set<Function *> structors = structorReachable(M);
    std::vector<Instruction *> all;
    for (Function &F : M) {
      if (F.isDeclaration())
        continue;
      for (BasicBlock &BB : F)
        for (Instruction &I : BB)
          if (Access a; access(I, a))
            all.push_back(&I);
    }
    for (Instruction *I : all) {
      inStructor = structors.count(I->getFunction()) != 0;
      instrument(I);
    }
    (void)err;
    return true;
  }
};


} // namespace

extern "C" int ol_rs_jit_memcheck_instrument(LLVMModuleRef MR, int arch, char **err_out) {
  *err_out = nullptr;
  Instrumenter In(*unwrap(MR), arch);
  std::string err;
  if (!In.run(err)) {
    *err_out = ol_rs::dup_for_rust(err.empty() ? std::string("memcheck instrumentation failed") : err);
    return 1;
  }
  return 0;
}
