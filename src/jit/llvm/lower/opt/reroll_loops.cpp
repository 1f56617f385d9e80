// Reduction loops that the GPU compiler unrolled, rolled back (rerollLoops, transform ol-reroll-loops).
//
// clang's nvptx64 pipeline unrolls small loops by 4 at run time (a loop of `t & ~3` iterations by 4, a
// remainder loop after it). On a GPU that is one work-item's instruction stream; on the CPU the loop
// vectoriser then sees four loads a[j], a[j+1], a[j+2], a[j+3] per iteration, an interleaved group of
// stride 4: one wide load and four deinterleaving shuffles per vector (costly in AVX2 shuffles), where the
// loop as written reads a[j] with one contiguous vector load. The rank loop of a radix sort
// (`for (j = 0; j < t; j++) rank += digit[j] == d`) ran 2.5x slower on nvptx64 bitcode than on amdgcn's,
// which arrives not unrolled.
//
// What is rolled back: a single-block loop whose every header PHI is either an induction variable (an
// affine recurrence of constant step S, its back-edge value `phi + S`) or a reduction: a chain of K links
// of one operation (add, mul, and, or, xor, fadd, fmul, sub and fsub with the chain on the left, an
// integer or float min/max) from the PHI to its back-edge value, link k combining the chain with a term
// t_k. Every term t_k (k >= 1) is t_0 computed for the element k steps further: the same instructions,
// where the leaves are affine recurrences of the loop, t_k's leaf t_0's plus k * S / K (scalar evolution
// says so), or the same loop-invariant value. Then the loop is the loop as written with its K copies: each
// step S becomes S / K, the PHIs take the first link, the rest is dead.
//
// Why it is legal: the rolled loop runs K iterations for each of the unrolled loop's, with the leaves
// taking, in order, the values that t_0, t_1, ..., t_{K-1} had; a link at a time, the chain combines the
// same terms in the same order (float sums included: no reassociation). Nothing in the loop writes memory
// or has side effects, so which iteration reads what is all that counts. The exit is taken when an
// induction variable's back-edge value equals a loop-invariant bound: the rolled variable reaches the
// bound after K times as many iterations and not before, as long as K times the largest trip count is at
// most the variable's period (2^w / 2^tz(step), checked with the trip count's bound). Values used after
// the loop are only the induction variables' back-edge values (the same final values) and the chains'
// last links (the first link's final value, the same). Flags and metadata of the instructions kept are intersected
// with their copies' (andIRFlags, combineMetadataForCSE; loads the smaller alignment).
//
// Where: a barrier-free kernel's loops (the loop vectoriser vectorises them per work-item), and in a
// kernel with barriers only the loops whose trip count differs between work-items: a loop with a uniform
// trip count may get the work-item loop inside it (ol-implicit-loop-barriers), where the unrolled body
// is the better one. Only loops that read memory: a memory-free divergent loop is ol-lockstep-loops'.
#include "../lowering.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Transforms/Utils/Local.h"

