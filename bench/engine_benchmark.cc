// Micro-benchmarks of the public API (engine/db.h) that show the fixed cost of a transaction:
// autocommit Put with sync OFF (so no fsync hides it) in each rollback-journal mode, batched
// Puts, autocommit Get, Get inside one read transaction, and autocommit Gets from two threads
// through one WAL Db and through a Db handle each. Each runs on a MemFileSystem
// (the engine's own cost) and on the POSIX file system in a temporary directory (plus the
// system calls: file locks, journal create/unlink/truncate, page-1 reads).
//
// Every run opens a new database of kKeys keys ("user" + 12 digits, 100-byte values, written
// in one transaction) with the default 2000-page cache, which holds all of it. Writes overwrite
// random existing keys with same-size values, so the tree does not change shape. Counters per
// operation come from Db::Stats: pages read from and written to the database file and the
// journal, and syncs (0 with sync OFF).
//
// The POSIX variants use $TEST_TMPDIR when set (under bazel test), else $TMPDIR or /tmp.
// Run: ./bazelw run //bench:micro -- --benchmark_filter=BM_Db
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "benchmark/benchmark.h"
#include "engine/db.h"
#include "engine/options.h"
#include "engine/trace.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

constexpr uint64_t kKeys = 10000;
constexpr size_t kValueSize = 100;
constexpr size_t kLookupKeys = 1 << 14;  // random keys, cycled through

std::string Key(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%012llu", static_cast<unsigned long long>(i));
  return buf;
}

std::vector<std::string> RandomKeys(uint64_t of = kKeys) {
  std::mt19937_64 rng(1);
  std::vector<std::string> keys;
  keys.reserve(kLookupKeys);
  for (size_t i = 0; i < kLookupKeys; ++i) keys.push_back(Key(rng() % of));
  return keys;
}

enum class Fs { kMem, kPosix };

// A database of kKeys keys on a MemFileSystem or in a new temporary directory, removed with it.
class BenchDb {
 public:
  static absl::StatusOr<std::unique_ptr<BenchDb>> Open(Fs fs, JournalMode mode,
                                                        uint64_t keys = kKeys,
                                                        uint32_t cache_pages = 2000,
                                                        std::optional<TraceValues> record = {},
                                                        uint64_t mmap_size = 0) {
    auto bench = std::unique_ptr<BenchDb>(new BenchDb());
    Options options;
    options.journal_mode = mode;
    options.sync = SyncLevel::kOff;
    options.cache_pages = cache_pages;
    options.mmap_size = mmap_size;
    std::string path = "/bench.db";
    if (fs == Fs::kMem) {
      bench->mem_fs_ = std::make_unique<vfs::MemFileSystem>();
      options.file_system = bench->mem_fs_.get();
    } else {
      JKV_ASSIGN_OR_RETURN(bench->dir_, MakeTempDir());
      path = (bench->dir_ / "bench.db").string();
    }
    bench->path_ = path;
    if (record.has_value()) {  // the trace in a temporary directory (also with kMem)
      if (bench->dir_.empty()) {
        JKV_ASSIGN_OR_RETURN(bench->dir_, MakeTempDir());
      }
      options.record_path = (bench->dir_ / "bench.jkvtrace").string();
      options.record_values = *record;
    }
    JKV_ASSIGN_OR_RETURN(bench->db_, Db::Open(path, options));
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, bench->db_->BeginWrite());
    const std::string value(kValueSize, 'v');
    for (uint64_t i = 0; i < keys; ++i) JKV_RETURN_IF_ERROR(txn->Put(Key(i), value));
    JKV_RETURN_IF_ERROR(txn->Commit());
    return bench;
  }

  ~BenchDb() {
    db_.reset();
    if (!dir_.empty()) {
      std::error_code ignored;  // a leftover temporary directory is harmless
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  Db& db() { return *db_; }
  const std::string& path() const { return path_; }

 private:
  BenchDb() = default;

  static absl::StatusOr<std::filesystem::path> MakeTempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    if (base == nullptr) base = std::getenv("TMPDIR");
    std::string templ = absl::StrCat(base != nullptr ? base : "/tmp", "/jkv-micro-XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", templ, " failed"));
    }
    return std::filesystem::path(templ);
  }

  std::unique_ptr<vfs::MemFileSystem> mem_fs_;  // outlives db_ (declared first)
  std::filesystem::path dir_;                   // POSIX only
  std::string path_;
  std::unique_ptr<Db> db_;
};

