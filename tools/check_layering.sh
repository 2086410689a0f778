#!/usr/bin/env bash
# Enforces the layer order (README.md, "Layout", lists the folders from the bottom up):
#   engine -> btree -> pager -> checkpoint -> wal -> shm -> vfs -> base
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
    wal) echo 3 ;;
    checkpoint) echo 4 ;;
    pager) echo 5 ;;
    btree) echo 6 ;;
    engine) echo 7 ;;
    tools|bench|tests|fuzz) echo 9 ;;
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
    # pager's rollback journal and wal/ never include each other: the journaling modes stay apart.
    if [[ "$layer" == wal && "$inc" == pager/journal* ]]; then
      echo "layering: $file includes $inc (wal/ must not know the rollback journal)"
      status=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files '*.h' '*.cc' 2>/dev/null || find . -name '*.h' -o -name '*.cc')

# Only vfs/ may call the operating system's file, lock and mapping primitives.
if git grep -nE '\b(pwrite|pread|fsync|fdatasync|fcntl|mmap|ftruncate)\s*\(' -- \
     'base/*' 'shm/*' 'wal/*' 'checkpoint/*' 'pager/*' 'btree/*' 'engine/*' 2>/dev/null; then
  echo "layering: operating-system I/O outside vfs/"
  status=1
fi

if ((status == 0)); then echo "layering: ok"; fi
exit $status
