#!/usr/bin/env bash
# The one command that runs every check of offload-rs (CI: .ci/run). Needs root only to install missing
# packages (scripts/install-deps.sh). Every section runs even if an earlier one failed (except what
# depends on the library being built); the last line is the C tests' total, `N passed, N failed, N skipped`,
# summed over every C test run (plain, valgrind, ASan+UBSan); the exit status is non-zero if anything failed.
#
#   bash scripts/test.sh           everything CI runs
#   bash scripts/test.sh --quick   the everyday subset (a few minutes): fmt, clippy, cargo test, make lib and
#                                  the C tests plain (no CUDA tools, valgrind, ASan, LLVM reference, fuzzing)
set -uo pipefail
QUICK=0
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
LOG=build/test-logs
mkdir -p "$LOG"

FAILED=()
PASSED=0 FAILED_TESTS=0 SKIPPED=0

section() { printf '\n==================== %s ====================\n' "$*"; }
step() { # step NAME CMD...: run a section, record failure
  local name=$1; shift
  section "$name"
  if "$@"; then echo "---- $name: ok"; else echo "---- $name: FAILED"; FAILED+=("$name"); return 1; fi
}

# ctest LABEL CMD...: run one C test executable; add its `N passed, N failed, N skipped` line to the totals.
ctest() {
  local label=$1; shift
  local out="$LOG/${label//[^A-Za-z0-9_.-]/_}.log"
  echo "---- $label"
  "$@" > "$out" 2>&1
  local rc=$?
  grep -E '^FAIL |^  [^ ].*:[0-9]+: \[|^      (LLVM|ours): ' "$out" | head -60
  local nskip
  nskip=$(grep -c '^SKIP ' "$out")
  if [ "$nskip" -gt 0 ]; then
    echo "     $nskip skipped, e.g. $(grep -m1 '^SKIP ' "$out")"
  fi
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
  if [ -z "$line" ]; then
    echo "     no summary line (rc $rc): the test crashed or was killed; last lines:"
    tail -15 "$out" | sed 's/^/     /'
    FAILED_TESTS=$((FAILED_TESTS + 1))
    return 1
  fi
  local p f s
  p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<< "$line")
  f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<< "$line")
  s=$(sed -nE 's/.* ([0-9]+) skipped.*/\1/p' <<< "$line"); s=${s:-0}
  PASSED=$((PASSED + p)); FAILED_TESTS=$((FAILED_TESTS + f)); SKIPPED=$((SKIPPED + s))
  echo "     $line (rc $rc)"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "     exit status $rc without a failed test (valgrind/sanitizer error?); last lines:"
    grep -E '==[0-9]+==|ERROR|runtime error' "$out" | head -20 | sed 's/^/     /'
    FAILED_TESTS=$((FAILED_TESTS + 1))
    return 1
  fi
  [ "$rc" -eq 0 ]
}

C_TESTS=(test_foundation test_cpu_device test_misuse test_dlopen test_programs test_kernels test_kmem test_queues
  test_stress test_cuda test_suite test_jit_service test_settings test_api23 test_debug)
