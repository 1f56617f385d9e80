// The JIT's optimisation pipeline driver: LLVM-C's LLVMRunPasses cannot see passes of ours, so
// ol_rs_jit_run_passes builds the PassBuilder itself (as LLVMRunPasses does, the same tuning options and
// analyses, as rustc's PassWrapper.cpp builds its own), registers our pass names for pipeline strings and
// hooks the LLVM-bug workarounds into LLVM's default pipelines. The policy (which pipeline, which
// workarounds) is Rust's: src/jit/llvm/pipeline.rs.
//
// Our passes (names usable in a pipeline string, e.g. `function(ol-hoist-invariant-divisions)`):
//   ol-hoist-invariant-divisions   src/jit/llvm/workarounds/hoist_invariant_divisions.cpp (LLVM 22.1 LoopVectorize
//                                  miscompile of predicated loop-invariant divisions); with
//                                  OL_RS_HOOK_VECTORISER_WORKAROUNDS also at VectorizerStart of `default<On>`.
//   ol-opaque-wrapping-masks       src/jit/llvm/workarounds/opaque_wrapping_masks.cpp (LLVM 22.1 LoopVectorize
//                                  miscompile of masked induction variables that wrap); hooked in with
//                                  the same flag, after ol-hoist-invariant-divisions.
//   ol-realign-lane-reads          src/jit/llvm/realign_lane_reads.cpp (warp exchange reads at a lane distance as the
//                                  two vector loads the exchange's stores match); hooked at VectorizerEnd with the
//                                  same flag, followed by ExposeWarpAreasPass (the same file: ol-warp-local-exchanges'
//                                  areas, hidden from SROA until then) and SROA.
//   ol-prefetch-streams            src/jit/llvm/prefetch_streams.cpp (software prefetches for the load streams of
//                                  a kernel's short inner loops); hooked at VectorizerEnd with
//                                  OL_RS_HOOK_PREFETCH_STREAMS.
//   ol-nested-selects              src/jit/llvm/nested_selects.cpp (a select of a select keeping the same value in
//                                  both, one select: the vectoriser's nested predication); hooked at
//                                  VectorizerEnd with OL_RS_HOOK_NESTED_SELECTS.
//   ol-prefetch-next-group         src/jit/llvm/prefetch_next_group.cpp (software prefetches for what the next
//                                  work-group of a 2-D tile kernel reads and writes); hooked at VectorizerEnd
//                                  with OL_RS_HOOK_PREFETCH_NEXT_GROUP.
//   ol-group-order                 src/jit/llvm/group_order.cpp (a 2-D tile kernel whose next group along x is
//                                  rows away runs its groups y fastest: a mark for the CPU plugin); hooked at
//                                  VectorizerEnd, before ol-prefetch-next-group, with OL_RS_HOOK_GROUP_ORDER.
//   ol-stop-points                 src/jit/llvm/stop_points.cpp (OFFLOAD_RS_KERNEL_TIMEOUT: loops check now and
//                                  then whether they must stop; run after the optimisation pipeline).
//   ol-lower<options>              src/jit/llvm/lower/pass.cpp (a module pass: the CPU lowering as the JIT runs
//                                  it, for the IR tests of its transforms; the JIT itself calls ol_rs_jit_lower).
#include "llvm-c/Core.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm-c/TargetMachine.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Scalar/SROA.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "group_order.h"
#include "implied_selects.h"
#include "realign_lane_reads.h"
#include "lower/pass.h"
#include "nested_selects.h"
#include "prefetch_next_group.h"
#include "prefetch_streams.h"
#include "shim.h"
#include "stop_points.h"
#include "workarounds/workarounds.h"

using namespace llvm;

// OlRsVecFn (a vector variant of a scalar function the vectoriser may call) and the flags of
// ol_rs_jit_run_passes (OL_RS_HOOK_VECTORISER_WORKAROUNDS, OL_RS_HOOK_PREFETCH_STREAMS,
// OL_RS_HOOK_PREFETCH_NEXT_GROUP, OL_RS_HOOK_NESTED_SELECTS): src/jit/llvm/abi.rs.
#include "abi.h"

namespace {
// Each pass's and analysis's own time (its children's subtracted), by name: OFFLOAD_RS_JIT_TIME's
// per-pass figures. Runs on the compiling thread only.
struct PassTimes {
  using Clock = std::chrono::steady_clock;
  struct Open {
    std::string name;
    Clock::time_point start;
    double children = 0;
  };
  std::vector<Open> open;
  std::map<std::string, std::pair<double, unsigned>> self; // ms, runs
  void begin(StringRef name) { open.push_back({name.str(), Clock::now()}); }
  void end() {
    if (open.empty())
      return;
    Open o = std::move(open.back());
    open.pop_back();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - o.start).count();
    auto &e = self[o.name];
    e.first += ms - o.children;
    e.second += 1;
    if (!open.empty())
      open.back().children += ms;
  }
  void registerCallbacks(PassInstrumentationCallbacks &PIC) {
    PIC.registerBeforeNonSkippedPassCallback([this](StringRef name, Any) { begin(name); });
    PIC.registerAfterPassCallback([this](StringRef, Any, const PreservedAnalyses &) { end(); });
    PIC.registerAfterPassInvalidatedCallback([this](StringRef, const PreservedAnalyses &) { end(); });
    PIC.registerBeforeAnalysisCallback([this](StringRef name, Any) { begin(name); });
    PIC.registerAfterAnalysisCallback([this](StringRef, Any) { end(); });
  }
  // "name ms runs" lines, the most expensive first, those under 1% of the total folded into one
  std::string report() const {
    std::vector<std::pair<double, std::string>> v;
    double total = 0;
    for (auto &[n, e] : self) {
      v.push_back({e.first, n + " " + std::to_string(e.second)});
      total += e.first;
    }
    std::sort(v.begin(), v.end(), [](auto &a, auto &b) { return a.first > b.first; });
    std::string out;
    double rest = 0;
    for (auto &[ms, n] : v) {
      if (ms < total / 100) {
        rest += ms;
        continue;
      }
      char buf[32];
      snprintf(buf, sizeof buf, "%.2f ", ms);
      out += buf + n + "\n";
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f (each under 1%%) -\n", rest);
    return out + buf;
  }
};
} // namespace

// Our function passes by pipeline name: the JIT's pipelines (ol_rs_jit_run_passes) and `opt`'s (the plugin
// below) know the same ones.
static bool parseOurFunctionPass(StringRef name, FunctionPassManager &FPM, ArrayRef<PassBuilder::PipelineElement>) {
  if (name == "ol-hoist-invariant-divisions") {
    FPM.addPass(ol_rs::HoistInvariantDivisionsPass());
    return true;
  }
  if (name == "ol-opaque-wrapping-masks") {
    FPM.addPass(ol_rs::OpaqueWrappingMasksPass());
    return true;
  }
  if (name == "ol-implied-selects") {
    FPM.addPass(ol_rs::ImpliedSelectsPass());
    return true;
  }
  if (name == "ol-realign-lane-reads") {
    FPM.addPass(ol_rs::RealignLaneReadsPass());
    return true;
  }
  if (name == "ol-prefetch-streams") {
    FPM.addPass(ol_rs::PrefetchStreamsPass());
    return true;
  }
  if (name == "ol-nested-selects") {
    FPM.addPass(ol_rs::NestedSelectsPass());
    return true;
  }
  if (name == "ol-group-order") {
    FPM.addPass(ol_rs::GroupOrderPass());
    return true;
  }
  if (name == "ol-prefetch-next-group") {
    FPM.addPass(ol_rs::PrefetchNextGroupPass());
    return true;
  }
  if (name == "ol-stop-points") {
    FPM.addPass(ol_rs::StopPointsPass());
    return true;
  }
  return false;
}

// The in-process LLVM module (offload-rs/liboffload-rs-llvm.so) is also a pass plugin: `opt-22
// -load-pass-plugin=.../liboffload-rs-llvm.so -passes='function(ol-stop-points)'` runs our passes alone, as
// the IR tests do (tests/ir/, scripts/ir-tests.sh).
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "offload-rs", "1", [](PassBuilder &PB) {
            PB.registerPipelineParsingCallback(parseOurFunctionPass);
            PB.registerPipelineParsingCallback(
                [](StringRef name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
                  return ol_rs::lower::parseLowerPass(name, MPM);
                });
          }};
}

