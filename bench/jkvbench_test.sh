#!/usr/bin/env bash
# Runs jkvbench with tiny sizes over every engine and mode at sync off and full, then checks its
# output with check_jkvbench_results.py: results.jsonl and results.csv parse, every documented
# field is present, the numbers are sane, and fsyncs per op are 0 for journalkv at sync off and
# > 0 at sync full. Also checks usage errors exit 2, contention's --processes, --writers=2 and
# --repeat, and, when gnuplot is installed, --plot.
set -euo pipefail
bench="$TEST_SRCDIR/journalkv/bench/jkvbench"
checker="$TEST_SRCDIR/journalkv/bench/check_jkvbench_results.py"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/jkvbench_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }

# Usage errors exit 2 with a message.
for bad in --engines=nosuch --modes=nosuch --sync=sometimes --workloads=nosuch --num=0 \
           --checkpoint=async:5 --repeat=0 --cache-mib=0 --processes=maybe --writers=-1 \
           --writers=x --bogus positional; do
  set +e; "$bench" "$bad" >out.txt 2>err.txt; rc=$?; set -e
  [[ $rc -eq 2 ]] || fail "$bad exited $rc, want 2"
  [[ -s err.txt ]] || fail "$bad printed no error"
done
set +e; "$bench" --writers=257 >out.txt 2>err.txt; set -e
grep -q -- '--writers wants an integer in \[0, 256\]' err.txt || fail "--writers=257: $(cat err.txt)"
"$bench" --help > help.txt
for flag in engines modes sync checkpoint workloads num value-size seconds threads seed out \
            plot quick dir cache-mib processes repeat writers; do
  grep -q -- "--$flag" help.txt || fail "--help does not document --$flag"
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
# Not a terminal: one line per finished case.
[[ $(grep -c '^\[' progress.txt) -ge 10 ]] || fail "too few progress lines"

# The two named scenarios have fixed sizes: run them at sync off to stay fast.
"$bench" --workloads=speedtest1-1000,suite-562 --sync=off --out="$work/out3" >/dev/null \
  2>progress3.txt || { cat progress3.txt; fail "jkvbench scenarios failed"; }
python3 "$checker" "$work/out3" --workloads=speedtest1-1000,suite-562

# Contention with each worker its own process: the children's iterations and system calls
# reach the parent's record, and at sync full the writer's flushes are counted.
"$bench" --workloads=contention --processes --sync=full --threads=2 --seconds=0.3 --num=50 \
  --out="$work/out4" >table4.txt 2>progress4.txt \
  || { cat progress4.txt; fail "jkvbench --processes failed"; }
python3 "$checker" "$work/out4" --workloads=contention
grep -q "(processes)" table4.txt || fail "the table does not say the workers were processes"
python3 - "$work/out4/results.jsonl" <<'PY' || fail "--processes results"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["workers"] == "processes", r
    assert r["fsync_calls"] + r["fdatasync_calls"] + r["msync_calls"] > 0, r  # the writer's
    assert r["writers"] == 1 and r["writer_ops_each"] == [r["writer_ops"]], r  # the default
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
grep -q "median of 3" table5.txt || fail "the table does not say which round it shows"
python3 - "$work/out5/results.jsonl" <<'PY' || fail "--repeat results"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert len(rows) == 6, rows
for r in rows:
    assert r["repeats"] == 3, r
    assert r["ops_per_sec_min"] <= r["ops_per_sec"] <= r["ops_per_sec_max"], r
PY

# The default temporary directory is removed at the end.
"$bench" --engines=lmdb --workloads=readrandom --num=20 --out="$work/out2" >/dev/null 2>&1
[[ -z $(ls -A "$work" | grep '^\.jkvbench-' || true) ]] || fail "temporary directory left behind"
echo "PASS"
