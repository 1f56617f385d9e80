// Uniformity: which values and terminators differ between the work-items of a group
// (divergentValues), and which region sets are group-invariant (groupInvariant).
#include "lowering.h"

namespace ol_rs::lower {


// Which SSA values are the same for every work-item of the group (under GPU semantics: race-free
// memory, convergent barriers)? Sources of divergence: the local ids, allocas (per-work-item memory),
// atomics, non-intrinsic calls; propagated through operands, loads from divergent addresses, PHIs at
// joins of divergent branches (blocks reachable from the branch before its immediate post-dominator)
// and values leaving loops with a divergent exit.
//
// With laneWidth W (ol-warp-lanes: a specialisation whose group size's x is a multiple of W, so that a
// warp's W work-items are consecutive x ids of one row): the values that may differ between the lanes
// of one warp. Then only the x and flat ids are seeds, and a warp's "lane values" (b + lane, b the same
// multiple of W for the warp's lanes, lane its lane id: the x and flat ids themselves, and what adds,
// ors, casts or freezes a multiple of W to them, or keeps their low bits with `urem kW` / `and 2^k - 1`, 2^k >= W)
// become warp-uniform through the operations that drop the lane: `udiv kW`, `lshr k` (2^k >= W), `and m`
// (m's low log2 W bits clear), the difference of two lane values, and comparisons with a multiple of W
// (`ult c` / `uge c` with W | c, `ule c` / `ugt c` with W | c + 1).
std::set<Value *> Lowering::divergentValues(Function *F, unsigned laneWidth) {
  unsigned o = F->arg_size() - E_COUNT;
  const uint64_t W = laneWidth;
  std::set<Value *> div;
  if (W)
    for (int e : {E_LX, E_LWI})
      div.insert(F->getArg(o + e));
  else
    for (int e : {E_LX, E_LY, E_LZ, E_LWI})
      div.insert(F->getArg(o + e));
  DominatorTree DT(*F);
  LoopInfo LI(DT);
  PostDominatorTree PDT(*F);
  auto isDiv = [&](Value *v) { return div.count(v) != 0; };
  // a constant, or in a specialisation the group size
  auto valueOf = [&](Value *v, uint64_t &c) {
    if (auto *CI = dyn_cast<ConstantInt>(v)) {
      if (CI->getBitWidth() > 64)
        return false;
      c = CI->getZExtValue();
      return true;
    }
    if (int d = specKernel.empty() ? -1 : groupSizeDim(F, v); d >= 0) { // (an argument, or amdgcn's load)
      c = specGs[d];
      return true;
    }
    if (auto *I = dyn_cast<Instruction>(v); I && W && I->getMetadata(kLanesInMD)) {
      c = W; // (a warp's number of lanes: W, the group being whole warps)
      return true;
    }
    return false;
  };
  // 1 or 0 where an unsigned comparison with a known value has a known result (a source lane's bound)
  auto knownCond = [&](Value *cond) -> int {
    auto *Cmp = dyn_cast<ICmpInst>(cond);
    uint64_t k;
    if (!W || !Cmp || !valueOf(Cmp->getOperand(1), k) || Cmp->getOperand(0)->getType()->getIntegerBitWidth() > 64)
      return -1;
    KnownBits kb = computeKnownBits(Cmp->getOperand(0), DL);
    uint64_t mx = kb.getMaxValue().getZExtValue(), mn = kb.getMinValue().getZExtValue();
    switch (Cmp->getPredicate()) {
    case CmpInst::ICMP_ULT:
      return mx < k ? 1 : mn >= k ? 0 : -1;
    case CmpInst::ICMP_UGE:
      return mn >= k ? 1 : mx < k ? 0 : -1;
    default:
      return -1;
    }
  };
  // warp-uniform and a multiple of W
  std::function<bool(Value *, int)> aligned = [&](Value *v, int depth) -> bool {
    uint64_t c;
    if (valueOf(v, c))
      return c % W == 0;
    if (isDiv(v) || depth > 6)
      return false;
    auto *I = dyn_cast<Instruction>(v);
    if (!I)
      return false;
    switch (I->getOpcode()) {
    case Instruction::Mul:
    case Instruction::And:
      return aligned(I->getOperand(0), depth + 1) || aligned(I->getOperand(1), depth + 1);
    case Instruction::Shl:
      return aligned(I->getOperand(0), depth + 1) ||
             (valueOf(I->getOperand(1), c) && c < 64 && (uint64_t(1) << c) % W == 0);
    case Instruction::Add:
    case Instruction::Sub:
    case Instruction::Or:
      return aligned(I->getOperand(0), depth + 1) && aligned(I->getOperand(1), depth + 1);
    case Instruction::ZExt:
    case Instruction::Freeze:
      return aligned(I->getOperand(0), depth + 1);
    default:
      return false;
    }
  };
  std::set<Value *> lane; // the lane values, recomputed in each round (they depend on `div`)
  auto isLane = [&](Value *v) { return lane.count(v) != 0; };
  auto laneValue = [&](Instruction *I) {
    uint64_t c;
    switch (I->getOpcode()) {
    case Instruction::ZExt:
    case Instruction::Freeze:
      return isLane(I->getOperand(0));
    case Instruction::Trunc:
      return isLane(I->getOperand(0)) && I->getType()->getIntegerBitWidth() >= 32;
    case Instruction::Add:
    case Instruction::Or:
      return (isLane(I->getOperand(0)) && aligned(I->getOperand(1), 0)) ||
             (isLane(I->getOperand(1)) && aligned(I->getOperand(0), 0));
    case Instruction::URem:
      return isLane(I->getOperand(0)) && valueOf(I->getOperand(1), c) && c && c % W == 0;
    case Instruction::And:
      return isLane(I->getOperand(0)) && valueOf(I->getOperand(1), c) && isPowerOf2_64(c + 1) && c + 1 >= W;
    default:
      return false;
    }
  };
  // an instruction that drops the lane of a lane value: warp-uniform where its other operands are
  auto dropsLane = [&](Instruction *I) {
    uint64_t c;
    if (!isa<BinaryOperator>(I) && !isa<ICmpInst>(I))
      return false;
    Value *a = I->getOperand(0), *b = I->getOperand(1);
    CmpInst::Predicate pred = CmpInst::BAD_ICMP_PREDICATE;
    if (auto *Cmp = dyn_cast<ICmpInst>(I))
      pred = Cmp->getPredicate();
    if (!isLane(a) && isLane(b) && (I->getOpcode() == Instruction::And || isa<ICmpInst>(I))) {
      std::swap(a, b);
      if (isa<ICmpInst>(I))
        pred = CmpInst::getSwappedPredicate(pred);
    }
    if (!isLane(a))
      return false;
    switch (I->getOpcode()) {
    case Instruction::UDiv:
      return valueOf(b, c) && c && c % W == 0;
    case Instruction::LShr:
      return valueOf(b, c) && c < 64 && (uint64_t(1) << c) % W == 0;
    case Instruction::And:
      return valueOf(b, c) && (c & (W - 1)) == 0;
    case Instruction::Sub:
      return isLane(b);
    case Instruction::ICmp: {
      if (!valueOf(b, c))
        return false;
      switch (pred) {
      case CmpInst::ICMP_ULT:
      case CmpInst::ICMP_UGE:
        return c % W == 0;
      case CmpInst::ICMP_ULE:
      case CmpInst::ICMP_UGT:
        return (c + 1) % W == 0;
      default:
        return false;
      }
    }
    default:
      return false;
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    if (W) {
      lane = {F->getArg(o + E_LX), F->getArg(o + E_LWI)};
      for (bool more = true; more;) {
        more = false;
        for (BasicBlock &BB : *F)
          for (Instruction &I : BB)
            if (I.getType()->isIntegerTy() && !isLane(&I) && laneValue(&I)) {
              lane.insert(&I);
              more = true;
            }
      }
    }
    // join blocks of divergent branches
    std::set<BasicBlock *> joins;
    for (BasicBlock &BB : *F) {
      Instruction *T = BB.getTerminator();
      Value *cond = nullptr;
      if (auto *BI = dyn_cast<BranchInst>(T))
        cond = BI->isConditional() ? BI->getCondition() : nullptr;
      else if (auto *SI = dyn_cast<SwitchInst>(T))
        cond = SI->getCondition();
      if (!cond || !isDiv(cond))
        continue;
      BasicBlock *P;
      std::set<BasicBlock *> before = beforeJoin(&BB, PDT, P);
      joins.insert(before.begin(), before.end());
      if (P)
        joins.insert(P);
    }
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB) {
        if (isDiv(&I))
          continue;
        bool d = false;
        auto *LdI = dyn_cast<LoadInst>(&I);
        if (W && dropsLane(&I)) {
          d = false;
        } else if (isa<AllocaInst>(&I) || isa<AtomicRMWInst>(&I) || isa<AtomicCmpXchgInst>(&I) ||
            (LdI && (LdI->isAtomic() || LdI->isVolatile()))) {
          d = true;
        } else if (auto *CB = dyn_cast<CallBase>(&I)) {
          Function *Cal = CB->getCalledFunction();
          if (!Cal || !Cal->isIntrinsic() || CB->mayReadOrWriteMemory())
            d = true;
          else
            for (Value *A : CB->args())
              d = d || isDiv(A);
        } else if (auto *PN = dyn_cast<PHINode>(&I)) {
          d = joins.count(&BB) != 0;
          for (Value *V : PN->incoming_values())
            d = d || isDiv(V);
        } else if (auto *Sel = dyn_cast<SelectInst>(&I); Sel && knownCond(Sel->getCondition()) >= 0) {
          d = isDiv(knownCond(Sel->getCondition()) ? Sel->getTrueValue() : Sel->getFalseValue());
        } else {
          for (Value *Op : I.operands())
            d = d || isDiv(Op);
        }
        if (!d && !I.getType()->isVoidTy())
          if (Loop *L = LI.getLoopFor(&BB)) {
            bool usedOutside = false;
            for (User *U : I.users())
              if (auto *UI = dyn_cast<Instruction>(U))
                usedOutside = usedOutside || !L->contains(UI->getParent());
            if (usedOutside) {
              SmallVector<BasicBlock *, 4> exiting;
              L->getExitingBlocks(exiting);
              for (BasicBlock *EB : exiting) {
                Instruction *T = EB->getTerminator();
                if (auto *BI = dyn_cast<BranchInst>(T))
                  d = d || (BI->isConditional() && isDiv(BI->getCondition()));
                else
                  d = true;
              }
            }
          }
        if (d) {
          div.insert(&I);
          changed = true;
        }
      }
  }
  return div;
}


// The blocks that the work-items taking different ways out of BB may be in before they meet again: those
// reachable from BB's successors before its immediate post-dominator (which it also gives, null where the
// ways only meet at the exit).
std::set<BasicBlock *> Lowering::beforeJoin(BasicBlock *BB, const PostDominatorTree &PDT, BasicBlock *&P) {
  DomTreeNode *N = PDT.getNode(BB);
  P = N && N->getIDom() ? N->getIDom()->getBlock() : nullptr;
  std::vector<BasicBlock *> wl(succ_begin(BB), succ_end(BB));
  std::set<BasicBlock *> seen;
  while (!wl.empty()) {
    BasicBlock *X = wl.back();
    wl.pop_back();
    if (X == P || !seen.insert(X).second)
      continue;
    for (BasicBlock *Su : successors(X))
      wl.push_back(Su);
  }
  return seen;
}


bool Lowering::meetBeforeSync(BasicBlock *BB, const PostDominatorTree &PDT, function_ref<bool(BasicBlock *)> isSync,
                              std::set<BasicBlock *> &before) {
  BasicBlock *P;
  before = beforeJoin(BB, PDT, P);
  return P && none_of(before, isSync);
}


std::set<BasicBlock *> Lowering::divergentBlocks(Function *F) {
  bool lanes = !specKernel.empty() && warp > 1 && specGs[0] % warp == 0;
  std::set<Value *> div = divergentValues(F, lanes ? warp : 0);
  PostDominatorTree PDT(*F);
  std::set<BasicBlock *> apart;
  for (Instruction *T : divergentTerms(F, div)) {
    BasicBlock *P;
    std::set<BasicBlock *> before = beforeJoin(T->getParent(), PDT, P);
    apart.insert(before.begin(), before.end());
  }
  return apart;
}


bool Lowering::collectivesApart(Function *F, const std::vector<CallInst *> &coll) {
  std::set<BasicBlock *> withColl;
  for (CallInst *X : coll)
    withColl.insert(X->getParent());
  auto reachesCollective = [&](BasicBlock *S) {
    std::vector<BasicBlock *> wl = {S};
    std::set<BasicBlock *> seen;
    while (!wl.empty()) {
      BasicBlock *X = wl.back();
      wl.pop_back();
      if (!seen.insert(X).second)
        continue;
      if (withColl.count(X))
        return true;
      for (BasicBlock *Su : successors(X))
        wl.push_back(Su);
    }
    return false;
  };
  // (the group's divergence: warps of the general scheduler wait at different exchanges too) A branch
  // whose lanes meet again before any collective (none before its immediate post-dominator) keeps them
  // together; one whose other ways only leave (a bounds guard) too.
  PostDominatorTree PDT(*F);
  for (Instruction *T : divergentTerms(F, divergentValues(F))) {
    BasicBlock *P;
    std::set<BasicBlock *> before = beforeJoin(T->getParent(), PDT, P);
    if (std::none_of(before.begin(), before.end(), [&](BasicBlock *X) { return withColl.count(X) != 0; }))
      continue;
    unsigned n = 0;
    for (BasicBlock *S : successors(T->getParent()))
      n += reachesCollective(S);
    if (n >= 2)
      return true;
  }
  return false;
}


// The terminators of F whose successor choice may differ where `div` says so.
std::set<Instruction *> Lowering::divergentTerms(Function *F, const std::set<Value *> &div) {
  std::set<Instruction *> divTerm;
  for (BasicBlock &BB : *F) {
    Instruction *T = BB.getTerminator();
    if (auto *BI = dyn_cast<BranchInst>(T)) {
      if (BI->isConditional() && div.count(BI->getCondition()))
        divTerm.insert(T);
    } else if (auto *SI = dyn_cast<SwitchInst>(T)) {
      if (div.count(SI->getCondition()))
        divTerm.insert(T);
    } else if (!isa<ReturnInst>(T) && !isa<UnreachableInst>(T)) {
      divTerm.insert(T);
    }
  }
  return divTerm;
}


// Can a region be run once for the whole group instead of once per work-item? Yes when nothing in
// it depends on the work-item: no divergent value or branch, loads only of group-invariant values,
// stores only to the shared slots of group-invariant values (every work-item would store the same).
bool Lowering::groupInvariant(const std::vector<BasicBlock *> &set, const std::set<Value *> &div,
                           const std::set<Instruction *> &divTerm, const std::set<AllocaInst *> &uniSlots,
                           Function *BM, Function *EM) {
  for (BasicBlock *BB : set)
    for (Instruction &I : *BB) {
      if (I.isTerminator()) {
        if (divTerm.count(&I))
          return false;
        continue;
      }
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (CI->getCalledFunction() && (CI->getCalledFunction() == BM || CI->getCalledFunction() == EM))
          continue;
      if (auto *Ld = dyn_cast<LoadInst>(&I)) {
        if (Ld->isVolatile() || Ld->isAtomic())
          return false;
        if (auto *A = dyn_cast<AllocaInst>(Ld->getPointerOperand())) {
          if (!uniSlots.count(A))
            return false;
          continue;
        }
        if (div.count(&I))
          return false;
        continue;
      }
      if (auto *St = dyn_cast<StoreInst>(&I)) {
        auto *A = dyn_cast<AllocaInst>(St->getPointerOperand());
        if (!A || !uniSlots.count(A) || St->isVolatile())
          return false;
        continue;
      }
      if (div.count(&I) || I.mayHaveSideEffects() || I.mayReadFromMemory())
        return false;
    }
  return true;
}

} // namespace ol_rs::lower
