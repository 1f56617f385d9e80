// What LLVM's C API cannot say about a CPU target (the policy that uses it is in src/jit/llvm/target.rs): the
// names of every subtarget feature of a triple, whether a CPU name is one LLVM knows, and which features a
// (CPU, feature string) pair turns on, implied ones included. Read through MCSubtargetInfo, without a
// TargetMachine and without LLVM's "is not a recognized processor/feature" warnings on stderr: the CPU
// name is checked first, and the Rust side only passes features from the known list.
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <string>

#include "shim.h"

using namespace llvm;

// For `triple`: *known = every feature name, comma-separated; *cpu_valid = whether `cpu` is a processor
// LLVM knows; when it is, *enabled = every feature (cpu, features) turns on. Strings are malloc'ed (freed
// with ol_rs_jit_free), NULL when not written. Returns 0, or 1 with a message in *known when the target
// is not registered.
extern "C" int ol_rs_jit_cpu_info(const char *triple, const char *cpu, const char *features, int *cpu_valid,
                                  char **known, char **enabled) {
  *cpu_valid = 0;
  *known = nullptr;
  *enabled = nullptr;
  std::string err;
  Triple TT(triple);
  const Target *T = TargetRegistry::lookupTarget(TT, err);
  if (!T) {
    *known = ol_rs::dup_for_rust(err);
    return 1;
  }
  std::unique_ptr<MCSubtargetInfo> base(T->createMCSubtargetInfo(TT, "", ""));
  if (!base) {
    *known = ol_rs::dup_for_rust("no subtarget information for " + TT.str());
    return 1;
  }
  std::string names;
  for (const SubtargetFeatureKV &kv : base->getAllProcessorFeatures()) {
    if (!names.empty())
      names += ',';
    names += kv.Key;
  }
  *known = ol_rs::dup_for_rust(names);
  if (!base->isCPUStringValid(cpu))
    return 0;
  *cpu_valid = 1;
  std::unique_ptr<MCSubtargetInfo> sti(T->createMCSubtargetInfo(TT, cpu, features));
  std::string on;
  for (const SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->getFeatureBits().test(kv.Value)) {
      if (!on.empty())
        on += ',';
      on += kv.Key;
    }
  *enabled = ol_rs::dup_for_rust(on);
  return 0;
}
