#!/usr/bin/env bash
# The user's paths on a GPU machine, an old `chainsig` against a new one in one device call, every
# output `cmp`-ed against the CPU backend's: `verify` on 10^6 JSON Lines records (SM2 with 100-byte
# messages, secp256k1 with 64-byte messages; --stats, three rounds each, old and new alternating,
# then --chunk 262144 and standard input), `verify --rows` on the same kinds as packed rows,
# `recover --raw` on 2^20 generated raw transactions (and `bench --raw`), the ethtx parse kernel of
# two `cuda` test binaries (STEPS ethtx), and the engine's own figure (STEPS engine).
# Layout (git-ignored, carried with the device tool's `carry`): .carry/w5/bins.tar.xz holding
# bins/{chainsig-old,chainsig-new,cuda-test-main,cuda-test-staged} (release CLIs; `cargo test
# --workspace --test cuda --no-run` builds), .carry/w5/kcache.tar.xz (scripts/kernel_cache.sh).
# Run from the repository root on the device: bash scripts/device_user_paths.sh (copied to
# .carry/w5/run.sh); STEPS names the steps (default gen verify rows recover ethtx). Results and
# the log go to $OUT/res.tgz.
set -u
ROOT=$PWD; C=$ROOT/.carry/w5; R=/tmp/w5res; D=/tmp/w5; mkdir -p $R $D
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
  [ -s $D/sm2.jsonl ] || $B/chainsig-new gen --alg sm2 --msg-len 100 --count $N --seed $RANDOM --out $D/sm2.jsonl
  [ -s $D/secp256k1.jsonl ] || $B/chainsig-new gen --alg secp256k1 --msg-len 64 --count $N --seed $RANDOM --out $D/secp256k1.jsonl
  for set in sm2 secp256k1; do [ -s $D/$set.rows ] || { a=$set; m=100; [ $set = secp256k1 ] && m=64; $B/chainsig-new gen --rows --alg $a --msg-len $m --count $N --seed $RANDOM --out $D/$set.rows; }; done
  [ -s $D/txs.bin ] || $B/chainsig-new gen --raw-txs --count $TXN --invalid-ratio 0.05 --seed $RANDOM --out $D/txs.bin
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
 engine)
  $B/chainsig-new bench --backend cuda --alg sm2,secp256k1 > $R/engine.txt 2>&1; tail -20 $R/engine.txt >> $L ;;
 esac
done
log "== done $(date -u +%T)"; tar czf $OUT/res.tgz -C $R .
