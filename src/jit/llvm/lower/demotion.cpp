// Values live across barriers: PHIs demoted, values hoisted, recomputed or kept per work-item in
// scratch (cbsDemotePhis ... cbsRematerialise), a loop exit value sharing its header PHI's slot
// (shareHeaderSlot).
#include "lowering.h"

namespace ol_rs::lower {


// A per-work-item value I that leaves a loop and is also what a demoted header PHI receives on its
// back edges (an accumulator: `store I, slotP` in each latch predecessor of the header H, and I read
// after the loop) would be stored twice per trip, to P's slot and to its own. When H dominates I's
// block and every predecessor of H goes only to H, P's slot holds I from I's definition until the
// next trip redefines it (every path from H to a use of I passes I's definition), so I is stored
// there once, at its definition, and its uses read that slot. Returns false (nothing changed) where
// this does not apply; phiSlot: P's slot -> H, for the per-work-item PHI slots.
bool Lowering::shareHeaderSlot(Instruction *I, const std::map<AllocaInst *, BasicBlock *> &phiSlot, DominatorTree &DT) {
  for (User *U : I->users()) {
    auto *St = dyn_cast<StoreInst>(U);
    if (!St || St->getValueOperand() != I)
      continue;
    auto *A = dyn_cast<AllocaInst>(St->getPointerOperand());
    auto it = A ? phiSlot.find(A) : phiSlot.end();
    if (it == phiSlot.end())
      continue;
    BasicBlock *H = it->second;
    if (!DT.dominates(H, I->getParent()))
      continue;
    std::set<BasicBlock *> preds(pred_begin(H), pred_end(H));
    bool ok = all_of(preds, [&](BasicBlock *P) { return P->getSingleSuccessor() == H; });
    std::vector<StoreInst *> latchStores;
    std::vector<Use *> rest;
    for (Use &V : I->uses()) {
      auto *S2 = dyn_cast<StoreInst>(V.getUser());
      if (S2 && S2->getValueOperand() == I && S2->getPointerOperand() == A) {
        latchStores.push_back(S2);
        continue;
      }
      auto *UI = cast<Instruction>(V.getUser());
      BasicBlock *at = isa<PHINode>(UI) ? cast<PHINode>(UI)->getIncomingBlock(V) : UI->getParent();
      // in a predecessor of H, another value may already have been stored to the slot
      if (preds.count(at) || (at == I->getParent() && isa<PHINode>(UI)))
        ok = false;
      rest.push_back(&V);
    }
    if (!ok)
      continue;
    for (StoreInst *S2 : latchStores)
      S2->eraseFromParent();
    BasicBlock::iterator pt = isa<PHINode>(I) ? I->getParent()->getFirstInsertionPt() : std::next(I->getIterator());
    new StoreInst(I, A, pt);
    for (Use *V : rest) {
      auto *UI = cast<Instruction>(V->getUser());
      Instruction *pos = isa<PHINode>(UI) ? cast<PHINode>(UI)->getIncomingBlock(*V)->getTerminator() : UI;
      V->set(new LoadInst(I->getType(), A, I->getName() + ".acc", pos->getIterator()));
    }
    return true;
  }
  return false;
}


// Step 2c (takes st.div; gives st.demoted, st.uniSlots, st.pow2Slots, st.phiSlot): PHIs are demoted
// to slots (shared ones for group-invariant PHIs), except those of blocks inside regions: not a
// region entry, not a barrier/exit block, all predecessors in every region that contains the block
// (a loop without barriers inside a region keeps its counter and accumulators in registers, which
// the vectoriser needs).
void Lowering::cbsDemotePhis(CbsState &st) {
  Function *F = st.F;
  BasicBlock &Entry = *st.entry;
  auto &div = st.div;
  auto isBarrierBlk = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
  auto isExitBlk = [&](BasicBlock *BB) { return st.isExitBlk(BB); };
  std::vector<BasicBlock *> rEntries = {&Entry};
  for (BasicBlock &BB : *F)
    if (isBarrierBlk(&BB) && BB.getSingleSuccessor())
      rEntries.push_back(BB.getSingleSuccessor());
  std::set<BasicBlock *> entrySet(rEntries.begin(), rEntries.end());
  std::vector<std::set<BasicBlock *>> rBlocks;
  for (BasicBlock *E0 : rEntries) {
    std::vector<BasicBlock *> in = reachable({E0}, isBarrierBlk);
    rBlocks.emplace_back(in.begin(), in.end());
  }
  auto keepPhis = [&](BasicBlock *BB) {
    // (a block that returns is cloned into each region that reaches it, its return a branch to the
    // region's latch: its PHIs stay, as a block's inside a region, where all its predecessors are there)
    if (entrySet.count(BB) || isBarrierBlk(BB) || (isExitBlk(BB) && !isa<ReturnInst>(BB->getTerminator())))
      return false;
    for (auto &in : rBlocks) {
      if (!in.count(BB))
        continue;
      for (BasicBlock *P : predecessors(BB))
        if (!in.count(P) || isBarrierBlk(P))
          return false;
    }
    return true;
  };
  std::vector<PHINode *> phis;
  for (BasicBlock &BB : *F)
    if (!keepPhis(&BB))
      for (PHINode &P : BB.phis())
        phis.push_back(&P);
  std::set<PHINode *> p2; // proved before any demotion hides the induction
  for (PHINode *P : phis)
    if (!div.count(P) && P->getType()->isIntegerTy() && pow2OrZero(P))
      p2.insert(P);
  for (PHINode *P : phis) {
    bool uni = !div.count(P);
    bool isP2 = p2.count(P) != 0;
    BasicBlock::iterator pt = Entry.begin();
    while (isa<AllocaInst>(&*pt))
      ++pt;
    BasicBlock *H = P->getParent();
    AllocaInst *A = DemotePHIToStack(P, pt);
    if (A)
      st.demoted.push_back(A);
    if (uni && A)
      st.uniSlots.insert(A);
    else if (A)
      st.phiSlot[A] = H;
    if (isP2 && A)
      st.pow2Slots.insert(A);
  }
}


// Step 3, first part (takes the entry block; gives st.hoistable): the work-item-invariant
// ("uniform") side-effect-free instructions of the entry block. They are not demoted: step 5 hoists
// them to the group prologue, computed once per group.
void Lowering::cbsFindHoistable(CbsState &st) {
  unsigned o = st.o;
  auto &hoistable = st.hoistable;
  for (Instruction &I : *st.entry) {
    // (amdgcn's group size, a load from the group's own implicit arguments or dispatch packet: the same
    // for the whole group, computed once like the arguments it is read from)
    bool invariantLoad = !st.chunk && isa<LoadInst>(&I) && groupSizeDim(st.F, &I) >= 0;
    if (isa<AllocaInst>(&I) || isa<PHINode>(&I) || I.isTerminator() || isa<CallBase>(&I) ||
        (!invariantLoad && (I.mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(&I))))
      continue;
    bool ok = true;
    for (Value *Op : I.operands()) {
      if (isa<Constant>(Op))
        continue;
      if (auto *A = dyn_cast<Argument>(Op)) {
        unsigned n = A->getArgNo();
        // (the scratch argument stands for the exchange area inside the regions, not in the prologue)
        if (n == o + E_LX || n == o + E_LY || n == o + E_LZ || n == o + E_LWI || n == o + E_SCRATCH)
          ok = false;
        continue;
      }
      if (auto *OI = dyn_cast<Instruction>(Op))
        if (hoistable.count(OI))
          continue;
      ok = false;
    }
    if (ok)
      hoistable.insert(&I);
  }
}


// Step 3 (takes st.hoistable, st.div, st.uniSlots, st.phiSlot; adds to st.demoted, st.uniSlots):
// demote every value that crosses a block boundary (reg2mem) and is live across a barrier
// (cbsLiveAcross), except the hoistable ones and those recomputed at their uses instead
// (cbsRematerialise); a loop exit value may share its header PHI's slot (shareHeaderSlot); a value read
// from a PHI's slot may be read from it again after the barrier (ol-reload-slots, last).
void Lowering::cbsDemoteLiveAcross(CbsState &st) {
  BasicBlock::iterator allocaPt = st.entry->begin();
  while (isa<AllocaInst>(&*allocaPt))
    ++allocaPt;
  std::vector<Instruction *> live = cbsLiveAcross(st);
  std::vector<Instruction *> keep = on(T_REMATERIALISE) ? cbsRematerialise(st, live, false) : live;
  auto uniform = [&](Instruction *I) {
    if (auto *LI = dyn_cast<LoadInst>(I))
      if (auto *A = dyn_cast<AllocaInst>(LI->getPointerOperand()))
        return st.uniSlots.count(A) != 0;
    return !st.div.count(I);
  };
  DominatorTree DT(*st.F);
  std::vector<Instruction *> rest;
  for (Instruction *I : keep) {
    if (!uniform(I) && on(T_SHARE_HEADER_SLOT) && shareHeaderSlot(I, st.phiSlot, DT)) {
      fired(T_SHARE_HEADER_SLOT);
      continue;
    }
    rest.push_back(I);
  }
  // (last: with the stores the shared header slots moved, which decide whether a slot still holds a value)
  if (on(T_REMATERIALISE) && on(T_RELOAD_SLOTS))
    rest = cbsRematerialise(st, rest, true);
  for (Instruction *I : rest) {
    bool uni = uniform(I);
    AllocaInst *A = DemoteRegToStack(*I, false, allocaPt);
    if (A)
      st.demoted.push_back(A);
    if (uni && A)
      st.uniSlots.insert(A);
  }
}


// Step 3, last (takes st.demoted, st.uniSlots; changes the slots of booleans): a slot of an i1 holds it
// as a byte, stored zero-extended and read truncated. The loop vectoriser stores a vector of i1 one
// lane at a time (an <N x i1> in memory is N bits, the slots are N bytes): compact's `keep`, live across
// its ballot, was 64 byte stores through extracted addresses per 64-lane warp, which the ballot's vector
// load of the exchange bytes then waited on; as bytes they are vector stores. Each slot is a work-item's
// own (or the group's, uniform), accessed by plain loads and stores only (scopeSlots relies on it too).
void Lowering::cbsWidenBoolSlots(CbsState &st) {
  for (AllocaInst *A : st.demoted) {
    if (!A->getAllocatedType()->isIntegerTy(1))
      continue;
    bool perItem = !st.uniSlots.count(A);
    A->setAllocatedType(I8);
    for (User *U : make_early_inc_range(A->users())) {
      if (auto *Ld = dyn_cast<LoadInst>(U); Ld && Ld->getType()->isIntegerTy(1)) {
        Ld->mutateType(I8);
        auto *T = new TruncInst(UndefValue::get(I8), I1Ty(), Ld->getName() + ".b", std::next(Ld->getIterator()));
        Ld->replaceAllUsesWith(T);
        T->setOperand(0, Ld);
        if (perItem)
          st.div.insert(T);
      } else if (auto *St = dyn_cast<StoreInst>(U); St && St->getValueOperand()->getType()->isIntegerTy(1)) {
        auto *Z = new ZExtInst(St->getValueOperand(), I8, "", St->getIterator());
        St->setOperand(0, Z);
        if (perItem || st.div.count(Z->getOperand(0)))
          st.div.insert(Z);
      }
    }
  }
}


// Step 3 (takes F, st.hoistable; gives the values live across a barrier). Regions: the blocks
// reachable from the entry or from a barrier's successor without crossing another barrier. A value
// needs scratch only if, in some region containing a use, its definition is not in that region or
// does not dominate the use there (i.e. it is live across a barrier).
std::vector<Instruction *> Lowering::cbsLiveAcross(CbsState &st) {
  Function *F = st.F;
  BasicBlock &Entry = *st.entry;
  auto &hoistable = st.hoistable;
  std::vector<BasicBlock *> blocks;
  std::map<BasicBlock *, unsigned> idx;
  for (BasicBlock &BB : *F) {
    idx[&BB] = blocks.size();
    blocks.push_back(&BB);
  }
  unsigned nb = blocks.size();
  auto isBarrierBlock = [&](BasicBlock *BB) { return st.isBarrierBlk(BB); };
  std::vector<BasicBlock *> entries = {&Entry};
  for (BasicBlock *BB : blocks)
    if (isBarrierBlock(BB) && BB->getSingleSuccessor())
      entries.push_back(BB->getSingleSuccessor());
  std::vector<std::vector<bool>> inR;                // [region][block]
  std::vector<std::vector<std::vector<bool>>> dom;   // [region][block][dominator]
  for (BasicBlock *E0 : entries) {
    std::vector<bool> in(nb, false);
    std::vector<BasicBlock *> wl = {E0};
    while (!wl.empty()) {
      BasicBlock *BB = wl.back();
      wl.pop_back();
      if (in[idx[BB]])
        continue;
      in[idx[BB]] = true;
      if (isBarrierBlock(BB))
        continue;
      for (BasicBlock *Su : successors(BB))
        wl.push_back(Su);
    }
    std::vector<std::vector<bool>> d(nb);
    for (unsigned b = 0; b < nb; ++b)
      if (in[b])
        d[b] = std::vector<bool>(nb, true);
    d[idx[E0]] = std::vector<bool>(nb, false);
    d[idx[E0]][idx[E0]] = true;
    for (bool changed = true; changed;) {
      changed = false;
      for (unsigned b = 0; b < nb; ++b) {
        if (!in[b] || blocks[b] == E0)
          continue;
        std::vector<bool> nd(nb, true);
        bool any = false;
        for (BasicBlock *P : predecessors(blocks[b])) {
          unsigned p = idx[P];
          if (!in[p] || isBarrierBlock(P))
            continue;
          any = true;
          for (unsigned x = 0; x < nb; ++x)
            nd[x] = nd[x] && d[p][x];
        }
        if (!any)
          nd.assign(nb, false);
        nd[b] = true;
        if (nd != d[b]) {
          d[b] = nd;
          changed = true;
        }
      }
    }
    inR.push_back(in);
    dom.push_back(d);
  }
  std::vector<Instruction *> work;
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB) {
      if (isa<AllocaInst>(&I) || hoistable.count(&I) || I.getType()->isVoidTy())
        continue;
      unsigned D = idx[&BB];
      bool need = false;
      for (User *U : I.users()) {
        auto *UI = cast<Instruction>(U);
        // a (kept) PHI uses its incoming value at the end of the incoming block
        std::vector<BasicBlock *> at;
        if (auto *PN = dyn_cast<PHINode>(UI)) {
          for (unsigned i = 0; i < PN->getNumIncomingValues(); ++i)
            if (PN->getIncomingValue(i) == &I)
              at.push_back(PN->getIncomingBlock(i));
        } else {
          at.push_back(UI->getParent());
        }
        for (BasicBlock *UB : at) {
          unsigned Ub = idx[UB];
          for (unsigned k = 0; k < entries.size() && !need; ++k)
            if (inR[k][Ub] && (!inR[k][D] || !dom[k][Ub][D]))
              need = true;
        }
        if (need)
          break;
      }
      if (need)
        work.push_back(&I);
    }
  return work;
}


