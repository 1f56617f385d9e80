// The C entry points of the CPU lowering: ol_rs_jit_lower (the kernels of a module lowered to
// work-group functions, each reported to Rust) and the clean-up's thin primitives (src/jit/llvm/cleanup.rs).
#include "lowering.h"

using namespace ol_rs::lower;



// Must match `LowerOptions` in src/jit/compile.rs.
struct OlRsLowerOptions {
  const char *spec_kernel; // NULL: the generic lowering of every kernel
  uint32_t spec_group_size[3];
  uint32_t warp_size; // the warp width the kernels were built for
  OlRsClassifyFn classify_intrinsic; // the GPU intrinsic table (src/jit/llvm/intrinsics.rs)
  uint64_t transforms;               // bit i: Transform i runs (src/jit/llvm/lowering.rs)
};
static_assert(sizeof(OlRsLowerOptions) == 40 && offsetof(OlRsLowerOptions, spec_group_size) == 8 &&
                  offsetof(OlRsLowerOptions, warp_size) == 20 && offsetof(OlRsLowerOptions, classify_intrinsic) == 24 &&
                  offsetof(OlRsLowerOptions, transforms) == 32,
              "OlRsLowerOptions must match LowerOptions in src/jit/compile.rs");

// One kernel parameter's size and alignment, and one kernel's metadata: must match `ParamAbi` and
// `KernelInfo` in src/jit/compile.rs. The pointers are valid only during the callback.
struct OlRsParam {
  uint64_t size, align;
};
struct OlRsKernelInfo {
  const char *name;   // the kernel's name
  const char *symbol; // its work-group function
  const OlRsParam *params;
  uint64_t num_params;
  uint64_t static_local_bytes;
  uint64_t scratch_bytes_per_wi;
  uint32_t warp_size;
  bool has_barriers;
  bool specialisable; // uses no mutable global variable
  const uint32_t *stats; // what each transform did (Transform order)
  uint32_t num_stats;
};
static_assert(sizeof(OlRsParam) == 16, "OlRsParam must match ParamAbi in src/jit/compile.rs");
static_assert(sizeof(OlRsKernelInfo) == 72 && offsetof(OlRsKernelInfo, symbol) == 8 &&
                  offsetof(OlRsKernelInfo, params) == 16 && offsetof(OlRsKernelInfo, num_params) == 24 &&
                  offsetof(OlRsKernelInfo, static_local_bytes) == 32 &&
                  offsetof(OlRsKernelInfo, scratch_bytes_per_wi) == 40 &&
                  offsetof(OlRsKernelInfo, warp_size) == 48 && offsetof(OlRsKernelInfo, has_barriers) == 52 &&
                  offsetof(OlRsKernelInfo, specialisable) == 53 && offsetof(OlRsKernelInfo, stats) == 56 &&
                  offsetof(OlRsKernelInfo, num_stats) == 64,
              "OlRsKernelInfo must match KernelInfo in src/jit/compile.rs");

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
