#!/usr/bin/env bash
# Cross-checks the benchmark's interposed system-call counters against strace: the counts of
# fsync, fdatasync and storage writes that syscall_probe reports must match what the kernel saw,
# the writes within a small tolerance (strace -y lets the check leave out writes to pipes and stdout).
set -euo pipefail
probe="$TEST_SRCDIR/journalkv/bench/syscall_probe"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! command -v strace >/dev/null; then
  echo "strace is not installed (./bazelw installs it)"; exit 1
fi
# LeakSanitizer cannot run under ptrace: keep AddressSanitizer, drop the leak check.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# -y names each descriptor's file, so the count can leave out what is not storage: the probe's
# lines on stdout and the pipes a sanitizer runtime writes to by raw system calls (its checks of
# memory ranges; more of them with JKV_DCHECK on, 24 in one ASan run).
strace -f -y -o "$dir/strace.txt" -e trace=fsync,fdatasync,msync,write,pwrite64,writev,pwritev \
  "$probe" "$dir" > "$dir/counts.txt"
cat "$dir/counts.txt"
calls() {  # calls of the given system calls on files (not pipes, not stdout or stderr)
  local pattern
  pattern=$(IFS='|'; echo "$*")
  grep -E "^[0-9]+ +($pattern)\(" "$dir/strace.txt" | grep -v '<pipe:' |
    grep -vE "^[0-9]+ +[a-z0-9]+\([12]<" | wc -l
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
check fsync "$(ours fsync)" "$(calls fsync)" 0
check fdatasync "$(ours fdatasync)" "$(calls fdatasync)" 0
# libc may write to a file by itself (none seen); a small tolerance for that.
check writes "$(ours writes)" "$(calls write pwrite64 writev pwritev)" 2
(( $(ours fdatasync) + $(ours fsync) >= 60 )) || { echo "too few flushes counted"; status=1; }
if (( status == 0 )); then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $status