# Under valgrind: all but the JIT-heavy tests (LLVM code generation under valgrind takes minutes per
# program and would break CI's 30-minute budget); those run under ASan+UBSan instead.
VALGRIND_TESTS=(test_foundation test_cpu_device test_misuse test_dlopen test_queues)
# The tests run with OFFLOAD_DISABLE_VALIDATION=1 as well (see run_c_tests), all of them unless listed here.
declare -A NO_VALIDATION_FILTER=(
  [test_foundation]=uninitialized_before_init_has_llvm_text_and_one_static_pointer,uninitialized_for_every_entry_point_and_twin,uninitialized_after_last_shutdown,init_and_shutdown_are_refcounted,repeated_init_10x,reinit_invalidates_old_handles,iteration_host_device_last_and_stops_on_false,host_device_info_matches_llvm_table,host_platform_info_matches_llvm,every_platform_answers_every_property,getinfo_bad_enum_texts,post_validation_order_per_doc_comments,garbage_handles_get_the_kinds_error,wrong_kind_handles_are_detected,host_device_refuses_work_with_unsupported,host_to_host_memcpy,is_valid_binary_on_host_is_false,mem_fill_pattern_size_zero_is_invalid_size_not_sigfpe,mem_free_of_unknown_memory,offload_trace_format,offload_trace_prints_enum_values_by_name,offload_trace_matches_llvm_line_by_line,offload_disable_validation_never_crashes
)
export LD_LIBRARY_PATH="$ROOT/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The JIT's disk cache is on by default (~/.cache/offload-rs): CI keeps its own under build/, so a run
# neither depends on nor fills the user's cache.
export OFFLOAD_RS_JIT_CACHE_DIR="${OFFLOAD_RS_JIT_CACHE_DIR:-$ROOT/build/jit-cache}"
# A kernel's version for a group shape that does not compile is the launch's error here, not a quiet fall-back
# to its generic code (same results, slower: a lowering bug would show only as a slow launch).
export OFFLOAD_RS_JIT_SPECIALISE="${OFFLOAD_RS_JIT_SPECIALISE:-require}"

run_c_tests() {
  local ok=0
  for t in "${C_TESTS[@]}"; do ctest "$t" "build/ffi-tests/$t" || ok=1; done
  # gdb breaks in a JIT'd kernel built with -g, steps and prints its locals (GDB's JIT interface, ~3 s)
  ctest "gdb session" bash scripts/gdb-kernel.sh || ok=1
  # the kernel memory checker on every kernel test: no false positives (~10 s)
  ctest "memcheck test_kernels" env OFFLOAD_RS_MEMCHECK=1 build/ffi-tests/test_kernels || ok=1
  # OFFLOAD_DISABLE_VALIDATION=1 gives the codes of the validated run (~2 s). Left out of test_foundation: the
  # four tests of the skipped checks' order and texts, which differ only where LLVM 22 itself crashes with
  # validation off (a NULL handle or out-pointer behind a skipped PropSize/Size == 0 check), reports
  # INVALID_ENUMERATION first (a bad PropName with PropSize == 0), or keeps the code with its writer's text
  # (PropSize == 0: INVALID_SIZE "provided size is invalid"); test_dlopen asserts that last text.
  local t
  for t in test_foundation test_misuse test_queues test_programs test_kmem test_cpu_device; do
    ctest "no validation $t" env OFFLOAD_DISABLE_VALIDATION=1 HARNESS_FILTER="${NO_VALIDATION_FILTER[$t]:-}" \
      "build/ffi-tests/$t" || ok=1
  done
  return $ok
}

run_c_tests_valgrind() {
  local ok=0
  # OFFLOAD_RS_TESTS_SMALL: fewer iterations / smaller sizes in the stress tests (valgrind is ~50x slower).
  for t in "${VALGRIND_TESTS[@]}"; do
    ctest "valgrind $t" env OFFLOAD_RS_TESTS_SMALL=1 FFI_TESTS_NO_DLCLOSE=1 valgrind -q --error-exitcode=1 \
      --leak-check=full --suppressions=ffi-tests/valgrind.supp "build/ffi-tests/$t" || ok=1
  done
  return $ok
}

run_c_tests_asan() {
  local ok=0
  # Leak detection stays on (the interned errors stay reachable from the library's statics);
  # FFI_TESTS_NO_DLCLOSE keeps test_dlopen from unmapping those statics before the leak check.
  for t in "${C_TESTS[@]}"; do
    ctest "asan+ubsan $t" env UBSAN_OPTIONS=print_stacktrace=1 FFI_TESTS_NO_DLCLOSE=1 "build/ffi-tests/asan/$t" || ok=1
  done
  return $ok
}