// Reports a failed status as the benchmark's error; true when it did.
bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(status.ToString().c_str());
  return true;
}

// Publishes the file I/O made during the timed loop, per iteration.
class IoCounter {
 public:
  IoCounter(benchmark::State& state, Db& db) : state_(state), db_(db), start_(db.Stats()) {}
  ~IoCounter() {
    const DbStats end = db_.Stats();
    Set("db_reads/op", end.database_io.reads - start_.database_io.reads);
    Set("db_writes/op", end.database_io.writes - start_.database_io.writes);
    Set("journal_writes/op", end.journal_io.writes - start_.journal_io.writes);
    Set("syncs/op", end.database_io.syncs + end.journal_io.syncs + end.dir_syncs -
                        start_.database_io.syncs - start_.journal_io.syncs - start_.dir_syncs);
  }

 private:
  void Set(const char* name, uint64_t value) {
    state_.counters[name] =
        benchmark::Counter(static_cast<double>(value), benchmark::Counter::kAvgIterations);
  }

  benchmark::State& state_;
  Db& db_;
  const DbStats start_;
};

// Db::Put: one write transaction per key (begin, Put, commit with its journal).
void BM_DbPut(benchmark::State& state, Fs fs, JournalMode mode) {
  absl::StatusOr<std::unique_ptr<BenchDb>> bench = BenchDb::Open(fs, mode);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::vector<std::string> keys = RandomKeys();
  const std::string value(kValueSize, 'w');
  IoCounter io(state, db);
  size_t i = 0;
  for (auto _ : state) {
    if (Failed(state, db.Put(keys[i++ & (kLookupKeys - 1)], value))) break;
  }
}
BENCHMARK_CAPTURE(BM_DbPut, mem_delete, Fs::kMem, JournalMode::kDelete);
BENCHMARK_CAPTURE(BM_DbPut, mem_truncate, Fs::kMem, JournalMode::kTruncate);
BENCHMARK_CAPTURE(BM_DbPut, mem_persist, Fs::kMem, JournalMode::kPersist);
BENCHMARK_CAPTURE(BM_DbPut, mem_memory, Fs::kMem, JournalMode::kMemory);
BENCHMARK_CAPTURE(BM_DbPut, mem_off, Fs::kMem, JournalMode::kOff);
BENCHMARK_CAPTURE(BM_DbPut, posix_delete, Fs::kPosix, JournalMode::kDelete);
BENCHMARK_CAPTURE(BM_DbPut, posix_truncate, Fs::kPosix, JournalMode::kTruncate);
BENCHMARK_CAPTURE(BM_DbPut, posix_persist, Fs::kPosix, JournalMode::kPersist);

// state.range(0) Puts per write transaction; items/s count keys, so the time per key shows how
// quickly the per-transaction cost is amortized.
void BM_DbPutBatch(benchmark::State& state, Fs fs) {
  absl::StatusOr<std::unique_ptr<BenchDb>> bench = BenchDb::Open(fs, JournalMode::kDelete);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::vector<std::string> keys = RandomKeys();
  const std::string value(kValueSize, 'w');
  const int64_t batch = state.range(0);
  IoCounter io(state, db);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> txn = db.BeginWrite();
    if (Failed(state, txn.status())) break;
    absl::Status s;
    for (int64_t k = 0; k < batch && s.ok(); ++k) {
      s = (*txn)->Put(keys[i++ & (kLookupKeys - 1)], value);
    }
    if (s.ok()) s = (*txn)->Commit();
    if (Failed(state, s)) break;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch);
}
BENCHMARK_CAPTURE(BM_DbPutBatch, mem_delete, Fs::kMem)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(BM_DbPutBatch, posix_delete, Fs::kPosix)->Arg(10)->Arg(100)->Arg(1000);

