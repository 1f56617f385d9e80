// __gpu_local variables as offsets into the group's local memory (lowerLocals), exits as returns
// (exitsToReturns), and atomics on the group's own shared memory made plain (markSharedAtomics,
// plainSharedAtomics).
#include "lowering.h"

namespace ol_rs::lower {


bool Lowering::lowerLocals(Function *F, uint64_t &staticBytes) {
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

unsigned memorySpaceOf(Value *ptr, Function *F) {
  unsigned o = F->arg_size() - E_COUNT;
  SmallVector<const Value *, 4> objs;
  getUnderlyingObjects(ptr, objs);
  unsigned sp = 0;
  for (const Value *V : objs) {
    auto *A = dyn_cast<Argument>(V);
    if (A && A->getParent() == F && (A->getArgNo() == o + E_LOCAL || A->getArgNo() == o + E_DYN))
      sp |= SPACE_SHARED;
    else if (A && A->getParent() == F && A->getArgNo() < o)
      sp |= SPACE_ARGS;
    else
      sp |= SPACE_ANY;
  }
  return objs.empty() ? SPACE_ANY : sp;
}

void Lowering::markSharedAtomics(Function *F) {
  auto shared = [&](Value *P) { return memorySpaceOf(P, F) == SPACE_SHARED; };
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

void Lowering::plainSharedAtomics(Function *F) {
  std::vector<Instruction *> v;
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      if (I.getMetadata(kSharedAtomicMD))
        v.push_back(&I);
  fired(T_PLAIN_SHARED_ATOMICS, v.size());
  for (Instruction *I : v) {
    if (auto *RMW = dyn_cast<AtomicRMWInst>(I))
      lowerAtomicRMWInst(RMW);
    else if (auto *CX = dyn_cast<AtomicCmpXchgInst>(I))
      lowerAtomicCmpXchgInst(CX);
  }
}


// Replace `call __ol_rs.exit; unreachable` by `ret void` (plain work-item functions).
void Lowering::exitsToReturns(Function *F) {
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

} // namespace ol_rs::lower
