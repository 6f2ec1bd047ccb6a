#!/usr/bin/env bash
# Builds the library (release, or CHAINSIG_PROFILE=debug) and runs the Go binding's tests, as CI does (.ci/run calls this).
# Offline: the Go dependencies are Debian's packaged sources under /usr/share/gocode (GOPATH
# mode, set up by setup.sh), so no module proxy is contacted.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
cd "$REPO/bindings/go"
go vet ./...
go test -count=1 -v -timeout 20m ./...
