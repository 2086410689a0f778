#!/usr/bin/env bash
# Runs jkvbench with tiny sizes over every engine and mode at sync off and full, then checks its
# output with check_jkvbench_results.py: results.jsonl and results.csv parse, every documented
# field is present, the numbers are sane, and fsyncs per op are 0 for journalkv at sync off and
# > 0 at sync full. Also checks usage errors exit 2, contention's --processes, --writers=2 and
# --repeat, journalkv WAL's checkpoint policies (async:N/B, manual) and the engine counters they
# move, journalkv WAL2 (in the default run, alone with --modes=journalkv:wal2, its largest log
# counting both logs), that a policy SQLite lacks skips only SQLite's cases, and, when gnuplot
# is installed, --plot. Then the YCSB workloads A-F (--ycsb) on journalkv WAL and SQLite WAL,
# the flush floor of runs at sync full (and --floor-seconds=0 skipping it), and contention's
# own-keys writers (--writer-keys=own) as threads and as processes. Where root may make loop
# devices and mounts, --fs=xfs,ext4: each case once on each scratch file system, with the
# device's bytes per commit; elsewhere that part says in one line why it is skipped. And the
# multidb workloads (transactions across databases) on journalkv and SQLite, and the bursty
# workload (bursts of commits between idle gaps) on every engine.
set -euo pipefail
bench="$TEST_SRCDIR/journalkv/bench/jkvbench"
checker="$TEST_SRCDIR/journalkv/bench/check_jkvbench_results.py"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/jkvbench_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }

# Usage errors exit 2 with a message.
for bad in --engines=nosuch --modes=nosuch --sync=sometimes --workloads=nosuch --num=0 \
           --checkpoint=async:5 --checkpoint=async:5/5 --checkpoint=threshold:0 --repeat=0 --cache-mib=0 --processes=maybe --writers=-1 \
           --writers=x --ycsb=G --ycsb=A,Z --ycsb= --records=0 --operations=0 --writer-keys=mine \
           --floor-seconds=-1 --floor-seconds=x --fs=btrfs --fs= --puts-per-db=0 \
           --burst=0 --gap=poisson:5 --gap=uniform:9-1 --gap=exp:-1 \
           --commit=later --commit-window=0 --handles=each --settle=later --settle= \
           --bogus positional; do
  set +e; "$bench" "$bad" >out.txt 2>err.txt; rc=$?; set -e
  [[ $rc -eq 2 ]] || fail "$bad exited $rc, want 2"
  [[ -s err.txt ]] || fail "$bad printed no error"
done
set +e; "$bench" --writers=257 >out.txt 2>err.txt; set -e
grep -q -- '--writers wants an integer in \[0, 256\]' err.txt || fail "--writers=257: $(cat err.txt)"
"$bench" --help > help.txt
for flag in engines modes sync checkpoint workloads num value-size seconds threads seed out \
            plot quick dir cache-mib processes repeat writers ycsb records operations writer-keys \
            floor-seconds fs puts-per-db burst gap commit commit-window handles settle; do
  grep -q -- "--$flag" help.txt || fail "--help does not document --$flag"
done
grep -q '^  journalkv: .*|wal|wal2|atomic\*$' help.txt || fail "--help does not list journalkv's wal2 and atomic"
for w in ycsb-a ycsb-b ycsb-c ycsb-d ycsb-e ycsb-f multidb2 multidb4 multidb8 bursty; do
  grep -q "^  $w " help.txt || fail "--help does not describe $w"
done

plot=()
if command -v gnuplot >/dev/null; then plot=(--plot); fi
"$bench" --sync=off,full --num=25 --seconds=0.2 --threads=2 --value-size=50 --seed=9 \
  --out="$work/out" --dir="$work/db" "${plot[@]}" > table.txt 2> progress.txt \
  || { cat progress.txt; fail "jkvbench failed"; }
cat table.txt
[[ -z $(ls -A "$work/db") ]] || fail "case directories were left in --dir"
python3 "$checker" "$work/out" "${plot[@]}"
grep -q "journalkv" table.txt || fail "table has no journalkv row"
# A run at sync full measures the flush floor first: the table prints it, every record carries
# it, and the durable cases that commit have their ratio to it.
grep -q '^flush floor: ' table.txt || fail "the table does not print the flush floor"
grep -q 'x floor' table.txt || fail "the table has no x floor column"
# 25 operations a case: too few for a p99.9, and the table says so.
grep -q '^\* p99.9 of fewer than 1000 operations' table.txt || fail "no p99.9 footnote"
python3 - "$work/out/results.jsonl" <<'PY' || fail "the default run's flush floor"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
floors = {r["floor_per_s"] for r in rows}
assert len(floors) == 1 and floors.pop() > 0, floors  # one measurement for the whole run
for r in rows:
    durable_commits = r["sync"] == "full" and r["commits"] > 0
    assert (r["floor_ratio"] > 0) == durable_commits, r
PY
# The default (--quick) run has journalkv's wal2 in every workload at both sync levels.
python3 - "$work/out/results.jsonl" <<'PY' || fail "the default run lacks journalkv wal2 cases"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
want = {(w, s) for w in "smalltxn bulkload readrandom scan overwrite contention writelat".split()
        for s in ("off", "full")}
got = {(r["workload"], r["sync"]) for r in rows if (r["engine"], r["mode"]) == ("journalkv", "wal2")}
assert got == want, sorted(want - got)
PY
# Not a terminal: one line per finished case.
[[ $(grep -c '^\[' progress.txt) -ge 10 ]] || fail "too few progress lines"

# --settle: the read workloads settle after their load by default (checkpoint), nothing else
# does; --settle=none reads right after the load.
python3 - "$work/out/results.jsonl" <<'PY' || fail "the default run's settle field"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["settle"] == ("checkpoint" if r["workload"] in ("readrandom", "scan") else "none"), r
PY
"$bench" --workloads=readrandom,scan --settle=none --sync=off --num=40 --modes=wal,nosync \
  --out="$work/out_settle" >/dev/null 2>progress_settle.txt \
  || { cat progress_settle.txt; fail "jkvbench --settle=none failed"; }
python3 "$checker" "$work/out_settle" --workloads=readrandom,scan
python3 - "$work/out_settle/results.jsonl" <<'PY' || fail "--settle=none results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert {r["engine"] for r in rows} == {"journalkv", "sqlite", "lmdb"}, rows
assert all(r["settle"] == "none" for r in rows), rows
PY

# The two named scenarios have fixed sizes: run them at sync off to stay fast.
"$bench" --workloads=speedtest1-1000,suite-562 --sync=off --out="$work/out3" >/dev/null \
  2>progress3.txt || { cat progress3.txt; fail "jkvbench scenarios failed"; }
python3 "$checker" "$work/out3" --workloads=speedtest1-1000,suite-562

# Contention with each worker its own process: the children's iterations and system calls
# reach the parent's record, and at sync full the writer's flushes are counted. No flush
# floor (--floor-seconds=0), so no ratio to it.
"$bench" --workloads=contention --processes --sync=full --threads=2 --seconds=0.3 --num=50 \
  --floor-seconds=0 --out="$work/out4" >table4.txt 2>progress4.txt \
  || { cat progress4.txt; fail "jkvbench --processes failed"; }
python3 "$checker" "$work/out4" --workloads=contention
grep -q "(processes)" table4.txt || fail "the table does not say the workers were processes"
grep -q '^flush floor' table4.txt && fail "--floor-seconds=0 still measured the floor"
python3 - "$work/out4/results.jsonl" <<'PY' || fail "--processes results"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["workers"] == "processes", r
    assert r["fsync_calls"] + r["fdatasync_calls"] + r["msync_calls"] > 0, r  # the writer's
    assert r["writers"] == 1 and r["writer_ops_each"] == [r["writer_ops"]], r  # the default
    assert r["writer_keys"] == "hot" and r["floor_per_s"] == 0 and r["floor_ratio"] == 0, r
    # Readers and writer apart: the writer's commits alone flush (rollback readers do not).
    assert r["reader_ops"] > 0 or r["engine"] == "sqlite", r
    assert abs(r["reader_ops_per_sec"] * r["seconds"] - r["reader_ops"]) < 1e-3 * r["ops"] + 1, r
    # (SQLite's rollback-mode writer may be starved of commits: check_writers' note.)
    assert r["fsyncs_per_commit"] >= 1 or r["engine"] == "lmdb" or r["commits"] == 0, r
