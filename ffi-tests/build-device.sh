#!/usr/bin/env bash
# Compile ffi-tests/device/*.c and the classic-kernel suite (bench/kernels/suite.c) to LLVM bitcode for
# nvptx64 and amdgcn with clang-22, into build/ffi-tests/device/<name>.<target>.bc (what the C tests load).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/ffi-tests/device
mkdir -p "$out"
for src in ffi-tests/device/*.c bench/kernels/suite.c; do
  name=$(basename "$src" .c)
  clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
    -c "$src" -o "$out/$name.nvptx64.bc"
  clang-22 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -ffreestanding -flto -O2 \
    -c "$src" -o "$out/$name.amdgcn.bc"
done
# host-triple device code (x86-64 bitcode: work-group functions as written)
clang-22 --target=x86_64-unknown-linux-gnu -ffreestanding -flto -O2 -c ffi-tests/device/debug_host.c \
  -o "$out/debug_host.x86_64.bc"
# with DWARF, for test_debug's gdb session (nvptx64: clang gives optimised nvptx64 code line tables only
# unless the debug-info kind is asked for; amdgcn's DWARF locates variables in GPU address spaces)
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 -g \
  -Xclang -debug-info-kind=constructor -c ffi-tests/device/debug.c -o "$out/debug_g.nvptx64.bc"
# CUDA's own device-library forms (vprintf, __assertfail): nvptx64 only
for src in ffi-tests/device/*.cu; do
  name=$(basename "$src" .cu)
  clang-22 -x cuda --cuda-device-only --cuda-gpu-arch=sm_90 -Xclang -target-feature -Xclang +ptx80 -nocudainc \
    -nocudalib -emit-llvm -O2 -c "$src" -o "$out/$name.nvptx64.bc"
done
echo "device code in $out"
