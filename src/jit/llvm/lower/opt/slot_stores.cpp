// Stores of uniform values to demotion slots moved in front of a region's loops (hoistSlotStores).
#include "../lowering.h"

namespace ol_rs::lower {


// Every work-item runs the start of a region's entry block RE: a store there of a group-invariant
// value (available in the region's preheader Pre) to a shared slot that nothing else in the region
// writes is done once in Pre instead, and the region's loads of that slot take the stored value.
// (A slot written again in the region, e.g. the counter of a uniform loop inside the work-item
// loop, must be re-initialised by every work-item: its store stays.)
void Lowering::hoistSlotStores(BasicBlock *RE, BasicBlock *Pre, BasicBlock *NE, const std::set<Value *> &slots,
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
        fired(T_HOIST_SLOT_STORES);
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

} // namespace ol_rs::lower
