// Guards that pass runs of ids (`(t ^ j) > t`, `(t & m) == 0`, `t % q == 0`): the loop over the
// ids that pass (matchRunGuard, addRunLoop), and copies for runs of 1, 2 or 4 ids (versionShortRuns).
#include "../lowering.h"

namespace ol_rs::lower {


// Is V a power of two or zero, for every work-item and every time it is computed? Induction through
// PHIs (`for (k = 2; ...; k <<= 1)`, `for (j = k >> 1; j > 0; j >>= 1)`), which ValueTracking's depth
// limit does not reach: a PHI on the current path is assumed to hold while its inputs are checked.
bool Lowering::pow2OrZero(Value *V, std::set<Value *> &visiting, int depth) {
  if (pow2Vals.count(V))
    return true;
  if (auto *K = dyn_cast<ConstantInt>(V))
    return K->isZero() || K->getValue().isPowerOf2();
  if (depth > 8)
    return false;
  Value *X, *Y;
  if (auto *PN = dyn_cast<PHINode>(V)) {
    if (!visiting.insert(PN).second)
      return true;
    for (Value *In : PN->incoming_values())
      if (!pow2OrZero(In, visiting, depth + 1))
        return false;
    return true;
  }
  if (match(V, m_Shl(m_Value(X), m_Value())) || match(V, m_LShr(m_Value(X), m_Value())) ||
      match(V, m_ZExt(m_Value(X))) || match(V, m_Trunc(m_Value(X))))
    return pow2OrZero(X, visiting, depth + 1);
  if (match(V, m_Select(m_Value(), m_Value(X), m_Value(Y))))
    return pow2OrZero(X, visiting, depth + 1) && pow2OrZero(Y, visiting, depth + 1);
  return V->getType()->isIntegerTy() && isKnownToBeAPowerOfTwo(V, DL, /*OrZero=*/true);
}

bool Lowering::pow2OrZero(Value *V) {
  std::set<Value *> visiting;
  return pow2OrZero(V, visiting);
}

bool Lowering::matchRunGuard(ICmpInst *Cmp, bool want, const std::function<int(Value *)> &idDim,
                   const std::function<bool(Value *)> &avail, IRBuilder<> &PB, RunGuard &g) {
  ICmpInst::Predicate pr = want ? Cmp->getPredicate() : Cmp->getInversePredicate();
  Value *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1), *X, *J;
  Value *zero32 = ConstantInt::get(I32, 0), *one64 = ConstantInt::get(I64, 1);
  auto z64 = [&](Value *V) { return PB.CreateZExt(V, I64); };
  auto ctpop = [&](Value *V) { return PB.CreateUnaryIntrinsic(Intrinsic::ctpop, V); };
  if (pr == ICmpInst::ICMP_ULT) {
    std::swap(A, Bv);
    pr = ICmpInst::ICMP_UGT;
  }
  auto idFirst = [&]() { // the id operand as X, the other as J
    if (idDim(X) < 0)
      std::swap(X, J);
  };
  if (pr == ICmpInst::ICMP_UGT && match(A, m_Xor(m_Value(X), m_Value(J)))) {
    idFirst();
    int d = idDim(X);
    if (d < 0 || idDim(Bv) != d || !avail(J))
      return false;
    Value *hb = PB.CreateLShr(ConstantInt::get(I32, 0x80000000u),
                              PB.CreateBinaryIntrinsic(Intrinsic::ctlz, J, PB.getFalse()));
    hb = z64(PB.CreateSelect(PB.CreateICmpEQ(J, zero32), zero32, hb));
    g = {d, PB.CreateBinaryIntrinsic(Intrinsic::umax, PB.CreateShl(hb, 1), one64), ConstantInt::get(I64, 0), hb,
         PB.getTrue(), pow2OrZero(J) ? J : nullptr};
    return true;
  }
  if (pr != ICmpInst::ICMP_EQ && pr != ICmpInst::ICMP_NE)
    return false;
  if (match(A, m_Zero()))
    std::swap(A, Bv);
  if (!match(Bv, m_Zero()))
    return false;
  if (match(A, m_And(m_Value(X), m_Value(J))) && (idFirst(), idDim(X) >= 0) && avail(J)) {
    Value *m = z64(J);
    Value *p2 = PB.CreateICmpULE(ctpop(J), ConstantInt::get(I32, 1));
    bool known = pow2OrZero(J);
    if (pr == ICmpInst::ICMP_NE) {
      g = {idDim(X), PB.CreateBinaryIntrinsic(Intrinsic::umax, PB.CreateShl(m, 1), one64), m, m,
           known ? PB.getTrue() : p2, nullptr};
      return true;
    }
    Value *isP2 = PB.CreateICmpEQ(ctpop(J), ConstantInt::get(I32, 1));
    Value *isMask = PB.CreateICmpEQ(PB.CreateAnd(m, PB.CreateAdd(m, one64)), ConstantInt::get(I64, 0));
    g = {idDim(X), PB.CreateSelect(isP2, PB.CreateShl(m, 1), PB.CreateAdd(m, one64)), ConstantInt::get(I64, 0),
         PB.CreateSelect(isP2, m, one64), known ? PB.getTrue() : PB.CreateOr(isP2, isMask), known ? J : nullptr};
    return true;
  }
  if (pr == ICmpInst::ICMP_EQ && match(A, m_URem(m_Value(X), m_Value(J))) && idDim(X) >= 0 && avail(J)) {
    Value *q = z64(J);
    g = {idDim(X), PB.CreateBinaryIntrinsic(Intrinsic::umax, q, one64), ConstantInt::get(I64, 0), one64,
         PB.CreateICmpNE(J, zero32), nullptr};
    return true;
  }
  return false;
}


