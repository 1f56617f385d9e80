// What ol-prefetch-next-group and ol-group-order share: a work-group function's loads of its group ids,
// the accesses of its work-items' code, and NextGroup, which finds the accesses whose next group's
// address is rows away and builds that address (src/jit/llvm/prefetch_next_group.cpp says why).
#pragma once

#include "lower/lowering.h"
#include "prefetch.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

namespace ol_rs {

// The next group's value (the group id given, x or y, plus one) of what that id computes, built by copying the instructions between
// the id and it. What the id reaches through anything but arithmetic, casts, address computations,
// selects, compares and freezes (a phi, a load, a call) is taken as it is in this group: the address is
// the next group's where it is computed from the id by arithmetic, an approximation of it otherwise (a
// loop's phi that starts where the group's x range starts: a segment of a row), which a prefetch may be.
class NextGroup {
public:
  // `ctx`: the work-group function's context; `ids`: the loads of the group's x id from it.
  NextGroup(Argument *ctx, ArrayRef<LoadInst *> ids) : ctx(ctx), ids(ids) {
    SmallVector<Instruction *, 16> work(ids.begin(), ids.end());
    dependent.insert(ids.begin(), ids.end());
    while (!work.empty()) {
      Instruction *I = work.pop_back_val();
      for (User *U : I->users())
        if (auto *UI = dyn_cast<Instruction>(U); UI && copyable(UI, I) && dependent.insert(UI).second)
          work.push_back(UI);
    }
  }

  // Whether V's next-group value differs from V.
  bool depends(Value *V) const { return isa<Instruction>(V) && dependent.contains(cast<Instruction>(V)); }

  // Whether V is a 2-D tile's row address: the id reaches it through a row, computed from the id and a
  // loop's induction variable (the work-item's row in the tile), times a kernel argument (the row pitch):
  // `(gx * 16 + ty) * h` in a transpose's `out[y * h + x]`. The next group's rows are then rows away from
  // this group's, where the hardware's prefetchers do not look. Not: the id times a constant or the group
  // size (`gx * 16 + tx`: the next piece of the same rows), nor the id alone times the pitch (`gx * cols +
  // tx`: a group per row, whose next group starts where this one ends).
  bool far(Value *V) {
    if (!depends(V) || is_contained(ids, V))
      return false;
    auto *I = cast<Instruction>(V);
    if (auto it = farOf.find(I); it != farOf.end())
      return it->second;
    bool f = false;
    if (I->getOpcode() == Instruction::Mul || I->getOpcode() == Instruction::Shl)
      for (unsigned i = 0; i < 2; ++i)
        f = f || (depends(I->getOperand(i)) && reachesPhi(I->getOperand(i)) && fromArguments(I->getOperand(1 - i), 0));
    for (Value *op : I->operands())
      f = f || far(op);
    return farOf[I] = f;
  }

  // V's next-group value: copies of the instructions, each right after its original, without
  // poison-generating flags.
  Value *build(Value *V) {
    if (!depends(V))
      return V;
    auto *I = cast<Instruction>(V);
    if (auto it = built.find(I); it != built.end())
      return it->second;
    Instruction *C;
    if (is_contained(ids, I)) {
      C = BinaryOperator::CreateAdd(I, ConstantInt::get(I->getType(), 1), "ol.next.group");
    } else {
      C = I->clone();
      for (unsigned i = 0; i < I->getNumOperands(); ++i)
        C->setOperand(i, build(I->getOperand(i)));
      C->dropPoisonGeneratingAnnotations();
      C->setName(I->getName() + ".next");
    }
    C->insertAfter(I->getIterator());
    return built[I] = C;
  }

private:
  // Whether V is computed from a phi (a loop's induction variable) through the instructions copied.
  static bool reachesPhi(Value *V) {
    SmallVector<Value *, 16> work{V};
    SmallPtrSet<Value *, 32> seen;
    while (!work.empty()) {
      auto *I = dyn_cast<Instruction>(work.pop_back_val());
      if (!I || !seen.insert(I).second)
        continue;
      if (isa<PHINode>(I))
        return true;
      if (copyable(I, nullptr))
        work.append(I->op_begin(), I->op_end());
    }
    return false;
  }

