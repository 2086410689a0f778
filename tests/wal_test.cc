// WAL mode through the public API: snapshots of several readers in one process, checkpoints
// and their modes, the log's life cycle (preallocated, restarted, removed at the last close),
// switching between the rollback and WAL families, and snapshot isolation under load.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

// Every test runs in wal and in wal2 mode, on the in-memory and on the POSIX file system.
class WalTest : public ::testing::TestWithParam<std::tuple<JournalMode, bool>> {
 protected:
  JournalMode mode() const { return std::get<0>(GetParam()); }
  bool wal2() const { return mode() == JournalMode::kWal2; }
  void SetUp() override {
    if (std::get<1>(GetParam())) {
      temp_dir_ = std::make_unique<vfs::ScopedTempDir>();
      dir_ = temp_dir_->path();
      fs_ = &posix_;
    } else {
      dir_ = "";
      fs_ = &mem_;
    }
    path_ = dir_ + "/x.db";
  }

  Options WalOptions() {
    Options o;
    o.journal_mode = mode();
    o.file_system = fs_;
    return o;
  }
  std::unique_ptr<Db> Open(const Options& o) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  bool Exists(const std::string& p) { return *fs_->Exists(p); }

  vfs::MemFileSystem mem_;
  vfs::PosixFileSystem posix_;
  vfs::FileSystem* fs_ = nullptr;
  std::unique_ptr<vfs::ScopedTempDir> temp_dir_;  // POSIX: removed with its content
  std::string dir_;
  std::string path_;
};

std::string Get(ReadTransaction& t, const std::string& k) {
  absl::StatusOr<std::optional<std::string>> v = t.Get(k);
  if (!v.ok()) return "error: " + std::string(v.status().message());
  return v->has_value() ? **v : "<missing>";
}

TEST_P(WalTest, CommitsSurviveReopenAndTheLastCloseRemovesTheLog) {
  {
    std::unique_ptr<Db> db = Open(WalOptions());
    ASSERT_THAT(db->Put("a", "1"), IsOk());
    ASSERT_THAT(db->Put("b", "2"), IsOk());
    EXPECT_TRUE(Exists(path_ + "-wal"));
    EXPECT_TRUE(Exists(path_ + "-shm"));
    const DbStats s = db->Stats();
    EXPECT_TRUE(s.wal_mode);
    EXPECT_GE(s.log_frames, 2u);
    EXPECT_EQ(s.database_io.syncs + s.journal_io.syncs > 0, true);  // creation
  }
  EXPECT_FALSE(Exists(path_ + "-wal"));
  EXPECT_FALSE(Exists(path_ + "-shm"));
  std::unique_ptr<Db> db = Open(WalOptions());
  EXPECT_EQ(**db->Get("a"), "1");
  EXPECT_EQ(**db->Get("b"), "2");
  absl::StatusOr<CheckResult> check = db->Check();
  ASSERT_THAT(check, IsOk());
  EXPECT_THAT(check->problems, ::testing::IsEmpty());
}