PY

# --writers=2: each writer's commits are counted and sum to the total, as threads and as
# processes, and every engine's writers commit.
check_writers() {  # RESULTS.jsonl WORKERS
  python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert {r["engine"] for r in rows} == {"journalkv", "sqlite", "lmdb"}, rows
for r in rows:
    assert r["workers"] == sys.argv[2] and r["writers"] == 2, r
    assert len(r["writer_ops_each"]) == 2 and sum(r["writer_ops_each"]) == r["writer_ops"], r
    assert r["commits"] == r["writer_ops"] and r["ops"] == r["writer_ops"] + r["reader_ops"], r
    assert isinstance(r["busy_errors"], int) and isinstance(r["writer_busy_errors"], int), r
    assert 0 <= r["writer_busy_errors"] <= r["busy_errors"], r
    assert r["writer_ops_min"] <= r["writer_ops_max"] <= r["writer_ops"], r
    assert r["writer_ops"] > 0 and r["writer_ops_per_sec"] > 0, r
    assert r["p50_us"] > 0 and r["max_us"] >= r["p50_us"], r  # the writers' latency
PY
}
"$bench" --workloads=contention --writers=2 --threads=1 --sync=off --seconds=0.2 --num=50 \
  --out="$work/out6" >table6.txt 2>progress6.txt \
  || { cat progress6.txt; fail "jkvbench --writers=2 failed"; }
python3 "$checker" "$work/out6" --workloads=contention
grep -q "writers=2 commits=" table6.txt || fail "the table does not show the writers' commits"
check_writers "$work/out6/results.jsonl" threads || fail "--writers=2 results"
"$bench" --workloads=contention --writers=2 --processes --threads=1 --modes=persist,nosync \
  --sync=off --seconds=0.2 --num=50 --out="$work/out7" >table7.txt 2>progress7.txt \
  || { cat progress7.txt; fail "jkvbench --writers=2 --processes failed"; }
cat table7.txt
python3 "$checker" "$work/out7" --workloads=contention
check_writers "$work/out7/results.jsonl" processes || fail "--writers=2 --processes results"

# --repeat: every case runs N times and reports its median round with the range beside it.
"$bench" --modes=persist,nosync --workloads=smalltxn,readrandom --sync=off --num=40 \
  --repeat=3 --out="$work/out5" >table5.txt 2>progress5.txt \
  || { cat progress5.txt; fail "jkvbench --repeat failed"; }
python3 "$checker" "$work/out5" --workloads=smalltxn,readrandom
[[ $(grep -c '^\[' progress5.txt) -eq 18 ]] || fail "--repeat=3 of 6 cases did not run 18 rounds"
grep -q "median of 3: .* ops/s, sd " table5.txt || fail "the table does not say which round it shows"
python3 - "$work/out5/results.jsonl" <<'PY' || fail "--repeat results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 6, rows
for r in rows:
    assert r["repeats"] == 3, r
    assert r["ops_per_sec_min"] <= r["ops_per_sec"] <= r["ops_per_sec_max"], r
    assert r["ops_per_sec_stddev"] > 0, r  # three rounds never time alike
PY

# journalkv WAL's checkpoint policies, each its own case: async:0/100 wakes the background
# checkpointer after every commit and holds a commit that leaves 100 frames until the log is
# copied, so its checkpoints write the database file and the log stays under ~100 frames;
# manual never checkpoints, so the log holds every commit. The engine counters are the phase's own.
"$bench" --modes=journalkv:wal --checkpoint=async:0/100,manual --workloads=writelat \
  --sync=full --num=150 --out="$work/out8" >table8.txt 2>progress8.txt \
  || { cat progress8.txt; fail "jkvbench --checkpoint=async:0/100,manual failed"; }
