#!/usr/bin/env bash
# Compiles every chainsig-cuda and chainsig-ctru-cuda kernel module a default backend loads with
# NVRTC 13.0 for sm_90 and fails on register spills; CHAINSIG_NVRTC_ABLATIONS=1 adds the SM2
# configurations only the benchmark sweep loads (scripts/kernel_cache.sh sets it).
# Needs no GPU: installs the nvidia-cuda-nvrtc wheel into a private folder and points the loader at it.
# Usage: .ci/nvrtc-check.sh   (from anywhere; CHAINSIG_CACHE_DIR may name a cache to fill, or
# CHAINSIG_NVRTC_CACHE_ROOT a folder holding one cache per NVRTC version, as .ci/run does)
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
# A fresh cache unless one is named, so the kernels are really compiled. A cache's key covers the
# source, the options and the architecture but not the NVRTC version, so a kept cache lives in a
# folder named for the version of the wheel that filled it; the spill budgets are checked against
# the cached ptxas reports on every run.
if [ -z "${CHAINSIG_CACHE_DIR:-}" ] && [ -n "${CHAINSIG_NVRTC_CACHE_ROOT:-}" ]; then
  version="$(find "$wheel_dir" -maxdepth 1 -name 'nvidia_cuda_nvrtc-*.dist-info' | head -n1)"
  version="${version##*/nvidia_cuda_nvrtc-}"
  version="${version%.dist-info}"
  if [ -n "$version" ]; then
    export CHAINSIG_CACHE_DIR="$CHAINSIG_NVRTC_CACHE_ROOT/nvrtc-$version"
    echo "nvrtc-check: NVRTC $version, kernels cached in $CHAINSIG_CACHE_DIR"
  fi
fi
if [ -z "${CHAINSIG_CACHE_DIR:-}" ]; then
  CHAINSIG_CACHE_DIR="$(mktemp -d)"
  export CHAINSIG_CACHE_DIR
  trap 'rm -rf "$CHAINSIG_CACHE_DIR"' EXIT
fi
cd "$repo"
# --workspace, as the test build: the same features, so nothing is compiled again. Only the two
# crates' NVRTC tests run (module nvrtc of their integration-test binaries).
cargo test --workspace --test cuda --test ctru_cuda -- nvrtc:: --nocapture
