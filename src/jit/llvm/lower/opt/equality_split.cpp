// The y and x work-item loops cut into segments at `y == c` / `x == c`-style guards, so that the
// segments between them run without the checks (splitAtEqualities).
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
  fired(T_EQUALITY_SPLIT, found.size());
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


// Step 5, region (takes R's loop nest, with its exits at the latch, cbsLeaveRegion): under uniform
// barriers, the x loop is cut into segments at equality guards (splitAtEqualities).
void Lowering::cbsSplitEqualities(CbsState &st, CbsRegion &R) {
  if (st.uniform && !R.once)
    splitAtEqualities(R.P, R.L, {R.Pre, st.NE}, R.Pre, R.lx, R.inX, R.Hy);
}

} // namespace ol_rs::lower
