#!/usr/bin/env bash
# Runs every Google Benchmark suite of bench/ (the *_benchmark binaries in this target's
# runfiles: page_checksum, cell, tree, engine, wal, flush, wake, commit), prints the console tables and writes one JSON
# file with every result.
#
#   ./bazelw run //bench:micro -- [--out=FILE] [--quick] [--benchmark_filter=REGEX] ...
#
#   --out=FILE      the merged JSON (default: micro.json in the directory bazel run was started
#                   from; a relative FILE is taken from there too)
#   --quick         --benchmark_min_time=0.05 (a rough run: about 30 s; the default takes minutes)
#   --benchmark_*   passed to every binary, e.g. --benchmark_filter=Seek,
#                   --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#   --smoke         the check //bench:micro_smoke_test runs: every suite with a tiny
#                   --benchmark_min_time and without the largest arguments, then the JSON must
#                   parse, list benchmarks of every suite and report no benchmark error
#
# The JSON is Google Benchmark's format: "context" from the first suite (plus "suites"), and
# "benchmarks" of every suite, each entry with a "suite" field naming its binary. Merging needs
# python3; without it each suite's JSON is kept as FILE's name with .<suite> before .json.
# A suite whose filter matches nothing is skipped. Exit status: 1 when any binary failed.
set -euo pipefail

usage() { sed -n '2,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p'; }

out=""
smoke=0
pass=()
for arg in "$@"; do
  case "$arg" in
    --out=*) out=${arg#--out=} ;;
    --quick) pass+=(--benchmark_min_time=0.05) ;;
    --smoke) smoke=1 ;;
    --benchmark_out=* | --benchmark_out_format=* | --benchmark_format=*)
      echo "run_micro: $arg is set by this script; use --out=FILE" >&2
      exit 2
      ;;
    --benchmark_*) pass+=("$arg") ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "run_micro: unknown argument $arg" >&2
      usage >&2
      exit 2
      ;;
  esac
done

# The benchmark binaries: in the runfiles under bazel run / bazel test, else beside this script
# (bazel-bin/bench/micro run directly).
if [[ -n "${TEST_SRCDIR:-}" && -d "$TEST_SRCDIR/journalkv/bench" ]]; then
  bin_dir=$TEST_SRCDIR/journalkv/bench
elif [[ -n "${RUNFILES_DIR:-}" && -d "$RUNFILES_DIR/journalkv/bench" ]]; then
  bin_dir=$RUNFILES_DIR/journalkv/bench
elif [[ -d "$0.runfiles/journalkv/bench" ]]; then
  bin_dir=$0.runfiles/journalkv/bench
else
  bin_dir=$(dirname "$0")
fi
binaries=()
for b in "$bin_dir"/*_benchmark; do
  [[ -f "$b" && -x "$b" ]] && binaries+=("$b")
done
if ((${#binaries[@]} == 0)); then
  echo "run_micro: no *_benchmark binaries in $bin_dir" >&2
  exit 1
fi

if ((smoke)); then
  # Tiny runs, and not the 1M-key trees or 1 MiB values (their setup alone takes seconds).
  pass=(--benchmark_min_time=0.001 '--benchmark_filter=-/(1000000|1048576)$' "${pass[@]}")
  out=${out:-${TEST_TMPDIR:-$(mktemp -d)}/micro.json}
fi

# Where bazel run was started, so that relative paths mean what the user meant.
where=${BUILD_WORKING_DIRECTORY:-$PWD}
out=${out:-micro.json}
[[ "$out" == /* ]] || out=$where/$out

parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT

failed=0
for b in "${binaries[@]}"; do
  suite=$(basename "$b")
  suite=${suite%_benchmark}
  echo "=== $suite"
  if ! "$b" --benchmark_format=console --benchmark_out="$parts/$suite.json" \
      --benchmark_out_format=json "${pass[@]}"; then
    echo "run_micro: $suite failed" >&2
    failed=1
  fi
done

merge_py='
import json, os, sys
out, smoke, parts = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
merged = {"context": None, "suites": [], "benchmarks": []}
problems = []
for path in parts:
    suite = os.path.basename(path)[: -len(".json")]
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        problems.append(suite + ": no results (its filter matched nothing, or it failed)")
        continue
    with open(path) as f:
        data = json.load(f)
    if merged["context"] is None:
        merged["context"] = data.get("context")
    merged["suites"].append(suite)
    runs = data.get("benchmarks", [])
    if not runs:
        problems.append(suite + ": no benchmarks in its JSON")
    for run in runs:
        run["suite"] = suite
        merged["benchmarks"].append(run)
        if run.get("error_occurred"):
            problems.append(suite + ": " + run["name"] + ": " + run.get("error_message", ""))
with open(out, "w") as f:
    json.dump(merged, f, indent=2)
for p in problems:
    print("run_micro: " + p, file=sys.stderr)
print("run_micro: %d results from %d suites in %s"
      % (len(merged["benchmarks"]), len(merged["suites"]), out))
sys.exit(1 if smoke and problems else 0)
'

jsons=()
for b in "${binaries[@]}"; do
  suite=$(basename "$b")
  jsons+=("$parts/${suite%_benchmark}.json")
done
mkdir -p "$(dirname "$out")"
if command -v python3 >/dev/null; then
  python3 -c "$merge_py" "$out" "$smoke" "${jsons[@]}" || failed=1
else
  ((smoke == 0)) || { echo "run_micro: --smoke needs python3" >&2; exit 1; }
  echo "run_micro: no python3 to merge the JSON files; keeping one per suite:" >&2
  for j in "${jsons[@]}"; do
    [[ -s "$j" ]] || continue
    dest=${out%.json}.$(basename "$j")
    cp "$j" "$dest"
    echo "  $dest" >&2
  done
fi
exit $failed
