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
// Interleaved chains (mergeChains): amdgcn's clang vectorises an integer reduction loop (two i32 lanes,
// often unrolled by 8), which reaches us scalarised: m chains, chain j taking the elements j, j + m, ...
// Rolled as above, it would read two interleaved streams, which the loop vectoriser leaves alone. When
// the operation is associative and commutative on integers (add, mul, and, or, xor, min, max) and the
// chains' final values reach the rest of the function only combined by it (their reduction after the
// loop, its remainder loops: onlyCombined), the loop becomes one chain over every element, the others
// keeping their start values: the same terms combined, in an order that cannot change the result.
// A counter of the vector iterations whose step K is a multiple of then counts elements (its start and
// bound scaled), and the GPU vectoriser's `llvm.loop.isvectorized` goes with the unroll metadata.
// Addresses are compared as a root and a byte offset through GEPs (Matcher::rootOffset), so that
// `(char *)&a[j] + 8` is `a[j + 2]` where scalar evolution keeps a sign-extended counter opaque.
//
// Where: a barrier-free kernel's loops (the loop vectoriser vectorises them per work-item), and in a
// kernel with barriers only the loops whose trip count differs between work-items: a loop with a uniform
// trip count may get the work-item loop inside it (ol-implicit-loop-barriers), where the unrolled body
// is the better one. Only loops that read memory: a memory-free divergent loop is ol-lockstep-loops'.
#include "../lowering.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
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
  // a counter that only decides the exit, whose step K is a multiple of (mergeChains: it counted the
  // vector iterations): counting elements instead, its start and the exit's bound times `scale`
  uint64_t scale = 1;
  ICmpInst *exit = nullptr;
};

struct Plan {
  Loop *L = nullptr;
  unsigned K = 0;
  std::vector<Chain> chains;
  bool merged = false; // chains[0] takes every term, the others keep their start values (mergeChains)
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

  // A pointer as a root and a byte offset, through GEPs: an index of a GEP with `nuw` is not negative
  // where the GEP is not poison (sign-extended, a negative index would wrap around), so it counts
  // zero-extended, and an affine i32 counter stays affine (scalar evolution cannot see through the `sext`
  // of a counter that may reach 2^31: amdgcn's `digit[j + 2]` as `(char *)&digit[j] + 8`); other indices
  // sign-extended, as the GEP computes them.
  std::pair<Value *, const SCEV *> rootOffset(Value *V) {
    const DataLayout &DL = L->getHeader()->getDataLayout();
    Type *IT = DL.getIndexType(V->getType());
    const SCEV *off = SE.getZero(IT);
    while (auto *G = dyn_cast<GEPOperator>(V)) {
      if (DL.getIndexType(G->getType()) != IT)
        break;
      for (gep_type_iterator GI = gep_type_begin(G), GE = gep_type_end(G); GI != GE; ++GI) {
        Value *Idx = GI.getOperand();
        if (StructType *ST = GI.getStructTypeOrNull()) {
          uint64_t field = cast<ConstantInt>(Idx)->getZExtValue();
          off = SE.getAddExpr(off, SE.getConstant(IT, DL.getStructLayout(ST)->getElementOffset(field)));
          continue;
        }
        if (!Idx->getType()->isIntegerTy() || Idx->getType()->getIntegerBitWidth() > IT->getIntegerBitWidth())
          return {nullptr, nullptr};
        const SCEV *I = G->hasNoUnsignedWrap() ? SE.getZeroExtendExpr(SE.getSCEV(Idx), IT)
                                               : SE.getSignExtendExpr(SE.getSCEV(Idx), IT);
        off = SE.getAddExpr(off, SE.getMulExpr(I, SE.getConstant(IT, GI.getSequentialElementStride(DL))));
      }
      V = G->getPointerOperand();
    }
    return {V, off};
  }

  // Are pointers a and b the same loop-invariant root, b's offset a's for the element k steps further?
  bool sameElementFurther(Value *a, Value *b, unsigned k) {
    auto [ra, oa] = rootOffset(a);
    auto [rb, ob] = rootOffset(b);
    auto *RI = dyn_cast_or_null<Instruction>(ra);
    return ra && ra == rb && !(RI && L->contains(RI)) && furtherBy(oa, ob, k);
  }

