#!/usr/bin/env bash
# Generate include/offload-23/OffloadAPI.h, the header of libLLVMOffload.so.23.1, the way LLVM does:
# offload-tblgen -gen-api on LLVM 23.1.1's offload/liboffload/API/*.td, formatted with clang-format-22
# --style=LLVM. offload-tblgen is built from LLVM 22.1.8's offload/tools/offload-tblgen (its APIGen is the
# same in 23.1.1; only PrintGen.cpp changed, which this header does not use) against llvm-22-dev's static
# libLLVMTableGen/Support/Demangle, into build/offload-tblgen (cached). The sources come from
# scripts/fetch-llvm-source.sh (Debian sid's orig tarballs, cached under build/llvm-src).
#
#   bash scripts/gen-header-23.sh          # rewrite include/offload-23/OffloadAPI.h
#   bash scripts/gen-header-23.sh --check  # exit 1 if the committed header differs (SKIP, exit 0, offline)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LLVM_CONFIG=${LLVM_CONFIG:-llvm-config-22}
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-22}
check=0; [ "${1:-}" = "--check" ] && check=1
skip() { echo "SKIP: $*"; exit 0; }
S22=$(bash "$ROOT/scripts/fetch-llvm-source.sh" 22) || { [ $check = 1 ] && skip "LLVM 22.1.8 source unavailable"; exit 3; }
S23=$(bash "$ROOT/scripts/fetch-llvm-source.sh" 23) || { [ $check = 1 ] && skip "LLVM 23.1.1 source unavailable"; exit 3; }
command -v "$CLANG_FORMAT" >/dev/null || { [ $check = 1 ] && skip "$CLANG_FORMAT missing"; echo "$CLANG_FORMAT missing (apt-get install clang-format-22)" >&2; exit 2; }
B=$ROOT/build/offload-tblgen
TOOL=$B/offload-tblgen
TG=$S22/offload/tools/offload-tblgen
mkdir -p "$B"
if [ ! -x "$TOOL" ]; then
  LIBDIR=$($LLVM_CONFIG --libdir)
  CXXFLAGS="$($LLVM_CONFIG --cxxflags) -O1 -w"
  objs=()
  for f in "$TG"/*.cpp; do
    o=$B/$(basename "$f" .cpp).o; objs+=("$o")
    c++ $CXXFLAGS -c "$f" -o "$o" &
  done
  wait
  c++ -o "$TOOL.tmp" "${objs[@]}" "$LIBDIR/libLLVMTableGen.a" "$LIBDIR/libLLVMSupport.a" "$LIBDIR/libLLVMDemangle.a" \
    $($LLVM_CONFIG --system-libs --link-static) -lpthread
  mv "$TOOL.tmp" "$TOOL"
fi
API=$S23/offload/liboffload/API
out=$B/OffloadAPI.h.23
"$TOOL" -gen-api -I "$API" "$API/OffloadAPI.td" -o "$out.gen"
"$CLANG_FORMAT" --style=LLVM "$out.gen" > "$out"
DEST=$ROOT/include/offload-23/OffloadAPI.h
if [ $check = 1 ]; then
  if cmp -s "$out" "$DEST"; then echo "ok   include/offload-23/OffloadAPI.h is offload-tblgen's output for 23.1.1"; exit 0; fi
  echo "FAIL include/offload-23/OffloadAPI.h differs from offload-tblgen's output ($out)"; diff -u "$DEST" "$out" | head -20; exit 1
fi
mkdir -p "$(dirname "$DEST")"
cp "$out" "$DEST"
echo "wrote $DEST"
