#!/usr/bin/env bash
# Installs journalkv for use outside Bazel:
#
#   ./bazelw run //:install -- --prefix=DIR
#
# puts DIR/lib/libjournalkv.a and libjournalkv.so, the headers under
# DIR/include/journalkv/ (included as "engine/db.h"), and DIR/lib/pkgconfig/journalkv.pc. A
# relative DIR is taken from the directory the command was run in.
set -euo pipefail

usage() {
  echo "usage: ./bazelw run //:install -- --prefix=DIR"
}

prefix=""
for arg in "$@"; do
  case "$arg" in
    --prefix=*) prefix="${arg#--prefix=}" ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install: unknown argument \"$arg\"" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ -z "$prefix" ]]; then
  echo "install: --prefix=DIR is required" >&2
  usage >&2
  exit 2
fi
if [[ "$prefix" != /* ]]; then
  prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix"
fi

# The bundle's files, from this script's runfiles (bazel run, or a test that has it as data).
root=""
for candidate in "${TEST_SRCDIR:-}/journalkv" "${RUNFILES_DIR:-}/journalkv" "$0.runfiles/journalkv" "$PWD"; do
  if [[ -f "$candidate/libjournalkv.a" ]]; then
    root="$candidate"
    break
  fi
done
if [[ -z "$root" ]]; then
  echo "install: cannot find the built library (run it with ./bazelw run //:install)" >&2
  exit 1
fi

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
# cp and chmod, not install(1): this script is itself named install, and a PATH holding its
# own directory would make it call itself.
copy() {  # SOURCE DEST MODE
  mkdir -p "$(dirname "$2")"
  rm -f "$2"
  cp "$1" "$2"
  chmod "$3" "$2"
}
copy "$root/libjournalkv.a" "$prefix/lib/libjournalkv.a" 0644
copy "$root/libjournalkv.so" "$prefix/lib/libjournalkv.so" 0755
rm -rf "$prefix/include/journalkv"
# The public headers (engine/db.h for C++, capi/journalkv.h for C) and the project headers they
# include, transitively; nothing else: the engine's internals (the pager, the log, the
# wal-index) stay out of an embedder's include path.
headers="$root/include/journalkv"
pending=(engine/db.h capi/journalkv.h)
declare -A seen=()
while ((${#pending[@]} > 0)); do
  header="${pending[-1]}"
  unset 'pending[-1]'
  [[ -z "${seen[$header]:-}" ]] || continue
  seen[$header]=1
  if [[ ! -f "$headers/$header" ]]; then
    echo "install: $header is included by a public header but was not built" >&2
    exit 1
  fi
  copy "$headers/$header" "$prefix/include/journalkv/$header" 0644
  # Quoted includes that are the project's own (Abseil's are the system's).
  while IFS= read -r included; do
    if [[ -f "$headers/$included" ]]; then pending+=("$included"); fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$headers/$header")
done
sed "s|@PREFIX@|$prefix|" "$root/journalkv.pc.in" >"$prefix/lib/pkgconfig/journalkv.pc"
echo "installed journalkv in $prefix (lib/, include/journalkv/, lib/pkgconfig/journalkv.pc)"
