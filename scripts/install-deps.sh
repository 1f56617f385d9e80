#!/usr/bin/env bash
# Install what offload-rs needs to build and test (idempotent; as root on Debian/Ubuntu).
# Fast path: if every package is already installed (dpkg -s) and cargo/clippy/rustfmt exist, do nothing.
set -euo pipefail

PKGS=(llvm-22-dev clang-22 lld-22 liboffload-22-dev pocl-opencl-icd ocl-icd-opencl-dev valgrind g++ make pkg-config)

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
  # LLVM 22 comes from apt.llvm.org on Debian 12 / Ubuntu: add that repository if apt has no candidate.
  if ! apt-cache policy llvm-22-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    . /etc/os-release
    codename=${VERSION_CODENAME:?}
    apt-get install -y --no-install-recommends ca-certificates curl
    curl -fsSL https://apt.llvm.org/llvm-snapshot.gpg.key -o /usr/share/keyrings/apt.llvm.org.asc
    echo "deb [signed-by=/usr/share/keyrings/apt.llvm.org.asc] http://apt.llvm.org/$codename/ llvm-toolchain-$codename-22 main" \
      > /etc/apt/sources.list.d/apt.llvm.org-22.list
    apt-get update
  fi
  apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Rust (edition 2024 needs a recent toolchain: Debian's cargo is too old) with clippy and rustfmt.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: installing the Rust toolchain with rustup"
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy,rustfmt
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v rustup >/dev/null 2>&1; then
  cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
  cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
fi
echo "install-deps: all dependencies present"