cat table8.txt
python3 "$checker" "$work/out8" --workloads=writelat --engines=journalkv
header=$(head -1 "$work/out8/results.csv")
for field in blocked_writer_ms checkpoints checkpoint_ms checkpoint_lock_wait_ms max_log_frames \
             db_writes_per_commit write_lock_wait_ms write_work_ms; do
  [[ ",$header," == *",$field,"* ]] || fail "results.csv has no column $field"
done
python3 - "$work/out8/results.jsonl" <<'PY' || fail "--checkpoint=async:0/100,manual results"
import json, sys
rows = {r["checkpoint"]: r for r in map(json.loads, open(sys.argv[1]))}
assert set(rows) == {"async:0/100", "manual"}, rows
a, m = rows["async:0/100"], rows["manual"]
for r in (a, m):
    assert r["engine"] == "journalkv" and r["mode"] == "wal" and r["commits"] == 150, r
    assert r["write_work_ms"] > 0 and r["write_lock_wait_ms"] >= 0, r
assert a["checkpoints"] > 0 and a["frames_copied"] > 0 and a["checkpoint_ms"] > 0, a
assert a["db_writes_per_commit"] > 0, a  # the checkpoints' copies
# Whether a commit reaches 100 frames (and is held) depends on how the checkpointer keeps up
# with the writer; no commit leaves many more, and none waits out the busy timeout (no reader
# holds the checkpoint back).
assert a["max_log_frames"] <= 108 and a["blocked_timeouts"] == 0, a
assert (a["blocked_commits"] > 0) == (a["blocked_writer_ms"] > 0), a
assert m["checkpoints"] == 0 and m["frames_copied"] == 0 and m["checkpoint_ms"] == 0, m
assert m["db_writes_per_commit"] == 0 and m["blocked_commits"] == 0, m
assert m["blocked_writer_ms"] == 0 and m["max_log_frames"] >= 150, m
PY
[[ -s "$work/out8/writelat_journalkv_wal_full_async-0-100.csv" ]] || fail "no async series file"

# journalkv WAL2 alone (--modes=journalkv:wal2). Its largest log is both logs together: under
# manual nothing is copied, so it holds every commit, as WAL's does; the default policy keeps
# it within two switch lengths (2 x 1000 frames, the default wal2_switch_pages).
"$bench" --modes=journalkv:wal2 --checkpoint=manual,default --workloads=writelat,smalltxn \
  --sync=off --num=150 --out="$work/out10" >table10.txt 2>progress10.txt \
  || { cat progress10.txt; fail "jkvbench --modes=journalkv:wal2 failed"; }
cat table10.txt
python3 "$checker" "$work/out10" --workloads=writelat,smalltxn --engines=journalkv
python3 - "$work/out10/results.jsonl" <<'PY' || fail "--modes=journalkv:wal2 results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert {(r["engine"], r["mode"]) for r in rows} == {("journalkv", "wal2")}, rows
assert len(rows) == 4, rows
for r in rows:
    assert r["commits"] == 150 and r["log_max_bytes"] > 0, r
    assert r["max_log_frames"] >= 150, r  # both logs: at least a frame per commit
    if r["checkpoint"] == "manual":
        assert r["checkpoints"] == 0 and r["frames_copied"] == 0, r
    else:
        assert r["max_log_frames"] <= 2000 + 8, r
PY
[[ -s "$work/out10/writelat_journalkv_wal2_off_manual.csv" ]] || fail "no wal2 series file"

# ckptlat: a checkpointer connection beside the writer and readers, in journalkv's WAL and
# WAL2 and SQLite's WAL, and in a rollback mode, where it has nothing to copy.
"$bench" --modes=journalkv:wal,journalkv:wal2,journalkv:delete,sqlite:wal --workloads=ckptlat \
  --sync=off --num=200 --threads=1 --out="$work/out11" >table11.txt 2>progress11.txt \
  || { cat progress11.txt; fail "jkvbench --workloads=ckptlat failed"; }