# The CUDA platform end to end without a GPU: test_cuda (which skips in the plain run above when there is no
# driver) against the fake driver ffi-tests/fake_cuda (build/fake-cuda/libcuda.so.1), plain and ASan+UBSan,
# plus the CPU-device tests with a CUDA device present (it comes first in olIterateDevices). ~10 s.
run_fake_cuda() {
  local ok=0 fake="LD_LIBRARY_PATH=$ROOT/build/fake-cuda:$LD_LIBRARY_PATH"
  # Every PTX module the library hands the fake driver also goes through NVIDIA's ptxas (sm_90), as a real
  # driver's JIT would assemble it.
  local ptxas="FAKE_CUDA_PTXAS=$ROOT/build/cuda-tools/bin/ptxas"
  [ -x "$ROOT/build/cuda-tools/bin/ptxas" ] || ptxas="FAKE_CUDA_PTXAS="
  ctest "fake CUDA: test_cuda" env "$fake" "$ptxas" build/ffi-tests/test_cuda || ok=1
  ctest "fake CUDA: asan+ubsan test_cuda" env "$fake" "$ptxas" UBSAN_OPTIONS=print_stacktrace=1 FFI_TESTS_NO_DLCLOSE=1 \
    build/ffi-tests/asan/test_cuda || ok=1
  ctest "fake CUDA: test_kernels" env "$fake" FAKE_CUDA_QUIET=1 build/ffi-tests/test_kernels || ok=1
  ctest "fake CUDA: test_foundation" env "$fake" FAKE_CUDA_QUIET=1 build/ffi-tests/test_foundation || ok=1
  # With the fake present, test_cuda must find a CUDA device (a driver symbol the fake lacks makes our
  # library list none, and test_cuda would only skip).
  if grep -q '^SKIP: no CUDA device' "$LOG/fake_CUDA__test_cuda.log" "$LOG/fake_CUDA__asan_ubsan_test_cuda.log"; then
    echo "test_cuda found no CUDA device with the fake driver (OFFLOAD_RS_DEBUG=1 says why)"
    FAILED_TESTS=$((FAILED_TESTS + 1))
    ok=1
  fi
  return $ok
}

# The JIT's exactness checks once per CPU target family (OFFLOAD_RS_CPU_TARGET): each ISA level generates
# different vector code, and LLVM's bugs follow the target (skylake: AVX2 with gathers, the LLVM 22.1
# vectoriser miscompile src/jit/llvm/workarounds/ works around; x86-64-v4: AVX-512). The default run above is
# `native`; a target this machine cannot run is skipped, and the log says so.
JIT_TARGETS=(x86-64-v2 x86-64-v3 skylake x86-64-v4)
jit_target_matrix() { # jit_target_matrix [--c-only]
  local ok=0 t why
  for t in "${JIT_TARGETS[@]}"; do
    if ! why=$(build/ffi-tests/test_settings --target-runs "$t"); then
      echo "SKIP target $t: this machine cannot run it ($why)"
      continue
    fi
    echo "---- target $t"
    if [ "${1:-}" != "--c-only" ]; then
      local log="$LOG/target-$t-cargo-jit.log"
      if OFFLOAD_RS_CPU_TARGET=$t cargo test --lib jit:: > "$log" 2>&1; then
        grep -E '^test result' "$log" | sed 's/^/     cargo /'
      else
        echo "     cargo test --lib jit:: FAILED (log: $log)"
        grep -E 'panicked|^test .* FAILED' "$log" | head -20 | sed 's/^/     /'
        ok=1
      fi
    fi
    local tt
    for tt in test_suite test_kernels; do
      ctest "target $t: $tt" env OFFLOAD_RS_CPU_TARGET="$t" "build/ffi-tests/$tt" || ok=1
    done
  done
  # with stop points in every loop (OFFLOAD_RS_KERNEL_TIMEOUT turns them on; src/jit/stop.rs), native target
  for tt in test_suite test_kernels; do
    ctest "stop points: $tt" env OFFLOAD_RS_KERNEL_TIMEOUT=600 "build/ffi-tests/$tt" || ok=1
  done
  # the full version from each kernel's first launch on (the runs above give each first launch at a shape
  # its quick version: src/plugin/cpu/tier_up.rs), native target
  # and, the other way, the quick version for every launch
  for tt in test_suite test_kernels; do
    ctest "full version at first launches: $tt" env OFFLOAD_RS_JIT_QUICK_FIRST=0 "build/ffi-tests/$tt" || ok=1
    ctest "quick version for every launch: $tt" env OFFLOAD_RS_JIT_QUICK_FIRST=only "build/ffi-tests/$tt" || ok=1
  done
  # without any of the lowering's transforms (src/jit/llvm/lower/README.md; scripts/lowering-matrix.sh
  # switches each off in turn): the results must not depend on them
  for tt in test_suite test_kernels; do
    ctest "no lowering transforms: $tt" env OFFLOAD_RS_JIT_LOWERING=none "build/ffi-tests/$tt" || ok=1
  done
  return $ok
}

