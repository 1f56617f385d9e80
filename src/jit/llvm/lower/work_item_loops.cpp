// Work-item loops: their parallel-accesses groups and loop metadata.
#include "lowering.h"

namespace ol_rs::lower {


// Work-items of one barrier region are independent under GPU semantics (no data races between
// work-items without a barrier), so the work-item loops are marked parallel for the vectoriser.
MDNode *Lowering::newAccessGroup() { return MDNode::getDistinct(C, {}); }

void Lowering::addAccessGroup(Instruction &I, MDNode *AG) {
  if (!I.mayReadOrWriteMemory())
    return;
  MDNode *old = I.getMetadata(LLVMContext::MD_access_group);
  if (!old) {
    I.setMetadata(LLVMContext::MD_access_group, AG);
    return;
  }
  SmallVector<Metadata *, 4> ops;
  if (old->getNumOperands() == 0)
    ops.push_back(old);
  else
    for (const MDOperand &Op : old->operands())
      ops.push_back(Op.get());
  ops.push_back(AG);
  I.setMetadata(LLVMContext::MD_access_group, MDNode::get(C, ops));
}

void Lowering::markParallelLoop(Instruction *latchBr, MDNode *AG, bool noInterleave) {
  MDNode *PA = MDNode::get(C, {MDString::get(C, "llvm.loop.parallel_accesses"), AG});
  MDNode *IC = MDNode::get(C, {MDString::get(C, "llvm.loop.interleave.count"),
                               ConstantAsMetadata::get(ConstantInt::get(I32, 1))});
  MDNode *ID = noInterleave ? MDNode::getDistinct(C, {nullptr, PA, IC}) : MDNode::getDistinct(C, {nullptr, PA});
  ID->replaceOperandWith(0, ID);
  latchBr->setMetadata(LLVMContext::MD_loop, ID);
}


// Adds a property (`!{!"llvm.loop.unroll.disable"}`) to the loop metadata of latchBr.
void Lowering::addLoopProperty(Instruction *latchBr, MDNode *property) {
  SmallVector<Metadata *, 4> ops = {nullptr};
  if (MDNode *old = latchBr->getMetadata(LLVMContext::MD_loop))
    for (unsigned i = 1; i < old->getNumOperands(); ++i)
      ops.push_back(old->getOperand(i));
  ops.push_back(property);
  MDNode *ID = MDNode::getDistinct(C, ops);
  ID->replaceOperandWith(0, ID);
  latchBr->setMetadata(LLVMContext::MD_loop, ID);
}

// A `llvm.loop.vectorize.followup_vectorized` property for latchBr's loop: the vector loop the loop
// vectoriser makes of it gets only these properties (vectorised, no runtime unroll, latchBr's parallel
// accesses), not the loop's `llvm.loop.unroll.disable`, so that LLVM's unroller may take it after.
MDNode *Lowering::vectorisedFollowup(Instruction *latchBr) {
  SmallVector<Metadata *, 4> vectorised = {MDString::get(C, "llvm.loop.vectorize.followup_vectorized"),
                                           MDNode::get(C, {MDString::get(C, "llvm.loop.isvectorized"),
                                                           ConstantAsMetadata::get(ConstantInt::get(I32, 1))}),
                                           MDNode::get(C, {MDString::get(C, "llvm.loop.unroll.runtime.disable")})};
  if (MDNode *PA = findOptionMDForLoopID(latchBr->getMetadata(LLVMContext::MD_loop), "llvm.loop.parallel_accesses"))
    vectorised.push_back(PA);
  return MDNode::get(C, vectorised);
}

// ol-keep-short-rows, in a specialisation (F: the work-group function WG, or a body it calls): a work-item
// loop over x (its latch's loop properties name parallel accesses) with a constant trip count of 2 to
// kShortRowMax and no branch in its body is marked `llvm.loop.unroll.disable`, with vectorisedFollowup. In a
// specialisation of 2-D groups of 16 or 32 columns, LLVM's early full unroll took such a loop of a few
// instructions before the loop vectoriser saw it, and left its copies to SLP, which does not know the
// work-items' accesses to be independent (the parallel accesses are the loop's): scalar loads and stores,
// one per work-item. The vectoriser takes it instead, and the unroller its vector loop after. A body with a
// branch (`if (lx == 0)`) may still be unrolled, so that its branches fold per work-item. Legal: loop
// properties change no instruction.
unsigned Lowering::keepShortRows(Function *F, Function *WG) {
  unsigned n = 0;
  for (BasicBlock &L : *F) {
    auto *Br = dyn_cast<BranchInst>(L.getTerminator());
    MDNode *ID = Br && Br->isUnconditional() ? Br->getMetadata(LLVMContext::MD_loop) : nullptr;
    if (!ID || !findOptionMDForLoopID(ID, "llvm.loop.parallel_accesses") ||
        findOptionMDForLoopID(ID, "llvm.loop.unroll.disable") ||
        findOptionMDForLoopID(ID, "llvm.loop.vectorize.followup_vectorized"))
      continue;
    // the header: `lx < c`, lx from a constant by 1 per trip (c a constant, or the x group size of the
    // specialisation: a body function's argument, the constant once it is inlined)
    BasicBlock *H = Br->getSuccessor(0);
    auto *HBr = dyn_cast<BranchInst>(H->getTerminator());
    auto *Cmp = HBr && HBr->isConditional() ? dyn_cast<ICmpInst>(HBr->getCondition()) : nullptr;
    auto *lx = Cmp ? dyn_cast<PHINode>(Cmp->getOperand(0)) : nullptr;
    if (!lx || lx->getParent() != H || lx->getNumIncomingValues() != 2 || Cmp->getPredicate() != ICmpInst::ICMP_ULT ||
        lx->getBasicBlockIndex(&L) < 0)
      continue;
    uint64_t end = 0;
    if (auto *EC = dyn_cast<ConstantInt>(Cmp->getOperand(1)))
      end = EC->getZExtValue();
    else if (F != WG && F->arg_size() >= E_COUNT && Cmp->getOperand(1) == X(F->arg_size() - E_COUNT, F, E_GSX))
      end = specGs[0];
    auto *start = dyn_cast<ConstantInt>(lx->getIncomingValue(1 - lx->getBasicBlockIndex(&L)));
    auto *step = dyn_cast<BinaryOperator>(lx->getIncomingValueForBlock(&L));
    if (!start || !step || step->getOpcode() != Instruction::Add || step->getOperand(0) != lx ||
        !match(step->getOperand(1), m_One()) || end < start->getZExtValue() + 2 ||
        end - start->getZExtValue() > kShortRowMax)
      continue;
    // no branch from the body's first block to the latch
    BasicBlock *BB = HBr->getSuccessor(0);
    int steps = 0;
    while (BB != &L && BB->getSingleSuccessor() && ++steps < 256)
      BB = BB->getSingleSuccessor();
    if (BB != &L)
      continue;
    addLoopProperty(Br, MDNode::get(C, {MDString::get(C, "llvm.loop.unroll.disable")}));
    addLoopProperty(Br, vectorisedFollowup(Br));
    ++n;
  }
  fired(T_KEEP_SHORT_ROWS, n);
  return n;
}

} // namespace ol_rs::lower
