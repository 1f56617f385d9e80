#!/usr/bin/env bash
# Fetch NVIDIA's CUDA 12.9 header (cuda.h) and PTX assemblers (ptxas of CUDA 12.9 and 13.5) from PyPI into build/cuda-tools/,
# for the GPU-less checks of the CUDA plugin (scripts/cuda-offline-check.sh): the driver table against
# cuda.h, and every PTX our NVPTX compiler produces through the real assembler. No GPU, driver or CUDA
# toolkit install is needed; nothing here is linked into the library. Idempotent (skips when present).
#
#   bash scripts/cuda-tools.sh            # -> build/cuda-tools/{include/cuda.h,bin/ptxas,bin/ptxas13}
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${CUDA_TOOLS_DIR:-build/cuda-tools}
# Pinned: the header and assembler of CUDA 12.9 (PTX ISA <= 8.8, sm_50 .. sm_121) and the assembler of
# CUDA 13.5 (bin/ptxas13: PTX ISA 9.x, what we emit for 13.x drivers; sm_75 and newer).
RUNTIME_WHEEL=nvidia-cuda-runtime-cu12==12.9.79
NVCC_WHEEL=nvidia-cuda-nvcc-cu12==12.9.86
NVCC13_WHEEL=nvidia-cuda-nvcc==13.5.37

if [ -f "$DEST/include/cuda.h" ] && [ -x "$DEST/bin/ptxas" ] && [ -x "$DEST/bin/ptxas13" ]; then
  echo "cuda-tools: present in $DEST ($("$DEST/bin/ptxas" --version | tail -1))"
  exit 0
fi
mkdir -p "$DEST/wheels" "$DEST/include" "$DEST/bin"
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$DEST/wheels" "$RUNTIME_WHEEL" "$NVCC_WHEEL" "$NVCC13_WHEEL"
python3 - "$DEST" <<'EOF'
import glob, os, sys, zipfile
dest = sys.argv[1]
want = {
    "nvidia/cuda_runtime/include/cuda.h": "include/cuda.h",
    "nvidia/cuda_nvcc/bin/ptxas": "bin/ptxas",
    "nvidia/cu13/bin/ptxas": "bin/ptxas13",
}
for whl in glob.glob(os.path.join(dest, "wheels", "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name in want:
                out = os.path.join(dest, want[name])
                with z.open(name) as src, open(out, "wb") as dst:
                    dst.write(src.read())
                os.chmod(out, 0o755 if "/bin/" in out else 0o644)
missing = [v for v in want.values() if not os.path.exists(os.path.join(dest, v))]
if missing:
    sys.exit(f"cuda-tools: not found in the wheels: {missing}")
EOF
rm -rf "$DEST/wheels"
echo "cuda-tools: $DEST/include/cuda.h, $DEST/bin/ptxas ($("$DEST/bin/ptxas" --version | tail -1)), $DEST/bin/ptxas13 ($("$DEST/bin/ptxas13" --version | tail -1))"