  // Is sa an affine recurrence of the loop, of a constant step divisible by K, and sb sa for the element
  // k steps further (sa + k * step / K)?
  bool furtherBy(const SCEV *sa, const SCEV *sb, unsigned k) {
    auto *AR = dyn_cast<SCEVAddRecExpr>(sa);
    auto *S = AR && AR->getLoop() == L && AR->isAffine() ? dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE)) : nullptr;
    if (!S)
      return false;
    const APInt &s = S->getAPInt();
    APInt kk(s.getBitWidth(), k), KK(s.getBitWidth(), K);
    if (s.srem(KK) != 0)
      return false;
    auto *d = dyn_cast<SCEVConstant>(SE.getMinusSCEV(sb, sa));
    return d && d->getAPInt() == s.sdiv(KK) * kk;
  }

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
    if (SE.isSCEVable(a->getType()) && furtherBy(SE.getSCEV(a), SE.getSCEV(b), k))
      return seen[a] = b, true;
    if (a->getType()->isPointerTy() && sameElementFurther(a, b, k))
      return seen[a] = b, true;
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

// Can p.L run p.K times as many iterations with its induction variables' steps divided by p.K (each
// step divisible, none becoming 0; then iv.rolledStep)? The exit: taken exactly when an induction
// variable's back-edge value equals a loop-invariant bound (the whole body has run for the last element
// then; a test of the PHI would leave after one copy), and p.K times the largest trip count within the
// variable's period.
bool rollable(Plan &p, ScalarEvolution &SE, BranchInst *Br) {
  auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
  for (Induction &iv : p.ivs) {
    const APInt &step = cast<ConstantInt>(iv.inc->getOperand(1))->getValue();
    APInt KK(step.getBitWidth(), p.K);
    iv.scale = 1;
    if (step.srem(KK) == 0 && step.sdiv(KK) != 0) {
      iv.rolledStep = step.sdiv(KK);
      continue;
    }
    // a counter of whole iterations: its PHI used only by its increment, that only by the PHI and the exit
    bool counter = iv.phi->hasOneUser() && Cmp && !step.isNegative() && step.isPowerOf2() && KK.urem(step) == 0 &&
                   all_of(iv.inc->users(), [&](User *U) { return U == iv.phi || U == Cmp; });
    if (!counter)
      return false;
    iv.scale = KK.udiv(step).getZExtValue();
    iv.rolledStep = APInt(step.getBitWidth(), 1);
    iv.exit = Cmp;
  }
  if (!Cmp || !Cmp->isEquality() || Cmp->getParent() != p.L->getHeader())
    return false;
  bool exitWhenTrue = Br->getSuccessor(0) != p.L->getHeader();
  if (exitWhenTrue != (Cmp->getPredicate() == ICmpInst::ICMP_EQ))
    return false;
  const Induction *exitIv = nullptr;
  for (const Induction &iv : p.ivs)
    for (int s = 0; s < 2; ++s)
      if (Cmp->getOperand(s) == iv.inc && p.L->isLoopInvariant(Cmp->getOperand(1 - s)))
        exitIv = &iv;
  if (!exitIv)
    return false;
  if (exitIv->scale != 1) {
    // the counter goes from its start S0 to the bound B by its step; scaled, from S0 * scale to
    // B * scale by 1, which it reaches first after as many elements when B - S0 is a multiple of the
    // step and (B - S0) * scale at most 2^w (the wrap-around of both products cancels)
    BasicBlock *Pre = p.L->getLoopPreheader();
    Value *B = Cmp->getOperand(Cmp->getOperand(0) == exitIv->inc ? 1 : 0);
    const SCEV *span = SE.getMinusSCEV(SE.getSCEV(B), SE.getSCEV(exitIv->phi->getIncomingValueForBlock(Pre)));
    const APInt &step = cast<ConstantInt>(exitIv->inc->getOperand(1))->getValue();
    unsigned w = step.getBitWidth();
    if (SE.getMinTrailingZeros(span) < step.logBase2() ||
        (SE.getUnsignedRangeMax(span).zext(130) * exitIv->scale).ugt(APInt::getOneBitSet(130, w)))
      return false;
    return true;
  }
  const SCEV *maxBtc = SE.getConstantMaxBackedgeTakenCount(p.L);
  if (isa<SCEVCouldNotCompute>(maxBtc))
    return false;
  {
    const APInt &rolled = exitIv->rolledStep;
    unsigned period = rolled.getBitWidth() - rolled.countr_zero(); // its values repeat after 2^period steps
    APInt trips = SE.getUnsignedRangeMax(maxBtc).zext(130) + 1;
    if ((trips * p.K).ugt(APInt::getOneBitSet(130, period)))
      return false;
  }
  return true;
}