// Db::Get: one read transaction per key (rollback modes: BeginRead takes the shared lock and
// checks page 1 for another connection's commit, the end of the transaction releases the lock;
// WAL: the transaction pins a snapshot in the -shm with no system call, and each page of the
// descent is a wal-index lookup and a cache lookup: readrandom's path).
void BM_DbGet(benchmark::State& state, Fs fs, JournalMode mode = JournalMode::kDelete) {
  absl::StatusOr<std::unique_ptr<BenchDb>> bench = BenchDb::Open(fs, mode);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::vector<std::string> keys = RandomKeys();
  IoCounter io(state, db);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::optional<std::string>> value = db.Get(keys[i++ & (kLookupKeys - 1)]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
}
BENCHMARK_CAPTURE(BM_DbGet, mem, Fs::kMem);
BENCHMARK_CAPTURE(BM_DbGet, posix, Fs::kPosix);
BENCHMARK_CAPTURE(BM_DbGet, posix_wal, Fs::kPosix, JournalMode::kWal);

// Db::Get with the handle recording a trace (Options::record_path, engine/trace.h): the
// recorder's cost on a cached read, the cheapest operation it records, beside BM_DbGet/mem
// (recording off: one pointer check). synthetic maps each key to its stand-in; keep copies it.
void BM_DbGetRecorded(benchmark::State& state, TraceValues values) {
  absl::StatusOr<std::unique_ptr<BenchDb>> bench =
      BenchDb::Open(Fs::kMem, JournalMode::kDelete, kKeys, 2000, values);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::vector<std::string> keys = RandomKeys();
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::optional<std::string>> value = db.Get(keys[i++ & (kLookupKeys - 1)]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
}
BENCHMARK_CAPTURE(BM_DbGetRecorded, mem_synthetic, TraceValues::kSynthetic);
BENCHMARK_CAPTURE(BM_DbGetRecorded, mem_keep, TraceValues::kKeep);

// Db::Get in WAL mode from a database about twice the default cache (120,000 keys in key
// order, about 3,800 pages, against 2,000): about half the reads miss the cache at their leaf,
// and each miss is a pread of the page, its checksum, the cache's insert and an eviction. The snapshot's table of hot
// pages (pager/hot_pages.h) pins up to half the cache meanwhile; eviction used to walk past
// those pinned pages at every insert.
void DbGetBeyondCache(benchmark::State& state, uint64_t mmap_size, bool checkpoint,
                      CheckpointMode mode = CheckpointMode::kTruncate) {
  constexpr uint64_t kManyKeys = 120000;
  absl::StatusOr<std::unique_ptr<BenchDb>> bench =
      BenchDb::Open(Fs::kPosix, JournalMode::kWal, kManyKeys, 2000, {}, mmap_size);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  if (checkpoint && Failed(state, db.Checkpoint(mode).status())) return;
  const std::vector<std::string> keys = RandomKeys(kManyKeys);
  IoCounter io(state, db);
  const DbStats before = db.Stats();
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::optional<std::string>> value = db.Get(keys[i++ & (kLookupKeys - 1)]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
  const DbStats after = db.Stats();
  state.counters["pages"] = after.page_count;
  state.counters["misses/op"] = benchmark::Counter(
      static_cast<double>(after.cache_misses - before.cache_misses),
      benchmark::Counter::kAvgIterations);
  state.counters["mapped/op"] = benchmark::Counter(
      static_cast<double>(after.map_reads - before.map_reads), benchmark::Counter::kAvgIterations);
  // WAL: pages read in place in the map, no copy (pager/mapped_pages.h), and those checked.
  state.counters["in_place/op"] = benchmark::Counter(
      static_cast<double>(after.map_pages - before.map_pages), benchmark::Counter::kAvgIterations);
  state.counters["checks/op"] = benchmark::Counter(
      static_cast<double>(after.map_checks - before.map_checks), benchmark::Counter::kAvgIterations);
  // WAL: frames of the log copied out of the log's map (wal/wal_connection.h Q1), not pread.
  state.counters["log_mapped/op"] = benchmark::Counter(
      static_cast<double>(after.log_map_reads - before.log_map_reads),
      benchmark::Counter::kAvgIterations);
}
void BM_DbGetBeyondCache(benchmark::State& state) { DbGetBeyondCache(state, 0, false); }
BENCHMARK(BM_DbGetBeyondCache);
// The same after a TRUNCATE checkpoint, so that the pages come from the database file (above
// they come from the log): each miss a pread of it; and with the file read through the memory
// map (Options::mmap_size, 1 GiB), each miss a guarded copy out of the map (vfs/read_map.h).
void BM_DbGetBeyondCacheFile(benchmark::State& state) { DbGetBeyondCache(state, 0, true); }
BENCHMARK(BM_DbGetBeyondCacheFile);
void BM_DbGetBeyondCacheMapped(benchmark::State& state) {
  DbGetBeyondCache(state, 1ull << 30, true);
}
BENCHMARK(BM_DbGetBeyondCacheMapped);
// The same after a PASSIVE checkpoint: every frame copied into the file, the log kept (as an
// automatic or background checkpoint leaves it until the next commit restarts it). Each read
// transaction's snapshot is then `copied` (wal/wal_types.h O9): its pages come from the map
// without a wal-index lookup; without O9 each page would be looked up and read from the log.
void BM_DbGetBeyondCacheMappedCopied(benchmark::State& state) {
  DbGetBeyondCache(state, 1ull << 30, true, CheckpointMode::kPassive);
}
BENCHMARK(BM_DbGetBeyondCacheMappedCopied);
// BM_DbGetBeyondCache's pages (their newest versions in the log, no checkpoint) with the map on:
// each miss whose page is a frame is a guarded copy out of the log's map (wal/wal_connection.h
// Q1) instead of a pread of the log; the pages of the database file are read in place.
void BM_DbGetBeyondCacheLogMapped(benchmark::State& state) {
  DbGetBeyondCache(state, 1ull << 30, false);
}
BENCHMARK(BM_DbGetBeyondCacheLogMapped);

// The WAL database the threaded read benchmarks share: thread 0 makes it before the timed loop
// of any thread (the loop's start is a barrier) and removes it after every thread's loop.
BenchDb* threads_db = nullptr;

bool StartThreadsDb(benchmark::State& state) {
  if (state.thread_index() != 0) return true;
  absl::StatusOr<std::unique_ptr<BenchDb>> bench = BenchDb::Open(Fs::kPosix, JournalMode::kWal);
  if (Failed(state, bench.status())) return false;
  threads_db = bench->release();
  return true;
}

void FinishThreadsDb(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  delete threads_db;
  threads_db = nullptr;
}

// Db::Get from 1 and 2 threads sharing one WAL Db (one connection): the cost of what reader
// threads share, the pager mutex of each transaction's begin and end and the connection's
// reader slot. Real time, so with 2 threads the figure is the time per read of the pair (half
// of one thread's when they do not get in each other's way).
void BM_DbGetShared(benchmark::State& state) {
  if (!StartThreadsDb(state)) return;
  const std::vector<std::string> keys = RandomKeys();
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    absl::StatusOr<std::optional<std::string>> value =
        threads_db->db().Get(keys[i++ & (kLookupKeys - 1)]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
  FinishThreadsDb(state);
}
BENCHMARK(BM_DbGetShared)->Threads(1)->Threads(2)->UseRealTime();

// The same with a Db handle per thread (each its own connection to the one WAL database): what
// reader threads do when they share nothing of a connection.
void BM_DbGetHandlePerThread(benchmark::State& state) {
  if (!StartThreadsDb(state)) return;
  const std::vector<std::string> keys = RandomKeys();
  std::unique_ptr<Db> own;
  for (auto _ : state) {
    if (own == nullptr) {  // the first iteration: every thread past the start barrier
      state.PauseTiming();
      Options options;
      options.journal_mode = JournalMode::kWal;
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(threads_db->path(), options);
      state.ResumeTiming();
      if (Failed(state, db.status())) break;
      own = std::move(*db);
    }
    absl::StatusOr<std::optional<std::string>> value =
        own->Get(keys[state.iterations() & (kLookupKeys - 1)]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
  own.reset();
  FinishThreadsDb(state);
}
BENCHMARK(BM_DbGetHandlePerThread)->Threads(1)->Threads(2)->UseRealTime();

// ReadTransaction::Get: many point reads in one read transaction (no per-read lock or I/O).
void BM_ReadTxnGet(benchmark::State& state, Fs fs, JournalMode mode = JournalMode::kDelete) {
  absl::StatusOr<std::unique_ptr<BenchDb>> bench = BenchDb::Open(fs, mode);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::vector<std::string> keys = RandomKeys();
  absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = db.BeginRead();
  if (Failed(state, txn.status())) return;
  {
    IoCounter io(state, db);
    size_t i = 0;
    for (auto _ : state) {
      absl::StatusOr<std::optional<std::string>> value = (*txn)->Get(keys[i++ & (kLookupKeys - 1)]);
      if (Failed(state, value.status())) break;
      benchmark::DoNotOptimize(*value);
    }
  }
  txn->reset();  // before the Db closes
}
BENCHMARK_CAPTURE(BM_ReadTxnGet, mem, Fs::kMem);
BENCHMARK_CAPTURE(BM_ReadTxnGet, posix, Fs::kPosix);
BENCHMARK_CAPTURE(BM_ReadTxnGet, posix_wal, Fs::kPosix, JournalMode::kWal);

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
