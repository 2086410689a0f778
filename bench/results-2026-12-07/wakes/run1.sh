#!/bin/bash
# run1.sh BIN N procs|threads OUTDIR
BIN=$1; N=$2; W=$3; OUT=$4
P=""; [ "$W" = procs ] && P=--processes
$BIN --engines=journalkv --modes=wal --sync=full --workloads=contention --writers=$N --threads=0 --writer-keys=own --seconds=${SECS:-2} --num=2000 --floor-seconds=0 $P --out=$OUT >/dev/null 2>&1
python3 - "$OUT" "$BIN" "$N" "$W" <<'PY'
import json,sys
d=[json.loads(l) for l in open(sys.argv[1]+'/results.jsonl')][-1]
c=d['commits'] or 1
wt=d['seconds']*int(sys.argv[3])*1000.0
g=d['group_flushes'] or 1
us=lambda k: 1000.0*d.get(k,0)/c
print(f"{sys.argv[2].split('/')[-1]:14s} w={sys.argv[3]} {sys.argv[4]:7s} {d['ops_per_sec']:8.0f}/s commit={wt*1000/c:6.1f}us lockwait={us('write_lock_wait_ms'):5.1f} work={us('write_work_ms'):5.1f} flushwait={us('flush_wait_ms'):6.1f} [sync/flush={1000*d.get('flush_sync_ms',0)/g:6.1f} join/flush={1000*d.get('flush_join_ms',0)/g:5.1f} sleep/commit={us('flush_sleep_ms'):6.1f} sleeps/c={d.get('flush_sleeps',0)/c:4.2f} lockmiss/c={d.get('flush_lock_misses',0)/c:4.2f}] c/flush={c/g:4.2f} fdatasync/c={d['fdatasync_calls']/c:4.2f} ckpt={d['checkpoints']}")
PY
