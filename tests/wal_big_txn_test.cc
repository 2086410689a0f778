// Transactions larger than the page cache in wal and wal2 (wal/wal_connection.h W11): a page
// the transaction already spilled to the log is written over its own frame, so the log holds
// at most the transaction's distinct pages plus one commit frame; a rollback after such
// rewrites leaves nothing behind, not even in the page cache, whose entries for the
// transaction's frames would otherwise outlive it; and a log grown by a big transaction is cut
// back to Options::wal_size_limit when it restarts.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

std::string Key(int i) { return absl::StrFormat("key%06d", i); }
std::string Value(const char* tag, int i) {
  return absl::StrFormat("%s-%06d-%s", tag, i, std::string(80, 'v'));
}

class WalBigTxnTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Opts(uint32_t cache_pages) {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = &fs_;
    o.page_size = 1024;
    o.cache_pages = cache_pages;
    o.sync = SyncLevel::kNormal;
    o.checkpoint_policy = "manual";  // the log keeps every frame for the counts below
    return o;
  }
  std::unique_ptr<Db> Open(const Options& o) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/big.db", o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Puts keys 0..n-1 (in a shuffled order, so that every spill touches pages spilled before)
  // with values tagged `tag`, in one transaction; commits it or rolls it back.
  void BigTransaction(Db& db, int n, const char* tag, bool commit) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db.BeginWrite());
    for (int i : order) ASSERT_THAT(w->Put(Key(i), Value(tag, i)), IsOk());
    if (commit) {
      ASSERT_THAT(w->Commit(), IsOk());
    } else {
      ASSERT_THAT(w->Rollback(), IsOk());
    }
  }
  void ExpectAll(Db& db, int n, const char* tag) {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db.BeginRead());
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::optional<std::string>> v = r->Get(Key(i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value()) << Key(i);
      ASSERT_EQ(**v, Value(tag, i)) << Key(i);
    }
  }

  vfs::MemFileSystem fs_;
};

TEST_P(WalBigTxnTest, ATransactionsFramesAreAtMostItsDistinctPagesPlusOne) {
  constexpr int kKeys = 4000;  // about 500 pages of 1 KiB, 32 in the cache: many spills
  {
    std::unique_ptr<Db> db = Open(Opts(32));
    ASSERT_NE(db, nullptr);
    BigTransaction(*db, kKeys, "a", /*commit=*/true);
    const DbStats s = db->Stats();
    EXPECT_GT(s.spills, 10u);
    // Every spill after the first found pages of the earlier ones (the root, the inner pages
    // and most leaves) and wrote them over their frames.
    EXPECT_GT(s.frames_rewritten, s.spills * 8);
    // The transaction wrote each page of the database at most once, plus the commit frame.
    EXPECT_LE(s.log_frames, s.page_count + 1);
    ExpectAll(*db, kKeys, "a");
  }
  // Reopened (the log copied back at the last close, or recovered): the same.
  std::unique_ptr<Db> db = Open(Opts(32));
  ASSERT_NE(db, nullptr);
  ExpectAll(*db, kKeys, "a");
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
  EXPECT_TRUE(check.ok()) << check.problems.front();
}

TEST_P(WalBigTxnTest, RecoveryAcceptsTheRechainedTransactionAfterACrashOrPowerLoss) {
  // The log still holds the transaction when the connection dies, so the next opener, alone,
  // rebuilds the index from it: it takes the transaction only if the whole chain, recomputed
  // from the first rewritten frame (W11), checks out. At FULL the commit's sync covers the
  // rechained frames too, so a power loss keeps it.
  constexpr int kKeys = 3000;
  for (const bool power_loss : {false, true}) {
    SCOPED_TRACE(power_loss ? "power loss" : "process crash");
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fault(&base);
    Options o = Opts(32);
    o.file_system = &fault;
    o.sync = SyncLevel::kFull;
    std::unique_ptr<Db> db = Open(o);
    ASSERT_NE(db, nullptr);
    ASSERT_THAT(db->Put("before", "1"), IsOk());
    BigTransaction(*db, kKeys, "r", /*commit=*/true);
    ASSERT_GT(db->Stats().frames_rewritten, 0u);
    if (power_loss) {
      ASSERT_THAT(fault.SimulatePowerLoss(/*seed=*/11), IsOk());
    } else {
      fault.SimulateProcessCrash();
    }
    db.reset();  // its files are dead: its close changes nothing
    std::unique_ptr<Db> reopened = Open(o);
    ASSERT_NE(reopened, nullptr);
    ExpectAll(*reopened, kKeys, "r");
    JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, reopened->Check());
    EXPECT_TRUE(check.ok()) << check.problems.front();
  }
}

