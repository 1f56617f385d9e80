#!/usr/bin/env bash
# Fresh machine (as root): install dependencies, build libLLVMOffload.so.22.1, then build and run
# ffi-tests/demo.c (lists the devices, copies memory host -> CPU device -> host and checks it) and LLVM's own
# llvm-offload-device-info-22, both against our library.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
echo "==== installing dependencies"
bash scripts/install-deps.sh
echo "==== building build/lib/libLLVMOffload.so.22.1"
make lib
echo "==== building the demo (against LLVM's OffloadAPI.h)"
make -C ffi-tests demo
echo "==== running the demo"
LD_LIBRARY_PATH="$PWD/build/lib" build/ffi-tests/demo
echo
echo "==== LLVM's llvm-offload-device-info-22, using our library"
LD_LIBRARY_PATH="$PWD/build/lib" llvm-offload-device-info-22 | head -12
