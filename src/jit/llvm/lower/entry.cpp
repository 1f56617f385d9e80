// The C entry points of the CPU lowering: ol_rs_jit_lower (the kernels of a module lowered to
// work-group functions, each reported to Rust) and the clean-up's thin primitives (src/jit/llvm/cleanup.rs).
#include "lowering.h"

using namespace ol_rs::lower;


// OlRsLowerOptions, OlRsParam and OlRsKernelInfo: src/jit/llvm/abi.rs (abi.h, through lowering.h).

// Lowers module MR in place (see the header comment). On success calls on_kernel(cx, info) once per
// work-group function and returns 0; otherwise returns 1 with a malloc'ed message in *err_out.
extern "C" int ol_rs_jit_lower(LLVMModuleRef MR, const char *cpu, const char *features,
                               const OlRsLowerOptions *opts,
                               void (*on_kernel)(void *cx, const OlRsKernelInfo *info), void *cx,
                               char **err_out) {
  *err_out = nullptr;
  Module *M = unwrap(MR);
  Lowering L(*M, cpu ? cpu : "", features ? features : "");
  if (opts) {
    L.warp = opts->warp_size;
    L.classify = opts->classify_intrinsic;
    L.transforms = opts->transforms;
  }
  if (opts && opts->spec_kernel) {
    L.specKernel = opts->spec_kernel;
    for (int d = 0; d < 3; ++d)
      L.specGs[d] = opts->spec_group_size[d];
  }
  bool ok = L.run();
  if (!ok) {
    *err_out = ol_rs::dup_for_rust(L.err.empty() ? std::string("unknown lowering failure") : L.err);
    return 1;
  }
  for (const auto &ki : L.lowered) {
    std::vector<OlRsParam> params;
    for (const auto &p : ki.params)
      params.push_back({p.first, p.second});
    OlRsKernelInfo info = {ki.name.c_str(), ki.wgName.c_str(), params.data(), params.size(), ki.staticLocal,
                           ki.scratchPerWi, L.warp, ki.barriers, ki.specialisable, ki.stats.data(),
                           (uint32_t)ki.stats.size()};
    on_kernel(cx, &info);
  }
  return 0;
}

extern "C" void ol_rs_jit_free(char *p) { std::free(p); }

// Thin primitives for src/jit/llvm/cleanup.rs, where LLVM's C API has no equivalent.
// Constant users of global value V (a function or variable) that nothing uses are destroyed.
extern "C" void ol_rs_jit_remove_dead_constant_users(LLVMValueRef V) {
  cast<GlobalValue>(unwrap(V))->removeDeadConstantUsers();
}
// The module's named metadata NAME, if it has one, is erased.
extern "C" void ol_rs_jit_erase_named_metadata(LLVMModuleRef MR, const char *name) {
  Module *M = unwrap(MR);
  if (NamedMDNode *N = M->getNamedMetadata(name))
    M->eraseNamedMetadata(N);
}

// Ends the block of instruction I right after it (devicelib.rs: a trap's work-item exits): what follows
// I in its block becomes `unreachable` (llvm::changeToUnreachable, successors' PHIs updated). Returns the
// `unreachable`.
extern "C" LLVMValueRef ol_rs_jit_unreachable_after(LLVMValueRef IR) {
  Instruction *I = unwrap<Instruction>(IR);
  Instruction *N = I->getNextNode();
  if (!N)
    return nullptr;
  changeToUnreachable(N);
  return wrap(I->getNextNode());
}
