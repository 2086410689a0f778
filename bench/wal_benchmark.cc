// Micro-benchmarks of the WAL hot paths: what a commit costs to frame and write into the log
// (log/wal_log.h), the frame checksum alone (log/wal_format.h), the wal-index operations that
// every page read (Lookup), every appended frame (Append) and every read transaction
// (ReadHeader) make (shm/wal_index.h), and through the public API (engine/db.h) the cost of a
// read transaction and of a cached Get in WAL mode (and WAL2, its two logs) next to the
// rollback journal (DELETE), and of a commit under each kind of checkpoint policy.
//
// The log and wal-index benchmarks run on a MemFileSystem and a heap index, so they measure
// the CPU cost of the code (framing, checksums, hashing, the copy into the file), not a disk.
// The Db benchmarks run on the POSIX file system in a temporary directory, with its file locks
// and, in WAL mode, the -shm file mapped shared: that is where a read transaction's fixed cost
// lives. They use $TEST_TMPDIR when set (under bazel test), else $TMPDIR or /tmp, and sync OFF
// so that no fsync hides the engine's own cost (the background writer's commits included).
//
// Run: ./bazelw run //bench:micro -- --benchmark_filter=BM_Wal
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "engine/db.h"
#include "engine/options.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"
#include "log/wal_format.h"
#include "log/wal_log.h"

