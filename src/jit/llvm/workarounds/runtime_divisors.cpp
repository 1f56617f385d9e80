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
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB) {
      auto *BO = dyn_cast<BinaryOperator>(&I);
      if (!BO || (BO->getOpcode() != Instruction::URem && BO->getOpcode() != Instruction::UDiv &&
                  BO->getOpcode() != Instruction::SRem && BO->getOpcode() != Instruction::SDiv))
        continue;
      int d = groupSizeDim(F, BO->getOperand(1));
      if (d < 0)
        continue;
      IRBuilder<> B(BO);
      BO->setOperand(1, B.CreateZExtOrTrunc(F->getArg(o + E_GSRX + d), BO->getType()));
      fired(T_RUNTIME_DIVISORS);
    }
}

} // namespace ol_rs::lower
