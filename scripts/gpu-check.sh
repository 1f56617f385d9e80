#!/usr/bin/env bash
# GPU check of the CUDA plugin. Runs on a machine with an NVIDIA GPU and driver, from the repo root,
# using only build/gpu-kit/ (made by scripts/gpu-build.sh elsewhere): no Rust, clang or network
# needed. Without a kit, on a machine that has cargo, LLVM 22 and clang-22, it builds the library and
# the kit first (scripts/gpu-build.sh). Prints diagnostics meant to be enough to fix things from one
# run. Total < 8 min (plus the build when it builds).
#
#   scripts/gpu-check.sh            # tests one by one (60 s each), then the benchmark
#   KIT=/path/to/gpu-kit scripts/gpu-check.sh
#
# With the device tool: build here (`bash scripts/gpu-build.sh && make -C ffi-tests tests`), then run
# `bash scripts/gpu-check.sh` there carrying build/gpu-kit and build/ffi-tests (56 MiB in all): the C tests
# also check the CPU device on that machine's CPU and its memory cgroup (often v2). About 1-3 minutes when
# nothing hangs; a hung test is killed at 60 s with its threads' states in its log.
#
# Everything is also logged to build/gpu-check.log and the per-test logs to build/gpu-run/logs/; when
# $OUT names a directory (the device runner's output folder) they are copied there at the end. The
# summary at the end repeats what matters (failures with their panic lines, the benchmark tables),
# so the last few KB of output are enough.
set -u
KIT=${KIT:-build/gpu-kit}
T0=$(date +%s)
mkdir -p build
LOG=$PWD/build/gpu-check.log
exec > >(tee "$LOG") 2>&1
elapsed() { echo $(( $(date +%s) - T0 )); }
# run_or_dump SECONDS LOG CMD...: CMD with output to LOG; past SECONDS, the state of each of its threads (kernel
# wait channel and stack, and a backtrace of every thread where gdb exists) goes to LOG before the kill; rc 124
run_or_dump() {
    local secs=$1 log=$2; shift 2
    "$@" >"$log" 2>&1 &
    local pid=$! i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $((secs * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        { echo "==== still running after ${secs} s: thread states"
          for t in /proc/$pid/task/*; do
              echo "-- thread $(basename "$t") $(cat "$t/comm" 2>/dev/null): wchan $(cat "$t/wchan" 2>/dev/null)"
              cat "$t/stack" 2>/dev/null | head -8
          done
          command -v gdb >/dev/null && timeout 30 gdb -q -batch -p "$pid" -ex 'thread apply all bt 25' 2>&1 | head -400
        } >>"$log" 2>&1
        kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
        return 124
    fi
    wait "$pid"
}
say() { printf '\n==== [%3ss] %s\n' "$(elapsed)" "$*"; }

say "offload-rs CUDA plugin GPU check"
if [ ! -f "$KIT/MANIFEST" ] && command -v cargo >/dev/null 2>&1 && command -v llvm-config-22 >/dev/null 2>&1 \
    && command -v clang-22 >/dev/null 2>&1; then
    # A GPU machine that can build (Rust, LLVM 22, clang-22): build the library and the kit here first.
    say "no kit at $KIT: building it here (scripts/gpu-build.sh)"
    bash scripts/gpu-build.sh || { echo "scripts/gpu-build.sh failed"; exit 2; }
    KIT=build/gpu-kit
fi
[ -f "$KIT/MANIFEST" ] || { echo "no kit at $KIT (run scripts/gpu-build.sh on the build machine)"; exit 2; }
head -4 "$KIT/MANIFEST"
uname -a
(. /etc/os-release 2>/dev/null && echo "OS: $PRETTY_NAME")
ldd --version 2>&1 | head -1

say "GPU and driver"
HAVE_GPU=0
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -q '^GPU' && HAVE_GPU=1
    nvidia-smi
    nvidia-smi --query-gpu=name,uuid,driver_version,compute_cap,memory.total --format=csv 2>/dev/null
else
    echo "nvidia-smi not found"
fi
ldconfig -p 2>/dev/null | grep -E 'libcuda\.so' || echo "libcuda.so not in the ld cache"

say "unpacking the kit"
RT=${RT:-$PWD/build/gpu-run}   # unpacked kit (~230 MB); inside the repo in case /tmp is noexec
rm -rf "$RT"
mkdir -p "$RT/bin" "$RT/lib" "$RT/glibc" "$RT/logs"
UNXZ="$RT/unxz"
cp "$KIT/tools/unxz-static" "$UNXZ" && chmod +x "$UNXZ"
for d in bin lib glibc; do
    for f in "$KIT/$d"/*.xz; do
        [ -e "$f" ] || continue
        "$UNXZ" <"$f" >"$RT/$d/$(basename "$f" .xz)" || { echo "cannot unpack $f"; exit 2; }
    done
done
chmod +x "$RT/bin/cuda-tests" "$RT/glibc"/ld-linux* 2>/dev/null
# the library's compile helper and LLVM module live in offload-rs/ beside it
mkdir -p "$RT/lib/offload-rs"
for f in offload-rs-jit liboffload-rs-llvm.so; do
    if [ -e "$RT/lib/$f" ]; then mv "$RT/lib/$f" "$RT/lib/offload-rs/$f"; fi
done
chmod +x "$RT/lib/offload-rs/offload-rs-jit" 2>/dev/null || true
du -sh "$RT"

export LD_LIBRARY_PATH="$RT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OFFLOAD_RS_KERNELS_DIR="$PWD/$KIT/kernels"
case "$KIT" in /*) export OFFLOAD_RS_KERNELS_DIR="$KIT/kernels" ;; esac
export OFFLOAD_RS_DEBUG=1 RUST_BACKTRACE=1
BIN="$RT/bin/cuda-tests"
RUN=("$BIN")
if [ -n "${FORCE_KIT_GLIBC:-}" ] || ! "$BIN" --list >/dev/null 2>"$RT/list.err"; then
    echo "the test binary does not start with the system glibc:"; cat "$RT/list.err"
    echo "-> using the kit's glibc and loader"
    RUN=("$RT/glibc/ld-linux-x86-64.so.2" --library-path "$RT/glibc:$LD_LIBRARY_PATH" "$BIN")
    "${RUN[@]}" --list >/dev/null || { echo "the test binary cannot start"; ldd "$BIN"; exit 2; }
fi
ldd "$BIN" 2>/dev/null | grep 'not found' && echo "(libraries above are missing)"

say "raw driver check in C (no offload-rs code), 60 s limit"
cp "$KIT/tools/rawcheck" "$RT/rawcheck" && chmod +x "$RT/rawcheck"
set -o pipefail
if ! timeout -k 5 60 "$RT/rawcheck" "$KIT/kernels/kernels.sm_70.ptx" 2>&1 | tee "$RT/logs/rawcheck.log"; then
    echo "(rawcheck failed; trying it with the kit's glibc)"
    timeout -k 5 60 "$RT/glibc/ld-linux-x86-64.so.2" --library-path "$RT/glibc:$LD_LIBRARY_PATH" "$RT/rawcheck" \
        "$KIT/kernels/kernels.sm_70.ptx" 2>&1 | tee -a "$RT/logs/rawcheck.log"
fi

say "tests (each alone, 60 s limit)"
mapfile -t TESTS < <("${RUN[@]}" --list 2>/dev/null | sed -n 's/^\(plugin::cuda::[^:]*::[^ ]*\): test$/\1/p' | grep -v gpu_bench)
PASS=(); FAIL=()
for t in "${TESTS[@]}"; do
    if [ "$(elapsed)" -gt 330 ]; then FAIL+=("$t (not run: time budget)"); continue; fi
    printf -- '---- %s\n' "$t"
    TL="$RT/logs/${t//::/.}.log"
    timeout -k 5 60 "${RUN[@]}" --exact "$t" --nocapture --test-threads=1 >"$TL" 2>&1
    rc=$?
    if [ "$HAVE_GPU" = 1 ] && grep -q 'SKIP: no CUDA device' "$TL"; then
        FAIL+=("$t (skipped although nvidia-smi sees a GPU: $(grep -m1 'offload-rs cuda' "$TL"))")
        grep 'offload-rs cuda' "$TL" | head -5
    elif grep -q '^test result: ok. 1 passed' "$TL"; then
        PASS+=("$t")
        grep -E 'SKIP|NOTE|CUDA device|sm_|optimal|broken PTX|ptx cache|layout' "$TL" | cut -c1-400 | head -20
    else
        why=$(grep -m1 -A2 'panicked at' "$TL" | tr '\n' ' ' | cut -c1-600)
        FAIL+=("$t (rc $rc$([ $rc = 124 ] && echo ', TIMEOUT')): ${why:-see $TL}")
        tail -40 "$TL" | cut -c1-400
    fi
done

if [ -x "$KIT/tools/capi_smoke" ] && [ "$(elapsed)" -lt 360 ]; then
    say "C API smoke test (libLLVMOffload.so.22.1 of this repo), 60 s limit"
    cp "$KIT/tools/capi_smoke" "$RT/capi_smoke" && chmod +x "$RT/capi_smoke"
    CAPI=("$RT/capi_smoke")
    [ "${RUN[0]}" = "$BIN" ] || CAPI=("${RUN[@]:0:3}" "$RT/capi_smoke")
    if timeout -k 5 60 "${CAPI[@]}" "$KIT/kernels/device_kernels.bc"; then
        PASS+=("capi_smoke")
    elif [ "$HAVE_GPU" = 1 ]; then
        FAIL+=("capi_smoke")
    else
        echo "(no GPU here: capi_smoke not counted)"
    fi
fi

if [ -x "$KIT/tools/test_cuda" ] && [ "$(elapsed)" -lt 380 ]; then
    say "C acceptance test ffi-tests/test_cuda.c through libLLVMOffload.so.22.1, 120 s limit"
    cp "$KIT/tools/test_cuda" "$RT/test_cuda" && chmod +x "$RT/test_cuda"
    TC=("$RT/test_cuda")
    [ "${RUN[0]}" = "$BIN" ] || TC=("${RUN[@]:0:3}" "$RT/test_cuda")
    KITABS=$KIT; case "$KIT" in /*) ;; *) KITABS=$PWD/$KIT ;; esac
    # Each test's name as it starts, and every API call as it returns (OFFLOAD_TRACE): a hang shows where.
    OFFLOAD_RS_DEVICE_CODE="$KITABS/kernels/device" HARNESS_VERBOSE=1 OFFLOAD_TRACE=1 \
        run_or_dump 60 "$RT/logs/test_cuda.log" "${TC[@]}"
    rc=$?
    grep -E '^---- ' "$RT/logs/test_cuda.log" | tail -1 | sed 's/^/  last test started: /'
    [ $rc = 124 ] && grep -E '^---> ' "$RT/logs/test_cuda.log" | tail -3 | cut -c1-300 | sed 's/^/  last calls: /'
    grep -vE '^PASS ' "$RT/logs/test_cuda.log" | cut -c1-400 | tail -60
    if grep -q '^SKIP: no CUDA device' "$RT/logs/test_cuda.log"; then
        [ "$HAVE_GPU" = 1 ] && FAIL+=("test_cuda (skipped although nvidia-smi sees a GPU)")
        [ "$HAVE_GPU" = 1 ] || echo "(no GPU here: test_cuda not counted)"
    # (the summary may follow a trace line's start: OFFLOAD_TRACE writes to stderr, the summary to stdout)
    elif [ $rc -eq 0 ] && grep -qE '(^|[^0-9])[0-9]+ passed, 0 failed' "$RT/logs/test_cuda.log"; then
        PASS+=("test_cuda")
    else
        FAIL+=("test_cuda (rc $rc$([ $rc = 124 ] && echo ', TIMEOUT')): $(grep -m3 -E '^FAIL |: \[' "$RT/logs/test_cuda.log" | tr '\n' ' ' | cut -c1-600)")
    fi
fi

say "all CUDA tests at once, in parallel (thread-safety), 90 s limit"
timeout -k 5 90 "${RUN[@]}" plugin::cuda 2>&1 | grep -E '^test |test result|panicked' | tail -40

say "benchmark (launch latency, 256 MiB bandwidth), 150 s limit"
timeout -k 5 150 "${RUN[@]}" --exact plugin::cuda::tests::gpu_bench --ignored --nocapture --test-threads=1 \
    >"$RT/logs/bench.log" 2>&1
grep -vE '^(running|$)' "$RT/logs/bench.log" | tail -40

if [ -x "$KIT/tools/cuda_launch" ]; then
    say "olLaunchKernel vs raw cuLaunchKernel through the C API (bench/cuda_launch.c), 60 s limit"
    cp "$KIT/tools/cuda_launch" "$RT/cuda_launch" && chmod +x "$RT/cuda_launch"
    CL=("$RT/cuda_launch")
    [ "${RUN[0]}" = "$BIN" ] || CL=("${RUN[@]:0:3}" "$RT/cuda_launch")
    timeout -k 5 60 "${CL[@]}" "$KIT/kernels/device_kernels.sm_90.ptx" 20000 >"$RT/logs/cuda_launch.log" 2>&1
    cat "$RT/logs/cuda_launch.log" | tail -12
fi

# The GPU machine's CPU is another CPU to be right on (often AVX-512, another vendor), and its kernel may have
# what the build machine lacks (cgroup v2's memory controller): when the C tests were carried along
# (build/ffi-tests, from `make -C ffi-tests tests`), run the CPU device's exactness tests and the memory cgroup
# test here, against the kit's library and compile helper.
if [ -x build/ffi-tests/test_suite ] && [ "$(elapsed)" -lt 420 ]; then
    say "CPU device on this machine's CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
        "$(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo no AVX-512)"
    export OFFLOAD_RS_JIT_CACHE_DIR=$RT/jit-cache
    HOSTC=("build/ffi-tests/test_suite" "build/ffi-tests/test_kernels" "build/ffi-tests/test_misuse")
    for t in "${HOSTC[@]}"; do
        n=$(basename "$t")
        if [ "$(elapsed)" -gt 540 ]; then FAIL+=("$n (not run: time budget)"); continue; fi
        timeout -k 5 120 "${RUN[@]:0:$((${#RUN[@]} - 1))}" "$t" >"$RT/logs/host.$n.log" 2>&1
        rc=$?
        grep -E '^FAIL |^  [^ ].*:[0-9]+: \[|cgroup|^[0-9]+ passed' "$RT/logs/host.$n.log" | cut -c1-300 | tail -15
        if [ $rc -eq 0 ] && grep -qE '^[0-9]+ passed, 0 failed' "$RT/logs/host.$n.log"; then PASS+=("host:$n");
        else FAIL+=("host:$n (rc $rc$([ $rc = 124 ] && echo ', TIMEOUT'))"); fi
    done
fi

say "summary"
grep -m1 -E 'rawcheck: device 0|rawcheck: dlopen|rawcheck: .*failed' "$RT/logs/rawcheck.log" 2>/dev/null
grep -m1 'rawcheck (C, raw driver)' "$RT/logs/rawcheck.log" 2>/dev/null
grep -h -m1 'CUDA device:' "$RT"/logs/*no_driver_means* 2>/dev/null | cut -c1-700
grep -h -m1 -E '^sm_[0-9]+ ptx ISA' "$RT"/logs/*gpu_info* 2>/dev/null
grep -A6 -E '^=== (launch|copy)' "$RT/logs/bench.log" 2>/dev/null
grep -E '^(launch path|round)' "$RT/logs/cuda_launch.log" 2>/dev/null
echo "passed: ${#PASS[@]}: $(printf '%s ' "${PASS[@]#plugin::cuda::}")"
echo "failed: ${#FAIL[@]}"
for t in "${FAIL[@]}"; do echo "  FAIL  $t"; done
echo "total time: $(elapsed) s; full log: $LOG, per-test logs: $RT/logs/"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    # one archive first (the runner brings back only a few files), then the logs one by one
    tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$RT" logs 2>/dev/null
    cp -r "$RT/logs" "$OUT/gpu-check-logs" 2>/dev/null
    sleep 1; cp "$LOG" "$OUT/gpu-check.log" 2>/dev/null
    echo "logs copied to \$OUT"
fi
[ "${#FAIL[@]}" -eq 0 ]
