// ol-full-groups: the bounds guard that makes a kernel's work-items leave early (`if (i < n) { ...
// barriers or warp collectives ... }`, `if (i >= n) return;` before them) decides nothing in every group
// but the last few: all of their work-items pass it. In a launch-time specialisation the work-group function
// runs a copy of the body with such guards folded where the group's first and last work-items both pass
// them, the body as it was otherwise. The copy has no early exits, so it gets the code of a kernel without
// the guard (ol-warp-lanes or uniform barriers without resume ids, the transforms ol-early-exits turns off,
// ol-warp-local-slots); the last groups keep ol-early-exits' code.
//
// A guard here: a conditional branch one way of which only returns (its blocks compute nothing that is
// kept), the other way reaching a barrier (a group barrier or a warp collective's), on a comparison (or an
// `and` of comparisons, taken when all hold; an `or`, left when none does) of a value monotone in one local
// id with a value the same for the group. Monotone: the id (x, y or z; the flat id in a 1-D group) through
// adds and subtractions of values the same for the group, `or disjoint`, zext and sext. The same-for-the-
// group side: constants, the kernel's arguments, the group's ids and counts, its size, and arithmetic of
// them that cannot trap, amdgcn's loads from its implicit arguments and dispatch packet (`!invariant.load`:
// the work-group function fills them before the body runs).
//
// Why it is legal: the work-group function evaluates each comparison at the id's ends, 0 and size - 1,
// with the group's values. Each step of the chain is monotone over the ids where its result does not wrap
// around differently at the two ends (an add's overflow at both ends or at neither; checked, for unsigned
// and for signed order), and a comparison of a monotone value with a fixed one changes at most once along
// it: if it holds at both ends it holds for every work-item of the group, which then takes the guard's
// way in, and the folded copy is the body for that group.
#include "../lowering.h"

