#!/usr/bin/env bash
# Device calls for a wave of GPU checks (all binaries built on the CPU machine and carried in the
# git-ignored .carry/ folder, named in the device tool's `carry`). Layout it expects:
#   .carry/cmp/bins.tar.xz  bins/{chainsig-old,chainsig-new,device_check,ctru_device_check,
#                           cuda-test,gpu-fault} (release builds of the CLI and crates/bench,
#                           `cargo test --release -p chainsig-cuda --features fault-injection
#                           --test cuda --no-run`, and the same with `--test gpu_fault`), stripped
#   .carry/gpu/             capi-test, server-test, go-test, libchainsig.so and a run.sh (C ABI and Go
#                           on cuda; the `txs` step runs their raw-transaction tests)
#   .carry/node/            node-pipeline, libchainsig.so, run.sh (examples/node-pipeline)
#   .carry/fuzz/            bins.tar.xz of the fuzz targets and scripts/fuzz_many_cores.sh as run.sh
# Run from the repository root on the device: PHASE=A bash .carry/cmp/run.sh (this file).
# STEPS (default: PHASE's list) names the steps, e.g. STEPS="raw gpu bench"; BENCH_ALG limits the
# main job to some algorithms (e.g. secp256k1,p256).
# PHASE=A: the GPU layering check (old ed1934f3 vs new main job interleaved on one card; every
#   kernel configuration on 2^20 fresh records), the C ABI and Go on the GPU, the GPU fault
#   injection test, raw Ethereum transactions and raw SM2 records on the GPU (2^20 each, against
#   the CPU); fuzzers on
#   cores 8-15.
# PHASE=B: the user path (verify
#   --backend cuda --stats on 10^6 JSON Lines records), the node pipeline, the ECDSA device check;
#   fuzzers again with other seeds.
# Results go straight under $OUT/res so a timeout still returns what finished.
set -u
ROOT=$PWD; C=$ROOT/.carry; R=$OUT/res; mkdir -p $R
export CHAINSIG_CACHE_DIR=/tmp/kcache
L=$OUT/log.txt
log() { echo "$@" | tee -a "$L"; }
PHASE=${PHASE:-A}
[ -d $C/cmp/bins ] || (cd $C/cmp && tar xJf bins.tar.xz)
B=$C/cmp/bins
# The compiled kernels, made on the CPU machine (scripts/kernel_cache.sh: NVRTC 13.0 for sm_90, the
# cache key covers source, options and architecture): without them the first call of each module
# compiles it here, a minute or more for the ECDSA modules, inside the timed windows below.
if [ -f $C/cmp/kcache.tar.xz ]; then
  mkdir -p $CHAINSIG_CACHE_DIR && tar xJf $C/cmp/kcache.tar.xz -C $CHAINSIG_CACHE_DIR
  log "kernel cache: $(ls $CHAINSIG_CACHE_DIR | grep -c cubin) modules carried"
fi
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; } 2>&1 | tee -a "$L"
# Fuzzers on the other cores, where fuzz binaries of this commit were carried.
[ -f $C/fuzz/bins.tar.xz ] && (SEED_BASE=$([ $PHASE = A ] && echo 1000 || echo 2000) FUZZ_SECONDS=${FUZZ_SECONDS:-380} OUT=$R taskset -c 8-15 bash $C/fuzz/run.sh > $R/fuzz_stdout_$PHASE.txt 2>&1 &)
T="taskset -c 0-7"
# STEPS picks what runs, in order (each bounded by its own timeout so one call stays inside the
# device tool's ten minutes); the default is PHASE's list.
case $PHASE in A) DEF="bench dc gpu fault ethtx raw";; *) DEF="up_sm2 up_secp256k1 node dce";; esac
for step in ${STEPS:-$DEF}; do case $step in
bench)
  log "== main job, old (ed1934f3) and new binaries interleaved, SM2/secp256k1/P-256 on cuda"
  for run in ${BENCH_RUNS:-old new old new}; do
    log "-- $run $(date -u +%T)"
    timeout ${BENCH_T:-150} $T $B/chainsig-$run bench --backend cuda ${BENCH_ALG:+--alg $BENCH_ALG} --sizes 4096,172032,1048576 --repeats 5 \
       --json $R/bench_${run}_$(date +%s).json 2>&1 | tail -14 | tee -a "$L"
  done;;
dc)
  log "== device_check --quick --count 1048576 (every kernel configuration) $(date -u +%T)"
  mkdir -p $R/dc; OUT=$R/dc timeout ${DC_T:-150} $T $B/device_check --quick --count 1048576 > $R/dc/stdout.txt 2>&1
  log "rc=$?"; tail -40 $R/dc/stdout.txt | tee -a "$L";;
gpu)
  log "== C ABI and Go on the GPU $(date -u +%T)"
  (cd $C/gpu && OUT=$R timeout ${GPU_T:-200} $T bash run.sh 2>&1 | tail -50 | tee -a "$L");;
