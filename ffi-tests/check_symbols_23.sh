#!/usr/bin/env bash
# Symbol check of build/lib23/libLLVMOffload.so.23.1 (the LLVM 23.1 ABI, src/api/v23):
#  * `nm -D --defined-only`: exactly the OL_APIEXPORT functions of include/offload-23/OffloadAPI.h (82: 41 +
#    41 WithCodeLoc twins), every one at @@VERS1.0, nothing else exported but the VERS1.0 symbol;
#  * SONAME libLLVMOffload.so.23.1; the dev link build/lib23/libLLVMOffload.so and the helper beside it;
#  * dlopen("libLLVMOffload.so") from build/lib23 + dlvsym(h, "olInit", "VERS1.0") called with NULL
#    (23's olInit(const ol_init_args_t *)), then olShutDown.
# Prints one line per check; exits non-zero if any fails.
set -u
cd "$(dirname "$0")/.."
OURS=${OURS:-build/lib23/libLLVMOffload.so.23.1}
HDR=include/offload-23/OffloadAPI.h
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$OURS" | awk '{print $NF}' | sort > "$tmp/ours.all"
grep '^ol' "$tmp/ours.all" > "$tmp/ours.ol"
python3 - "$HDR" > "$tmp/hdr.ol" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for n in sorted(set(re.findall(r'OL_APIEXPORT\s+ol_result_t\s+OL_APICALL\s+(ol\w+)\s*\(', text))):
    print(n + "@@VERS1.0")
PY
n=$(wc -l < "$tmp/hdr.ol")
[ "$n" -eq 82 ] && ok "the 23.1 header declares $n functions" || bad "the 23.1 header declares $n functions, expected 82"
if diff -u "$tmp/hdr.ol" "$tmp/ours.ol" > "$tmp/diff"; then
  ok "our ol* symbols equal the header's ($(wc -l < "$tmp/ours.ol"), all @@VERS1.0)"
else
  bad "ol* symbols differ from the header's (- header, + ours):"; sed -n '3,$p' "$tmp/diff" | grep '^[-+]' | head -40
fi
others=$(grep -v '^ol' "$tmp/ours.all" | grep -vx 'VERS1.0' || true)
[ -z "$others" ] && ok "nothing else exported (only the VERS1.0 version symbol)" || bad "other exported symbols: $(echo $others | head -c 2000)"
soname=$(readelf -d "$OURS" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libLLVMOffload.so.23.1" ] && ok "SONAME $soname" || bad "SONAME is '$soname'"
[ -e build/lib23/libLLVMOffload.so ] && ok "dev symlink build/lib23/libLLVMOffload.so" || bad "no build/lib23/libLLVMOffload.so"
[ -x build/lib23/offload-rs/offload-rs-jit ] && ok "compile helper build/lib23/offload-rs/offload-rs-jit" || bad "no compile helper beside the 23 library"

cat > "$tmp/dlvsym.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  void *h = dlopen("libLLVMOffload.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  void *v = dlvsym(h, "olInit", "VERS1.0"), *p = dlsym(h, "olInit");
  if (!v || v != p) { printf("dlvsym(olInit, VERS1.0) = %p, dlsym = %p\n", v, p); return 1; }
  typedef const void *(*init_fn)(const void *);
  typedef const void *(*fn)(void);
  if (((init_fn)v)(NULL) != NULL || ((fn)dlvsym(h, "olShutDown", "VERS1.0"))() != NULL) { printf("olInit(NULL)/olShutDown failed\n"); return 1; }
  return 0;
}
C
if cc "$tmp/dlvsym.c" -o "$tmp/dlvsym" -ldl && LD_LIBRARY_PATH="$PWD/build/lib23" "$tmp/dlvsym"; then
  ok 'dlopen("libLLVMOffload.so") from build/lib23 + dlvsym(h, "olInit", "VERS1.0") + olInit(NULL)'
else
  bad 'dlvsym(h, "olInit", "VERS1.0") via dlopen("libLLVMOffload.so") from build/lib23'
fi
exit $fail