TEST_P(WalTest, ACommitCostsOneDataOnlyFlushOfTheLog) {
  std::unique_ptr<Db> db = Open(WalOptions());
  ASSERT_THAT(db->Put("warm", "up"), IsOk());
  ASSERT_THAT(db->Put("warm2", "up"), IsOk());
  const DbStats before = db->Stats();
  constexpr int kCommits = 50;
  for (int i = 0; i < kCommits; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", i), "v"), IsOk());
  const DbStats after = db->Stats();
  EXPECT_EQ(after.wal_io.syncs - before.wal_io.syncs, uint64_t{kCommits});
  EXPECT_EQ(after.database_io.syncs, before.database_io.syncs);
  EXPECT_EQ(after.wal_io.truncates, before.wal_io.truncates);
  // Preallocated: the log did not grow during these commits.
  EXPECT_EQ(after.log_bytes, before.log_bytes);
}

// The last close removes -wal and -shm; a read-only connection opens the database anyway (it
// may not create the log), and opens the log once a writer has created it and committed.
TEST_P(WalTest, ReadOnlyConnectionOpensAClosedWalDatabaseAndSeesLaterCommits) {
  ASSERT_THAT(Open(WalOptions())->Put("a", "1"), IsOk());
  ASSERT_FALSE(Exists(path_ + "-wal"));
  Options ro = WalOptions();
  ro.read_only = true;
  std::unique_ptr<Db> reader = Open(ro);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(**reader->Get("a"), "1");
  EXPECT_FALSE(Exists(path_ + "-wal"));
  EXPECT_THAT(reader->Put("b", "2"), StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
  {
    std::unique_ptr<Db> writer = Open(WalOptions());
    ASSERT_THAT(writer->Put("b", "2"), IsOk());
    EXPECT_EQ(**reader->Get("b"), "2");
    ASSERT_THAT(writer->Put("a", "3"), IsOk());
  }  // not the last connection: the log stays, and the reader keeps reading it
  EXPECT_TRUE(Exists(path_ + "-wal"));
  EXPECT_EQ(**reader->Get("a"), "3");
  EXPECT_EQ(**reader->Get("b"), "2");
  reader.reset();
  std::unique_ptr<Db> after = Open(WalOptions());
  EXPECT_EQ(**after->Get("a"), "3");
}

// WAL readers find commits through the index, so a commit logs page 1 only when the header
// changed: overwriting a value in place is one frame.
TEST_P(WalTest, AnOverwriteInPlaceIsOneFrame) {
  Options o = WalOptions();
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put("k", "value-0"), IsOk());
  const DbStats before = db->Stats();
  for (int i = 1; i <= 10; ++i) ASSERT_THAT(db->Put("k", absl::StrCat("value-", i)), IsOk());
  const DbStats after = db->Stats();
  EXPECT_EQ(after.log_frames - before.log_frames, 10u);
  EXPECT_EQ(**db->Get("k"), "value-10");
}

// The page cache rule (wal/wal_connection.h): readers pinned at different snapshots in one
// process each see their own version of every page, before and after checkpoints.
TEST_P(WalTest, ReadersPinnedAtDifferentSnapshotsInOneProcess) {
  Options o = WalOptions();
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put("k", "v1"), IsOk());
  std::vector<std::unique_ptr<ReadTransaction>> readers;
  for (int version = 2; version <= 6; ++version) {
    readers.push_back(*db->BeginRead());
    ASSERT_THAT(db->Put("k", absl::StrCat("v", version)), IsOk());
    // Enough other keys that the tree splits and pages move between versions.
    for (int i = 0; i < 200; ++i) {
      ASSERT_THAT(db->Put(absl::StrCat("fill", version, "_", i), std::string(100, 'x')), IsOk());
    }
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < readers.size(); ++i) {
      EXPECT_EQ(Get(*readers[i], "k"), absl::StrCat("v", i + 1)) << "reader " << i;
      EXPECT_EQ(Get(*readers[i], absl::StrCat("fill", i + 2, "_0")), "<missing>");
      if (i > 0) {
        EXPECT_EQ(Get(*readers[i], absl::StrCat("fill", i + 1, "_199")), std::string(100, 'x'));
      }
    }
    // A checkpoint may copy nothing past the oldest pinned snapshot.
    absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kPassive);
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->blocked);
  }
  readers.erase(readers.begin(), readers.begin() + 3);  // the three oldest end
  absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->blocked);
  EXPECT_GT(r->copied, 0u);
  EXPECT_EQ(Get(*readers[0], "k"), "v4");
  EXPECT_EQ(Get(*readers[1], "k"), "v5");
  readers.clear();
  r = db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  EXPECT_EQ(r->backfilled, r->log_frames);
  EXPECT_EQ(**db->Get("k"), "v6");
}

TEST_P(WalTest, CheckpointModes) {
  Options o = WalOptions();
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> db = Open(o);
  for (int i = 0; i < 100; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", i), "v"), IsOk());
  absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  EXPECT_EQ(r->backfilled, r->log_frames);
  EXPECT_GE(r->log_frames, 100u);
  // RESTART: the next commit starts the log from frame 1.
  ASSERT_THAT(db->Put("after", "restart"), IsOk());
  r = db->Checkpoint(CheckpointMode::kRestart);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  ASSERT_THAT(db->Put("x", "y"), IsOk());
  EXPECT_LE(db->Stats().log_frames, 3u);
  // TRUNCATE: the log file is cut to zero bytes.
  r = db->Checkpoint(CheckpointMode::kTruncate);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  EXPECT_EQ(db->Stats().log_bytes, 0u);
  ASSERT_THAT(db->Put("z", "after truncate"), IsOk());
  db.reset();
  db = Open(o);
  EXPECT_EQ(**db->Get("z"), "after truncate");
  EXPECT_EQ(**db->Get("k99"), "v");
  // A reader holds FULL back: it reports blocked after its busy timeout.
  o.busy_timeout = absl::Milliseconds(50);
  db = Open(o);
  std::unique_ptr<ReadTransaction> reader = *db->BeginRead();
  ASSERT_THAT(db->Put("k0", "new"), IsOk());
  r = db->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->blocked);
  EXPECT_EQ(Get(*reader, "k0"), "v");
}

