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

} // namespace ol_rs::lower