cat table11.txt
python3 "$checker" "$work/out11" --workloads=ckptlat --engines=journalkv,sqlite
python3 - "$work/out11/results.jsonl" <<'PY' || fail "ckptlat results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 4, rows
for r in rows:
    assert r["commits"] == 200 and r["ops"] == 200, r
    assert r["checkpoint_calls"] > 0, r  # every 5 ms while 200 commits ran
    assert 0 <= r["checkpoint_incomplete"] <= r["checkpoint_calls"], r
    assert r["reader_ops"] > 0, r
    if r["engine"] == "journalkv" and r["mode"] != "delete":
        assert r["checkpoints"] >= r["checkpoint_calls"] - r["checkpoint_incomplete"], r
PY

# SQLite has no async policy: its WAL cases of one are skipped with a note, journalkv's run.
# Only when no selected WAL mode supports a policy is it a usage error.
"$bench" --engines=journalkv,sqlite --modes=wal --checkpoint=async:0/100 --workloads=smalltxn \
  --sync=off --num=20 --out="$work/out9" >table9.txt 2>progress9.txt \
  || { cat progress9.txt; fail "async:0/100 with sqlite selected failed instead of skipping"; }
[[ $(grep -c 'skipping sqlite/wal/\*/async:0/100' progress9.txt) -eq 1 ]] \
  || fail "no one-line note that sqlite's async cases are skipped: $(cat progress9.txt)"
python3 "$checker" "$work/out9" --workloads=smalltxn --engines=journalkv
python3 - "$work/out9/results.jsonl" <<'PY' || fail "async:0/100 with sqlite selected"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert [(r["engine"], r["mode"], r["checkpoint"]) for r in rows] == [
    ("journalkv", "wal", "async:0/100")], rows
PY
set +e; "$bench" --engines=sqlite --modes=wal --checkpoint=async:0/100 --workloads=smalltxn \
  >out.txt 2>err.txt; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "a policy no selected WAL mode supports exited $rc, want 2"
grep -q 'no selected WAL mode supports it' err.txt || fail "unsupported policy: $(cat err.txt)"

# YCSB A-F on journalkv (WAL) and SQLite (WAL) at sync off: every workload's operations split
# as its mix says, the same operations for both engines (one seed), 1000-byte records by
# default, each operation kind's percentiles in the table and the records; no flush floor at
# sync off.
ycsb_all=ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f
"$bench" --ycsb=A,B,C,D,E,F --engines=journalkv,sqlite --modes=journalkv:wal,sqlite:wal \
  --sync=off --records=300 --operations=400 --out="$work/out12" >table12.txt 2>progress12.txt \
  || { cat progress12.txt; fail "jkvbench --ycsb=A,B,C,D,E,F failed"; }
cat table12.txt
python3 "$checker" "$work/out12" --workloads=$ycsb_all --engines=journalkv,sqlite
grep -q '^flush floor' table12.txt && fail "a run at sync off measured the flush floor"
grep -q 'p50/p99: read .* update ' table12.txt || fail "the table lacks YCSB's per-operation latency"
grep -q 'p50/p99: insert .* scan ' table12.txt || fail "the table lacks ycsb-e's scans"
python3 - "$work/out12/results.jsonl" <<'PY' || fail "--ycsb results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 12, len(rows)
want = {(w, e) for w in "abcdef" for e in ("journalkv", "sqlite")}
assert {(r["workload"][-1], r["engine"]) for r in rows} == want, rows
for r in rows:
    assert r["mode"] == "wal" and r["sync"] == "off", r
    assert r["records"] == 300 and r["operations"] == 400 and r["ops"] == 400, r
    assert r["value_size"] == 1000 and r["floor_per_s"] == 0, r
    assert r["bytes_written_per_op"] > 0 or r["workload"] == "ycsb-c", r  # C never writes
    if r["workload"] in ("ycsb-d", "ycsb-e"):
        assert r["insert_ops"] > 0, r
    if r["workload"] == "ycsb-e":
        assert r["scan_ops"] > 300 and r["items"] > 2 * r["scan_ops"], r  # lengths 1..100
