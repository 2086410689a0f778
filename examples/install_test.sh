#!/usr/bin/env bash
# The library outside Bazel (README, "Using it without Bazel"): //:install puts the static and
# shared libraries, the headers and journalkv.pc under a prefix; the README's example program
# (examples/example.cc, which example_test checks is the README's verbatim) is then compiled
# with plain g++ and pkg-config against that copy, linked with the shared library and with the
# static one, and each binary must print what the README says. Its database path is changed
# to this test's temporary directory, so that it does not meet example_test's run. The C API's
# test program is built with gcc, as C, against the same copy.
set -euo pipefail
src="$TEST_SRCDIR/journalkv"
prefix="$TEST_TMPDIR/prefix"
"$src/install" --prefix="$prefix"
for f in lib/libjournalkv.a lib/libjournalkv.so lib/pkgconfig/journalkv.pc \
  include/journalkv/engine/db.h include/journalkv/engine/options.h; do
  [[ -f "$prefix/$f" ]] || { echo "not installed: $f"; exit 1; }
done
"$src/install" --bogus >/dev/null 2>&1 && { echo "install accepted an unknown argument"; exit 1; }
# Only the public headers and what they include: none of the engine's internals.
for f in pager/pager.h pager/pager_options.h wal/wal_connection.h shm/wal_index.h \
  log/wal_log.h wal/checkpoint_copy.h btree/btree.h; do
  [[ ! -e "$prefix/include/journalkv/$f" ]] || { echo "an internal header was installed: $f"; exit 1; }
done

db="$TEST_TMPDIR/example.db"
sed "s|/tmp/journalkv-example.db|$db|" "$src/examples/example.cc" >"$TEST_TMPDIR/example.cc"
grep -q "$db" "$TEST_TMPDIR/example.cc" || { echo "the example's database path moved"; exit 1; }

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir=$(pkg-config --variable=libdir journalkv)
[[ "$libdir" == "$prefix/lib" ]] || { echo "journalkv.pc names libdir $libdir"; exit 1; }
cd "$TEST_TMPDIR"
# The README's command, plus an rpath so that the binary finds the shared library.
g++ example.cc -o example_shared $(pkg-config --cflags --libs journalkv) -Wl,-rpath,"$libdir"
g++ example.cc -o example_static $(pkg-config --cflags journalkv) "$libdir/libjournalkv.a" \
  $(pkg-config --variable=deplibs journalkv)
# (ldd's output taken whole first: grep -q stops reading at its match, and under pipefail the
# writer's SIGPIPE would fail the pipeline.)
static_libs=$(ldd example_static)
shared_libs=$(ldd example_shared)
if [[ "$static_libs" == *libjournalkv* ]]; then
  echo "the static build links libjournalkv.so"; exit 1
fi
if [[ "$shared_libs" != *"$libdir/libjournalkv.so"* ]]; then
  echo "the shared build does not use the installed libjournalkv.so:"; echo "$shared_libs"; exit 1
fi

expected=$'banana is yellow\nbanana = yellow\ncherry = dark red'
for binary in example_shared example_static; do
  rm -f "$db" "$db-journal"
  output=$("./$binary")
  if [[ "$output" != "$expected" ]]; then
    echo "$binary printed:"; echo "$output"; exit 1
  fi
done
# The C API from C: capi_test.c compiled by gcc as C against the installed headers and the
# shared library (which carries its C++ runtime), then run.
# A sanitizer build's library needs the program built with the same sanitizer (its runtime
# first): the -fsanitize flags of journalkv.pc's Cflags, none in a normal build.
sanitize=$(pkg-config --cflags journalkv | tr ' ' '\n' | grep -e '^-fsanitize' || true)
# A custom checkpoint policy (examples/custom_policy.cc) needs no header but the installed ones.
g++ -std=c++20 -c "$src/examples/custom_policy.cc" -o custom_policy.o $(pkg-config --cflags journalkv)
gcc -std=c11 $sanitize "$src/capi/capi_test.c" -o capi_test \
  $(pkg-config --cflags-only-I journalkv) -L"$libdir" -ljournalkv -Wl,-rpath,"$libdir"
./capi_test
echo "3 passed, 0 failed"
