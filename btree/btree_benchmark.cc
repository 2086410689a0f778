// Micro-benchmarks of the B+tree over MemPages (no pager, no I/O): the cost of the tree code
// itself on the hot paths. Run: bazel run -c opt //btree:btree_benchmark
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "btree/btree.h"
#include "btree/cursor.h"
#include "btree/mem_pages_testing.h"

namespace journalkv::btree {
namespace {

const int kKeys =
    std::getenv("JKV_BENCH_KEYS") ? std::atoi(std::getenv("JKV_BENCH_KEYS")) : 1000000;

std::string Key(uint64_t i) { return absl::StrFormat("user%012d", i); }

// One tree of kKeys keys with 100-byte values, built once per page size.
MemPages& Tree(uint32_t page_size) {
  static auto* trees = new std::vector<std::unique_ptr<MemPages>>();
  for (auto& t : *trees) {
    if (t->usable_size() == pager::UsableSize(page_size)) return *t;
  }
  trees->push_back(std::make_unique<MemPages>(page_size));
  MemPages& pages = *trees->back();
  const std::string value(100, 'v');
  for (int i = 0; i < kKeys; ++i) {
    if (!BTree::Put(pages, Key(i), value).ok()) std::abort();
  }
  return pages;
}

void BM_GetRandom(benchmark::State& state) {
  MemPages& pages = Tree(static_cast<uint32_t>(state.range(0)));
  std::mt19937_64 rng(1);
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i) keys.push_back(Key(rng() % kKeys));
  size_t i = 0;
  for (auto _ : state) {
    auto v = BTree::Get(pages, keys[i++ & 4095]);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_GetRandom)->Arg(4096)->Arg(65536);

void BM_GetIntoRandom(benchmark::State& state) {
  MemPages& pages = Tree(static_cast<uint32_t>(state.range(0)));
  std::mt19937_64 rng(1);
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i) keys.push_back(Key(rng() % kKeys));
  std::string value;
  size_t i = 0;
  for (auto _ : state) {
    auto found = BTree::GetInto(pages, keys[i++ & 4095], &value);
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_GetIntoRandom)->Arg(4096);

void BM_ScanForward(benchmark::State& state) {
  ReadOnlyPages pages(Tree(static_cast<uint32_t>(state.range(0))));
  Cursor c(pages);
  if (!c.SeekToFirst().ok()) std::abort();
  for (auto _ : state) {
    benchmark::DoNotOptimize(c.key());
    if (!c.Next().ok()) std::abort();
    if (!c.Valid() && !c.SeekToFirst().ok()) std::abort();
  }
}
BENCHMARK(BM_ScanForward)->Arg(4096)->Arg(65536);

void BM_ScanForwardWithValue(benchmark::State& state) {
  ReadOnlyPages pages(Tree(static_cast<uint32_t>(state.range(0))));
  Cursor c(pages);
  if (!c.SeekToFirst().ok()) std::abort();
  std::string value;
  for (auto _ : state) {
    if (!c.ReadValue(&value).ok()) std::abort();
    benchmark::DoNotOptimize(value);
    if (!c.Next().ok()) std::abort();
    if (!c.Valid() && !c.SeekToFirst().ok()) std::abort();
  }
}
BENCHMARK(BM_ScanForwardWithValue)->Arg(4096);

void BM_PutSequential(benchmark::State& state) {
  MemPages pages(static_cast<uint32_t>(state.range(0)));
  const std::string value(100, 'v');
  uint64_t i = 0;
  for (auto _ : state) {
    if (!BTree::Put(pages, Key(i++), value).ok()) std::abort();
  }
}
BENCHMARK(BM_PutSequential)->Arg(4096);

void BM_PutRandom(benchmark::State& state) {
  MemPages pages(static_cast<uint32_t>(state.range(0)));
  const std::string value(100, 'v');
  std::mt19937_64 rng(2);
  for (auto _ : state) {
    if (!BTree::Put(pages, Key(rng() % 100000000), value).ok()) std::abort();
  }
}
BENCHMARK(BM_PutRandom)->Arg(4096);

void BM_OverwriteRandom(benchmark::State& state) {
  MemPages& pages = Tree(static_cast<uint32_t>(state.range(0)));
  const std::string value(100, 'w');
  std::mt19937_64 rng(3);
  for (auto _ : state) {
    if (!BTree::Put(pages, Key(rng() % kKeys), value).ok()) std::abort();
  }
}
BENCHMARK(BM_OverwriteRandom)->Arg(4096);

}  // namespace
}  // namespace journalkv::btree

BENCHMARK_MAIN();
