#!/bin/bash
# scripts/lowering-matrix.sh [test ...]: the C tests that run kernels (default test_suite and test_kernels),
# once with each of the lowering's transforms (and the JIT's pipeline passes that OFFLOAD_RS_JIT_LOWERING
# switches, lowering.rs's PIPELINE_NAMES) switched off (OFFLOAD_RS_JIT_LOWERING=-<name>,
# src/jit/llvm/lower/README.md), with the disk cache off: every result must stay exact without any one of
# them. After `make lib` and `make -C ffi-tests tests`. Not part of scripts/test.sh (it compiles the suite
# 16 times; scripts/test.sh runs it once with all of them off).
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OFFLOAD_RS_JIT_CACHE_DIR=off
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(test_suite test_kernels)
names="$(sed -n '/^pub(crate) const NAMES/,/^];/p' src/jit/llvm/lowering.rs | grep -o '"ol-[a-z-]*"' | tr -d '"')
$(sed -n '/^pub(crate) const PIPELINE_NAMES/,/;$/p' src/jit/llvm/lowering.rs | grep -o '"ol-[a-z-]*"' | tr -d '"')"
ok=0
for n in $names; do
  for t in "${tests[@]}"; do
    if out=$(OFFLOAD_RS_JIT_LOWERING=-$n "build/ffi-tests/$t" 2>&1); then
      echo "ok   -$n $t: $(echo "$out" | tail -1)"
    else
      echo "FAIL -$n $t"
      echo "$out" | grep -E 'FAIL|expected' | head -5 | sed 's/^/     /'
      ok=1
    fi
  done
done
exit $ok
