// Implicit barriers in barrier-free loops with a uniform trip count, so that the work-item loop runs
// inside them (interchangeLoops).
#include "lowering.h"

namespace ol_rs::lower {

std::set<BasicBlock *> Lowering::interchangeLoops(Function *F, const std::set<Instruction *> &divTerm, Function *BM, Function *EM,
                      std::map<BasicBlock *, std::set<BasicBlock *>> &reach,
                      const std::function<void()> &computeReach, const std::function<bool(BasicBlock *)> &isSync,
                      const WarpInterchange *warpLoops) {
  std::set<BasicBlock *> underDivergence;
  auto stillUniform = [&]() {
    if (warpLoops)
      return warpLoops->holds();
    computeReach();
    underDivergence.clear();
    std::unique_ptr<PostDominatorTree> PDT;
    for (BasicBlock &D : *F) {
      if (isSync(&D) || !divTerm.count(D.getTerminator()) || reach[&D].size() <= 1)
        continue;
      if (!PDT)
        PDT = std::make_unique<PostDominatorTree>(*F);
      std::set<BasicBlock *> before;
      if (!meetBeforeSync(&D, *PDT, isSync, before))
        return false;
      underDivergence.insert(before.begin(), before.end());
    }
    return true;
  };
  std::vector<BasicBlock *> headers;
  {
    LoopAnalyses A(*F, M.getTargetTriple());
    LoopInfo &LI = A.LI;
    ScalarEvolution &SE = A.SE;
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
      if (warpLoops && none_of(L->blocks(), [&](BasicBlock *BB) {
            return any_of(*BB, [&](Instruction &I) { return !isa<PHINode>(&I) && warpLoops->div.count(&I); });
          }))
        return false; // (the same work for a warp's lanes: ol-warp-uniform-loops runs it once)
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
      CallInst *bar = B.CreateCall(barrierMarker());
      if (warpLoops)
        bar->setMetadata(kWarpBarrierMD, MDNode::get(C, {}));
      B.CreateBr(H);
      P->getTerminator()->replaceSuccessorWith(H, N);
      H->replacePhiUsesWith(P, N);
      added.push_back({P, N});
    }
    if (stillUniform()) {
      fired(T_IMPLICIT_LOOP_BARRIERS);
      continue;
    }
    for (auto &[P, N] : added) {
      P->getTerminator()->replaceSuccessorWith(N, H);
      H->replacePhiUsesWith(N, P);
      N->eraseFromParent();
    }
  }
  stillUniform(); // the reach sets of the final CFG
  return underDivergence;
}

// The headers of F's loops (a barrier-free body, before buildCbs) whose exits are the same for every
// work-item, whose trip count is not a constant, with at least kInterchangeMinBody instructions and their
// memory accesses consecutive across x: loops interchangeLoops would put the work-item loop inside (`for (r = 0; r < rows; r++) s += m[r * cols
// + c]`, a work-item per column). On the plain path the work-item loop holds such a loop whole, one
// work-item at a time; LLVM unrolls or vectorises constant trip counts as they are.
std::set<BasicBlock *> Lowering::uniformLoopHeaders(Function *F) {
  std::set<BasicBlock *> heads;
  std::set<Value *> div = divergentValues(F);
  std::set<Instruction *> divTerm = divergentTerms(F, div);
  Value *lx = F->getArg(F->arg_size() - E_COUNT + E_LX);
  // an index consecutive in the local x id: the id plus values the same for every work-item, through
  // casts and SPIR-V's low 32 bits of its 64-bit ids (consecutive within a group unless the sum crosses
  // 2^32 there: only the choice of the loops, not what they compute, depends on it)
  std::function<bool(Value *, int)> consecutive = [&](Value *V, int depth) -> bool {
    while (isa<ZExtInst>(V) || isa<SExtInst>(V) || isa<TruncInst>(V) || low32(V))
      V = low32(V) ? low32(V) : cast<Instruction>(V)->getOperand(0);
    if (V == lx)
      return true;
    auto *BO = dyn_cast<BinaryOperator>(V);
    if (!BO || depth > 8 || BO->getOpcode() != Instruction::Add)
      return false;
    for (int k = 0; k < 2; ++k)
      if (!div.count(BO->getOperand(1 - k)) && consecutive(BO->getOperand(k), depth + 1))
        return true;
    return false;
  };
  // an address of elements of T consecutive in x: GEPs by T, one index consecutive and the others (and
  // the base) the same for every work-item (`m + c` then `+ r * cols`, as clang hoists the column)
  std::function<bool(Value *, Type *, int)> consecutiveAddress = [&](Value *P, Type *T, int depth) -> bool {
    auto *G = dyn_cast<GEPOperator>(P);
    if (!G || depth > 4 || G->getNumIndices() != 1 ||
        DL.getTypeAllocSize(G->getSourceElementType()) != DL.getTypeStoreSize(T))
      return false;
    Value *base = G->getPointerOperand(), *idx = G->idx_begin()->get();
    if (!div.count(base))
      return consecutive(idx, 0);
    return !div.count(idx) && consecutiveAddress(base, T, depth + 1);
  };
  LoopAnalyses A(*F, M.getTargetTriple());
  for (Loop *L : A.LI.getLoopsInPreorder()) {
    SmallVector<BasicBlock *, 4> exiting;
    L->getExitingBlocks(exiting);
    if (exiting.empty() || any_of(exiting, [&](BasicBlock *EB) { return divTerm.count(EB->getTerminator()) > 0; }))
      continue;
    if (A.SE.getSmallConstantTripCount(L) != 0)
      continue;
    // every access whose address differs between work-items consecutive in x (`m[r * cols + c]`), and at
    // least one: across the work-items they are vectors (a row per work-item, `a[i * m + k]`, would be
    // gathers, where its own loop reads its row in order)
    unsigned body = 0, consecutiveAccesses = 0;
    bool ok = true;
    for (BasicBlock *BB : L->blocks())
      for (Instruction &I : *BB) {
        body += !isa<PHINode>(&I) && !I.isTerminator();
        Value *P = getLoadStorePointerOperand(&I);
        if (!P || !div.count(P))
          continue;
        if (consecutiveAddress(P, getLoadStoreType(&I), 0))
          ++consecutiveAccesses;
        else
          ok = false;
      }
    if (ok && consecutiveAccesses && body >= kInterchangeMinBody)
      heads.insert(L->getHeader());
  }
  return heads;
}

} // namespace ol_rs::lower
