#!/usr/bin/env bash
# The CLI's readers on hostile and ordinary input, old binary against new in one run (figures in
# BENCHMARKS.md and RELIABILITY.md):
#   1. a file of one 300 MB line followed by four records: `verify FILE` and `verify < FILE`, wall
#      time and peak resident memory (GNU time), the long line's answer;
#   2. `eth sign-bulk` on 60,000 user lines (EIP-1559 transfers), one thread, three interleaved
#      rounds, outputs compared byte for byte.
# Usage: OLD=path/to/old/chainsig NEW=target/release/chainsig scripts/cli_input_checks.sh
set -euo pipefail
OLD=${OLD:?the old binary}
NEW=${NEW:-target/release/chainsig}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$NEW" gen --alg secp256k1 --count 4 --seed 3 --out "$DIR/four.jsonl"
python3 - "$DIR" <<'PY'
import json, sys
d = sys.argv[1]
with open(d + '/long.jsonl', 'wb') as f:
    f.write(b'{"x":"' + b'a' * (300 << 20) + b'"}\n')
    f.write(open(d + '/four.jsonl', 'rb').read())
with open(d + '/lines.jsonl', 'w') as f:
    for i in range(60000):
        f.write(json.dumps({'to': '0x' + '35' * 20, 'gas': 21000, 'maxFeePerGas': '0x64',
                            'maxPriorityFeePerGas': '0x1', 'value': hex(i + 1)}) + '\n')
PY
for v in old new; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    /usr/bin/time -o "$DIR/time" -f "$v verify FILE: %e s, %M KB" \
        "$bin" verify --backend cpu "$DIR/long.jsonl" >"$DIR/$v.out" 2>/dev/null
    cat "$DIR/time"
    /usr/bin/time -o "$DIR/time" -f "$v verify < FILE: %e s, %M KB" \
        "$bin" verify --backend cpu <"$DIR/long.jsonl" >/dev/null 2>&1
    cat "$DIR/time"
    echo "$v, line 1: $(head -n 1 "$DIR/$v.out" | cut -c 1-120)"
done
echo "test test test test test test test test test test test junk" >"$DIR/mnemonic"
for round in 1 2 3; do
    for v in old new; do
        bin=$OLD; [ $v = new ] && bin=$NEW
        rm -f "$DIR/signed-$v.jsonl"
        echo "$v: $("$bin" eth sign-bulk --mnemonic-file "$DIR/mnemonic" --chain-id 1337 --threads 1 \
            --out "$DIR/signed-$v.jsonl" "$DIR/lines.jsonl" 2>&1 | tail -1)"
    done
done
cmp "$DIR/signed-old.jsonl" "$DIR/signed-new.jsonl" && echo "sign-bulk: the outputs are identical"
