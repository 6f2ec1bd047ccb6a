#!/usr/bin/env bash
# The user's paths on a GPU machine, binaries of two or more commits in one device call, every
# output `cmp`-ed against the CPU backend's. Steps (STEPS, in order given):
#   gen       10^6 records (SM2 with 100-byte messages, secp256k1 with 64-byte ones) as JSON Lines
#             and as packed rows, 2^20 raw transactions (GEN names the files to make);
#   verify    `verify` on the JSON files, old and new alternating, three rounds, then --chunk
#             262144 and standard input, and `bench --from-file`;
#   rows      `verify --rows` on the row files; recover: `recover --raw` old and new, `bench --raw`;
#   ethtx     the ethtx parse kernel of two `cuda` test binaries; engine: the engine's own figure;
#   variants  VARIANTS (binary[:ENV=value,...]) on FILES, two rounds, with the chunk timeline;
#   engines   several engines on the one card (ENGINES: engines:workers pairs);
#   probe     profiling tools present, CUDA start-up cost, mimalloc's statistics, perf if present;
#   gputests  the GPU tests of the carried `cuda` test binary (GPUTESTS: its filters);
#   sanitize  four engines on one card under compute-sanitizer, then five plain runs.
# Layout (git-ignored, carried with the device tool's `carry`; CARRY names the folder, default
# .carry/w5): bins.tar.xz holding bins/chainsig-<name> (release CLIs) and bins/cuda-test* (`cargo
# test --workspace --test cuda --no-run` builds), kcache.tar.xz (scripts/kernel_cache.sh).
# Run from the repository root on the device: bash scripts/device_user_paths.sh. Results and the
# log go to $OUT/res.tgz.
set -u
ROOT=$PWD; C=${CARRY:-$ROOT/.carry/w5}; R=/tmp/w5res; D=/tmp/w5; mkdir -p $R $D
L=$R/log.txt
log() { echo "$@" | tee -a "$L"; }
export CHAINSIG_CACHE_DIR=/tmp/kcache
if [ ! -d $CHAINSIG_CACHE_DIR ]; then mkdir -p $CHAINSIG_CACHE_DIR && tar xJf $C/kcache.tar.xz -C $CHAINSIG_CACHE_DIR; fi
[ -d $C/bins ] || (cd $C && tar xJf bins.tar.xz)
B=$C/bins
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; command -v python3; } 2>&1 | tee -a "$L"
STEPS=${STEPS:-gen verify rows recover ethtx}
N=${N:-1000000}; TXN=${TXN:-1048576}
T() { if [ -x /usr/bin/time ]; then /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KB" -a -o $R/$1.time "${@:2}"; else local t0=$(date +%s.%N); "${@:2}"; echo "$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo ?) s wall" >> $R/$1.time; fi; }
for step in $STEPS; do
 log "== step $step $(date -u +%T)"
 case $step in
 gen)
  want=" ${GEN:-sm2.jsonl secp256k1.jsonl sm2.rows secp256k1.rows txs.bin} "
  for f in sm2.jsonl secp256k1.jsonl sm2.rows secp256k1.rows; do
   case "$want" in *" $f "*) ;; *) continue;; esac
   set=${f%.*}; m=100; [ $set = secp256k1 ] && m=64; rows=; [ ${f#*.} = rows ] && rows=--rows
   [ -s $D/$f ] || $B/chainsig-new gen $rows --alg $set --msg-len $m --count $N --seed $RANDOM --out $D/$f
  done
  case "$want" in *" txs.bin "*) [ -s $D/txs.bin ] || $B/chainsig-new gen --raw-txs --count $TXN --invalid-ratio 0.05 --seed $RANDOM --out $D/txs.bin;; esac
  ls -la $D | tee -a $L ;;
 verify)
  for set in sm2 secp256k1; do
   f=$D/$set.jsonl
   T $set-cpu $B/chainsig-new verify --backend cpu --stats $f > $D/$set-cpu.out 2> $R/$set-cpu.stats
   tail -3 $R/$set-cpu.stats >> $L
   for v in old new; do $B/chainsig-$v verify --backend cuda --summary $f > /dev/null 2>>$L; done
   for rep in 1 2 3; do
    for v in old new; do
     T $set-$v $B/chainsig-$v verify --backend cuda --stats $f > $D/$set-$v.out 2> $R/$set-$v.stats.$rep
     if cmp -s $D/$set-$v.out $D/$set-cpu.out; then log "$set $v rep $rep: verdicts = CPU"; else log "$set $v rep $rep: verdicts DIFFER from CPU"; fi
    done
   done
   T $set-new-chunk $B/chainsig-new verify --backend cuda --chunk 262144 --stats $f > $D/$set-nc.out 2> $R/$set-new-chunk.stats
   cmp -s $D/$set-nc.out $D/$set-cpu.out && log "$set new --chunk 262144: = CPU" || log "$set new --chunk: DIFFER"
   T $set-new-stdin $B/chainsig-new verify --backend cuda --stats - < $f > $D/$set-ns.out 2> $R/$set-new-stdin.stats
   cmp -s $D/$set-ns.out $D/$set-cpu.out && log "$set new stdin: = CPU" || log "$set new stdin: DIFFER"
   for x in $R/$set-*.time; do log "$(basename $x): $(cat $x | tr '\n' '|')"; done
   $B/chainsig-new bench --from-file $f --backend cuda --repeats 3 > $R/$set-bench-from-file.txt 2>&1; tail -12 $R/$set-bench-from-file.txt >> $L
  done ;;
 recover)
  f=$D/txs.bin
  T rec-cpu $B/chainsig-new recover --raw --backend cpu $f > $D/rec-cpu.out 2> $R/rec-cpu.err; tail -2 $R/rec-cpu.err >> $L
  for rep in 1 2 3; do for v in old new; do
   T rec-$v $B/chainsig-$v recover --raw --backend cuda $f > $D/rec-$v.out 2> $R/rec-$v.err.$rep
   tail -1 $R/rec-$v.err.$rep >> $L
   cmp -s $D/rec-$v.out $D/rec-cpu.out && log "recover --raw $v rep $rep: = CPU" || log "recover --raw $v rep $rep: DIFFER"
  done; done
  for x in $R/rec-*.time; do log "$(basename $x): $(cat $x | tr '\n' '|')"; done
  $B/chainsig-new bench --raw $f --backend cuda --repeats 5 > $R/bench-raw.txt 2>&1; tail -12 $R/bench-raw.txt >> $L ;;
 rows)
  for set in sm2 secp256k1; do
   f=$D/$set.rows
   T rows-$set-cpu $B/chainsig-new verify --rows --backend cpu --stats $f > $D/rows-$set-cpu.out 2> $R/rows-$set-cpu.stats
   tail -1 $R/rows-$set-cpu.stats >> $L
   $B/chainsig-new verify --rows --backend cuda --summary $f 2>>$L
   for rep in 1 2 3; do
    T rows-$set-cuda $B/chainsig-new verify --rows --backend cuda --stats $f > $D/rows-$set-cuda.out 2> $R/rows-$set-cuda.stats.$rep
    cmp -s $D/rows-$set-cuda.out $D/rows-$set-cpu.out && log "rows $set rep $rep: = CPU" || log "rows $set rep $rep: DIFFER"
    head -1 $R/rows-$set-cuda.stats.$rep >> $L
   done
   cat $R/rows-$set-cuda.stats.3 >> $L
   T rows-$set-cuda-c256k $B/chainsig-new verify --rows --backend cuda --chunk 262144 --stats $f > $D/rows-$set-c.out 2> $R/rows-$set-cuda-c256k.stats
   cmp -s $D/rows-$set-c.out $D/rows-$set-cpu.out && log "rows $set chunk 262144: = CPU" || log "rows $set chunk: DIFFER"
   cat $R/rows-$set-cuda-c256k.stats >> $L
  done ;;
 ethtx)
  for v in main staged main staged; do
   CHAINSIG_ETHTX_RECORDS=1048576 $B/cuda-test-$v gpu_ethtx --nocapture --test-threads 1 > $R/ethtx-$v.txt 2>&1
   log "ethtx $v: rc $?"; grep -E "median|disagree|per second|/s|test result" $R/ethtx-$v.txt | tee -a $L
  done ;;
 variants)
  # VARIANTS: binary[:ENV=value,...] entries, each run on every file of FILES (two rounds,
  # alternating), with /usr/bin/time, a chunk timeline (CHAINSIG_VERIFY_TRACE) and its output
  # cmp-ed against the CPU backend's.
  for f in ${FILES:-sm2.jsonl sm2.rows secp256k1.jsonl}; do
   sa=--stats; case $f in *.rows) cmd="verify --rows";; txs.bin) cmd="recover --raw"; sa=;; *) cmd=verify;; esac
   ref=$D/$f.cpu; [ -s $ref ] || $B/chainsig-new $cmd --backend cpu $D/$f > $ref 2>/dev/null
   for rep in 1 2; do for v in ${VARIANTS:-new}; do
    bin=${v%%:*}; envs=; [ "$bin" != "$v" ] && envs=${v#*:}; tag=$(echo "$v" | tr -c 'A-Za-z0-9_.-' _)
    st=$R/var-$f-$tag.stats.$rep
    T var-$f-$tag env $(echo "$envs" | tr ',' ' ') CHAINSIG_VERIFY_TRACE=$R/var-$f-$tag.trace.$rep.csv $B/chainsig-$bin $cmd --backend cuda $sa $D/$f > $D/var.out 2> $st
    cmp -s $D/var.out $ref && ok="= CPU" || ok=DIFFER
    log "$f $v rep $rep: $ok; $(grep -h -E 'wall|recovered' $st | head -1)"
   done; done
   for x in $R/var-$f-*.time; do log "$(basename $x): $(cat $x | tr '\n' '|')"; done
  done ;;
 probe)
  # What the machine offers for profiling; the CUDA start-up and exit of a 100-record run; the
  # allocator's own account of one SM2 run; a CPU profile where perf exists.
  for t in perf strace compute-sanitizer nsys; do log "$t: $(command -v $t || echo absent)"; done
  head -100 $D/sm2.jsonl > $D/tiny.jsonl
  for rep in 1 2; do T tiny $B/chainsig-${PROBE_BIN:-new} verify --backend cuda --summary $D/tiny.jsonl 2>> $L; done
  log "tiny: $(cat $R/tiny.time | tr '\n' '|')"
  MIMALLOC_SHOW_STATS=1 $B/chainsig-${PROBE_BIN:-new} verify --backend cuda --summary --stats $D/sm2.jsonl > $R/mimalloc-stats.txt 2>&1
  if command -v perf > /dev/null; then
   perf stat -e task-clock,page-faults,context-switches,cpu-migrations -o $R/perf-stat.txt $B/chainsig-${PROBE_BIN:-new} verify --backend cuda --summary $D/sm2.jsonl 2>> $L
   perf record -g -o $D/perf.data $B/chainsig-${PROBE_BIN:-new} verify --backend cuda --summary $D/sm2.jsonl 2>> $L
   perf report -i $D/perf.data --stdio --no-children --percent-limit 0.5 > $R/perf-report.txt 2>&1
  fi ;;
 gputests)
  # The GPU tests of the carried `cuda` test binary (every one against the CPU or RustCrypto).
  timeout ${GPUTESTS_LIMIT:-240} $B/cuda-test ${GPUTESTS:-gpu} --test-threads 1 --nocapture > $R/gputests.txt 2>&1
  log "gpu tests: rc $?"; grep -E "^test |test result|disagree|records" $R/gputests.txt | tail -40 | tee -a $L ;;
 sanitize)
  # The run that failed once with four engines on one card (an illegal address, seen at the
  # next module load), under compute-sanitizer's memcheck on 2*10^5 records, then five plain
  # runs of that configuration on the whole file.
  cfg='{"devices":[0,0,0,0],"shard_below":1048577}'
  head -200000 $D/sm2.jsonl > $D/s.jsonl
  CHAINSIG_CUDA_CONFIG="$cfg" CHAINSIG_VERIFY_WORKERS=8 timeout ${SANITIZE_LIMIT:-200} compute-sanitizer --tool memcheck --print-limit 20 $B/chainsig-${PROBE_BIN:-new} verify --backend cuda --summary $D/s.jsonl > $R/sanitize.txt 2>&1
  log "sanitize: rc $?"; tail -30 $R/sanitize.txt | tee -a $L
  for rep in 1 2 3 4 5; do
   CHAINSIG_CUDA_CONFIG="$cfg" CHAINSIG_VERIFY_WORKERS=8 $B/chainsig-${PROBE_BIN:-new} verify --backend cuda $D/sm2.jsonl > $D/s4.out 2> $R/four-engines.$rep
   cmp -s $D/s4.out $D/sm2.jsonl.cpu && log "four engines rep $rep: = CPU" || log "four engines rep $rep: DIFFER $(tail -1 $R/four-engines.$rep)"
  done ;;
 engines)
  # Every call of a CLI run goes whole to the least busy of E engines on device 0 (the devices
  # list repeats ordinal 0; shard_below above any call), W chunks in hand.
  for f in sm2.jsonl secp256k1.jsonl sm2.rows secp256k1.rows txs.bin; do
   sa=--stats; case $f in *.rows) cmd="verify --rows";; txs.bin) cmd="recover --raw"; sa=;; *) cmd=verify;; esac
   ref=$D/$f.cpu; [ -s $ref ] || $B/chainsig-new $cmd --backend cpu $D/$f > $ref 2>/dev/null
   for rep in 1 2; do for ew in ${ENGINES:-1:4 2:4 2:8 4:8}; do
    e=${ew%:*}; w=${ew#*:}; cfg=
    [ $e -gt 1 ] && cfg="{\"devices\":[0$(printf ',0%.0s' $(seq 2 $e))],\"shard_below\":1048577}"
    st=$R/eng-$f-$e-$w.stats.$rep
    CHAINSIG_CUDA_CONFIG="$cfg" CHAINSIG_VERIFY_WORKERS=$w T eng-$f-$e-$w $B/chainsig-new $cmd --backend cuda $sa $D/$f > $D/eng.out 2> $st
    cmp -s $D/eng.out $ref && ok="= CPU" || ok=DIFFER
    log "$f engines $e workers $w rep $rep: $ok; $(grep -h -E 'wall|recovered' $st | head -1)"
   done; done
   cat $R/eng-$f-*.stats.2 >> $L
  done ;;
 engine)
  $B/chainsig-new bench --backend cuda --alg sm2,secp256k1 > $R/engine.txt 2>&1; tail -20 $R/engine.txt >> $L ;;
 esac
done
log "== done $(date -u +%T)"; tar czf $OUT/res.tgz -C $R .