TEST_P(WalBigTxnTest, ARolledBackTransactionLeavesNothingOfItsRewrittenFrames) {
  constexpr int kKeys = 3000;
  std::unique_ptr<Db> db = Open(Opts(32));
  std::unique_ptr<Db> other = Open(Opts(32));
  ASSERT_NE(db, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_THAT(db->Put("base", "0"), IsOk());
  // Rolled back after many rewrites: its frames, and the images of them this handle cached
  // while it spilled, are gone.
  BigTransaction(*db, kKeys, "gone", /*commit=*/false);
  ASSERT_GT(db->Stats().frames_rewritten, 0u);
  // Another handle writes the same keys the same way, so it writes the same pages at the same
  // frame numbers of the same generation: an image cached for the rolled-back transaction's
  // frame would be taken by this handle for the other one's committed frame.
  BigTransaction(*other, kKeys, "kept", /*commit=*/true);
  ExpectAll(*db, kKeys, "kept");
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db->BeginRead());
  EXPECT_EQ(**r->Get("base"), "0");
}

TEST_P(WalBigTxnTest, ALogGrownByABigTransactionIsCutBackWhenItRestarts) {
  Options o = Opts(32);
  o.wal_size_limit = 256 * 1024;
  std::unique_ptr<Db> db = Open(o);
  ASSERT_NE(db, nullptr);
  BigTransaction(*db, 3000, "a", /*commit=*/true);
  const uint64_t peak = db->Stats().log_bytes;
  ASSERT_GT(peak, o.wal_size_limit);
  // Copied completely; the next commits restart the log(s) and cut them back.
  for (int round = 0; round < 3; ++round) {
    ASSERT_THAT(db->Checkpoint(CheckpointMode::kFull), IsOk());
    ASSERT_THAT(db->Put(absl::StrFormat("small%d", round), "x"), IsOk());
  }
  const DbStats s = db->Stats();
  EXPECT_GE(s.log_size_cuts, 1u);
  EXPECT_LE(s.log_bytes, GetParam() == JournalMode::kWal2 ? 2 * o.wal_size_limit
                                                          : o.wal_size_limit);
  ExpectAll(*db, 3000, "a");

  // With no limit the file keeps its size.
  std::unique_ptr<Db> unlimited;
  db.reset();
  Options keep = Opts(32);
  keep.wal_size_limit = 0;
  unlimited = Open(keep);
  ASSERT_NE(unlimited, nullptr);
  BigTransaction(*unlimited, 3000, "b", /*commit=*/true);
  const uint64_t grown = unlimited->Stats().log_bytes;
  for (int round = 0; round < 3; ++round) {
    ASSERT_THAT(unlimited->Checkpoint(CheckpointMode::kFull), IsOk());
    ASSERT_THAT(unlimited->Put(absl::StrFormat("small%d", round), "x"), IsOk());
  }
  EXPECT_EQ(unlimited->Stats().log_size_cuts, 0u);
  EXPECT_GE(unlimited->Stats().log_bytes, grown);
}

INSTANTIATE_TEST_SUITE_P(Modes, WalBigTxnTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) {
                           return info.param == JournalMode::kWal ? "wal" : "wal2";
                         });

}  // namespace
}  // namespace journalkv
