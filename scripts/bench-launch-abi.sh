#!/usr/bin/env bash
# olLaunchKernel's 23.1 form against its 22.1 form, side by side (bench/launch_abi.c). Not in CI (timings
# belong in benchmarks). Usage: bash scripts/bench-launch-abi.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -e build/lib23/libLLVMOffload.so.23.1 ] || make lib
[ -e build/ffi-tests/device/api23.nvptx64.bc ] || bash ffi-tests/build-device.sh
mkdir -p build/bench
cc -std=c11 -O2 -Wall -Wextra -I/usr/lib/llvm-22/include/offload bench/launch_abi.c -o build/bench/launch_abi22 \
  -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -lLLVMOffload
cc -std=c11 -O2 -Wall -Wextra -DABI23 -Iinclude/offload-23 bench/launch_abi.c -o build/bench/launch_abi23 \
  -Lbuild/lib23 -Wl,-rpath,"$PWD/build/lib23" -lLLVMOffload
for i in 1 2; do
  build/bench/launch_abi22 build/ffi-tests/device/api23.nvptx64.bc "${1:-200000}"
  build/bench/launch_abi23 build/ffi-tests/device/api23.nvptx64.bc "${1:-200000}"
done
