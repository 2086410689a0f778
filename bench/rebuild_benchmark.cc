// The rollback journal's side of a rebuild (pager/txn.h L7-L11), the path `jkv compact` takes
// in the rollback modes, on an in-memory file system (no sync costs; journal DELETE at sync
// FULL, so every journal flush and sync call is made): N pages of a committed database written
// anew from page 2 up through Allocate (each page's original kept and read ahead, L7 and L11),
// the page `from` the end read through GetAtStart (L8) as a compaction's cursor reads the old
// tree, spilling whenever the dirty pages outgrow the cache (the journal's records, the
// pages' writes). The rollback that restores the database runs outside the timing.
//
//   ./bazelw build -c opt //bench:rebuild_benchmark && bazel-bin/bench/rebuild_benchmark
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "base/endian.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "pager/pager.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

constexpr uint32_t kCachePages = 512;  // the rebuild spills several times

bool Failed(benchmark::State& state, const absl::Status& s) {
  if (s.ok()) return false;
  state.SkipWithError(std::string(s.message()).c_str());
  return true;
}

void BM_RebuildRollback(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/db");
  pager::PagerOptions options;
  options.journal_mode = pager::JournalMode::kDelete;
  options.sync = pager::SyncLevel::kFull;
  options.cache_pages = kCachePages;
  absl::StatusOr<std::unique_ptr<pager::Pager>> pager =
      pager::Pager::Open(&fs, "/db/rebuild.db", options);
  if (Failed(state, pager.status())) return;
  {
    absl::StatusOr<std::unique_ptr<pager::WriteTxn>> txn = (*pager)->BeginWrite();
    if (Failed(state, txn.status())) return;
    for (uint32_t i = 0; i < n; ++i) {
      absl::StatusOr<pager::MutablePage> page = (*txn)->Allocate();
      if (Failed(state, page.status())) return;
      base::EncodeFixed32(page->data.data(), page->page_no.value());
      std::memset(page->data.data() + 4, 'p', 200);
      if (Failed(state, (*txn)->SpillIfNeeded())) return;
    }
    if (Failed(state, (*txn)->Commit())) return;
  }
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<pager::WriteTxn>> txn = (*pager)->BeginWrite();
    if (Failed(state, txn.status())) return;
    if (Failed(state, (*txn)->StartRebuild())) return;
    for (uint32_t i = 0; i < n; ++i) {
      absl::StatusOr<pager::MutablePage> page = (*txn)->Allocate();
      if (Failed(state, page.status())) return;
      absl::StatusOr<pager::PageRef> old = (*txn)->GetAtStart(PageNo(n + 1 - i));
      if (Failed(state, old.status())) return;
      std::memcpy(page->data.data(), old->data().data(), 204);
      if (Failed(state, (*txn)->SpillIfNeeded())) return;
    }
    state.PauseTiming();
    if (Failed(state, (*txn)->Rollback())) return;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_RebuildRollback)->Arg(4000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