# The foundation tests whose expectations hold for LLVM 22's own library too (the others pass garbage
# handles, use the host device for work, etc., which crash LLVM 22): run them against LLVM's library to
# prove the expected codes and texts are LLVM's.
LLVM_REFERENCE_TESTS=uninitialized_before_init_has_llvm_text_and_one_static_pointer,uninitialized_for_every_entry_point_and_twin,every_entry_point_with_null_arguments_and_twins_forward,uninitialized_after_last_shutdown,init_and_shutdown_are_refcounted,repeated_init_10x,iteration_host_device_last_and_stops_on_false,host_device_info_matches_llvm_table,host_platform_info_matches_llvm,every_platform_answers_every_property,getinfo_bad_enum_texts,getinfo_validation_order_and_texts,validation_order_of_every_entry_point,identical_errors_share_one_pointer_forever,host_to_host_memcpy,is_valid_binary_on_host_is_false,mem_free_of_unknown_memory,offload_trace_format,offload_trace_prints_enum_values_by_name,offload_trace_matches_llvm_line_by_line
run_llvm_reference() {
  ctest "test_foundation against LLVM 22's libLLVMOffload.so.22.1" env HARNESS_FILTER="$LLVM_REFERENCE_TESTS" \
    LD_LIBRARY_PATH=/usr/lib/llvm-22/lib build/ffi-tests/test_foundation
}

device_info_tool() {
  local out="$LOG/llvm-offload-device-info.log"
  llvm-offload-device-info-22 > "$out" 2>&1
  local rc=$?
  grep -E '^\[|^Num Devices|^Platform Name' "$out"
  [ "$rc" -eq 0 ] || { echo "exit status $rc"; cat "$out"; return 1; }
  grep -q '^\[Virtual Host Device\]' "$out" || { echo "host device not listed"; return 1; }
  grep -q 'no version information' "$out" && { echo "glibc version warning"; return 1; }
  if build/ffi-tests/test_cpu_device 2>/dev/null | grep -q '^PASS cpu_device_info'; then
    grep -q '^Platform Name: CPU' "$out" || { echo "CPU device present but not listed"; return 1; }
  fi
  return 0
}

install_check() { # install into a scratch prefix; build and run the demo against the installed copy
  local prefix="$ROOT/build/install-check"
  rm -rf "$prefix"
  make -s install PREFIX="$prefix" > "$LOG/install.log" 2>&1 || { cat "$LOG/install.log"; return 1; }
  # shellcheck disable=SC2046
  cc -std=c11 -O1 -include stdbool.h ffi-tests/demo.c -o "$prefix/demo" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs offload-rs) -Wl,-rpath,"$prefix/lib" || return 1
  LD_LIBRARY_PATH= "$prefix/demo" > "$LOG/install-demo.log" 2>&1 || { cat "$LOG/install-demo.log"; return 1; }
  # (grep reads all of ldd's output: with pipefail, `grep -q` leaving early can fail the pipeline by SIGPIPE)
  LD_LIBRARY_PATH= ldd "$prefix/demo" | grep "$prefix/lib/libLLVMOffload.so.22.1" > /dev/null || { echo "demo did not load the installed library"; return 1; }
  # The installed library finds its compile helper ($prefix/lib/offload-rs/offload-rs-jit) by itself.
  LD_LIBRARY_PATH="$prefix/lib" OFFLOAD_RS_DEBUG=1 OFFLOAD_RS_JIT_CACHE_DIR=off HARNESS_FILTER=symbols \
    build/ffi-tests/test_programs > "$LOG/install-jit.log" 2>&1 || { cat "$LOG/install-jit.log"; return 1; }
  if grep -q "JIT helper unavailable" "$LOG/install-jit.log"; then
    cat "$LOG/install-jit.log"; echo "the installed library did not find its compile helper"; return 1
  fi
  # 23.1 beside it: a client built with `pkg-config offload-rs-23` loads libLLVMOffload.so.23.1
  # shellcheck disable=SC2046
  cc -std=c11 -O1 ffi-tests/demo23.c -o "$prefix/demo23" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs offload-rs-23) -Wl,-rpath,"$prefix/lib/offload-rs-23" || return 1
  LD_LIBRARY_PATH= "$prefix/demo23" > "$LOG/install-demo23.log" 2>&1 || { cat "$LOG/install-demo23.log"; return 1; }
  LD_LIBRARY_PATH= ldd "$prefix/demo23" | grep "libLLVMOffload.so.23.1" > /dev/null || { echo "demo23 did not load the installed 23.1 library"; return 1; }
  echo "installed to $prefix; demo built with pkg-config ran against it; a program compiled by the installed helper; demo23 (pkg-config offload-rs-23) ran against libLLVMOffload.so.23.1"
}

