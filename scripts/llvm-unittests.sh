#!/usr/bin/env bash
# LLVM 22's own conformance suite, offload/unittests/OffloadAPI (gtest), against our library: built
# against LLVM's header with the system gtest, linked with build/lib/libLLVMOffload.so.22.1, run on our
# CPU device and, when build/fake-cuda exists, on the CUDA device of the fake driver. Not in CI: it
# needs LLVM's sources, which stay outside the repository (nothing of LLVM's is committed here).
#
#   make lib && make -C ffi-tests fake-cuda
#   bash scripts/llvm-unittests.sh /path/to/llvm-project     # or LLVM_SRC=/path/to/llvm-project
#   bash scripts/llvm-unittests.sh 22 | 23                   # fetch 22.1.8's / 23.1.1's source first
#                                                            # (scripts/fetch-llvm-source.sh, cached)
#
# The release is read from the tests (23.1 has memory/olMemAllocAligned.cpp). For 23.1 the tests compile
# against include/offload-23/OffloadAPI.h (and an OffloadPrint.hpp generated into the build directory
# with offload-tblgen -gen-print-header from 23.1.1's .td files; scripts/gen-header-23.sh builds the tool)
# and link our build/lib23/libLLVMOffload.so.23.1 (there is no LLVM 23 library to link on Debian 12);
# the build directory is build/llvm-unittests-23. Its platform group also builds
# platform/olRegisterRPCCallback.cpp, which 23.1.1 ships but does not build (3 tests).
#
# The groups and their files come from the tests' CMakeLists.txt (add_offload_unittest), the kernels
# from device_code/CMakeLists.txt (add_offload_test_device_code), compiled to nvptx64 bitcode as
# ffi-tests/Makefile does. One local change, written and applied here to a copy of the tests: for
# backend 0x100 (our CPU platform) Environment.cpp loads <name>.nvptx64.bc (upstream only knows GPU
# binaries). The fake CUDA device gets the same bitcode as <name>.nvptx64.bin (our CUDA plugin takes
# NVPTX bitcode). The binaries link LLVM's libLLVMOffload and run with ours first on LD_LIBRARY_PATH
# (the line '== <device>: <path>' says which library they load), so a build serves any checkout.
# Rebuilds are incremental (a generated Makefile in the build directory).
#
# Env: LLVM_UNITTESTS_BUILD (build dir, default build/llvm-unittests), LLVM_UNITTESTS_DEVICES (default
# "cpu cuda"; cuda is skipped without build/fake-cuda; "llvm" runs the same binaries against LLVM's own
# library, which has no non-host device here), JOBS (parallel compiles, default nproc), GTEST_FILTER
# (gtest reads it). Exit status 1 when a test fails or a binary crashes or hangs; on the fake CUDA device
# a launch the fake answers CUDA_ERROR_NOT_SUPPORTED (a kernel it does not emulate) is listed, not failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${1:-${LLVM_SRC:-}}
case "$SRC" in
  22|23) SRC=$(bash "$ROOT/scripts/fetch-llvm-source.sh" "$SRC") || { echo "SKIP: LLVM's source could not be fetched"; exit 0; } ;;
esac
T=$SRC/offload/unittests/OffloadAPI
if [ -z "$SRC" ] || [ ! -f "$T/common/Environment.cpp" ] || [ ! -f "$T/CMakeLists.txt" ]; then
  echo "usage: $0 LLVM_SRC (a checkout of llvm-project 22.x holding offload/unittests/OffloadAPI)" >&2
  exit 2
fi
LLVM=${LLVM_DIR:-/usr/lib/llvm-22}
if [ -f "$T/memory/olMemAllocAligned.cpp" ]; then ABI=23; else ABI=22; fi
if [ $ABI = 23 ]; then
  B=${LLVM_UNITTESTS_BUILD:-$ROOT/build/llvm-unittests-23}
  LIB=$ROOT/build/lib23
  SONAME=libLLVMOffload.so.23.1
else
  B=${LLVM_UNITTESTS_BUILD:-$ROOT/build/llvm-unittests}
  LIB=$ROOT/build/lib
  SONAME=libLLVMOffload.so.22.1
fi
[ -f "$LIB/$SONAME" ] || { echo "no $LIB/$SONAME: run 'make lib' first" >&2; exit 2; }
[ -f /usr/include/gtest/gtest.h ] || { echo "gtest missing: apt-get install libgtest-dev" >&2; exit 2; }
mkdir -p "$B"
INC=$B/include
mkdir -p "$INC"
if [ $ABI = 23 ]; then
  # The header we ship, and OffloadPrint.hpp (the tests print results with it) from the same .td files.
  cp "$ROOT/include/offload-23/OffloadAPI.h" "$INC/OffloadAPI.h.new"
  cmp -s "$INC/OffloadAPI.h.new" "$INC/OffloadAPI.h" && rm "$INC/OffloadAPI.h.new" || mv "$INC/OffloadAPI.h.new" "$INC/OffloadAPI.h"
  if [ ! -f "$INC/OffloadPrint.hpp" ]; then
    TOOL=$ROOT/build/offload-tblgen/offload-tblgen
    [ -x "$TOOL" ] || bash "$ROOT/scripts/gen-header-23.sh" --check >/dev/null
    API=$SRC/offload/liboffload/API
    "$TOOL" -gen-print-header -I "$API" "$API/OffloadAPI.td" -o "$INC/OffloadPrint.hpp"
  fi