namespace journalkv {
namespace {

constexpr uint32_t kPageSize = 4096;

// Reports a failed status as the benchmark's error; true when it did.
bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(status.ToString().c_str());
  return true;
}

// Random bytes (random, so that no hash shortcut for zeroes can flatter a checksum).
std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> bytes(n);
  std::mt19937_64 rng(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// --- wal/: the log file

// Restarts the log after this many frames, as a checkpoint that reaches the end of the log
// would, so that the file stays bounded (about 4 MiB of 4 KiB frames).
constexpr uint32_t kRestartFrames = 1000;

// One writer of a WalLog: the header of the current generation, the next frame and the chain.
class LogWriter {
 public:
  explicit LogWriter(wal::WalLog* log) : log_(log) {}

  // Writes a new header (next ckpt_seq, new salts); the next frame is frame 1 again.
  absl::Status Restart() {
    header_ = wal::WalHeader{kPageSize, ++seq_, static_cast<uint32_t>(rng_()),
                             static_cast<uint32_t>(rng_())};
    JKV_ASSIGN_OR_RETURN(header_.checksum, log_->WriteHeader(header_));
    prev_ = header_.checksum;
    next_frame_ = 1;
    ++restarts_;
    return absl::OkStatus();
  }

  // One transaction: `pages` in one Append, the last frame the commit frame.
  absl::Status AppendTxn(absl::Span<const wal::FramePage> pages, uint32_t db_size) {
    if (next_frame_ - 1 + pages.size() > kRestartFrames) JKV_RETURN_IF_ERROR(Restart());
    JKV_ASSIGN_OR_RETURN(prev_, log_->Append(header_, next_frame_, prev_, pages, db_size));
    next_frame_ += static_cast<uint32_t>(pages.size());
    return absl::OkStatus();
  }

  uint64_t restarts() const { return restarts_; }

 private:
  wal::WalLog* const log_;
  std::mt19937 rng_{42};
  wal::WalHeader header_;
  uint32_t seq_ = 0;
  uint32_t next_frame_ = 1;
  uint64_t prev_ = 0;
  uint64_t restarts_ = 0;
};

// WalLog::Append of a transaction of state.range(0) 4 KiB pages, the last frame carrying the
// commit mark: per frame a 32-byte header chained by an XXH3 of its first 24 bytes (the image
// is not hashed: its trailer is its checksum), the copy of the image into the append buffer
// (none for one page), then two writes into a MemFileSystem file: the images, their headers. The log restarts (WriteHeader, new salts) every ~1000 frames, inside the timed loop:
// it is part of the steady state and costs one 32-byte write per 1000 frames. A warm-up
// generation first grows the file to its steady size, so that no zero-fill is timed. Bytes/s
// count page images (what the commit has to log); items/s count frames.
void BM_WalFrameAppend(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  vfs::MemFileSystem fs;
  absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
      wal::WalLog::Open(&fs, "/bench.db-wal", /*read_only=*/false);
  if (Failed(state, log.status())) return;
  std::vector<std::vector<uint8_t>> images;
  for (uint32_t i = 0; i < n; ++i) {
    images.push_back(RandomBytes(kPageSize, i + 1));
    // The trailer every image the log takes carries.
    base::EncodeFixed64(images.back().data() + kPageSize - 8,
                        wal::ImageChecksum(i + 2, images.back()));
  }
  std::vector<wal::FramePage> pages;
  for (uint32_t i = 0; i < n; ++i) pages.push_back({PageNo(i + 2), images[i]});
  const uint32_t db_size = n + 1;

  LogWriter writer(log->get());
  if (Failed(state, writer.Restart())) return;
  while (writer.restarts() < 2) {  // one whole generation: the file reaches its steady size
    if (Failed(state, writer.AppendTxn(pages, db_size))) return;
  }
  const uint64_t restarts_before = writer.restarts();
  for (auto _ : state) {
    if (Failed(state, writer.AppendTxn(pages, db_size))) break;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * kPageSize);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * n);
  state.counters["restarts"] = static_cast<double>(writer.restarts() - restarts_before);
}
BENCHMARK(BM_WalFrameAppend)->ArgName("pages")->Arg(1)->Arg(8)->Arg(64);

// wal::FrameChecksum alone: XXH3-64 of a frame header's first 24 bytes, seeded with the
// previous frame's checksum (each iteration feeds the next, as the chain does). It is paid once
// per frame appended and once per frame rechained or scanned.
void BM_WalFrameChecksum(benchmark::State& state) {
  uint64_t prev = 0x0123456789abcdef;
  wal::FrameHeader header{7, 0, 0xa1b2c3d4, 0x5e6f7081, 0x1122334455667788};
  for (auto _ : state) {
    prev = wal::FrameChecksum(prev, header);
    header.image_sum += prev;
    benchmark::DoNotOptimize(prev);
  }
}
BENCHMARK(BM_WalFrameChecksum);

// wal::ImageChecksum: XXH3-64 of an image's bytes before its trailer. The recovery scan pays
// it once per frame (the writer does not: the pager computed it when it sealed the page).
// Bytes/s count the image.
void BM_WalImageChecksum(benchmark::State& state) {
  const auto size = static_cast<size_t>(state.range(0));
  const std::vector<uint8_t> image = RandomBytes(size, size);
  for (auto _ : state) benchmark::DoNotOptimize(wal::ImageChecksum(7, image));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
}
BENCHMARK(BM_WalImageChecksum)->Arg(4096);

// --- shm/: the wal-index

// Frames are spread over this many distinct pages, as a database of 200 MiB written at random.
constexpr uint32_t kIndexPages = 50000;

// The page of frame f: a multiplicative hash, so pages repeat in no simple order (2654435761 is
// coprime to 50000, so any 50000 consecutive frames hold every page once).
uint32_t PageOfFrame(uint32_t frame) {
  return static_cast<uint32_t>(uint64_t{frame} * 2654435761u % kIndexPages) + 1;
}

// A heap index holding frames 1..frames of log 0 at PageOfFrame. Built once per argument and
// kept until another argument asks (Google Benchmark calls a benchmark several times for each
// argument, one argument after the other): a million appends take a noticeable part of a
// second. Benchmarks run on one thread, so the statics need no lock.
absl::StatusOr<shm::WalIndex*> IndexOfFrames(uint32_t frames) {
  static uint32_t built_frames = 0;
  static std::unique_ptr<shm::WalIndex> index;
  if (index == nullptr || built_frames != frames) {
    index.reset();  // free the last one's blocks first
    std::unique_ptr<shm::WalIndex> fresh = shm::WalIndex::OpenHeap();
    for (uint32_t f = 1; f <= frames; ++f) JKV_RETURN_IF_ERROR(fresh->Append(0, f, PageOfFrame(f)));
    index = std::move(fresh);
    built_frames = frames;
  }
  return index.get();
}

// WalIndex::Lookup: the newest frame <= mx_frame that holds a page, which every page read of a
// WAL reader makes before it falls back to the database file. Pages are drawn from
// [1, 2 * kIndexPages], so about half miss once the log holds every page (from 50000 frames on),
// and nearly all miss at 1000 frames. A miss probes every 4096-frame block (245 at a million
// frames); a hit stops at the newest block that holds the page. hit_ratio says how many hit.
void BM_WalIndexLookup(benchmark::State& state) {
  const auto frames = static_cast<uint32_t>(state.range(0));
  absl::StatusOr<shm::WalIndex*> index = IndexOfFrames(frames);
  if (Failed(state, index.status())) return;
  // The newest frame of its page is the last one appended: a cheap check that the index is
  // the one this benchmark means.
  absl::StatusOr<uint32_t> newest = (*index)->Lookup(0, PageOfFrame(frames), frames);
  if (Failed(state, newest.status())) return;
  if (*newest != frames) {
    state.SkipWithError(absl::StrCat("Lookup of the last page found frame ", *newest).c_str());
    return;
  }
  constexpr size_t kProbes = 1 << 12;
  std::vector<uint32_t> pages(kProbes);
  std::mt19937 rng(frames);
  std::uniform_int_distribution<uint32_t> page_dist(1, 2 * kIndexPages);
  for (uint32_t& p : pages) p = page_dist(rng);
  uint64_t hits = 0;
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<uint32_t> frame = (*index)->Lookup(0, pages[i++ & (kProbes - 1)], frames);
    if (Failed(state, frame.status())) break;
    hits += *frame != 0;
    benchmark::DoNotOptimize(*frame);
  }
  state.counters["hit_ratio"] =
      benchmark::Counter(static_cast<double>(hits), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_WalIndexLookup)->ArgName("frames")->Arg(1000)->Arg(100000)->Arg(1000000);

// WalIndex::Append of consecutive frames, one per frame a commit appends: a release store of
// the page number and a linear-probe insert into the block's hash table. Every 100000 frames
// the log "restarts" (Truncate(0, 0) clears the 25 blocks used, inside the timed loop, as a
// log restart does). One untimed generation first allocates the blocks.
void BM_WalIndexAppend(benchmark::State& state) {
  constexpr uint32_t kGeneration = 100000;
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  for (uint32_t f = 1; f <= kGeneration; ++f) {
    if (Failed(state, index->Append(0, f, PageOfFrame(f)))) return;
  }
  if (Failed(state, index->Truncate(0, 0))) return;
  uint32_t frame = 0;
  for (auto _ : state) {
    if (frame == kGeneration) {
      if (Failed(state, index->Truncate(0, 0))) break;
      frame = 0;
    }
    ++frame;
    if (Failed(state, index->Append(0, frame, PageOfFrame(frame)))) break;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_WalIndexAppend);

// WalIndex::Truncate to the newest appended frame, as every write transaction's begin does
// (W2), in a log of 1,000 frames. leftovers:0 is the usual case, nothing past that frame (one
// pages[] word read); leftovers:1 re-appends one frame first, as a writer that rolled back
// leaves one, which costs the scan of the block's 8,192 hash slots.
void BM_WalIndexTruncate(benchmark::State& state) {
  constexpr uint32_t kFrames = 1000;
  const bool leftover = state.range(0) != 0;
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  for (uint32_t f = 1; f <= kFrames; ++f) {
    if (Failed(state, index->Append(0, f, PageOfFrame(f)))) return;
  }
  for (auto _ : state) {
    if (leftover && Failed(state, index->Append(0, kFrames + 1, 7))) break;
    if (Failed(state, index->Truncate(0, kFrames))) break;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_WalIndexTruncate)->ArgName("leftovers")->Arg(0)->Arg(1);

// WalIndex::ReadHeader of a published header: two 80-byte copies read with acquire loads,
// compared, and the checksum (XXH3 of 72 bytes) checked. Every WAL read transaction starts
// with it (and retries it while a writer is mid-publish).
void BM_WalIndexReadHeader(benchmark::State& state) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  shm::IndexHeader header;
  header.change = 1;
  header.page_size = kPageSize;
  header.page_count = 1234;
  header.logs[0] = shm::LogState{7, 0x11223344, 0x55667788, 500, 0x0123456789abcdef};
  index->WriteHeader(header);
  for (auto _ : state) {
    shm::IndexHeader out;
    const bool ok = index->ReadHeader(&out);
    benchmark::DoNotOptimize(out);
    if (!ok) {
      state.SkipWithError("ReadHeader refused the published header");
      break;
    }
  }
}
BENCHMARK(BM_WalIndexReadHeader);

// --- engine/: read transactions and Get through the public API

constexpr uint64_t kFewKeys = 100;
constexpr size_t kValueSize = 100;

std::string Key(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%012llu", static_cast<unsigned long long>(i));
  return buf;
}

// A POSIX database of kFewKeys keys (100-byte values, one transaction) in a new temporary
// directory, removed with it; sync OFF, the default 2000-page cache (holds all of it).
class TempDb {
 public:
  static absl::StatusOr<std::unique_ptr<TempDb>> Open(
      JournalMode mode, const std::string& policy = "threshold:1000", uint64_t keys = kFewKeys,
      int reader_slots = 512) {
    auto bench = std::unique_ptr<TempDb>(new TempDb());
    const char* base = std::getenv("TEST_TMPDIR");
    if (base == nullptr) base = std::getenv("TMPDIR");
    std::string templ = absl::StrCat(base != nullptr ? base : "/tmp", "/jkv-wal-micro-XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", templ, " failed"));
    }
    bench->dir_ = templ;
    Options options;
    options.journal_mode = mode;
    options.sync = SyncLevel::kOff;
    options.checkpoint_policy = policy;
    options.reader_slots = reader_slots;
    JKV_ASSIGN_OR_RETURN(bench->db_, Db::Open((bench->dir_ / "bench.db").string(), options));
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, bench->db_->BeginWrite());
    const std::string value(kValueSize, 'v');
    for (uint64_t i = 0; i < keys; ++i) JKV_RETURN_IF_ERROR(txn->Put(Key(i), value));
    JKV_RETURN_IF_ERROR(txn->Commit());
    return bench;
  }

  ~TempDb() {
    db_.reset();
    std::error_code ignored;  // a leftover temporary directory is harmless
    std::filesystem::remove_all(dir_, ignored);
  }

  Db& db() { return *db_; }
  std::string path() const { return (dir_ / "bench.db").string(); }

 private:
  TempDb() = default;

  std::filesystem::path dir_;
  std::unique_ptr<Db> db_;
};

