#!/usr/bin/env bash
# Checks the ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations, which GCC (the
# project's compiler) ignores: compiles every .cc file except bench/'s (tests included) with
# clang's thread-safety analysis, syntax only, warnings as errors. Locks must be base::Mutex
# (base/mutex.h): the analysis cannot see a plain std::mutex.
# Installs Debian's clang and the libraries whose headers it reads when they are missing.
# Arguments: the files to check instead (paths from the repository root). JKV_TSA_JOBS sets how
# many files compile at once (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

# The headers it parses are the build's: Abseil, xxHash, GoogleTest (on a fresh machine this
# may run before ./bazelw has installed them).
tools/ensure_packages.sh clang pkg-config libabsl-dev libxxhash-dev libgtest-dev libgmock-dev

# What Bazel passes (-I. for "base/...", C++20), plus the system libraries' pkg-config flags:
# the Abseil modules that third_party/BUILD links, xxHash and GoogleTest. Without NDEBUG, so
# that the code inside JKV_DCHECK is analysed too. -Wthread-safety-beta adds the lock-order
# checks (ABSL_ACQUIRED_BEFORE/AFTER, none declared yet) and warns about nothing else here.
mapfile -t absl_modules < <(sed -n 's/^ *"-l\(absl_[a-z0-9_]*\)",$/\1/p' third_party/BUILD)
pkg_cflags=$(pkg-config --cflags "${absl_modules[@]}" libxxhash gtest gmock)  # fails loudly
read -ra pkg_flags <<<"$pkg_cflags"
flags=(-std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror -I. "${pkg_flags[@]}")

if (($#)); then
  files=$(printf '%s\n' "$@")
else
  # Tracked and new (not ignored) files that exist in the working tree.
  files=$(git ls-files --cached --others --exclude-standard '*.cc' 2>/dev/null ||
          find . -name '*.cc' -not -path './bazel-*' | sed 's|^\./||')
  files=$(grep -v '^bench/' <<<"$files" | sort -u | while IFS= read -r f; do
            if [[ -f "$f" ]]; then echo "$f"; fi
          done)
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export JKV_TSA_FLAGS="${flags[*]}" JKV_TSA_OUT=$out
# One clang per file; a file that fails leaves its diagnostics in <file>.failed.
# shellcheck disable=SC2016  # expanded by the inner shell
xargs -d '\n' -P "${JKV_TSA_JOBS:-2}" -n 1 bash -c '
  log="$JKV_TSA_OUT/${1//\//_}"
  # shellcheck disable=SC2086  # the flags are words without spaces
  if ! clang++ $JKV_TSA_FLAGS "$1" >"$log" 2>&1; then
    echo "$1" >>"$log"
    mv "$log" "$log.failed"
  fi
' _ <<<"$files" || true

shopt -s nullglob
failed=("$out"/*.failed)
total=$(wc -l <<<"$files")
if ((${#failed[@]})); then
  for log in "${failed[@]}"; do
    echo "== thread-safety: $(tail -n 1 "$log") failed:"
    sed '$d' "$log"
  done
  echo "thread-safety: ${#failed[@]} of $total files failed: clang++ ${flags[*]} <file>"
  exit 1
fi
echo "thread-safety: ok ($total files)"
