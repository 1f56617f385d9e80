#!/usr/bin/env bash
# Build the benchmarks into build/bench (run `make lib` first). Then:
#   build/bench/cpu_kernels          CPU device vs PoCL 3.1 vs memcpy (BENCHMARKS.md)
#   build/bench/suite                the classic-kernel suite: CPU device vs PoCL 3.1 vs hand-written loops
#   build/bench/jit_process          per-process program create, disk caches cold/warm vs PoCL; big client
#   build/bench/startup              a short process's start: olInit alone (ours, LLVM's), warm create vs PoCL
#   build/bench/cuda_launch          olLaunchKernel vs raw cuLaunchKernel (a GPU, or ffi-tests/fake_cuda)
#   build/bench/guards               guards on work-item ids (flat ids, equality splits) next to their peers
#   build/bench/vmath                Black-Scholes: vector math in kernels vs scalar-libm and libmvec hand loops, PoCL
#   build/bench/tiles                2-D tile kernels (transpose, ...) vs memcpy and hand-written transposes
#   build/bench/classes              kernel classes outside the suite (warp per row, match_any, guards) vs hand loops
#   build/bench/walk_order           a C model of grid-stride kernels' walk order: group by group vs groups merged
set -euo pipefail
cd "$(dirname "$0")/.."
# BENCH_OUT: another directory (default build/bench); BENCH_MARCH: the hand loops' -march (default native;
# x86-64-v3 for AVX2 code on an AVX-512 machine, with OFFLOAD_RS_CPU_TARGET=x86-64-v3 for ours)
out=${BENCH_OUT:-build/bench}
march=${BENCH_MARCH:-native}
mkdir -p "$out"
inc=/usr/lib/llvm-22/include/offload
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
  -c bench/kernels/bench.c -o "$out/bench.nvptx64.bc"
cp bench/kernels/saxpy_reduce.cl bench/kernels/bench.cl "$out/"
cc -O2 -Wall -I"$inc" bench/cpu_kernels.c -o "$out/cpu_kernels" -Lbuild/lib -lLLVMOffload -lOpenCL -lpthread \
  -Wl,-rpath,"$PWD/build/lib"
echo "built $out/cpu_kernels"
# The classic-kernel suite: bench/kernels/suite.c for nvptx64 and amdgcn, its OpenCL C twin (it includes
# blackscholes.cl, which includes blackscholes.h), and the hand-written work-group loops at -O3
# -march=native (BENCH_MARCH) with glibc's vector math (the practical limit).
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
  -c bench/kernels/suite.c -o "$out/suite.nvptx64.bc"
clang-22 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -ffreestanding -flto -O2 \
  -c bench/kernels/suite.c -o "$out/suite.amdgcn.bc"
cp bench/kernels/suite.cl bench/kernels/blackscholes.cl bench/kernels/blackscholes.h "$out/"
clang-22 -O3 -march="$march" -fveclib=libmvec -fno-math-errno -Wall -Wextra -c bench/kernels/suite_hand.c \
  -o "$out/suite_hand.o"
cc -O2 -Wall -I"$inc" bench/suite.c "$out/suite_hand.o" -o "$out/suite" -Lbuild/lib -lLLVMOffload -lOpenCL \
  -lpthread -lmvec -lm -Wl,-rpath,"$PWD/build/lib"
echo "built $out/suite"
cc -O2 -Wall -I"$inc" bench/program_cache.c -o "$out/program_cache" -Lbuild/lib -lLLVMOffload -Wl,-rpath,"$PWD/build/lib"
echo "built $out/program_cache"
cc -O2 -Wall -I"$inc" bench/jit_process.c -o "$out/jit_process" -Lbuild/lib -lLLVMOffload -lOpenCL -lpthread \
  -Wl,-rpath,"$PWD/build/lib"
echo "built $out/jit_process"
# links no offload library (each case dlopens the one it measures)
cc -O2 -Wall -I"$inc" bench/startup.c -o "$out/startup" -ldl
echo "built $out/startup"
# guards on work-item ids: the test kernels of ffi-tests/kernels/flat_guards.c and eq_guards.c
for k in flat_guards eq_guards; do
  clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
    -c ffi-tests/kernels/$k.c -o "$out/$k.nvptx64.bc"