// Step 3 (takes the live-across values; gives those that must be kept in slots; adds the clones to
// st.div). Cheap pure functions of the work-item ids, arguments and group-invariant entry values
// (`&s[t]`, `t * 4 + base`) are recomputed next to each use in another block instead of being kept
// per work-item in scratch: a per-item pointer reloaded from scratch makes every access through it a
// gather/scatter, which AVX2 cannot vectorise.
std::vector<Instruction *> Lowering::cbsRematerialise(CbsState &st, const std::vector<Instruction *> &work,
                                                     bool reload) {
  auto &hoistable = st.hoistable;
  auto &uniSlots = st.uniSlots;
  auto &div = st.div;
  // the slots a recomputed value may read: the group-invariant ones, and with `reload` every PHI's
  std::set<AllocaInst *> slots = uniSlots;
  if (reload)
    slots.insert(st.demoted.begin(), st.demoted.end());
  std::map<Instruction *, bool> rematMemo;
  std::function<bool(Instruction *, unsigned)> canRemat = [&](Instruction *I, unsigned depth) -> bool {
    // a slot's load, checked per use below (slotUnchanged); a group-invariant one not on its own (one
    // shared slot for it is as cheap)
    if (slotLoad(I, slots) && (depth > 0 || !slotLoad(I, uniSlots)))
      return true;
    auto it = rematMemo.find(I);
    if (it != rematMemo.end())
      return it->second;
    auto *PN = dyn_cast<PHINode>(I);
    if (PN && PN->getNumIncomingValues() == 1 && reload) { // a copy (LCSSA, a split edge)
      auto *OI = dyn_cast<Instruction>(PN->getIncomingValue(0));
      bool ok = !OI || hoistable.count(OI) || canRemat(OI, depth + 1);
      rematMemo[I] = ok;
      return ok;
    }
    bool ok = depth < 8 &&
              (isa<BinaryOperator>(I) || isa<CastInst>(I) || isa<GetElementPtrInst>(I) || isa<CmpInst>(I) ||
               isa<SelectInst>(I)) &&
              !I->mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(I);
    for (Value *Op : I->operands()) {
      if (!ok)
        break;
      if (isa<Constant>(Op) || isa<Argument>(Op))
        continue;
      auto *OI = dyn_cast<Instruction>(Op);
      ok = OI && (hoistable.count(OI) || canRemat(OI, depth + 1));
    }
    rematMemo[I] = ok;
    return ok;
  };
  std::function<Value *(Value *, Instruction *, std::map<Instruction *, Instruction *> &)> cloneAt =
      [&](Value *V, Instruction *pos, std::map<Instruction *, Instruction *> &m) -> Value * {
    auto *I = dyn_cast<Instruction>(V);
    if (!I || hoistable.count(I) || isa<AllocaInst>(I))
      return V;
    auto it = m.find(I);
    if (it != m.end())
      return it->second;
    if (auto *PN = dyn_cast<PHINode>(I)) { // a one-entry PHI (canRemat): its value, maybe a constant
      Value *v = cloneAt(PN->getIncomingValue(0), pos, m);
      if (auto *VI = dyn_cast<Instruction>(v))
        m[I] = VI;
      return v;
    }
    Instruction *Cl = I->clone();
    for (unsigned i = 0; i < Cl->getNumOperands(); ++i)
      Cl->setOperand(i, cloneAt(Cl->getOperand(i), pos, m));
    Cl->insertBefore(pos->getIterator());
    if (div.count(I))
      div.insert(Cl);
    m[I] = Cl;
    return Cl;
  };
  std::vector<Instruction *> keep;
  for (Instruction *I : work) {
    if (!canRemat(I, 0)) {
      keep.push_back(I);
      continue;
    }
    // where a use is: before its user, or for a (kept) PHI at the end of the incoming block
    auto usePoint = [](Use &U) -> Instruction * {
      auto *UI = cast<Instruction>(U.getUser());
      if (auto *PN = dyn_cast<PHINode>(UI))
        return PN->getIncomingBlock(U)->getTerminator();
      return UI;
    };
    std::vector<Use *> far;
    for (Use &U : I->uses())
      if (usePoint(U)->getParent() != I->getParent())
        far.push_back(&U);
    // a shared slot read on the way must still hold the same value at every use
    std::vector<LoadInst *> slotLoads;
    std::function<void(Value *)> collect = [&](Value *V) {
      auto *VI = dyn_cast<Instruction>(V);
      if (!VI || hoistable.count(VI) || isa<AllocaInst>(VI))
        return;
      if (slotLoad(VI, slots))
        slotLoads.push_back(cast<LoadInst>(VI));
      else
        for (Value *Op : VI->operands())
          collect(Op);
    };
    collect(I);
    bool stable = true;
    for (Use *U : far)
      for (LoadInst *Ld : slotLoads)
        stable = stable && slotUnchanged(Ld, I->getParent(), usePoint(*U));
    if (!stable) {
      keep.push_back(I);
      continue;
    }
    for (Use *U : far) {
      std::map<Instruction *, Instruction *> m;
      U->set(cloneAt(I, usePoint(*U), m));
    }
    bool itemSlot = false;
    for (LoadInst *Ld : slotLoads)
      itemSlot = itemSlot || !slotLoad(Ld, uniSlots);
    fired(itemSlot ? T_RELOAD_SLOTS : T_REMATERIALISE);
  }
  return keep;
}


