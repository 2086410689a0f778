#!/usr/bin/env bash
# The README's example program must be this file, verbatim, and must run and print what the
# README says it prints.
set -euo pipefail
readme="$TEST_SRCDIR/journalkv/README.md"
example="$TEST_SRCDIR/journalkv/examples/example.cc"
binary="$TEST_SRCDIR/journalkv/examples/example"
python3 - "$readme" "$example" <<'PY'
import sys
readme, example = open(sys.argv[1]).read(), open(sys.argv[2]).read()
if "```cpp\n" + example + "```" not in readme:
    sys.exit("README.md does not contain examples/example.cc verbatim in a ```cpp block")
PY
rm -f /tmp/journalkv-example.db /tmp/journalkv-example.db-journal
output=$("$binary")
expected=$'banana is yellow\nbanana = yellow\ncherry = dark red'
if [[ "$output" != "$expected" ]]; then
  echo "unexpected output:"; echo "$output"; exit 1
fi
rm -f /tmp/journalkv-example.db /tmp/journalkv-example.db-journal
echo "1 passed, 0 failed"