// Turns the work-item loop of `id` (header: id's block, `inDim` its bound check, entered from `from`)
// into runs: for rb from the run at or below lo in steps of P: id from max(rb + off, lo) to
// min(rb + off + len, hi). len >= P is one contiguous range.
void Lowering::addRunLoop(PHINode *id, ICmpInst *inDim, BasicBlock *from, Value *lo, Value *hi, const RunGuard &g,
                IRBuilder<> &PB) {
  BasicBlock *H = id->getParent();
  auto *HT = cast<BranchInst>(H->getTerminator());
  BasicBlock *exitBB = HT->getSuccessor(1);
  Function *F = H->getParent();
  Value *contig = PB.CreateICmpUGE(g.len, g.P);
  Value *whole = ConstantInt::get(I64, 4096); // more than any group dimension
  Value *P = PB.CreateSelect(contig, whole, g.P), *off = PB.CreateSelect(contig, ConstantInt::get(I64, 0), g.off);
  Value *len = PB.CreateSelect(contig, whole, g.len);
  Value *rb0 = PB.CreateSub(lo, PB.CreateURem(lo, P));
  BasicBlock *RH = BasicBlock::Create(C, "cbs.run", F, H), *RL = BasicBlock::Create(C, "cbs.run.next", F, H);
  from->getTerminator()->replaceSuccessorWith(H, RH);
  H->replacePhiUsesWith(from, RH);
  exitBB->replacePhiUsesWith(H, RH);
  IRBuilder<> RB(RH);
  PHINode *rb = RB.CreatePHI(I64, 2, "rb");
  rb->addIncoming(rb0, from);
  Value *s = RB.CreateAdd(rb, off);
  Value *start = RB.CreateBinaryIntrinsic(Intrinsic::smax, s, lo);
  Value *end = RB.CreateBinaryIntrinsic(Intrinsic::smax, RB.CreateBinaryIntrinsic(Intrinsic::smin, RB.CreateAdd(s, len), hi), start);
  id->setIncomingValueForBlock(RH, RB.CreateTrunc(start, I32));
  inDim->setOperand(1, RB.CreateTrunc(end, I32));
  RB.CreateCondBr(RB.CreateICmpSLT(s, hi), H, exitBB);
  HT->setSuccessor(1, RL);
  RB.SetInsertPoint(RL);
  auto *step = cast<Instruction>(RB.CreateAdd(rb, P));
  rb->addIncoming(step, RL);
  RB.CreateBr(RH);
  runLoops.push_back({id, inDim, RH, exitBB, cast<Instruction>(s), step, lo, hi, P, off, len, g.bit});
}


