# Sourced by bindings/go/test.sh and examples/node-pipeline/run.sh: what a Go program over the
# binding needs, offline. Installs Go and the Go libraries from Debian when missing (GOPATH mode
# over /usr/share/gocode, so no module proxy is contacted), builds libchainsig (release, or
# CHAINSIG_PROFILE=debug; nothing when CHAINSIG_LIB_BUILT=1, as in CI whose test build made it),
# and makes a GOPATH of our own with the repository at its import path, then Debian's.
# Sets ROOT, TARGET, PROFILE, GOPATH_DIR and REPO (the repository inside GOPATH_DIR).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROFILE="${CHAINSIG_PROFILE:-release}"

if ! command -v go >/dev/null || [ ! -d /usr/share/gocode/src/github.com/tjfoc/gmsm ] \
  || [ ! -d /usr/share/gocode/src/github.com/btcsuite/btcd/btcec ] \
  || [ ! -d /usr/share/gocode/src/golang.org/x/crypto/sha3 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go \
    golang-github-tjfoc-gmsm-dev golang-github-btcsuite-btcd-btcec-dev golang-golang-x-crypto-dev
fi

if [ "${CHAINSIG_LIB_BUILT:-0}" = 1 ]; then
  :
elif [ "$PROFILE" = release ]; then
  (cd "$ROOT" && cargo build --release -p chainsig-capi)
else
  (cd "$ROOT" && cargo build -p chainsig-capi)
fi

GOPATH_DIR="$(mktemp -d)"
trap 'rm -rf "$GOPATH_DIR"' EXIT
REPO="$GOPATH_DIR/src/github.com/chainsig/chainsig"
mkdir -p "$REPO/bindings" "$REPO/examples"
ln -s "$ROOT/bindings/go" "$REPO/bindings/go"
ln -s "$ROOT/examples/node-pipeline" "$REPO/examples/node-pipeline"
export GOPATH="$GOPATH_DIR:/usr/share/gocode" GO111MODULE=off GOPROXY=off
export CGO_ENABLED=1 CGO_LDFLAGS="-L$TARGET/$PROFILE" \
  LD_LIBRARY_PATH="$TARGET/$PROFILE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