done
cc -O2 -Wall -I"$inc" bench/guards.c -o "$out/guards" -Lbuild/lib -lLLVMOffload -Wl,-rpath,"$PWD/build/lib"
echo "built $out/guards"
# olLaunchKernel vs raw cuLaunchKernel (needs a CUDA driver, or the fake: see bench/cuda_launch.c)
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -O2 \
  -S ffi-tests/device/kernels.c -o "$out/kernels.ptx"
cc -O2 -Wall -I"$inc" bench/cuda_launch.c -o "$out/cuda_launch" -Lbuild/lib -lLLVMOffload -ldl -Wl,-rpath,"$PWD/build/lib"
echo "built $out/cuda_launch (run: LD_LIBRARY_PATH=build/fake-cuda:build/lib $out/cuda_launch $out/kernels.ptx)"
# math-heavy kernels: Black-Scholes on the CPU device (vector math on and off), hand loops with scalar libm and
# with glibc's vector math, PoCL
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
  -c bench/kernels/blackscholes.c -o "$out/blackscholes.nvptx64.bc"
cp bench/kernels/blackscholes.cl bench/kernels/blackscholes.h "$out/"
clang-22 -O3 -march="$march" -Wall -DBS_HAND=bs_hand_scalar -c bench/kernels/blackscholes_hand.c -o "$out/bs_hand_scalar.o"
clang-22 -O3 -march="$march" -fveclib=libmvec -fno-math-errno -Wall -DBS_HAND=bs_hand_vec \
  -c bench/kernels/blackscholes_hand.c -o "$out/bs_hand_vec.o"
cc -O2 -Wall -I"$inc" bench/vmath.c "$out/bs_hand_scalar.o" "$out/bs_hand_vec.o" -o "$out/vmath" -Lbuild/lib \
  -lLLVMOffload -lOpenCL -lpthread -lmvec -lm -Wl,-rpath,"$PWD/build/lib"
echo "built $out/vmath"
# 2-D tile kernels: the suite's transpose and stencil and ffi-tests/kernels/tiles.c for both targets, the
# hand-written transposes at -O3 -march=native (BENCH_MARCH)
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -flto -O2 \
  -c ffi-tests/kernels/tiles.c -o "$out/tiles.nvptx64.bc"
clang-22 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -ffreestanding -flto -O2 \
  -c ffi-tests/kernels/tiles.c -o "$out/tiles.amdgcn.bc"
clang-22 -O3 -march="$march" -Wall -Wextra -c bench/kernels/tiles_hand.c -o "$out/tiles_hand.o"
cc -O2 -Wall -I"$inc" bench/tiles.c "$out/tiles_hand.o" -o "$out/tiles" -Lbuild/lib -lLLVMOffload -lpthread \
  -Wl,-rpath,"$PWD/build/lib"
echo "built $out/tiles"
# kernel classes outside the suite: bench/kernels/classes.c for both targets, its hand-written loops at -O3
# -march=native (BENCH_MARCH) with glibc's vector math
for t in "nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80" "amdgcn-amd-amdhsa -mcpu=gfx90a"; do
  # shellcheck disable=SC2086 # (the target and its options)
  clang-22 --target=$t -nogpulib -ffreestanding -flto -O2 -c bench/kernels/classes.c -o "$out/classes.${t%%-*}.bc"
done
clang-22 -O3 -march="$march" -fveclib=libmvec -fno-math-errno -Wall -Wextra -c bench/kernels/classes_hand.c \
  -o "$out/classes_hand.o"
cc -O2 -Wall -I"$inc" bench/classes.c "$out/classes_hand.o" -o "$out/classes" -Lbuild/lib -lLLVMOffload -lpthread \
  -lmvec -lm -Wl,-rpath,"$PWD/build/lib"
echo "built $out/classes"
# a C model of the order grid-stride kernels walk memory in (no library)
clang-22 -O3 -march="$march" -Wall -Wextra -pthread bench/walk_order.c -o "$out/walk_order"
echo "built $out/walk_order"
