#!/usr/bin/env bash
# Build the GPU kit HERE (no GPU needed): build/gpu-kit/, to be carried to a GPU machine that has
# only the NVIDIA driver (no Rust, no clang, no network) and run there with scripts/gpu-check.sh.
#
#   build/gpu-kit/
#     bin/cuda-tests.xz     the crate's unit-test binary (debug info stripped), xz
#     lib/*.xz              shared libraries it needs that a bare Debian/Ubuntu may lack (libLLVM...)
#     glibc/*.xz            this machine's glibc + loader, used only if the GPU machine's is too old
#     kernels/*.bc          ffi-tests/kernels/cuda/*.c as NVPTX bitcode (the CPU device's kind)
#     tools/unxz-static     a static .xz decompressor (the GPU machine may lack xz-utils)
#     tools/rawcheck        raw driver check + launch-latency baseline in C (no offload-rs code)
#     tools/capi_smoke      end-to-end check through the C API (lib/libLLVMOffload.so.22.1, with its compile
#                           helper offload-rs-jit and LLVM module liboffload-rs-llvm.so, also in lib/)
#     tools/test_cuda       ffi-tests/test_cuda.c, the CUDA acceptance test through the C API
#     tools/cuda_launch     bench/cuda_launch.c: olLaunchKernel vs raw cuLaunchKernel (+ kernels/*.sm_90.ptx)
#     kernels/device/*.nvptx64.bc   its device code (ffi-tests/device/*.c, named as ffi-tests expects)
#     MANIFEST              git revision, build date, sizes
#
# Usage: scripts/gpu-build.sh        (from anywhere; cargo -j2; ~1-3 min after a warm build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KIT=$ROOT/build/gpu-kit
CACHE=$ROOT/build/gpu-kit-cache   # xz of the big libraries, reused while the source is unchanged
JOBS=${JOBS:-2}

rm -rf "$KIT"
mkdir -p "$KIT"/{bin,lib,glibc,kernels/device,tools} "$CACHE"

echo "== 1. test binary (cargo test --release --no-run -j$JOBS: optimised, the benchmark runs in it)"
LOG=$(mktemp)
if ! cargo test --release --lib --no-run -j"$JOBS" >"$LOG" 2>&1; then
    tail -50 "$LOG"; echo "cargo build failed"; exit 1
fi
BIN=$(grep -o 'Executable unittests src/lib.rs ([^)]*)' "$LOG" | tail -1 | sed 's/.*(\(.*\))/\1/')
rm -f "$LOG"
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "cannot find the unit-test executable"; exit 1; }
echo "   $BIN"
objcopy --strip-debug "$BIN" "$KIT/bin/cuda-tests"
# sanity: the binary knows the CUDA tests
LIST=$("$KIT/bin/cuda-tests" --list 2>&1 || true)
grep -q 'plugin::cuda::tests::gpu_saxpy' <<<"$LIST" || { echo "binary lacks the CUDA tests:"; echo "$LIST" | tail -5; exit 1; }
xz -T"$JOBS" -6 -f "$KIT/bin/cuda-tests"

