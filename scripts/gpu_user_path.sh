#!/usr/bin/env bash
# The user's path to the GPU, timed and checked on a GPU machine: `chainsig verify --backend cuda`
# on JSON Lines files as a user runs it, beside the CPU backend's verdicts and the engine's own
# figure.
#
# For each data set — SM2 with 100-byte messages (SM3 and Z_A on the GPU) and secp256k1 (64-byte
# messages, Keccak-256 on the host) — it
#   1. generates N records with `chainsig gen` (a tenth corrupted; kept in $DIR between runs);
#   2. runs `chainsig verify --backend cuda --stats` once to warm up (kernels from the NVRTC cache,
#      buffers sized, the file in the page cache), then times it under /usr/bin/time (user and
#      system CPU seconds), writing its verdict lines and stage breakdown to $OUT;
#   3. runs `chainsig verify --backend cpu` on the same file and requires the verdict lines to be
#      identical (cmp), and the generator's `expect` verdicts to agree (compare_verdicts.py when
#      python3 is present);
#   4. runs `chainsig bench --from-file` with --backend cuda: the user path beside the backend
#      alone on the same records, every run's verdicts checked against the backend's.
#
# Usage (from the repository root, the release binary and the NVRTC cache built on the build
# machine and carried as for h200_check.sh), one data set a call to stay inside ten minutes:
#   CHAINSIG=.carry/chainsig CHAINSIG_CACHE_DIR=$PWD/.carry/kcache scripts/gpu_user_path.sh sm2
#   CHAINSIG=.carry/chainsig CHAINSIG_CACHE_DIR=$PWD/.carry/kcache scripts/gpu_user_path.sh secp256k1
# Environment: CHAINSIG (default target/release/chainsig), N (records, default 1000000),
# DIR (where the generated files go, default /tmp/chainsig-user-path), OUT (reports, default
# $DIR/out), REPEATS (bench --from-file runs after its warm-up, default 3).
set -euo pipefail

CHAINSIG=${CHAINSIG:-target/release/chainsig}
N=${N:-1000000}
DIR=${DIR:-/tmp/chainsig-user-path}
OUT=${OUT:-$DIR/out}
REPEATS=${REPEATS:-3}
mkdir -p "$DIR" "$OUT"
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(sm2 secp256k1)

timed() { # timed NAME CMD... : runs CMD, its user/system CPU seconds to $OUT/NAME.time
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KB max resident" -o "$OUT/$1.time" "${@:2}"
    else
        local t0=$SECONDS
        "${@:2}"
        echo "$((SECONDS - t0)) s wall" >"$OUT/$1.time"
    fi
}

for set in "${sets[@]}"; do
    case $set in
        sm2) gen=(--alg sm2 --msg-len 100) ;;
        secp256k1) gen=(--alg secp256k1 --msg-len 64) ;;
        *) echo "unknown data set $set (sm2 or secp256k1)" >&2; exit 2 ;;
    esac
    file=$DIR/$set-$N.jsonl
    if [ ! -s "$file" ]; then
        echo "== generating $N $set records into $file"
        "$CHAINSIG" gen "${gen[@]}" --count "$N" --seed 27 --out "$file.part"
        mv "$file.part" "$file"
    fi
    echo "== $set: warm-up"
    "$CHAINSIG" verify --backend cuda --summary "$file"
    echo "== $set: chainsig verify --backend cuda --stats"
    timed "$set-cuda" "$CHAINSIG" verify --backend cuda --stats "$file" \
        >"$OUT/$set-cuda.jsonl" 2>"$OUT/$set-cuda.stats"
    cat "$OUT/$set-cuda.stats" "$OUT/$set-cuda.time"
    echo "== $set: chainsig verify --backend cpu (the reference verdicts)"
    timed "$set-cpu" "$CHAINSIG" verify --backend cpu --stats "$file" \
        >"$OUT/$set-cpu.jsonl" 2>"$OUT/$set-cpu.stats"
    cat "$OUT/$set-cpu.stats" "$OUT/$set-cpu.time"
    if cmp "$OUT/$set-cuda.jsonl" "$OUT/$set-cpu.jsonl"; then
        echo "$set: the GPU's $(wc -l <"$OUT/$set-cuda.jsonl") verdict lines equal the CPU's"
    else
        echo "$set: the GPU's verdict lines DIFFER from the CPU's" >&2
        exit 1
    fi
    if command -v python3 >/dev/null && [ -f scripts/compare_verdicts.py ]; then
        python3 scripts/compare_verdicts.py "$file" "$OUT/$set-cuda.jsonl" | tee "$OUT/$set-expect.txt"
    fi
    echo "== $set: chainsig bench --from-file --backend cuda"
    "$CHAINSIG" bench --from-file "$file" --backend cuda --repeats "$REPEATS" | tee "$OUT/$set-bench.txt"
done
echo "reports in $OUT"
