// ol-promote-slots: under the general scheduler, a region's per-work-item slots (the demotion's values
// across barriers, and the work-item's resume id) are loaded once where the region loop starts a
// work-item and stored once at its latch, and are SSA values in between (cbsPromoteSlots).
//
// A work-item runs a region only when its resume id is the region's, and stores a slot only on the
// paths that compute it: every such store is conditional, and the vectoriser makes each one a masked
// store (slow: a microcoded instruction on AMD, and the region loop of a divergent loop stores every
// value it carries). Loaded up front and stored back at the latch (its own value where it did not
// change), the stores are plain and the values selects.
//
// Why it is legal: a slot is the work-item's own (its offset is the work-item's), only reached through
// the loads and stores of its alloca (slots whose alloca is used otherwise, or by volatile or atomic
// accesses, are left alone), and a work-group runs on one thread: no other work-item reads or writes it
// while the region runs this one. The load at the start reads memory the slot always owns.
#include "../lowering.h"

#include "llvm/Transforms/Utils/SSAUpdater.h"

namespace ol_rs::lower {

namespace {

// LICM's promotion, for one slot of one region: the loads get the slot's SSA value, the stores go, and
// the latch stores the value it has there.
struct SlotPromoter : LoadAndStorePromoter {
  SSAUpdater &SSA;
  BasicBlock *latch;
  Value *ptr;
  Instruction *like; // an access whose metadata (access group, alias scopes) the new store copies
  SlotPromoter(ArrayRef<const Instruction *> insts, SSAUpdater &S, BasicBlock *latch, Value *ptr, Instruction *like)
      : LoadAndStorePromoter(insts, S, "slot"), SSA(S), latch(latch), ptr(ptr), like(like) {}
  void doExtraRewritesBeforeFinalDeletion() override {
    Value *v = SSA.GetValueInMiddleOfBlock(latch);
    auto *St = new StoreInst(v, ptr, latch->getTerminator()->getIterator());
    St->copyMetadata(*like, {LLVMContext::MD_access_group, LLVMContext::MD_alias_scope, LLVMContext::MD_noalias});
  }
};

bool plainAccess(Instruction *I, Value *ptr, Type *&T) {
  Type *U = nullptr;
  if (auto *Ld = dyn_cast<LoadInst>(I)) {
    if (!Ld->isSimple() || Ld->getPointerOperand() != ptr)
      return false;
    U = Ld->getType();
  } else if (auto *St = dyn_cast<StoreInst>(I)) {
    if (!St->isSimple() || St->getPointerOperand() != ptr || St->getValueOperand() == ptr)
      return false;
    U = St->getValueOperand()->getType();
  } else {
    return false;
  }
  if (T && T != U)
    return false;
  T = U;
  return true;
}

} // namespace

// Step 5, region (after cbsLeaveRegion: the clones, R.P's slot pointers, the latch R.L): the promotion.
void Lowering::cbsPromoteSlots(CbsState &st, CbsRegion &R) {
  if (st.uniform || R.once || st.warpMode || !R.L || !on(T_PROMOTE_SLOTS))
    return;
  std::set<BasicBlock *> inRegion(R.clones.begin(), R.clones.end());
  auto promote = [&](Value *ptr, Type *T, const std::vector<Instruction *> &acc) {
    SmallVector<Instruction *, 8> insts(acc.begin(), acc.end());
    SmallVector<const Instruction *, 8> cinsts(acc.begin(), acc.end());
    auto *v0 = new LoadInst(T, ptr, "slot", R.P->getTerminator()->getIterator());
    v0->copyMetadata(*acc.front(), {LLVMContext::MD_access_group, LLVMContext::MD_alias_scope, LLVMContext::MD_noalias});
    if (R.AG)
      addAccessGroup(*v0, R.AG);
    // (frozen: LLVM 22's DAG combine foldToMaskedStore makes `store (select c, x, (load p)), p` a masked
    // store, microcoded on AVX2 AMD CPUs; a blend and a plain store are as fast everywhere)
    auto *v0f = new FreezeInst(v0, "slot.fr", R.P->getTerminator()->getIterator());
    SmallVector<PHINode *, 8> phis;
    SSAUpdater SSA(&phis);
    SlotPromoter P(cinsts, SSA, R.L, ptr, v0);
    SSA.AddAvailableValue(R.P, v0f);
    P.run(insts);
    fired(T_PROMOTE_SLOTS);
  };
  // the demotion's slots: allocas used only by plain loads and stores of one type
  for (size_t j = 0; j < st.allocas.size(); ++j) {
    if (st.uniPtr[j])
      continue;
    AllocaInst *A = st.allocas[j];
    Type *T = nullptr;
    if (!all_of(A->users(), [&](User *U) { return isa<Instruction>(U) && plainAccess(cast<Instruction>(U), A, T); }) || !T)
      continue;
    Value *ptr = R.VM.lookup(A);
    if (!ptr)
      continue;
    std::vector<Instruction *> acc;
    bool ok = true;
    for (User *U : ptr->users()) {
      auto *I = dyn_cast<Instruction>(U);
      Type *T2 = T;
      if (!I || !inRegion.count(I->getParent()) || !plainAccess(I, ptr, T2)) {
        ok = false;
        break;
      }
      acc.push_back(I);
    }
    if (ok && !acc.empty())
      promote(ptr, T, acc);
  }
  // the resume id: read by the check, written where the work-item leaves the region
  if (R.myResume) {
    std::vector<Instruction *> acc;
    Type *T = nullptr;
    for (User *U : R.myResume->users())
      if (auto *I = dyn_cast<Instruction>(U); I && plainAccess(I, R.myResume, T))
        acc.push_back(I);
      else
        return;
    if (!acc.empty())
      promote(R.myResume, T, acc);
  }
}

} // namespace ol_rs::lower
