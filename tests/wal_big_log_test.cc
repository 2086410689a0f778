// A pinned reader holds every checkpoint back while the writer grows the log to a million
// frames (100,000 under sanitizers), in wal and in wal2: old and new snapshots stay correct and
// point reads stay fast.
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
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

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

INSTANTIATE_TEST_SUITE_P(Modes, WalFilesBigLogTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