// The vector reduction of an operation that mergeChains takes (integer, associative, commutative).
Intrinsic::ID reductionOf(std::pair<unsigned, bool> op) {
  switch (op.first) {
  case Instruction::Add: return Intrinsic::vector_reduce_add;
  case Instruction::Mul: return Intrinsic::vector_reduce_mul;
  case Instruction::And: return Intrinsic::vector_reduce_and;
  case Instruction::Or: return Intrinsic::vector_reduce_or;
  case Instruction::Xor: return Intrinsic::vector_reduce_xor;
  case Instruction::OtherOpsEnd + unsigned(Intrinsic::umin): return Intrinsic::vector_reduce_umin;
  case Instruction::OtherOpsEnd + unsigned(Intrinsic::umax): return Intrinsic::vector_reduce_umax;
  case Instruction::OtherOpsEnd + unsigned(Intrinsic::smin): return Intrinsic::vector_reduce_smin;
  case Instruction::OtherOpsEnd + unsigned(Intrinsic::smax): return Intrinsic::vector_reduce_smax;
  default: return Intrinsic::not_intrinsic;
  }
}

// Do the chains' final values reach the rest of the function only combined with each other by their
// operation, so that which chain took which term does not matter? Each value carries the chains it holds
// (a mask): the last links their own; a PHI, an operation link (with a term of a later loop, or with a
// value that carries other chains) and a vector reduction of the operation over distinct lanes carry the
// union. Every other use must be of a value that carries all of them. PHIs take one mask from every
// incoming value that carries any, an operation never combines a chain with itself.
bool onlyCombined(const std::vector<Chain> &cs, std::pair<unsigned, bool> op) {
  unsigned m = cs.size(), full = (1u << m) - 1;
  Intrinsic::ID red = reductionOf(op);
  std::map<Value *, unsigned> mask;
  std::vector<Value *> work;
  std::vector<std::pair<Value *, Instruction *>> escapes; // uses by anything else: only of every chain
  std::set<Instruction *> own;
  for (const Chain &c : cs)
    own.insert(c.phi);
  for (unsigned j = 0; j < m; ++j) {
    mask[cs[j].links.back()] = 1u << j;
    work.push_back(cs[j].links.back());
  }
  // the vector reduction that a single-use chain of insertelements from V leads to, its lanes
  auto reductionFrom = [&](InsertElementInst *IE) -> IntrinsicInst * {
    Instruction *I = IE;
    for (int depth = 0; depth < 16 && I->hasOneUse(); ++depth) {
      auto *U = cast<Instruction>(*I->user_begin());
      if (auto *R = dyn_cast<IntrinsicInst>(U); R && R->getIntrinsicID() == red)
        return R;
      if (!isa<InsertElementInst>(U) || U->getOperand(0) != I)
        return nullptr;
      I = U;
    }
    return nullptr;
  };
  unsigned steps = 0;
  while (!work.empty()) {
    if (++steps > 4096)
      return false;
    Value *V = work.back();
    work.pop_back();
    unsigned mv = mask[V];
    for (User *U : V->users()) {
      auto *I = cast<Instruction>(U);
      if (own.count(I))
        continue; // the loop's own back edge
      Instruction *To = I;
      if (auto *IE = dyn_cast<InsertElementInst>(I); IE && IE->getOperand(1) == V)
        To = reductionFrom(IE);
      auto *R = dyn_cast_or_null<IntrinsicInst>(To);
      bool carries = To && (isa<PHINode>(To) || (R && R->getIntrinsicID() == red) ||
                            (linkOp(To) == op && To->getType() == V->getType()));
      if (!carries) {
        escapes.push_back({V, I});
        continue;
      }
      unsigned &mt = mask[To];
      if ((mt | mv) != mt) {
        mt |= mv;
        work.push_back(To);
      }
    }
  }
  auto maskOf = [&](Value *V) {
    auto it = mask.find(V);
    return it == mask.end() ? 0u : it->second;
  };
  for (auto &[V, I] : escapes)
    if (maskOf(V) != full)
      return false;
  for (auto &[V, mv] : mask) {
    auto *I = dyn_cast<Instruction>(V);
    if (!I || mv == 0)
      continue;
    if (auto *P = dyn_cast<PHINode>(I)) {
      for (Value *In : P->incoming_values())
        if (maskOf(In) && maskOf(In) != mv)
          return false;
    } else if (auto *R = dyn_cast<IntrinsicInst>(I); R && R->getIntrinsicID() == red) {
      // lanes: distinct constant positions over poison, each chain in one lane
      std::set<uint64_t> lanes;
      unsigned seen = 0;
      Value *Vec = R->getArgOperand(0);
      while (auto *IE = dyn_cast<InsertElementInst>(Vec)) {
        auto *Ix = dyn_cast<ConstantInt>(IE->getOperand(2));
        unsigned ml = maskOf(IE->getOperand(1));
        if (!Ix || !lanes.insert(Ix->getZExtValue()).second || (seen & ml))
          return false;
        seen |= ml;
        Vec = IE->getOperand(0);
      }
      if (!isa<PoisonValue>(Vec) && !isa<UndefValue>(Vec))
        return false;
    } else if (!isa<PHINode>(I)) { // an operation link: no chain twice
      if (I->getOperand(0) == I->getOperand(1) || (maskOf(I->getOperand(0)) & maskOf(I->getOperand(1))))
        return false;
    }
  }
  return true;
}

