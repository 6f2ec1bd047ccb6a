#!/usr/bin/env bash
# Builds the library (release, or CHAINSIG_PROFILE=debug) and runs the Go binding's tests, as CI does (.ci/run calls this).
# Offline: the Go dependencies are Debian's packaged sources under /usr/share/gocode (GOPATH
# mode; the packages below), so no module proxy is contacted.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# release (the default) or debug: CI links the debug library its test build already made.
PROFILE="${CHAINSIG_PROFILE:-release}"

if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/tjfoc/gmsm ] \
  || [ ! -d /usr/share/gocode/src/github.com/btcsuite/btcd/btcec ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go \
    golang-github-tjfoc-gmsm-dev golang-github-btcsuite-btcd-btcec-dev golang-golang-x-crypto-dev
fi

# CHAINSIG_LIB_BUILT=1: the library is built already (CI's test build makes it).
if [ "${CHAINSIG_LIB_BUILT:-0}" = 1 ]; then
  :
elif [ "$PROFILE" = release ]; then
  (cd "$ROOT" && cargo build --release -p chainsig-capi)
else
  (cd "$ROOT" && cargo build -p chainsig-capi)
fi

# A GOPATH of our own holding this package at its import path, then Debian's.
GOPATH_DIR="$(mktemp -d)"
trap 'rm -rf "$GOPATH_DIR"' EXIT
PKG="$GOPATH_DIR/src/github.com/chainsig/chainsig/bindings"
mkdir -p "$PKG"
ln -s "$ROOT/bindings/go" "$PKG/go"
export GOPATH="$GOPATH_DIR:/usr/share/gocode" GO111MODULE=off GOPROXY=off
export CGO_ENABLED=1 CGO_LDFLAGS="-L$TARGET/$PROFILE" LD_LIBRARY_PATH="$TARGET/$PROFILE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$PKG/go"
go vet ./...
go test -count=1 -v -timeout 20m ./...
