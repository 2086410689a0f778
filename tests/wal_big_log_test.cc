// A pinned reader holds every checkpoint back while the writer grows the log to a million
// frames (100,000 under sanitizers), in wal and in wal2: old and new snapshots stay correct and
// point reads stay fast. And at the log's frame limit (lowered for the test): a commit past it
// is refused before it writes a frame, and recovery opens a log that holds frames past it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string BigKey(int i) { return absl::StrFormat("k%05d", i); }
std::string BigValue(int txn, int i) { return absl::StrFormat("v%04d-%05d", txn, i); }

class WalFilesBigLogTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(WalFilesBigLogTest, ReadingAnOldSnapshotStaysCorrectWhileTheLogGrowsToAMillionFrames) {
  const uint32_t target = testing::UnderSanitizer() ? 100'000 : 1'000'000;
  constexpr int kKeys = 20'000;
  constexpr int kPutsPerTxn = 1'000;
  constexpr int kStride = kKeys / kPutsPerTxn;  // a transaction writes every 20th key
  constexpr int kTimedReads = 10'000;
  const bool wal2 = GetParam() == JournalMode::kWal2;
  vfs::MemFileSystem fs;
  Options o;
  o.journal_mode = GetParam();
  o.file_system = &fs;
  o.page_size = 512;
  o.sync = SyncLevel::kOff;
  o.cache_pages = 4000;  // a whole transaction's pages: no spills
  // checkpoint_policy stays at its default: checkpoints run, and the pin stops them.
  const std::string path = "/big.db";
  const auto t_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  ASSERT_THAT(db, IsOk());
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, (*db)->BeginWrite());
    for (int i = 0; i < kKeys; ++i) ASSERT_THAT(w->Put(BigKey(i), BigValue(0, i)), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
  }
  ASSERT_THAT((*db)->Put("pinned", "old"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> pinned, (*db)->BeginRead());
  ASSERT_EQ(**pinned->Get("pinned"), "old");
  for (int i = 0; i < kKeys; ++i) {  // the pinned reader's view, before the log grows
    absl::StatusOr<std::optional<std::string>> v = pinned->Get(BigKey(i));
    ASSERT_THAT(v, IsOk());
    ASSERT_EQ(**v, BigValue(0, i));
  }
  const DbStats at_pin = (*db)->Stats();
  ASSERT_EQ(at_pin.pinned_connections, 1);
  ASSERT_GT(at_pin.oldest_pinned_frame, 0u);
  const double load_s = Seconds(std::chrono::steady_clock::now() - t_start);

  // The writer: transactions of 1,000 puts, each overwriting "pinned" and every 20th key.
  std::vector<int> last(kKeys, 0);
  int txns = 0;
  const auto t_grow = std::chrono::steady_clock::now();
  DbStats s = (*db)->Stats();
  while (s.log_frames < target) {
    ASSERT_LT(txns, static_cast<int>(4 * target / kPutsPerTxn)) << "the log does not grow";
    ++txns;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, (*db)->BeginWrite());
    ASSERT_THAT(w->Put("pinned", absl::StrCat("new", txns)), IsOk());
    for (int j = 0; j < kPutsPerTxn - 1; ++j) {
      const int i = j * kStride + txns % kStride;
      ASSERT_THAT(w->Put(BigKey(i), BigValue(txns, i)), IsOk());
      last[i] = txns;
    }
    ASSERT_THAT(w->Commit(), IsOk());
    s = (*db)->Stats();
  }
  const double grow_s = Seconds(std::chrono::steady_clock::now() - t_grow);
  std::printf("log grew to %u frames (%.0f MB) in %d transactions of %d puts: %.2f s "
              "(%.0f frames/s); load %.2f s; checkpoints %llu, frames copied %llu\n",
              s.log_frames, s.log_bytes / 1e6, txns, kPutsPerTxn, grow_s, s.log_frames / grow_s,
              load_s, static_cast<unsigned long long>(s.checkpoints),
              static_cast<unsigned long long>(s.frames_copied));
  EXPECT_GE(s.log_frames, target);
  EXPECT_GT(s.checkpoints, 0u) << "autocheckpoint never ran";
  if (wal2) {
    // The load filled -wal past wal2_switch_pages, so "pinned" went to -wal2 and the reader
    // pins -wal2 at frame 1 and all of -wal. -wal is copied (the policy copies the log that is
    // not current) and the writer switches back to it, restarting it under the reader (W7);
    // -wal2 is copied up to the pin only, so the writer stays in -wal from then on.
    std::printf("wal2: %llu log switches, -wal %u frames, -wal2 %u frames\n",
                static_cast<unsigned long long>(s.log_switches),
                s.log_frames - s.wal2_log_frames, s.wal2_log_frames);
    EXPECT_GE(s.log_switches, 2u);
  } else {
    // (wal2 reports the pin on the current log, which changed with the switches.)
    EXPECT_EQ(s.oldest_pinned_frame, at_pin.oldest_pinned_frame);
  }
  EXPECT_GE(s.log_unbackfilled, s.log_frames - at_pin.oldest_pinned_frame);
  EXPECT_EQ(s.pinned_connections, 1);
  EXPECT_EQ(s.spills, 0u);

  // Timed point reads: the same 10,000 keys in the pinned reader, a fresh reader of this
  // connection and a fresh reader of a second connection.
  auto timed_reads = [&](ReadTransaction& r, bool old_snapshot, const char* who) {
    int wrong = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int n = 0; n < kTimedReads; ++n) {
      const int i = static_cast<int>((static_cast<uint64_t>(n) * 7919) % kKeys);
      absl::StatusOr<std::optional<std::string>> v = r.Get(BigKey(i));
      if (!v.ok() || !v->has_value() || **v != BigValue(old_snapshot ? 0 : last[i], i)) ++wrong;
    }
    const double us = Seconds(std::chrono::steady_clock::now() - t0) * 1e6 / kTimedReads;
    std::printf("%s: %d point reads, %.2f us each\n", who, kTimedReads, us);
    EXPECT_EQ(wrong, 0) << who;
    EXPECT_LT(us, 100.0) << who;
  };
  timed_reads(*pinned, true, "pinned reader (old snapshot)");
  EXPECT_EQ(**pinned->Get("pinned"), "old");
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> fresh, (*db)->BeginRead());
    EXPECT_EQ(**fresh->Get("pinned"), absl::StrCat("new", txns));
    timed_reads(*fresh, false, "fresh reader, same connection");
  }
  {
    absl::StatusOr<std::unique_ptr<Db>> db2 = Db::Open(path, o);
    ASSERT_THAT(db2, IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> fresh, (*db2)->BeginRead());
    EXPECT_EQ(**fresh->Get("pinned"), absl::StrCat("new", txns));
    timed_reads(*fresh, false, "fresh reader, second connection (cold cache)");
    timed_reads(*fresh, false, "fresh reader, second connection (warm cache)");
  }
  // The pinned reader's whole view, once more: every key it read, and nothing else.
  for (int i = 0; i < kKeys; ++i) {
    absl::StatusOr<std::optional<std::string>> v = pinned->Get(BigKey(i));
    ASSERT_THAT(v, IsOk());
    ASSERT_TRUE(v->has_value()) << BigKey(i);
    ASSERT_EQ(**v, BigValue(0, i)) << "the pinned reader's view of " << BigKey(i) << " changed";
  }
  EXPECT_EQ(*pinned->Count(), static_cast<uint64_t>(kKeys + 1));
  pinned.reset();

  // Unpinned, the log is copied back; the last close truncates it away, and the database
  // file holds the newest value of every key.
  const auto t_close = std::chrono::steady_clock::now();
  absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  db = absl::UnknownError("closed");
  std::printf("checkpoint of the whole log and close: %.2f s\n",
              Seconds(std::chrono::steady_clock::now() - t_close));
  db = Db::Open(path, o);
  ASSERT_THAT(db, IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> after, (*db)->BeginRead());
  EXPECT_EQ(**after->Get("pinned"), absl::StrCat("new", txns));
  for (int i = 0; i < kKeys; ++i) ASSERT_EQ(**after->Get(BigKey(i)), BigValue(last[i], i));
  after.reset();
  EXPECT_THAT((*db)->Check()->problems, ::testing::IsEmpty());
  std::printf("total %.2f s\n", Seconds(std::chrono::steady_clock::now() - t_start));
}

