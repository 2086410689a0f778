#!/usr/bin/env bash
# jkvbench --reproduce=seeds --quick end to end (bench/reproduce.h): it exits 0 and writes
# report.md with run.json's metadata and a table of published against measured figures for
# every experiment (maw and mfaw need file systems made for the run: where root cannot make
# them, the report must say they were not run, and why), each run's results pass
# check_jkvbench_results.py, and, with gnuplot,
# each experiment has its charts. One experiment again with --repeat=2: each figure's rounds'
# range in its records. Also: an unknown experiment and a flag that does not go with
# --reproduce exit 2.
set -euo pipefail
bench="$TEST_SRCDIR/journalkv/bench/jkvbench"
checker="$TEST_SRCDIR/journalkv/bench/check_jkvbench_results.py"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/reproduce_smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }

for bad in --reproduce=nosuch "--reproduce=seeds --engines=sqlite" --reproduce=; do
  set +e; "$bench" $bad >out.txt 2>err.txt; rc=$?; set -e
  [[ $rc -eq 2 ]] || fail "$bad exited $rc, want 2"
  [[ -s err.txt ]] || fail "$bad printed no error"
done
"$bench" --help > help.txt
grep -q -- '--reproduce=seeds|NAME' help.txt || fail "--help does not document --reproduce"

start=$SECONDS
"$bench" --reproduce=seeds --quick --floor-seconds=0.2 --out="$work/out" \
  --dir="$work/db" > table.txt 2> progress.txt || { tail -30 progress.txt; fail "--reproduce failed"; }
echo "--reproduce=seeds --quick took $((SECONDS - start)) s"
report="$work/out/report.md"
[[ -s $report ]] || fail "no report.md"
[[ -s $work/out/run.json ]] || fail "no run.json"
python3 - "$work/out/run.json" <<'PY' || fail "run.json lacks the floors"
import json, sys
info = json.load(open(sys.argv[1]))
for k in ("date_utc", "host", "kernel", "cpu", "db_fs", "sqlite_version", "lmdb_version"):
    assert info[k], k
assert info["floors"][""] > 0, info["floors"]
PY
for k in 'date (UTC)' host kernel CPU SQLite LMDB 'flush floor'; do
  grep -q "^| $k |" "$report" || fail "report.md's header lacks $k"
done

can_fs=0
if [[ $EUID -eq 0 ]] && command -v mkfs.xfs >/dev/null && command -v losetup >/dev/null; then
  can_fs=1
fi
# Each experiment's section: its figures' table with every figure measured, or (maw and mfaw
# where no file system can be made) "Not run" with why.
python3 - "$report" "$can_fs" <<'PY' || fail "report.md's sections"
import re, sys
text = open(sys.argv[1]).read()
can_fs = sys.argv[2] == "1"
sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", text, re.S | re.M))
want = ["speedtest1-1000", "suite-562", "contention", "writelat-acp", "bursty-acp", "maw",
        "mfaw", "traces", "mmap"]
assert list(sections) == want, list(sections)
for name, body in sections.items():
    if name == "traces":  # no published figures: the shipped traces' cases on every engine
        assert "**Not run:**" not in body and "**Failed:**" not in body, body[:300]
        for trace in ("chat", "kv-cache", "test-results"):
            for engine in ("journalkv", "sqlite", "lmdb"):
                assert re.search(rf"^\| - \| {engine} \|.*\| trace:{trace} \|", body, re.M), \
                    f"traces: no {engine} case of trace:{trace}"
        continue
    if "**Not run:**" in body:
        assert name in ("maw", "mfaw") and not can_fs, f"{name} not run: {body[:300]}"
        assert "--fs" in body, body
        continue
    rows = [l for l in body.splitlines() if l.startswith("| ") and "published" not in l
            and not l.startswith("|---")]
    figures = [l for l in rows if re.search(r"\| [0-9.]+(x| s) ", l)]
    assert figures, f"{name}: no measured figure"
    assert "not measured" not in body, f"{name}: a figure was not measured"
    assert "**Failed:**" not in body, f"{name}: {body}"
PY

for dir in speedtest1-1000:speedtest1-1000 suite-562:suite-562 contention/threads:contention \
           contention/processes:contention writelat-acp:writelat bursty-acp:bursty maw:smalltxn \
           mfaw:multidb2,multidb4 traces:trace:chat,trace:kv-cache,trace:test-results \
           mmap/200k-off:readrandom,scan mmap/200k-on:readrandom,scan; do
  sub=${dir%%:*}
  if [[ ! -d $work/out/$sub ]]; then
    [[ $can_fs -eq 0 && ($sub == maw || $sub == mfaw) ]] && continue
    fail "no folder $sub"
  fi
  engines=journalkv,sqlite
  [[ $sub == traces ]] && engines=journalkv,sqlite,lmdb
  [[ $sub == mmap/* ]] && engines=journalkv,lmdb
  python3 "$checker" "$work/out/$sub" --workloads="${dir#*:}" --engines=$engines \
    || fail "$sub's results"
  if command -v gnuplot >/dev/null; then
    ls "$work/out/$sub"/throughput_*.png >/dev/null || fail "$sub has no charts"
    grep -q "($sub/throughput_" "$report" || fail "report.md does not link $sub's charts"
  fi
done
# Rounds: one experiment again with --repeat=2, every figure within its rounds' range.
"$bench" --reproduce=suite-562 --repeat=2 --floor-seconds=0.2 --out="$work/out2" \
  --dir="$work/db" > table2.txt 2> progress2.txt || { tail -30 progress2.txt; fail "--repeat=2"; }
python3 "$checker" "$work/out2/suite-562" --workloads=suite-562 --engines=journalkv,sqlite \
  || fail "suite-562's results with --repeat=2"
grep -q '^Made by .* (--quick: .*; 2 rounds, interleaved' "$work/out2/report.md" \
  || fail "report.md does not say its rounds"
python3 - "$work/out2/suite-562/results.jsonl" <<'PY' || fail "the rounds"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["repeats"] == 2, r["repeats"]
    assert r["commits_per_sec_min"] <= r["commits_per_sec"] <= r["commits_per_sec_max"], r
PY
[[ -z $(ls -A "$work/db" 2>/dev/null) ]] || fail "case directories were left in --dir"
echo PASS
