#!/bin/bash
# ab.sh OUTFILE BIN...  : interleaved rounds
OUT=$1; shift
for r in 1 2 3; do
  for cfg in "1 threads" "4 procs" "8 procs" "4 threads" "8 threads"; do
    for b in "$@"; do
      echo "round=$r $(/tmp/W/run1.sh $b $cfg /tmp/W/runs/ab)" >> $OUT
    done
  done
done
