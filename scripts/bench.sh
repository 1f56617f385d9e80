#!/usr/bin/env bash
# Call-cost benchmark of our libLLVMOffload.so.22.1 against LLVM 22's (bench/offload_calls.c). Not part of
# scripts/test.sh: timings belong in benchmarks, not tests. Usage: bash scripts/bench.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ -e build/lib/libLLVMOffload.so.22.1 ] || make lib
mkdir -p build/bench
cc -std=c11 -O2 -Wall -Wextra -I/usr/lib/llvm-22/include/offload -include stdbool.h bench/offload_calls.c \
  -o build/bench/offload_calls -ldl
build/bench/offload_calls "$PWD/build/lib/libLLVMOffload.so.22.1" /usr/lib/llvm-22/lib/libLLVMOffload.so.22.1 "${1:-1000000}"
