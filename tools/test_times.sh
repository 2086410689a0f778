#!/usr/bin/env bash
# Where the test time goes: the slowest test targets and shards of the last `bazel test` run,
# read from Bazel's test logs (the test.cache_status record Bazel keeps beside each test.log).
#
#   tools/test_times.sh            the run bazel-testlogs points to (the last configuration)
#   tools/test_times.sh asan       the last run under --config=asan (tsan likewise)
#   tools/test_times.sh opt 40     the 40 slowest shards instead of 25
#
# Prints each target's time (all shards summed, and its slowest shard), the slowest shards,
# the sum over every target, and the wall time that sum needs at two tests at once (what this
# 2-core machine runs), the figure to quote for a tier's time. A cached result counts
# with the time of the run that produced it.
set -euo pipefail
cd "$(dirname "$0")/.."

config="${1:-}"
top="${2:-25}"
case "$config" in
  "") logs=bazel-testlogs ;;
  opt) logs=$(readlink -f bazel-out)/k8-opt/testlogs ;;
  asan | tsan) logs=$(readlink -f bazel-out)/k8-opt$config/testlogs ;;
  *) echo "usage: tools/test_times.sh [opt|asan|tsan] [N]" >&2; exit 2 ;;
esac
if [[ ! -d "$logs" ]]; then
  echo "test_times: no test logs at $logs (run the tests first)" >&2
  exit 1
fi

python3 - "$(readlink -f "$logs")" "$top" <<'EOF'
import os, signal, sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)

root, top = sys.argv[1], int(sys.argv[2])

def fields(data):
    """The varint fields of a protobuf message (test.cache_status is a TestResultData)."""
    out, i = {}, 0
    while i < len(data):
        key, i = varint(data, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(data, i)
            out.setdefault(number, []).append(value)
        elif kind == 2:
            length, i = varint(data, i)
            i += length
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        else:
            break
    return out

def varint(data, i):
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i

STATUS = {1: "PASSED", 2: "FLAKY", 3: "TIMEOUT", 4: "FAILED", 5: "INCOMPLETE",
          6: "REMOTE_FAILURE", 7: "FAILED_TO_BUILD", 8: "TOOL_HALTED_BEFORE_TESTING"}
shards, targets = [], {}
for dirpath, dirnames, filenames in os.walk(root):
    if "test.cache_status" not in filenames:
        continue
    with open(os.path.join(dirpath, "test.cache_status"), "rb") as f:
        f_ = fields(f.read())
    # run_duration_millis (12), else the sum of test_times (9).
    ms = f_.get(12, [sum(f_.get(9, [0]))])[0]
    status = STATUS.get(f_.get(3, [0])[0], "?")
    rel = os.path.relpath(dirpath, root)
    parts = rel.split(os.sep)
    shard = ""
    if parts[-1].startswith("shard_") or parts[-1].startswith("run_"):
        shard = parts.pop()
    label = "//" + "/".join(parts[:-1]) + ":" + parts[-1]
    shards.append((ms, label, shard, status))
    t = targets.setdefault(label, [0, 0, 0, set()])
    t[0] += ms
    t[1] = max(t[1], ms)
    t[2] += 1
    t[3].add(status)

if not shards:
    sys.exit("test_times: no test results under " + root)
total = sum(s[0] for s in shards)
slowest = max(s[0] for s in shards)
print(f"test logs: {root}")
print(f"{len(targets)} targets, {len(shards)} shards: {total / 1000:.0f} s of test time; "
      f"at 2 tests at once at least {max(total / 2, slowest) / 1000 / 60:.1f} min of wall time")
print()
print(f"{'target':58} {'total':>8} {'slowest':>8} shards status")
for label, (ms, mx, n, st) in sorted(targets.items(), key=lambda kv: -kv[1][0])[:top]:
    print(f"{label:58} {ms / 1000:7.1f}s {mx / 1000:7.1f}s {n:6} {','.join(sorted(st))}")
print()
print(f"the {min(top, len(shards))} slowest shards:")
for ms, label, shard, status in sorted(shards, reverse=True)[:top]:
    print(f"  {ms / 1000:7.1f}s {label} {shard} {status}")
EOF
