#!/usr/bin/env bash
# The device call that checks and measures the SM2 kernels on a GPU machine (run by the `device`
# tool from the repository root, with the release binaries and the NVRTC cache built here carried
# in .carry/: `chainsig`, `device_check`, `kcache/`). Correctness first, on fresh seeds, then the
# benchmarks; every file goes to $OUT.
#   1. device_check --pairs: every kernel configuration on 2^20 fresh records (a tenth corrupted,
#      plus the edge cases) against RustCrypto, then the small-batch sweep;
#   2. chainsig bench --alg sm2 --backend cuda, twice (medians of 9 after a warm-up);
#   3. chainsig gen, then chainsig verify --chunk C for chunk sizes that pick each small kernel,
#      compared line by line with the generator (compare_verdicts.py);
#   4. device_check --signers 64 and chainsig bench --signers 64 (known signers' tables);
#   5. device_check --ecdsa (P-256 and secp256k1 kernels against RustCrypto under both s rules, timed
#      beside the CPU) and chainsig bench --alg p256,secp256k1 --backend cuda.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export CHAINSIG_CACHE_DIR=$PWD/.carry/kcache
B=./.carry/chainsig
L=$OUT/log.txt
SEED=$(date +%s)
{ date -u; echo "seed $SEED"; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; } 2>&1 | tee "$L"
mkdir -p /tmp/dc
OUT=/tmp/dc timeout 300 ./.carry/device_check --pairs --count 1048576 > "$OUT/pairs_log.txt" 2>&1
echo "device_check rc=$?" | tee -a "$L"
grep -E "NOT|MISMATCH|mismatch|all .* verdicts|Fast:|ready|submit" "$OUT/pairs_log.txt" | head -40 | tee -a "$L"
for run in 1 2; do
  timeout 150 $B bench --alg sm2 --backend cuda --repeats 9 \
    --sizes 1024,2048,4096,8192,16384,65536,172032,1048576 > "$OUT/bench$run.txt" 2>&1
  echo "bench $run rc=$?" | tee -a "$L"
  tee -a "$L" < "$OUT/bench$run.txt"
done
$B gen --alg sm2 --count 200000 --invalid-ratio 0.1 --seed "$SEED" --out /tmp/a.jsonl --msg-len 100
for c in 1000 4096 7000 50000; do
  timeout 120 $B verify --backend cuda --chunk $c /tmp/a.jsonl > /tmp/va.jsonl 2>> "$L"
  echo "chunk $c:" | tee -a "$L"
  python3 crates/cuda/ci/compare_verdicts.py /tmp/a.jsonl /tmp/va.jsonl 2>&1 | tee -a "$L"
done
OUT=/tmp/dc timeout 150 ./.carry/device_check --signers 64 --count 1048576 > "$OUT/signers_log.txt" 2>&1
echo "device_check signers rc=$?" | tee -a "$L"
grep -E "NOT|MISMATCH|mismatch|verdicts|/s" "$OUT/signers_log.txt" | head -20 | tee -a "$L"
timeout 120 $B bench --alg sm2 --backend cuda --signers 64 --repeats 7 \
  --sizes 4096,8192,172032,1048576 2>&1 | tee -a "$L"
OUT=/tmp/dc timeout 200 ./.carry/device_check --ecdsa --count 1048576 > "$OUT/ecdsa_log.txt" 2>&1
echo "device_check ecdsa rc=$?" | tee -a "$L"
cp /tmp/dc/ecdsa_*.json "$OUT/" 2>/dev/null
grep -E "MISMATCH|mismatches|disagree|verdicts|n=|loaded" "$OUT/ecdsa_log.txt" | head -40 | tee -a "$L"
timeout 120 $B bench --alg p256,secp256k1 --backend cuda --repeats 7 \
  --sizes 4096,65536,172032,1048576 2>&1 | tee -a "$L"
date -u | tee -a "$L"
