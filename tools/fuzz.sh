#!/usr/bin/env bash
# Builds journalkv's libFuzzer targets (fuzz/*_fuzzer.cc) with Debian's clang, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, and fuzzes one of them (docs/testing.md, "Fuzzing").
#
#   tools/fuzz.sh TARGET SECONDS [libFuzzer flags...]   # TARGET: db_file journal wal shm ops
#   tools/fuzz.sh TARGET build                          # only build
#
# The repository's corpus fuzz/corpus/TARGET is read, never written: new inputs go to
# $JKV_FUZZ_DIR/TARGET/corpus (default /tmp/jkv-fuzz), crashes, timeouts and leaks to
# $JKV_FUZZ_DIR/TARGET/ (crash-*, timeout-*, leak-*), libFuzzer's output to
# $JKV_FUZZ_DIR/TARGET/fuzz.log. Merge a minimized handful back by hand, for example
#   cp -r fuzz/corpus/TARGET /tmp/merged
#   /tmp/jkv-fuzz/build/TARGET_fuzzer -merge=1 /tmp/merged /tmp/jkv-fuzz/TARGET/corpus
# and copy a few of the new files in /tmp/merged. Extra flags go to libFuzzer: with
# `-fork=1 -ignore_crashes=1 -ignore_ooms=1` a run goes on past known findings (fuzz/findings/). A finding goes into fuzz/corpus/TARGET once it is fixed
# (the default tier replays it), or into fuzz/findings/TARGET while it is not.
#
# Built outside Bazel, as tools/check_thread_safety.sh compiles: every engine source file with
# -fsanitize=fuzzer-no-link,address,undefined, the target with -fsanitize=fuzzer, by a
# generated Makefile in $JKV_FUZZ_DIR/build (so a second run rebuilds only what changed).
# JKV_DCHECKs are on (no NDEBUG): an internal invariant that fuzzed bytes can break is a
# finding too. Installs clang and libclang-rt-14-dev (libFuzzer) when missing. Runs under
# nice; JKV_FUZZ_JOBS (default 2) sets the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(db_file journal wal shm ops)
if (($# < 2)) || [[ ! " ${targets[*]} " == *" $1 "* ]]; then
  echo "usage: tools/fuzz.sh {${targets[*]// /|}} SECONDS|build [libFuzzer flags...]" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2

tools/ensure_packages.sh clang libclang-rt-14-dev make pkg-config libabsl-dev libxxhash-dev

work=${JKV_FUZZ_DIR:-/tmp/jkv-fuzz}
build=$work/build
mkdir -p "$build"

# The engine's library sources: every .cc of the layers but tests, test helpers and the
# fault-injecting file system (the targets run on MemFileSystem).
lib_sources=$(git ls-files 'base/*.cc' 'vfs/*.cc' 'shm/*.cc' 'log/*.cc' 'checkpoint/*.cc' 'wal/*.cc' \
                'pager/*.cc' 'btree/*.cc' 'engine/*.cc' |
              grep -vE '_test\.cc$|_testing\.cc$|fault_injecting_fs|power_loss_model|file_system_' |
              tr '\n' ' ')
mapfile -t absl_modules < <(sed -n 's/^ *"-l\(absl_[a-z0-9_]*\)",$/\1/p' third_party/BUILD)
cflags="-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"
cflags+=" -fno-sanitize-recover=all -I$PWD $(pkg-config --cflags "${absl_modules[@]}" libxxhash)"
libs="$(pkg-config --libs "${absl_modules[@]}" libxxhash) -latomic -lpthread"

# One object per source, dependencies from clang's -MMD files.
{
  echo "CXX := clang++"
  echo "CXXFLAGS := $cflags"
  echo "LIBS := $libs"
  objs=""
  for src in $lib_sources fuzz/fuzz_util.cc; do
    obj=obj/${src%.cc}.o
    objs+=" $obj"
    printf '%s: %s\n\t@mkdir -p $(dir $@)\n\t$(CXX) $(CXXFLAGS) -MMD -c %s -o $@\n' \
      "$obj" "$PWD/$src" "$PWD/$src"
  done
  echo "LIB_OBJS :=$objs"
  for t in "${targets[@]}"; do
    src=fuzz/${t}_fuzzer.cc
    printf 'obj/%s.o: %s\n\t@mkdir -p $(dir $@)\n\t$(CXX) $(CXXFLAGS) -MMD -c %s -o $@\n' \
      "${src%.cc}" "$PWD/$src" "$PWD/$src"
    printf '%s_fuzzer: obj/%s.o $(LIB_OBJS)\n\t$(CXX) -fsanitize=fuzzer,address,undefined' \
      "$t" "${src%.cc}"
    printf ' $^ $(LIBS) -o $@\n'
  done
  echo '-include $(shell find obj -name "*.d" 2>/dev/null)'
} >"$build/Makefile"
# Objects built from another checkout name its files in their dependency lists: start over.
if [[ -f $build/checkout && $(cat "$build/checkout") != "$PWD" ]]; then rm -rf "$build/obj"; fi
echo "$PWD" >"$build/checkout"
nice -n 15 make -s -C "$build" -j"${JKV_FUZZ_JOBS:-2}" "${target}_fuzzer"
bin=$build/${target}_fuzzer
echo "fuzz: built $bin"
[[ $seconds == build ]] && exit 0

out=$work/$target
mkdir -p "$out/corpus"
echo "fuzz: $target for $seconds s; new inputs in $out/corpus, findings in $out/, log $out/fuzz.log"
# -timeout: an input that runs 10 s is a hang. -rss_limit_mb: a leak or a runaway allocation.
# -max_len: the largest seed (a -shm image is 64 KiB and one byte) and a little more.
set +e
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  nice -n 15 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -max_len=70000 \
  -print_final_stats=1 -artifact_prefix="$out/" "$@" "$out/corpus" "fuzz/corpus/$target" \
  >"$out/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$out/fuzz.log" | tail -n 1 || true
grep -E '^stat::|SUMMARY|ERROR|fuzz:' "$out/fuzz.log" || true
echo "fuzz: exit $rc; corpus $(find "$out/corpus" -type f | wc -l) new inputs"
exit $rc