TEST_P(WalTest, AutoCheckpointKeepsTheLogBoundedAndRestartsIt) {
  std::unique_ptr<Db> db = Open(WalOptions());
  for (int i = 0; i < 3000; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", i % 300), "v"), IsOk());
  const DbStats s = db->Stats();
  EXPECT_GT(s.checkpoints, 0u);
  EXPECT_GT(s.log_restarts, 0u);
  EXPECT_LT(s.log_frames, 1200u);
}

TEST_P(WalTest, LargeTransactionSpillsFramesAndRollbackHidesThem) {
  Options o = WalOptions();
  o.cache_pages = 16;
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put("keep", "1"), IsOk());
  {
    std::unique_ptr<WriteTransaction> w = *db->BeginWrite();
    for (int i = 0; i < 2000; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("big", i), std::string(200, 'b')), IsOk());
    }
    EXPECT_GT(db->Stats().spills, 0u);
    std::unique_ptr<ReadTransaction> r = *db->BeginRead();
    EXPECT_EQ(Get(*r, "big0"), "<missing>");
    ASSERT_THAT(w->Rollback(), IsOk());
  }
  EXPECT_FALSE(db->Get("big0")->has_value());
  {
    std::unique_ptr<WriteTransaction> w = *db->BeginWrite();
    for (int i = 0; i < 2000; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("big", i), std::string(200, 'c')), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  EXPECT_EQ(**db->Get("big1999"), std::string(200, 'c'));
  db.reset();
  db = Open(o);
  EXPECT_EQ(**db->Get("big0"), std::string(200, 'c'));
  EXPECT_THAT(db->Check()->problems, ::testing::IsEmpty());
}

TEST_P(WalTest, SwitchingBetweenRollbackAndWal) {
  Options rollback;
  rollback.file_system = fs_;
  rollback.journal_mode = JournalMode::kDelete;
  {
    std::unique_ptr<Db> db = Open(rollback);
    ASSERT_THAT(db->Put("from", "delete"), IsOk());
  }
  {
    std::unique_ptr<Db> db = Open(WalOptions());
    EXPECT_EQ(**db->Get("from"), "delete");
    ASSERT_THAT(db->Put("in", "wal"), IsOk());
    // A rollback-mode opener while a WAL connection is open: refused, nothing broken.
    absl::StatusOr<std::unique_ptr<Db>> other = Db::Open(path_, rollback);
    EXPECT_THAT(other, StatusIs(absl::StatusCode::kFailedPrecondition,
                                "other connections have it open"));
    EXPECT_EQ(**db->Get("in"), "wal");
  }
  {
    // A rollback-mode opener of a WAL database with no other connection switches it back.
    std::unique_ptr<Db> db = Open(rollback);
    EXPECT_EQ(**db->Get("in"), "wal");
    EXPECT_FALSE(Exists(path_ + "-wal"));
    ASSERT_THAT(db->Put("back", "delete"), IsOk());
    EXPECT_THAT(db->Checkpoint(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "needs journal mode wal"));
    // And the other way: a WAL-mode opener while a rollback-mode connection (idle, holding no
    // transaction lock) is open is refused, and the rollback connection goes on working.
    // (It used to switch the database, and the rollback connection then failed every call.)
    absl::StatusOr<std::unique_ptr<Db>> other = Db::Open(path_, WalOptions());
    EXPECT_THAT(other, StatusIs(absl::StatusCode::kFailedPrecondition,
                                "in a rollback journal mode and other connections have it open"));
    ASSERT_THAT(db->Put("still", "delete"), IsOk());
    EXPECT_EQ(**db->Get("back"), "delete");
  }
  std::unique_ptr<Db> db = Open(WalOptions());
  EXPECT_EQ(**db->Get("back"), "delete");
  EXPECT_EQ(**db->Get("still"), "delete");
  EXPECT_THAT(db->Check()->problems, ::testing::IsEmpty());
}

