#!/usr/bin/env bash
# Cross-checks the benchmark's interposed system-call counters against strace -c: the counts of
# fsync, fdatasync and storage writes that syscall_probe reports must match what the kernel saw,
# within a small tolerance (strace also sees the probe's own output and libc's internal calls).
set -euo pipefail
probe="$TEST_SRCDIR/journalkv/bench/syscall_probe"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! command -v strace >/dev/null; then
  echo "strace is not installed (./bazelw installs it)"; exit 1
fi
# LeakSanitizer cannot run under ptrace: keep AddressSanitizer, drop the leak check.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
strace -f -c -o "$dir/strace.txt" -e trace=fsync,fdatasync,msync,write,pwrite64,writev,pwritev \
  "$probe" "$dir" > "$dir/counts.txt"
cat "$dir/counts.txt"
calls() {  # strace -c's "calls" column for one syscall, 0 when absent
  local n
  n=$(awk -v name="$1" '$NF == name { print $4 }' "$dir/strace.txt" | head -1)
  echo "${n:-0}"
}
ours() { awk -v name="$1" '$1 == name { print $2 }' "$dir/counts.txt"; }
status=0
check() {  # name, ours, strace's, tolerance
  local diff=$(( $2 > $3 ? $2 - $3 : $3 - $2 ))
  if (( diff > $4 )); then
    echo "MISMATCH $1: counter $2, strace $3"; status=1
  else
    echo "ok $1: counter $2, strace $3"
  fi
}
s_fsync=$(calls fsync); s_fdatasync=$(calls fdatasync)
s_writes=$(( $(calls write) + $(calls pwrite64) + $(calls writev) + $(calls pwritev) ))
check fsync "$(ours fsync)" "${s_fsync:-0}" 0
check fdatasync "$(ours fdatasync)" "${s_fdatasync:-0}" 0
# strace also counts the probe's three lines on stdout, and under a sanitizer the sanitizer
# runtime's own writes, which it makes by raw system calls.
tolerance=5
[[ -n "${JKV_SANITIZER:-}" ]] && tolerance=20
check writes "$(ours writes)" "$s_writes" "$tolerance"
(( $(ours fdatasync) + $(ours fsync) >= 60 )) || { echo "too few flushes counted"; status=1; }
if (( status == 0 )); then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $status
