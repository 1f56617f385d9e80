// GPU intrinsics in the inlined kernel body (replaceIntrinsics): an extra argument, inline code, or a
// barrier / exit marker; warp collectives as an exchange through scratch between two barriers.
#include "lowering.h"
#include "../realign_lane_reads.h"

namespace ol_rs::lower {


// Emits code computing the collective result at the position of CI (which is erased afterwards).
// Layout: CBS reserves 8 bytes per work-item at E_SCRATCH (buildCbs); an exchange of values of type T
// (at most 8 bytes: callers check) uses them as an array of T indexed by the flat id, so a 32-bit shuffle
// moves 4 bytes per lane and the region loops around it vectorise at the 32-bit width. Every access goes
// through the warp's part of the area (`xchg`, lane 0's slot: warpArea), indexed by lane.
Value *Lowering::emitExchange(IRBuilder<> &B, Function *F, Value *val,
                    function_ref<Value *(IRBuilder<> &, Value * /*xchg*/, Value * /*lane*/,
                                         Value * /*warpBase*/, Value * /*nInWarp*/)>
                        compute) {
  assert(DL.getTypeAllocSize(val->getType()) <= 8 && "exchange slots are 8 bytes");
  Value *lwi = F->getArg(F->arg_size() - E_COUNT + E_LWI);
  // (ol-alternate-exchanges: every other exchange in the second area, 8 bytes per work-item on)
  unsigned area = wholeWarps() && on(T_ALTERNATE_EXCHANGES) ? exchanges++ & 1 : 0;
  secondArea |= area == 1;
  MDNode *tag = MDNode::get(C, {ConstantAsMetadata::get(ConstantInt::get(I32, area))});
  // the lane's own slot, at its flat id (consecutive for consecutive work-items, whatever the schedule)
  auto *own = cast<Instruction>(B.CreateGEP(val->getType(), areaPtr(B, F, area), B.CreateZExt(lwi, I64)));
  own->setMetadata(kWarpAreaMD, warpAreaTag(area, /*own=*/true));
  B.CreateStore(val, own)->setMetadata(kExchangeAreaMD, tag);
  warpBarrier(B);
  Value *W = ConstantInt::get(I32, warp);
  Value *lane = B.CreateURem(lwi, W);
  Value *base = B.CreateSub(lwi, lane);
  Value *nIn = lanesIn(B, F, base, /*whole=*/false);
  Value *r = compute(B, warpArea(B, F, area, base, val->getType()), lane, base, nIn);
  if (CallInst *mask = pairedMask) { // the active mask just before it (replaceIntrinsics): its lanes
    pairedMask = nullptr;
    mask->replaceAllUsesWith(B.CreateTrunc(activeLanes(B, base, nIn), mask->getType()));
    mask->eraseFromParent();
  }
  warpBarrier(B)->setMetadata(kExchangeAreaMD, tag);
  return r;
}


// Exchange area `area`: 0 at E_SCRATCH, 1 after the first's 8 bytes per work-item.
Value *Lowering::areaPtr(IRBuilder<> &B, Function *F, unsigned area) {
  Value *scratch = F->getArg(F->arg_size() - E_COUNT + E_SCRATCH);
  return area ? B.CreateGEP(I8, scratch, B.CreateMul(B.CreateZExt(nwiOf(B, F), I64), ConstantInt::get(I64, 8)))
              : scratch;
}


// kWarpAreaMD's tag: the area, and whether the address is the lane's own slot (else lane 0's).
MDNode *Lowering::warpAreaTag(unsigned area, bool own) {
  return MDNode::get(C, {ConstantAsMetadata::get(ConstantInt::get(I32, area)),
                         ConstantAsMetadata::get(ConstantInt::get(I32, own))});
}


// Lane 0's slot in exchange area `area` of the warp whose first work-item is `base`, for values of type
// T: what the exchange's reads index by lane; tagged kWarpAreaMD, as the store's address is, so that
// ol-warp-local-exchanges can put the warp's area on the stack.
Value *Lowering::warpArea(IRBuilder<> &B, Function *F, unsigned area, Value *base, Type *T) {
  auto *G = cast<Instruction>(B.CreateGEP(T, areaPtr(B, F, area), B.CreateZExt(base, I64)));
  G->setMetadata(kWarpAreaMD, warpAreaTag(area, /*own=*/false));
  return G;
}


Value *Lowering::simplified(Value *v) {
  auto *I = dyn_cast<Instruction>(v);
  if (!I || !I->getParent())
    return v;
  Value *S = simplifyInstruction(I, SimplifyQuery(DL));
  if (!S)
    return v;
  I->replaceAllUsesWith(S);
  I->eraseFromParent();
  return S;
}


CallInst *Lowering::warpBarrier(IRBuilder<> &B) {
  CallInst *CI = B.CreateCall(barrierMarker());
  CI->setMetadata(kWarpBarrierMD, MDNode::get(C, {}));
  return CI;
}


Value *Lowering::tagLanesIn(Value *n) {
  if (auto *I = dyn_cast<Instruction>(n))
    I->setMetadata(kLanesInMD, MDNode::get(C, {}));
  return n;
}


// The number of lanes of the warp whose first work-item is `base`: min(W, work-items from base), tagged
// kLanesInMD for ol-warp-lanes; with `whole`, W where the group is whole warps (a specialisation's size a
// multiple of W: every warp full), so that the lane mask is a constant (kept in no slot, and the
// collectives' `(mask >> lane) & 1` checks fold). (The exchanges' own bound stays tagged: a constant
// there took ol-warp-lanes away from gpuintrin's lane library, warp_lanes_match_the_host's `lib`, for a
// reason not yet found; under ol-warp-lanes cbsWarpLaneIds makes it W anyway.)
Value *Lowering::lanesIn(IRBuilder<> &B, Function *F, Value *base, bool whole) {
  Value *W = ConstantInt::get(I32, warp);
  if (whole && wholeWarps())
    return W;
  Value *left = B.CreateSub(nwiOf(B, F), base);
  return tagLanesIn(B.CreateSelect(B.CreateICmpULT(left, W), left, W));
}


Value *Lowering::nwiOf(IRBuilder<> &B, Function *F) {
  unsigned o = F->arg_size() - E_COUNT;
  return B.CreateMul(B.CreateMul(F->getArg(o + E_GSX), F->getArg(o + E_GSY)), F->getArg(o + E_GSZ));
}


Value *Lowering::laneMaskOf(IRBuilder<> &B, Function *F, Type *Ty) {
  // mask of the lanes of this work-item's warp that exist (the group may end inside a warp).
  unsigned o = F->arg_size() - E_COUNT;
  Value *lwi = F->getArg(o + E_LWI);
  Value *W = ConstantInt::get(I32, warp);
  Value *lane = B.CreateURem(lwi, W);
  Value *n64 = B.CreateZExt(lanesIn(B, F, B.CreateSub(lwi, lane), /*whole=*/true), I64);
  Value *full = B.CreateSelect(B.CreateICmpUGE(n64, ConstantInt::get(I64, 64)),
                               ConstantInt::get(I64, ~0ULL),
                               B.CreateSub(B.CreateShl(ConstantInt::get(I64, 1), n64), ConstantInt::get(I64, 1)));
  return B.CreateTrunc(full, Ty);
}


// Reads lane j's slot of an exchange of values of type T (xchg: the warp's area, warpArea).
Value *Lowering::readSlot(IRBuilder<> &B, Value *xchg, Value *j, Type *T) {
  return B.CreateLoad(T, B.CreateGEP(T, xchg, B.CreateZExt(j, I64)));
}


// Whether v is `id urem W` or `id & (W - 1)`: the lane id of the work-item whose flat (or x) id is `id`.
bool Lowering::isLaneOf(Value *v, Value *id) {
  auto *BO = dyn_cast<BinaryOperator>(v);
  auto *c = BO ? dyn_cast<ConstantInt>(BO->getOperand(1)) : nullptr;
  return c && BO->getOperand(0) == id &&
         ((BO->getOpcode() == Instruction::URem && c->getZExtValue() == warp) ||
          (BO->getOpcode() == Instruction::And && c->getZExtValue() == warp - 1));
}


// Whether v is `id udiv W` or `id lshr log2(W)`: the index of the warp of the work-item whose flat (or x)
// id is `id`, among the group's (or the row's).
bool Lowering::isWarpOf(Value *v, Value *id) {
  auto *BO = dyn_cast<BinaryOperator>(v);
  auto *c = BO ? dyn_cast<ConstantInt>(BO->getOperand(1)) : nullptr;
  return c && BO->getOperand(0) == id &&
         ((BO->getOpcode() == Instruction::UDiv && c->getZExtValue() == warp) ||
          (BO->getOpcode() == Instruction::LShr && isPowerOf2_32(warp) && c->getZExtValue() == Log2_32(warp)));
}


// Whether the specialisation's group is whole warps (every warp full: the group's work-item count a
// multiple of W).
bool Lowering::wholeWarps() const {
  return !specKernel.empty() && (uint64_t)specGs[0] * specGs[1] * specGs[2] % warp == 0;
}


// j evaluated for the lane id `l`, where j is a function of the lane id and constants only (operations
// LLVM can fold, at most `depth` deep); nullptr otherwise.
// A warp's number of lanes (lanesIn's value, tagged kLanesInMD) is W: readLane asks only in a
// specialisation of whole warps.
static Constant *atLane(Value *j, function_ref<bool(Value *)> isLane, uint64_t l, unsigned W,
                        const DataLayout &DL, unsigned depth = 12) {
  if (auto *c = dyn_cast<Constant>(j))
    return c;
  if (isLane(j))
    return ConstantInt::get(j->getType(), l);
  auto *I = dyn_cast<Instruction>(j);
  if (I && I->getMetadata(Lowering::kLanesInMD))
    return ConstantInt::get(j->getType(), W);
  if (!I || !depth || isa<PHINode>(I) || I->mayReadOrWriteMemory() || isa<CallBase>(I))
    return nullptr;
  SmallVector<Constant *, 3> ops;
  for (Value *op : I->operands()) {
    Constant *c = atLane(op, isLane, l, W, DL, depth - 1);
    if (!c)
      return nullptr;
    ops.push_back(c);
  }
  if (auto *cmp = dyn_cast<CmpInst>(I))
    return ConstantFoldCompareInstOperands(cmp->getPredicate(), ops[0], ops[1], DL);
  if (isa<SelectInst>(I))
    return ops[0]->isOneValue() ? ops[1] : ops[0]->isNullValue() ? ops[2] : nullptr;
  return ConstantFoldInstOperands(I, ops, DL);
}


// The source lane j as loads at fixed distances from the reading lane's own slot, where j is a function
// of the lane id alone whose distance j - lane takes at most 4 values over the warp's lanes (`lane ± k`,
// `(lane ± k) mod W`, `lane ^ 2^m`, a guarded form that falls back to the lane's own value, whatever
// arithmetic computes them): each distance d is a load of slot `own + d`, chosen by `j == lane + d`. A lane
// loop then reads the exchange with consecutive loads and blends, which vectorise, instead of a gather per
// lane. The loads are unconditional, so they may reach up to W - 1 slots beyond either end of the exchange
// area (other warps' slots or padding, never used: the selects keep only the real source); buildCbs pads
// the area when `exchangeReach` is set. Only in a specialisation of whole warps (every lane's source in its
// own warp). Otherwise a load of slot j.
Value *Lowering::readLane(IRBuilder<> &B, Function *F, Value *xchg, Value *lane, Value *j, Type *T) {
  if (wholeWarps() && warp <= 64 && on(T_LANE_OFFSET_READS) && j->getType()->isIntegerTy(32)) {
    // the lane id: `lane`, or another intrinsic's urem / and of the flat local id by W
    Value *lwi = F->getArg(F->arg_size() - E_COUNT + E_LWI);
    auto isLane = [&](Value *v) { return v == lane || isLaneOf(v, lwi); };
    std::vector<int64_t> dist; // the distinct distances, in the order of the lanes that first have them
    std::vector<size_t> which(warp); // each lane's distance (its index in dist)
    bool ok = true;
    for (uint64_t l = 0; ok && l < warp; ++l) {
      auto *c = dyn_cast_or_null<ConstantInt>(atLane(j, isLane, l, warp, DL));
      ok = c && c->getZExtValue() < warp;
      if (!ok)
        break;
      int64_t d = (int64_t)c->getZExtValue() - (int64_t)l;
      auto it = std::find(dist.begin(), dist.end(), d);
      which[l] = it - dist.begin();
      if (it == dist.end())
        dist.push_back(d);
      ok = dist.size() <= 4;
    }
    if (ok) {
      Value *own = B.CreateZExt(lane, I64);
      // (tagged for ol-realign-lane-reads, src/jit/llvm/realign_lane_reads.cpp: the padding lets its vectors
      // reach further)
      MDBuilder MDB(C);
      MDNode *scope = MDB.createAliasScope(ol_rs::kLaneReadScope, MDB.createAliasScopeDomain("ol.lane.offset.reads"));
      auto at = [&](int64_t d) -> Value * {
        LoadInst *L =
            B.CreateLoad(T, B.CreateGEP(T, xchg, B.CreateAdd(own, ConstantInt::get(I64, d, /*signed=*/true))));
        L->setMetadata(LLVMContext::MD_alias_scope, MDNode::get(C, {scope}));
        return L;
      };
      // which lanes take distance i: where they are one run of lanes [a, b) (`lane - k` kept or wrapped
      // around: the lanes below k and those above), a compare of the lane id with its ends, which LLVM
      // folds with the kernel's own `lane >= k`; otherwise whether the source is lane + d
      auto takes = [&](size_t i) -> Value * {
        uint64_t a = warp, b = 0, n = 0;
        for (uint64_t l = 0; l < warp; ++l)
          if (which[l] == i)
            a = std::min(a, l), b = l + 1, ++n;
        if (n != b - a)
          return B.CreateICmpEQ(j, B.CreateAdd(lane, ConstantInt::get(I32, dist[i], /*signed=*/true)));
        Value *lo = a ? B.CreateICmpUGE(lane, ConstantInt::get(I32, a)) : nullptr;
        Value *hi = b < warp ? B.CreateICmpULT(lane, ConstantInt::get(I32, b)) : nullptr;
        return lo && hi ? B.CreateAnd(lo, hi) : lo ? lo : hi ? hi : static_cast<Value *>(B.getTrue());
      };
      Value *r = at(dist.back());
      for (size_t i = dist.size() - 1; i-- > 0;)
        r = B.CreateSelect(takes(i), at(dist[i]), r);
      exchangeReach = true;
      fired(T_LANE_OFFSET_READS);
      return r;
    }
  }
  return readSlot(B, xchg, j, T);
}


// A warp's ballot from its lanes' predicate bytes at xchg[base ..]: bit l set where lane l's byte is not 0.
// In a group of whole warps (every warp W lanes, the area at least W bytes) one load of the W bytes and a
// compare, which x86 does with a byte mask move per 32 lanes; otherwise a loop over the warp's lanes.
Value *Lowering::ballotCompute(IRBuilder<> &B, Value *xchg, Value *base, Value *nInWarp, bool apart, bool wide) {
  Type *T = wide ? I64 : I8; // (wide: each lane's whole 8-byte slot)
  if (vectorLanes()) { // the warp's slots as one vector
    auto *VT = FixedVectorType::get(T, warp);
    Value *slots = B.CreateAlignedLoad(VT, xchg, Align(1));
    Value *set = B.CreateICmpNE(slots, Constant::getNullValue(VT));
    Value *m = laneMask(B, set);
    return apart ? B.CreateAnd(m, activeLanes(B, base, nInWarp)) : m;
  }
  Value *m = laneBits(B, nInWarp, [&](IRBuilder<> &B2, Value *i) {
    return B2.CreateICmpNE(readSlot(B2, xchg, i, T), ConstantInt::get(T, 0));
  });
  return apart ? B.CreateAnd(m, activeLanes(B, base, nInWarp)) : m;
}


Value *Lowering::laneFold(IRBuilder<> &B, Value *nInWarp, Value *init,
                          function_ref<Value *(IRBuilder<> &, Value *, Value *)> step) {
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *pre = B.GetInsertBlock();
  BasicBlock *loop = BasicBlock::Create(C, "lanes.loop", F);
  BasicBlock *done = BasicBlock::Create(C, "lanes.done", F);
  // split: everything after the insert point must move to `done`.
  BasicBlock *rest = pre->splitBasicBlock(B.GetInsertPoint(), "lanes.rest");
  pre->getTerminator()->eraseFromParent();
  B.SetInsertPoint(pre);
  B.CreateBr(loop);
  B.SetInsertPoint(loop);
  PHINode *i = B.CreatePHI(I32, 2);
  PHINode *acc = B.CreatePHI(init->getType(), 2);
  i->addIncoming(ConstantInt::get(I32, 0), pre);
  acc->addIncoming(init, pre);
  Value *acc2 = step(B, i, acc);
  Value *i2 = B.CreateAdd(i, ConstantInt::get(I32, 1));
  i->addIncoming(i2, B.GetInsertBlock());
  acc->addIncoming(acc2, B.GetInsertBlock());
  B.CreateCondBr(B.CreateICmpULT(i2, nInWarp), loop, done);
  B.SetInsertPoint(done);
  B.CreateBr(rest);
  B.SetInsertPoint(done->getTerminator());
  return acc2;
}


Value *Lowering::laneBits(IRBuilder<> &B, Value *nInWarp, function_ref<Value *(IRBuilder<> &, Value *)> bit) {
  return laneFold(B, nInWarp, ConstantInt::get(I64, 0), [&](IRBuilder<> &B2, Value *i, Value *acc) {
    return B2.CreateOr(acc, B2.CreateShl(B2.CreateZExt(bit(B2, i), I64), B2.CreateZExt(i, I64)));
  });
}


Value *Lowering::activeLanes(IRBuilder<> &B, Value *base, Value *nInWarp) {
  Function *Fn = markerFn("__ol_rs.warp_active", I64, {I32, I32});
  Fn->setDoesNotAccessMemory();
  Fn->setDoesNotThrow();
  Fn->setWillReturn();
  return B.CreateCall(Fn, {base, nInWarp});
}


bool Lowering::vectorLanes() const { return wholeWarps() && warp <= 64; }


Value *Lowering::laneMask(IRBuilder<> &B, Value *set) {
  return B.CreateZExt(B.CreateBitCast(set, IntegerType::get(C, warp)), I64);
}


bool Lowering::isCollectiveCall(CallInst *CI) const {
  Function *Fn = CI->getCalledFunction();
  switch (Fn ? classifyName(Fn->getName()).op : INTRINSIC_OP_NOT_GPU) {
  case INTRINSIC_OP_ACTIVE_MASK: case INTRINSIC_OP_SHFL: case INTRINSIC_OP_VOTE: case INTRINSIC_OP_BALLOT:
  case INTRINSIC_OP_SPV_BALLOT: case INTRINSIC_OP_READ_LANE: case INTRINSIC_OP_MATCH: case INTRINSIC_OP_REDUX:
    return true;
  default:
    return false;
  }
}


std::map<CallInst *, CallInst *> Lowering::pairMasks(const std::vector<CallInst *> &coll,
                                                   const std::set<CallInst *> &apart) {
  std::map<CallInst *, CallInst *> paired;
  std::set<CallInst *> isColl(coll.begin(), coll.end());
  for (CallInst *CI : coll) {
    if (!apart.count(CI) || classifyName(CI->getCalledFunction()->getName()).op != INTRINSIC_OP_ACTIVE_MASK)
      continue;
    // the next call in the block, with only instructions without effects before it
    CallInst *X = nullptr;
    for (Instruction *I = CI->getNextNode(); I && !I->isTerminator(); I = I->getNextNode()) {
      if (auto *Call = dyn_cast<CallInst>(I)) {
        X = Call;
        break;
      }
      if (I->mayHaveSideEffects() || isa<PHINode>(I))
        break;
    }
    if (!X || !isCollectiveCall(X) || paired.count(X) ||
        classifyName(X->getCalledFunction()->getName()).op == INTRINSIC_OP_ACTIVE_MASK)
      continue;
    // what uses the mask before X: not X's operands but its mask (nvvm's shfl, vote and match.sync take it
    // as operand 0, which the lowering does not read before the exchange; redux.sync's is operand 1 and
    // read in it: not paired)
    std::set<Instruction *> uses = {CI};
    SmallVector<Instruction *, 8> move;
    bool ok = true;
    for (Instruction *I = CI->getNextNode(); I != X; I = I->getNextNode())
      if (std::any_of(I->op_begin(), I->op_end(), [&](Value *v) { return uses.count(dyn_cast<Instruction>(v)); })) {
        ok = ok && !I->mayReadFromMemory(); // (a load that uses it stays where it is: no pairing)
        uses.insert(I);
        move.push_back(I);
      }
    IntrinsicOp xop = classifyName(X->getCalledFunction()->getName()).op;
    ok = ok && (xop == INTRINSIC_OP_SHFL || xop == INTRINSIC_OP_VOTE || xop == INTRINSIC_OP_MATCH);
    for (unsigned k = 1; k < X->arg_size(); ++k)
      ok = ok && !uses.count(dyn_cast<Instruction>(X->getArgOperand(k)));
    if (!ok)
      continue;
    Instruction *at = X;
    for (Instruction *I : move) {
      I->moveAfter(at);
      at = I;
    }
    paired[X] = CI;
  }
  return paired;
}


// Replace GPU intrinsics inside F (= K.body). Sets `collective` if any barrier-like op was introduced.
bool Lowering::replaceIntrinsics(Function *F, bool &collective) {
  exchangeReach = false;
  exchanges = 0;
  secondArea = false;
  unsigned o = F->arg_size() - E_COUNT;
  auto X = [&](int e) -> Value * { return F->getArg(o + e); };
  SmallVector<CallInst *, 32> calls;
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (Function *Callee = CI->getCalledFunction())
          if (isGpuIntrinsicName(Callee->getName()))
            calls.push_back(CI);
  std::set<Value *> lowLanes; // mbcnt_lo(~0, 0)'s results
  // The warp collectives last: where a warp's lanes may reach one apart (divergentBlocks, from the ids
  // the other intrinsics become), it computes over the lanes that run it with it, the GPU's active lanes
  // (`apart`: the ballots, the first lane, the active mask, match), as a GPU does; elsewhere every lane
  // of the warp that exists is active.
  auto firstCollective =
      std::stable_partition(calls.begin(), calls.end(), [&](CallInst *CI) { return !isCollectiveCall(CI); });
  std::set<CallInst *> apart;
  std::map<CallInst *, CallInst *> maskBefore; // a collective -> the active mask it gives (pairMasks)
  bool wide = false;
  for (CallInst *CI : calls) {
    if (firstCollective != calls.end() && CI == *firstCollective) {
      std::vector<CallInst *> coll(firstCollective, calls.end());
      std::set<BasicBlock *> divBlocks = divergentBlocks(F);
      for (CallInst *X : coll)
        if (divBlocks.count(X->getParent()))
          apart.insert(X);
      wide = collectivesApart(F, coll);
      maskBefore = pairMasks(coll, apart);
    }
    bool ap = apart.count(CI) != 0;
    if (classifyName(CI->getCalledFunction()->getName()).op == INTRINSIC_OP_ACTIVE_MASK &&
        std::any_of(maskBefore.begin(), maskBefore.end(), [&](auto &kv) { return kv.second == CI; }))
      continue; // (replaced by its collective's exchange)
    if (auto it = maskBefore.find(CI); it != maskBefore.end())
      pairedMask = it->second;
    // Where lanes of one warp may wait at different exchanges at once (`wide`), a lane's value takes its
    // whole 8-byte slot (as an i64): an array of a narrower type would overlap their slots.
    auto slotTy = [&](Type *T) { return wide ? I64 : T; };
    auto toSlot = [&](IRBuilder<> &B2, Value *v) -> Value * {
      if (!wide)
        return v;
      Type *T = v->getType();
      if (T->isPointerTy())
        return B2.CreatePtrToInt(v, I64);
      Type *IT = IntegerType::get(C, (unsigned)DL.getTypeSizeInBits(T));
      return B2.CreateZExt(B2.CreateBitCast(v, IT), I64);
    };
    auto fromSlot = [&](IRBuilder<> &B2, Value *x, Type *T) -> Value * {
      if (!wide)
        return x;
      if (T->isPointerTy())
        return B2.CreateIntToPtr(x, T);
      return B2.CreateBitCast(B2.CreateTrunc(x, IntegerType::get(C, (unsigned)DL.getTypeSizeInBits(T))), T);
    };
    StringRef n = CI->getCalledFunction()->getName();
    std::string name = n.str();
    OlRsIntrinsic in = classifyName(n);
    IRBuilder<> B(CI);
    Value *R = nullptr;
    bool erased = false;
    // a value a warp exchange can carry in its 8-byte slot per lane
    auto exchangeable = [&](Type *T) { return T->isSingleValueType() && DL.getTypeAllocSize(T) <= 8; };
    auto asTy = [&](Value *v) -> Value * {
      Type *T = CI->getType();
      if (v->getType() == T)
        return v;
      if (T->isIntegerTy() && v->getType()->isIntegerTy())
        return B.CreateZExtOrTrunc(v, T);
      if (T->isPointerTy() && v->getType()->isPointerTy())
        return B.CreateAddrSpaceCast(v, T);
      return nullptr;
    };
    switch (in.op) {
    case INTRINSIC_OP_LOCAL_ID:
      R = asTy(X(E_LX + in.arg));
      break;
    case INTRINSIC_OP_GROUP_SIZE:
      R = asTy(X(E_GSX + in.arg));
      break;
    case INTRINSIC_OP_GROUP_ID:
      R = asTy(X(E_GIDX + in.arg));
      break;
    case INTRINSIC_OP_NUM_GROUPS:
      R = asTy(X(E_NGX + in.arg));
      break;
    case INTRINSIC_OP_WARP_SIZE:
      R = asTy(ConstantInt::get(I32, warp));
      break;
    case INTRINSIC_OP_LANE_ID:
      R = asTy(B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp)));
      break;
    case INTRINSIC_OP_LANE_MASK: { // arg: 0 eq, 1 lt, 2 le, 3 ge, 4 gt
      Value *lane = B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp));
      Value *one = B.CreateShl(ConstantInt::get(I32, 1), lane);
      if (in.arg == 0) R = one;
      else if (in.arg == 1) R = B.CreateSub(one, ConstantInt::get(I32, 1));
      else if (in.arg == 2) R = B.CreateOr(one, B.CreateSub(one, ConstantInt::get(I32, 1)));
      else if (in.arg == 3) R = B.CreateNot(B.CreateSub(one, ConstantInt::get(I32, 1)));
      else R = B.CreateNot(B.CreateOr(one, B.CreateSub(one, ConstantInt::get(I32, 1))));
      R = asTy(R);
      break;
    }
    case INTRINSIC_OP_BARRIER: { // arg 1: returns whether this is the first work-item to arrive (never)
      bool isFirst = in.arg == 1;
      if (!CI->getType()->isVoidTy() && !isFirst)
        return fail("unsupported barrier intrinsic '" + name + "' (reduction barriers are not supported)");
      B.CreateCall(barrierMarker());
      collective = true;
      if (!CI->getType()->isVoidTy())
        R = ConstantInt::getFalse(C);
      else
        erased = true;
      break;
    }
    case INTRINSIC_OP_NO_OP:
      erased = true;
      break;
    case INTRINSIC_OP_FENCE:
      B.CreateFence(AtomicOrdering::SequentiallyConsistent);
      erased = true;
      break;
    case INTRINSIC_OP_EXIT:
      B.CreateCall(exitMarker());
      erased = true;
      break;
    case INTRINSIC_OP_ACTIVE_MASK:
      if (ap) { // the lanes that reach it with this one: an exchange
        collective = true;
        auto lanes = [&](IRBuilder<> &B2, Value *, Value *, Value *base, Value *nIn) {
          return activeLanes(B2, base, nIn);
        };
        R = B.CreateTrunc(emitExchange(B, F, toSlot(B, ConstantInt::get(I8, 1)), lanes), I32);
      } else {
        R = laneMaskOf(B, F, I32);
      }
      break;
    case INTRINSIC_OP_SHFL: {
      // (mask, a, b, c) -> a from lane j, PTX shfl semantics; arg & 3: up, down, bfly, idx; arg & 4: the
      // predicate form.
      int mode = in.arg & 3;
      bool pred = (in.arg & 4) != 0;
      Type *VT = pred ? cast<StructType>(CI->getType())->getElementType(0) : CI->getType();
      Value *a = CI->getArgOperand(1), *bval = CI->getArgOperand(2), *cval = CI->getArgOperand(3);
      if (!exchangeable(a->getType()) || a->getType() != VT)
        return fail("unsupported form of '" + name + "'");
      collective = true;
      Value *res = emitExchange(B, F, toSlot(B, a), [&](IRBuilder<> &B2, Value *xchg, Value *lane, Value *, Value *nIn) -> Value * {
        Value *b5 = B2.CreateAnd(bval, 31), *c5 = B2.CreateAnd(cval, 31);
        Value *segMask = B2.CreateAnd(B2.CreateLShr(cval, 8), 31);
        Value *minLane = B2.CreateAnd(lane, segMask);
        Value *notSeg = B2.CreateNot(segMask), *cIn = B2.CreateAnd(c5, notSeg);
        Value *maxLane = B2.CreateOr(minLane, cIn);
        Value *bIn = mode == 3 ? B2.CreateAnd(b5, notSeg) : nullptr;
        Value *j, *p;
        if (mode == 0) {
          j = B2.CreateSub(lane, b5);
          p = B2.CreateICmpSGE(j, maxLane);
        } else if (mode == 1) {
          j = B2.CreateAdd(lane, b5);
          p = B2.CreateICmpSLE(j, maxLane);
        } else if (mode == 2) {
          j = B2.CreateXor(lane, b5);
          p = B2.CreateICmpSLE(j, maxLane);
        } else {
          j = B2.CreateOr(minLane, bIn);
          p = B2.CreateICmpSLE(j, maxLane);
        }
        Value *src = j;
        j = B2.CreateSelect(p, j, lane);
        // (the lane bounds are constants for a constant width: a source lane the analyses can see, e.g.
        // the same for every lane of read_first_lane, ol-warp-lanes' divergentValues)
        // (tracked: a folded value's users get its replacement, and a value may be listed twice)
        SmallVector<WeakTrackingVH, 10> vs = {p, j, b5, c5, segMask, notSeg, cIn, minLane, maxLane, src};
        if (bIn)
          vs.push_back(bIn);
        for (size_t i = 2; i < vs.size(); ++i)
          if (vs[i])
            (void)simplified(vs[i]);
        for (size_t i = 0; i < 2; ++i)
          (void)simplified(vs[i]);
        p = vs[0];
        j = vs[1];
        // lanes past the end of a partial warp read their own value
        j = simplified(B2.CreateSelect(simplified(B2.CreateICmpULT(j, nIn)), j, lane));
        Value *v = fromSlot(B2, readLane(B2, F, xchg, lane, j, slotTy(VT)), VT);
        if (!pred)
          return v;
        Value *s = UndefValue::get(CI->getType());
        s = B2.CreateInsertValue(s, v, 0);
        return B2.CreateInsertValue(s, p, 1);
      });
      R = res;
      break;
    }
    case INTRINSIC_OP_VOTE: { // arg: 0 ballot, 1 any, 2 all, 3 uni
      Value *p = CI->arg_size() == 2 ? CI->getArgOperand(1) : CI->getArgOperand(0);
      collective = true;
      Value *exist = nullptr;
      Value *ballot = emitExchange(B, F, toSlot(B, B.CreateZExt(p, I8)), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
        Value *b = ballotCompute(B2, xchg, base, nIn, ap, wide);
        if (ap)
          exist = activeLanes(B2, base, nIn);
        return b;
      });
      if (!exist)
        exist = laneMaskOf(B, F, I64);
      if (in.arg == 0)
        R = B.CreateTrunc(ballot, I32);
      else if (in.arg == 1)
        R = B.CreateICmpNE(ballot, ConstantInt::get(I64, 0));
      else if (in.arg == 2)
        R = B.CreateICmpEQ(ballot, exist);
      else
        R = B.CreateOr(B.CreateICmpEQ(ballot, exist), B.CreateICmpEQ(ballot, ConstantInt::get(I64, 0)));
      break;
    }
    case INTRINSIC_OP_IMPLICIT_ARG_PTR:
      R = asTy(X(E_IMPLARG));
      break;
    case INTRINSIC_OP_DISPATCH_PTR:
      R = asTy(X(E_DISPATCH));
      break;
    case INTRINSIC_OP_MBCNT: { // arg 1: the high half
      bool hi = in.arg == 1;
      Value *mask = CI->getArgOperand(0), *acc = CI->getArgOperand(1);
      Value *lane = B.CreateURem(X(E_LWI), ConstantInt::get(I32, warp));
      Value *l = hi ? B.CreateSelect(B.CreateICmpULE(lane, ConstantInt::get(I32, 32)), ConstantInt::get(I32, 0),
                                     B.CreateSub(lane, ConstantInt::get(I32, 32)))
                    : B.CreateSelect(B.CreateICmpUGE(lane, ConstantInt::get(I32, 32)), ConstantInt::get(I32, 32), lane);
      if (auto *mc = dyn_cast<ConstantInt>(mask); mc && mc->isMinusOne()) { // mbcnt(~0, acc): acc + the lanes below
        if (hi && lowLanes.count(acc)) { // mbcnt_hi(~0, mbcnt_lo(~0, 0)): the lane id, as for the other targets
          R = lane;
          break;
        }
        auto *a0 = dyn_cast<ConstantInt>(acc);
        R = a0 && a0->isZero() ? l : B.CreateAdd(acc, l);
        if (!hi && a0 && a0->isZero())
          lowLanes.insert(R);
        break;
      }
      Value *l64 = B.CreateZExt(l, I64);
      Value *below = B.CreateTrunc(B.CreateSub(B.CreateShl(ConstantInt::get(I64, 1), l64), ConstantInt::get(I64, 1)), I32);
      Function *pop = Intrinsic::getOrInsertDeclaration(&M, Intrinsic::ctpop, {I32});
      R = B.CreateAdd(acc, B.CreateCall(pop, {B.CreateAnd(mask, below)}));
      break;
    }
    case INTRINSIC_OP_BALLOT: {
      collective = true;
      Value *p = CI->getArgOperand(0);
      Value *ballot = emitExchange(B, F, toSlot(B, B.CreateZExt(p, I8)), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
        return ballotCompute(B2, xchg, base, nIn, ap, wide);
      });
      R = B.CreateTrunc(ballot, CI->getType());
      break;
    }
    case INTRINSIC_OP_READ_LANE: { // arg: 0 the first lane, 1 the lane in operand 1, 2 ds.bpermute
      collective = true;
      bool bperm = in.arg == 2;
      Value *v = bperm ? CI->getArgOperand(1) : CI->getArgOperand(0);
      Value *sel = bperm ? CI->getArgOperand(0) : (in.arg == 1 ? CI->getArgOperand(1) : nullptr);
      Type *VT = CI->getType();
      if (!exchangeable(VT) || v->getType() != VT)
        return fail("unsupported form of '" + name + "'");
      R = emitExchange(B, F, toSlot(B, v), [&](IRBuilder<> &B2, Value *xchg, Value *lane, Value *base, Value *nIn) {
        Value *j = ConstantInt::get(I32, 0);
        if (!sel && ap) { // the first active lane
          Function *ctz = Intrinsic::getOrInsertDeclaration(&M, Intrinsic::cttz, {I64});
          j = B2.CreateTrunc(B2.CreateCall(ctz, {activeLanes(B2, base, nIn), B2.getTrue()}), I32);
        }
        if (sel) {
          j = bperm ? B2.CreateAnd(B2.CreateLShr(sel, 2), warp - 1) : B2.CreateAnd(sel, warp - 1);
          j = simplified(B2.CreateSelect(simplified(B2.CreateICmpULT(j, nIn)), j, lane));
        }
        return fromSlot(B2, readLane(B2, F, xchg, lane, j, slotTy(VT)), VT);
      });
      break;
    }
    case INTRINSIC_OP_MATCH: { // arg 0: match.any (i32 mask, x) -> the lanes whose x is this one's;
                               // 1: match.all (i32 mask, x) -> {the lanes if all hold x else 0, whether};
                               // 2: __ol_rs.match_any (x) -> the i64 of the lanes whose x is this one's
                               // (ol-match-loops: gpuintrin's match_any loop)
      bool all = in.arg == 1, whole = in.arg == 2;
      Value *member = whole ? nullptr : CI->getArgOperand(0), *v = CI->getArgOperand(whole ? 0 : 1);
      Type *VT = v->getType();
      auto *ST = dyn_cast<StructType>(CI->getType());
      if (!VT->isIntegerTy() || !exchangeable(VT) || (!whole && !member->getType()->isIntegerTy(32)) ||
          (all ? !ST || ST->getNumElements() != 2 || !ST->getElementType(0)->isIntegerTy(32)
               : !CI->getType()->isIntegerTy(whole ? 64 : 32)))
        return fail("unsupported form of '" + name + "'");
      collective = true;
      Value *lanes = nullptr;
      Value *vs = toSlot(B, v);
      Value *same = emitExchange(B, F, vs, [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
        Type *ST = slotTy(VT);
        Value *m;
        if (vectorLanes()) { // the warp's slots as one vector
          auto *V = FixedVectorType::get(ST, warp);
          Value *slots = B2.CreateAlignedLoad(V, xchg, Align(1));
          Value *eq = B2.CreateICmpEQ(slots, B2.CreateVectorSplat(warp, vs));
          m = laneMask(B2, eq);
        } else {
          m = laneBits(B2, nIn, [&](IRBuilder<> &B3, Value *i) {
            return B3.CreateICmpEQ(readSlot(B3, xchg, i, ST), vs);
          });
        }
        if (ap)
          m = B2.CreateAnd(m, activeLanes(B2, base, nIn));
        if (ap)
          lanes = activeLanes(B2, base, nIn);
        return m;
      });
      if (whole) {
        R = same;
        break;
      }
      if (!lanes)
        lanes = laneMaskOf(B, F, I64);
      // (operand 0 again: a mask paired with this exchange was replaced in it)
      Value *mem = B.CreateZExt(CI->getArgOperand(0), I64);
      same = B.CreateTrunc(B.CreateAnd(same, mem), I32);
      if (!all) {
        R = same;
        break;
      }
      Value *ok = B.CreateICmpEQ(same, B.CreateTrunc(B.CreateAnd(lanes, mem), I32));
      Value *s = UndefValue::get(ST);
      s = B.CreateInsertValue(s, B.CreateSelect(ok, same, ConstantInt::get(I32, 0)), 0);
      R = B.CreateInsertValue(s, ok, 1);
      break;
    }
    case INTRINSIC_OP_REDUX: { // (i32 x, i32 mask) -> x combined over the active lanes in the mask
      Value *v = CI->getArgOperand(0);
      if (!v->getType()->isIntegerTy(32) || !CI->getType()->isIntegerTy(32) ||
          !CI->getArgOperand(1)->getType()->isIntegerTy(32) || in.arg < 0 || in.arg > 7)
        return fail("unsupported form of '" + name + "'");
      static constexpr Instruction::BinaryOps ops[8] = {Instruction::Add, Instruction::BinaryOpsEnd,
        Instruction::BinaryOpsEnd, Instruction::BinaryOpsEnd, Instruction::BinaryOpsEnd, Instruction::And,
        Instruction::Or, Instruction::Xor};
      static constexpr Intrinsic::ID mm[8] = {Intrinsic::not_intrinsic, Intrinsic::smin, Intrinsic::smax,
        Intrinsic::umin, Intrinsic::umax, Intrinsic::not_intrinsic, Intrinsic::not_intrinsic, Intrinsic::not_intrinsic};
      static constexpr uint32_t identity[8] = {0, 0x7fffffffu, 0x80000000u, ~0u, 0, ~0u, 0, 0};
      int k = in.arg;
      auto combine = [&](IRBuilder<> &B2, Value *a, Value *b) {
        return mm[k] != Intrinsic::not_intrinsic ? B2.CreateBinaryIntrinsic(mm[k], a, b) : B2.CreateBinOp(ops[k], a, b);
      };
      collective = true;
      R = emitExchange(B, F, toSlot(B, v), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
        // the lanes taking part: the active ones (or those that exist) in the mask
        Value *on = B2.CreateAnd(ap ? activeLanes(B2, base, nIn) : laneMaskOf(B2, F, I64),
                                 B2.CreateZExt(CI->getArgOperand(1), I64));
        Value *id = ConstantInt::get(I32, identity[k]);
        return laneFold(B2, nIn, id, [&](IRBuilder<> &B3, Value *i, Value *acc) {
          Value *x = fromSlot(B3, readSlot(B3, xchg, i, slotTy(I32)), I32);
          Value *in = B3.CreateTrunc(B3.CreateLShr(on, B3.CreateZExt(i, I64)), I1Ty());
          return combine(B3, acc, B3.CreateSelect(in, x, id));
        });
      });
      break;
    }
    case INTRINSIC_OP_SPV_ID: { // arg: 0 local id, 1 group id, 2 group size, 3 number of groups
      auto *c = CI->arg_size() == 1 ? dyn_cast<ConstantInt>(CI->getArgOperand(0)) : nullptr;
      if (!c || c->getZExtValue() > 2)
        return fail("'" + name + "' with a non-constant dimension is not supported");
      int d = (int)c->getZExtValue();
      static constexpr int base[4] = {E_LX, E_GIDX, E_GSX, E_NGX};
      R = asTy(X(base[in.arg & 3] + d));
      break;
    }
    case INTRINSIC_OP_SPV_BARRIER:
      B.CreateCall(barrierMarker());
      collective = true;
      erased = true;
      break;
    case INTRINSIC_OP_SPV_BALLOT: {
      collective = true;
      Value *p = CI->getArgOperand(0);
      Value *ballot = emitExchange(B, F, toSlot(B, B.CreateZExt(p, I8)), [&](IRBuilder<> &B2, Value *xchg, Value *, Value *base, Value *nIn) {
        return ballotCompute(B2, xchg, base, nIn, ap, wide);
      });
      auto *VT = dyn_cast<FixedVectorType>(CI->getType());
      if (!VT || VT->getNumElements() != 4 || !VT->getElementType()->isIntegerTy(32))
        return fail("unsupported form of '" + name + "'");
      Value *v = Constant::getNullValue(VT);
      v = B.CreateInsertElement(v, B.CreateTrunc(ballot, I32), (uint64_t)0);
      v = B.CreateInsertElement(v, B.CreateTrunc(B.CreateLShr(ballot, 32), I32), (uint64_t)1);
      R = v;
      break;
    }
    default: // INTRINSIC_OP_UNSUPPORTED
      break;
    }
    if (!R && !erased)
      return fail("unsupported GPU intrinsic '" + name + "' in kernel (the CPU JIT cannot emulate it)");
    if (R) {
      if (R->getType() != CI->getType())
        return fail("internal: type mismatch replacing '" + name + "'");
      CI->replaceAllUsesWith(R);
    }
    CI->eraseFromParent();
  }
  // What the intrinsics made constant (the warp size: `__gpu_num_lanes() / 2`, the loop bounds and
  // branches it decides) folded, so that the barrier analyses see the blocks that can run. SPIR-V's ids
  // are 64-bit, and a kernel's 32-bit id truncates them: `trunc(zext(x))` back to x's width is x (the
  // bounds guards and index forms the transforms look for are then nvptx64's and amdgcn's).
  for (BasicBlock &BB : *F)
    for (Instruction &I : make_early_inc_range(BB))
      if (auto *T = dyn_cast<TruncInst>(&I))
        if (auto *E = dyn_cast<CastInst>(T->getOperand(0));
            E && (isa<ZExtInst>(E) || isa<SExtInst>(E)) && E->getSrcTy() == T->getDestTy()) {
          T->replaceAllUsesWith(E->getOperand(0));
          T->eraseFromParent();
        }
  for (bool changed = true; changed;) {
    changed = false;
    for (BasicBlock &BB : *F) {
      for (Instruction &I : make_early_inc_range(BB))
        if (!I.getType()->isVoidTy() && !isa<PHINode>(I))
          if (Constant *K = ConstantFoldInstruction(&I, DL)) {
            I.replaceAllUsesWith(K);
            I.eraseFromParent();
            changed = true;
          }
      changed |= ConstantFoldTerminator(&BB, /*DeleteDeadConditions=*/true);
    }
  }
  removeUnreachableBlocks(*F);
  // Workgroup-scope fences are meaningless when a whole group runs on one thread.
  for (BasicBlock &BB : *F)
    for (Instruction &I : make_early_inc_range(BB))
      if (auto *FI = dyn_cast<FenceInst>(&I)) {
        SmallVector<StringRef, 8> names;
        C.getSyncScopeNames(names);
        StringRef sc = FI->getSyncScopeID() < names.size() ? names[FI->getSyncScopeID()] : "";
        if (sc == "workgroup" || sc == "wavefront" || sc == "singlethread" || sc.starts_with("workgroup-") ||
            sc.starts_with("wavefront-") || sc == "cta")
          FI->eraseFromParent();
      }
  return true;
}

