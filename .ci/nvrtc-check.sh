#!/usr/bin/env bash
# Compiles every chainsig-cuda and chainsig-ctru-cuda kernel with NVRTC 13.0 for sm_90 and fails on
# register spills.
# Needs no GPU: installs the nvidia-cuda-nvrtc wheel into a private folder and points the loader at it.
# Usage: .ci/nvrtc-check.sh   (from anywhere; CHAINSIG_CACHE_DIR may name a cache to fill)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
wheel_dir="${NVRTC_WHEEL_DIR:-${TMPDIR:-/tmp}/chainsig-nvrtc13}"
if ! find "$wheel_dir" -name 'libnvrtc.so*' 2>/dev/null | grep -q .; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$wheel_dir" "nvidia-cuda-nvrtc==13.0.*"
fi
lib="$(find "$wheel_dir" -name 'libnvrtc.so.13*' | grep -v builtins | head -n1)"
if [ -z "$lib" ]; then
  echo "nvrtc-check: libnvrtc.so.13 not found in $wheel_dir" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CHAINSIG_REQUIRE_NVRTC=1
# A fresh cache unless one is named, so the kernels are really compiled.
if [ -z "${CHAINSIG_CACHE_DIR:-}" ]; then
  CHAINSIG_CACHE_DIR="$(mktemp -d)"
  export CHAINSIG_CACHE_DIR
  trap 'rm -rf "$CHAINSIG_CACHE_DIR"' EXIT
fi
cd "$repo"
cargo test -p chainsig-cuda --test nvrtc -- --nocapture
cargo test -p chainsig-ctru-cuda --test nvrtc -- --nocapture
