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

} // namespace ol_rs::lower
