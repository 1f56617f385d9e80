// The LLVM 22.1 loop-vectoriser workaround of the lowering: divisions by the group size use the size
// loaded at run time, also in a specialisation (runtimeDivisors).
#include "../lower/lowering.h"

namespace ol_rs::lower {

// In a launch-time specialisation, a division or remainder by the group size (`(t + 1) % n`, with n
// from __gpu_num_threads_x() or amdgcn's implicit-argument / dispatch-packet fields) divides by the
// value loaded at run time (E_GSR*), not by the constant: LLVM 22.1's loop vectoriser takes
// `base + ((t + 1) & (n - 1))` as consecutive in t once n is a power-of-two constant and loads past the
// group (src/jit/llvm/tests.rs, neighbour_indices_wrap_around*). Trip counts and every other use keep the
// constant.
void Lowering::runtimeDivisors(Function *F) {
  unsigned o = F->arg_size() - E_COUNT;
  // the dimension whose group size v is (through casts), or -1
  auto dimOf = [&](Value *v) -> int {
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
    APInt off(64, 0);
    Value *base = LI->getPointerOperand();
    for (int k = 0; k < 4; ++k) { // GEPs, and the address-space casts replaceIntrinsics puts on the arguments
      APInt o64(DL.getIndexTypeSizeInBits(base->getType()), 0);
      base = base->stripAndAccumulateConstantOffsets(DL, o64, true);
      off += o64.sextOrTrunc(64);
      if (auto *AC = dyn_cast<AddrSpaceCastOperator>(base))
        base = AC->getPointerOperand();
      else
        break;
    }
    for (int d = 0; d < 3; ++d)
      if ((base == F->getArg(o + E_IMPLARG) && off == 12 + 2 * d) ||
          (base == F->getArg(o + E_DISPATCH) && off == 4 + 2 * d))
        return d;
    return -1;
  };
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB) {
      auto *BO = dyn_cast<BinaryOperator>(&I);
      if (!BO || (BO->getOpcode() != Instruction::URem && BO->getOpcode() != Instruction::UDiv &&
                  BO->getOpcode() != Instruction::SRem && BO->getOpcode() != Instruction::SDiv))
        continue;
      int d = dimOf(BO->getOperand(1));
      if (d < 0)
        continue;
      IRBuilder<> B(BO);
      BO->setOperand(1, B.CreateZExtOrTrunc(F->getArg(o + E_GSRX + d), BO->getType()));
      fired(T_RUNTIME_DIVISORS);
    }
}

} // namespace ol_rs::lower
