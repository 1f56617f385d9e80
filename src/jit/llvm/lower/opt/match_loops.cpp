// gpuintrin.h's match_any loop as one warp collective (matchLoops, ol-match-loops): amdgcn has no match
// instruction, so `__gpu_match_any_u32`/`_u64` is a loop that takes one key per round, the first
// remaining lane's, and lets the lanes holding it leave with the ballot of them.
#include "../lowering.h"

namespace ol_rs::lower {

namespace {

// Whether V is a call to the function named `name` (or, for a name ending in '.', whose name starts with
// it: an overloaded intrinsic), with `arg` (when given) its first operand.
bool isCall(Value *V, StringRef name, Value *arg = nullptr) {
  auto *CI = dyn_cast<CallInst>(V);
  Function *Fn = CI ? CI->getCalledFunction() : nullptr;
  return Fn && (name.ends_with(".") ? Fn->getName().starts_with(name) : Fn->getName() == name) &&
         (!arg || CI->getArgOperand(0) == arg);
}

// The instructions of a match_any loop the matcher has accounted for: nothing else may be in its blocks.
using Seen = SmallPtrSet<Instruction *, 32>;

// Whether V is a warp's ballot of `pred` (nullptr: any predicate, set to it) as the loop's target computes
// it: amdgcn's `ballot.i64(p)`; spirv64's low 64 bits of `spv.wave.ballot(p)`, `extractelement (bitcast
// (b) to <2 x i64>), 0` as clang leaves it, or its two low i32 elements put together (the scalarizer's
// form, which the JIT's normalisation makes of it).
bool isBallot(Value *V, Value *&pred, Seen &seen) {
  Value *B = V, *e0, *e1;
  if (auto *X = dyn_cast<ExtractElementInst>(V); X && match(X->getIndexOperand(), m_Zero())) {
    auto *BC = dyn_cast<BitCastInst>(X->getVectorOperand());
    if (!BC || !BC->getType()->isVectorTy() || !isCall(BC->getOperand(0), "llvm.spv.wave.ballot"))
      return false;
    seen.insert(X), seen.insert(BC);
    B = BC->getOperand(0);
  } else if (auto *BC = dyn_cast<BitCastInst>(V);
             BC && BC->getType()->isIntegerTy(64) &&
             match(BC->getOperand(0), m_InsertElt(m_InsertElt(m_Poison(), m_Value(e0), m_ZeroInt()), m_Value(e1),
                                                  m_SpecificInt(1))) &&
             match(e0, m_ExtractElt(m_Value(B), m_ZeroInt())) &&
             match(e1, m_ExtractElt(m_Specific(B), m_SpecificInt(1)))) {
    if (!isCall(B, "llvm.spv.wave.ballot"))
      return false;
    auto *Ins = cast<Instruction>(BC->getOperand(0));
    for (Value *I : {V, (Value *)Ins, Ins->getOperand(0), e0, e1})
      seen.insert(cast<Instruction>(I));
  }
  if (B == V && !isCall(B, "llvm.amdgcn.ballot.i64"))
    return false;
  Value *p = cast<CallInst>(B)->getArgOperand(0);
  if (pred && p != pred)
    return false;
  pred = p;
  seen.insert(cast<Instruction>(B));
  return true;
}

bool isBallotOfTrue(Value *V, Seen &seen) {
  Value *t = ConstantInt::getTrue(V->getContext());
  return isBallot(V, t, seen);
}

// Whether I is spirv64's read of x from the first active lane, `spv.wave.readlane(x, cttz(ballot(true)))`.
bool isSpvFirstLane(Value *I, Value *x, Seen &seen) {
  Value *b;
  if (!isCall(I, "llvm.spv.wave.readlane.", x) ||
      !match(cast<CallInst>(I)->getArgOperand(1),
             m_CombineOr(m_Trunc(m_Intrinsic<Intrinsic::cttz>(m_Value(b), m_Value())),
                         m_Intrinsic<Intrinsic::cttz>(m_Value(b), m_Value()))) ||
      !isBallotOfTrue(b, seen))
    return false;
  for (Value *v = cast<CallInst>(I)->getArgOperand(1); isa<Instruction>(v) && v != b;
       v = cast<Instruction>(v)->getOperand(0))
    seen.insert(cast<Instruction>(v));
  seen.insert(cast<Instruction>(I));
  return true;
}

// Whether F reads x from the first active lane: amdgcn's `readfirstlane(x)`, spirv64's `spv.wave.readlane(x,
// cttz(ballot(true)))`, for a 64-bit x on spirv64 its halves read so and put together (`hi << 32 | lo`);
// `F & C` too where x has no bits outside C (InstCombine's form of a 64-bit read with x known to fit in 32
// bits: every lane's x fits, so the mask changes nothing).
bool isFirstLane(Value *F, Value *x, const DataLayout &DL, Seen &seen) {
  const APInt *Cm;
  Value *r = F, *hi, *lo;
  if (match(F, m_And(m_Value(r), m_APInt(Cm)))) {
    if (!(computeKnownBits(x, DL).Zero | *Cm).isAllOnes())
      return false;
    seen.insert(cast<Instruction>(F));
  }
  if (match(r, m_DisjointOr(m_Shl(m_ZExt(m_Value(hi)), m_SpecificInt(32)), m_ZExt(m_Value(lo))))) {
    // (the halves, trunc(x >> 32) and trunc(x), at the same lane; the high one 0 where x fits in 32 bits)
    auto *H = dyn_cast<CallInst>(hi), *Lo = dyn_cast<CallInst>(lo);
    if (!x->getType()->isIntegerTy(64) || !H || !Lo || H->arg_size() != 2 || Lo->arg_size() != 2 ||
        H->getArgOperand(1) != Lo->getArgOperand(1) ||
        !(match(H->getArgOperand(0), m_Trunc(m_LShr(m_Specific(x), m_SpecificInt(32)))) ||
          (match(H->getArgOperand(0), m_Zero()) && computeKnownBits(x, DL).countMinLeadingZeros() >= 32)) ||
        !match(Lo->getArgOperand(0), m_Trunc(m_Specific(x))) || !isSpvFirstLane(H, H->getArgOperand(0), seen) ||
        !isSpvFirstLane(Lo, Lo->getArgOperand(0), seen))
      return false;
    auto *Or = cast<Instruction>(r), *Shl = cast<Instruction>(Or->getOperand(0));
    for (Instruction *I : {Or, Shl, cast<Instruction>(Shl->getOperand(0)), cast<Instruction>(Or->getOperand(1))})
      seen.insert(I);
    return true;
  }
  if (isSpvFirstLane(r, x, seen))
    return true;
  if (!isCall(r, "llvm.amdgcn.readfirstlane.i32", x) && !isCall(r, "llvm.amdgcn.readfirstlane.i64", x))
    return false;
  seen.insert(cast<Instruction>(r));
  return true;
}

// V as an i1: V itself, or the i8 it is a `trunc` of (a bool kept in memory's form; `seen` takes the trunc).
Value *boolOf(Value *V, Seen &seen) {
  if (auto *T = dyn_cast<TruncInst>(V); T && T->getType()->isIntegerTy(1)) {
    seen.insert(T);
    return T->getOperand(0);
  }
  return V;
}

} // namespace

// ol-match-loops: the loop gpuintrin.h's `__gpu_match_any_u32`/`_u64` becomes where the target has no
// match instruction (LLVM 22's header, after clang's -O2; amdgcn's and spirv64's forms of it):
//
//   P:  lanes = ballot(true) ... br H         (spirv64: br lanes == 0, E, H; or that in P's predecessor)
//   H:  m = phi [0, P], [m', L];  done = phi [false, P], [done', L];  br done, L, A
//   A:  f = first lane's x;  br f == x, S, L   (amdgcn: readfirstlane(x); spirv64: readlane(x, cttz(ballot(true))))
//   S:  b = ballot(true);  br L
//   L:  done' = phi [true, H], [true, S], [false, A];  m' = phi [m, H], [b, S], [m, A]
//       br (ballot(!done') & lanes) == 0, E, H
//
// (spirv64's `done` is an i8 truncated to i1 where it is used.) Each round the lanes not yet done take the
// first one's key, and those holding it leave with the ballot of them (the lanes of the warp with their
// key, among those that run the loop); the loop ends when every lane that entered it (`lanes`, the ballot
// before it) is done. Its value after the loop, m', is the lanes of the warp that entered with this lane
// and hold its x: `__ol_rs.match_any(x)`, the one collective that replaceIntrinsics computes as nvptx64's
// match.any (a compare of the warp's keys with this lane's, over the lanes that reach it together), one
// exchange instead of three per distinct key, whose lanes wait at different exchanges (the general
// scheduler). The loop's blocks become unreachable.
unsigned Lowering::matchLoops(Function *F) {
  struct Found {
    BasicBlock *P, *E;
    Value *x;
    PHINode *out; // m'
    std::vector<BasicBlock *> blocks;
  };
  const DataLayout &DL = M.getDataLayout();
  std::vector<Found> found;
  for (BasicBlock &HB : *F) {
    BasicBlock *H = &HB;
    Seen seen;
    auto *HBr = dyn_cast<BranchInst>(H->getTerminator());
    if (!HBr || !HBr->isConditional() || pred_size(H) != 2)
      continue;
    auto phis = H->phis();
    if (std::distance(phis.begin(), phis.end()) != 2)
      continue;
    PHINode *m = &*phis.begin(), *done = &*std::next(phis.begin());
    if (!m->getType()->isIntegerTy(64))
      std::swap(m, done);
    if (!m->getType()->isIntegerTy(64) || boolOf(HBr->getCondition(), seen) != done)
      continue;
    seen.insert(m), seen.insert(done);
    BasicBlock *L = HBr->getSuccessor(0), *A = HBr->getSuccessor(1);
    int pi = m->getBasicBlockIndex(L);
    if (pi < 0 || done->getBasicBlockIndex(L) < 0 || L == H || A == H || A == L)
      continue;
    BasicBlock *P = m->getIncomingBlock(1 - pi);
    if (done->getBasicBlockIndex(P) < 0 || !match(m->getIncomingValueForBlock(P), m_Zero()) ||
        !match(done->getIncomingValueForBlock(P), m_Zero()))
      continue;
    // A: f = the first lane's x, x from before the loop; to S where f == x, else to L
    auto *ABr = dyn_cast<BranchInst>(A->getTerminator());
    Value *f, *x;
    if (!ABr || !ABr->isConditional() || A->getSinglePredecessor() != H ||
        !match(ABr->getCondition(), m_SpecificICmp(ICmpInst::ICMP_EQ, m_Value(f), m_Value(x))) ||
        ABr->getSuccessor(1) != L)
      continue;
    seen.insert(cast<Instruction>(ABr->getCondition()));
    if (!isFirstLane(f, x, DL, seen)) {
      std::swap(f, x);
      if (!isFirstLane(f, x, DL, seen))
        continue;
    }
    if (auto *xi = dyn_cast<Instruction>(x); xi && (xi->getParent() == H || xi->getParent() == A))
      continue;
    // S: b = ballot(true), then L
    BasicBlock *S = ABr->getSuccessor(0);
    if (S == L || S->getSinglePredecessor() != A || S->getSingleSuccessor() != L)
      continue;
    // L: the PHIs, then the ballot of the lanes not done, masked by the lanes before the loop
    auto *LBr = dyn_cast<BranchInst>(L->getTerminator());
    if (!LBr || !LBr->isConditional() || LBr->getSuccessor(1) != H || pred_size(L) != 3)
      continue;
    auto *mNext = dyn_cast<PHINode>(m->getIncomingValue(pi));
    auto *dNext = dyn_cast<PHINode>(done->getIncomingValueForBlock(L));
    if (!mNext || !dNext || mNext->getParent() != L || dNext->getParent() != L ||
        mNext->getIncomingValueForBlock(H) != m || mNext->getIncomingValueForBlock(A) != m ||
        !isBallotOfTrue(mNext->getIncomingValueForBlock(S), seen) ||
        !match(dNext->getIncomingValueForBlock(H), m_One()) || !match(dNext->getIncomingValueForBlock(S), m_One()) ||
        !match(dNext->getIncomingValueForBlock(A), m_Zero()))
      continue;
    seen.insert(mNext), seen.insert(dNext);
    Value *notDone, *lanes, *pred = nullptr;
    if (!match(LBr->getCondition(),
               m_SpecificICmp(ICmpInst::ICMP_EQ, m_c_And(m_Value(notDone), m_Value(lanes)), m_Zero())))
      continue;
    seen.insert(cast<Instruction>(LBr->getCondition()));
    seen.insert(cast<Instruction>(cast<Instruction>(LBr->getCondition())->getOperand(0)));
    if (!isBallot(notDone, pred, seen))
      std::swap(notDone, lanes);
    // (`lanes`: the ballot of every lane, in the block before the loop or, on spirv64, in the block before
    // that, which goes to E where no lane is (never: this lane is one) and to P: the lanes that enter it)
    Value *nd;
    if (!isBallot(notDone, pred, seen) || !match(pred, m_Not(m_Value(nd))) || boolOf(nd, seen) != dNext ||
        !isBallotOfTrue(lanes, seen)) // (`lanes` is before the loop: what it adds to `seen` is not checked)
      continue;
    seen.insert(cast<Instruction>(pred));
    BasicBlock *E = LBr->getSuccessor(0), *G = cast<Instruction>(lanes)->getParent();
    auto noLanesTo = [&](BasicBlock *Into) {
      auto *Br = dyn_cast<BranchInst>(G->getTerminator());
      return Br && Br->isConditional() && Br->getSuccessor(0) == E && Br->getSuccessor(1) == Into &&
             match(Br->getCondition(), m_SpecificICmp(ICmpInst::ICMP_EQ, m_Specific(lanes), m_Zero()));
    };
    auto *PBr = dyn_cast<BranchInst>(P->getTerminator());
    if (!PBr || !(G == P ? !PBr->isConditional() || noLanesTo(H)
                         : !PBr->isConditional() && P->getSinglePredecessor() == G && noLanesTo(P)))
      continue;
    // nothing in the loop but what was matched; only m' used after it
    std::vector<BasicBlock *> blocks = {H, A, S, L};
    bool ok = !is_contained(blocks, E);
    for (BasicBlock *BB : blocks)
      for (Instruction &I : *BB) {
        ok &= I.isTerminator() || seen.count(&I);
        for (User *U : I.users())
          ok &= &I == mNext || is_contained(blocks, cast<Instruction>(U)->getParent());
      }
    // E's PHIs: m' from L (and, spirv64, 0 from the block where no lane is)
    for (PHINode &Ph : E->phis())
      ok &= Ph.getIncomingValueForBlock(L) == mNext && (G != P || !PBr->isConditional() ||
                                                        match(Ph.getIncomingValueForBlock(P), m_Zero()));
    if (ok)
      found.push_back({P, E, x, mNext, blocks});
  }
  for (Found &c : found) {
    std::string name = "__ol_rs.match_any.i" + std::to_string(c.x->getType()->getIntegerBitWidth());
    FunctionCallee Fn = M.getOrInsertFunction(name, FunctionType::get(I64, {c.x->getType()}, false));
    if (auto *FnF = dyn_cast<Function>(Fn.getCallee()))
      FnF->setConvergent();
    Instruction *PBr = c.P->getTerminator();
    CallInst *any = CallInst::Create(Fn, {c.x}, "match.any", PBr->getIterator());
    any->setConvergent();
    for (Use &U : make_early_inc_range(c.out->uses()))
      if (!is_contained(c.blocks, cast<Instruction>(U.getUser())->getParent()))
        U.set(any);
    // (E's PHIs: from P the match; L's entries go with L)
    for (PHINode &Ph : c.E->phis()) {
      if (int k = Ph.getBasicBlockIndex(c.P); k >= 0)
        Ph.setIncomingValue(k, any);
      else
        Ph.addIncoming(any, c.P);
    }
    BranchInst::Create(c.E, PBr->getIterator());
    PBr->eraseFromParent();
    fired(T_MATCH_LOOPS);
  }
  if (!found.empty())
    removeUnreachableBlocks(*F);
  return found.size();
}

} // namespace ol_rs::lower
