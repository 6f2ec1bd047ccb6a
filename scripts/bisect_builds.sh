#!/usr/bin/env bash
# The device call of 2026-12-05 19:35 UTC (BENCHMARKS.md, "Where the small batches lost their
# speed"): the same SM2 bench for the release binary of each commit from 7777206 to 62495f9, then
# the reduction's variants (CHAINSIG_NVRTC_DEFINES) and backend settings (CHAINSIG_CUDA_CONFIG),
# then device_check --ecdsa of the recovery change. Run from the repository root with, in .carry/:
# chainsig_<commit> and kcache_<commit>/ (kcache77/ for 7777206) built from a checkout of each
# commit (cargo build --release -p chainsig-cli; the commit's NVRTC test with CHAINSIG_CACHE_DIR
# set fills its cache), chainsig (62495f9), chainsig_new (900175a), device_check_rec (bb20608) and
# kcache/ filled for those with the same variables set.
cd "$(dirname "$0")/.."
L=$OUT/log.txt
S=1024,4096,8192,65536,172032,1048576
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; } 2>&1 | tee -a $L
sm2() {  # label binary cache [defines]
  echo "== sm2 $1 $(date -u +%T)" | tee -a $L
  CHAINSIG_CACHE_DIR=$PWD/.carry/$3 CHAINSIG_NVRTC_DEFINES="$4" timeout 60 ./.carry/$2 bench --alg sm2 --backend cuda --repeats 9 --sizes $S 2>&1 | tee -a $L
}
sm2 7777206 chainsig_7777206 kcache77
for c in 1e62982 8083243 ca604e6 7467a70; do [ -x .carry/chainsig_$c ] && sm2 $c chainsig_$c kcache_$c; done
sm2 head chainsig kcache
sm2 head_rare_always chainsig kcache -DCS_RARE_ALWAYS
sm2 head_rare_call chainsig kcache -DCS_RARE_CALL
sm2 7777206_again chainsig_7777206 kcache77
sm2 head_again chainsig kcache
cfg() {  # overrides sizes
  echo "== sm2 config $1 $(date -u +%T)" | tee -a $L
  CHAINSIG_CACHE_DIR=$PWD/.carry/kcache CHAINSIG_CUDA_CONFIG="$1" timeout 60 ./.carry/chainsig_new bench --alg sm2 --backend cuda --repeats 9 --sizes $2 2>&1 | tee -a $L
}
echo "== sm2 chainsig_new default $(date -u +%T)" | tee -a $L
CHAINSIG_CACHE_DIR=$PWD/.carry/kcache timeout 60 ./.carry/chainsig_new bench --alg sm2 --backend cuda --repeats 9 --sizes 1024,4096,8192,65536,131072,172032,262144,1048576 2>&1 | tee -a $L
B=65536,131072,172032,262144,1048576
cfg '{"compact_below":0}' $B
cfg '{"kernel":{"max_registers":128},"block_size":256}' $B
cfg '{"kernel":{"max_registers":128},"block_size":128}' $B
cfg '{"kernel":{"max_registers":128},"block_size":256,"compact_below":0}' $B
cfg '{"streams":4}' $B
cfg '{"streams":16}' $B
cfg '{"quads_below":0}' 1024,4096,8192
cfg '{"quads_below":0,"pairs_below":0}' 1024,4096,8192
for v in "" -DCS_RARE_ALWAYS -DCS_RARE_CALL; do
  echo "== ecdsa bench [$v] $(date -u +%T)" | tee -a $L
  CHAINSIG_CACHE_DIR=$PWD/.carry/kcache CHAINSIG_NVRTC_DEFINES="$v" timeout 60 ./.carry/chainsig bench --alg p256,secp256k1 --backend cuda --repeats 7 --sizes 4096,172032,1048576 2>&1 | tee -a $L
done
if [ -x .carry/device_check_rec ]; then
  echo "== recovery build: device_check --ecdsa $(date -u +%T)" | tee -a $L
  mkdir -p /tmp/dc
  CHAINSIG_CACHE_DIR=$PWD/.carry/kcache OUT=/tmp/dc timeout 200 ./.carry/device_check_rec --ecdsa --count 524288 > $OUT/ecdsa_rec_log.txt 2>&1
  echo "rc=$?" | tee -a $L
  grep -E "mismatches|disagree|verdicts|n=|loaded|panicked|rror" $OUT/ecdsa_rec_log.txt | tee -a $L
fi
date -u | tee -a $L