PY
# --value-size applies to YCSB's records too; --workloads beside --ycsb runs both.
"$bench" --ycsb=f --workloads=smalltxn --value-size=64 --engines=journalkv --modes=wal \
  --sync=off --num=20 --records=50 --operations=60 --out="$work/out13" >/dev/null \
  2>progress13.txt || { cat progress13.txt; fail "jkvbench --ycsb=f --value-size=64 failed"; }
python3 "$checker" "$work/out13" --workloads=smalltxn,ycsb-f --engines=journalkv --value-size=64

# The flush floor at sync full beside a YCSB workload that commits: its commits per second as a
# multiple of the floor; C commits nothing, so it has no ratio.
"$bench" --ycsb=B,C --engines=journalkv --modes=wal --sync=full --records=100 --operations=200 \
  --floor-seconds=0.2 --out="$work/out14" >table14.txt 2>progress14.txt \
  || { cat progress14.txt; fail "jkvbench --ycsb=B,C at sync full failed"; }
cat table14.txt
python3 "$checker" "$work/out14" --workloads=ycsb-b,ycsb-c --engines=journalkv
grep -q '^flush floor: .* 4 KiB overwrite + fdatasync' table14.txt || fail "no flush floor line"
python3 - "$work/out14/results.jsonl" <<'PY' || fail "the flush floor beside YCSB"
import json, sys
rows = {r["workload"]: r for r in map(json.loads, open(sys.argv[1]))}
b, c = rows["ycsb-b"], rows["ycsb-c"]
assert b["floor_per_s"] > 0 and b["floor_per_s"] == c["floor_per_s"], (b, c)
assert b["commits"] == b["update_ops"] > 0 and b["floor_ratio"] > 0, b
assert c["commits"] == 0 and c["floor_ratio"] == 0, c
PY

# contention --writer-keys=own: each writer commits single puts of keys only it writes, as
# threads (journalkv WAL at sync full: flushes counted, shared by the writers' commits (group
# commit: at most one per commit, plus a checkpoint's), and the floor ratio of the writers'
# commits) and as processes (every engine, sync off). With fewer loaded
# keys than writers each writer still gets one of its own.
check_own() {  # RESULTS.jsonl WORKERS WRITERS
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert rows, "no records"
for r in rows:
    assert r["writer_keys"] == "own" and r["workers"] == sys.argv[2], r
    assert r["writers"] == int(sys.argv[3]) == len(r["writer_ops_each"]), r
    # journalkv's writers take turns (README, "Concurrency"); SQLite's may keep the lock from
    # one another for the whole run, which is a result, not a broken record.
    assert all(n > 0 for n in r["writer_ops_each"]) or r["engine"] != "journalkv", r
    assert r["writer_ops"] > 0, r
    assert r["busy_errors"] == 0, r
    assert r["commits"] == r["writer_ops"] and r["ops"] == r["writer_ops"] + r["reader_ops"], r
    assert abs(r["commits_per_sec"] - r["writer_ops_per_sec"]) < 1e-6 * r["commits_per_sec"] + 1e-9, r
    if r["sync"] == "full":
        assert 0 < r["fsyncs_per_commit"] <= 1.5 and r["floor_ratio"] > 0, r
PY
}
"$bench" --workloads=contention --writers=3 --writer-keys=own --threads=1 --num=2 \
  --modes=journalkv:wal --sync=full --seconds=0.3 --floor-seconds=0.2 --out="$work/out15" \
  >table15.txt 2>progress15.txt || { cat progress15.txt; fail "--writer-keys=own failed"; }
cat table15.txt
python3 "$checker" "$work/out15" --workloads=contention --engines=journalkv
grep -q 'writers=3 commits=.* fsync/commit keys=own' table15.txt \
  || fail "the table does not show own-key writers apart from the readers"
check_own "$work/out15/results.jsonl" threads 3 || fail "--writer-keys=own results (threads)"
"$bench" --workloads=contention --writers=2 --writer-keys=own --processes --threads=1 \
  --modes=persist,wal,nosync --sync=off --seconds=0.3 --num=50 --out="$work/out16" \
  >table16.txt 2>progress16.txt \
  || { cat progress16.txt; fail "--writer-keys=own --processes failed"; }
