#!/usr/bin/env bash
# Install what offload-rs needs to build and test (idempotent; as root on Debian/Ubuntu).
# Fast path: if every package is already installed (dpkg -s) and cargo/clippy/rustfmt exist, do nothing.
set -euo pipefail

PKGS=(llvm-22-dev clang-22 lld-22 libclang-rt-22-dev liboffload-22-dev pocl-opencl-icd ocl-icd-opencl-dev valgrind gdb g++ make pkg-config
  libgtest-dev clang-format-22 libzstd-dev)
# (libgtest-dev: LLVM's conformance suites, scripts/llvm-unittests.sh; clang-format-22 and libzstd-dev:
# offload-tblgen and the 23.1 header, scripts/gen-header-23.sh)

missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages and not root: run 'sudo bash scripts/install-deps.sh'" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Rust (edition 2024 needs a recent toolchain: Debian's cargo is too old) with clippy and rustfmt.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: no Rust toolchain (cargo) on PATH: this project needs the machine's Rust toolchain (1.85+)" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
  cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
fi
echo "install-deps: all dependencies present"
