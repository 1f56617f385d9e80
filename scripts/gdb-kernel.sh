#!/usr/bin/env bash
# A gdb session on a JIT'd kernel (GDB's JIT interface, src/jit/gdbjit.rs): test_debug's gdb_session
# launches gdb_target of ffi-tests/device/debug.c, built with -g (debug_g.nvptx64.bc); gdb -batch breaks in
# it by name before the program is loaded (a pending breakpoint), steps two source lines and prints its
# local `local` (41) and `i` (0); the breakpoint has a location per loaded copy of the kernel (`1.N` when
# both its generic and its specialised code are loaded, `1` when its program deferred the generic code).
# Prints harness-style lines (PASS/FAIL/SKIP and the summary) for
# scripts/test.sh's ctest. Run from the repository root after `make -C ffi-tests tests`.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! command -v gdb > /dev/null; then
  echo "SKIP gdb_breaks_in_a_kernel: gdb is not installed (scripts/install-deps.sh installs it)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
out=$(TEST_DEBUG_UNDER_GDB=1 HARNESS_FILTER=gdb_session timeout 300 gdb -batch -nx \
  -ex "set breakpoint pending on" -ex "break gdb_target" -ex run -ex "bt 1" -ex next -ex next \
  -ex "print local" -ex "print i" -ex continue build/ffi-tests/test_debug 2>&1)
echo "$out" | grep -v '^\[New Thread\|^\[Thread'
ok=1
for want in 'hit Breakpoint 1\(\.[0-9]*\)\?, gdb_target (' '^#0  gdb_target (.*ffi-tests/device/debug\.c:' \
  '^[0-9]*	  out\[i\] = local;' '^\$1 = 41$' '^\$2 = 0$' '^PASS gdb_session$'; do
  if ! grep -q -- "$want" <<< "$out"; then
    echo "  scripts/gdb-kernel.sh: [gdb_breaks_in_a_kernel] no line matching '$want' in gdb's output"
    ok=0
  fi
done
if [ "$ok" -eq 1 ]; then
  echo "PASS gdb_breaks_in_a_kernel"
  echo "1 passed, 0 failed, 0 skipped"
else
  echo "FAIL gdb_breaks_in_a_kernel"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi
