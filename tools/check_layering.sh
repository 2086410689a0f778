#!/usr/bin/env bash
# Enforces the layer order (README.md, "Layout", lists the folders from the bottom up):
#   capi -> engine -> btree -> pager -> checkpoint -> wal -> log -> shm -> vfs -> base
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
    wal) echo 4 ;;
    checkpoint) echo 5 ;;
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
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files '*.h' '*.cc' '*.c' 2>/dev/null || find . -name '*.h' -o -name '*.cc' -o -name '*.c')

# The journaling modes stay apart, through every header a file reaches (includes followed
# transitively, not only its own): the rollback journal (pager/rollback_*, pager/journal*) and
# the mode-neutral half of the seam (pager/journal_strategy.h, pager/pager_core.h,
# pager/pager_options.h, pager/txn.h) reach nothing of the WAL (wal/ but its checkpoint
# vocabulary wal/checkpoint_types.h, which the seam's Checkpoint and the public engine/db.h
# name; log/, shm/, checkpoint/ (its policies and background thread are the WAL's),
# pager/wal_*, pager/hot_pages*); pager/pager_core.h and pager/pager_options.h not even that
# vocabulary (they reach nothing in wal/ at all); the WAL's files
# (pager/wal_*, pager/hot_pages*, wal/, log/) reach nothing of the rollback journal. Both meet
# the pager only through pager/journal_strategy.h. Atomic batches (pager/atomic_*) and the file
# locks' protocol the rollback journal shares with them (pager/in_place_*) are kept from the
# WAL likewise, and atomic batches from the rollback journal.
declare -A includes_of=()
while IFS= read -r file; do
  includes_of[$file]=$(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file" | tr '\n' ' ')
done < <(git ls-files '*.h' '*.cc' 2>/dev/null || find . -name '*.h' -o -name '*.cc' | sed 's|^\./||')

# Prints every project file `file` includes, directly or through other project headers.
reach() {
  local -A seen=()
  local -a todo=("$1")
  while ((${#todo[@]})); do
    local f=${todo[-1]}
    unset 'todo[-1]'
    local inc
    for inc in ${includes_of[$f]:-}; do
      [[ -n "${includes_of[$inc]+x}" && -z "${seen[$inc]+x}" ]] || continue
      seen[$inc]=1
      todo+=("$inc")
      echo "$inc"
    done
  done
}

is_wal_file() {
  [[ "$1" != wal/checkpoint_types.h ]] &&
    [[ "$1" == wal/* || "$1" == log/* || "$1" == shm/* || "$1" == pager/wal_* ||
       "$1" == pager/hot_pages* || "$1" == checkpoint/* ]]
}
is_rollback_file() {
  [[ "$1" == pager/journal.* || "$1" == pager/journal_format.* || "$1" == pager/rollback_* ]]
}
is_in_place_file() {
  [[ "$1" == pager/atomic_* || "$1" == pager/in_place_* ]]
}

for file in "${!includes_of[@]}"; do
  [[ "$file" == *_test.cc ]] && continue
  if [[ "$file" == pager/rollback_* || "$file" == pager/journal* || "$file" == pager/pager_core.h ||
        "$file" == pager/pager_options.h || "$file" == pager/txn.h ]] || is_in_place_file "$file"; then
    while IFS= read -r inc; do
      if is_wal_file "$inc"; then
        echo "layering: $file reaches $inc (the rollback journal and the seam's neutral half must not know the WAL)"
        status=1
      elif [[ ( "$file" == pager/pager_core.h || "$file" == pager/pager_options.h ) &&
              "$inc" == wal/* ]]; then
        echo "layering: $file reaches $inc (the pager's core and options include nothing from wal/)"
        status=1
      fi
    done < <(reach "$file")
  fi
  if [[ "$file" == pager/wal_* || "$file" == pager/hot_pages* || "$file" == wal/* || "$file" == log/* ]]; then
    while IFS= read -r inc; do
      if is_rollback_file "$inc" || is_in_place_file "$inc"; then
        echo "layering: $file reaches $inc (the WAL must not know the rollback journal or atomic batches)"
        status=1
      fi
    done < <(reach "$file")
  fi
  if [[ "$file" == pager/atomic_* ]]; then
    while IFS= read -r inc; do
      if is_rollback_file "$inc"; then
        echo "layering: $file reaches $inc (atomic batches must not know the rollback journal)"
        status=1
      fi
    done < <(reach "$file")
  fi
done

# Only vfs/ may call the operating system's file, lock and mapping primitives.
if git grep -nE '\b(pwrite|pread|fsync|fdatasync|fcntl|mmap|ftruncate)\s*\(' -- \
     'base/*' 'shm/*' 'log/*' 'checkpoint/*' 'wal/*' 'pager/*' 'btree/*' 'engine/*' 'capi/*' 2>/dev/null; then
  echo "layering: operating-system I/O outside vfs/"
  status=1
fi

if ((status == 0)); then echo "layering: ok"; fi
exit $status