// Publishes the file I/O made during the timed loop, per iteration: a WAL read transaction
// should touch neither the database file nor the log (the -shm is memory, not I/O), a DELETE
// one reads page 1 to see whether another connection committed.
class IoCounter {
 public:
  IoCounter(benchmark::State& state, Db& db) : state_(state), db_(db), start_(db.Stats()) {}
  ~IoCounter() {
    const DbStats end = db_.Stats();
    Set("db_reads/op", end.database_io.reads - start_.database_io.reads);
    Set("wal_reads/op", end.wal_io.reads - start_.wal_io.reads);
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

// A thread that commits autocommit Puts (overwriting the few keys, same-size values) until
// Stop; in WAL mode its commits append frames, publish new index headers and run the
// automatic PASSIVE checkpoint every 1000 frames, all while the timed thread reads.
class BackgroundWriter {
 public:
  explicit BackgroundWriter(Db& db) : db_(db), thread_([this] { Run(); }) {}
  ~BackgroundWriter() { Stop().IgnoreError(); }  // an error matters only to a caller of Stop

  // Joins the thread; returns its first error. Idempotent.
  absl::Status Stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }

 private:
  void Run() {
    const std::string value(kValueSize, 'w');
    for (uint64_t i = 0; !stop_.load(std::memory_order_relaxed); ++i) {
      absl::Status s = db_.Put(Key(i % kFewKeys), value);
      if (!s.ok()) {
        status_ = s;  // read by Stop after the join
        return;
      }
      commits_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  Db& db_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> commits_{0};
  absl::Status status_;
  std::thread thread_;  // last: starts once the members above exist
};

// Db::BeginRead, then the end of the transaction (destroying it). In WAL mode: read the index
// header, pin the snapshot in this connection's reader slot, check that no checkpoint passed
// it, and unpin at the end. In DELETE mode: take the SHARED lock on the database file and read
// page 1 (another connection may have committed), release it at the end.
void BeginEndLoop(benchmark::State& state, Db& db) {
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = db.BeginRead();
    if (Failed(state, txn.status())) break;
    benchmark::DoNotOptimize(txn->get());
    txn->reset();
  }
}

void BM_ReadTxnBeginEnd(benchmark::State& state, JournalMode mode) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(mode);
  if (Failed(state, bench.status())) return;
  IoCounter io(state, (*bench)->db());
  BeginEndLoop(state, (*bench)->db());
}
void BM_WalReadTxnBeginEnd(benchmark::State& state) {
  BM_ReadTxnBeginEnd(state, JournalMode::kWal);
}
// WAL2: the same wal-index, but a snapshot has a position in each of the two logs.
void BM_Wal2ReadTxnBeginEnd(benchmark::State& state) {
  BM_ReadTxnBeginEnd(state, JournalMode::kWal2);
}
void BM_RollbackReadTxnBeginEnd(benchmark::State& state) {
  BM_ReadTxnBeginEnd(state, JournalMode::kDelete);
}
// A connection that found no free reader slot: its read transactions pin under an overflow
// mark (wal/reader_pins.h M1..M5), a lock exclusive, a conversion to shared and an unlock
// each, where a slot's pin is a plain store.
void BM_WalOverflowReadTxnBeginEnd(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench =
      TempDb::Open(JournalMode::kWal, "threshold:1000", kFewKeys, /*reader_slots=*/0);
  if (Failed(state, bench.status())) return;
  IoCounter io(state, (*bench)->db());
  BeginEndLoop(state, (*bench)->db());
}
BENCHMARK(BM_WalReadTxnBeginEnd);
BENCHMARK(BM_WalOverflowReadTxnBeginEnd);
BENCHMARK(BM_Wal2ReadTxnBeginEnd);
BENCHMARK(BM_RollbackReadTxnBeginEnd);

// The same in WAL mode while a background thread commits in a loop: readers never wait for
// the writer, but each BeginRead sees a header that changes under it (retrying a torn read,
// rechecking the checkpoint) and shares the cache lines the writer stores to. With 2 cores the
// writer also takes CPU time from the reader. writer_commits/s is the writer's rate.
void BM_WalReadTxnBeginEndWithWriter(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(JournalMode::kWal);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  uint64_t commits = 0;
  {
    BackgroundWriter writer(db);
    BeginEndLoop(state, db);
    commits = writer.commits();
    const absl::Status s = writer.Stop();
    if (!s.ok() && !state.error_occurred()) Failed(state, s);
  }
  state.counters["writer_commits"] =
      benchmark::Counter(static_cast<double>(commits), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WalReadTxnBeginEndWithWriter)->UseRealTime();

// Db::Get of an existing key with every page in the cache: one whole read transaction (begin,
// a root-to-leaf descent of cached pages, end). The difference from BeginEnd above is the
// descent; the difference between the modes is where a read transaction's fixed cost lies.
void BM_GetCached(benchmark::State& state, JournalMode mode) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(mode);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < kFewKeys; ++i) keys.push_back(Key(i));
  for (const std::string& key : keys) {  // warm the cache (and check every key is there)
    absl::StatusOr<std::optional<std::string>> value = db.Get(key);
    if (Failed(state, value.status())) return;
    if (!value->has_value()) {
      state.SkipWithError(absl::StrCat("key ", key, " missing").c_str());
      return;
    }
  }
  IoCounter io(state, db);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<std::optional<std::string>> value = db.Get(keys[i++ % kFewKeys]);
    if (Failed(state, value.status())) break;
    benchmark::DoNotOptimize(*value);
  }
}
void BM_WalGetCached(benchmark::State& state) { BM_GetCached(state, JournalMode::kWal); }
void BM_Wal2GetCached(benchmark::State& state) { BM_GetCached(state, JournalMode::kWal2); }
void BM_DeleteGetCached(benchmark::State& state) { BM_GetCached(state, JournalMode::kDelete); }
BENCHMARK(BM_WalGetCached);
BENCHMARK(BM_Wal2GetCached);
BENCHMARK(BM_DeleteGetCached);

