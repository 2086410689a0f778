#!/usr/bin/env bash
# The custom-policy example runs, its policy is the one journalkv used, and it did its job.
set -euo pipefail
binary="$TEST_SRCDIR/journalkv/examples/custom_policy"
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/custom-policy.XXXXXX")
output=$("$binary" "$dir")
expected=$'policy quiet-time\ncommits 2000\nbackground checkpoints ran: yes\nlog stayed under the cap plus one commit: yes\nbackground errors 0'
if [[ "$output" != "$expected" ]]; then
  echo "unexpected output:"; echo "$output"; exit 1
fi
if [[ -e "$dir/custom-policy.db-wal" || -e "$dir/custom-policy.db-shm" ]]; then
  echo "the last close left the log or index behind"; exit 1
fi
rm -rf "$dir"
echo "1 passed, 0 failed"