// The frame limit of one log generation, lowered to 300 frames for a test and restored after.
class ScopedFrameLimit {
 public:
  explicit ScopedFrameLimit(uint32_t frames) { shm::SetMaxLogFramesForTesting(frames); }
  ~ScopedFrameLimit() { shm::SetMaxLogFramesForTesting(0); }
};

Options LimitOptions(JournalMode mode, vfs::FileSystem* fs) {
  Options o;
  o.journal_mode = mode;
  o.file_system = fs;
  o.page_size = 512;
  o.checkpoint_policy = "manual";  // the log keeps every commit
  return o;
}

// With a reader pinned (so the log cannot restart) commits fill the log until one would pass
// the limit: that one is refused with ResourceExhausted naming the limit, before any of its
// frames is written, and a process crash then loses nothing acknowledged and brings nothing
// refused back. (Before, its frames, commit frame included, were written before the index
// refused them; the next open recovered it and then failed on the index's limit, every time.)
TEST_P(WalFilesBigLogTest, ACommitPastTheFrameLimitIsRefusedBeforeItWritesAFrame) {
  const ScopedFrameLimit limit(300);
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  const std::string path = "/limit.db";
  int acked = 0;
  absl::Status refused;
  uint64_t log_bytes = 0;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path, LimitOptions(GetParam(), &fs)));
    ASSERT_THAT(db->Put("pinned", "x"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> pin, db->BeginRead());
    for (int txn = 0; txn < 400 && refused.ok(); ++txn) {
      // 20 keys of 100 bytes: a handful of frames a commit.
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
      for (int i = 0; i < 20; ++i) {
        ASSERT_THAT(w->Put(absl::StrFormat("t%04d-%02d", txn, i), std::string(100, 'v')), IsOk());
      }
      const uint64_t before = base.stats().Snapshot(vfs::FileKind::kWal).bytes_written;
      refused = w->Commit();
      if (refused.ok()) {
        ++acked;
      } else {
        log_bytes = base.stats().Snapshot(vfs::FileKind::kWal).bytes_written - before;
      }
    }
    std::printf("%s: %d commits acknowledged, then: %s\n",
                std::string(JournalModeName(GetParam())).c_str(), acked,
                refused.ToString().c_str());
    EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted, "the log is full"));
    EXPECT_EQ(log_bytes, 0u) << "the refused commit wrote to the log";
    EXPECT_GT(acked, 10);
    // The handle goes on: what it acknowledged is there, the refused transaction is not.
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> last,
                             db->Get(absl::StrFormat("t%04d-%02d", acked - 1, 0)));
    EXPECT_TRUE(last.has_value());
    fs.SimulateProcessCrash();
  }
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path, LimitOptions(GetParam(), &base)));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db->BeginRead());
  for (int txn = 0; txn < acked; ++txn) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v,
                             r->Get(absl::StrFormat("t%04d-%02d", txn, 19)));
    ASSERT_TRUE(v.has_value()) << "acknowledged commit " << txn << " was lost";
  }
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> refused_key,
                           r->Get(absl::StrFormat("t%04d-%02d", acked, 0)));
  EXPECT_FALSE(refused_key.has_value()) << "the refused commit came back";
  r.reset();
  EXPECT_THAT(db->Check()->problems, ::testing::IsEmpty());
}