// Snapshot isolation under load: a writer moves money between accounts while readers sum
// them; every read transaction sees the same total, and readers never wait for the writer.
TEST_P(WalTest, BankTransfersKeepTheSumForEveryReader) {
  Options o = WalOptions();
  o.checkpoint_policy = "threshold:200";
  std::unique_ptr<Db> db = Open(o);
  constexpr int kAccounts = 100;
  constexpr int64_t kStart = 1000;
  {
    std::unique_ptr<WriteTransaction> w = *db->BeginWrite();
    for (int i = 0; i < kAccounts; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("acct", 1000 + i), std::to_string(kStart)), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  const auto duration = std::chrono::seconds(testing::TierScaled(4, 3, 20));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> writer_commits{0};
  std::atomic<int> bad_sums{0};
  std::vector<int64_t> reads(4, 0);
  std::vector<double> worst_begin_us(4, 0);
  std::thread writer([&] {
    uint64_t x = 12345;
    while (!stop.load()) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const int from = static_cast<int>((x >> 20) % kAccounts);
      const int to = static_cast<int>((x >> 40) % kAccounts);
      std::unique_ptr<WriteTransaction> w = *db->BeginWrite();
      const std::string kf = absl::StrCat("acct", 1000 + from);
      const std::string kt = absl::StrCat("acct", 1000 + to);
      const int64_t a = std::stoll(**w->Get(kf));
      ASSERT_THAT(w->Put(kf, std::to_string(a - 7)), IsOk());
      const int64_t b = std::stoll(**w->Get(kt));
      ASSERT_THAT(w->Put(kt, std::to_string(b + 7)), IsOk());
      ASSERT_THAT(w->Commit(), IsOk());
      writer_commits.fetch_add(1);
    }
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      while (!stop.load()) {
        const auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<ReadTransaction> t = *db->BeginRead();
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        worst_begin_us[r] = std::max(worst_begin_us[r], us);
        int64_t sum = 0;
        std::unique_ptr<Iterator> it = t->NewIterator();
        for (it->Seek("acct"); it->Valid(); it->Next()) sum += std::stoll(*it->value());
        if (!it->status().ok() || sum != kAccounts * kStart) bad_sums.fetch_add(1);
        ++reads[r];
      }
    });
  }
  std::this_thread::sleep_for(duration);
  stop.store(true);
  writer.join();
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad_sums.load(), 0);
  EXPECT_GT(writer_commits.load(), 100);
  for (int r = 0; r < 4; ++r) {
    EXPECT_GT(reads[r], 100) << "reader " << r;
    std::printf("reader %d: %lld transactions, longest begin %.0f us\n", r,
                static_cast<long long>(reads[r]), worst_begin_us[r]);
  }
  std::printf("writer: %lld commits, checkpoints %llu\n",
              static_cast<long long>(writer_commits.load()),
              static_cast<unsigned long long>(db->Stats().checkpoints));
  EXPECT_THAT(db->Check()->problems, ::testing::IsEmpty());
}