namespace ol_rs::lower {

namespace {

// Whether every way from BB only returns: blocks whose instructions have no effect, joined by
// unconditional branches, ending in `ret` or the exit marker.
bool exitOnly(BasicBlock *BB, Function *EM) {
  std::set<BasicBlock *> seen;
  while (BB && seen.insert(BB).second) {
    for (Instruction &I : *BB) {
      if (auto *CI = dyn_cast<CallInst>(&I); CI && EM && CI->getCalledFunction() == EM)
        return true;
      if (I.isTerminator())
        break;
      if (I.mayHaveSideEffects())
        return false;
    }
    if (isa<ReturnInst>(BB->getTerminator()))
      return true;
    auto *Br = dyn_cast<BranchInst>(BB->getTerminator());
    if (!Br || Br->isConditional())
      return false;
    BB = Br->getSuccessor(0);
  }
  return false;
}

} // namespace


// The local id v is, or -1: 0-2 for x, y, z, and 0 for the flat id in a 1-D specialisation.
int Lowering::localIdDim(Function *F, unsigned o, Value *v) const {
  for (int d = 0; d < 3; ++d)
    if (v == X(o, F, E_LX + d))
      return d;
  if (v == X(o, F, E_LWI) && specGs[1] == 1 && specGs[2] == 1)
    return 0;
  return -1;
}


// Whether v is the same for the group's work-items and can be computed in the work-group function before
// the body runs, without trapping (see the file's comment).
bool Lowering::groupValue(Function *F, unsigned o, Value *v, int depth) const {
  if (isa<Constant>(v))
    return true;
  if (auto *A = dyn_cast<Argument>(v))
    return A->getParent() == F && localIdDim(F, o, v) < 0 && v != X(o, F, E_LWI);
  auto *I = dyn_cast<Instruction>(v);
  if (!I || depth > 12)
    return false;
  if (auto *L = dyn_cast<LoadInst>(I))
    return L->getMetadata(LLVMContext::MD_invariant_load) && readsImplicitArgs(F, o, L);
  if (!isPureArithmetic(I) || isa<PHINode>(I) || !isSafeToSpeculativelyExecute(I))
    return false;
  return all_of(I->operands(), [&](Value *Op) { return groupValue(F, o, Op, depth + 1); });
}


// Whether v is a local id through steps monotone where they do not wrap (see the file's comment).
bool Lowering::idChain(Function *F, unsigned o, Value *v, int depth) const {
  if (localIdDim(F, o, v) >= 0)
    return true;
  auto *I = dyn_cast<Instruction>(v);
  if (!I || depth > 12)
    return false;
  if (isa<ZExtInst>(I) || isa<SExtInst>(I))
    return idChain(F, o, I->getOperand(0), depth + 1);
  auto *BO = dyn_cast<BinaryOperator>(I);
  if (!BO)
    return false;
  bool disjointOr = BO->getOpcode() == Instruction::Or && cast<PossiblyDisjointInst>(BO)->isDisjoint();
  if (BO->getOpcode() == Instruction::Add || disjointOr)
    return (idChain(F, o, BO->getOperand(0), depth + 1) && groupValue(F, o, BO->getOperand(1))) ||
           (idChain(F, o, BO->getOperand(1), depth + 1) && groupValue(F, o, BO->getOperand(0)));
  if (BO->getOpcode() == Instruction::Sub)
    return idChain(F, o, BO->getOperand(0), depth + 1) && groupValue(F, o, BO->getOperand(1));
  return false;
}


// Whether the condition c, taken `want`, is a guard's: comparisons (not == or !=) of an id chain with a
// group value, an `and` of them for `want` true, an `or` for false, each with a group id in it (where none
// is, the comparison is the same in every group: wreduce's `t < lanes` holds for no group of more than a
// warp).
bool Lowering::guardCondition(Function *F, unsigned o, Value *c, bool want, int depth) const {
  if (auto *Cmp = dyn_cast<ICmpInst>(c)) {
    if (Cmp->isEquality())
      return false;
    std::function<bool(Value *, int)> groupId = [&](Value *v, int d) {
      if (v == X(o, F, E_GIDX) || v == X(o, F, E_GIDY) || v == X(o, F, E_GIDZ))
        return true;
      auto *I = dyn_cast<Instruction>(v);
      return I && d < 16 && any_of(I->operands(), [&](Value *Op) { return groupId(Op, d + 1); });
    };
    Value *a = Cmp->getOperand(0), *b = Cmp->getOperand(1);
    return ((idChain(F, o, a) && groupValue(F, o, b)) || (idChain(F, o, b) && groupValue(F, o, a))) &&
           groupId(Cmp, 0);
  }
  Value *x, *y;
  if (depth < 4 && (want ? match(c, m_LogicalAnd(m_Value(x), m_Value(y))) : match(c, m_LogicalOr(m_Value(x), m_Value(y)))))
    return guardCondition(F, o, x, want, depth + 1) && guardCondition(F, o, y, want, depth + 1);
  return false;
}


// The guards of F (K.body after the intrinsics and local memory): branches one way of which only returns
// and the other reaches a barrier marker, on guard conditions.
std::vector<Lowering::BoundsGuard> Lowering::boundsGuards(Function *F, const std::set<BasicBlock *> *into) {
  std::vector<BoundsGuard> found;
  Function *BM = M.getFunction("__ol_rs.barrier"), *EM = M.getFunction("__ol_rs.exit");
  if (!BM && !into)
    return found;
  unsigned o = F->arg_size() - E_COUNT;
  auto reachesBarrier = [&](BasicBlock *from) {
    for (BasicBlock *BB : reachable({from}, [](BasicBlock *) { return false; })) {
      if (into && into->count(BB))
        return true;
      for (Instruction &I : *BB)
        if (auto *CI = dyn_cast<CallInst>(&I); CI && BM && CI->getCalledFunction() == BM)
          return true;
    }
    return false;
  };
  for (BasicBlock &BB : *F) {
    auto *Br = dyn_cast<BranchInst>(BB.getTerminator());
    if (!Br || !Br->isConditional())
      continue;
    bool out0 = exitOnly(Br->getSuccessor(0), EM), out1 = exitOnly(Br->getSuccessor(1), EM);
    if (out0 == out1)
      continue;
    bool want = out1; // (the way in: successor 0 when successor 1 only returns)
    if (reachesBarrier(Br->getSuccessor(want ? 0 : 1)) && guardCondition(F, o, Br->getCondition(), want))
      found.push_back({Br, want});
  }
  return found;
}


// The copy of F whose guards are folded to their way in (F.full), or nullptr where F has none.
Function *Lowering::fullGroupsBody(Function *F, std::vector<BoundsGuard> &guards, const std::set<BasicBlock *> *into) {
  guards = boundsGuards(F, into);
  if (guards.empty())
    return nullptr;
  ValueToValueMapTy VM;
  Function *Full = CloneFunction(F, VM);
  Full->setName(F->getName() + ".full");
  for (const BoundsGuard &G : guards) {
    auto *Br = cast<BranchInst>(VM[G.br]);
    Br->setCondition(ConstantInt::getBool(C, G.want));
    ConstantFoldTerminator(Br->getParent());
  }
  removeUnreachableBlocks(*Full);
  fired(T_FULL_GROUPS, guards.size());
  return Full;
}


// `F.full_check`, F's parameters and an i1 result (always inlined into the work-group function, which
// calls it with the body's arguments, the local ids unused): whether every work-item of a group of the
// specialisation's size takes every guard's way in. Built before buildCbs takes F's blocks apart.
Function *Lowering::fullGroupsCheck(Function *F, const std::vector<BoundsGuard> &guards) {
  unsigned o = F->arg_size() - E_COUNT;
  Function *Check = Function::Create(FunctionType::get(Type::getInt1Ty(C), F->getFunctionType()->params(), false),
                                     GlobalValue::InternalLinkage, F->getName() + ".full_check", M);
  Check->addFnAttr(Attribute::AlwaysInline);
  IRBuilder<> B(BasicBlock::Create(C, "entry", Check));
  std::vector<Value *> args;
  for (Argument &A : Check->args())
    args.push_back(&A);
  std::map<Value *, Value *> done;
  std::function<Value *(Value *)> group = [&](Value *v) -> Value * {
    if (isa<Constant>(v))
      return v;
    if (auto *A = dyn_cast<Argument>(v))
      return args[A->getArgNo()];
    if (auto it = done.find(v); it != done.end())
      return it->second;
    Instruction *I = cast<Instruction>(v)->clone();
    I->setMetadata(LLVMContext::MD_dbg, nullptr);
    for (Use &U : I->operands())
      U.set(group(U.get()));
    B.Insert(I);
    return done[v] = I;
  };
  // the chain at the id's ends, and whether it is monotone in unsigned and in signed order between them
  struct Ends {
    Value *lo, *hi, *okU, *okS;
  };
  Value *yes = B.getTrue();
  std::function<Ends(Value *)> ends = [&](Value *v) -> Ends {
    if (int d = localIdDim(F, o, v); d >= 0) {
      Type *T = v->getType();
      return {ConstantInt::get(T, 0), ConstantInt::get(T, specGs[d] - 1), yes, yes};
    }
    auto *I = cast<Instruction>(v);
    if (isa<ZExtInst>(I)) {
      Ends e = ends(I->getOperand(0));
      return {B.CreateZExt(e.lo, I->getType()), B.CreateZExt(e.hi, I->getType()), e.okU, e.okU};
    }
    if (isa<SExtInst>(I)) {
      Ends e = ends(I->getOperand(0));
      Value *zero = ConstantInt::get(e.lo->getType(), 0);
      Value *sameSign = B.CreateICmpEQ(B.CreateICmpSLT(e.lo, zero), B.CreateICmpSLT(e.hi, zero));
      return {B.CreateSExt(e.lo, I->getType()), B.CreateSExt(e.hi, I->getType()), B.CreateAnd(e.okS, sameSign), e.okS};
    }
    auto *BO = cast<BinaryOperator>(I);
    bool sub = BO->getOpcode() == Instruction::Sub;
    bool first = sub || idChain(F, o, BO->getOperand(0));
    Ends e = ends(BO->getOperand(first ? 0 : 1));
    Value *u = group(BO->getOperand(first ? 1 : 0));
    Intrinsic::ID uo = sub ? Intrinsic::usub_with_overflow : Intrinsic::uadd_with_overflow;
    Intrinsic::ID so = sub ? Intrinsic::ssub_with_overflow : Intrinsic::sadd_with_overflow;
    Value *uLo = B.CreateBinaryIntrinsic(uo, e.lo, u), *uHi = B.CreateBinaryIntrinsic(uo, e.hi, u);
    Value *sLo = B.CreateBinaryIntrinsic(so, e.lo, u), *sHi = B.CreateBinaryIntrinsic(so, e.hi, u);
    auto flag = [&](Value *r) { return B.CreateExtractValue(r, 1); };
    return {B.CreateExtractValue(uLo, 0), B.CreateExtractValue(uHi, 0),
            B.CreateAnd(e.okU, B.CreateICmpEQ(flag(uLo), flag(uHi))),
            B.CreateAnd(e.okS, B.CreateICmpEQ(flag(sLo), flag(sHi)))};
  };
  std::function<Value *(Value *, bool)> holds = [&](Value *c, bool want) -> Value * {
    if (auto *Cmp = dyn_cast<ICmpInst>(c)) {
      bool left = idChain(F, o, Cmp->getOperand(0));
      CmpInst::Predicate p = left ? Cmp->getPredicate() : Cmp->getSwappedPredicate();
      Ends e = ends(Cmp->getOperand(left ? 0 : 1));
      Value *bound = group(Cmp->getOperand(left ? 1 : 0));
      Value *ok = ICmpInst::isSigned(p) ? e.okS : e.okU;
      Value *atLo = B.CreateICmp(p, e.lo, bound), *atHi = B.CreateICmp(p, e.hi, bound);
      if (!want) {
        atLo = B.CreateNot(atLo);
        atHi = B.CreateNot(atHi);
      }
      return B.CreateAnd(ok, B.CreateAnd(atLo, atHi));
    }
    Value *x, *y;
    if (want ? match(c, m_LogicalAnd(m_Value(x), m_Value(y))) : match(c, m_LogicalOr(m_Value(x), m_Value(y))))
      return B.CreateAnd(holds(x, want), holds(y, want));
    return B.getFalse(); // (not reached: guardCondition took c)
  };
  Value *all = yes;
  for (const BoundsGuard &G : guards)
    all = B.CreateAnd(all, holds(G.br->getCondition(), G.want));
  B.CreateRet(all);
  return Check;
}

} // namespace ol_rs::lower