python3 "$checker" "$work/out16" --workloads=contention
check_own "$work/out16/results.jsonl" processes 2 || fail "--writer-keys=own results (processes)"
# --commit=async: the own-key writers commit pipelined (CommitAsync), as threads and as
# processes; the records say so, and the commits are whole and counted.
for workers in threads processes; do
  extra=(--handles=own); [[ $workers == processes ]] && extra=(--processes)
  "$bench" --workloads=contention --writers=2 --writer-keys=own --threads=0 --num=20 \
    --modes=journalkv:wal --sync=full --seconds=0.3 --floor-seconds=0.1 --commit=async \
    --commit-window=4 "${extra[@]}" --out="$work/out16a-$workers" \
    >table16a.txt 2>progress16a.txt || { cat progress16a.txt; fail "--commit=async failed"; }
  grep -q 'keys=own commit=async/4' table16a.txt || fail "the table does not show --commit=async"
  python3 "$checker" "$work/out16a-$workers" --workloads=contention --engines=journalkv
  check_own "$work/out16a-$workers/results.jsonl" "$workers" 2 \
    || fail "--commit=async results ($workers)"
  python3 - "$work/out16a-$workers/results.jsonl" <<'PY' || fail "--commit=async fields"
import json, sys
for r in map(json.loads, open(sys.argv[1])):
    assert r["commit"] == "async" and r["commit_window"] == 4, r
    assert r["handles"] == ("own" if r["workers"] == "threads" else "shared"), r
PY
done

# The multidb workloads: each operation one transaction across 2 (4) databases, journalkv and
# SQLite only (LMDB, and the modes memory and off, skipped, saying so). The records name the
# databases and the puts per database; every case passed its count check (a case that fails
# it is FAILED and jkvbench exits 1: multidb_test makes one fail).
"$bench" --workloads=multidb2,multidb4 --sync=off --num=5 --puts-per-db=3 --out="$work/out17" \
  >table17.txt 2>progress17.txt || { cat progress17.txt; fail "jkvbench multidb failed"; }
cat table17.txt
python3 "$checker" "$work/out17" --workloads=multidb2,multidb4 --engines=journalkv,sqlite
grep -q 'skipping lmdb/default multidb2 (every sync level): no transaction across database files' \
  progress17.txt || fail "multidb does not say why LMDB is left out"
grep -q 'skipping sqlite/memory multidb4' progress17.txt || fail "multidb ran sqlite memory"
grep -q 'across 4 dbs, 3 puts each' table17.txt || fail "the table does not show the databases"
python3 - "$work/out17/results.jsonl" <<'PY' || fail "multidb results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
modes = {(r["engine"], r["workload"]): set() for r in rows}
for r in rows:
    modes[(r["engine"], r["workload"])].add(r["mode"])
    assert r["databases"] == int(r["workload"][len("multidb"):]) and r["puts_per_db"] == 3, r
    assert r["ops"] == r["commits"] == 5 and r["bytes_written"] > 0, r
for w in ("multidb2", "multidb4"):
    assert modes[("journalkv", w)] == {"delete", "truncate", "persist", "wal", "wal2"}, modes
    assert modes[("sqlite", w)] == {"delete", "truncate", "persist", "wal"}, modes
PY

# bursty: 3 bursts of 4 commits with 1 ms gaps on every engine and mode at sync off and full;
# then journalkv WAL with a background checkpointer (async:0/100), which must have copied the
# log in the gaps, against threshold:1000, which never reaches its threshold here.
"$bench" --workloads=bursty --sync=off,full --num=12 --burst=4 --gap=fixed:1 \
  --floor-seconds=0 --out="$work/out18" "${plot[@]}" >table18.txt 2>progress18.txt \
  || { cat progress18.txt; fail "jkvbench bursty failed"; }
