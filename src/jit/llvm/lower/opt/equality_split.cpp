// The y and x work-item loops cut into segments at `y == c` / `x == c`-style guards (ol-equality-split)
// and at `x < c`-style ones that choose between two paths (ol-range-split: `v = t >= off ? s[t - off] :
// 0`, where the load may not run for t < off and so is a masked load in the vectorised loop), so that
// the segments between the cuts run without the checks (splitAtEqualities).
#include "../lowering.h"

namespace ol_rs::lower {

void Lowering::splitAtEqualities(BasicBlock *body, BasicBlock *latch, const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre,
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
  // comparison, its point (i64), and its cuts: p and p + 1 for an equality, the first id on the other
  // side for an order (`id < p`, `id >= p`: p; `id <= p`, `id > p`: p + 1)
  struct Cut {
    ICmpInst *cmp;
    Value *p;
    bool eq;
    bool trueFromP; // (an order) whether it holds from p on, or below p
  };
  std::vector<Cut> found;
  // in the function's block order, not the set's (pointer) order: the same bitcode must always give
  // the same code, and which points are split when there are more than kMaxEqualityPoints
  for (BasicBlock &Blk : *H->getParent()) {
    BasicBlock *Bb = &Blk;
    if (!blocks.count(Bb))
      continue;
    for (Instruction &I : *Bb) {
      auto *Cmp = dyn_cast<ICmpInst>(&I);
      if (!Cmp || !(Cmp->isEquality() ? on(T_EQUALITY_SPLIT) : on(T_RANGE_SPLIT)) || !decidesBranch(Cmp, 0) ||
          found.size() >= kMaxEqualityPoints)
        continue;
      Type *Ty = Cmp->getOperand(0)->getType();
      if (!Ty->isIntegerTy(32) && !Ty->isIntegerTy(64))
        continue;
      Value *c = nullptr, *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1);
      CmpInst::Predicate pred = Cmp->getPredicate();
      if (!affine(A, c)) {
        if (!affine(Bv, c))
          continue;
        std::swap(A, Bv);
        pred = CmpInst::getSwappedPredicate(pred);
      }
      // (an order only of the 32-bit id itself: `id + c < b` is not `id < b - c` where that wraps
      // around; the ids, below 2^31, order the same signed and unsigned)
      if ((!Cmp->isEquality() && (c || !Ty->isIntegerTy(32))) || !hoistIfUniform(Bv, groupLevel, Pre))
        continue;
      Value *p = c ? PB.CreateSub(Bv, c) : Bv;
      if (!Cmp->isEquality()) {
        // the first id on the other side (p or p + 1), in i64: a signed bound below 0 cuts at 0
        bool after = ICmpInst::isLE(pred) || ICmpInst::isGT(pred);
        bool trueFrom = ICmpInst::isGE(pred) || ICmpInst::isGT(pred);
        Value *q = CmpInst::isSigned(pred) ? PB.CreateSExt(p, I64) : PB.CreateZExt(p, I64);
        if (after)
          q = PB.CreateAdd(q, ConstantInt::get(I64, 1));
        if (CmpInst::isSigned(pred))
          q = PB.CreateBinaryIntrinsic(Intrinsic::smax, q, ConstantInt::get(I64, 0));
        found.push_back({Cmp, q, false, trueFrom});
        continue;
      }
      found.push_back({Cmp, PB.CreateZExtOrBitCast(p, I64), true, false});
    }
  }
  if (found.empty())
    return;
  for (const Cut &f : found)
    fired(f.eq ? T_EQUALITY_SPLIT : T_RANGE_SPLIT);
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
  for (const Cut &f : found) {
    // the next cut above s: p, else p + 1 (an equality), else none
    Value *cut;
    if (f.eq) {
      Value *p1 = SB.CreateAdd(f.p, one);
      cut = SB.CreateSelect(SB.CreateICmpUGT(f.p, s), f.p, SB.CreateSelect(SB.CreateICmpUGT(p1, s), p1, hi));
    } else {
      cut = SB.CreateSelect(SB.CreateICmpUGT(f.p, s), f.p, hi);
    }
    end = SB.CreateBinaryIntrinsic(Intrinsic::umin, end, cut);
  }
  for (const Cut &f : found) {
    // the comparison at the segment's first id holds for the whole segment
    Value *at = f.eq ? SB.CreateICmp(f.cmp->getPredicate(), s, f.p)
                     : f.trueFromP ? SB.CreateICmpUGE(s, f.p) : SB.CreateICmpULT(s, f.p);
    f.cmp->replaceAllUsesWith(at);
    f.cmp->eraseFromParent();
  }
  id->setIncomingValueForBlock(SH, SB.CreateTrunc(s, I32));
  inDim->setOperand(1, SB.CreateTrunc(end, I32));
  SB.CreateCondBr(SB.CreateICmpULT(s, hi), H, exitBB);
  HT->setSuccessor(1, SL);
  SB.SetInsertPoint(SL);
  s->addIncoming(end, SL);
  SB.CreateBr(SH);
}


// Step 5, region (takes R's loop nest, with its exits at the latch, cbsLeaveRegion): under uniform
// barriers, the x loop is cut into segments at equality and order guards (splitAtEqualities).
void Lowering::cbsSplitEqualities(CbsState &st, CbsRegion &R) {
  if (st.uniform && !R.once)
    splitAtEqualities(R.P, R.L, {R.Pre, st.NE}, R.Pre, R.lx, R.inX, R.Hy);
}

} // namespace ol_rs::lower