namespace ol_rs::lower {

namespace {

constexpr unsigned kMaxRerollFactor = 16;

// One reduction: the PHI, its links in chain order and the term each combines.
struct Chain {
  PHINode *phi = nullptr;
  std::vector<Instruction *> links;
  std::vector<Value *> terms;
};

// An induction variable: its PHI, its back-edge value `phi + step` and the rolled loop's step, step / K.
struct Induction {
  PHINode *phi = nullptr;
  BinaryOperator *inc = nullptr;
  APInt rolledStep;
};

struct Plan {
  Loop *L = nullptr;
  unsigned K = 0;
  std::vector<Chain> chains;
  std::vector<Induction> ivs;
  std::vector<std::pair<Instruction *, Instruction *>> pairs; // a kept instruction, one of its copies
};

// The operation a chain link applies, if it may be one: (opcode or intrinsic id, commutative).
std::optional<std::pair<unsigned, bool>> linkOp(const Instruction *I) {
  if (auto *BO = dyn_cast<BinaryOperator>(I)) {
    switch (BO->getOpcode()) {
    case Instruction::Add: case Instruction::Mul: case Instruction::And: case Instruction::Or:
    case Instruction::Xor: case Instruction::FAdd: case Instruction::FMul:
      return std::make_pair(unsigned(BO->getOpcode()), true);
    case Instruction::Sub: case Instruction::FSub:
      return std::make_pair(unsigned(BO->getOpcode()), false);
    default:
      return std::nullopt;
    }
  }
  if (auto *II = dyn_cast<IntrinsicInst>(I)) {
    switch (II->getIntrinsicID()) {
    case Intrinsic::umin: case Intrinsic::umax: case Intrinsic::smin: case Intrinsic::smax:
    case Intrinsic::minnum: case Intrinsic::maxnum: case Intrinsic::minimum: case Intrinsic::maximum:
      return std::make_pair(Instruction::OtherOpsEnd + unsigned(II->getIntrinsicID()), true);
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// P's chain of links, from P to its back-edge value: each link the only in-loop user of the one before.
std::optional<Chain> chainOf(PHINode *P, BasicBlock *H) {
  Chain c;
  c.phi = P;
  auto *last = dyn_cast<Instruction>(P->getIncomingValueForBlock(H));
  if (!last || last->getParent() != H)
    return std::nullopt;
  Value *cur = P;
  std::optional<std::pair<unsigned, bool>> op0;
  while (c.links.size() <= kMaxRerollFactor) {
    Instruction *next = nullptr;
    for (User *U : cur->users()) {
      auto *I = cast<Instruction>(U);
      if (I == P)
        continue;
      if (I->getParent() != H || next) // used after the loop (but the last link) or twice
        return std::nullopt;
      next = I;
    }
    if (!next)
      return std::nullopt;
    auto op = linkOp(next);
    if (!op || (op0 && *op != *op0) || next->getType() != P->getType())
      return std::nullopt;
    op0 = op;
    unsigned at = next->getOperand(0) == cur ? 0 : 1;
    if (next->getOperand(at) != cur || next->getOperand(1 - at) == cur || (at == 1 && !op->second))
      return std::nullopt;
    c.links.push_back(next);
    c.terms.push_back(next->getOperand(1 - at));
    if (next == last)
      return c;
    cur = next;
  }
  return std::nullopt;
}

struct Matcher {
  Loop *L;
  ScalarEvolution &SE;
  unsigned K;
  std::vector<std::pair<Instruction *, Instruction *>> &pairs;
  std::map<Value *, Value *> seen; // for the copy being matched: t_0's value -> t_k's
  unsigned budget = 256;

  // b is a (t_0's value) for the element k steps further.
  bool match(Value *a, Value *b, unsigned k) {
    if (!budget--)
      return false;
    if (auto it = seen.find(a); it != seen.end())
      return it->second == b;
    auto *IA = dyn_cast<Instruction>(a);
    if (a == b && !(IA && L->contains(IA)))
      return seen[a] = b, true;
    if (a->getType() != b->getType())
      return false;
    if (SE.isSCEVable(a->getType()))
      if (auto *AR = dyn_cast<SCEVAddRecExpr>(SE.getSCEV(a)); AR && AR->getLoop() == L && AR->isAffine())
        if (auto *S = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE))) {
          const APInt &s = S->getAPInt();
          APInt kk(s.getBitWidth(), k), KK(s.getBitWidth(), K);
          if (s.srem(KK) == 0) {
            auto *d = dyn_cast<SCEVConstant>(SE.getMinusSCEV(SE.getSCEV(b), AR));
            if (d && d->getAPInt() == s.sdiv(KK) * kk)
              return seen[a] = b, true;
          }
        }
    auto *IB = dyn_cast<Instruction>(b);
    if (!IA || !IB || IA == IB || !L->contains(IA) || !L->contains(IB) || isa<PHINode>(IA) ||
        !IA->isSameOperationAs(IB, Instruction::CompareIgnoringAlignment))
      return false;
    seen[a] = b;
    for (unsigned i = 0; i < IA->getNumOperands(); ++i)
      if (!match(IA->getOperand(i), IB->getOperand(i), k))
        return false;
    pairs.push_back({IA, IB});
    return true;
  }
};

// The plan for L, if it is an unrolled reduction loop.
std::optional<Plan> planFor(Loop *L, ScalarEvolution &SE) {
  BasicBlock *H = L->getHeader();
  if (L->getNumBlocks() != 1 || !L->getLoopPreheader() || !L->getExitBlock())
    return std::nullopt;
  auto *Br = dyn_cast<BranchInst>(H->getTerminator());
  if (!Br || !Br->isConditional())
    return std::nullopt;
  bool reads = false;
  for (Instruction &I : *H) {
    if (I.mayWriteToMemory() || I.mayHaveSideEffects() || I.isAtomic() || (isa<LoadInst>(I) && !cast<LoadInst>(I).isSimple()))
      return std::nullopt;
    reads |= I.mayReadFromMemory();
  }
  if (!reads)
    return std::nullopt;
  Plan p;
  p.L = L;
  std::set<PHINode *> chainPhis;
  for (PHINode &P : H->phis()) {
    auto *AR = SE.isSCEVable(P.getType()) ? dyn_cast<SCEVAddRecExpr>(SE.getSCEV(&P)) : nullptr;
    if (AR && AR->getLoop() == L && AR->isAffine() && P.getType()->isIntegerTy()) {
      auto *inc = dyn_cast<BinaryOperator>(P.getIncomingValueForBlock(H));
      auto *S = dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE));
      if (!inc || !S || inc->getOpcode() != Instruction::Add || inc->getOperand(0) != &P ||
          !isa<ConstantInt>(inc->getOperand(1)) || cast<ConstantInt>(inc->getOperand(1))->getValue() != S->getAPInt())
        return std::nullopt;
      p.ivs.push_back({&P, inc, APInt()});
      continue;
    }
    auto c = chainOf(&P, H);
    if (!c || (p.K && c->links.size() != p.K) || c->links.size() < 2)
      return std::nullopt;
    p.K = c->links.size();
    p.chains.push_back(*c);
    chainPhis.insert(&P);
  }
  if (p.chains.empty())
    return std::nullopt;
  for (Induction &iv : p.ivs) {
    const APInt &step = cast<ConstantInt>(iv.inc->getOperand(1))->getValue();
    APInt KK(step.getBitWidth(), p.K);
    if (step.srem(KK) != 0 || step.sdiv(KK) == 0)
      return std::nullopt;
    iv.rolledStep = step.sdiv(KK);
  }
  // the exit: taken exactly when an induction variable's back-edge value equals a loop-invariant bound
  // (the whole body has run for the last element then; a test of the PHI would leave after one copy)
  auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
  if (!Cmp || !Cmp->isEquality() || Cmp->getParent() != H)
    return std::nullopt;
  bool exitWhenTrue = Br->getSuccessor(0) != H;
  if (exitWhenTrue != (Cmp->getPredicate() == ICmpInst::ICMP_EQ))
    return std::nullopt;
  const Induction *exitIv = nullptr;
  for (const Induction &iv : p.ivs)
    for (int s = 0; s < 2; ++s)
      if (Cmp->getOperand(s) == iv.inc && L->isLoopInvariant(Cmp->getOperand(1 - s)))
        exitIv = &iv;
  if (!exitIv)
    return std::nullopt;
  const SCEV *maxBtc = SE.getConstantMaxBackedgeTakenCount(L);
  if (isa<SCEVCouldNotCompute>(maxBtc))
    return std::nullopt;
  {
    const APInt &rolled = exitIv->rolledStep;
    unsigned period = rolled.getBitWidth() - rolled.countr_zero(); // its values repeat after 2^period steps
    APInt trips = SE.getUnsignedRangeMax(maxBtc).zext(130) + 1;
    if ((trips * p.K).ugt(APInt::getOneBitSet(130, period)))
      return std::nullopt;
  }
  // every value used after the loop: an induction variable's back-edge value or a chain's last link
  for (Instruction &I : *H)
    for (User *U : I.users())
      if (cast<Instruction>(U)->getParent() != H) {
        bool ok = any_of(p.ivs, [&](const Induction &iv) { return &I == iv.inc; }) ||
                  any_of(p.chains, [&](const Chain &c) { return &I == c.links.back(); });
        if (!ok)
          return std::nullopt;
      }
  // every term is the first's for the element k steps further
  for (Chain &c : p.chains)
    for (unsigned k = 1; k < p.K; ++k) {
      Matcher m{L, SE, p.K, p.pairs, {}};
      if (!m.match(c.terms[0], c.terms[k], k))
        return std::nullopt;
    }
  // the kept terms depend on no chain (a term combining the chain so far is no copy of the first)
  for (auto &[a, b] : p.pairs)
    for (Value *Op : a->operands())
      if (auto *P = dyn_cast<PHINode>(Op); P && chainPhis.count(P))
        return std::nullopt;
  return p;
}

} // namespace

