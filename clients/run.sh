#!/usr/bin/env bash
# The client suites: web3.py / eth-account (python/) and ethers v6 / viem (js/) against a real
# `chainsig serve` on loopback. Exits non-zero if any test fails or the server cannot start.
#
#   CHAINSIG_BIN=path/to/chainsig clients/run.sh   # test that binary, build nothing
#   clients/run.sh                                 # cargo build -p chainsig-cli (debug) first
#
# Installs the pinned Python packages into clients/python/.venv and the locked npm packages into
# clients/js/node_modules when they are missing or out of date (needs PyPI and npm the first
# time), or under CHAINSIG_CLIENTS_CACHE when it names a folder. CHAINSIG_CHAIN_ID (default 11155111) sets the served chain; CHAINSIG_SEED and
# CHAINSIG_RANDOM_COUNT (default 1000 per kind) steer the random cross-checks.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
export CHAINSIG_CHAIN_ID="${CHAINSIG_CHAIN_ID:-11155111}"

if [ -n "${CHAINSIG_BIN:-}" ]; then
  bin="$CHAINSIG_BIN"
else
  echo "== cargo build -p chainsig-cli"
  (cd "$root" && cargo build --quiet -p chainsig-cli)
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/chainsig"
fi
[ -x "$bin" ] || { echo "no chainsig binary at $bin" >&2; exit 2; }

# Dependencies, reinstalled only when the pinned lists change (a copy of each list is kept
# beside what it installed). With CHAINSIG_CLIENTS_CACHE=DIR (CI sets it) they live outside the
# checkout, one set per version of each list, so a fresh clone installs nothing while the lists
# are unchanged; clients/js/node_modules is then a link into DIR.
if [ -n "${CHAINSIG_CLIENTS_CACHE:-}" ] && [ ! -d "$here/js/node_modules" -o -L "$here/js/node_modules" ]; then
  venv="$CHAINSIG_CLIENTS_CACHE/venv-$(sha256sum "$here/python/requirements.txt" | cut -c1-16)"
  js="$CHAINSIG_CLIENTS_CACHE/js-$(sha256sum "$here/js/package-lock.json" | cut -c1-16)"
  mkdir -p "$js"
  cp "$here/js/package.json" "$here/js/package-lock.json" "$js/"
else
  venv="$here/python/.venv"
  js="$here/js"
fi
py="$venv/bin/python"
if ! cmp -s "$here/python/requirements.txt" "$venv/requirements.installed" 2>/dev/null; then
  echo "== pip install -r clients/python/requirements.txt"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$py" -m pip install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
  cp "$here/python/requirements.txt" "$venv/requirements.installed"
fi
if ! cmp -s "$here/js/package-lock.json" "$js/node_modules/.lock.installed" 2>/dev/null; then
  echo "== npm ci (clients/js)"
  (cd "$js" && npm ci --silent --no-audit --no-fund --prefer-offline)
  cp "$here/js/package-lock.json" "$js/node_modules/.lock.installed"
fi
if [ "$js" != "$here/js" ]; then
  ln -sfn "$js/node_modules" "$here/js/node_modules"
fi

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

# Two test keys (fixed, see python/chainsig_clients.py) as keystores with their passwords.
"$py" "$here/python/chainsig_clients.py" write-keys "$work/plain"
mkdir "$work/keys"
for key in "$work"/plain/*.key; do
  name="$(basename "$key" .key)"
  "$bin" eth keystore-encrypt --key-file "$key" --password-file "$work/plain/$name.pass" \
    --kdf scrypt-light --out "$work/keys/$name.json" >/dev/null
  cp "$work/plain/$name.pass" "$work/keys/$name.pass"
done
rm -rf "$work/plain"

# start_server LOG [ARGS...]: chainsig serve on a free loopback port with the test keys; sets
# CHAINSIG_URL and server_pid once /upcheck answers.
start_server() {
  local log="$1"
  shift
  local port
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  export CHAINSIG_URL="http://127.0.0.1:$port"
  echo "== chainsig serve on $CHAINSIG_URL, chain $CHAINSIG_CHAIN_ID $* ($bin)"
  "$bin" serve --http "127.0.0.1:$port" --keys "$work/keys" --chain-id "$CHAINSIG_CHAIN_ID" "$@" \
    >"$log" 2>&1 &
  server_pid=$!
  if ! "$py" - "$CHAINSIG_URL/upcheck" "$server_pid" <<'PY'
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 60
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("chainsig serve exited before answering /upcheck")
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            if answer.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit("chainsig serve did not answer /upcheck within 60 s")
PY
  then
    cat "$log" >&2
    exit 1
  fi
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

start_server "$work/server.log"
failed=0
echo "== python: web3.py and eth-account"
(cd "$here/python" && "$py" -m pytest -q -p no:cacheprovider) || failed=1

echo "== js: ethers v6 and viem"
export CHAINSIG_FIXTURES="$work/fixtures.json"
if (cd "$here/python" && "$py" write_fixtures.py "$CHAINSIG_FIXTURES"); then
  (cd "$here/js" && node --test test/*.test.js) || failed=1
else
  failed=1
fi

stop_server

# Where the server offers eth_signTransaction's answer as the bare raw hex (what ethers and viem
# declare they return), the JavaScript suite runs again against that mode.
if "$bin" serve --help 2>/dev/null | grep -q -- '--sign-tx-result'; then
  start_server "$work/server-raw.log" --sign-tx-result raw
  (cd "$here/js" && CHAINSIG_SIGN_TX_RESULT=raw node --test test/*.test.js) || failed=1
  stop_server
fi

if [ "$failed" -ne 0 ]; then
  echo "== client suites FAILED; last lines of the server's log:" >&2
  tail -n 40 "$work"/server*.log >&2
  exit 1
fi
echo "== client suites passed"
