// An alias scope of its own for every demotion slot (scopeSlots).
#include "../lowering.h"

namespace ol_rs::lower {


// Demotion slots are arrays of their own in scratch, reached only through the demotion's loads and
// stores: give each one an alias scope, so that the slot accesses of a work-item loop do not keep
// LLVM from hoisting a uniform load of shared or global memory out of it (n-body's `tile[j]`), nor
// from vectorising next to them. Every other memory access of F is marked noalias with all of them.
void Lowering::scopeSlots(Function *F, const std::vector<AllocaInst *> &slots) {
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
  fired(T_SCOPE_SLOTS, all.size());
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

} // namespace ol_rs::lower
