// gpuintrin.h's match_any loop as one warp collective (matchLoops, ol-match-loops): amdgcn has no match
// instruction, so `__gpu_match_any_u32`/`_u64` is a loop that takes one key per round, the first
// remaining lane's, and lets the lanes holding it leave with the ballot of them.
#include "../lowering.h"

namespace ol_rs::lower {

namespace {

// Whether CI is a call to the function named `name`, with `arg` (when given) its first operand.
bool isCall(Value *V, StringRef name, Value *arg = nullptr) {
  auto *CI = dyn_cast<CallInst>(V);
  Function *Fn = CI ? CI->getCalledFunction() : nullptr;
  return Fn && Fn->getName() == name && (!arg || (CI->arg_size() == 1 && CI->getArgOperand(0) == arg));
}

} // namespace

// ol-match-loops: the loop gpuintrin.h's `__gpu_match_any_u32`/`_u64` becomes on amdgcn (LLVM 22's
// header, after clang's -O2):
//
//   P:  lanes = ballot(true) ... br H
//   H:  m = phi [0, P], [m', L];  done = phi [false, P], [done', L];  br done, L, A
//   A:  f = readfirstlane(x);  br f == x, S, L
//   S:  b = ballot(true);  br L
//   L:  done' = phi [true, H], [true, S], [false, A];  m' = phi [m, H], [b, S], [m, A]
//       br (ballot(!done') & lanes) == 0, E, H
//
// Each round the lanes not yet done take the first one's key, and those holding it leave with the ballot
// of them (the lanes of the warp with their key, among those that run the loop); the loop ends when every
// lane that entered it (`lanes`, the ballot before it) is done. Its value after the loop, m', is the lanes
// of the warp that entered with this lane and hold its x: `__ol_rs.match_any(x)`, the one collective that
// replaceIntrinsics computes as nvptx64's match.any (a compare of the warp's keys with this lane's, over the
// lanes that reach it together), one exchange instead of three per distinct key, whose lanes wait at
// different exchanges (the general scheduler). The loop's blocks become unreachable.
unsigned Lowering::matchLoops(Function *F) {
  struct Found {
    BasicBlock *P, *E;
    Value *x;
    PHINode *out; // m'
    std::vector<BasicBlock *> blocks;
  };
  std::vector<Found> found;
  for (BasicBlock &HB : *F) {
    BasicBlock *H = &HB;
    auto *HBr = dyn_cast<BranchInst>(H->getTerminator());
    if (!HBr || !HBr->isConditional() || pred_size(H) != 2)
      continue;
    auto phis = H->phis();
    if (std::distance(phis.begin(), phis.end()) != 2)
      continue;
    PHINode *m = &*phis.begin(), *done = &*std::next(phis.begin());
    if (m->getType()->isIntegerTy(1))
      std::swap(m, done);
    if (!m->getType()->isIntegerTy(64) || !done->getType()->isIntegerTy(1) || HBr->getCondition() != done)
      continue;
    BasicBlock *L = HBr->getSuccessor(0), *A = HBr->getSuccessor(1);
    int pi = m->getBasicBlockIndex(L);
    if (pi < 0 || done->getBasicBlockIndex(L) < 0 || L == H || A == H || A == L)
      continue;
    BasicBlock *P = m->getIncomingBlock(1 - pi);
    if (done->getBasicBlockIndex(P) < 0 || !match(m->getIncomingValueForBlock(P), m_Zero()) ||
        !match(done->getIncomingValueForBlock(P), m_Zero()) || P->getSingleSuccessor() != H)
      continue;
    // A: f = readfirstlane(x), x from before the loop; to S where f == x, else to L
    auto *ABr = dyn_cast<BranchInst>(A->getTerminator());
    Value *f, *x;
    if (!ABr || !ABr->isConditional() || A->getSinglePredecessor() != H ||
        !match(ABr->getCondition(), m_SpecificICmp(ICmpInst::ICMP_EQ, m_Value(f), m_Value(x))) ||
        ABr->getSuccessor(1) != L)
      continue;
    // (f may be `readfirstlane(x) & C` where x has no bits outside C: InstCombine's form of a 64-bit f with
    // x known to fit in 32 bits; every lane's x fits, so the mask changes nothing)
    auto isFirst = [&](Value *f, Value *x) {
      const APInt *Cm;
      Value *r = f;
      if (match(f, m_And(m_Value(r), m_APInt(Cm))) &&
          !(computeKnownBits(x, M.getDataLayout()).Zero | *Cm).isAllOnes())
        return false;
      return (isCall(r, "llvm.amdgcn.readfirstlane.i32", x) || isCall(r, "llvm.amdgcn.readfirstlane.i64", x)) &&
             cast<Instruction>(r)->getParent() == A && cast<Instruction>(f)->getParent() == A;
    };
    if (!isFirst(f, x)) {
      std::swap(f, x);
      if (!isFirst(f, x))
        continue;
    }
    auto *xi = dyn_cast<Instruction>(x);
    if (xi && (xi->getParent() == H || xi->getParent() == A))
      continue;
    // S: b = ballot(true), then L
    BasicBlock *S = ABr->getSuccessor(0);
    Value *True = ConstantInt::getTrue(C);
    if (S == L || S->getSinglePredecessor() != A || S->getSingleSuccessor() != L || S->size() != 2 ||
        !isCall(&S->front(), "llvm.amdgcn.ballot.i64", True))
      continue;
    Value *b = &S->front();
    // L: the PHIs, then the ballot of the lanes not done, masked by the lanes before the loop
    auto *LBr = dyn_cast<BranchInst>(L->getTerminator());
    if (!LBr || !LBr->isConditional() || LBr->getSuccessor(1) != H || pred_size(L) != 3)
      continue;
    auto *mNext = dyn_cast<PHINode>(m->getIncomingValue(pi));
    auto *dNext = dyn_cast<PHINode>(done->getIncomingValueForBlock(L));
    if (!mNext || !dNext || mNext->getParent() != L || dNext->getParent() != L ||
        mNext->getIncomingValueForBlock(H) != m || mNext->getIncomingValueForBlock(A) != m ||
        mNext->getIncomingValueForBlock(S) != b || !match(dNext->getIncomingValueForBlock(H), m_One()) ||
        !match(dNext->getIncomingValueForBlock(S), m_One()) || !match(dNext->getIncomingValueForBlock(A), m_Zero()))
      continue;
    Value *notDone, *lanes;
    if (!match(LBr->getCondition(),
               m_SpecificICmp(ICmpInst::ICMP_EQ, m_c_And(m_Value(notDone), m_Value(lanes)), m_Zero())))
      continue;
    if (!isCall(notDone, "llvm.amdgcn.ballot.i64"))
      std::swap(notDone, lanes);
    // (`lanes`: the ballot of every lane, in the block before the loop: the lanes that enter it)
    if (!isCall(notDone, "llvm.amdgcn.ballot.i64") ||
        !match(cast<CallInst>(notDone)->getArgOperand(0), m_Not(m_Specific(dNext))) ||
        !isCall(lanes, "llvm.amdgcn.ballot.i64", True) || cast<Instruction>(lanes)->getParent() != P)
      continue;
    // nothing else in the loop, and only m' used after it
    std::vector<BasicBlock *> blocks = {H, A, S, L};
    bool ok = H->size() == 3 && A->size() == (isa<BinaryOperator>(f) ? 4u : 3u) && L->size() == 7;
    for (BasicBlock *BB : blocks)
      for (Instruction &I : *BB)
        for (User *U : I.users())
          ok &= &I == mNext || is_contained(blocks, cast<Instruction>(U)->getParent());
    BasicBlock *E = LBr->getSuccessor(0);
    if (!ok || is_contained(blocks, E) || !E->phis().empty())
      continue;
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
    BranchInst::Create(c.E, PBr->getIterator());
    PBr->eraseFromParent();
    fired(T_MATCH_LOOPS);
  }
  if (!found.empty())
    removeUnreachableBlocks(*F);
  return found.size();
}

} // namespace ol_rs::lower
