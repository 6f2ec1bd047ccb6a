#!/usr/bin/env bash
# Builds libchainsig (release, or CHAINSIG_PROFILE=debug) and runs the node pipeline with the
# arguments given, e.g.  examples/node-pipeline/run.sh --alg sm2 --txs 20000 --block 2000
# With --ci alone: tiny runs of the three algorithms (CI: every verdict checked, in seconds).
# Offline, as bindings/go/test.sh: GOPATH mode over Debian's packaged Go sources (it installs
# them when missing), no module proxy. NODE_PIPELINE_OUT=FILE builds the binary there instead
# of running it (with the library beside it, it runs on a machine without Go).
set -euo pipefail
source "$(dirname "$0")/../../bindings/go/setup.sh"
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