TEST_P(WalTest, ExclusiveLockingKeepsTheIndexOnTheHeapAndOthersOut) {
  Options o = WalOptions();
  o.exclusive_locking = true;
  {
    std::unique_ptr<Db> db = Open(o);
    for (int i = 0; i < 50; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", i), "v"), IsOk());
    std::unique_ptr<ReadTransaction> old = *db->BeginRead();
    ASSERT_THAT(db->Put("k0", "new"), IsOk());
    EXPECT_EQ(Get(*old, "k0"), "v");
    EXPECT_TRUE(Exists(path_ + "-wal"));
    EXPECT_FALSE(Exists(path_ + "-shm"));
    Options other = WalOptions();
    other.busy_timeout = absl::Milliseconds(20);
    EXPECT_THAT(Db::Open(path_, other),
                StatusIs(absl::StatusCode::kUnavailable, "another connection"));
  }
  EXPECT_FALSE(Exists(path_ + "-wal"));
  std::unique_ptr<Db> db = Open(WalOptions());
  EXPECT_EQ(**db->Get("k0"), "new");
  EXPECT_EQ(**db->Get("k49"), "v");
}

// A file system without shared memory: WAL mode says so instead of corrupting anything, and
// exclusive locking (no shared memory needed) works.
class NoSharedMemoryFile : public vfs::File {
 public:
  explicit NoSharedMemoryFile(std::unique_ptr<vfs::File> base) : base_(std::move(base)) {}
  absl::Status Read(uint64_t o, absl::Span<uint8_t> out) override { return base_->Read(o, out); }
  absl::Status Write(uint64_t o, absl::Span<const uint8_t> d) override {
    return base_->Write(o, d);
  }
  absl::Status Sync(vfs::SyncKind k) override { return base_->Sync(k); }
  absl::Status Truncate(uint64_t n) override { return base_->Truncate(n); }
  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  absl::StatusOr<bool> TryLock(uint64_t o, uint64_t n, vfs::LockMode m) override {
    return base_->TryLock(o, n, m);
  }
  absl::Status Unlock(uint64_t o, uint64_t n) override { return base_->Unlock(o, n); }
  absl::StatusOr<bool> CanLock(uint64_t o, uint64_t n, vfs::LockMode m) override {
    return base_->CanLock(o, n, m);
  }
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t, size_t) override {
    return absl::UnimplementedError(absl::StrCat(path(), ": no shared memory here"));
  }
  const std::string& path() const override { return base_->path(); }

 private:
  std::unique_ptr<vfs::File> base_;
};

class NoSharedMemoryFs : public vfs::FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<vfs::File>> Open(const std::string& p,
                                                  const vfs::OpenOptions& o) override {
    absl::StatusOr<std::unique_ptr<vfs::File>> f = base_.Open(p, o);
    if (!f.ok()) return f.status();
    return std::unique_ptr<vfs::File>(new NoSharedMemoryFile(std::move(*f)));
  }
  absl::Status Delete(const std::string& p) override { return base_.Delete(p); }
  absl::StatusOr<bool> Exists(const std::string& p) override { return base_.Exists(p); }
  absl::StatusOr<bool> IsDirectory(const std::string& p) override {
    return base_.IsDirectory(p);
  }
  absl::Status SyncDirectory(const std::string& d) override { return base_.SyncDirectory(d); }

 private:
  vfs::MemFileSystem base_;
};

TEST(WalNoSharedMemoryTest, OpeningSaysSoAndExclusiveLockingWorks) {
  NoSharedMemoryFs fs;
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.file_system = &fs;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", o);
  EXPECT_THAT(db, StatusIs(absl::StatusCode::kUnimplemented, "shared memory"));
  o.exclusive_locking = true;
  db = Db::Open("/x.db", o);
  ASSERT_THAT(db, IsOk());
  ASSERT_THAT((*db)->Put("k", "v"), IsOk());
  EXPECT_EQ(**(*db)->Get("k"), "v");
}

// An opener that named no mode gets wal for a new database; where that cannot work, the error
// says how to open it instead, and nothing it left behind stops a rollback-mode opener.
TEST(WalNoSharedMemoryTest, TheDefaultModeSaysWhichModeToNameInstead) {
  NoSharedMemoryFs fs;
  Options o;
  o.file_system = &fs;
  EXPECT_THAT(Db::Open("/y.db", o),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "name a rollback journal mode (journal_mode delete, jkv --journal=delete)"));
  o.journal_mode = JournalMode::kDelete;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/y.db", o);
  ASSERT_THAT(db, IsOk());
  ASSERT_THAT((*db)->Put("k", "v"), IsOk());
  db->reset();
  o.journal_mode.reset();  // a rollback database now: the default keeps it
  db = Db::Open("/y.db", o);
  ASSERT_THAT(db, IsOk());
  EXPECT_EQ((*db)->options().journal_mode, JournalMode::kDelete);
  EXPECT_EQ(**(*db)->Get("k"), "v");
}

INSTANTIATE_TEST_SUITE_P(
    ModeFs, WalTest,
    ::testing::Combine(::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                       ::testing::Values(false, true)),
    [](const ::testing::TestParamInfo<std::tuple<JournalMode, bool>>& info) {
      return absl::StrCat(JournalModeName(std::get<0>(info.param)), "_",
                          std::get<1>(info.param) ? "posix" : "mem");
    });

}  // namespace
}  // namespace journalkv
