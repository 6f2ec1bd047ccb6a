#!/usr/bin/env bash
# The device calls that check and measure the kernels on a GPU machine (run by the `device` tool from
# the repository root, with the release binaries and the NVRTC cache built here carried in .carry/:
# `chainsig`, `device_check`, `kcache/`). Correctness first, on fresh seeds, then the benchmarks;
# every file goes to $OUT. ECDSA_COUNT and SM2_COUNT (default 2^20) set the record counts of
# parts ecdsa and sm2. A device call may last ten minutes, so the work comes in parts, named as
# arguments (default: all of them, in this order):
#   ecdsa    device_check --ecdsa: P-256 and secp256k1 kernels against RustCrypto under both s
#            rules and Ethereum's sender recovery against libsecp256k1, timed beside the CPU; then
#            chainsig bench --alg p256,secp256k1 --backend cuda;
#   sm2      device_check --quick: every SM2 kernel configuration on 2^20 fresh records (a tenth
#            corrupted, plus the edge cases) against RustCrypto, then the sweep at 4096 and 172032;
#            chainsig bench --alg sm2 --backend cuda (medians of 9 after a warm-up);
#   chunks   chainsig gen, then chainsig verify --chunk C for chunk sizes that pick each small
#            kernel, compared line by line with the generator (compare_verdicts.py);
#   pairs    device_check --pairs: one thread against a lane pair per signature, all batch sizes;
#   signers  device_check --signers 64 and chainsig bench --signers 64 (known signers' tables);
#   clocks   the SM clock sampled every 100 ms (clocks.csv) while chainsig bench times small
#            batches first on an idle card, then right after a large batch: small batches leave
#            the card mostly idle, and its clock may not rise for them.
#   neighbours  chainsig bench of the default beside its neighbouring settings (compact bound,
#            block size, streams; the ECDSA kernels' block size), through CHAINSIG_CUDA_CONFIG;
#   regs     chainsig bench at 120, 112, 104 and 96 registers, each in blocks meant to fill an
#            SM, against the 128-register default (16 warps);
#   roll     chainsig bench of the SM2 default against -DCS_ROLL_DOUBLINGS (the walk's doublings
#            as a loop, half the inlined kernel's loop body), alternating (NVRTC compiles the
#            variant's modules on the machine unless the cache holds them). The ECDSA modules
#            roll by default since 67d49fd, so the define changes nothing there;
#   mid      chainsig bench of the SM2 default beside its size thresholds and launch settings
#            (pairs_below, compact_below, block size, streams), no new modules;
#   streams  chainsig bench of the SM2 default with 8 streams against 4 and 6, alternating;
#   again    chainsig bench of the SM2 default at the headline sizes, 2^21 included;
#   tuning   chainsig bench for the candidate settings the last H100 runs left open, each with
#            every verdict checked: the default; the lane kernels' window walks (CS_QUAD_PLAIN,
#            CS_JAC_WINDOW through CHAINSIG_NVRTC_DEFINES); 128 registers with 256-thread blocks
#            (CHAINSIG_CUDA_CONFIG) for SM2 and for ECDSA, and that cap's block sizes. The cache
#            must hold those modules (fill it here with the same variables set: the example
#            `precompile`) or NVRTC compiles them on the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
export CHAINSIG_CACHE_DIR=$PWD/.carry/kcache
B=./.carry/chainsig
L=$OUT/log.txt
SEED=$(date +%s)
mkdir -p /tmp/dc
{ date -u; echo "seed $SEED; parts: ${*:-all}"; git log --oneline -1 2>/dev/null;
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; } 2>&1 | tee -a "$L"

