// ol-stop-points: every cycle of a function's control flow passes a stop point, where the code checks
// now and then whether it must stop (its launch failed, or ran past OFFLOAD_RS_KERNEL_TIMEOUT).
//
// What it does: every retreating edge of a depth-first walk from the entry (every cycle, reducible or
// not, has one) gets a block of its own that counts the function's trips around its cycles in a local
// counter and, every kPollInterval trips, calls kPollName(). That call returns when the code may go on;
// when it must stop, it does not return: the runtime leaves the code by a longjmp to where the CPU device
// called it (src/jit/stop.c), so the IR needs no second exit and the code between two stop points runs as
// it was compiled. The counter is an alloca promoted to registers here (a phi per loop header).
//
// Where it runs: after the optimisation pipeline (src/jit/compile.rs), so that the vectoriser and the
// unroller saw loops without it: a vectorised loop counts its vector trips. Only where asked
// (OFFLOAD_RS_KERNEL_TIMEOUT), since a counted loop is a little slower than one without.
//
// What it leaves alone: edges out of terminators other than `br` and `switch` (an `indirectbr`,
// `callbr` or `invoke` edge, none of which GPU bitcode has) and edges into exception-handling pads: a
// cycle through only such edges has no stop point. Recursion is not a cycle of the CFG either (GPU
// bitcode's is refused by the JIT; host bitcode's has none of its own).
#include "stop_points.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"

#include <utility>

using namespace llvm;

namespace ol_rs {

namespace {

// Trips around a function's cycles between two calls of the poll function: a power of two. The call
// reads a clock (tens of nanoseconds); even a one-cycle loop body then spends well under 1% of its time
// there, and a kernel stops within microseconds of being told to.
constexpr uint32_t kPollInterval = 4096;

// (block, target) for every retreating edge of a depth-first walk from the entry; a block with several
// edges to one target is listed once.
SmallVector<std::pair<BasicBlock *, BasicBlock *>, 8> retreatingEdges(Function &F) {
  SmallVector<std::pair<BasicBlock *, BasicBlock *>, 8> edges;
  DenseSet<std::pair<BasicBlock *, BasicBlock *>> seen;
  DenseMap<BasicBlock *, bool> onStack; // present: visited; true: on the walk's stack
  SmallVector<std::pair<BasicBlock *, unsigned>, 32> stack;
  BasicBlock *entry = &F.getEntryBlock();
  stack.push_back({entry, 0});
  onStack[entry] = true;
  while (!stack.empty()) {
    auto &[bb, next] = stack.back();
    Instruction *term = bb->getTerminator();
    if (!term || next == term->getNumSuccessors()) {
      onStack[bb] = false;
      stack.pop_back();
      continue;
    }
    BasicBlock *succ = term->getSuccessor(next++);
    auto it = onStack.find(succ);
    if (it == onStack.end()) {
      onStack[succ] = true;
      stack.push_back({succ, 0});
    } else if (it->second && seen.insert({bb, succ}).second) {
      edges.push_back({bb, succ});
    }
  }
  return edges;
}

// Puts `mid` on every edge from `from` to `to` (one block on several edges of a `switch`): the
// terminator's successors and `to`'s phis.
void redirect(BasicBlock *from, BasicBlock *to, BasicBlock *mid) {
  Instruction *term = from->getTerminator();
  for (unsigned i = 0, n = term->getNumSuccessors(); i < n; ++i)
    if (term->getSuccessor(i) == to)
      term->setSuccessor(i, mid);
  for (PHINode &phi : to->phis()) {
    bool kept = false;
    for (int i = static_cast<int>(phi.getNumIncomingValues()) - 1; i >= 0; --i) {
      if (phi.getIncomingBlock(i) != from)
        continue;
      if (kept) {
        phi.removeIncomingValue(i, false); // the same value: one edge now
      } else {
        phi.setIncomingBlock(i, mid);
        kept = true;
      }
    }
  }
}

} // namespace

PreservedAnalyses StopPointsPass::run(Function &F, FunctionAnalysisManager &) {
  if (F.isDeclaration())
    return PreservedAnalyses::all();
  SmallVector<std::pair<BasicBlock *, BasicBlock *>, 8> edges;
  for (auto [from, to] : retreatingEdges(F)) {
    Instruction *term = from->getTerminator();
    if ((isa<BranchInst>(term) || isa<SwitchInst>(term)) && !to->isEHPad())
      edges.push_back({from, to});
  }
  if (edges.empty())
    return PreservedAnalyses::all();
  LLVMContext &C = F.getContext();
  Type *i32 = Type::getInt32Ty(C);
  FunctionCallee poll = F.getParent()->getOrInsertFunction(kPollName, FunctionType::get(Type::getVoidTy(C), false));
  if (auto *decl = dyn_cast<Function>(poll.getCallee())) {
    decl->setDoesNotThrow(); // it leaves by longjmp, which is not unwinding
    decl->addFnAttr(Attribute::Cold);
  }
  IRBuilder<> entry(&*F.getEntryBlock().getFirstInsertionPt());
  AllocaInst *count = entry.CreateAlloca(i32, nullptr, "ol.stop.count");
  entry.CreateStore(ConstantInt::get(i32, 0), count);
  MDNode *rarely = MDBuilder(C).createBranchWeights(1, kPollInterval - 1);
  for (auto [from, to] : edges) {
    BasicBlock *mid = BasicBlock::Create(C, "ol.stop", &F, to);
    BasicBlock *call = BasicBlock::Create(C, "ol.stop.poll", &F, to);
    redirect(from, to, mid);
    IRBuilder<> b(mid);
    b.SetCurrentDebugLocation(from->getTerminator()->getDebugLoc()); // the loop's own line, for debuggers
    Value *n = b.CreateAdd(b.CreateLoad(i32, count), ConstantInt::get(i32, 1));
    b.CreateStore(n, count);
    Value *due = b.CreateICmpEQ(b.CreateAnd(n, ConstantInt::get(i32, kPollInterval - 1)), ConstantInt::get(i32, 0));
    b.CreateCondBr(due, call, to, rarely);
    IRBuilder<> p(call);
    p.SetCurrentDebugLocation(from->getTerminator()->getDebugLoc());
    p.CreateCall(poll);
    p.CreateBr(to);
    for (PHINode &phi : to->phis())
      phi.addIncoming(phi.getIncomingValueForBlock(mid), call);
  }
  DominatorTree DT(F);
  PromoteMemToReg({count}, DT);
  return PreservedAnalyses::none();
}

} // namespace ol_rs