// Runs `pipeline` (LLVM's textual pipeline syntax, our pass names included) on `m` for `tm`, the target
// library info knowing the `n_vec` vector functions at `vec`. Returns 0, or 1 with a malloc'ed message in
// *err_out (freed with ol_rs_jit_free). With `times_out`, *times_out gets (malloc'ed) each pass's and
// analysis's own time: lines `<ms> <name> <runs>`, the most expensive first.
extern "C" int ol_rs_jit_run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, const char *pipeline, uint32_t flags,
                                    const OlRsVecFn *vec, size_t n_vec, char **err_out, char **times_out) {
  *err_out = nullptr;
  Module *M = unwrap(m);
  TargetMachine *TM = reinterpret_cast<TargetMachine *>(tm);
  PassInstrumentationCallbacks PIC;
  PipelineTuningOptions PTO; // LLVMRunPasses' defaults
  PassBuilder PB(TM, PTO, std::nullopt, &PIC);
  PB.registerPipelineParsingCallback(parseOurFunctionPass);
  if (flags & OL_RS_HOOK_VECTORISER_WORKAROUNDS)
    PB.registerVectorizerStartEPCallback([](FunctionPassManager &FPM, OptimizationLevel) {
      FPM.addPass(ol_rs::HoistInvariantDivisionsPass());
      FPM.addPass(ol_rs::OpaqueWrappingMasksPass());
      FPM.addPass(ol_rs::ImpliedSelectsPass());
    });
  if (flags & (OL_RS_HOOK_VECTORISER_WORKAROUNDS | OL_RS_HOOK_PREFETCH_STREAMS | OL_RS_HOOK_PREFETCH_NEXT_GROUP |
               OL_RS_HOOK_NESTED_SELECTS | OL_RS_HOOK_GROUP_ORDER))
    PB.registerVectorizerEndEPCallback([flags](FunctionPassManager &FPM, OptimizationLevel) {
      if (flags & OL_RS_HOOK_VECTORISER_WORKAROUNDS) {
        FPM.addPass(ol_rs::RealignLaneReadsPass());
        // (the warp's exchange areas on the stack, ol-warp-local-exchanges: hidden from SROA until their
        // reads are realigned, each read then one store's bytes, which SROA takes)
        FPM.addPass(ol_rs::ExposeWarpAreasPass());
        FPM.addPass(SROAPass(SROAOptions::PreserveCFG));
      }
      if (flags & OL_RS_HOOK_PREFETCH_STREAMS)
        FPM.addPass(ol_rs::PrefetchStreamsPass());
      if (flags & OL_RS_HOOK_GROUP_ORDER)
        FPM.addPass(ol_rs::GroupOrderPass());
      if (flags & OL_RS_HOOK_PREFETCH_NEXT_GROUP)
        FPM.addPass(ol_rs::PrefetchNextGroupPass());
      if (flags & OL_RS_HOOK_NESTED_SELECTS)
        FPM.addPass(ol_rs::NestedSelectsPass());
    });
  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  // The target library info, with the vector functions (registered before the default analyses, which
  // would register the plain one). The descriptors point into the caller's strings, alive for the call.
  TargetLibraryInfoImpl TLII(TM->getTargetTriple());
  if (n_vec) {
    std::vector<VecDesc> fns;
    fns.reserve(n_vec);
    for (size_t i = 0; i < n_vec; ++i)
      fns.emplace_back(vec[i].scalar, vec[i].vector, ElementCount::getFixed(vec[i].lanes), false, vec[i].abi_prefix,
                       std::nullopt);
    TLII.addVectorizableFunctions(fns);
  }
  FAM.registerPass([&] { return TargetLibraryAnalysis(TLII); });
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PB.registerLoopAnalyses(LAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerModuleAnalyses(MAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  StandardInstrumentations SI(M->getContext(), false, false);
  SI.registerCallbacks(PIC, &MAM);
  PassTimes times;
  if (times_out)
    times.registerCallbacks(PIC);
  ModulePassManager MPM;
  if (Error e = PB.parsePassPipeline(MPM, pipeline)) {
    *err_out = ol_rs::dup_for_rust(toString(std::move(e)));
    return 1;
  }
  MPM.run(*M, MAM);
  if (times_out)
    *times_out = ol_rs::dup_for_rust(times.report());
  return 0;
}