// Interleaved accumulators of one reduction: the GPU compiler vectorised the loop (amdgcn: two i32
// lanes), unrolled it by K, and its vectors were split into m chains, chain j taking the elements j,
// j + m, j + 2m, ... Rolled as m chains of K, the loop reads two interleaved streams (a wide load and
// shuffles per vector, or none of the vectoriser's); as one chain of K * m links, element by element.
// When the operation is an integer one that is associative and commutative, the chains' final values
// reach the rest of the function only combined with each other by it (onlyCombined), and chain j's
// first term is chain 0's for the element j further (after putting the chains in that order), the plan
// becomes: chains[0] takes every term, the others keep their start values. Their combination is the
// same: the same terms, combined by an operation for which order and grouping do not matter.
bool mergeChains(Plan &q, ScalarEvolution &SE, BranchInst *Br) {
  unsigned m = q.chains.size(), K = q.K * m;
  auto op = linkOp(q.chains[0].links[0]);
  if (!op || !op->second || !q.chains[0].phi->getType()->isIntegerTy() || reductionOf(*op) == Intrinsic::not_intrinsic)
    return false;
  for (const Chain &c : q.chains)
    if (linkOp(c.links[0]) != op || c.phi->getType() != q.chains[0].phi->getType())
      return false;
  q.K = K;
  if (!rollable(q, SE, Br))
    return false;
  // the order: chain j's first term is the base's for the element j further
  for (unsigned b = 0; b < m; ++b) {
    std::vector<int> at(m, -1);
    at[b] = 0;
    bool ok = true;
    for (unsigned c = 0; c < m && ok; ++c) {
      if (c == b)
        continue;
      for (unsigned j = 1; j < m && at[c] < 0; ++j) {
        std::vector<std::pair<Instruction *, Instruction *>> scratch;
        Matcher mt{q.L, SE, K, scratch, {}};
        if (mt.match(q.chains[b].terms[0], q.chains[c].terms[0], j) &&
            none_of(at.begin(), at.end(), [&](int x) { return x == int(j); }))
          at[c] = j;
      }
      ok = at[c] > 0;
    }
    if (!ok)
      continue;
    std::vector<Chain> ordered(m);
    for (unsigned c = 0; c < m; ++c)
      ordered[at[c]] = q.chains[c];
    q.chains = ordered;
    // every term of every chain is the base's for its element further
    q.pairs.clear();
    for (unsigned j = 0; j < m; ++j)
      for (unsigned l = 0; l < q.chains[j].terms.size(); ++l) {
        unsigned k = l * m + j;
        if (k == 0)
          continue;
        Matcher mt{q.L, SE, K, q.pairs, {}};
        if (!mt.match(q.chains[0].terms[0], q.chains[j].terms[l], k))
          return false;
      }
    std::set<PHINode *> chainPhis;
    for (const Chain &c : q.chains)
      chainPhis.insert(c.phi);
    for (auto &[a, b2] : q.pairs)
      for (Value *Op : a->operands())
        if (auto *P = dyn_cast<PHINode>(Op); P && chainPhis.count(P))
          return false;
    if (!onlyCombined(q.chains, *op))
      return false;
    q.merged = true;
    return true;
  }
  return false;
}

