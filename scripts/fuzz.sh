#!/usr/bin/env bash
# Fuzz the C API for a while: scripts/fuzz.sh [seconds per target, default 30].
#
# Targets (fuzz/fuzz_targets/, harness in fuzz/src/harness.rs): `program` (olIsValidBinary/olCreateProgram
# on corrupt and mutated images) and `api_sequence` (call sequences over live, destroyed, stale, wrong-kind,
# garbage and NULL handles). Runs one target at a time, with AddressSanitizer and debug assertions,
# starting from the committed seeds in fuzz/corpus/<target>/; the working corpus goes to build/fuzz/work/.
# Fails if a target crashes, hangs (60 s per input) or breaks an invariant; libFuzzer saves the input
# in fuzz/artifacts/<target>/ (copy it to fuzz/regressions/<target>/ once fixed: tests/fuzz_regressions.rs
# replays that directory).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
# FUZZ_SEED=N makes a run repeatable (CI uses 1); unset or 0: libFuzzer picks a random seed.
seed=${FUZZ_SEED:-0}
# cargo-fuzz passes -Z flags (sanitizer, coverage); only the stable toolchain is installed.
export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

echo "== device seeds"
bash ffi-tests/build-device.sh
for f in fuzz/seeds/*.bc; do
  cmp -s "$f" "build/ffi-tests/device/$(basename "$f")" ||
    echo "note: $f differs from a fresh build (replays use the committed copy; refresh with cp)"
done

flags=(-O --debug-assertions --sanitizer address)
echo "== build"
cargo fuzz build "${flags[@]}"
# The library compiles in its helper process (src/jit/helper.rs); the fuzz binaries are not beside one.
cargo build --release --bin offload-rs-jit
export OFFLOAD_RS_JIT_HELPER="$PWD/target/release/offload-rs-jit"

fail=0
for t in program api_sequence; do
  work=build/fuzz/work/$t
  rm -rf "$work"
  mkdir -p "$work"
  extra=()
  if [ "$t" = program ]; then
    # Freshly built device code joins the committed seeds (mode byte 0: the rest is the image).
    for f in build/ffi-tests/device/*.bc; do
      { printf '\000'; cat "$f"; } >"$work/fresh-$(basename "$f")"
    done
  else
    extra=(-max_len=512)
  fi
  echo "== fuzz $t for ${secs}s"
  set +e
  cargo fuzz run "${flags[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -seed="$seed" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 "${extra[@]}" \
    >"build/fuzz/$t.log" 2>&1
  rc=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|average_exec_per_sec)' "build/fuzz/$t.log" || true
  if [ $rc -ne 0 ]; then
    grep -E 'panicked at|^[^ ]*ERROR:|SUMMARY:' -A2 "build/fuzz/$t.log" | head -20 || true
    echo "FAIL: fuzz target $t (exit $rc; log build/fuzz/$t.log; input in fuzz/artifacts/$t/)"
    fail=1
  fi
done
[ $fail -eq 0 ] && echo "fuzzing: no crashes"
exit $fail
