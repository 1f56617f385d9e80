#!/usr/bin/env bash
# Fetch LLVM's offload/ sources for one release from Debian sid's source package (deb-src, orig tarball
# only) into build/llvm-src/<version>/ (cached: a second run does nothing). Nothing of LLVM's is committed.
#
#   bash scripts/fetch-llvm-source.sh 23     # llvm-toolchain-23 1:23.1.1-2 -> build/llvm-src/23.1.1
#   bash scripts/fetch-llvm-source.sh 22     # llvm-toolchain-22 1:22.1.8-1 -> build/llvm-src/22.1.8
#
# apt runs with a private configuration under build/apt (its own sources list and lists directory), so the
# machine's apt setup is not touched. The .dsc may 404 and apt exit non-zero after the tarball arrived:
# the tarball's sha256 is checked against sid's Sources index instead of trusting apt's exit status.
# Prints the source root (the directory holding offload/) on stdout; exits 3 when it cannot be fetched.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  23) PKG=llvm-toolchain-23 VER=1:23.1.1-2 UP=23.1.1 ;;
  22) PKG=llvm-toolchain-22 VER=1:22.1.8-1 UP=22.1.8 ;;
  *) echo "usage: $0 22|23" >&2; exit 2 ;;
esac
DEST=$ROOT/build/llvm-src/$UP
if [ -f "$DEST/offload/unittests/OffloadAPI/CMakeLists.txt" ]; then echo "$DEST"; exit 0; fi
A=$ROOT/build/apt
mkdir -p "$A/lists/partial" "$A/dl" "$A/parts"
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR sid main" > "$A/sources.list"
APT=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=$A/parts" -o "Dir::State::Lists=$A/lists"
     -o "Dir::Cache=$A/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
mkdir -p "$A/cache/archives/partial"
TARBALL=${PKG}_${UP}.orig.tar.xz
if [ ! -f "$A/dl/$TARBALL" ]; then
  apt-get "${APT[@]}" -qq update >&2 || { echo "SKIP: apt-get update of Debian sid's deb-src failed (offline?)" >&2; exit 3; }
  (cd "$A/dl" && apt-get "${APT[@]}" -qq source --download-only "$PKG=$VER" >&2) || true
fi
want=$(apt-cache "${APT[@]}" showsrc "$PKG" 2>/dev/null | awk -v f="$TARBALL" '$3==f && length($1)==64 {print $1; exit}' || true)
[ -f "$A/dl/$TARBALL" ] || { echo "SKIP: $TARBALL could not be downloaded" >&2; exit 3; }
got=$(sha256sum "$A/dl/$TARBALL" | cut -d' ' -f1)
if [ -z "$want" ] || [ "$want" != "$got" ]; then
  echo "SKIP: $TARBALL sha256 $got does not match sid's Sources index ('$want')" >&2; exit 3
fi
rm -rf "$DEST.tmp"; mkdir -p "$DEST.tmp"
tar -xJf "$A/dl/$TARBALL" -C "$DEST.tmp" --strip-components=1 --wildcards '*/offload/*' >&2
rm -rf "$DEST"; mv "$DEST.tmp" "$DEST"
echo "$DEST"