  // Whether V is computed from a kernel argument: loaded from the argument block (the pointer at the
  // context's start), through arithmetic and casts.
  bool fromArguments(Value *V, unsigned depth) const {
    static_assert(lower::CTX_ARGS == 0, "the argument block's address is the context's first field");
    auto *I = dyn_cast<Instruction>(V);
    if (!I || depth > 8)
      return false;
    if (auto *L = dyn_cast<LoadInst>(I)) {
      const Value *base = getUnderlyingObject(L->getPointerOperand());
      auto *A = dyn_cast<LoadInst>(base);
      return A && A->getPointerOperand()->stripPointerCasts() == ctx;
    }
    if (!isa<BinaryOperator>(I) && !isa<CastInst>(I) && !isa<FreezeInst>(I) && !isa<SelectInst>(I))
      return false;
    return any_of(I->operands(), [&](Value *op) { return fromArguments(op, depth + 1); });
  }

  // Whether user U of `from` is copied with from's next-group value: not a division by it (which could
  // divide by zero where the original does not).
  static bool copyable(const Instruction *U, const Instruction *from) {
    if (U->isIntDivRem())
      return U->getOperand(1) != from;
    return lower::isPureArithmetic(U) || isa<FreezeInst>(U);
  }

  Argument *ctx; // the work-group function's context: the argument block's address at byte 0
  ArrayRef<LoadInst *> ids;
  SmallPtrSet<Instruction *, 32> dependent;
  DenseMap<Instruction *, Value *> built;
  DenseMap<Instruction *, bool> farOf;
};

// The loads of the group's id in dimension `dim` (0: x, 1: y) in work-group function F: i32 loads of ctx +
// CTX_GID + 4 dim.
inline SmallVector<LoadInst *, 2> groupIdLoads(Function &F, unsigned dim = 0) {
  SmallVector<LoadInst *, 2> ids;
  if (!F.getName().starts_with("__ol_wg.") || F.arg_size() != 1 || !F.getArg(0)->getType()->isPointerTy())
    return ids;
  const DataLayout &DL = F.getDataLayout();
  for (Instruction &I : F.getEntryBlock()) {
    auto *L = dyn_cast<LoadInst>(&I);
    if (!L || !L->getType()->isIntegerTy(32))
      continue;
    APInt off(DL.getIndexTypeSizeInBits(L->getPointerOperandType()), 0);
    const Value *base = L->getPointerOperand()->stripAndAccumulateConstantOffsets(DL, off, true);
    if (base == F.getArg(0) && off == lower::CTX_GID + 4 * dim)
      ids.push_back(L);
  }
  return ids;
}

struct Access {
  Instruction *I;
  Value *ptr;
  bool write;
};

// The vector accesses of global memory by the work-items' code of work-group function F, at most `max`:
// plain and masked vector loads and stores in the lowering's access groups (which stay on the copies the
// vectoriser and the unroller make, also where a work-item loop is unrolled away), not of group memory,
// amdgcn's private memory or an alloca. Scalar ones are a vectorised loop's remainder or a kernel that did
// not vectorise.
inline SmallVector<Access, 16> workItemAccesses(Function &F, unsigned max) {
  SmallVector<Access, 16> accesses;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      Access a{&I, nullptr, false};
      if (auto *Ld = dyn_cast<LoadInst>(&I); Ld && Ld->isSimple())
        a.ptr = Ld->getPointerOperand();
      else if (auto *St = dyn_cast<StoreInst>(&I); St && St->isSimple())
        a = {&I, St->getPointerOperand(), true};
      else if (auto *II = dyn_cast<IntrinsicInst>(&I); II && II->getIntrinsicID() == Intrinsic::masked_load)
        a.ptr = II->getArgOperand(0);
      else if (II && II->getIntrinsicID() == Intrinsic::masked_store)
        a = {&I, II->getArgOperand(1), true};
      if (!a.ptr || !a.ptr->getType()->isPointerTy() || !I.hasMetadata(LLVMContext::MD_access_group))
        continue;
      if (!(isa<StoreInst>(I) ? I.getOperand(0)->getType() : I.getType())->isVectorTy())
        continue;
      if (unsigned as = a.ptr->getType()->getPointerAddressSpace(); as == kGroupAddressSpace || as == kPrivateAddressSpace)
        continue;
      if (isa<AllocaInst>(getUnderlyingObject(a.ptr)))
        continue;
      if (accesses.size() < max)
        accesses.push_back(a);
    }
  return accesses;
}

} // namespace ol_rs
