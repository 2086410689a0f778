#!/usr/bin/env bash
# Enforces the layer order (README.md, "Layout", lists the folders from the bottom up):
#   capi -> engine -> btree -> pager -> wal -> checkpoint -> log -> shm -> vfs -> base
# A file may include headers of its own layer and of layers below it, never above.
# tools/, bench/, tests/ and fuzz/ sit on top and may include anything; third_party/ is excluded.
# Bazel's layering_check would do this, but it needs a newer clang than Debian 12's.
set -euo pipefail
cd "$(dirname "$0")/.."

rank() {
  case "$1" in
    base) echo 0 ;;
    vfs) echo 1 ;;
    shm) echo 2 ;;
    log) echo 3 ;;
    checkpoint) echo 4 ;;
    wal) echo 5 ;;
    pager) echo 6 ;;
    btree) echo 7 ;;
    engine) echo 8 ;;
    capi) echo 9 ;;
    tools|bench|tests|fuzz) echo 10 ;;
    *) echo "" ;;
  esac
}

status=0
while IFS= read -r file; do
  layer=${file%%/*}
  own=$(rank "$layer")
  [[ -n "$own" ]] || continue
  while IFS= read -r inc; do
    target=${inc%%/*}
    theirs=$(rank "$target")
    [[ -n "$theirs" ]] || continue
    if ((theirs > own)); then
      echo "layering: $file includes $inc ($target is above $layer)"
      status=1
    fi
    # The journaling modes stay apart: the rollback journal's files (pager/journal*,
    # pager/rollback_*) and the WAL's (pager/wal_*, wal/, log/) never include each other; both
    # reach the pager only through pager/journal_strategy.h.
    if [[ "$file" == pager/rollback_* || "$file" == pager/journal* ]] &&
       [[ "$inc" == wal/* || "$inc" == log/* || "$inc" == pager/wal_* ]]; then
      echo "layering: $file includes $inc (the rollback journal must not know the WAL)"
      status=1
    fi
    if [[ "$file" == pager/wal_* || "$layer" == wal || "$layer" == log ]] &&
       [[ "$inc" == pager/journal.h || "$inc" == pager/journal_format.h || "$inc" == pager/rollback_* ]]; then
      echo "layering: $file includes $inc (the WAL must not know the rollback journal)"
      status=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files '*.h' '*.cc' '*.c' 2>/dev/null || find . -name '*.h' -o -name '*.cc' -o -name '*.c')

# Only vfs/ may call the operating system's file, lock and mapping primitives.
if git grep -nE '\b(pwrite|pread|fsync|fdatasync|fcntl|mmap|ftruncate)\s*\(' -- \
     'base/*' 'shm/*' 'log/*' 'checkpoint/*' 'wal/*' 'pager/*' 'btree/*' 'engine/*' 'capi/*' 2>/dev/null; then
  echo "layering: operating-system I/O outside vfs/"
  status=1
fi

if ((status == 0)); then echo "layering: ok"; fi
exit $status