// A log that holds commits past the limit (an earlier build wrote them, or the limit was
// higher) still opens: recovery adopts the commits that end within the limit, as if the log
// ended there, and the database can be used, checkpointed and switched out of WAL.
TEST_P(WalFilesBigLogTest, RecoveryOpensALogThatHoldsFramesPastTheLimit) {
  vfs::MemFileSystem base;
  const std::string path = "/over.db";
  int commits = 0;
  uint32_t frames = 0;
  {
    vfs::FaultInjectingFileSystem fs(&base);
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path, LimitOptions(GetParam(), &fs)));
    while (db->Stats().log_frames < 600) {
      ASSERT_THAT(db->Put(absl::StrFormat("k%04d", commits), std::string(100, 'v')), IsOk());
      ++commits;
    }
    frames = db->Stats().log_frames;
    fs.SimulateProcessCrash();
  }
  const ScopedFrameLimit limit(300);
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, LimitOptions(GetParam(), &base));
  ASSERT_THAT(db, IsOk()) << "a log of " << frames << " frames, limit 300";
  const DbStats stats = (*db)->Stats();
  std::printf("%s: a log of %u frames (%d commits) under a limit of 300: %u frames adopted\n",
              std::string(JournalModeName(GetParam())).c_str(), frames, commits,
              stats.log_frames);
  if (GetParam() == JournalMode::kWal) {
    EXPECT_LE(stats.log_frames, 300u);
    EXPECT_GT(stats.log_frames, 250u);
  }
  // Every commit is a prefix: the adopted ones are there, the rest are not, none half.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*db)->BeginRead());
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t count, r->Count());
  EXPECT_GT(count, 0u);
  EXPECT_LT(count, static_cast<uint64_t>(commits));
  for (int i = 0; i < commits; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, r->Get(absl::StrFormat("k%04d", i)));
    EXPECT_EQ(v.has_value(), static_cast<uint64_t>(i) < count) << "key " << i;
  }
  r.reset();
  EXPECT_THAT((*db)->Check()->problems, ::testing::IsEmpty());
  // WAL: the log is full, and a commit is refused until a checkpoint lets it restart. WAL2:
  // the writer switches to the other log (it does at half the limit at the latest).
  if (GetParam() == JournalMode::kWal) {
    EXPECT_THAT((*db)->Put("after", "1"),
                StatusIs(absl::StatusCode::kResourceExhausted, "the log is full"));
  }
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult ckpt, (*db)->Checkpoint(CheckpointMode::kPassive));
  EXPECT_FALSE(ckpt.blocked);
  ASSERT_THAT((*db)->Put("after", "1"), IsOk());
  db = absl::UnknownError("closed");
  Options rollback = LimitOptions(JournalMode::kDelete, &base);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> back, Db::Open(path, rollback));
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> after, back->Get("after"));
  EXPECT_EQ(after, "1");
}

INSTANTIATE_TEST_SUITE_P(Modes, WalFilesBigLogTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
