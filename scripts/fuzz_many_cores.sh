#!/usr/bin/env bash
# Fuzz every target to >= 10^7 executions on the GPU host's 16 cores (libFuzzer, -s none builds),
# workers per target sized by the rates seen on the development machine. Logs to $OUT.
# Carried as .carry/fuzz/run.sh beside bins.tar.xz (bins/<target>, from
# `cargo +nightly fuzz build -s none --release`); run from the repository root.
set -u
ROOT=$PWD; cd "$(dirname "$0")"
tar xJf bins.tar.xz
mkdir -p corpus-out artifacts logs
nproc
# target:workers (slow targets get more workers; each worker runs its share of 10^7)
PLAN="verify_record:1 recover_record:1 tx_json:1 raw_tx:1 raw_frames:1 keystore:1 sec1:1 der:1 hex:1 bip39:2 ctru_kat:4"
for tw in $PLAN; do
  t=${tw%%:*}; w=${tw##*:}; runs=$(( (10000000 + w - 1) / w ))
  for i in $(seq 1 "$w"); do
    mkdir -p corpus-out/$t-$i artifacts/$t
    ./bins/$t corpus-out/$t-$i $ROOT/fuzz/corpus/$t -runs=$runs -seed=$((${SEED_BASE:-1000} + i)) -max_total_time=${FUZZ_SECONDS:-500} \
      -print_final_stats=1 -artifact_prefix=artifacts/$t/ -rss_limit_mb=2048 -timeout=10 \
      >logs/$t-$i.log 2>&1 &
  done
done
wait
{
  printf "target\tworker\texecutions\tseconds\toutcome\n"
  for f in logs/*.log; do
    n=$(basename "$f" .log)
    ex=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$f" | grep -o '[0-9]*$')
    secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$f" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
    if grep -q -E 'ERROR: libFuzzer|panicked|deadly signal|SUMMARY' "$f"; then out=FAILURE; else out=ok; fi
    printf "%s\t%s\t%s\t%s\t%s\n" "${n%-*}" "${n##*-}" "${ex:-?}" "${secs:-?}" "$out"
  done
} | tee "$OUT/fuzz_summary.tsv"
ls -R artifacts | head -50
tar czf "$OUT/fuzz_logs.tgz" logs artifacts 2>/dev/null