// The scalarizer (src/jit/llvm/normalise.rs) leaves the vector a loop's PHIs made rebuilt in the loop
// for its users after it (amdgcn's `insertelement`s of the two chains before the reduction): moved to
// the loop's exit, so that the chains' last links are used only there.
void sinkVectorRebuilds(Loop *L) {
  BasicBlock *H = L->getHeader(), *E = L->getExitBlock();
  if (L->getNumBlocks() != 1 || !E || E->getSinglePredecessor() != H)
    return;
  std::vector<Instruction *> order;
  for (Instruction &I : *H)
    if (isa<InsertElementInst>(I))
      order.push_back(&I);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Instruction *I = *it;
    if (all_of(I->users(), [&](User *U) { return cast<Instruction>(U)->getParent() != H && !isa<PHINode>(U); }))
      I->moveBefore(E->getFirstInsertionPt());
  }
}

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
    if (!c || (p.K && c->links.size() != p.K))
      return std::nullopt;
    p.K = c->links.size();
    p.chains.push_back(*c);
    chainPhis.insert(&P);
  }
  if (p.chains.empty())
    return std::nullopt;
  // every value used after the loop: an induction variable's back-edge value or a chain's last link
  for (Instruction &I : *H)
    for (User *U : I.users())
      if (cast<Instruction>(U)->getParent() != H) {
        bool ok = any_of(p.ivs, [&](const Induction &iv) { return &I == iv.inc; }) ||
                  any_of(p.chains, [&](const Chain &c) { return &I == c.links.back(); });
        if (!ok)
          return std::nullopt;
      }
  // interleaved accumulators of one reduction (the GPU compiler's vectorised loop, scalarised) as one
  if (p.chains.size() >= 2) {
    Plan q = p;
    if (mergeChains(q, SE, Br))
      return q;
  }
  if (p.K < 2 || !rollable(p, SE, Br)) // (one link per chain: only merged)
    return std::nullopt;
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
    if (L->isInnermost() && (!withBarriers || divTerm.count(L->getHeader()->getTerminator()))) {
      sinkVectorRebuilds(L);
      if (auto p = planFor(L, A.SE))
        plans.push_back(std::move(*p));
    }
  // (the loops are disjoint blocks: each plan reads only its own, so all are applied after all are made)
  for (Plan &p : plans) {
    for (auto &[a, b] : p.pairs) {
      a->andIRFlags(b);
      if (auto *LA = dyn_cast<LoadInst>(a)) {
        LA->setAlignment(std::min(LA->getAlign(), cast<LoadInst>(b)->getAlign()));
        combineMetadataForCSE(a, b, false);
      }
    }
    for (size_t j = 0; j < p.chains.size(); ++j) {
      Chain &c = p.chains[j];
      Instruction *last = c.links.back();
      Value *now = p.merged && j ? static_cast<Value *>(c.phi) : c.links[0]; // merged: the start value
      c.phi->setIncomingValueForBlock(p.L->getHeader(), now);
      last->replaceUsesOutsideBlock(now, p.L->getHeader());
    }
    for (Induction &iv : p.ivs) {
      iv.inc->setOperand(1, ConstantInt::get(iv.inc->getType(), iv.rolledStep));
      if (iv.scale == 1)
        continue;
      BasicBlock *Pre = p.L->getLoopPreheader();
      IRBuilder<> PB(Pre->getTerminator());
      Value *f = ConstantInt::get(iv.phi->getType(), iv.scale);
      iv.phi->setIncomingValueForBlock(Pre, PB.CreateMul(iv.phi->getIncomingValueForBlock(Pre), f));
      if (iv.exit) {
        unsigned b = iv.exit->getOperand(0) == iv.inc ? 1 : 0;
        iv.exit->setOperand(b, PB.CreateMul(iv.exit->getOperand(b), f));
      }
    }
    for (Chain &c : p.chains)
      RecursivelyDeleteTriviallyDeadInstructions(c.links.back());
    if (MDNode *ID = p.L->getLoopID()) // (no longer unrolled)
      p.L->setLoopID(makePostTransformationMetadata(C, ID, {"llvm.loop.unroll.", "llvm.loop.isvectorized"}, {}));
  }
  return plans.size();
}

} // namespace ol_rs::lower