echo "== 2. kernels (clang-22 -> NVPTX bitcode)"
for src in ffi-tests/kernels/cuda/*.c; do
    name=$(basename "$src" .c)
    clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding \
        -flto -O2 -c "$src" -o "$KIT/kernels/$name.bc"
    echo "   $name.bc"
done
# the project's shared device code (what the CPU device and the C client tests run), same flags
for src in ffi-tests/device/*.c; do
    [ -e "$src" ] || continue
    name=device_$(basename "$src" .c)
    clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding \
        -flto -O2 -c "$src" -o "$KIT/kernels/$name.bc"
    # the same bytes under the name test_cuda's t_load wants (OFFLOAD_RS_DEVICE_CODE=kernels/device)
    cp "$KIT/kernels/$name.bc" "$KIT/kernels/device/$(basename "$src" .c).nvptx64.bc"
    echo "   $name.bc"
done

# PTX for the raw C check (sm_70 / PTX 7.0: the driver JIT-compiles it for any newer GPU)
clang-22 --target=nvptx64-nvidia-cuda -march=sm_70 --cuda-feature=+ptx70 -nogpulib -ffreestanding -O2 \
    -S ffi-tests/kernels/cuda/kernels.c -o "$KIT/kernels/kernels.sm_70.ptx"
echo "   kernels.sm_70.ptx"
# CUBINs made by NVIDIA's ptxas (PyPI, scripts/cuda-tools.sh) for the CUBIN program test on an H100/H200
if bash scripts/cuda-tools.sh >/dev/null 2>&1; then
    for sm in 90 80; do
        clang-22 --target=nvptx64-nvidia-cuda -march=sm_$sm --cuda-feature=+ptx80 -nogpulib -ffreestanding -O2 \
            -S ffi-tests/kernels/cuda/kernels.c -o "$KIT/kernels/kernels.sm_$sm.ptx.tmp"
        build/cuda-tools/bin/ptxas -arch=sm_$sm -o "$KIT/kernels/kernels.sm_$sm.cubin" "$KIT/kernels/kernels.sm_$sm.ptx.tmp"
        rm -f "$KIT/kernels/kernels.sm_$sm.ptx.tmp"
        echo "   kernels.sm_$sm.cubin"
    done
else
    echo "   (no ptxas: CUBIN test files left out)"
fi

echo "== 3. shared libraries (ldd)"
compress() { # src dst-dir
    local src=$1 dir=$2 name key
    name=$(basename "$src")
    key="$CACHE/$name.$(stat -L -c '%s-%Y' "$src").xz"
    if [ ! -s "$key" ]; then
        xz -T"$JOBS" -6 -c "$src" >"$key.tmp" && mv "$key.tmp" "$key"
    fi
    cp "$key" "$dir/$name.xz"
    echo "   $name ($(stat -L -c %s "$src") -> $(stat -c %s "$dir/$name.xz") bytes)"
}
ldd "$BIN" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so.6|libm.so.6|ld-linux-x86-64.so.2) compress "$lib" "$KIT/glibc" ;;
        *) compress "$lib" "$KIT/lib" ;;
    esac
done
# glibc pieces ldd lists only indirectly
for extra in /lib/x86_64-linux-gnu/libpthread.so.0 /lib/x86_64-linux-gnu/libdl.so.2 /lib/x86_64-linux-gnu/librt.so.1; do
    [ -e "$extra" ] && compress "$extra" "$KIT/glibc"
done

echo "== 3b. the C library (make lib, release) + the C API tests and the launch benchmark against it"
LIBOUT=$ROOT/build/gpu-lib
if make -s lib OUT="$LIBOUT" >/dev/null 2>&1; then
    cc -O1 -Wall -Iinclude scripts/gpu-kit/capi_smoke.c -o "$KIT/tools/capi_smoke" -L"$LIBOUT/lib" -lLLVMOffload
    # the C acceptance test (against LLVM's header, as in ffi-tests/Makefile)
    cc -std=c11 -D_DEFAULT_SOURCE -O1 -Wall -I/usr/lib/llvm-22/include/offload -include stdbool.h -Iffi-tests \
        ffi-tests/test_cuda.c -o "$KIT/tools/test_cuda" -L"$LIBOUT/lib" -lLLVMOffload -lpthread -ldl
    strip "$KIT/tools/test_cuda"
    # olLaunchKernel vs raw cuLaunchKernel through the C API (bench/cuda_launch.c), on kernels.c's PTX
    cc -O2 -Wall -I/usr/lib/llvm-22/include/offload bench/cuda_launch.c -o "$KIT/tools/cuda_launch" \
        -L"$LIBOUT/lib" -lLLVMOffload -ldl
    strip "$KIT/tools/cuda_launch"
    clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 --cuda-feature=+ptx80 -nogpulib -ffreestanding -O2 \
        -S ffi-tests/device/kernels.c -o "$KIT/kernels/device_kernels.sm_90.ptx"
    compress "$LIBOUT/lib/libLLVMOffload.so.22.1" "$KIT/lib"
    # the library has no LLVM in it: its compiles (PTX from bitcode) run in the compile helper or the
    # in-process LLVM module, which gpu-check.sh puts in lib/offload-rs/ beside it
    compress "$LIBOUT/lib/offload-rs/offload-rs-jit" "$KIT/lib"
    compress "$LIBOUT/lib/offload-rs/liboffload-rs-llvm.so" "$KIT/lib"
else
    echo "   (make lib failed: the C API smoke test is left out of the kit)"
fi

echo "== 4. tools"
gcc -O2 -static scripts/gpu-kit/unxz.c -o "$KIT/tools/unxz-static" -llzma
strip "$KIT/tools/unxz-static"
gcc -O2 -Wall scripts/gpu-kit/rawcheck.c -o "$KIT/tools/rawcheck" -ldl
strip "$KIT/tools/rawcheck"

{
    echo "offload-rs GPU kit"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | grep -q . && echo '(dirty)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(ldd --version | head -1)"
    echo "test binary: $BIN"
    (cd "$KIT" && find . -type f -printf '%10s %p\n' | sort -k2)
} >"$KIT/MANIFEST"
SIZE=$(du -sb "$KIT" | cut -f1)
echo "== kit: $KIT, $((SIZE / 1024 / 1024)) MiB ($SIZE bytes)"
[ "$SIZE" -lt $((64 * 1024 * 1024)) ] || echo "WARNING: kit is over 64 MiB"
