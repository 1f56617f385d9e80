// Loops the same for a warp's lanes run once per warp (ol-warp-uniform-loops): the piece of a region's
// lane loop around a loop, from the block that decides on it to the block where its paths meet again,
// when it computes the same values in every lane, from memory no lane writes there, and has no effect.
#include "../lowering.h"
#include "../../realign_lane_reads.h"

namespace ol_rs::lower {

namespace {

// Whether every underlying object of ptr is the work-group's scratch (the demotion slots and the warp
// exchange areas, per work-item or per warp) or an alloca (ol-warp-local-exchanges' areas too, behind their
// asm): memory no kernel buffer or shared variable is.
bool isScratch(Value *ptr, Function *F) {
  Value *scratch = F->getArg(F->arg_size() - E_COUNT + E_SCRATCH);
  SmallVector<const Value *, 4> objs;
  getUnderlyingObjects(ptr, objs);
  return !objs.empty() &&
         all_of(objs, [&](const Value *V) { return V == scratch || isa<AllocaInst>(V) || isWarpArea(V); });
}

// The spaces (memorySpaceOf) I may write: none for a store to scratch or an assumption, everything for an
// access that is not a plain load or store.
unsigned writesOf(Instruction &I, Function *F) {
  if (!I.mayWriteToMemory() || isa<AssumeInst>(I))
    return 0;
  if (auto *S = dyn_cast<StoreInst>(&I); S && S->isSimple())
    return isScratch(S->getPointerOperand(), F) ? 0 : memorySpaceOf(S->getPointerOperand(), F);
  return SPACE_ANY;
}

// Whether I only computes (or reads shared memory or the kernel's buffers, adding the space to `reads`):
// no store, atomic, call with an effect (but an assumption) or alloca.
bool onlyComputes(Instruction &I, Function *F, unsigned &reads) {
  if (auto *Ld = dyn_cast<LoadInst>(&I)) {
    unsigned sp = memorySpaceOf(Ld->getPointerOperand(), F);
    reads |= sp;
    return Ld->isSimple() && (sp == SPACE_SHARED || sp == SPACE_ARGS);
  }
  if (isa<AssumeInst>(I)) // (the GPU compiler's facts about its unrolled loop's remainder)
    return true;
  if (auto *CI = dyn_cast<CallInst>(&I)) {
    Function *Fn = CI->getCalledFunction();
    return Fn && Fn->isIntrinsic() && !CI->mayHaveSideEffects() && !CI->mayReadOrWriteMemory() && !CI->isConvergent();
  }
  return !I.mayReadOrWriteMemory() && !I.isAtomic() && !isa<AllocaInst>(I) && !isa<InvokeInst>(I) &&
         !isa<CallBrInst>(I);
}

// The slot ptr is in: the first GEP from the work-group's scratch on its way there (a demotion slot's
// address per work-item or per warp, an exchange area's), or from a warp's slot on the stack
// (ol-warp-local-slots: the lane's, or the warp's own alloca itself; ol-warp-local-exchanges' areas, behind
// their asm), nullptr for anything else.
Value *slotOf(Value *ptr, Function *F) {
  Value *scratch = F->getArg(F->arg_size() - E_COUNT + E_SCRATCH);
  if (isa<AllocaInst>(ptr))
    return ptr;
  while (auto *G = dyn_cast<GetElementPtrInst>(ptr)) {
    Value *P = G->getPointerOperand();
    if (P == scratch || isa<AllocaInst>(P) || isWarpArea(P))
      return G;
    ptr = P;
  }
  return nullptr;
}

} // namespace

// Whether V, a value of a lane loop, is the same in every lane of the warp: as the original it was cloned
// from (st.laneUniform), an assumption (no value), or pure arithmetic of such values, of Pre's and of the
// group prologue's (never the lane's ids).
static bool sameForLanes(Lowering::CbsState &st, const Lowering::CbsState::LaneLoop &LL, Value *V, int depth = 0) {
  if (isa<Constant>(V) || isa<Argument>(V))
    return true;
  auto *I = dyn_cast<Instruction>(V);
  if (!I || V == LL.lx || V == LL.wi || V == LL.lane || depth > 8)
    return false;
  if (isa<AssumeInst>(I)) // (no value: a fact that holds in every lane that runs it, the first too)
    return true;
  if (auto it = st.laneUniform.find(I); it != st.laneUniform.end())
    return it->second;
  if (I->getParent() == LL.Pre || I->getParent() == LL.entry || I->getParent() == st.NE)
    return true;
  if (I->mayReadOrWriteMemory() || !isPureArithmetic(I))
    return false;
  return all_of(I->operands(), [&](Value *Op) { return sameForLanes(st, LL, Op, depth + 1); });
}

// ol-warp-uniform-loops, in cbsFinish (takes st.laneLoops, st.laneUniform; moves pieces out of the lane
// loops): under ol-warp-lanes, for a loop in a region's lane loop, the piece S of the lane loop from E, the
// block that dominates the block X where the loop's paths meet again (X post-dominates the loop's header,
// E is X's immediate dominator: the loop with its guard and, where the GPU compiler unrolled it, its
// remainder loop, and the arithmetic that computes their bounds), runs once per warp, as the warp's
// first lane would run it, between Pre and the lane loop, and the lane loop takes its values from there,
// when
//  - every lane runs it (E dominates the lane loop's latch), S is entered only at E, from one block, by an
//    unconditional branch, and left only to X;
//  - what leaves S has the same value in every lane (sameForLanes: X's PHIs that S enters, S's values
//    used after it; their originals are not divergent at the warp's width, st.div);
//  - its values from outside S are pure arithmetic of the lane's ids, Pre's values, constants, arguments
//    and loads of the lane's slots that the lane loop does not store to (atFirstLane: computed for the
//    warp's first lane, x id xw, from its slots);
//  - S only computes and reads shared memory or the kernel's buffers (simple loads, no store, call or
//    atomic), which no store of the lane loop may write (a store to scratch, the lane's slots and the
//    exchange areas, never does).
// compact's `for (k = 0; k < t / W; k++) before += kept[k]` (the warps before the lane's, from shared
// memory) ran in every lane, an inner loop that kept the lane loop from vectorising.
// Legal: the copy is the first lane's run of S, on the first lane's inputs and the memory it would read
// (no store of the lane loop writes that, and S writes nothing), which that lane would have made (E is on
// every lane's way); what it gives is what every lane's run gives, the same for all of them. One piece per
// lane loop (a second would be entered from the first's copy).
void Lowering::warpUniformLoops(CbsState &st) {
  Function *F = st.F;
  DominatorTree DT(*F);
  PostDominatorTree PDT(*F);
  LoopInfo LI(DT);
  struct Piece {
    const CbsState::LaneLoop *LL;
    BasicBlock *E, *X, *PE;
    std::vector<BasicBlock *> S;
    std::set<Value *> slots;
  };
  std::vector<Piece> found;
  for (const CbsState::LaneLoop &LL : st.laneLoops) {
    if (!DT.isReachableFromEntry(LL.head))
      continue;
    Loop *Lane = LI.getLoopFor(LL.head);
    if (!Lane || Lane->getHeader() != LL.head || !Lane->contains(LL.latch))
      continue;
    unsigned written = 0;
    std::set<Value *> storedSlots;
    bool unknownStores = false;
    for (BasicBlock *BB : Lane->blocks())
      for (Instruction &I : *BB) {
        written |= writesOf(I, F);
        auto *S = dyn_cast<StoreInst>(&I);
        if (S && isScratch(S->getPointerOperand(), F) && slotOf(S->getPointerOperand(), F))
          storedSlots.insert(slotOf(S->getPointerOperand(), F));
        else if (I.mayWriteToMemory() && !isa<AssumeInst>(I) && (!S || isScratch(S->getPointerOperand(), F)))
          unknownStores = true;
      }
    // the lane's slots that the lane loop reads and does not store to
    std::set<Value *> slots;
    for (BasicBlock *BB : Lane->blocks())
      for (Instruction &I : *BB)
        if (auto *Ld = dyn_cast<LoadInst>(&I); Ld && !unknownStores && slotOf(Ld->getPointerOperand(), F) == Ld->getPointerOperand() &&
                                                 !storedSlots.count(Ld->getPointerOperand()))
          slots.insert(Ld->getPointerOperand());
    for (Loop *L : Lane->getSubLoops()) {
      BasicBlock *H = L->getHeader();
      DomTreeNode *XN = PDT.getNode(H) ? PDT.getNode(H)->getIDom() : nullptr;
      BasicBlock *X = XN ? XN->getBlock() : nullptr;
      if (!X || !Lane->contains(X) || X == LL.head)
        continue;
      BasicBlock *E = DT.getNode(X)->getIDom()->getBlock();
      if (!Lane->contains(E) || E == LL.head || !DT.dominates(E, H) || !PDT.dominates(X, E) ||
          !DT.dominates(E, LL.latch))
        continue;
      std::vector<BasicBlock *> S = reachable({E}, [](BasicBlock *) { return false; }, {X});
      std::set<BasicBlock *> inS(S.begin(), S.end());
      BasicBlock *PE = nullptr;
      bool ok = !inS.count(LL.head) && !inS.count(LL.latch);
      for (BasicBlock *BB : S)
        for (BasicBlock *P : predecessors(BB))
          if (!inS.count(P)) {
            ok &= BB == E && !PE && P->getSingleSuccessor() == E;
            PE = P;
          }
      // what leaves S is the same for every lane: X's PHIs that S enters (taking S's values or constants),
      // and S's values used elsewhere but there
      for (PHINode &Phi : X->phis())
        for (unsigned i = 0; i < Phi.getNumIncomingValues(); ++i) {
          auto *VI = dyn_cast<Instruction>(Phi.getIncomingValue(i));
          if (inS.count(Phi.getIncomingBlock(i)))
            ok &= (!VI || inS.count(VI->getParent())) && sameForLanes(st, LL, &Phi);
        }
      unsigned reads = 0;
      for (BasicBlock *BB : S)
        for (Instruction &I : *BB) {
          ok = ok && onlyComputes(I, F, reads);
          if (any_of(I.users(), [&](User *U) {
                auto *UI = cast<Instruction>(U);
                return !inS.count(UI->getParent()) && !(isa<PHINode>(UI) && UI->getParent() == X);
              }))
            ok = ok && sameForLanes(st, LL, &I);
        }
      if (!ok || !PE || (reads & written))
        continue;
      found.push_back({&LL, E, X, PE, std::move(S), slots});
      break;
    }
  }
  for (Piece &P : found) {
    const CbsState::LaneLoop &LL = *P.LL;
    std::set<BasicBlock *> inS(P.S.begin(), P.S.end());
    // the inputs, as the warp's first lane computes them at the end of Pre
    ValueToValueMapTy VM;
    std::vector<Instruction *> made;
    bool ok = true;
    for (BasicBlock *BB : P.S)
      for (Instruction &I : *BB)
        for (Value *Op : I.operands()) {
          auto *OI = dyn_cast<Instruction>(Op);
          if (!ok || !OI || inS.count(OI->getParent()) || VM.count(OI))
            continue;
          Value *v = atFirstLane(st, LL, OI, made, &P.slots);
          ok = v != nullptr;
          VM[OI] = v;
        }
    if (!ok) {
      for (Instruction *I : reverse(made))
        I->eraseFromParent();
      continue;
    }
    // Pre -> NP -> S's copy -> ND -> the lane loop's header
    BasicBlock *NP = BasicBlock::Create(C, "wul.pre", F, LL.head), *ND = BasicBlock::Create(C, "wul.done", F, LL.head);
    Instruction *T = LL.Pre->getTerminator();
    for (unsigned i = 0; i < T->getNumSuccessors(); ++i)
      if (T->getSuccessor(i) == LL.head)
        T->setSuccessor(i, NP);
    LL.head->replacePhiUsesWith(LL.Pre, ND);
    VM[P.PE] = NP;
    VM[P.X] = ND;
    SmallVector<BasicBlock *, 8> copy;
    for (BasicBlock *BB : P.S) {
      BasicBlock *NB = CloneBasicBlock(BB, VM, ".wul", F);
      VM[BB] = NB;
      copy.push_back(NB);
    }
    remapInstructionsInBlocks(copy, VM);
    BranchInst::Create(cast<BasicBlock>(VM[P.E]), NP);
    IRBuilder<> B(ND);
    // X's PHIs take what S gave from ND's (the copy's ways out): PE now goes straight to X
    for (PHINode &Phi : P.X->phis()) {
      PHINode *N = nullptr;
      for (unsigned i = Phi.getNumIncomingValues(); i-- > 0;)
        if (inS.count(Phi.getIncomingBlock(i))) {
          if (!N)
            N = B.CreatePHI(Phi.getType(), 2, Phi.getName() + ".wul");
          Value *v = Phi.getIncomingValue(i);
          N->addIncoming(VM.count(v) ? (Value *)VM[v] : v, cast<BasicBlock>(VM[Phi.getIncomingBlock(i)]));
          Phi.removeIncomingValue(i, /*DeletePHIIfEmpty=*/false);
        }
      if (N)
        Phi.addIncoming(N, P.PE);
    }
    B.CreateBr(LL.head);
    // S's values used after it (each dominates X: S is left only to X) from the copy
    for (BasicBlock *BB : P.S)
      for (Instruction &I : *BB)
        for (Use &U : make_early_inc_range(I.uses()))
          if (!inS.count(cast<Instruction>(U.getUser())->getParent()))
            U.set(VM[&I]);
    Instruction *PT = P.PE->getTerminator();
    BranchInst::Create(P.X, PT->getIterator());
    PT->eraseFromParent();
    for (BasicBlock *BB : P.S)
      BB->dropAllReferences();
    for (BasicBlock *BB : P.S)
      BB->eraseFromParent();
    fired(T_WARP_UNIFORM_LOOPS);
  }
}

} // namespace ol_rs::lower
