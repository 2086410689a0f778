// Micro-benchmarks of pipelined commits (WriteTransaction::CommitAsync, engine/db.h;
// pager/commit_pipeline.h): one writer thread, single-put transactions in WAL mode at sync
// FULL, on the POSIX file system in a temporary directory (a real fdatasync per flush).
//
//   BM_CommitSync              Commit: each transaction waits for its own flush
//   BM_CommitAsync/W           CommitAsync, up to W commits in flight, the oldest waited for
//                              first (W = 1: the flush of one overlaps the next one's append)
//   BM_CommitAsyncMem/W        the same on the in-memory file system: the pipeline's own cost
//                              (promise, queue, flusher hand-off) with a sync that costs nothing
//
// items/s are commits per second; the counter commits_per_flush is the commits over the log
// syncs made (Db::Stats wal_syncs). The directory is $TEST_TMPDIR, $TMPDIR or /tmp.
// Run: ./bazelw run //bench:micro -- --benchmark_filter=BM_Commit
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "engine/db.h"
#include "engine/options.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

std::filesystem::path TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  if (dir == nullptr) dir = std::getenv("TMPDIR");
  if (dir == nullptr) dir = "/tmp";
  static int n = 0;
  std::filesystem::path p =
      std::filesystem::path(dir) / absl::StrCat("jkv_commit_benchmark_", getpid(), "_", n++);
  std::filesystem::create_directories(p);
  return p;
}

// `window` 0: Commit; else CommitAsync with up to `window` commits in flight.
void RunCommits(benchmark::State& state, int window, bool mem) {
  vfs::MemFileSystem mem_fs;
  const std::filesystem::path dir = mem ? std::filesystem::path("/") : TempDir();
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kFull;
  o.checkpoint_policy = "threshold:1000";
  if (mem) o.file_system = &mem_fs;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open((dir / "c.db").string(), o);
  if (!db.ok()) {
    state.SkipWithError(std::string(db.status().message()).c_str());
    return;
  }
  const std::string value(100, 'v');
  std::deque<PendingCommit> in_flight;
  const double syncs_before = (*db)->Stats().Value("wal_syncs").value_or(0);
  uint64_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> txn = (*db)->BeginWrite();
    absl::Status s = txn.status();
    if (s.ok()) s = (*txn)->Put(absl::StrCat("key", i++ % 1000), value);
    if (s.ok() && window == 0) s = (*txn)->Commit();
    if (s.ok() && window > 0) {
      in_flight.push_back((*txn)->CommitAsync());
      while (s.ok() && in_flight.size() > static_cast<size_t>(window)) {
        s = in_flight.front().Wait();
        in_flight.pop_front();
      }
    }
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
  }
  for (; !in_flight.empty(); in_flight.pop_front()) in_flight.front().Wait().IgnoreError();
  const double syncs = (*db)->Stats().Value("wal_syncs").value_or(0) - syncs_before;
  state.SetItemsProcessed(state.iterations());
  state.counters["commits_per_flush"] = syncs > 0 ? static_cast<double>(state.iterations()) / syncs : 0;
  db->reset();
  if (!mem) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

void BM_CommitSync(benchmark::State& state) { RunCommits(state, 0, false); }
BENCHMARK(BM_CommitSync)->UseRealTime();
void BM_CommitAsync(benchmark::State& state) {
  RunCommits(state, static_cast<int>(state.range(0)), false);
}
BENCHMARK(BM_CommitAsync)->Arg(1)->Arg(4)->Arg(16)->UseRealTime();
void BM_CommitAsyncMem(benchmark::State& state) {
  RunCommits(state, static_cast<int>(state.range(0)), true);
}
BENCHMARK(BM_CommitAsyncMem)->Arg(0)->Arg(1)->Arg(16)->UseRealTime();

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