unsigned Lowering::rerollLoops(Function *F, bool withBarriers) {
  std::set<Instruction *> divTerm;
  if (withBarriers)
    divTerm = divergentTerms(F, divergentValues(F));
  LoopAnalyses A(*F, M.getTargetTriple());
  std::vector<Plan> plans;
  for (Loop *L : A.LI.getLoopsInPreorder())
    if (L->isInnermost() && (!withBarriers || divTerm.count(L->getHeader()->getTerminator())))
      if (auto p = planFor(L, A.SE))
        plans.push_back(std::move(*p));
  // (the loops are disjoint blocks: each plan reads only its own, so all are applied after all are made)
  for (Plan &p : plans) {
    for (auto &[a, b] : p.pairs) {
      a->andIRFlags(b);
      if (auto *LA = dyn_cast<LoadInst>(a)) {
        LA->setAlignment(std::min(LA->getAlign(), cast<LoadInst>(b)->getAlign()));
        combineMetadataForCSE(a, b, false);
      }
    }
    for (Chain &c : p.chains) {
      Instruction *last = c.links.back();
      c.phi->setIncomingValueForBlock(p.L->getHeader(), c.links[0]);
      last->replaceUsesOutsideBlock(c.links[0], p.L->getHeader());
    }
    for (Induction &iv : p.ivs)
      iv.inc->setOperand(1, ConstantInt::get(iv.inc->getType(), iv.rolledStep));
    for (Chain &c : p.chains)
      RecursivelyDeleteTriviallyDeadInstructions(c.links.back());
    if (MDNode *ID = p.L->getLoopID()) // (no longer unrolled)
      p.L->setLoopID(makePostTransformationMetadata(C, ID, {"llvm.loop.unroll."}, {}));
  }
  return plans.size();
}

} // namespace ol_rs::lower
