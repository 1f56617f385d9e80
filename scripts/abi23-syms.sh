#!/usr/bin/env bash
# The objcopy --redefine-syms list that turns the offload-rs staticlib into the 23.1 ABI (src/api/v23):
# each `offload_rs_v23_olX` becomes `olX`, and a 22 `olX` it replaces becomes `offload_rs_v22_olX`.
#   bash scripts/abi23-syms.sh target/release/liboffload_rs.a > build/abi23.syms
set -euo pipefail
A=$1
defined=$(nm --defined-only "$A" 2>/dev/null | awk '$2 ~ /^[TtDd]$/ {print $3}' | sort -u)
v23=$(grep -E '^offload_rs_v23_ol[A-Za-z]+$' <<<"$defined" || true)
[ -n "$v23" ] || { echo "abi23-syms: no offload_rs_v23_* symbols in $A" >&2; exit 1; }
for s in $v23; do
  name=${s#offload_rs_v23_}
  if grep -qx "$name" <<<"$defined"; then echo "$name offload_rs_v22_$name"; fi
  echo "$s $name"
done
