#!/bin/bash
# Interleaved rounds of contention at sync full (wal), writer-keys=own, no readers.
# usage: run.sh ROUNDS SECONDS OUTROOT
R=${1:-3}; S=${2:-2}; OUT=${3:-/tmp/pbench/out}
mkdir -p $OUT
COMMON="--engines=journalkv --modes=wal --sync=full --workloads=contention --threads=0 --writer-keys=own --num=2000 --seconds=$S --floor-seconds=0.3"
for r in $(seq 1 $R); do
  for cfg in "main 1 sync t" "P 1 sync t" "P 1 async t" "P 4 sync t" "P 4 async t" "P 8 sync t" "P 8 async t" "P 4 sync p" "P 4 async p" "P 8 sync p" "P 8 async p"; do
    set -- $cfg
    bin=/tmp/jkvbench-$1; [ $1 = main ] && bin=/tmp/jkvbench-main-P
    extra=""; [ $3 = async ] && extra="--commit=async --commit-window=${WINDOW:-8}"
    [ $4 = p ] && extra="$extra --processes"
    name="$1-w$2-$3-$4-r$r"
    rm -rf $OUT/$name /tmp/pbench/db-$name
    $bin $COMMON --writers=$2 $extra --out=$OUT/$name --dir=/tmp/pbench/db-$name > $OUT/$name.log 2>&1
    rm -rf /tmp/pbench/db-$name
    python3 -c "import json;r=[json.loads(l) for l in open('$OUT/$name/results.jsonl')][0];print('$name', round(r['writer_ops_per_sec']), round(r['fsyncs_per_commit'],3), round(r['floor_per_s']), round(r['floor_ratio'],2))"
  done
done
