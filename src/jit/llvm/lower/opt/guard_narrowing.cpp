// Work-item loops narrowed to the ids that pass an `i < n`-style guard (narrowToGuards), with the
// uniform values the bounds need hoisted in front of the loops (hoistIfUniform, hoistIfRowUniform).
#include "../lowering.h"

namespace ol_rs::lower {


// Is V available before the work-item loops: group-level already (a value of a `groupLevel` block,
// an argument, a constant), or a pure computation of such values in the loop body (`gid * gsx`,
// invariant loads of dereferenceable memory), which is then moved to the end of Pre?
bool Lowering::hoistIfUniform(Value *V, const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, int depth) {
  if (isa<Constant>(V) || isa<Argument>(V))
    return true;
  auto *I = dyn_cast<Instruction>(V);
  if (!I)
    return false;
  if (groupLevel.count(I->getParent()))
    return true;
  if (depth > 4 || isa<PHINode>(I))
    return false;
  // an invariant load from memory that is always there (the group size in amdgcn's implicit
  // arguments: a load from the WG function's own `implicitargs` alloca)
  auto *Ld = dyn_cast<LoadInst>(I);
  bool invariantLoad = Ld && Ld->isSimple() && Ld->hasMetadata(LLVMContext::MD_invariant_load) &&
                       isDereferenceablePointer(Ld->getPointerOperand(), Ld->getType(), I->getDataLayout());
  if (!invariantLoad && (I->mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(I) ||
                         !(isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<GetElementPtrInst>(I))))
    return false;
  for (Value *Op : I->operands())
    if (!hoistIfUniform(Op, groupLevel, Pre, depth + 1))
      return false;
  I->moveBefore(Pre->getTerminator()->getIterator());
  return true;
}


// Is V the same for every work-item of one row of the x loop: a pure function of the row's ids
// `rowIds` (y, z) and of uniform values (`ty * nx`, `(tz * ny + ty) * nx`)? Then its uniform parts
// are moved to the end of Pre (hoistIfUniform) and the rest to the end of Row, the x loop's entry
// block (which the y and z loop headers dominate).
bool Lowering::hoistIfRowUniform(Value *V, std::array<PHINode *, 2> rowIds, const std::set<BasicBlock *> &groupLevel,
                              BasicBlock *Pre, BasicBlock *Row, int depth) {
  if (hoistIfUniform(V, groupLevel, Pre))
    return true;
  auto *I = dyn_cast<Instruction>(V);
  if (!I)
    return false;
  if (I == rowIds[0] || I == rowIds[1] || I->getParent() == Row ||
      (rowIds[1] && I->getParent() == rowIds[1]->getParent()))
    return true;
  if (depth > 6 || isa<PHINode>(I) || I->mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(I) ||
      !(isa<BinaryOperator>(I) || isa<CastInst>(I)))
    return false;
  for (Value *Op : I->operands())
    if (!hoistIfRowUniform(Op, rowIds, groupLevel, Pre, Row, depth + 1))
      return false;
  I->moveBefore(Row->getTerminator()->getIterator());
  return true;
}


// With `assumed` (initially true), guards whose exactness is only known at run time are removed
// anyway and the run-time condition is and-ed into *assumed: the caller runs this loop nest only
// when it holds (and an unmodified one otherwise).
// `leaves(B)`: B does nothing but leave the region; values defined in `groupLevel` blocks (and
// arguments, constants) are the same for every work-item and available before the loops; bounds
// are computed at the end of Pre.
void Lowering::narrowToGuards(BasicBlock *RE, const std::function<bool(BasicBlock *)> &leaves,
                    const std::set<BasicBlock *> &groupLevel, BasicBlock *Pre, std::array<PHINode *, 3> ids,
                    std::array<ICmpInst *, 3> inDim, std::array<Value *, 3> gs, std::array<BasicBlock *, 3> from,
                    Value **assumed) {
  std::function<bool(BasicBlock *, int)> trivial = [&](BasicBlock *Sc, int depth) -> bool {
    if (leaves(Sc))
      return true;
    Instruction *first = &*Sc->getFirstNonPHIIt();
    if (auto *Br = dyn_cast<BranchInst>(first))
      if (Br->isUnconditional() && depth < 4)
        return trivial(Br->getSuccessor(0), depth + 1);
    return false;
  };
  auto avail = [&](Value *V) { return hoistIfUniform(V, groupLevel, Pre); };
  auto peel = [&](Value *V) {
    Value *inner;
    if (match(V, m_Trunc(m_ZExt(m_Value(inner)))) && inner->getType() == V->getType())
      return inner;
    return V;
  };
  auto affine = [&](Value *V, int &dim, Value *&c) {
    V = peel(V);
    for (int d = 0; d < 3; ++d)
      if (V == ids[d]) {
        dim = d;
        c = ConstantInt::get(I32, 0);
        return true;
      }
    auto *BO = dyn_cast<BinaryOperator>(V);
    if (!BO || BO->getOpcode() != Instruction::Add)
      return false;
    for (int s = 0; s < 2; ++s)
      for (int d = 0; d < 3; ++d)
        if (peel(BO->getOperand(s)) == ids[d] && avail(BO->getOperand(1 - s))) {
          dim = d;
          c = BO->getOperand(1 - s);
          return true;
        }
    return false;
  };
  // the parts of `cond` that must all be true (want = true) or all false (want = false)
  std::function<void(Value *, bool, std::vector<std::pair<Value *, bool>> &)> parts =
      [&](Value *V, bool want, std::vector<std::pair<Value *, bool>> &out) {
        Value *a, *b;
        if (want && match(V, m_LogicalAnd(m_Value(a), m_Value(b)))) {
          parts(a, want, out);
          parts(b, want, out);
        } else if (!want && match(V, m_LogicalOr(m_Value(a), m_Value(b)))) {
          parts(a, want, out);
          parts(b, want, out);
        } else {
          out.push_back({V, want});
        }
      };
  auto idDim = [&](Value *V) {
    V = peel(V);
    for (int d = 0; d < 3; ++d)
      if (V == ids[d])
        return d;
    return -1;
  };
  RunGuard run[3];
  IRBuilder<> PB(Pre->getTerminator());
  Value *zero64 = ConstantInt::get(I64, 0);
  // Row-affine ids (2-D and 3-D groups): V = x + B, an add without wrap-around (nuw; nsw for signed
  // comparisons) of the x id and a B that is the same in a whole row of the x loop (the flat id
  // x + y * nx + z * nx * ny). Each row's x loop is narrowed to the ids whose x + B passes, with the
  // bounds computed per row at the end of from[0] (RowB); B as i64 (zext or sext), nullptr if V is not.
  IRBuilder<> RowB(from[0]->getTerminator());
  std::map<std::pair<Value *, bool>, Value *> rowBaseMemo;
  auto rowBase = [&](Value *V, bool sgn) -> Value * {
    V = peel(V);
    auto key = std::make_pair(V, sgn);
    if (auto it = rowBaseMemo.find(key); it != rowBaseMemo.end())
      return it->second;
    Value *r = nullptr;
    auto *BO = dyn_cast<BinaryOperator>(V);
    if (BO && BO->getOpcode() == Instruction::Add && (sgn ? BO->hasNoSignedWrap() : BO->hasNoUnsignedWrap()))
      for (int s = 0; s < 2 && !r; ++s) {
        Value *Bv = BO->getOperand(1 - s);
        if (peel(BO->getOperand(s)) == ids[0] &&
            hoistIfRowUniform(Bv, {ids[1], ids[2]}, groupLevel, Pre, from[0]))
          r = sgn ? RowB.CreateSExt(Bv, I64) : RowB.CreateZExt(Bv, I64);
      }
    rowBaseMemo[key] = r;
    return r;
  };
  // matchRunGuard's ids: the dimension of a work-item id, 3 + i for the i-th row-affine id seen
  std::vector<Value *> rowIds;
  auto runDim = [&](Value *V) {
    int d = idDim(V);
    if (d >= 0 || !rowBase(V, false))
      return d;
    V = peel(V);
    auto it = std::find(rowIds.begin(), rowIds.end(), V);
    if (it == rowIds.end())
      it = rowIds.insert(rowIds.end(), V);
    return 3 + (int)(it - rowIds.begin());
  };
  bool rowX = false; // x's bounds are per row (built with RowB)
  // A box of ids: [lo, hi) per dimension (i64; x's per row where rowX), `touched` where a guard narrowed it.
  struct Box {
    Value *lo[3], *hi[3];
    bool touched[3] = {false, false, false};
  };
  Value *gs64[3];
  Box box;
  for (int d = 0; d < 3; ++d) {
    gs64[d] = PB.CreateZExt(gs[d], I64);
    box.lo[d] = zero64;
    box.hi[d] = gs64[d];
  }
  const Box every = box;
  // Narrows b by each part of `cond` that must be `want` for a work-item to go on; returns whether every
  // part was understood, the run-time conditions under which the narrowing is exact and-ed into allExact
  // (group-level) and rowExact (per row). With `runs`, run guards too (in run[], one form per dimension).
  auto narrowBy = [&](Value *cond, bool want, Box &b, bool runs, Value *&allExact, Value *&rowExact) {
    std::vector<std::pair<Value *, bool>> ps;
    parts(cond, want, ps);
    bool allKnown = true;
    for (auto &[V, w] : ps) {
      auto *Cmp = dyn_cast<ICmpInst>(V);
      if (!Cmp || !Cmp->getOperand(0)->getType()->isIntegerTy(32)) {
        allKnown = false;
        continue;
      }
      RunGuard rg;
      if (runs && on(T_RUN_GUARDS) && matchRunGuard(Cmp, w, runDim, avail, PB, rg)) {
        if (rg.dim >= 3) {
          // runs of x + B: x mod P in [o, o + len) cyclically, o = (off - B) mod P; runs starting at
          // o - P from the period at or below x's lower bound cover the one that wraps around
          // (B mod P per row without a division: Lemire's fastmod, B < 2^32 as x + B does not wrap,
          // with its multiplier computed once per group; P >= 2^32 leaves B as it is)
          Value *B64 = rowBase(rowIds[rg.dim - 3], false);
          Type *I128 = Type::getInt128Ty(C);
          Value *big = PB.CreateICmpUGT(rg.P, ConstantInt::get(I64, 0xffffffffu));
          Value *P32 = PB.CreateBinaryIntrinsic(Intrinsic::umin, rg.P, ConstantInt::get(I64, 0xffffffffu));
          Value *Mul = PB.CreateAdd(PB.CreateUDiv(ConstantInt::get(I64, ~0ULL), P32), ConstantInt::get(I64, 1));
          Value *frac = RowB.CreateZExt(RowB.CreateMul(Mul, B64), I128);
          Value *Bm = RowB.CreateTrunc(RowB.CreateLShr(RowB.CreateMul(frac, RowB.CreateZExt(P32, I128)), 64), I64);
          Bm = RowB.CreateSelect(big, B64, Bm);
          Value *o = RowB.CreateSelect(RowB.CreateICmpUGE(rg.off, Bm), RowB.CreateSub(rg.off, Bm),
                                       RowB.CreateSub(RowB.CreateAdd(rg.off, rg.P), Bm));
          rg.off = RowB.CreateSub(o, rg.P);
          rg.dim = 0;
          rg.bit = nullptr;
          rowX = true;
        }
        if (run[rg.dim].dim >= 0) { // one run form per dimension
          allKnown = false;
          continue;
        }
        if (!match(rg.exact, m_One()))
          rg.len = PB.CreateSelect(rg.exact, rg.len, ConstantInt::get(I64, 4096)); // not the form: all ids
        run[rg.dim] = rg;
        allExact = PB.CreateAnd(allExact, rg.exact);
        continue;
      }
      ICmpInst::Predicate pr = w ? Cmp->getPredicate() : Cmp->getInversePredicate();
      Value *A = Cmp->getOperand(0), *Bv = Cmp->getOperand(1), *c = nullptr;
      bool sgn = ICmpInst::isSigned(pr);
      Value *rowOff = nullptr; // B of a row-affine id: V = x + B + c
      bool rowNoWrap = false;  // V = x + B + c without wrap-around for every x (its adds' flags)
      auto rowAffine = [&](Value *V) {
        c = ConstantInt::get(I32, 0);
        if ((rowOff = rowBase(V, sgn)))
          return rowNoWrap = true;
        auto *BO = dyn_cast<BinaryOperator>(peel(V));
        if (BO && BO->getOpcode() == Instruction::Add)
          for (int s = 0; s < 2; ++s)
            if ((rowOff = rowBase(BO->getOperand(s), sgn)) && avail(BO->getOperand(1 - s))) {
              c = BO->getOperand(1 - s);
              rowNoWrap = sgn ? BO->hasNoSignedWrap() : BO->hasNoUnsignedWrap();
              return true;
            }
        rowOff = nullptr;
        return false;
      };
      int d = -1;
      bool swapped = false;
      if (!affine(A, d, c)) {
        if (affine(Bv, d, c))
          swapped = true;
        else if (rowAffine(A))
          d = 0;
        else if (rowAffine(Bv))
          d = 0, swapped = true;
        else {
          allKnown = false;
          continue;
        }
      }
      if (swapped) {
        std::swap(A, Bv);
        pr = ICmpInst::getSwappedPredicate(pr);
      }
      if (!avail(Bv) || pr == ICmpInst::ICMP_NE) {
        allKnown = false;
        continue;
      }
      rowX = rowX || rowOff;
      IRBuilder<> &XB = d == 0 && rowX ? RowB : PB;
      Value *c64 = sgn ? XB.CreateSExt(c, I64) : XB.CreateZExt(c, I64);
      if (rowOff)
        c64 = XB.CreateAdd(c64, rowOff);
      Value *b64 = sgn ? XB.CreateSExt(Bv, I64) : XB.CreateZExt(Bv, I64);
      Value *base = XB.CreateSub(b64, c64); // id + c <pred> b  <=>  id <pred> b - c, without wrap-around
      Value *one = ConstantInt::get(I64, 1);
      Value *l = zero64, *h = gs64[d];
      switch (ICmpInst::getUnsignedPredicate(pr)) {
      case ICmpInst::ICMP_ULT: h = base; break;
      case ICmpInst::ICMP_ULE: h = XB.CreateAdd(base, one); break;
      case ICmpInst::ICMP_UGT: l = XB.CreateAdd(base, one); break;
      case ICmpInst::ICMP_UGE: l = base; break;
      case ICmpInst::ICMP_EQ: l = base; h = XB.CreateAdd(base, one); break;
      default: allKnown = false; continue;
      }
      Value *limit = ConstantInt::get(I64, sgn ? (1ULL << 31) : (1ULL << 32));
      // group sizes are at most 1024 per dimension (launch validation), so a constant c decides here
      // (a row-affine V whose adds have the flags: every work-item of the row evaluates it, so it
      // does not wrap around)
      Value *exact = XB.CreateICmpSLE(
          XB.CreateAdd(c64, isa<ConstantInt>(c64) ? ConstantInt::get(I64, 1024) : gs64[d]), limit);
      if (rowOff && sgn) // B + c may also be below -2^31
        exact = XB.CreateAnd(exact, XB.CreateICmpSGE(c64, ConstantInt::get(I64, -(1LL << 31))));
      if (rowOff && rowNoWrap)
        exact = ConstantInt::getTrue(C);
      l = XB.CreateBinaryIntrinsic(Intrinsic::smin, XB.CreateBinaryIntrinsic(Intrinsic::smax, l, zero64), gs64[d]);
      h = XB.CreateBinaryIntrinsic(Intrinsic::smin, h, gs64[d]);
      b.lo[d] = XB.CreateBinaryIntrinsic(Intrinsic::smax, b.lo[d], XB.CreateSelect(exact, l, zero64));
      b.hi[d] = XB.CreateBinaryIntrinsic(Intrinsic::smin, b.hi[d], XB.CreateSelect(exact, h, gs64[d]));
      b.touched[d] = true;
      if (&XB == &RowB)
        rowExact = RowB.CreateAnd(rowExact, exact);
      else
        allExact = PB.CreateAnd(allExact, exact);
    }
    return allKnown;
  };
  BasicBlock *cur = RE, *sequence = nullptr;
  for (int step = 0; step < 4 && cur; ++step) {
    bool pure = true;
    for (Instruction &I : *cur)
      if (!I.isTerminator() && (I.mayHaveSideEffects() || isa<PHINode>(&I)))
        pure = false;
    auto *BI = dyn_cast<BranchInst>(cur->getTerminator());
    if (pure && BI && BI->isUnconditional()) { // falls through: the guard may be in the next block
      BasicBlock *Nx = BI->getSuccessor(0);
      cur = Nx->getSinglePredecessor() == cur && !leaves(Nx) ? Nx : nullptr;
      continue;
    }
    if (!pure || !BI || !BI->isConditional())
      break;
    bool t0 = trivial(BI->getSuccessor(0), 0), t1 = trivial(BI->getSuccessor(1), 0);
    if (t0 == t1) {
      sequence = t0 ? nullptr : cur; // pieces one after another, or none
      break;
    }
    bool want = t1; // the condition value that continues into the region
    BasicBlock *T = BI->getSuccessor(want ? 0 : 1);
    Value *allExact = ConstantInt::getTrue(C);
    Value *rowExact = ConstantInt::getTrue(C); // per-row conditions: never part of *assumed
    bool allKnown = narrowBy(BI->getCondition(), want, box, true, allExact, rowExact);
    if (allKnown) {
      auto *K = dyn_cast<ConstantInt>(allExact);
      if (assumed && !(K && K->isOne())) {
        *assumed = PB.CreateAnd(*assumed, allExact);
        K = ConstantInt::getTrue(C);
      }
      if (!match(rowExact, m_One())) {
        allExact = K && K->isOne() ? rowExact : RowB.CreateAnd(allExact, rowExact);
        K = nullptr;
      }
      if (K && K->isOne()) {
        BranchInst::Create(T, BI->getIterator());
        BI->eraseFromParent();
      } else {
        IRBuilder<> GB(BI);
        Value *cond = BI->getCondition();
        BI->setCondition(want ? GB.CreateOr(allExact, cond) : GB.CreateAnd(GB.CreateNot(allExact), cond));
      }
    }
    cur = T->getSinglePredecessor() == cur ? T : nullptr;
  }
  // Guarded pieces one after another (`if (t == 0) { ... } if (t < n) { ... }`: ol-group-loops' first
  // work-item before a guarded copy): the spine from `sequence` is pure blocks and branches whose one
  // side, the piece, rejoins it further on (the other side is the spine; the last branch's other side
  // leaves). A work-item outside every piece's ids runs only the spine, which computes nothing that
  // stays, so the loops narrow to the smallest box around the pieces' boxes. The guards stay.
  if (sequence) {
    // does From reach To, not through Avoid, not past a block that leaves the region?
    auto reaches = [&](BasicBlock *From, BasicBlock *To, BasicBlock *Avoid) {
      return is_contained(reachable({From}, leaves, {Avoid}), To);
    };
    std::vector<Box> pieces;
    bool ended = false;
    BasicBlock *sp = sequence;
    for (int step = 0; step < 8 && sp && !ended; ++step) {
      if (trivial(sp, 0)) {
        ended = true;
        break;
      }
      auto *BI = dyn_cast<BranchInst>(sp->getTerminator());
      bool pure = BI != nullptr;
      for (Instruction &I : *sp)
        pure = pure && (I.isTerminator() || !I.mayHaveSideEffects());
      if (!pure)
        break;
      if (BI->isUnconditional()) {
        sp = BI->getSuccessor(0);
        continue;
      }
      BasicBlock *S0 = BI->getSuccessor(0), *S1 = BI->getSuccessor(1), *next = nullptr;
      bool t0 = trivial(S0, 0), t1 = trivial(S1, 0), want;
      if (t0 && t1) {
        ended = true;
        break;
      }
      if (t0 != t1) { // the last guard: its other side leaves
        want = t1;
        ended = true;
      } else if (reaches(S0, S1, sp) && !reaches(S1, S0, sp)) {
        want = true;
        next = S1;
      } else if (reaches(S1, S0, sp) && !reaches(S0, S1, sp)) {
        want = false;
        next = S0;
      } else {
        break;
      }
      Box b = every;
      Value *allExact = ConstantInt::getTrue(C), *rowExact = allExact; // the guards stay: unused
      narrowBy(BI->getCondition(), want, b, false, allExact, rowExact);
      pieces.push_back(b);
      sp = next;
    }
    for (int d = 0; d < 3 && ended && !pieces.empty(); ++d) {
      if (!std::all_of(pieces.begin(), pieces.end(), [&](const Box &b) { return b.touched[d]; }))
        continue;
      IRBuilder<> &DB = d == 0 && rowX ? RowB : PB;
      Value *ulo = gs64[d], *uhi = zero64; // an empty piece adds no ids
      for (const Box &b : pieces) {
        Value *some = DB.CreateICmpSGT(b.hi[d], b.lo[d]);
        ulo = DB.CreateBinaryIntrinsic(Intrinsic::smin, ulo, DB.CreateSelect(some, b.lo[d], gs64[d]));
        uhi = DB.CreateBinaryIntrinsic(Intrinsic::smax, uhi, DB.CreateSelect(some, b.hi[d], zero64));
      }
      box.lo[d] = DB.CreateBinaryIntrinsic(Intrinsic::smax, box.lo[d], ulo);
      box.hi[d] = DB.CreateBinaryIntrinsic(Intrinsic::smin, box.hi[d], uhi);
      box.touched[d] = true;
    }
  }
  for (int d = 0; d < 3; ++d) {
    IRBuilder<> &DB = d == 0 && rowX ? RowB : PB;
    if (run[d].dim >= 0) {
      addRunLoop(ids[d], inDim[d], from[d], box.lo[d], DB.CreateBinaryIntrinsic(Intrinsic::smax, box.hi[d], box.lo[d]), run[d], DB);
      fired(T_RUN_GUARDS);
      if (run[d].bit && match(run[d].exact, m_One()))
        rewriteDisjointBit(ids[d], run[d].bit);
      continue;
    }
    if (!box.touched[d])
      continue;
    fired(T_NARROW_GUARDS);
    ids[d]->setIncomingValueForBlock(from[d], DB.CreateTrunc(box.lo[d], I32));
    // an empty range has hi <= lo; never below 0, which would read as a huge unsigned bound
    inDim[d]->setOperand(1, DB.CreateTrunc(DB.CreateBinaryIntrinsic(Intrinsic::smax, box.hi[d], box.lo[d]), I32));
  }
}

} // namespace ol_rs::lower
