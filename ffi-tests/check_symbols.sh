#!/usr/bin/env bash
# Symbol check of build/lib/libLLVMOffload.so.22.1 against LLVM 22's library:
#  * `nm -D --defined-only`: exactly LLVM's set of ol* symbols, every one at @@VERS1.0, and nothing else
#    exported but the VERS1.0 version-definition symbol;
#  * SONAME libLLVMOffload.so.22.1;
#  * dlopen("libLLVMOffload.so") + dlvsym(h, "olInit", "VERS1.0") works (via the dev symlink).
# Prints one line per check; exits non-zero if any fails.
set -u
cd "$(dirname "$0")/.."
OURS=${OURS:-build/lib/libLLVMOffload.so.22.1}
LLVM=${LLVM:-/usr/lib/llvm-22/lib/libLLVMOffload.so.22.1}
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$OURS" | awk '{print $NF}' | sort > "$tmp/ours.all"
nm -D --defined-only "$LLVM" | awk '{print $NF}' | grep '^ol' | sort > "$tmp/llvm.ol"
grep '^ol' "$tmp/ours.all" > "$tmp/ours.ol"

n=$(wc -l < "$tmp/llvm.ol")
[ "$n" -eq 70 ] && ok "LLVM's library exports $n ol* symbols" || bad "LLVM's library exports $n ol* symbols, expected 70"
if diff -u "$tmp/llvm.ol" "$tmp/ours.ol" > "$tmp/diff"; then
  ok "our ol* symbols equal LLVM's ($(wc -l < "$tmp/ours.ol"), with versions)"
else
  bad "ol* symbols differ from LLVM's (- LLVM, + ours):"; sed -n '3,$p' "$tmp/diff" | grep '^[-+]' | head -40
fi
unversioned=$(grep '^ol' "$tmp/ours.all" | grep -v '@@VERS1.0$' || true)
[ -z "$unversioned" ] && ok "every ol* symbol is @@VERS1.0" || bad "not @@VERS1.0: $unversioned"
others=$(grep -v '^ol' "$tmp/ours.all" | grep -vx 'VERS1.0' || true)
[ -z "$others" ] && ok "nothing else exported (only the VERS1.0 version symbol)" || bad "other exported symbols: $(echo $others | head -c 2000)"
grep -qx 'VERS1.0' "$tmp/ours.all" && ok "VERS1.0 version definition present" || bad "no VERS1.0 version definition"

soname=$(readelf -d "$OURS" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libLLVMOffload.so.22.1" ] && ok "SONAME $soname" || bad "SONAME is '$soname'"
[ -e build/lib/libLLVMOffload.so ] && ok "dev symlink build/lib/libLLVMOffload.so" || bad "no build/lib/libLLVMOffload.so"

cat > "$tmp/dlvsym.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  void *h = dlopen("libLLVMOffload.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  void *v = dlvsym(h, "olInit", "VERS1.0"), *p = dlsym(h, "olInit");
  if (!v || v != p) { printf("dlvsym(olInit, VERS1.0) = %p, dlsym = %p\n", v, p); return 1; }
  typedef const void *(*fn)(void);
  if (((fn)v)() != NULL || ((fn)dlvsym(h, "olShutDown", "VERS1.0"))() != NULL) { printf("olInit/olShutDown failed\n"); return 1; }
  return 0;
}
C
if cc "$tmp/dlvsym.c" -o "$tmp/dlvsym" -ldl && LD_LIBRARY_PATH="$PWD/build/lib" "$tmp/dlvsym"; then
  ok 'dlopen("libLLVMOffload.so") + dlvsym(h, "olInit", "VERS1.0") + call'
else
  bad 'dlvsym(h, "olInit", "VERS1.0") via dlopen("libLLVMOffload.so")'
fi
exit $fail
