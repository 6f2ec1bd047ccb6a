#!/usr/bin/env bash
# Schemathesis against a live `chainsig serve`: the service's own OpenAPI document
# (GET /openapi.json, crates/server/openapi.json) drives generated requests to every HTTP route
# and JSON-RPC method; any 5xx answer, undocumented status, wrong content type or answer that
# does not match its schema fails the run, and the service must still answer /upcheck after it.
# Bounded: a fixed seed and at most 100 examples per operation, well under a minute on 2 cores.
#
# Usage: CHAINSIG_BIN=target/debug/chainsig bash .ci/schemathesis.sh
# The Python environment is kept under CHAINSIG_CI_CACHE (default ~/.cache/chainsig-ci).
set -euo pipefail
bin="${CHAINSIG_BIN:?set CHAINSIG_BIN to a built chainsig}"
version=4.32.5
cache="${CHAINSIG_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chainsig-ci}"
venv="$cache/schemathesis-$version"
if [ ! -x "$venv/bin/schemathesis" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi
py="$venv/bin/python"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# One throwaway key (the EIP-155 example key) as a keystore, and one client token.
mkdir "$work/keys"
printf '4646464646464646464646464646464646464646464646464646464646464646\n' >"$work/key.hex"
printf 'schemathesis\n' >"$work/keys/k.pass"
"$bin" eth keystore-encrypt --key-file "$work/key.hex" --password-file "$work/keys/k.pass" \
  --kdf scrypt-light --out "$work/keys/k.json" >/dev/null
printf 'tok-ci\n' >"$work/tokens"

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
"$bin" serve --http "127.0.0.1:$port" --keys "$work/keys" --auth-tokens "$work/tokens" \
  --chain-id 11155111 >"$work/serve.log" 2>&1 &
server_pid=$!
up() { "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$url/upcheck" 2>/dev/null; }
for _ in $(seq 300); do
  up && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.2
done

status=0
# From the scratch folder: schemathesis keeps a cache folder where it runs.
(cd "$work" && "$venv/bin/schemathesis" run "$url/openapi.json" --url "$url" \
  -H "Authorization: Bearer tok-ci" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples 100 --seed 30 --request-timeout 20) || status=$?
if ! up; then
  echo "chainsig serve stopped answering /upcheck during the run" >&2
  status=1
fi
if [ "$status" != 0 ]; then
  tail -n 50 "$work/serve.log" >&2
fi
exit "$status"
