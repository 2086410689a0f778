#!/usr/bin/env bash
# A short tour of jkv, the journalkv command-line tool:  ./bazelw run //tools:demo
# Works in a fresh temporary directory that it removes at the end. Also run by
# //tools:demo_test, so the README's command keeps working.
set -euo pipefail

# Finds the jkv binary in this script's runfiles (bazel run, bazel test, bazel-bin/tools/demo).
find_jkv() {
  local candidates=()
  [[ -n "${RUNFILES_DIR:-}" ]] && candidates+=("$RUNFILES_DIR/journalkv/tools/jkv")
  [[ -n "${TEST_SRCDIR:-}" ]] && candidates+=("$TEST_SRCDIR/journalkv/tools/jkv")
  candidates+=("$0.runfiles/journalkv/tools/jkv" "$(dirname "$0")/jkv" "tools/jkv")
  for c in "${candidates[@]}"; do
    if [[ -x "$c" ]]; then
      echo "$c"
      return
    fi
  done
  echo "demo: cannot find the jkv binary (looked in: ${candidates[*]})" >&2
  exit 1
}

JKV_BIN=$(find_jkv)
jkv() { "$JKV_BIN" "$@"; }

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/jkv-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

bold=""; plain=""
if [[ -t 1 ]]; then bold=$'\e[1m'; plain=$'\e[0m'; fi
say() { printf '\n%s# %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*"; }  # the command as a user would type it

say "Create demo.db and put three keys (each put is its own transaction)"
for kv in "fruit:apple red" "fruit:banana yellow" "fruit:cherry dark\\x20red"; do
  show "jkv demo.db put $kv"
  jkv demo.db put $kv
done

say "Read one back. Bytes outside 0x21..0x7e (and the backslash) are written \\xHH"
show "jkv demo.db get fruit:cherry"
jkv demo.db get fruit:cherry

say "A missing key prints nothing and exits 1 (errors exit 2)"
show "jkv demo.db get fruit:durian"
status=0
jkv demo.db get fruit:durian || status=$?
echo "(exit status $status)"

say "A transaction in 'shell', driven line by line: one answer per command"
mkfifo to_jkv from_jkv
jkv demo.db shell <to_jkv >from_jkv &
shell_pid=$!
exec 3>to_jkv 4<from_jkv  # 3: our commands to the shell, 4: its answers
ask() {  # sends one command, prints it and its answer (scan: "pairs N" and N lines)
  local answer line i
  printf 'shell> %s\n' "$1"
  printf '%s\n' "$1" >&3
  IFS= read -r answer <&4
  printf '%s\n' "$answer"
  if [[ $answer == "pairs "* ]]; then
    for ((i = 0; i < ${answer#pairs }; i++)); do
      IFS= read -r line <&4
      printf '%s\n' "$line"
    done
  fi
}
ask "begin"
ask "put fruit:damson purple"
ask "put veg:kale green"
ask "del fruit:banana"
ask "scan"
say "Meanwhile another process does not see the uncommitted write yet"
show "jkv demo.db get veg:kale"
status=0
jkv demo.db get veg:kale || status=$?
echo "(exit status $status)"
say "Commit it; now everyone does"
ask "commit"
ask "quit"
exec 3>&- 4<&-
wait "$shell_pid"
show "jkv demo.db get veg:kale"
jkv demo.db get veg:kale

say "Scan a range: FROM is inclusive, TO is exclusive"
show "jkv demo.db scan fruit: fruit:d"
jkv demo.db scan fruit: fruit:d

say "Verify every page checksum, the freelist and the B+tree"
show "jkv demo.db check"
jkv demo.db check

say "What the file looks like"
show "jkv demo.db info"
jkv demo.db info

say "Done. 'jkv --help' documents every option and command."
