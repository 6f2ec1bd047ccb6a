#!/usr/bin/env bash
# Builds libchainsig (release, or CHAINSIG_PROFILE=debug) and runs the node pipeline with the
# arguments given, e.g.  examples/node-pipeline/run.sh --alg sm2 --txs 20000 --block 2000
# With --ci alone: tiny runs of the three algorithms (CI: every verdict checked, in seconds).
# Offline, as bindings/go/test.sh: GOPATH mode over Debian's packaged Go sources (it installs
# them when missing), no module proxy. NODE_PIPELINE_OUT=FILE builds the binary there instead
# of running it (with the library beside it, it runs on a machine without Go).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROFILE="${CHAINSIG_PROFILE:-release}"

if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/tjfoc/gmsm ] \
  || [ ! -d /usr/share/gocode/src/github.com/btcsuite/btcd/btcec ] \
  || [ ! -d /usr/share/gocode/src/golang.org/x/crypto/sha3 ]; then
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

# A GOPATH of our own holding the binding and this program at their import paths, then Debian's.
GOPATH_DIR="$(mktemp -d)"
trap 'rm -rf "$GOPATH_DIR"' EXIT
REPO="$GOPATH_DIR/src/github.com/chainsig/chainsig"
mkdir -p "$REPO/bindings" "$REPO/examples"
ln -s "$ROOT/bindings/go" "$REPO/bindings/go"
ln -s "$ROOT/examples/node-pipeline" "$REPO/examples/node-pipeline"
export GOPATH="$GOPATH_DIR:/usr/share/gocode" GO111MODULE=off GOPROXY=off
export CGO_ENABLED=1 CGO_LDFLAGS="-L$TARGET/$PROFILE" LD_LIBRARY_PATH="$TARGET/$PROFILE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$REPO/examples/node-pipeline"
go vet .
go test -count=1 .
if [ -n "${NODE_PIPELINE_OUT:-}" ]; then
  # $ORIGIN: the binary finds libchainsig.so in its own folder.
  go build -ldflags '-r $ORIGIN' -o "$NODE_PIPELINE_OUT" .
  exit 0
fi
go build -o "$GOPATH_DIR/node-pipeline" .
if [ "$*" = --ci ]; then
  for alg in sm2 secp256k1 p256; do
    "$GOPATH_DIR/node-pipeline" --alg "$alg" --txs 192 --block 48 --exec-us 200 --bad 0.1
  done
else
  "$GOPATH_DIR/node-pipeline" "$@"
fi