python3 "$checker" "$work/out18" --workloads=bursty "${plot[@]}"
grep -q '3 bursts of 4, gap fixed:1: write .* ms, idle .* ms' table18.txt \
  || fail "the table does not show bursty's bursts"
"$bench" --workloads=bursty --engines=journalkv --modes=wal --sync=normal \
  --checkpoint=async:0/100,threshold:1000 --num=30 --burst=5 --gap=exp:3 --floor-seconds=0 \
  --out="$work/out19" >/dev/null 2>progress19.txt \
  || { cat progress19.txt; fail "jkvbench bursty async failed"; }
python3 "$checker" "$work/out19" --workloads=bursty --engines=journalkv
python3 - "$work/out18/results.jsonl" "$work/out19/results.jsonl" <<'PY' || fail "bursty results"
import json, sys
for r in map(json.loads, open(sys.argv[1])):
    assert r["bursts"] == 3 and r["burst"] == 4 and r["gap"] == "fixed:1", r
    assert r["ops"] == r["commits"] == 12 and r["write_ms_total"] > 0, r
    assert 2 <= r["idle_ms_total"] < 2000, r  # two gaps of 1 ms, sleeps overshoot a little
rows = {r["checkpoint"]: r for r in map(json.loads, open(sys.argv[2]))}
acp, t1000 = rows["async:0/100"], rows["threshold:1000"]
assert acp["bursts"] == t1000["bursts"] == 6, rows
assert acp["background_checkpoints"] > 0 and acp["frames_copied"] > 0, acp
assert acp["policy_checkpoints"] == 0 and acp["blocked_commits"] == 0, acp
assert t1000["checkpoints"] == 0 and t1000["frames_copied"] == 0, t1000
# The same gaps for every case: the same seed draws the same sequence.
assert abs(acp["idle_ms_total"] - t1000["idle_ms_total"]) < 0.5 * t1000["idle_ms_total"], rows
PY

# The default temporary directory is removed at the end.
"$bench" --engines=lmdb --workloads=readrandom --num=20 --out="$work/out2" >/dev/null 2>&1
[[ -z $(ls -A "$work" | grep '^\.jkvbench-' || true) ]] || fail "temporary directory left behind"
echo "PASS"

# --fs: every case on each scratch file system, named in the results, with the device's bytes.
if [[ $(id -u) -eq 0 ]] && PATH=/usr/sbin:/sbin:$PATH command -v mkfs.xfs >/dev/null &&
   PATH=/usr/sbin:/sbin:$PATH command -v mkfs.ext4 >/dev/null; then
  set +e
  "$bench" --engines=journalkv --modes=persist --workloads=smalltxn --sync=full --num=30 \
      --floor-seconds=0 --fs=xfs,ext4 --out=out_fs >out.txt 2>err.txt
  rc=$?
  set -e
  if [[ $rc -ne 0 ]] && grep -q -- "--fs=.*refused" err.txt; then
    echo "--fs skipped: $(grep -- --fs= err.txt | head -1)"
  else
    [[ $rc -eq 0 ]] || fail "--fs=xfs,ext4 exited $rc: $(cat err.txt)"
    python3 - out_fs/results.jsonl <<'PY' || fail "--fs results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert sorted(r["fs"] for r in rows) == ["ext4", "xfs"], rows
for r in rows:
    # A persist commit at sync full writes its journal and the database pages: at least the
    # bytes its write calls wrote must reach the device, plus the file system's own journal.
    assert r["device_bytes_per_commit"] >= r["bytes_written"] / r["commits"], r
PY
    # The mounts this run made (it names them on stderr) are gone; other tests' scratch file
    # systems may be mounted meanwhile (tests run in parallel), so only these are checked.
    made=$(sed -n 's/.* mounted at \([^ ]*\).*/\1/p' err.txt)
    [[ -n $made ]] || fail "--fs named no mount on stderr: $(cat err.txt)"
    for m in $made; do
      if mount | grep -qF " on $m "; then fail "--fs left a mount behind: $m"; fi
    done
  fi
else
  echo "--fs skipped: needs root and mkfs.xfs and mkfs.ext4"
fi