// jkvbench's scan as one iteration: a read transaction, an iterator, a Seek to a random
// loaded key and 100 pairs read with value_view, every page cached. What a scan costs beside
// the pairs it reads (the transaction, the iterator, the descent) is the difference from 100
// times BM_CursorNextReadValue (bench/tree_benchmark.cc). kScan reads the same pairs through
// ReadTransaction::Scan (no Iterator: one call per pair).
enum class Through { kIterator, kScan };
void BM_Scan100Cached(benchmark::State& state, JournalMode mode, Through through) {
  constexpr uint64_t kKeys = 5000;  // as jkvbench's default scan: 130 leaves, all cached
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(mode, "threshold:1000", kKeys);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  std::mt19937_64 rng(1);
  uint64_t bytes = 0;
  const auto visit = [&bytes](absl::string_view key, absl::string_view value) {
    bytes += key.size() + value.size();
    return true;
  };
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = db.BeginRead();
    if (Failed(state, txn.status())) break;
    const std::string from = Key(rng() % (kKeys - 100));
    if (through == Through::kScan) {
      if (Failed(state, (*txn)->Scan(from, 100, visit).status())) break;
      continue;
    }
    std::unique_ptr<Iterator> it = (*txn)->NewIterator();
    int n = 0;
    for (it->Seek(from); n < 100 && it->Valid(); it->Next(), ++n) {
      absl::StatusOr<absl::string_view> value = it->value_view();
      if (!value.ok()) break;
      visit(it->key(), *value);
    }
    if (Failed(state, it->status())) break;
  }
  benchmark::DoNotOptimize(bytes);
  state.SetItemsProcessed(state.iterations());
}
void BM_WalScan100Cached(benchmark::State& state) {
  BM_Scan100Cached(state, JournalMode::kWal, Through::kIterator);
}
void BM_WalScan100CachedVisitor(benchmark::State& state) {
  BM_Scan100Cached(state, JournalMode::kWal, Through::kScan);
}
BENCHMARK(BM_WalScan100CachedVisitor);
void BM_DeleteScan100Cached(benchmark::State& state) {
  BM_Scan100Cached(state, JournalMode::kDelete, Through::kIterator);
}
BENCHMARK(BM_WalScan100Cached);
BENCHMARK(BM_DeleteScan100Cached);