// A load of a demotion slot: rematerialisable when the slot still holds the loaded value where the copy
// goes (slotUnchanged).
bool Lowering::slotLoad(Instruction *I, const std::set<AllocaInst *> &slots) {
  auto *Ld = dyn_cast<LoadInst>(I);
  auto *A = Ld ? dyn_cast<AllocaInst>(Ld->getPointerOperand()) : nullptr;
  return A && Ld->isSimple() && slots.count(A);
}


// Does the slot read by Ld hold the same value at `at` as where the value being recomputed is, in block
// D (which dominates `at`)? Ld is in D, or D is reached from Ld's block through blocks of one
// predecessor each (one-entry PHIs, a barrier on a straight path: a work-item's slots are its own, the
// other work-items a barrier lets run do not touch them). Yes when no store to it follows Ld in its block
// or is in one of those between or before `at` in its block, and no block storing to it reaches `at`'s
// block without passing through D again (which recomputes the value): `k` of `for (k ..; k <<= 1)` read
// in the loop header and used inside the loop; a PHI's value read before the barrier on a loop's back
// edge and used after it, up to the latch that stores the next one.
bool Lowering::slotUnchanged(LoadInst *Ld, BasicBlock *D, Instruction *at) {
  BasicBlock *UB = at->getParent(), *LB = Ld->getParent();
  std::set<BasicBlock *> chain = {D};
  for (BasicBlock *X = D; X != LB;) {
    X = X->getSinglePredecessor();
    if (!X || !chain.insert(X).second)
      return false;
  }
  if (chain.count(UB))
    return false;
  Value *A = Ld->getPointerOperand();
  for (User *U : A->users()) {
    if (isa<LoadInst>(U))
      continue;
    auto *St = dyn_cast<StoreInst>(U);
    if (!St || St->getValueOperand() == A)
      return false;
    BasicBlock *SB = St->getParent();
    if (SB == LB) {
      if (Ld->comesBefore(St))
        return false;
      if (D == LB) // (a path from it to `at` passes D, or was there already)
        continue;
    } else if (chain.count(SB) || (SB == UB && (St == at || St->comesBefore(at)))) {
      return false;
    }
    std::set<BasicBlock *> seen;
    std::vector<BasicBlock *> wl(succ_begin(SB), succ_end(SB));
    while (!wl.empty()) {
      BasicBlock *Xb = wl.back();
      wl.pop_back();
      if (Xb == D || !seen.insert(Xb).second)
        continue;
      if (Xb == UB)
        return false;
      for (BasicBlock *Su : successors(Xb))
        wl.push_back(Su);
    }
  }
  return true;
}

} // namespace ol_rs::lower
