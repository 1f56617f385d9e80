#!/usr/bin/env bash
# The IR tests of the JIT's named passes (tests/ir/*.ll; the lowering's transforms through `ol-lower`: tests/ir/lowering/*.ll), LLVM's way: each file's `; RUN:` lines run with
# `opt` = opt-22 loading our passes as a plugin (%plugin = offload-rs/liboffload-rs-llvm.so beside the
# library, made by `make lib`), `FileCheck` = FileCheck-22, `%s` = the file. A test passes when every RUN
# line exits 0. Usage: bash scripts/ir-tests.sh [test.ll ...]
set -uo pipefail
cd "$(dirname "$0")/.."
PLUGIN=${PLUGIN:-$PWD/build/lib/offload-rs/liboffload-rs-llvm.so}
BIN=/usr/lib/llvm-22/bin
[ -e "$PLUGIN" ] || { echo "no pass plugin at $PLUGIN (make lib)"; exit 2; }
[ -x "$BIN/opt" ] && [ -x "$BIN/FileCheck" ] || { echo "opt and FileCheck of LLVM 22 are needed ($BIN)"; exit 2; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/ir/*.ll tests/ir/lowering/*.ll)
pass=0 fail=0
for f in "${files[@]}"; do
    ok=1
    while IFS= read -r line; do
        cmd=${line#*RUN:}
        cmd=${cmd//%plugin/$PLUGIN}
        cmd=${cmd//%s/$f}
        cmd=$(sed -E "s#(^|[|]) *opt #\1 $BIN/opt #g; s#(^|[|]) *FileCheck #\1 $BIN/FileCheck #g" <<<"$cmd")
        if ! out=$(bash -o pipefail -c "$cmd" 2>&1); then
            ok=0
            echo "FAIL $f: $cmd"
            sed 's/^/    /' <<<"$out" | head -30
        fi
    done < <(grep -E '^; RUN:' "$f")
    if [ $ok = 1 ]; then pass=$((pass + 1)); echo "PASS $f"; else fail=$((fail + 1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