// One autocommit overwrite of a cached key per iteration in WAL mode under a checkpoint
// policy: the commit path with the policy's question after it (the log's state: the index
// header and a scan of the reader slots) and what the answer costs on the committing thread.
// manual never checkpoints, so the log grows for the whole run; threshold:1000 copies it every
// ~1000 commits on this thread; async:0/100 wakes the background checkpointer after every
// commit and blocks at 100 frames (with 2 cores, the checkpointer competes for CPU).
void BM_WalCommitPolicy(benchmark::State& state, const char* policy) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(JournalMode::kWal, policy);
  if (Failed(state, bench.status())) return;
  Db& db = (*bench)->db();
  const std::string value(kValueSize, 'w');
  size_t i = 0;
  for (auto _ : state) {
    if (Failed(state, db.Put(Key(i++ % kFewKeys), value))) break;
  }
  const DbStats stats = db.Stats();
  state.counters["checkpoints"] = static_cast<double>(stats.checkpoints);
  state.counters["blocked_ms"] = stats.blocked_writer_ms;
}
BENCHMARK_CAPTURE(BM_WalCommitPolicy, manual, "manual");

// As BM_WalCommitPolicy/manual, but two connections (two Db handles) commit in turn. Each
// write transaction then follows the other connection's commit, so its start checks the
// header against the log (IndexDamage: one 24-byte frame-header read; the design notes, "A
// damaged wal-index") and its reads revalidate the page cache. BM_WalFrameHeaderRead is
// the check's read alone, for the ratio.
void BM_WalCommitTwoConnections(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(JournalMode::kWal, "manual");
  if (Failed(state, bench.status())) return;
  Options options;
  options.journal_mode = JournalMode::kWal;
  options.sync = SyncLevel::kOff;
  options.checkpoint_policy = "manual";
  absl::StatusOr<std::unique_ptr<Db>> other = Db::Open((*bench)->path(), options);
  if (Failed(state, other.status())) return;
  Db* dbs[2] = {&(*bench)->db(), other->get()};
  const std::string value(kValueSize, 'w');
  size_t i = 0;
  for (auto _ : state) {
    if (Failed(state, dbs[i % 2]->Put(Key(i % kFewKeys), value))) break;
    ++i;
  }
}
BENCHMARK(BM_WalCommitTwoConnections);