Value *constantOffsetBase(Value *P, const DataLayout &DL, APInt &off) {
  off = APInt(64, 0);
  for (int k = 0; k < 4; ++k) {
    APInt o(DL.getIndexTypeSizeInBits(P->getType()), 0);
    P = P->stripAndAccumulateConstantOffsets(DL, o, true);
    off += o.sextOrTrunc(64);
    if (auto *AC = dyn_cast<AddrSpaceCastOperator>(P))
      P = AC->getPointerOperand();
    else
      break;
  }
  return P;
}

bool readsImplicitArgs(Function *F, unsigned o, LoadInst *L) {
  const DataLayout &DL = F->getDataLayout();
  APInt off;
  Value *base = constantOffsetBase(L->getPointerOperand(), DL, off);
  uint64_t size = base == F->getArg(o + E_IMPLARG) ? 256 : base == F->getArg(o + E_DISPATCH) ? 64 : 0;
  return L->isSimple() && !off.isNegative() && off.getZExtValue() + DL.getTypeStoreSize(L->getType()) <= size;
}

// The dimension whose group size v is (through casts: the extra argument, or amdgcn's implicit-argument
// or dispatch-packet field), or -1.
int Lowering::groupSizeDim(Function *F, Value *v) {
  unsigned o = F->arg_size() - E_COUNT;
  while (auto *CI = dyn_cast<CastInst>(v))
    if (CI->getOpcode() == Instruction::Trunc || CI->getOpcode() == Instruction::ZExt ||
        CI->getOpcode() == Instruction::SExt)
      v = CI->getOperand(0);
    else
      break;
  for (int d = 0; d < 3; ++d)
    if (v == F->getArg(o + E_GSX + d))
      return d;
  auto *LI = dyn_cast<LoadInst>(v);
  if (!LI || !LI->getType()->isIntegerTy(16) || LI->isVolatile())
    return -1;
  APInt off;
  Value *base = constantOffsetBase(LI->getPointerOperand(), DL, off);
  for (int d = 0; d < 3; ++d)
    if ((base == F->getArg(o + E_IMPLARG) && off == 12 + 2 * d) ||
        (base == F->getArg(o + E_DISPATCH) && off == 4 + 2 * d))
      return d;
  return -1;
}

} // namespace ol_rs::lower
