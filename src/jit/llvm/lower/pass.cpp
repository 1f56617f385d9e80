// ol-lower: the CPU lowering (Lowering::run, exactly as ol_rs_jit_lower runs it for the JIT) as a module
// pass, so that `opt-22 -load-pass-plugin=offload-rs/liboffload-rs-llvm.so -passes='ol-lower<...>'` lowers
// IR alone: the IR tests of the lowering's transforms (tests/ir/lowering/, scripts/ir-tests.sh) run it on
// the IR the JIT hands the lowering (the Rust side's module-wide steps done: src/jit/llvm/compile.rs).
//
// Options, `;`-separated (`ol-lower<kernel=k;group=64x1x1;stats>`):
//   kernel=NAME      the launch-time specialisation of kernel NAME (without: the generic lowering of every kernel)
//   group=XxYxZ      its group size
//   warp=W           the warp width the kernels were built for (what src/jit/llvm/normalise.rs reads; default 32)
//   transforms=SPEC  which transforms run, OFFLOAD_RS_JIT_LOWERING's syntax with `:` between names
//                    (`transforms=-ol-run-guards:-ol-short-runs`; the pipeline parser splits at commas)
//   stats            print what each transform did per kernel on stderr, `ol-lower: <kernel>: <counts>` (the
//                    line OFFLOAD_RS_JIT_STATS prints)
// A lowering failure (a GPU intrinsic the CPU cannot emulate, ...) is an error of the context: opt fails.
#include "pass.h"

#include "lowering.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace llvm;

// src/jit/llvm/lowering.rs: the intrinsic table and the transform mask for a transforms spec; one kernel's
// counts as text.
extern "C" bool ol_rs_lowering_options(const uint8_t *spec, size_t len, OlRsLowerOptions *out, char *err,
                                       size_t cap);
extern "C" void ol_rs_lowering_stats_text(const uint32_t *counts, size_t n, char *buf, size_t cap);

namespace ol_rs::lower {
namespace {

struct LowerPass : PassInfoMixin<LowerPass> {
  std::string kernel, transforms;
  uint32_t group[3] = {1, 1, 1};
  uint32_t warp = 32;
  bool stats = false;

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    OlRsLowerOptions o{};
    char err[1024];
    if (!ol_rs_lowering_options(reinterpret_cast<const uint8_t *>(transforms.data()), transforms.size(), &o, err,
                                sizeof err)) {
      M.getContext().emitError(Twine("ol-lower: ") + err);
      return PreservedAnalyses::all();
    }
    Lowering L(M, "", "");
    L.warp = warp;
    L.classify = o.classify_intrinsic;
    L.transforms = o.transforms;
    if (!kernel.empty()) {
      L.specKernel = kernel;
      for (int d = 0; d < 3; ++d)
        L.specGs[d] = group[d];
    }
    if (!L.run()) {
      M.getContext().emitError("ol-lower: " + (L.err.empty() ? std::string("unknown lowering failure") : L.err));
      return PreservedAnalyses::none();
    }
    if (stats)
      for (const auto &ki : L.lowered) {
        char buf[2048];
        ol_rs_lowering_stats_text(ki.stats.data(), ki.stats.size(), buf, sizeof buf);
        errs() << "ol-lower: " << ki.name << ": " << buf << "\n";
      }
    return PreservedAnalyses::none();
  }
};

// "64x1x1" -> group; false when it is not three positive numbers
bool parseGroup(StringRef v, uint32_t group[3]) {
  SmallVector<StringRef, 3> dims;
  v.split(dims, 'x');
  if (dims.size() != 3)
    return false;
  for (int d = 0; d < 3; ++d)
    if (dims[d].getAsInteger(10, group[d]) || group[d] == 0)
      return false;
  return true;
}

} // namespace

bool parseLowerPass(StringRef name, ModulePassManager &MPM) {
  if (name != "ol-lower" && !(name.starts_with("ol-lower<") && name.ends_with(">")))
    return false;
  LowerPass P;
  StringRef params = name.drop_front(strlen("ol-lower"));
  if (!params.empty())
    params = params.drop_front().drop_back();
  SmallVector<StringRef, 8> opts;
  params.split(opts, ';', -1, /*KeepEmpty=*/false);
  for (StringRef opt : opts) {
    auto [key, value] = opt.split('=');
    if (key == "kernel")
      P.kernel = value.str();
    else if (key == "group") {
      if (!parseGroup(value, P.group))
        report_fatal_error(Twine("ol-lower: group=") + value + " is not XxYxZ", false);
    } else if (key == "warp") {
      if (value.getAsInteger(10, P.warp) || P.warp == 0)
        report_fatal_error(Twine("ol-lower: warp=") + value + " is not a positive number", false);
    } else if (key == "transforms") {
      P.transforms = value.str();
      for (char &c : P.transforms)
        if (c == ':')
          c = ',';
    } else if (key == "stats" && value.empty())
      P.stats = true;
    else
      report_fatal_error(Twine("ol-lower: unknown option '") + opt +
                         "' (kernel=NAME, group=XxYxZ, warp=W, transforms=SPEC, stats)",
                         false);
  }
  MPM.addPass(std::move(P));
  return true;
}

} // namespace ol_rs::lower
