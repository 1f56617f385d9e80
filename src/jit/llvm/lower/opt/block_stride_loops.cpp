// Block-stride and grid-stride loops with a trip count the same for every work-item (blockStrideLoops):
// the CUDA idioms `for (j = t + c; j < n; j += nt)` in a kernel with barriers, and `for (i = bid * nt + t;
// i < n; i += nb * nt)` in any kernel (in a barrier-free one it then takes the barrier path: kernel_body.cpp).
// The loop's shape (entersWhenBelow, stripCasts, constantLatch) is shared with opt/group_loops.cpp.
#include "../lowering.h"

#include <optional>

namespace ol_rs::lower {

namespace {

// The most instructions a uniform loop's body may have for a second copy, without the guard, for the
// rounds where it always passes
constexpr size_t kFullRoundsBudget = 2048;

// The largest value V can have, when it is built from constants and the local ids of a group whose size
// `gs` is known (0: unknown), through zext, add, mul, shl, `and` by constants, and `urem` by a constant (a
// lane id, `t % W`, whatever t is).
std::optional<uint64_t> maxOf(Value *V, Function *F, const uint32_t gs[3], int depth = 0) {
  if (depth > 8)
    return std::nullopt;
  if (auto *CI = dyn_cast<ConstantInt>(V))
    return CI->getValue().getActiveBits() <= 64 ? std::optional<uint64_t>(CI->getZExtValue()) : std::nullopt;
  unsigned o = F->arg_size() - E_COUNT;
  if (auto *A = dyn_cast<Argument>(V)) {
    unsigned n = A->getArgNo();
    for (int d = 0; d < 3; ++d)
      if (n == o + E_LX + d && gs[d])
        return gs[d] - 1;
    if (n == o + E_LWI && gs[0] && gs[1] && gs[2])
      return uint64_t(gs[0]) * gs[1] * gs[2] - 1;
    return std::nullopt;
  }
  auto *I = dyn_cast<Instruction>(V);
  if (!I)
    return std::nullopt;
  if (isa<ZExtInst>(I))
    return maxOf(I->getOperand(0), F, gs, depth + 1);
  auto *BO = dyn_cast<BinaryOperator>(I);
  if (!BO)
    return std::nullopt;
  if (auto *D = dyn_cast<ConstantInt>(BO->getOperand(1)); D && BO->getOpcode() == Instruction::URem && !D->isZero())
    return std::min(D->getZExtValue() - 1, maxOf(BO->getOperand(0), F, gs, depth + 1).value_or(~uint64_t(0)));
  auto a = maxOf(BO->getOperand(0), F, gs, depth + 1);
  auto b = maxOf(BO->getOperand(1), F, gs, depth + 1);
  uint64_t lim = BO->getType()->getIntegerBitWidth() >= 64 ? ~uint64_t(0) : (uint64_t(1) << BO->getType()->getIntegerBitWidth()) - 1;
  std::optional<uint64_t> r;
  switch (BO->getOpcode()) {
  case Instruction::Add:
  case Instruction::Or: // (a + b bounds a | b too)
    if (a && b && *a <= lim - *b)
      r = *a + *b;
    break;
  case Instruction::Mul:
    if (a && b && (*b == 0 || *a <= lim / *b))
      r = *a * *b;
    break;
  case Instruction::Shl:
    if (a && isa<ConstantInt>(BO->getOperand(1)) && *b < 32 && *a <= (lim >> *b))
      r = *a << *b;
    break;
  case Instruction::And:
    if (a || b)
      r = std::min(a.value_or(lim), b.value_or(lim));
    break;
  default:
    break;
  }
  return r && *r <= lim ? r : std::nullopt;
}

// The instructions of block P that V depends on (through operands in P, in P's order), where each may run
// before P: pure computations, and loads of the group's implicit arguments or dispatch packet (amdgcn's
// block counts and group sizes, the WG function's allocas of 256 and 64 bytes: always there). False
// where one may not.
bool hoistableFrom(Value *V, BasicBlock *P, Function *F, std::set<Instruction *> &deps, int depth = 0) {
  auto *I = dyn_cast<Instruction>(V);
  if (!I || I->getParent() != P || deps.count(I))
    return true;
  if (depth > 8 || isa<PHINode>(I))
    return false;
  bool ok = !I->mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(I);
  if (auto *Ld = dyn_cast<LoadInst>(I))
    ok = readsImplicitArgs(F, F->arg_size() - E_COUNT, Ld);
  if (!ok)
    return false;
  for (Value *Op : I->operands())
    if (!hoistableFrom(Op, P, F, deps, depth + 1))
      return false;
  deps.insert(I);
  return true;
}

} // namespace

// Whether branch Br goes to Into exactly when `x < n` (unsigned; signed too where isSigned is given, which
// says which it is), in any of the four ways of writing it; sets x and n.
bool entersWhenBelow(BranchInst *Br, BasicBlock *Into, Value *&x, Value *&n, bool *isSigned) {
  auto *Cmp = Br && Br->isConditional() ? dyn_cast<ICmpInst>(Br->getCondition()) : nullptr;
  if (!Cmp || Br->getSuccessor(0) == Br->getSuccessor(1))
    return false;
  Value *a = Cmp->getOperand(0), *b = Cmp->getOperand(1);
  ICmpInst::Predicate p = Br->getSuccessor(0) == Into ? Cmp->getPredicate() : Cmp->getInversePredicate();
  if (Br->getSuccessor(0) != Into && Br->getSuccessor(1) != Into)
    return false;
  if (isSigned)
    *isSigned = ICmpInst::isSigned(p);
  else if (ICmpInst::isSigned(p))
    return false;
  if (p == ICmpInst::ICMP_ULT || p == ICmpInst::ICMP_SLT) {
    x = a, n = b;
    return true;
  }
  if (p == ICmpInst::ICMP_UGT || p == ICmpInst::ICMP_SGT) {
    x = b, n = a;
    return true;
  }
  return false;
}

Value *low32(Value *V) {
  auto *A = dyn_cast<BinaryOperator>(V);
  auto *M = A && A->getOpcode() == Instruction::And ? dyn_cast<ConstantInt>(A->getOperand(1)) : nullptr;
  return M && A->getType()->isIntegerTy(64) && M->getZExtValue() == 0xffffffffull ? A->getOperand(0) : nullptr;
}

// V without zext/trunc around it.
Value *stripCasts(Value *V) {
  while (isa<ZExtInst>(V) || isa<TruncInst>(V))
    V = cast<Instruction>(V)->getOperand(0);
  return V;
}

// With constants n and S, clang writes the latch `j + S < n` as `j < n - S` (rotated, the guard still
// `start < n`): latch compares `j < c` with c + S == n (no wrap: n < 2^32). Then the latch is taken as
// `j + S < n` (nextV becomes j's next value): the same for j < 2^32 - S, and a larger j is past n either way.
bool constantLatch(BasicBlock *H, BasicBlock *LB, Value *&nextV, Value *&n, Value *guardN) {
  auto *j = dyn_cast<PHINode>(nextV);
  auto *c = dyn_cast<ConstantInt>(n), *gn = dyn_cast<ConstantInt>(guardN);
  if (!j || j->getParent() != H || !c || !gn || j->getBasicBlockIndex(LB) < 0)
    return false;
  auto *next = dyn_cast<BinaryOperator>(j->getIncomingValueForBlock(LB));
  if (!next || next->getOpcode() != Instruction::Add)
    return false;
  auto *S = dyn_cast<ConstantInt>(next->getOperand(0) == j ? next->getOperand(1) : next->getOperand(0));
  if (!S || (next->getOperand(0) != j && next->getOperand(1) != j))
    return false;
  uint64_t sum = c->getZExtValue() + S->getZExtValue();
  if (sum != gn->getZExtValue() || sum > 0xffffffffull)
    return false;
  nextV = next;
  n = guardN;
  return true;
}

// The factor of S that is the group size in dimension d, where S is that size times something (`k * gsx`,
// either way round, or `k << c` and `k * c` with the constant size of a specialisation): a grid-stride
// loop's stride, the grid's size in d. Null where S is not such a product.
Value *Lowering::groupSizeFactor(Function *F, Value *S, int d) {
  // (a 32-bit product widened: `j += nb * nt`, j 64-bit; or its low 32 bits, SPIR-V's)
  auto *BO = dyn_cast<BinaryOperator>(stripCasts(low32(S) ? low32(S) : S));
  if (!BO)
    return nullptr;
  uint32_t gx = specKernel.empty() ? 0 : specGs[d];
  for (int k = 0; k < 2; ++k) {
    Value *g = BO->getOperand(k);
    auto *GC = dyn_cast<ConstantInt>(g);
    if (BO->getOpcode() == Instruction::Mul &&
        (groupSizeDim(F, g) == d || (gx && GC && GC->getZExtValue() == gx)))
      return g;
  }
  auto *Sh = dyn_cast<ConstantInt>(BO->getOperand(1));
  if (BO->getOpcode() == Instruction::Shl && gx && Sh && Sh->getZExtValue() < 32 &&
      (uint64_t(1) << Sh->getZExtValue()) == gx)
    return ConstantInt::get(BO->getType(), gx);
  return nullptr;
}

// A loop `for (j = b0 + off; j < n; j += S)` (clang's rotated form: a guard `b0 + off < n` in front, the
// latch `j + S < n`, or `j < n - S` with constants: constantLatch), with b0, n and S the same for every
// work-item and off in [0, S) (the local x id with S the group's x size, a value of the ids below a
// constant S in a specialisation, or a lane id `t % W` with S = W, a warp's lanes over its row), or off
// the local x id and S a multiple of the x group size (`nb * nt`: a grid-stride loop; S may be computed
// in a preheader after the guard, and moves before it: hoistableFrom): every work-item runs it a
// different number of times, so its exits are divergent and the work-item loop cannot run inside it
// (ol-implicit-loop-barriers). It becomes `for (b = b0; b < n; b += S) if (b + off < n) body(b + off)`:
// the same iterations of the body for each work-item (b + off takes the original loop's values of j, and
// the iterations it skips change nothing), a trip count every work-item shares. j is 32 or 64 bits; its
// compares unsigned or signed (`int i`: both must be, S at least 0); a 64-bit j may start from a 32-bit
// sum widened (`(size_t)(bid * nt + t)`, or SPIR-V's low 32 bits of a 64-bit one), whose terms are then
// widened apart. Where `b + S`, `b + off` or that 32-bit sum could wrap around (n > 2^32 - S, n + off >
// 2^32, b0 + off >= 2^32, in j's width and signedness; checked once, before the loop, in twice j's
// width), the original loop runs instead, kept as it was. Values computed in the loop may leave it only
// through the exit block's PHIs, as its header PHIs' next values; loops with barriers stay as they are.
unsigned Lowering::blockStrideRound(Function *F, std::set<BasicBlock *> &cold) {
  unsigned o = F->arg_size() - E_COUNT;
  Function *BM = M.getFunction("__ol_rs.barrier"), *EM = M.getFunction("__ol_rs.exit");
  std::set<Value *> div = divergentValues(F);
  uint32_t gs[3] = {0, 0, 0};
  if (!specKernel.empty())
    for (int d = 0; d < 3; ++d)
      gs[d] = specGs[d];
  struct Candidate {
    std::vector<BasicBlock *> blocks; // the loop's (the LoopInfo is gone when they are transformed)
    std::set<BasicBlock *> inLoop;
    BasicBlock *G, *P, *H, *LB, *E; // the guard, the block entering H (G or a preheader), ...
    PHINode *j;
    BinaryOperator *next;
    Value *b0, *off, *n, *S;
    Value *maxOff; // nullptr: S - 1, or gsOff - 1
    Value *gsOff;  // S's factor the group size in off's dimension (a grid-stride loop), or nullptr
    std::set<Instruction *> sDeps; // what S is computed from in the preheader: moved before the guard
    bool sgn;                      // the compares are signed
    unsigned widen;                // b0 and off are 32-bit, to widen by this opcode (0: j's own width)
  };
  std::vector<Candidate> found;
  {
    DominatorTree DT(*F);
    LoopInfo LI(DT);
    for (Loop *L : LI.getLoopsInPreorder()) {
      BasicBlock *H = L->getHeader(), *P = L->getLoopPredecessor(), *LB = L->getLoopLatch();
      BasicBlock *E = L->getExitBlock();
      // (one way out, the latch's: a `break` in the body would leave the copy without E's PHIs)
      if (!P || !LB || !E || L->getExitingBlock() != LB || pred_size(H) != 2 || cold.count(H) ||
          any_of(found, [&](const Candidate &c) { return c.inLoop.count(H); }))
        continue;
      // the guard G: P itself (branching to H or E), or the one predecessor of a preheader P; its other
      // side reaches E directly or through an empty block X
      auto *LBr = dyn_cast<BranchInst>(LB->getTerminator());
      BasicBlock *G = P;
      if (P->getSingleSuccessor() == H && !P->getSinglePredecessor())
        continue;
      if (P->getSingleSuccessor() == H)
        G = P->getSinglePredecessor();
      auto *GBr = dyn_cast<BranchInst>(G->getTerminator());
      if (!LBr || !GBr || !GBr->isConditional())
        continue;
      BasicBlock *into = G == P ? H : P;
      if (GBr->getSuccessor(0) == GBr->getSuccessor(1) || (G != P && !P->phis().empty()))
        continue;
      // the latch `j + S < n`, the guard `start < n`, j's PHI from start and j + S
      // (signed, `int i`, the usual CUDA form: the guard's and the latch's compares both signed)
      Value *nextV, *n, *start, *n2;
      bool sgn = false, sgn2 = false;
      if (!entersWhenBelow(LBr, H, nextV, n, &sgn) || !entersWhenBelow(GBr, into, start, n2, &sgn2) ||
          sgn != sgn2)
        continue;
      if (n != n2 && (sgn || !constantLatch(H, LB, nextV, n, n2)))
        continue;
      auto *next = dyn_cast<BinaryOperator>(nextV);
      if (!next || next->getOpcode() != Instruction::Add ||
          !(next->getType()->isIntegerTy(32) || next->getType()->isIntegerTy(64)))
        continue;
      PHINode *j = nullptr;
      Value *S = nullptr;
      for (int k = 0; k < 2 && !j; ++k)
        if (auto *Ph = dyn_cast<PHINode>(next->getOperand(k)); Ph && Ph->getParent() == H) {
          j = Ph;
          S = next->getOperand(1 - k);
        }
      if (!j || j->getIncomingValueForBlock(LB) != next || j->getIncomingValueForBlock(P) != start)
        continue;
      auto inLoop = [&](Value *V) {
        auto *I = dyn_cast<Instruction>(V);
        return I && L->contains(I);
      };
      if (div.count(n) || div.count(S) || inLoop(n) || inLoop(S))
        continue;
      // a stride computed in the preheader (a grid-stride loop's, after the guard) moves before the guard
      std::set<Instruction *> sDeps;
      if (P != G && !hoistableFrom(S, P, F, sDeps))
        continue;
      // start = b0 + off, b0 uniform (or start itself the divergent part)
      // (a 64-bit j may start from the 32-bit sum, widened: `(size_t)(bid * nt + t)`; b0 and off are then
      // that sum's terms, widened where the loop is built, which checks that the sum does not wrap)
      Value *b0 = ConstantInt::get(next->getType(), 0), *off = start;
      unsigned widen = 0; // (an opcode: ZExt, SExt or And)
      // (or SPIR-V's 64-bit ids: the sum's low 32 bits, `and` 0xffffffff, widen is And)
      if (auto *Ext = dyn_cast<CastInst>(start);
          Ext && (isa<ZExtInst>(Ext) || isa<SExtInst>(Ext)) && Ext->getSrcTy()->isIntegerTy(32) &&
          isa<BinaryOperator>(Ext->getOperand(0))) {
        widen = Ext->getOpcode();
        off = Ext->getOperand(0);
        b0 = ConstantInt::get(I32, 0);
      } else if (Value *sum = low32(start)) {
        widen = Instruction::And;
        off = sum;
      }
      if (auto *SA = dyn_cast<BinaryOperator>(off); SA && SA->getOpcode() == Instruction::Add) {
        for (int k = 0; k < 2; ++k)
          if (!div.count(SA->getOperand(k)) && div.count(SA->getOperand(1 - k))) {
            b0 = SA->getOperand(k);
            off = SA->getOperand(1 - k);
          }
      }
      if (!div.count(off))
        continue;
      // off < S: the local x id and the x group size, or a bound of the ids below a constant S; or the
      // local x id and a multiple of the x group size (a grid-stride loop: off is at most that size - 1)
      // (or the same in y or z: a 2-D grid-stride loop's rows)
      Value *maxOff = nullptr, *gsOff = nullptr;
      Value *offId = stripCasts(off);
      int od = -1;
      for (int d = 0; d < 3; ++d)
        if (offId == F->getArg(o + E_LX + d))
          od = d;
      bool xPair = od >= 0 && groupSizeDim(F, S) == od;
      if (!xPair && od >= 0)
        gsOff = groupSizeFactor(F, S, od);
      if (!xPair && !gsOff) {
        auto *SC = dyn_cast<ConstantInt>(S);
        auto m = maxOf(off, F, gs);
        if (!SC || !m || *m >= SC->getZExtValue())
          continue;
        maxOff = ConstantInt::get(I32, *m);
      }
      // no barrier or exit inside; what leaves the loop is a header PHI's next value, through E's PHIs (or
      // used after E when E is the loop's alone: it gets the PHIs then)
      bool ok = true;
      std::set<Value *> nextValues;
      for (PHINode &Ph : H->phis())
        if (&Ph != j)
          nextValues.insert(Ph.getIncomingValueForBlock(LB));
      for (BasicBlock *BB : L->blocks())
        for (Instruction &I : *BB) {
          if (auto *CI = dyn_cast<CallInst>(&I))
            if (Function *Fn = CI->getCalledFunction(); Fn && (Fn == BM || Fn == EM))
              ok = false;
          for (User *U : I.users()) {
            auto *UI = cast<Instruction>(U);
            if (L->contains(UI))
              continue;
            if (!nextValues.count(&I) || !((isa<PHINode>(UI) && UI->getParent() == E) || E->getSinglePredecessor()))
              ok = false;
          }
        }
      for (PHINode &Ph : E->phis())
        if (inLoop(Ph.getIncomingValueForBlock(LB)) && !nextValues.count(Ph.getIncomingValueForBlock(LB)))
          ok = false;
      if (!ok)
        continue;
      std::vector<BasicBlock *> blocks(L->blocks().begin(), L->blocks().end());
      found.push_back({blocks, std::set<BasicBlock *>(blocks.begin(), blocks.end()), G, P, H, LB, E, j, next, b0, off,
                       n, S, maxOff, gsOff, sDeps, sgn, widen});
    }
  }
  for (Candidate &c : found) {
    for (Instruction &I : make_early_inc_range(*c.P))
      if (c.sDeps.count(&I))
        I.moveBefore(c.G->getTerminator()->getIterator());
    // values used after a dedicated exit E (the loop's, and a preheader's, which E's code may use) pass
    // through PHIs in E, which the copy's exit then joins
    std::vector<BasicBlock *> defining = c.blocks;
    if (c.P != c.G)
      defining.push_back(c.P);
    if (c.E->getSinglePredecessor() == c.LB)
      for (BasicBlock *BB : defining)
        for (Instruction &I : *BB) {
          bool outside = any_of(I.users(), [&](User *U) {
            auto *UI = cast<Instruction>(U);
            return !c.inLoop.count(UI->getParent()) && UI->getParent() != c.P &&
                   !(isa<PHINode>(UI) && UI->getParent() == c.E);
          });
          if (!outside)
            continue;
          PHINode *Ph = PHINode::Create(I.getType(), 2, I.getName() + ".lcssa", c.E->begin());
          Ph->addIncoming(&I, c.LB);
          I.replaceUsesWithIf(Ph, [&](Use &U) {
            auto *UI = cast<Instruction>(U.getUser());
            return UI != Ph && !c.inLoop.count(UI->getParent()) && UI->getParent() != c.P;
          });
        }
    // the copy that becomes the uniform loop
    ValueToValueMapTy VM;
    SmallVector<BasicBlock *, 8> copy;
    std::vector<BasicBlock *> blocks = c.blocks;
    if (c.P != c.G)
      blocks.push_back(c.P); // (the preheader: what it computes for the loop)
    for (BasicBlock *BB : blocks) {
      BasicBlock *NB = CloneBasicBlock(BB, VM, ".bs", F);
      VM[BB] = NB;
      copy.push_back(NB);
    }
    remapInstructionsInBlocks(copy, VM);
    BasicBlock *H2 = cast<BasicBlock>(VM[c.H]), *LB2 = cast<BasicBlock>(VM[c.LB]);
    auto *j2 = cast<PHINode>(VM[c.j]);
    // in front: the original loop where anything could wrap around, else the copy
    BasicBlock *into2 = c.P != c.G ? cast<BasicBlock>(VM[c.P]) : H2;
    BranchInst *PBr = cast<BranchInst>(c.G->getTerminator());
    BasicBlock *G1 = BasicBlock::Create(C, "bs.orig", F, c.H), *G2 = BasicBlock::Create(C, "bs.uniform", F, H2);
    IRBuilder<> PB(PBr);
    // b + S and b + off within 32 bits for every b < n, and b0 + off for the one round where b0 >= n: below
    // 2^32 (unsigned), or 2^31 with S at least 0 (signed; n and b0 may be negative)
    // (in twice j's width: i64 or i128)
    Type *T = c.next->getType();
    unsigned w = T->getIntegerBitWidth();
    Type *Wide = IntegerType::get(C, 2 * w);
    auto ext = [&](Value *V) { return c.sgn ? PB.CreateSExt(V, Wide) : PB.CreateZExt(V, Wide); };
    Value *S64 = ext(c.S), *lim = ConstantInt::get(Wide, APInt::getOneBitSet(2 * w, c.sgn ? w - 1 : w));
    Value *mo64 = c.maxOff ? PB.CreateZExt(c.maxOff, Wide)
                  : PB.CreateSub(c.gsOff ? PB.CreateZExt(c.gsOff, Wide) : S64, ConstantInt::get(Wide, 1));
    Value *moT = PB.CreateTrunc(mo64, T); // (b + moT < n: every work-item's b + off is; no wrap, as checked)
    Value *safe = nullptr;
    if (c.widen) {
      // the 32-bit sum b0 + off, which j starts from widened, does not wrap: the widened terms add up to it
      // (with And, b0's low 32 bits and off: off is below 2^32 as the bound says)
      bool s32 = c.widen == Instruction::SExt, low = c.widen == Instruction::And;
      Value *b32 = low ? PB.CreateAnd(c.b0, ConstantInt::get(I64, 0xffffffffull))
                   : s32 ? PB.CreateSExt(c.b0, I64) : PB.CreateZExt(c.b0, I64);
      safe = PB.CreateICmpSLT(PB.CreateAdd(b32, PB.CreateTrunc(mo64, I64)),
                              ConstantInt::get(I64, uint64_t(1) << (s32 ? 31 : 32)));
      c.b0 = low ? b32 : PB.CreateCast(Instruction::CastOps(c.widen), c.b0, T);
      if (!low)
        c.off = PB.CreateCast(Instruction::CastOps(c.widen), c.off, T);
    }
    Value *n64 = ext(c.n);
    Value *fits = PB.CreateAnd(PB.CreateAnd(PB.CreateICmpSLE(n64, PB.CreateSub(lim, S64)),
                                            PB.CreateICmpSLE(PB.CreateAdd(n64, mo64), lim)),
                               PB.CreateICmpSLT(ext(c.b0), PB.CreateSub(lim, mo64)));
    safe = safe ? PB.CreateAnd(safe, fits) : fits;
    if (c.sgn)
      safe = PB.CreateAnd(safe, PB.CreateICmpSGE(S64, ConstantInt::get(Wide, 0)));
    safe->setName("bs.safe");
    BranchInst::Create(PBr->getSuccessor(0), PBr->getSuccessor(1), PBr->getCondition(), G1);
    IRBuilder<> G2B(G2);
    G2B.CreateBr(into2); // (with b0 >= n the copy runs one round whose body its guard skips)
    PB.CreateCondBr(safe, G2, G1);
    PBr->eraseFromParent();
    // G's successors (H or the preheader, and E or the empty block before it) now come from G1; the copy's
    // entry from G2
    for (BasicBlock *Su : successors(G1))
      Su->replacePhiUsesWith(c.G, G1);
    into2->replacePhiUsesWith(c.G, G2);
    // the copy: j2 counts b from b0; the body runs for b + off < n
    j2->setIncomingValueForBlock(into2 == H2 ? G2 : into2, c.b0);
    Instruction *firstBody = &*H2->getFirstNonPHIIt();
    // (b + off does not wrap around, as checked in front: b is below n, or b0 in the first round, and
    // n + off and b0 + off fit. Said, so that the body's addresses are consecutive across the work-items)
    auto *jw = BinaryOperator::CreateAdd(j2, c.off, "bs.j", firstBody->getIterator());
    if (c.sgn)
      jw->setHasNoSignedWrap();
    else
      jw->setHasNoUnsignedWrap();
    // (j + S in the body, as in the original, is now jw + S)
    j2->replaceUsesWithIf(jw, [&](Use &U) { return U.getUser() != jw; });
    BasicBlock *Body = H2->splitBasicBlock(firstBody->getIterator(), H2->getName() + ".body");
    if (LB2 == H2) // (the split moved the latch's branch, and H2's PHIs now name Body)
      LB2 = Body;
    auto *LBr2 = cast<BranchInst>(LB2->getTerminator());
    BasicBlock *NL = BasicBlock::Create(C, "bs.latch", F, c.E);
    // H2: j2, jw, then the guard (splitBasicBlock left an unconditional branch to Body)
    H2->getTerminator()->eraseFromParent();
    IRBuilder<> HB(H2);
    ICmpInst::Predicate lt = c.sgn ? ICmpInst::ICMP_SLT : ICmpInst::ICMP_ULT;
    HB.CreateCondBr(HB.CreateICmp(lt, jw, c.n), Body, NL);
    IRBuilder<> NB(NL);
    std::map<Value *, Value *> after; // a header PHI's next value in the copy -> its value at NL
    for (PHINode &Ph : H2->phis()) {
      if (&Ph == j2)
        continue;
      Value *v = Ph.getIncomingValueForBlock(LB2);
      PHINode *q = NB.CreatePHI(Ph.getType(), 2, Ph.getName() + ".bs");
      q->addIncoming(v, LB2);
      q->addIncoming(&Ph, H2);
      after[v] = q;
    }
    Value *bn = NB.CreateAdd(j2, c.S, "bs.next");
    NB.CreateCondBr(NB.CreateICmp(lt, bn, c.n), H2, c.E); // (no loop ID: the original's is its own)
    // the copy's latch now goes to NL; H2's PHIs come from NL
    Value *oldCond = LBr2->getCondition();
    LBr2->eraseFromParent();
    BranchInst::Create(NL, LB2);
    RecursivelyDeleteTriviallyDeadInstructions(oldCond);
    for (PHINode &Ph : H2->phis()) {
      int k = Ph.getBasicBlockIndex(LB2);
      if (k < 0)
        continue;
      if (&Ph == j2) {
        Ph.setIncomingBlock(k, NL);
        Ph.setIncomingValue(k, bn);
      } else {
        Value *v = Ph.getIncomingValue(k);
        Ph.setIncomingBlock(k, NL);
        Ph.setIncomingValue(k, after[v]);
      }
    }
    // the exit: from NL, the header PHIs' values after the last iteration
    for (PHINode &Ph : c.E->phis()) {
      Value *v = Ph.getIncomingValueForBlock(c.LB);
      auto *I = dyn_cast<Instruction>(v);
      Value *mapped = I && c.inLoop.count(I->getParent()) ? after[VM[v]] : (I && I->getParent() == c.P && c.P != c.G) ? static_cast<Value *>(VM[v]) : v;
      Ph.addIncoming(mapped, NL);
    }
    // the rounds where every work-item's b + off is below n (all but the last, mostly) run a copy of the
    // body without the guard: no masked accesses in the work-item loop around it, and a loop inside the
    // body (a 2-D grid-stride loop's over x) under uniform control, to be made uniform in the next round.
    // The guarded body runs the last round; it and the original loop are cold: the next round leaves
    // their loops as they are
    std::vector<BasicBlock *> body{Body};
    for (BasicBlock *BB : copy)
      if (BB != H2 && BB != into2)
        body.push_back(BB);
    size_t size = 0;
    for (BasicBlock *BB : body)
      size += BB->size();
    cold.insert(c.blocks.begin(), c.blocks.end());
    if (size <= kFullRoundsBudget) {
      BasicBlock *Partial = H2->splitBasicBlock(H2->getTerminator()->getIterator(), "bs.partial");
      ValueToValueMapTy VF;
      SmallVector<BasicBlock *, 8> full;
      for (BasicBlock *BB : body) {
        BasicBlock *NB2 = CloneBasicBlock(BB, VF, ".full", F);
        VF[BB] = NB2;
        full.push_back(NB2);
      }
      remapInstructionsInBlocks(full, VF);
      for (PHINode &q : NL->phis()) {
        Value *v = q.getIncomingValueForBlock(LB2);
        q.addIncoming(VF.count(v) ? static_cast<Value *>(VF[v]) : v, cast<BasicBlock>(VF[LB2]));
      }
      H2->getTerminator()->eraseFromParent();
      IRBuilder<> FB(H2);
      Value *last = FB.CreateAdd(j2, moT, "bs.last", !c.sgn, c.sgn);
      FB.CreateCondBr(FB.CreateICmp(lt, last, c.n), cast<BasicBlock>(VF[Body]), Partial);
      cold.insert(body.begin(), body.end());
    }
    fired(T_BLOCK_STRIDE_LOOPS);
  }
  return found.size();
}

// Rounds of blockStrideRound until one finds nothing: a loop inside a transformed one's body (a 2-D
// grid-stride loop's over x, inside the one over y) is taken in the round after (at most four nested).
unsigned Lowering::blockStrideLoops(Function *F) {
  std::set<BasicBlock *> cold;
  unsigned n = 0;
  for (int round = 0; round < 4; ++round) {
    unsigned k = blockStrideRound(F, cold);
    n += k;
    if (!k)
      break;
  }
  return n;
}

} // namespace ol_rs::lower
