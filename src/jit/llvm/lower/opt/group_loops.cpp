// Block-stride loops over the whole group run by one work-item (groupLoops, ol-group-loops): where the
// group's work-items together run the body of `for (j = t; j < n; j += S)` once for each j, one of them
// runs it as a plain loop, taken apart into rows where the body divides j by a constant.
#include "../lowering.h"

#include "llvm/Analysis/CFG.h"

namespace ol_rs::lower {

namespace {

// Whether V is the work-item's flat id in a group of gs[0] x gs[1] x gs[2]: the flat id argument, the x id
// of a 1-D group, or `ly * gs[0] + lx` (a multiply or shift; an add or a disjoint or) in a 2-D one.
bool isFlatId(Value *V, Function *F, const uint32_t gs[3]) {
  unsigned o = F->arg_size() - E_COUNT;
  Value *v = stripCasts(V), *lx = F->getArg(o + E_LX), *ly = F->getArg(o + E_LY);
  if (v == F->getArg(o + E_LWI) || (v == lx && gs[1] == 1 && gs[2] == 1))
    return true;
  if (gs[2] != 1 || !isPowerOf2_32(gs[0]))
    return false;
  auto row = m_CombineOr(m_Mul(m_Specific(ly), m_SpecificInt(gs[0])), m_Shl(m_Specific(ly), m_SpecificInt(Log2_32(gs[0]))));
  return match(v, m_c_Add(row, m_Specific(lx))) || match(v, m_c_DisjointOr(row, m_Specific(lx)));
}

// X with value-preserving casts and freezes stripped, if that is j: a zext, or a trunc flagged nuw.
bool isJ(Value *X, Value *j) {
  while (true) {
    if (X == j)
      return true;
    if (auto *T = dyn_cast<TruncInst>(X); T && T->hasNoUnsignedWrap())
      X = T->getOperand(0);
    else if (isa<ZExtInst>(X) || isa<FreezeInst>(X))
      X = cast<Instruction>(X)->getOperand(0);
    else
      return false;
  }
}

// The spaces I reads (first) and writes (second): a load's or store's, everything for another access;
// none for a load of memory nothing writes (`!invariant.load`: amdgcn's implicit arguments).
std::pair<unsigned, unsigned> accessOf(Instruction &I, Function *F) {
  if (!I.mayReadOrWriteMemory() || I.hasMetadata(LLVMContext::MD_invariant_load))
    return {0, 0};
  if (auto *L = dyn_cast<LoadInst>(&I))
    return {memorySpaceOf(L->getPointerOperand(), F), 0};
  if (auto *S = dyn_cast<StoreInst>(&I))
    return {0, memorySpaceOf(S->getPointerOperand(), F)};
  return {SPACE_ANY, SPACE_ANY};
}

// Whether a work-item's accesses from its last barrier (or the kernel's start) up to the loop entered
// from G may touch what the loop's iterations write or, for stores, read (loopReads, loopWrites): a
// work-item other than the first made them before its own iterations, and after groupLoops it makes them
// after the first work-item has run every iteration (a read of an element before the work-item's own
// iteration writes it, a store its own iteration overwrites).
bool touchedBefore(BasicBlock *G, Function *F, Function *BM, unsigned loopReads, unsigned loopWrites) {
  std::set<BasicBlock *> seen;
  SmallVector<BasicBlock *, 16> work = {G};
  while (!work.empty()) {
    BasicBlock *BB = work.pop_back_val();
    if (!seen.insert(BB).second)
      continue;
    bool barrier = false; // (backwards from the block's end: what precedes a barrier is not this interval's)
    for (Instruction &I : reverse(*BB)) {
      if (auto *CI = dyn_cast<CallInst>(&I); CI && CI->getCalledFunction() == BM) {
        barrier = true;
        break;
      }
      auto [r, w] = accessOf(I, F);
      if ((r & loopWrites) || (w & (loopWrites | loopReads)))
        return true;
    }
    if (!barrier)
      work.append(pred_begin(BB), pred_end(BB));
  }
  return false;
}

} // namespace

// ol-group-loops: a block-stride loop `for (j = t; j < n; j += S)` over the flat id t of a group of
// exactly S work-items (a specialisation), whose body depends on the work-item only through j, carries no
// value from one iteration to the next and leaves none after the loop, and whose memory the work-items
// have not touched since their last barrier (touchedBefore): the group's work-items together
// run the body once for every j in [0, n), in no order a kernel may rely on (between barriers, one
// work-item's stores are not another's to read). It becomes `if (t == 0) for (j = 0; j < n; j++)
// body(j)`: the same iterations, one work-item running them in order. Where the body takes j apart with
// a constant C, `j / C` and `j % C` (a tile of C columns filled from a flat index: conv2d's halo,
// `tile[i / 20][i % 20] = in[(y0 + i / 20) * w + x0 + i % 20]`), the loop becomes the nest `for (q) for
// (r < C)` with j = q * C + r and the quotient and remainder taken from q and r: the inner loop's
// addresses are then consecutive (contiguous vector loads and stores instead of gathers and scatters,
// or a scalar loop per element with a division). The guard `t < n` may stand before a preheader (clang's
// form when the loop needs a value computed once: a 64-bit bound, `for (k = t; k < 272; k += 256)` over a
// tile with a halo); the branch on t == 0 is then the preheader's.
unsigned Lowering::groupLoops(Function *F) {
  if (specKernel.empty())
    return 0;
  const uint32_t gs[3] = {specGs[0], specGs[1], specGs[2]};
  uint64_t S = uint64_t(gs[0]) * gs[1] * gs[2];
  std::set<Value *> div = divergentValues(F);
  struct Candidate {
    BasicBlock *P, *H, *LB, *E; // the block entering H (the guard, or a preheader after it), ...
    PHINode *j;
    Value *start, *n;
    std::vector<BasicBlock *> blocks;
  };
  // next = j + the group's size: the constant, or the x size of a 1-D group
  auto strideIsGroup = [&](BinaryOperator *next, PHINode *j) {
    Value *st = next->getOperand(0) == j ? next->getOperand(1) : next->getOperand(0);
    if (auto *K = dyn_cast<ConstantInt>(st))
      return K->getZExtValue() == S;
    return gs[1] == 1 && gs[2] == 1 && groupSizeDim(F, st) == 0;
  };
  std::set<Instruction *> divTerm = divergentTerms(F, div);
  std::vector<Candidate> found;
  {
    DominatorTree DT(*F);
    PostDominatorTree PDT(*F);
    LoopInfo LI(DT);
    // every work-item reaches G: no branch that differs between work-items decides whether it does (the
    // iterations of the work-items that do not reach it would be lost, and the first might be one)
    auto allReach = [&](BasicBlock *G) {
      return none_of(divTerm, [&](Instruction *T) {
        return !PDT.dominates(G, T->getParent()) && isPotentiallyReachable(T->getParent(), G, nullptr, &DT);
      });
    };
    for (Loop *L : LI.getLoopsInPreorder()) {
      BasicBlock *H = L->getHeader(), *P = L->getLoopPredecessor(), *LB = L->getLoopLatch();
      BasicBlock *E = L->getExitBlock();
      if (!P || !LB || !E || L->getExitingBlock() != LB || !E->phis().empty() || !L->getSubLoops().empty() ||
          pred_size(H) != 2 || !hasSingleElement(H->phis()))
        continue;
      // the guard G: P itself (branching to H or E), or the one predecessor of a preheader P (where
      // clang left what the loop computes once, `zext n` for a 64-bit compare)
      BasicBlock *G = P->getSingleSuccessor() == H ? P->getSinglePredecessor() : P;
      auto *LBr = dyn_cast<BranchInst>(LB->getTerminator());
      auto *GBr = G ? dyn_cast<BranchInst>(G->getTerminator()) : nullptr;
      if (!LBr || !GBr || !GBr->isConditional() || (GBr->getSuccessor(0) != E && GBr->getSuccessor(1) != E) ||
          (G != P && !P->phis().empty()))
        continue;
      Value *nextV, *n, *start, *n2;
      if (!entersWhenBelow(LBr, H, nextV, n) || !entersWhenBelow(GBr, G == P ? H : P, start, n2) ||
          (n != n2 && !constantLatch(H, LB, nextV, n, n2)))
        continue;
      PHINode *j = &*H->phis().begin();
      auto *next = dyn_cast<BinaryOperator>(nextV);
      if (!next || next->getOpcode() != Instruction::Add || !j->getType()->isIntegerTy(32) ||
          j->getIncomingValueForBlock(LB) != next || j->getIncomingValueForBlock(P) != start ||
          !strideIsGroup(next, j) || !isFlatId(start, F, gs) || div.count(n) ||
          (isa<Instruction>(n) && L->contains(cast<Instruction>(n))))
        continue;
      // the body: loads, stores and pure operations of j, of values computed in it and of values the
      // same for every work-item; nothing used after it
      bool ok = true;
      for (BasicBlock *BB : L->blocks())
        for (Instruction &I : *BB) {
          if (&I == j)
            continue;
          if (auto *CI = dyn_cast<CallInst>(&I)) {
            Function *Fn = CI->getCalledFunction();
            ok &= Fn && Fn->isIntrinsic() && !CI->mayHaveSideEffects() && !CI->mayReadOrWriteMemory();
          }
          if (auto *LI2 = dyn_cast<LoadInst>(&I))
            ok &= LI2->isSimple();
          if (auto *SI = dyn_cast<StoreInst>(&I))
            ok &= SI->isSimple();
          ok &= !I.isAtomic() && !isa<AllocaInst>(I) && !isa<InvokeInst>(I); // (PHIs: the header's is j)
          for (Value *Op : I.operands()) {
            auto *OI = dyn_cast<Instruction>(Op);
            ok &= isa<BasicBlock>(Op) || (OI && L->contains(OI)) || !div.count(Op);
          }
          for (User *U : I.users())
            ok &= L->contains(cast<Instruction>(U));
        }
      unsigned reads = 0, writes = 0;
      for (BasicBlock *BB : L->blocks())
        for (Instruction &I : *BB) {
          auto [r, w] = accessOf(I, F);
          reads |= r, writes |= w;
        }
      // (the guard's own branch, divergent, is the loop's: whether the work-item has iterations)
      if (ok && allReach(G) && !touchedBefore(P, F, M.getFunction("__ol_rs.barrier"), reads, writes))
        found.push_back({P, H, LB, E, j, start, n, std::vector<BasicBlock *>(L->blocks().begin(), L->blocks().end())});
    }
  }
  for (Candidate &c : found) {
    // the constant the body divides j by, if any
    uint64_t Cq = 0;
    for (BasicBlock *BB : c.blocks)
      for (Instruction &I : *BB)
        if (auto *D = dyn_cast<BinaryOperator>(&I); D && !Cq && D->getOpcode() == Instruction::UDiv && isJ(D->getOperand(0), c.j))
          if (auto *K = dyn_cast<ConstantInt>(D->getOperand(1)); K && K->getZExtValue() > 1 && K->getZExtValue() < (1u << 16))
            Cq = K->getZExtValue();
    // if (t == 0) for (q = 0; q * C < n; q++) for (r = 0; r < min(C, n - q * C); r++) body(q * C + r)
    // (without a C, one loop over j < n)
    // (P's branch: the guard's, or the preheader's into H, whose values the body may use)
    auto *GBr = cast<BranchInst>(c.P->getTerminator());
    BasicBlock *Qh = BasicBlock::Create(C, "gl.q", F, c.H), *Rpre = BasicBlock::Create(C, "gl.rpre", F, c.H);
    BasicBlock *Rh = BasicBlock::Create(C, "gl.r", F, c.H), *Rl = BasicBlock::Create(C, "gl.rlatch", F, c.E);
    BasicBlock *Ql = BasicBlock::Create(C, "gl.qlatch", F, c.E);
    IRBuilder<> B(GBr);
    // (without a C, C is n: one row)
    Value *n64 = B.CreateZExt(c.n, I64, "gl.n"), *Cv = Cq ? ConstantInt::get(I64, Cq) : n64;
    B.CreateCondBr(B.CreateICmpEQ(c.start, ConstantInt::get(c.start->getType(), 0), "gl.first"), Qh, c.E);
    GBr->eraseFromParent();
    B.SetInsertPoint(Qh);
    PHINode *q = B.CreatePHI(I64, 2, "gl.qi");
    q->addIncoming(ConstantInt::get(I64, 0), c.P);
    Value *qc = B.CreateMul(q, Cv, "gl.qc", true, true);
    B.CreateCondBr(B.CreateICmpULT(qc, n64), Rpre, c.E);
    B.SetInsertPoint(Rpre);
    Value *rend = B.CreateBinaryIntrinsic(Intrinsic::umin, B.CreateSub(n64, qc), Cv);
    B.CreateBr(Rh);
    B.SetInsertPoint(Rh);
    PHINode *r = B.CreatePHI(I64, 2, "gl.ri");
    r->addIncoming(ConstantInt::get(I64, 0), Rpre);
    Instruction *RhBr = B.CreateCondBr(B.CreateICmpULT(r, rend), Rh, Ql); // (the body's entry set below)
    B.SetInsertPoint(RhBr);
    Value *jnew = B.CreateTrunc(B.CreateAdd(qc, r, "", true, true), I32, "gl.j");
    B.SetInsertPoint(Rl);
    r->addIncoming(B.CreateAdd(r, ConstantInt::get(I64, 1), "", true, true), Rl);
    B.CreateBr(Rh);
    B.SetInsertPoint(Ql);
    q->addIncoming(B.CreateAdd(q, ConstantInt::get(I64, 1), "", true, true), Ql);
    B.CreateBr(Qh);
    // the body, j replaced; its latch goes on to the next r
    ValueToValueMapTy VM;
    SmallVector<BasicBlock *, 8> copy;
    for (BasicBlock *BB : c.blocks) {
      BasicBlock *NB = CloneBasicBlock(BB, VM, ".gl", F, nullptr);
      VM[BB] = NB;
      copy.push_back(NB);
    }
    remapInstructionsInBlocks(copy, VM);
    auto *jc = cast<PHINode>(VM[c.j]);
    jc->replaceAllUsesWith(jnew);
    jc->eraseFromParent();
    cast<BranchInst>(RhBr)->setSuccessor(0, cast<BasicBlock>(VM[c.H]));
    auto *LBc = cast<BasicBlock>(VM[c.LB]);
    Instruction *oldBr = LBc->getTerminator();
    Value *oldCond = cast<BranchInst>(oldBr)->getCondition();
    BranchInst::Create(Rl, oldBr->getIterator());
    oldBr->eraseFromParent();
    RecursivelyDeleteTriviallyDeadInstructions(oldCond);
    // j / C and j % C from q and r
    std::vector<BinaryOperator *> divs;
    for (BasicBlock *BB : copy)
      for (Instruction &I : *BB)
        if (auto *D = dyn_cast<BinaryOperator>(&I); Cq && D && D->getOpcode() == Instruction::UDiv &&
                                                    isJ(D->getOperand(0), jnew) && match(D->getOperand(1), m_SpecificInt(Cq)))
          divs.push_back(D);
    for (BinaryOperator *D : divs) {
      Value *X = D->getOperand(0);
      IRBuilder<> DB(D);
      Value *qv = DB.CreateZExtOrTrunc(q, D->getType()), *rv = DB.CreateZExtOrTrunc(r, D->getType());
      for (User *U : make_early_inc_range(X->users())) {
        auto *R = dyn_cast<BinaryOperator>(U);
        if (R && R->getOpcode() == Instruction::URem && R->getOperand(0) == X && match(R->getOperand(1), m_SpecificInt(Cq))) {
          R->replaceAllUsesWith(rv);
          R->eraseFromParent();
        } else if (R && R->getOpcode() == Instruction::Sub && R->getOperand(0) == X &&
                   match(R->getOperand(1), m_c_Mul(m_Specific(D), m_SpecificInt(Cq)))) {
          Value *M = R->getOperand(1);
          R->replaceAllUsesWith(rv);
          R->eraseFromParent();
          RecursivelyDeleteTriviallyDeadInstructions(M);
        }
      }
      D->replaceAllUsesWith(qv);
      RecursivelyDeleteTriviallyDeadInstructions(D);
    }
    // the original loop is unreachable now
    for (BasicBlock *BB : c.blocks)
      BB->dropAllReferences();
    for (BasicBlock *BB : c.blocks)
      BB->eraseFromParent();
    fired(T_GROUP_LOOPS);
  }
  return found.size();
}


} // namespace ol_rs::lower