fault)
  log "== GPU fault injection $(date -u +%T)"
  CHAINSIG_REQUIRE_GPU=1 timeout 90 $T $B/gpu-fault --test-threads 1 > $R/gpu_fault.txt 2>&1; log "rc=$?"
  tail -30 $R/gpu_fault.txt | tee -a "$L";;
ethtx)
  log "== raw Ethereum transactions on the GPU, 2^20 $(date -u +%T)"
  CHAINSIG_ETHTX_RECORDS=1048576 timeout ${ETHTX_T:-100} $T $B/cuda-test gpu_ethtx --nocapture --test-threads 1 > $R/gpu_ethtx.txt 2>&1; log "rc=$?"
  tail -30 $R/gpu_ethtx.txt | tee -a "$L";;
raw)
  log "== SM2 from the node's bytes (raw path) against the CPU and today's path, 2^20 $(date -u +%T)"
  CHAINSIG_RAW_RECORDS=${RAW_N:-1048576} timeout ${RAW_T:-150} $T $B/cuda-test gpu_raw:: --nocapture --test-threads 1 > $R/gpu_raw.txt 2>&1; log "rc=$?"
  tail -30 $R/gpu_raw.txt | tee -a "$L";;
up_*)
  set=${step#up_}
  log "== user path $set $(date -u +%T)"
  CHAINSIG=$B/chainsig-new N=${UP_N:-1000000} REPEATS=2 OUT=$R/up timeout ${UP_T:-150} bash scripts/gpu_user_path.sh $set > $R/up_$set.txt 2>&1; log "rc=$?"
  tail -40 $R/up_$set.txt | tee -a "$L";;
node)
  log "== node pipeline (cores 0-7) $(date -u +%T)"
  (cd $C/node && OUT=$R timeout ${NODE_T:-120} $T bash run.sh 2>&1 | tail -40 | tee -a "$L");;
dce)
  log "== device_check --ecdsa $(date -u +%T)"
  mkdir -p $R/dce; OUT=$R/dce timeout ${DC_T:-100} $T $B/device_check --ecdsa --count ${ECDSA_N:-262144} > $R/dce/stdout.txt 2>&1
  log "rc=$?"; tail -40 $R/dce/stdout.txt | tee -a "$L";;
shards)
  # The multi-GPU layer on one card: one engine, then 2 and 3 logical shards of device 0, against
  # the CPU; with fault injection (cuda-test is built with it), a failed part redone on the other shard.
  log "== gpu_shards (logical shards on one card) $(date -u +%T)"
  CHAINSIG_SHARD_RECORDS=${SHARD_N:-1048576} CHAINSIG_REQUIRE_GPU=1 timeout ${SHARDS_T:-150} $T $B/cuda-test gpu_shards:: --test-threads 1 --nocapture > $R/gpu_shards.txt 2>&1; log "rc=$?"
  tail -40 $R/gpu_shards.txt | tee -a "$L";;
txs)
  # Raw Ethereum transactions through the C ABI (cs_recover_transactions), the service's gRPC
  # RecoverBatch and Go's RecoverTransactions, each against the CPU path.
  log "== raw transactions: C ABI, gRPC, Go on the GPU $(date -u +%T)"
  (cd crates/capi && CHAINSIG_REQUIRE_GPU=1 CHAINSIG_GPU_TX_COUNT=${TX_N:-1048576} timeout ${TXS_T:-150} $T $C/gpu/capi-test transactions:: --test-threads 1 --nocapture > $R/capi_txs.txt 2>&1; echo "capi rc=$?" >> $R/capi_txs.txt)
  tail -20 $R/capi_txs.txt | tee -a "$L"
  (cd crates/server && CHAINSIG_REQUIRE_GPU=1 CHAINSIG_GPU_RECOVER_TXS=${TX_N:-1048576} timeout ${TXS_T:-150} $T $C/gpu/server-test grpc_recover:: --nocapture > $R/server_txs.txt 2>&1; echo "server rc=$?" >> $R/server_txs.txt)
  tail -20 $R/server_txs.txt | tee -a "$L"
  (cd $C/gpu && LD_LIBRARY_PATH=$PWD CHAINSIG_BACKEND=cuda CHAINSIG_GO_CROSSCHECK_N=400000 timeout ${TXS_T:-150} $T ./go-test -test.run RecoverTransactions -test.v > $R/go_txs.txt 2>&1; echo "go rc=$?" >> $R/go_txs.txt)
  tail -20 $R/go_txs.txt | tee -a "$L";;
*) log "unknown step $step";;
esac; done
log "== fuzz (waiting) $(date -u +%T)"
while pgrep -f 'corpus-out' >/dev/null; do sleep 5; done
cat $R/fuzz_summary.tsv 2>/dev/null | tee -a "$L"; mv $R/fuzz_summary.tsv $R/fuzz_summary_$PHASE.tsv 2>/dev/null; mv $R/fuzz_logs.tgz $R/fuzz_logs_$PHASE.tgz 2>/dev/null
# The kernels compiled here come back, to be carried next time.
tar cJf $OUT/kcache_$PHASE.tar.xz -C $CHAINSIG_CACHE_DIR . 2>/dev/null
log "done $(date -u +%T)"