// WalLog::ReadFrameHeader of a page-cached log on the real file system: the read a write
// transaction that follows another connection's commit adds (BM_WalCommitTwoConnections).
void BM_WalFrameHeaderRead(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<TempDb>> bench = TempDb::Open(JournalMode::kWal, "manual");
  if (Failed(state, bench.status())) return;
  for (int i = 0; i < 16; ++i) {
    if (Failed(state, (*bench)->db().Put(Key(i), std::string(kValueSize, 'h')))) return;
  }
  vfs::PosixFileSystem fs;
  absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
      wal::WalLog::Open(&fs, (*bench)->path() + "-wal", /*read_only=*/true);
  if (Failed(state, log.status())) return;
  uint32_t frame = 1;
  for (auto _ : state) {
    absl::StatusOr<wal::FrameHeader> h = (*log)->ReadFrameHeader(frame, kPageSize);
    if (Failed(state, h.status())) break;
    benchmark::DoNotOptimize(*h);
    frame = frame % 8 + 1;
  }
}
BENCHMARK(BM_WalFrameHeaderRead);
BENCHMARK_CAPTURE(BM_WalCommitPolicy, threshold_1000, "threshold:1000");
BENCHMARK_CAPTURE(BM_WalCommitPolicy, async_0_100, "async:0/100")->UseRealTime();

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
