#!/usr/bin/env bash
# Compiles every kernel module the GPU runs load, here on the CPU machine (NVRTC 13.0 for sm_90:
# H100 and H200 alike), into one cache archive for the device tool's carry, so device time goes to
# measuring rather than compiling (the ECDSA modules take a minute or more each on the device).
# The cache key covers source, options and architecture, so build this from the commit whose
# binaries are carried.
# Usage: scripts/kernel_cache.sh [ARCHIVE]   (default .carry/cmp/kcache.tar.xz)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
archive="${1:-$repo/.carry/cmp/kcache.tar.xz}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export CHAINSIG_CACHE_DIR="$dir"
# KERNEL_CACHE_SEED=DIR starts from a cache made before (CI's, say): entries are keyed by what they
# were made from, so the unchanged ones are reused and only changed kernels compile.
if [ -n "${KERNEL_CACHE_SEED:-}" ]; then cp -a "$KERNEL_CACHE_SEED"/. "$dir"/; fi
# The NVRTC tests of both GPU crates: every SM2 configuration (the sweep's ablations too, which
# CI leaves out), ECDSA, SM3, raw transactions, KEM.
CHAINSIG_NVRTC_ABLATIONS=1 bash "$repo/.ci/nvrtc-check.sh"
# The default engine's modules as the CLI opens them (the same keys; fills what the tests skip).
wheel_dir="${NVRTC_WHEEL_DIR:-${TMPDIR:-/tmp}/chainsig-nvrtc13}"
lib="$(find "$wheel_dir" -name 'libnvrtc.so.13*' | grep -v builtins | head -n1)"
(cd "$repo" && cargo build -q --release -p chainsig-bench --bin precompile)
LD_LIBRARY_PATH="$(dirname "$lib")" "${CARGO_TARGET_DIR:-$repo/target}/release/precompile" sm_90
mkdir -p "$(dirname "$archive")"
tar cJf "$archive" -C "$dir" .
echo "$(ls "$dir" | grep -c cubin) modules in $archive ($(du -h "$archive" | cut -f1))"
