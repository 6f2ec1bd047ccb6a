#!/usr/bin/env bash
# Signing in lanes against libsecp256k1 in one run (BENCHMARKS.md, "`eth sign` and the service's
# gRPC `SignStream` in lanes"): `chainsig eth sign` on a file of EIP-1559 transactions and the gRPC
# `SignStream` load test, each with CHAINSIG_CPU_LANES=off and on, rounds interleaved; checks that
# the two `eth sign` outputs are byte-identical.
# Usage: scripts/sign-lanes.sh [LINES] [ROUNDS]   (defaults 100000 and 2; release build first)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CHAINSIG:-$repo/target/release/chainsig}"
lines="${1:-100000}"
rounds="${2:-2}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python3 - "$lines" > "$dir/in.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"chainId": 1337, "nonce": i, "gas": 21000, "maxFeePerGas": hex(10**9 + i),
                      "maxPriorityFeePerGas": "0x1",
                      "to": "0x000000000000000000000000000000000000aaaa", "value": hex(i * 12345)}))
PY
printf '0x%s\n' "$(printf '46%.0s' $(seq 32))" > "$dir/key.hex"
grep -m1 'model name' /proc/cpuinfo; uptime
for round in $(seq "$rounds"); do
  for mode in off on; do
    start=$(date +%s.%N)
    CHAINSIG_CPU_LANES=$mode "$bin" eth sign --key-file "$dir/key.hex" --chain-id 1337 \
      "$dir/in.jsonl" > "$dir/out-$mode.jsonl"
    end=$(date +%s.%N)
    echo "eth sign, round $round, lanes $mode: $(echo "$lines / ($end - $start)" | bc) tx/s"
  done
  cmp "$dir/out-off.jsonl" "$dir/out-on.jsonl" && echo "  outputs identical"
done
for round in $(seq "$rounds"); do
  for mode in off on; do
    echo "SignStream, round $round, lanes $mode:"
    CHAINSIG_CPU_LANES=$mode "$bin" loadtest --scenario grpc-sign --connections 4 \
      --requests 200000 --duration-secs 30 | grep -E 'sent|requests/s|latency'
  done
done
uptime