// Short runs (bitonic's j = 1, 2, 4 phases of `(t ^ j) > t`, `(t & m) == 0` with small m): a run loop
// of runs shorter than a vector is a loop of tiny scalar loops, each with its own bounds. For run
// lengths c = 1, 2, 4 the run loop gets a copy where P = 2c and len = c are constants, every run is
// whole (checked where the loop is entered: lo and hi - lo multiples of P, off + c <= P) so the id loop
// runs exactly c times from the run's start, and the disjoint bit (if any, checked equal to c) is the
// constant c: O3 then unrolls the id loop fully and vectorises the run loop with interleaved accesses
// (stride 2c), what clang does with the hand-written loop. A switch on the run length picks the copy;
// other lengths run the original. Only for a small closed loop: every block branches within it (or,
// from its header, to the exit) and no value defined in it is used outside.
void Lowering::versionShortRuns(Function *F) {
  constexpr size_t kMaxInsts = 160;
  std::vector<RunLoop> todo;
  todo.swap(runLoops);
  for (const RunLoop &r : todo) {
    std::set<BasicBlock *> blocks = {r.RH};
    std::vector<BasicBlock *> order = {r.RH}, wl = {r.RH};
    bool ok = true;
    size_t insts = 0;
    while (!wl.empty() && ok) {
      BasicBlock *B = wl.back();
      wl.pop_back();
      insts += B->size();
      for (BasicBlock *S : successors(B)) {
        if (S == r.exitBB) {
          ok = ok && B == r.RH;
          continue;
        }
        if (blocks.insert(S).second) {
          order.push_back(S);
          wl.push_back(S);
        }
      }
    }
    if (!ok || insts > kMaxInsts)
      continue;
    BasicBlock *from = nullptr;
    for (BasicBlock *Pd : predecessors(r.RH))
      if (!blocks.count(Pd)) {
        ok = ok && !from;
        from = Pd;
      }
    for (BasicBlock *B : order) {
      for (BasicBlock *Pd : predecessors(B))
        ok = ok && (B == r.RH || blocks.count(Pd));
      for (Instruction &I : *B)
        for (User *U : I.users())
          ok = ok && blocks.count(cast<Instruction>(U)->getParent());
    }
    for (Instruction *I : {cast<Instruction>(r.id), cast<Instruction>(r.inDim), r.s, r.step})
      ok = ok && blocks.count(I->getParent());
    if (!ok || !from)
      continue;
    for (PHINode &PN : r.exitBB->phis())
      for (BasicBlock *Pd : PN.blocks())
        ok = ok && !blocks.count(Pd); // (none expected: kept simple)
    if (!ok)
      continue;
    // the dispatch on the run length, where the run loop is entered (its bounds may be per row:
    // narrowToGuards computes those inside the y loop)
    BasicBlock *Dsp = BasicBlock::Create(C, "cbs.runlen", F, r.RH);
    IRBuilder<> PB(Dsp);
    const uint64_t lens[] = {1, 2, 4};
    Value *key = ConstantInt::get(I64, 0);
    for (uint64_t c : lens) {
      Value *P2 = ConstantInt::get(I64, 2 * c), *c64 = ConstantInt::get(I64, c), *z = ConstantInt::get(I64, 0);
      Value *v = PB.CreateAnd(PB.CreateICmpEQ(r.len, c64), PB.CreateICmpEQ(r.P, P2));
      v = PB.CreateAnd(v, PB.CreateICmpULE(r.off, c64));
      v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateURem(r.lo, P2), z));
      v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateURem(PB.CreateSub(r.hi, r.lo), P2), z));
      if (r.bit)
        v = PB.CreateAnd(v, PB.CreateICmpEQ(PB.CreateZExt(r.bit, I64), c64));
      key = PB.CreateSelect(v, c64, key);
    }
    from->getTerminator()->replaceSuccessorWith(r.RH, Dsp);
    r.RH->replacePhiUsesWith(from, Dsp);
    SwitchInst *Sw = PB.CreateSwitch(key, r.RH, 3);
    fired(T_SHORT_RUNS);
    for (uint64_t c : lens) {
      ValueToValueMapTy VM;
      SmallVector<BasicBlock *, 16> copy;
      for (BasicBlock *B : order) {
        BasicBlock *NB = CloneBasicBlock(B, VM, ".run" + Twine(c), F);
        VM[B] = NB;
        copy.push_back(NB);
      }
      remapInstructionsInBlocks(copy, VM);
      Sw->addCase(cast<ConstantInt>(ConstantInt::get(I64, c)), cast<BasicBlock>(VM[r.RH]));
      auto *RH = cast<BasicBlock>(VM[r.RH]);
      IRBuilder<> B(RH->getTerminator());
      auto *s = cast<Instruction>(VM[r.s]);
      Value *start = B.CreateTrunc(s, I32);
      cast<PHINode>(VM[r.id])->setIncomingValueForBlock(RH, start);
      // exactly c ids (no wrap: the run lies in [lo, hi), within the group)
      cast<ICmpInst>(VM[r.inDim])->setOperand(1, B.CreateAdd(start, ConstantInt::get(I32, c), "", /*HasNUW=*/true));
      cast<Instruction>(VM[r.step])->setOperand(1, ConstantInt::get(I64, 2 * c));
      if (r.bit)
        for (BasicBlock *NB : copy)
          for (Instruction &I : *NB)
            I.replaceUsesOfWith(r.bit, ConstantInt::get(r.bit->getType(), c));
    }
  }
}


// Inside a loop that runs only ids without bit m, t ^ m and t | m are t + m (affine: vectorisable).
// (The id may be seen through trunc(zext id), as amdgcn bitcode has it.)
void Lowering::rewriteDisjointBit(PHINode *id, Value *m) {
  std::vector<Value *> forms = {id};
  for (User *Z : id->users())
    if (isa<ZExtInst>(Z))
      for (User *T : Z->users())
        if (isa<TruncInst>(T) && T->getType() == id->getType())
          forms.push_back(T);
  for (Value *V : forms)
    for (User *U : make_early_inc_range(V->users())) {
      auto *BO = dyn_cast<BinaryOperator>(U);
      if (!BO || (BO->getOpcode() != Instruction::Xor && BO->getOpcode() != Instruction::Or) ||
          BO->getOperand(BO->getOperand(0) == V ? 1 : 0) != m)
        continue;
      IRBuilder<> B(BO);
      Value *sum = B.CreateAdd(V, m, "", /*HasNUW=*/true);
      BO->replaceAllUsesWith(sum);
      BO->eraseFromParent();
    }
}

} // namespace ol_rs::lower
