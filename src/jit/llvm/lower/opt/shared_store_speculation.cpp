// Conditional shared-memory stores to elements the work-item read become selects
// (speculateSharedStores), and the decision in front of them too (flattenDecision).
#include "../lowering.h"

namespace ol_rs::lower {


// Do two pointer values compute the same address (the same value, or identical casts / GEPs of such)?
bool Lowering::sameAddress(Value *A, Value *B, int depth) {
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
void Lowering::speculateSharedStores(Function *F, ArrayRef<BasicBlock *> clones, MDNode *AG,
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
      fired(T_SPECULATE_SHARED_STORES);
    }
    if (on(T_FLATTEN_DECISION) && flattenDecision(N))
      fired(T_FLATTEN_DECISION);
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
bool Lowering::flattenDecision(BasicBlock *N) {
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


} // namespace ol_rs::lower
