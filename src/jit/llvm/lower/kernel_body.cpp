// The lowering of one kernel (lowerKernel: K cloned into K.body(params..., extras), every callee
// inlined, then the work-group function around it), the module walk (run), and the small helpers they share.
#include "lowering.h"

namespace ol_rs::lower {


bool Lowering::fail(const std::string &m) {
  if (err.empty())
    err = m;
  return false;
}


Function *Lowering::markerFn(StringRef name, Type *ret, ArrayRef<Type *> args) {
  FunctionCallee fc = M.getOrInsertFunction(name, FunctionType::get(ret, args, false));
  return cast<Function>(fc.getCallee());
}


bool Lowering::isGpuKernelCC(CallingConv::ID cc) {
  return cc == CallingConv::PTX_Kernel || cc == CallingConv::AMDGPU_KERNEL ||
         cc == CallingConv::SPIR_KERNEL;
}

OlRsIntrinsic Lowering::classifyName(StringRef n) const {
  return classify ? classify(n.data(), n.size()) : OlRsIntrinsic{INTRINSIC_OP_NOT_GPU, 0};
}


bool Lowering::inlineAll(Function *F) {
  unsigned rounds = 0;
  for (;;) {
    SmallVector<CallBase *, 16> calls;
    for (BasicBlock &BB : *F)
      for (Instruction &I : BB)
        if (auto *CB = dyn_cast<CallBase>(&I))
          if (Function *Callee = CB->getCalledFunction())
            if (!Callee->isDeclaration() && !Callee->isIntrinsic())
              calls.push_back(CB);
    if (calls.empty())
      return true;
    if (++rounds > 64 || F->getInstructionCount() > 2000000)
      return fail("kernel '" + F->getName().str() + "' has a call graph too deep to inline");
    for (CallBase *CB : calls) {
      if (isa<InvokeInst>(CB))
        return fail("exception handling (invoke) is not supported in kernels");
      Function *Callee = CB->getCalledFunction();
      InlineFunctionInfo IFI;
      InlineResult R = InlineFunction(*CB, IFI);
      if (!R.isSuccess())
        return fail("cannot inline '" + Callee->getName().str() + "' into kernel: " +
                    R.getFailureReason());
    }
  }
}


// Does F read or write a global variable that is not constant (device globals, not __gpu_local)?
bool Lowering::usesMutableGlobals(Function *F) {
  std::set<const Value *> seen;
  std::function<bool(const Value *)> walk = [&](const Value *V) -> bool {
    if (auto *G = dyn_cast<GlobalVariable>(V))
      return !G->isConstant() && G->getAddressSpace() != 3;
    auto *CE = dyn_cast<ConstantExpr>(V);
    if (!CE || !seen.insert(CE).second)
      return false;
    for (const Value *Op : CE->operands())
      if (walk(Op))
        return true;
    return false;
  };
  for (BasicBlock &BB : *F)
    for (Instruction &I : BB)
      for (Value *Op : I.operands())
        if (walk(Op))
          return true;
  return false;
}


bool Lowering::lowerKernel(Function *K, KInfo &ki) {
  pow2Vals.clear(); // values of the previous kernel, possibly erased
  stats = {};
  ki.name = K->getName().str();
  ki.wgName = "__ol_wg." + ki.name;
  FunctionType *FT = K->getFunctionType();
  if (!FT->getReturnType()->isVoidTy())
    return fail("kernel '" + ki.name + "' does not return void");
  if (FT->isVarArg())
    return fail("kernel '" + ki.name + "' is variadic");
  // params layout (host C ABI, natural alignment)
  for (unsigned i = 0; i < FT->getNumParams(); ++i) {
    Type *T = FT->getParamType(i);
    uint64_t sz, al;
    Type *BT = K->getParamByValType(i);
    if (!BT)
      BT = K->getParamByRefType(i);
    if (BT) {
      sz = DL.getTypeAllocSize(BT);
      al = DL.getABITypeAlign(BT).value();
      if (MaybeAlign pa = K->getParamAlign(i))
        al = std::max<uint64_t>(al, pa->value());
    } else {
      if (!T->isSized())
        return fail("kernel '" + ki.name + "' has an unsized parameter");
      sz = DL.getTypeAllocSize(T);
      al = DL.getABITypeAlign(T).value();
    }
    ki.params.push_back({sz, al});
  }
  // K.body
  std::vector<Type *> ps(FT->param_begin(), FT->param_end());
  for (int e = 0; e < E_COUNT; ++e)
    ps.push_back((e == E_LOCAL || e == E_DYN || e == E_IMPLARG || e == E_DISPATCH || e == E_SCRATCH) ? Ptr : I32);
  Function *NF = Function::Create(FunctionType::get(Void, ps, false), GlobalValue::InternalLinkage,
                                  ki.name + ".body", M);
  ValueToValueMapTy VM;
  for (unsigned i = 0; i < FT->getNumParams(); ++i)
    VM[K->getArg(i)] = NF->getArg(i);
  SmallVector<ReturnInst *, 8> rets;
  CloneFunctionInto(NF, K, VM, CloneFunctionChangeType::LocalChangesOnly, rets);
  NF->setCallingConv(CallingConv::C);
  NF->setLinkage(GlobalValue::InternalLinkage);
  NF->setVisibility(GlobalValue::DefaultVisibility);
  NF->removeFnAttr(Attribute::NoInline);
  NF->removeFnAttr(Attribute::OptimizeNone);
  NF->setMemoryEffects(MemoryEffects::unknown());
  NF->removeFnAttr(Attribute::NoSync);
  for (unsigned i = 0; i < FT->getNumParams(); ++i) {
    // amdgcn marks kernel args inreg / noalias etc.; keep byval (gives per-call copies), drop the rest
    // that would be wrong for a shared argument buffer.
    NF->removeParamAttr(i, Attribute::InReg);
  }
  if (!inlineAll(NF))
    return false;
  if (on(T_UNROLL_PRIVATE_LOOPS))
    stats[T_UNROLL_PRIVATE_LOOPS] += unrollPrivateLoops(NF);
  bool collective = false;
  if (on(T_MATCH_LOOPS))
    matchLoops(NF);
  if (!replaceIntrinsics(NF, collective))
    return false;
  if (!lowerLocals(NF, ki.staticLocal))
    return false;
  if (!specKernel.empty() && on(T_RUNTIME_DIVISORS))
    runtimeDivisors(NF);
  if (on(T_PLAIN_SHARED_ATOMICS))
    markSharedAtomics(NF);
  if (on(T_REROLL_LOOPS))
    stats[T_REROLL_LOOPS] += rerollLoops(NF, collective);
  if (collective && on(T_UNROLL_BARRIER_LOOPS))
    stats[T_UNROLL_BARRIER_LOOPS] += unrollBarrierLoops(NF);
  ki.barriers = collective;
  ki.specialisable = !usesMutableGlobals(NF);
  // ol-lockstep-loops: a barrier-free kernel's divergent loops get implicit barriers, and the barrier
  // path runs it chunk by chunk (in a specialisation whose rows are shorter, a chunk is a row)
  unsigned chunk = !collective && on(T_LOCKSTEP_LOOPS) && lockstepLoops(NF) ? kLockstepChunk : 0;
  if (chunk && !specKernel.empty() && specGs[0] < chunk)
    chunk = specGs[0];
  // ol-block-stride-loops in a barrier-free kernel: a grid-stride loop (`for (i = gid; i < n; i +=
  // grid size)`) runs a different number of times per work-item, so the work-item loop around the body
  // cannot vectorise. Made uniform, it gets implicit barriers (ol-implicit-loop-barriers) on the barrier
  // path: the work-item loop inside it, `for (b) for (t) if (b + t < n) body(b + t)`, contiguous vectors
  strideLoopsDone = !collective && !chunk && on(T_BLOCK_STRIDE_LOOPS) && on(T_UNIFORM_BARRIERS) &&
                    on(T_IMPLICIT_LOOP_BARRIERS) && blockStrideLoops(NF) > 0;
  // ol-full-groups: a copy of the body without the bounds guards, for the groups whose work-items all pass
  // them. Kept only where the copy lowers and `keep` holds; otherwise the copy, its check, its scratch,
  // the counts it fired and the error its lowering set are all rolled back, and the body runs alone
  Function *Full = nullptr, *FullCheck = nullptr;
  uint64_t fullScratch = 0;
  auto fullGroups = [&](const std::set<BasicBlock *> *into, function_ref<bool(Function *, const Stats &)> keep) {
    std::vector<BoundsGuard> guards;
    Stats statsBefore = stats;
    std::string errBefore = err;
    if (!(Full = fullGroupsBody(NF, guards, into)))
      return;
    FullCheck = fullGroupsCheck(NF, guards);
    if (keep(Full, statsBefore))
      return;
    err = errBefore;
    Full->eraseFromParent();
    FullCheck->eraseFromParent();
    Full = FullCheck = nullptr;
    fullScratch = 0;
    stats = statsBefore;
  };
  if (collective && !chunk && !specKernel.empty() && on(T_FULL_GROUPS))
    fullGroups(nullptr, [&](Function *F, const Stats &) { return buildCbs(F, fullScratch); });
  // ol-full-groups in a barrier-free specialisation: a loop whose trip count is the same for every
  // work-item but not a constant (a work-item per column, `for (r = 0; r < rows; r++) s += m[r * cols +
  // c]`) behind a bounds guard: the copy for full groups has no guard, so it takes the barrier path, where
  // ol-implicit-loop-barriers puts the work-item loop inside the loop (`for (r) for (t)`: contiguous
  // vectors across the columns); the last groups run the body as it was, on the plain path. Kept only where
  // the copy's loops did take the implicit barriers.
  if (!Full && !collective && !chunk && !strideLoopsDone && !specKernel.empty() && on(T_FULL_GROUPS) &&
      on(T_UNIFORM_BARRIERS) && on(T_IMPLICIT_LOOP_BARRIERS)) {
    // (the loops behind a guard: in the copy without it they are uniform, which its divergence says)
    std::set<BasicBlock *> loops;
    {
      DominatorTree DT(*NF);
      LoopInfo LI(DT);
      for (Loop *L : LI.getLoopsInPreorder())
        loops.insert(L->getHeader());
    }
    if (!loops.empty())
      fullGroups(&loops, [&](Function *F, const Stats &before) {
        return !uniformLoopHeaders(F).empty() && buildCbs(F, fullScratch) &&
               stats[T_IMPLICIT_LOOP_BARRIERS] != before[T_IMPLICIT_LOOP_BARRIERS];
      });
  }
  if (collective || chunk || strideLoopsDone) {
    if (!buildCbs(NF, ki.scratchPerWi, chunk))
      return false;
    ki.scratchPerWi = std::max(ki.scratchPerWi, fullScratch);
  } else {
    exitsToReturns(NF);
    NF->addFnAttr(Attribute::AlwaysInline);
    ki.scratchPerWi = fullScratch; // (the full groups' copy, where there is one)
  }
  // WG function
  Function *WG = Function::Create(FunctionType::get(Void, {Ptr}, false), GlobalValue::ExternalLinkage,
                                  ki.wgName, M);
  WG->setVisibility(GlobalValue::DefaultVisibility);
  WG->setCallingConv(CallingConv::C);
  if (!cpu.empty()) WG->addFnAttr("target-cpu", cpu);
  if (!features.empty()) WG->addFnAttr("target-features", features);
  WG->addFnAttr(Attribute::NoUnwind);
  Argument *ctx = WG->getArg(0);
  ctx->addAttr(Attribute::NoAlias);
  ctx->addAttr(Attribute::ReadOnly);
  BasicBlock *E = BasicBlock::Create(C, "entry", WG);
  IRBuilder<> B(E);
  auto ldp = [&](unsigned off) { return B.CreateLoad(Ptr, B.CreateConstGEP1_64(I8, ctx, off)); };
  auto ld32 = [&](unsigned off) { return B.CreateLoad(I32, B.CreateConstGEP1_64(I8, ctx, off)); };
  Value *args = ldp(CTX_ARGS);
  Value *local = ldp(CTX_LOCAL), *dyn = ldp(CTX_DYN), *scratch = ldp(CTX_SCRATCH);
  Value *gid[3], *ng[3], *gs[3], *gsr[3];
  for (int d = 0; d < 3; ++d) {
    gid[d] = ld32(CTX_GID + 4 * d);
    ng[d] = ld32(CTX_NG + 4 * d);
    gsr[d] = ld32(CTX_GS + 4 * d);
    gs[d] = specKernel.empty() ? gsr[d] : static_cast<Value *>(ConstantInt::get(I32, specGs[d]));
  }
  // amdgcn COV5 implicit args and HSA dispatch packet, per group.
  AllocaInst *impl = B.CreateAlloca(ArrayType::get(I8, 256), nullptr, "implicitargs");
  impl->setAlignment(Align(64));
  AllocaInst *disp = B.CreateAlloca(ArrayType::get(I8, 64), nullptr, "dispatch");
  disp->setAlignment(Align(64));
  B.CreateMemSet(impl, ConstantInt::get(I8, 0), 256, MaybeAlign(64));
  B.CreateMemSet(disp, ConstantInt::get(I8, 0), 64, MaybeAlign(64));
  for (int d = 0; d < 3; ++d) {
    B.CreateStore(ng[d], B.CreateConstGEP1_64(I8, impl, 4 * d));
    B.CreateStore(B.CreateTrunc(gs[d], I16), B.CreateConstGEP1_64(I8, impl, 12 + 2 * d));
    B.CreateStore(B.CreateTrunc(gs[d], I16), B.CreateConstGEP1_64(I8, disp, 4 + 2 * d));
    B.CreateStore(B.CreateMul(ng[d], gs[d]), B.CreateConstGEP1_64(I8, disp, 12 + 4 * d));
  }
  B.CreateStore(ConstantInt::get(I16, 3), B.CreateConstGEP1_64(I8, impl, 64)); // grid dims
  B.CreateStore(ConstantInt::get(I16, 3), B.CreateConstGEP1_64(I8, disp, 2));  // setup: dims
  std::vector<Value *> cargs;
  uint64_t off = 0;
  for (unsigned i = 0; i < FT->getNumParams(); ++i) {
    off = (off + ki.params[i].second - 1) / ki.params[i].second * ki.params[i].second;
    Value *p = B.CreateConstGEP1_64(I8, args, off);
    if (K->getParamByValType(i) || K->getParamByRefType(i))
      cargs.push_back(B.CreateAddrSpaceCast(p, FT->getParamType(i)));
    else
      cargs.push_back(B.CreateAlignedLoad(FT->getParamType(i), p, Align(1)));
    off += ki.params[i].first;
  }
  auto bodyArgs = [&](Value *x, Value *y, Value *z, Value *lwi) {
    std::vector<Value *> a = cargs;
    Value *ex[E_COUNT] = {x,     y,   z,    lwi,  gid[0],  gid[1], gid[2], ng[0],  ng[1],  ng[2], gs[0],
                          gs[1], gs[2], local, dyn, impl, disp, scratch, gsr[0], gsr[1], gsr[2]};
    a.insert(a.end(), ex, ex + E_COUNT);
    return a;
  };
  auto callBody = [&](Value *x, Value *y, Value *z, Value *lwi) {
    CallInst *CI = B.CreateCall(NF, bodyArgs(x, y, z, lwi));
    CI->setCallingConv(CallingConv::C);
  };
  // ol-full-groups: the groups whose work-items all pass the guards run the copy; the others go on from NE
  // (the body on the barrier path, the nest of work-item loops on the plain one)
  BasicBlock *NE = E;
  if (Full) {
    Value *z0 = ConstantInt::get(I32, 0);
    BasicBlock *FB = BasicBlock::Create(C, "full", WG), *PB = BasicBlock::Create(C, "partial", WG);
    B.CreateCondBr(B.CreateCall(FullCheck, bodyArgs(z0, z0, z0, z0)), FB, PB);
    B.SetInsertPoint(FB);
    B.CreateCall(Full, bodyArgs(z0, z0, z0, z0));
    B.CreateRetVoid();
    B.SetInsertPoint(PB);
    NE = PB;
  }
  if (collective || strideLoopsDone) {
    Value *z0 = ConstantInt::get(I32, 0);
    callBody(z0, z0, z0, z0);
    B.CreateRetVoid();
  } else {
    // for z, y, x (top-tested, like the region loops of buildCbs), around the inlined body; in chunk mode
    // (ol-lockstep-loops) x by chunks, the body (not inlined here) running the chunk from x
    BasicBlock *ex = BasicBlock::Create(C, "exit", WG);
    struct Nest {
      BasicBlock *hz, *hy, *P, *L;
      PHINode *x, *y, *z;
      ICmpInst *inX, *inY, *inZ;
      bool inlined;
    };
    auto buildNest = [&](BasicBlock *from) {
      Value *zero = ConstantInt::get(I32, 0), *one = ConstantInt::get(I32, 1);
      BasicBlock *hz = BasicBlock::Create(C, "z", WG, ex), *hy = BasicBlock::Create(C, "y", WG, ex),
                 *hx = BasicBlock::Create(C, "x", WG, ex), *P = BasicBlock::Create(C, "wi", WG, ex),
                 *L = BasicBlock::Create(C, "x.latch", WG, ex), *ly = BasicBlock::Create(C, "y.latch", WG, ex),
                 *lz = BasicBlock::Create(C, "z.latch", WG, ex);
      IRBuilder<> NB(hz);
      PHINode *z = NB.CreatePHI(I32, 2, "lz");
      z->addIncoming(zero, from);
      auto *inZ = cast<ICmpInst>(NB.CreateICmpULT(z, gs[2]));
      NB.CreateCondBr(inZ, hy, ex);
      NB.SetInsertPoint(hy);
      PHINode *y = NB.CreatePHI(I32, 2, "ly");
      y->addIncoming(zero, hz);
      Value *rowBase = NB.CreateMul(NB.CreateAdd(NB.CreateMul(z, gs[1]), y), gs[0]);
      auto *inY = cast<ICmpInst>(NB.CreateICmpULT(y, gs[1]));
      NB.CreateCondBr(inY, hx, lz);
      NB.SetInsertPoint(hx);
      PHINode *x = NB.CreatePHI(I32, 2, "lx");
      x->addIncoming(zero, hy);
      auto *inX = cast<ICmpInst>(NB.CreateICmpULT(x, gs[0]));
      NB.CreateCondBr(inX, P, ly);
      B.SetInsertPoint(P);
      callBody(x, y, z, B.CreateAdd(rowBase, x));
      auto *CB = cast<CallInst>(&P->back());
      B.CreateBr(L);
      NB.SetInsertPoint(L);
      x->addIncoming(NB.CreateAdd(x, chunk ? ConstantInt::get(I32, chunk) : one, "", true, true), L);
      BranchInst *back = NB.CreateBr(hx);
      NB.SetInsertPoint(ly);
      y->addIncoming(NB.CreateAdd(y, one, "", true, true), ly);
      NB.CreateBr(hy);
      NB.SetInsertPoint(lz);
      z->addIncoming(NB.CreateAdd(z, one, "", true, true), lz);
      NB.CreateBr(hz);
      if (chunk)
        return Nest{hz, hy, P, L, x, y, z, inX, inY, inZ, false};
      MDNode *AG = newAccessGroup();
      CB->setMetadata(LLVMContext::MD_access_group, AG); // propagated to the inlined body
      markParallelLoop(back, AG);
      // Inline the body now (O3 would) so that guards such as `if (i < n)` can narrow the x loop.
      InlineFunctionInfo IFI;
      bool inl = InlineFunction(*CB, IFI).isSuccess();
      // The body's private arrays are now allocas of the work-group function: one copy for every work-item
      // of the loop, not one each. An array SROA cannot put in registers (indexed at run time: `r[in[i] &
      // 15]`) leaves the loop's parallel accesses, so that the vectoriser does not take the work-items'
      // stores to it for independent; it did, and kept one lane's values for all (wrong results with
      // AVX2 code, the lanes of each vector but the last).
      if (inl && !IFI.StaticAllocas.empty()) {
        std::set<Value *> priv(IFI.StaticAllocas.begin(), IFI.StaticAllocas.end());
        auto isPrivate = [&](Value *P) { return P && priv.count(getUnderlyingObject(P, 0)); };
        for (BasicBlock &BB : *WG)
          for (Instruction &I : BB) {
            if (!I.hasMetadata(LLVMContext::MD_access_group))
              continue;
            bool own = isPrivate(getLoadStorePointerOperand(&I));
            if (auto *MI = dyn_cast<MemIntrinsic>(&I))
              own = isPrivate(MI->getDest()) || (isa<MemTransferInst>(MI) && isPrivate(cast<MemTransferInst>(MI)->getSource()));
            if (auto *RMW = dyn_cast<AtomicRMWInst>(&I))
              own = isPrivate(RMW->getPointerOperand());
            if (auto *CX = dyn_cast<AtomicCmpXchgInst>(&I))
              own = isPrivate(CX->getPointerOperand());
            if (own)
              I.setMetadata(LLVMContext::MD_access_group, nullptr);
          }
      }
      return Nest{hz, hy, P, L, x, y, z, inX, inY, inZ, inl};
    };
    BranchInst *toNest = B.CreateBr(ex); // retargeted below
    B.SetInsertPoint(ex);
    B.CreateRetVoid();
    Nest A = buildNest(NE);
    toNest->setSuccessor(0, A.hz);
    if (A.inlined) {
      // Bounds checks: the in-range part of the x loop runs without the check (no masked loads and
      // stores). Where `gid * n + tid` could wrap around, a second, unchanged nest runs instead.
      Value *assumed = ConstantInt::getTrue(C);
      BasicBlock *L = A.L;
      if (on(T_NARROW_GUARDS))
        narrowToGuards(
            A.P, [&](BasicBlock *Sc) { return Sc == L; }, {NE}, NE, {A.x, A.y, A.z}, {A.inX, A.inY, A.inZ},
            {gs[0], gs[1], gs[2]}, {A.hy, A.hz, NE}, &assumed);
      runLoops.clear(); // (versionShortRuns is for barrier regions)
      if (on(T_EQUALITY_SPLIT) || on(T_RANGE_SPLIT)) {
        splitAtEqualities(A.P, L, {NE}, NE, A.y, A.inY, A.hz);
        splitAtEqualities(A.P, L, {NE}, NE, A.x, A.inX, A.hy);
      }
      if (!isa<ConstantInt>(assumed)) {
        Nest Bn = buildNest(NE);
        toNest->eraseFromParent();
        IRBuilder<> EB(NE);
        EB.CreateCondBr(assumed, A.hz, Bn.hz);
      }
    }
  }
  // NF is called from WG without an access group on the barrier path; a body left un-inlined on
  // the plain path is inlined later under the work-item loop's group, so it keeps its atomics.
  if (!specKernel.empty() && on(T_KEEP_SHORT_ROWS))
    for (Function *Fn : {NF, Full, WG})
      if (Fn)
        keepShortRows(Fn, WG);
  if (collective || chunk || strideLoopsDone || NF->use_empty())
    plainSharedAtomics(NF);
  if (Full)
    plainSharedAtomics(Full);
  plainSharedAtomics(WG);
  attachDebugInfo(K, NF, WG);
  ki.stats = stats;
  return true;
}


// Bitcode built with -g: the kernel's subprogram (the body's copy of it) moves to its work-group
// function (the body loses it), and the work-group function's
// instructions without a location (the work-item loops, the call of the body) get the kernel's first
// line, so the kernel's code keeps its line table and variables and debuggers and profilers name the
// work-group function by the kernel.
void Lowering::attachDebugInfo(Function *K, Function *NF, Function *WG) {
  // (CloneFunctionInto gave the body a copy of the kernel's subprogram; the body's code is what WG
  // holds or will inline)
  DISubprogram *SP = NF->getSubprogram();
  if (!SP || WG->getSubprogram())
    return;
  (void)K;
  NF->setSubprogram(nullptr);
  WG->setSubprogram(SP);
  DILocation *L = DILocation::get(C, SP->getScopeLine(), 0, SP);
  for (BasicBlock &BB : *WG)
    for (Instruction &I : BB)
      if (!I.getDebugLoc())
        I.setDebugLoc(L);
}


// After the module-wide steps in Rust (src/jit/llvm/normalise.rs: normalisation, the kernel of a
// specialisation, constructors/destructors): every kernel lowered (the clean-up follows in Rust,
// src/jit/llvm/cleanup.rs).
bool Lowering::run() {
  std::vector<Function *> kernels;
  for (Function &F : M)
    if (!F.isDeclaration() && isGpuKernelCC(F.getCallingConv()))
      kernels.push_back(&F);
  std::vector<KInfo> infos;
  for (Function *K : kernels) {
    KInfo ki;
    if (!lowerKernel(K, ki))
      return false;
    infos.push_back(ki);
  }
  lowered = std::move(infos);
  return true;
}

} // namespace ol_rs::lower