summary() { # the failed sections, then the C tests' total as the last line; the exit status
  section "summary"
  if [ ${#FAILED[@]} -gt 0 ]; then
    printf 'FAILED sections:\n'; printf '  %s\n' "${FAILED[@]}"
  else
    echo "all sections passed"
  fi
  echo "C test logs: $LOG/"
  echo "$PASSED passed, $FAILED_TESTS failed, $SKIPPED skipped"
  [ ${#FAILED[@]} -eq 0 ] && [ "$FAILED_TESTS" -eq 0 ]
}

# Nothing below means anything without the dependencies: stop here, loudly, if they cannot be installed.
if ! step "dependencies" bash scripts/install-deps.sh; then
  echo "the dependencies could not be installed (see above): stopping"
  exit 1
fi
no_llvm_check() { # the libraries link no LLVM (issue 24): nothing NEEDED, nothing ldd finds, names it
  local bad=0 l
  for l in build/lib/libLLVMOffload.so.22.1 build/lib23/libLLVMOffload.so.23.1; do
    echo "     $l needs: $(readelf -d "$l" | sed -nE 's/.*NEEDED.*\[(.*)\]/\1/p' | tr '\n' ' ')"
    if ldd "$l" | grep -E 'libLLVM(-|\.so)|libstdc\+\+'; then echo "     $l loads LLVM"; bad=1; fi
  done
  return $bad
}
fmt_check() { # the file list, not pages of diff (run `cargo fmt` to fix)
  cargo fmt --check -- --color=never > "$LOG/cargo-fmt.log" 2>&1 && return 0
  grep '^Diff in' "$LOG/cargo-fmt.log" | sed 's/:[0-9]*:$//' | sort | uniq -c
  echo "(full diff: $LOG/cargo-fmt.log; run 'cargo fmt')"
  return 1
}

step "cargo fmt --check" fmt_check
step "cargo clippy --all-targets -- -D warnings" cargo clippy --all-targets -- -D warnings
# the libraries' build: the crate without its `llvm` feature (src/jit/llvm/ left out)
step "cargo clippy --lib --no-default-features -- -D warnings (the libraries' build)" \
  cargo clippy --lib --no-default-features --target-dir target/client -- -D warnings
step "gen-codeloc --check" python3 scripts/gen-codeloc.py --check
step "no import cycles between files of src/" python3 scripts/check-imports.py
# No GPU needed: NVIDIA's cuda.h and ptxas (PyPI wheels) check the CUDA plugin's driver table, and cargo
# test's generated_ptx_passes_nvidia_ptxas assembles every PTX our NVPTX path makes.
if [ "$QUICK" -eq 1 ]; then
  step "cargo test (incl. tests/header.rs)" cargo test
  if step "make lib" make lib && step "the libraries link no LLVM (ldd)" no_llvm_check &&
    step "IR tests of the JIT's named passes (opt-22 -load-pass-plugin, FileCheck-22)" bash scripts/ir-tests.sh &&
    step "build C tests" make -C ffi-tests tests; then
    step "C tests" run_c_tests
    step "C JIT tests per CPU target" jit_target_matrix --c-only
  fi
  summary
  exit
fi
if step "CUDA tools from PyPI (cuda.h, ptxas 12.9 and 13.5)" bash scripts/cuda-tools.sh; then
  step "CUDA driver table vs cuda.h" python3 scripts/cuda-abi-check.py
fi
step "cargo test (incl. tests/header.rs)" cargo test
if step "make lib" make lib; then
  step "the libraries link no LLVM (ldd)" no_llvm_check
  step "IR tests of the JIT's named passes (opt-22 -load-pass-plugin, FileCheck-22)" bash scripts/ir-tests.sh
  step "symbol check" bash ffi-tests/check_symbols.sh
  step "symbol check of the 23.1 library" bash ffi-tests/check_symbols_23.sh
  step "ABI check (compile ffi-tests/abi_check.cpp)" make -C ffi-tests abi
  step "23.1 ABI check (ffi-tests/gen_abi_check_23.py against include/offload-23)" make -C ffi-tests abi23
  # offload-tblgen's output for 23.1.1 (needs Debian sid's deb-src: SKIP offline)
  step "include/offload-23/OffloadAPI.h is offload-tblgen's" bash scripts/gen-header-23.sh --check
  step "tests compile against our header" make -C ffi-tests ours
  if step "build C tests" make -C ffi-tests tests asan; then
    step "C tests" run_c_tests
    step "JIT exactness per CPU target and with stop points (cargo's JIT tests, test_suite, test_kernels)" jit_target_matrix
    # every kernel of ffi-tests/kernels, ffi-tests/device and bench/kernels, each target, specialised at
    # 1x1x1, 100x1x1 and 8x4x2: each version compiles (a failure would only be a slow launch in a client); ~100 s
    step "every kernel specialises at odd group shapes (compile only)" env OFFLOAD_RS_JIT_CACHE_DIR=off \
      cargo test --lib every_kernel_specialises_at_odd_shapes -- --ignored
    step "C test expectations checked against LLVM's own library" run_llvm_reference
    step "C tests under valgrind" run_c_tests_valgrind
    step "C tests with ASan+UBSan" run_c_tests_asan
    step "CUDA platform against the fake driver" run_fake_cuda
  fi
  step "llvm-offload-device-info-22 with our library" device_info_tool
  step "make install + a client built with pkg-config" install_check
  # LLVM's own conformance suites, built from Debian sid's orig tarballs (cached in build/; SKIP offline):
  # 22.1.8's against .so.22.1, 23.1.1's against .so.23.1, on the CPU device and the fake CUDA device.
  # About 6-7 minutes cold on 2 cores (download, extract, build both), seconds warm. OFFLOAD_RS_CONFORMANCE=0 skips.
  if [ "${OFFLOAD_RS_CONFORMANCE:-1}" != 0 ]; then
    step "LLVM 22.1.8 offload/unittests/OffloadAPI (CPU, fake CUDA)" bash scripts/llvm-unittests.sh 22
    step "LLVM 23.1.1 offload/unittests/OffloadAPI (CPU, fake CUDA)" bash scripts/llvm-unittests.sh 23
  fi
  # A short, repeatable fuzz run of both targets (the 10-minute runs are in BENCHMARKS.md).
  step "fuzz (scripts/fuzz.sh 15, fixed seed)" env FUZZ_SEED=1 bash scripts/fuzz.sh 15
  # The same targets on the CUDA device of the fake driver (needs build/fake-cuda from the C tests' build).
  if [ -e build/fake-cuda/libcuda.so.1 ]; then
    step "fuzz the CUDA device against the fake driver (15 s each, fixed seed)" env OFFLOAD_RS_FUZZ_BACKEND=cuda \
      FAKE_CUDA_QUIET=1 LD_LIBRARY_PATH="$ROOT/build/fake-cuda:$LD_LIBRARY_PATH" FUZZ_SEED=1 bash scripts/fuzz.sh 15
  fi
fi

summary