part_ecdsa() {
  OUT=/tmp/dc timeout 200 ./.carry/device_check --ecdsa --count "${ECDSA_COUNT:-1048576}" > "$OUT/ecdsa_log.txt" 2>&1
  echo "device_check ecdsa rc=$?" | tee -a "$L"
  cp /tmp/dc/ecdsa_*.json "$OUT/" 2>/dev/null
  grep -E "MISMATCH|mismatches|disagree|verdicts|n=|loaded|panicked|rror" "$OUT/ecdsa_log.txt" | head -60 | tee -a "$L"
  timeout 100 $B bench --alg p256,secp256k1 --backend cuda --repeats 7 \
    --sizes 4096,65536,172032,1048576 > "$OUT/bench_ecdsa.txt" 2>&1
  echo "bench ecdsa rc=$?" | tee -a "$L"; tee -a "$L" < "$OUT/bench_ecdsa.txt"
}
part_sm2() {
  OUT=/tmp/dc timeout 200 ./.carry/device_check --quick --count "${SM2_COUNT:-1048576}" > "$OUT/sm2_log.txt" 2>&1
  echo "device_check sm2 rc=$?" | tee -a "$L"
  cp /tmp/dc/sweep.* /tmp/dc/correctness.json "$OUT/" 2>/dev/null
  grep -E "NOT|MISMATCH|mismatch|all .* verdicts|best|lowest|multiplications|ready|submit|spills [1-9]" "$OUT/sm2_log.txt" | head -60 | tee -a "$L"
  timeout 100 $B bench --alg sm2 --backend cuda --repeats 9 \
    --sizes 1024,2048,4096,8192,16384,65536,172032,1048576 > "$OUT/bench_sm2.txt" 2>&1
  echo "bench sm2 rc=$?" | tee -a "$L"; tee -a "$L" < "$OUT/bench_sm2.txt"
}
part_chunks() {
  $B gen --alg sm2 --count 200000 --invalid-ratio 0.1 --seed "$SEED" --out /tmp/a.jsonl --msg-len 100
  for c in 1000 4096 7000 50000; do
    timeout 60 $B verify --backend cuda --chunk $c /tmp/a.jsonl > /tmp/va.jsonl 2>> "$L"
    echo "chunk $c:" | tee -a "$L"
    python3 scripts/compare_verdicts.py /tmp/a.jsonl /tmp/va.jsonl 2>&1 | tee -a "$L"
  done
}
part_pairs() {
  OUT=/tmp/dc timeout 250 ./.carry/device_check --pairs --count 1048576 > "$OUT/pairs_log.txt" 2>&1
  echo "device_check pairs rc=$?" | tee -a "$L"
  grep -E "NOT|MISMATCH|mismatch|all .* verdicts|best|lowest|submit|spills [1-9]" "$OUT/pairs_log.txt" | head -40 | tee -a "$L"
  cp /tmp/dc/sweep.csv "$OUT/pairs_sweep.csv" 2>/dev/null
}
part_signers() {
  OUT=/tmp/dc timeout 150 ./.carry/device_check --signers 64 --count 1048576 > "$OUT/signers_log.txt" 2>&1
  echo "device_check signers rc=$?" | tee -a "$L"
  grep -E "NOT|MISMATCH|mismatch|verdicts|/s" "$OUT/signers_log.txt" | head -20 | tee -a "$L"
  timeout 100 $B bench --alg sm2 --backend cuda --signers 64 --repeats 7 \
    --sizes 4096,8192,172032,1048576 2>&1 | tee -a "$L"
}
part_clocks() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu,power.draw --format=csv -lms 100 > "$OUT/clocks.csv" 2>&1 &
  local smi=$!
  sleep 3
  for sizes in 1024,4096,8192 1048576,4096,1048576,1024; do
    echo "sizes $sizes from $(date -u +%T.%N)" | tee -a "$L"
    timeout 60 $B bench --alg sm2 --backend cuda --repeats 15 --sizes $sizes 2>&1 | tee -a "$L"
  done
  echo "end $(date -u +%T.%N)" | tee -a "$L"
  kill $smi
}
part_tuning() {
  local all=1024,4096,8192,65536,131072,172032,262144,1048576
  local r='"kernel":{"max_registers":128},"block_size":256'
  tune() {  # label defines config algs sizes
    CHAINSIG_NVRTC_DEFINES="$2" bench_with tuning "$1" "$3" "$4" "$5"
  }
  tune default "" "" sm2 $all
  tune quad_plain -DCS_QUAD_PLAIN '{"quads_below":4096}' sm2 1024,2048,4096
  tune jac_window -DCS_JAC_WINDOW "" sm2 $all
  tune r128 "" "{$r}" sm2 $all
  tune r128_main "" "{$r,\"compact_below\":0}" sm2 $all
  tune ecdsa_default "" "" p256,secp256k1 4096,172032,1048576
  tune ecdsa_r128 "" "{$r}" p256,secp256k1 4096,172032,1048576
  # Block sizes under the 128-register cap: 64-512 threads a block give 448 or 512 threads an SM,
  # which splits 172032 records into 2.9 or 2.5 rounds of the GPU's 132 SMs.
  for b in 64 128 448 512; do
    tune "r128_b$b" "" "{\"kernel\":{\"max_registers\":128},\"block_size\":$b,\"compact_below\":0}" \
      sm2 131072,172032,262144,1048576
  done
  tune default_again "" "" sm2 $all
}
# chainsig bench under a CHAINSIG_CUDA_CONFIG override, every verdict checked, logged under the
# part's name: bench_with PART LABEL CONFIG ALGS SIZES. CHAINSIG_NVRTC_DEFINES, where set, is
# logged too; BENCH_TIMEOUT (default 90 s) leaves room for NVRTC to compile a variant's modules.
bench_with() {
  echo "== $1 $2 [$3]${CHAINSIG_NVRTC_DEFINES:+ defines [$CHAINSIG_NVRTC_DEFINES]}" | tee -a "$L"
  CHAINSIG_CUDA_CONFIG="$3" timeout "${BENCH_TIMEOUT:-90}" $B bench --alg "$4" --backend cuda \
    --repeats 9 --sizes "$5" 2>&1 | tee -a "$L"
}
part_neighbours() {
  # The default's neighbours: the compact kernel's bound, the main block size, the stream count,
  # and the ECDSA kernels' block size (every verdict checked by the bench).
  tune() { bench_with neighbours "$@"; }
  local mid=32768,65536,98304,131072,172032
  tune default "" sm2 "$mid,262144,1048576"
  tune compact_below_0 '{"compact_below":0}' sm2 $mid
  tune compact_below_196608 '{"compact_below":196608}' sm2 $mid
  tune block_256 '{"block_size":256}' sm2 131072,172032,1048576
  tune r112_b576 '{"kernel":{"max_registers":112},"block_size":576,"compact_below":0,"pairs_below":0}' \
    sm2 131072,172032,1048576
  tune streams_4 '{"streams":4}' sm2 131072,172032,1048576
  # 7777206's quads: the Jacobian window and the plain quad walk together (each alone was slower).
  CHAINSIG_NVRTC_DEFINES="-DCS_JAC_WINDOW -DCS_QUAD_PLAIN" \
    tune quads_7777206 '{"quads_below":4096}' sm2 1024,2048,4096
  # (the ECDSA default is timed by part ecdsa)
  tune ecdsa_block_256 '{"block_size":256}' p256,secp256k1 1024,4096,172032,1048576
}
part_regs() {
  # Warps an SM holds against registers a thread: 16 warps at 128 registers (the default) against
  # blocks meant to fill an SM below it, and the defaults' small sizes after spread_small and
  # pairs to 16384. The H100 refused 544, 576 and 608 (at 120, 112 and 104 registers a scheduler
  # still holds only 4 warps; results/gpu-verify/h100_75be369_regs_log.txt); 20 and 24 warps need 96 and
  # 80 registers (results/gpu-verify/h100_75be369_adhoc_log.txt).
  tune() { bench_with regs "$@"; }
  local big=131072,172032,262144,1048576,2097152
  tune default "" sm2 1024,4096,8192,12288,16384,24576,32768,65536,$big
  for rb in 120:544 112:576 104:608 96:672; do
    tune "r${rb%%:*}_b${rb##*:}" "{\"kernel\":{\"max_registers\":${rb%%:*}},\"block_size\":${rb##*:}}" sm2 $big
  done
  tune ecdsa_default "" p256,secp256k1 172032,1048576
  tune ecdsa_r112_b576 '{"kernel":{"max_registers":112},"block_size":576}' p256,secp256k1 172032,1048576
  tune default_again "" sm2 $big
}
part_roll() {
  local sizes=1024,4096,65536,131072,172032,262144,1048576
  local run
  for run in 1 2; do
    bench_with roll "default_$run" "" sm2 $sizes
    CHAINSIG_NVRTC_DEFINES=-DCS_ROLL_DOUBLINGS BENCH_TIMEOUT=200 \
      bench_with roll "rolled_$run" "" sm2 $sizes
  done
}
part_mid() {
  # The size thresholds again after the cheaper reduction (5d7c568): where the lane pairs stop,
  # where the compact kernel stops, the main block size and the stream count. No new modules.
  tune() { bench_with mid "$@"; }
  tune default "" sm2 8192,12288,16384,24576,32768,49152,65536,98304,131072,172032
  tune pairs_below_32768 '{"pairs_below":32768}' sm2 16384,24576,32768
  tune pairs_below_8192 '{"pairs_below":8192}' sm2 8192,12288,16384
  tune compact_below_0 '{"compact_below":0}' sm2 32768,49152,65536,98304,131072
  tune compact_below_196608 '{"compact_below":196608}' sm2 98304,131072,172032
  tune block_256 '{"block_size":256}' sm2 131072,172032,1048576
  tune streams_4 '{"streams":4}' sm2 65536,172032,1048576
  tune streams_16 '{"streams":16}' sm2 65536,172032,1048576
  tune default_again "" sm2 8192,16384,24576,32768,65536,131072,172032,1048576
}
part_streams() {
  # 8 streams (the default) against 4 and 6, alternating, three rounds: part mid's one run of 4
  # streams took 3.72 ms at 65536 against 4.13-4.47 for the default.
  local sizes=8192,16384,32768,65536,98304,131072,172032,1048576 run k
  for run in 1 2 3; do
    for k in 8 4 6; do
      bench_with streams "streams_${k}_$run" "{\"streams\":$k}" sm2 $sizes
    done
  done
}
part_again() {
  # The headline sizes once more (medians of 9), 2^21 included: the best rate's batch.
  bench_with again default "" sm2 1024,4096,8192,16384,172032,1048576,2097152
}
for part in ${*:-ecdsa sm2 chunks pairs signers}; do
  echo "== $part ($(date -u +%T))" | tee -a "$L"
  "part_$part"
done
date -u | tee -a "$L"