fi

# A copy of the tests with the local change; unchanged files keep their mtimes, so make rebuilds only what changed.
mkdir -p "$B/src"
rm -rf "$B/src.new"
cp -a "$T/." "$B/src.new"
cat > "$B/environment.patch" <<'EOF'
--- a/common/Environment.cpp
+++ b/common/Environment.cpp
@@ -1,3 +1,6 @@
   std::string FileExtension;
-  if (Backend == OL_PLATFORM_BACKEND_AMDGPU) {
+  if (static_cast<uint32_t>(Backend) == 0x100) {
+    // offload-rs's CPU device runs nvptx64 bitcode (local change, not upstream).
+    FileExtension = ".nvptx64.bc";
+  } else if (Backend == OL_PLATFORM_BACKEND_AMDGPU) {
     FileExtension = ".amdgpu.bin";
EOF
# The hunk's line numbers are placeholders: patch finds the context wherever it is.
patch --quiet -p1 -d "$B/src.new" < "$B/environment.patch"
(cd "$B/src.new" && find . -type f) | while read -r f; do
  cmp -s "$B/src.new/$f" "$B/src/$f" || { mkdir -p "$(dirname "$B/src/$f")"; cp "$B/src.new/$f" "$B/src/$f"; }
done
(cd "$B/src" && find . -type f) | while read -r f; do [ -e "$B/src.new/$f" ] || rm -f "$B/src/$f"; done
rm -rf "$B/src.new"

# The Makefile: one gtest binary per add_offload_unittest group, the kernels from device_code.
python3 - "$B" "$LLVM" "${CLANG:-$LLVM/bin/clang}" "$SRC/offload/unittests" "$LIB" <<'EOF'
import re, sys
b, llvm, clang, unittests, ourlib = sys.argv[1:]
src = f"{b}/src"
cm = open(f"{src}/CMakeLists.txt").read()
groups = re.findall(r'add_offload_unittest\("(\w+)"\s+([^)]*)\)', cm)
# 23.1.1 ships platform/olRegisterRPCCallback.cpp (3 tests) but its CMakeLists does not build it: we do.
import os
extra = "platform/olRegisterRPCCallback.cpp"
if os.path.exists(f"{src}/{extra}") and extra not in cm:
    groups = [(n, f + " " + extra if n == "platform" else f) for n, f in groups]
nowrap = set(re.findall(r'target_compile_definitions\("(\w+)\.unittests"[^)]*DISABLE_WRAPPER', cm))
dc = open(f"{src}/device_code/CMakeLists.txt").read()
kernels = re.findall(r'add_offload_test_device_code\((\S+)\s+(\w+)([^)]*)\)', dc)
cxx = f"{llvm}/bin/clang++"
inc = f"{b}/include"
abi = "23" if __import__("os").path.exists(f"{src}/memory/olMemAllocAligned.cpp") else "22"
cxxflags = (f"-std=c++17 -O1 -g -I{inc} -I{llvm}/include -I{llvm}/include/offload -I{src}/common "
            f"-D_GNU_SOURCE -D__STDC_CONSTANT_MACROS -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS "
            f"-DDEVICE_CODE_PATH='\"{b}/device_code\"'")
# Linked against LLVM's own libLLVMOffload.so.22.1 (same soname and symbols); ours is put first on
# LD_LIBRARY_PATH when they run, as a drop-in is used, so the build does not depend on the checkout.
ldflags = (f"-L{llvm}/lib -Wl,-rpath,{llvm}/lib -lLLVMOffload -lLLVM-22 "
           "-lgtest_main -lgtest -lpthread")
if abi == "23":
    # no LLVM 23 library here: link ours (its soname libLLVMOffload.so.23.1)
    ldflags = (f"{ourlib}/libLLVMOffload.so.23.1 -L{llvm}/lib -Wl,-rpath,{llvm}/lib -lLLVM-22 "
               "-lgtest_main -lgtest -lpthread")
bc = (f"-I{unittests} --target=nvptx64-nvidia-cuda -march=sm_70 -Xclang -target-feature -Xclang +ptx70 -nogpulib "
      "-ffreestanding -O2 -emit-llvm -c")
out, bins, bcs = [], [], []
for name, files in groups:
    objs = []
    for f in files.split():
        o = f"obj/{name}/{f.replace('/', '_')}.o"
        objs.append(o)
        out.append(f"{o}: src/{f} $(HDRS)\n\tmkdir -p obj/{name} && {cxx} {cxxflags} -c $< -o $@")
    env = f"obj/{name}/Environment.o"
    define = " -DDISABLE_WRAPPER" if name in nowrap else ""
    out.append(f"{env}: src/common/Environment.cpp $(HDRS)\n\tmkdir -p obj/{name} && {cxx} {cxxflags}{define} -c $< -o $@")
    objs.append(env)
    out.append(f"bin/{name}.unittests: {' '.join(objs)}\n\tmkdir -p bin && {cxx} $^ -o $@ {ldflags}")
    bins.append(f"bin/{name}.unittests")
for f, name, flags in kernels:
    k = f"device_code/{name}.nvptx64.bc"
    out.append(f"{k}: src/device_code/{f} Makefile\n\tmkdir -p device_code && {clang} {bc} {flags.strip()} $< -o $@"
               f" && cp $@ device_code/{name}.nvptx64.bin")
    bcs.append(k)
hdrs = "$(wildcard src/common/*.hpp src/*/*.hpp)"
# Rewritten only when it changes; every rule depends on it, so new flags rebuild everything.
text = f"HDRS := {hdrs} Makefile\nall: {' '.join(bins + bcs)}\n" + "\n".join(out) + "\n"
try:
    old = open(f"{b}/Makefile").read()
except FileNotFoundError:
    old = None
if text != old:
    with open(f"{b}/Makefile", "w") as m:
        m.write(text)
with open(f"{b}/binaries", "w") as m:
    m.write("\n".join(bins) + "\n")
EOF
make -s -C "$B" -j"${JOBS:-$(nproc)}"

# Run every binary on each device (a platform filter picks it), each in its own XML report.
fake=$ROOT/build/fake-cuda
status=0
for dev in ${LLVM_UNITTESTS_DEVICES:-cpu cuda}; do
  case $dev in
    cpu) platform=CPU env=(LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
    cuda)
      if [ ! -e "$fake/libcuda.so.1" ]; then echo "== cuda: skipped (no $fake/libcuda.so.1: make -C ffi-tests fake-cuda)"; continue; fi
      platform=CUDA env=(LD_LIBRARY_PATH="$fake:$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUDA_QUIET=1) ;;
    llvm) platform='' env=(LD_LIBRARY_PATH="$LLVM/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
    *) echo "unknown device '$dev' (cpu, cuda or llvm)" >&2; exit 2 ;;
  esac
  rm -rf "$B/results/$dev" && mkdir -p "$B/results/$dev"
  lib=$(env ${env[@]+"${env[@]}"} ldd "$B/$(head -1 "$B/binaries")" | awk -v so="$SONAME" '$1 == so { print $3 }')
  echo "== $dev: $lib"
  while read -r bin; do
    name=$(basename "$bin" .unittests)
    rc=0
    env ${env[@]+"${env[@]}"} ${platform:+OFFLOAD_UNITTEST_PLATFORM=$platform} timeout 300 "$B/$bin" \
      --gtest_output="xml:$B/results/$dev/$name.xml" >"$B/results/$dev/$name.log" 2>&1 || rc=$?
    # gtest exits 1 for failed tests (listed from the XML below); anything else is a crash or a hang.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
      echo "== $dev $name: exit status $rc (crash or timeout), see $B/results/$dev/$name.log"
      status=1
    fi
  done < "$B/binaries"
  python3 - "$B/results/$dev" "$dev" <<'EOF' || status=1
import glob, sys, xml.etree.ElementTree as ET
d, dev = sys.argv[1:]
run = fail = skip = fake = 0
failures = []
for x in sorted(glob.glob(f"{d}/*.xml")):
    for tc in ET.parse(x).getroot().iter("testcase"):
        if tc.get("result") == "skipped" or tc.find("skipped") is not None:
            skip += 1
            continue
        run += 1
        fs = tc.findall("failure")
        if fs:
            msg = " | ".join((f.get("message") or "").replace("\n", " ") for f in fs)
            # The fake driver runs only the kernels of ffi-tests/device (see fake_cuda.c).
            if dev == "cuda" and "CUDA_ERROR_NOT_SUPPORTED" in msg:
                fake += 1
                failures.append(f"  FAIL (kernel the fake driver does not emulate) {tc.get('classname')}.{tc.get('name')}: {msg}")
            else:
                fail += 1
                failures.append(f"  FAIL {tc.get('classname')}.{tc.get('name')}: {msg}")
note = f", {fake} failed only because the fake driver does not emulate the kernel" if fake else ""
print(f"== {dev}: {run - fail - fake} of {run} passed ({skip} skipped{note})")
for f in failures:
    print(f)
sys.exit(1 if fail else 0)
EOF
done
exit $status
