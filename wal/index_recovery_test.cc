// Index recovery on its own, over a heap wal-index and logs in memory (vfs::MemFileSystem):
// the header a scan of the logs describes (V1), the index rebuilt from the scans (W6) and by
// RecoverIndex (dropping the pending commits the log lost, W13), a torn published header
// repaired with its pending commits kept or waited for (RepairHeader, ReadHeaderOrRepair), the
// appended header repaired from its whole copy (W12 e) or set back to the published one
// (W12 f), the checks that find an index contradicting the log (IndexDamage, W6), and the one
// helper that reads a header until whole.
#include "wal/index_recovery.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "wal/checkpoint_copy.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "wal/group_flush.h"
#include "wal/lock_byte.h"
#include "wal/wal_testing.h"
#include "wal/log_durability.h"
#include "wal/writer.h"

namespace journalkv::wal {
namespace {

using ::journalkv::wal::testing::AppendCommit;

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr uint32_t kPageSize = 1024;

class IndexRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int l = 0; l < 2; ++l) {
      JKV_ASSERT_OK_AND_ASSIGN(logs_[l],
                               WalLog::Open(&fs_, l == 0 ? "/x.db-wal" : "/x.db-wal2", false));
    }
    index_ = shm::WalIndex::OpenHeap();
  }

  // Log `l` restarted as generation `seq`, then one commit per entry of `commits` (its pages,
  // the database's size after it): header_.logs[l] follows.
  void WriteLog(int l, uint32_t seq, std::vector<std::vector<uint32_t>> commits) {
    header_.page_size = kPageSize;
    header_.logs[l] = {seq, 0x1000u + seq, 0x2000u + seq, 0, 0};
    JKV_ASSERT_OK_AND_ASSIGN(header_.logs[l].last_checksum,
                             logs_[l]->WriteHeader(LogHeaderFor(header_, l)));
    AppendCommits(l, commits);
  }

  // One commit per entry of `commits` appended to log `l` (not indexed): header_.logs[l]
  // follows.
  void AppendCommits(int l, std::vector<std::vector<uint32_t>> commits) {
    for (const std::vector<uint32_t>& pages : commits) {
      ASSERT_THAT(AppendCommit(*logs_[l], header_, l, pages, /*fill=*/-1,
                               10 + header_.logs[l].mx_frame),
                  IsOk());
    }
  }

  IndexRecovery Make(bool wal2) {
    return IndexRecovery({.index = &index_,
                          .logs = &logs_,
                          .wal2 = wal2,
                          .page_size = kPageSize,
                          .shm_path = &shm_path_,
                          .writer = &writer_,
                          .durability = &durability_,
                          .counters = &counters_});
  }

  // The index rebuilt from the logs and `h` published, as RecoverIndex does.
  void Rebuild(IndexRecovery& r, shm::IndexHeader* h) {
    JKV_ASSERT_OK_AND_ASSIGN(auto scans, r.ScanLogs());
    *h = r.HeaderFromScans(scans, nullptr);
    write_.AssumeHeld();
    recover_.AssumeHeld();
    ASSERT_THAT(r.RebuildEntries(scans, *h, write_, recover_), IsOk());
    index_->WriteHeader(*h);
  }

  vfs::MemFileSystem fs_;
  std::array<std::unique_ptr<WalLog>, 2> logs_;
  std::unique_ptr<shm::WalIndex> index_;
  shm::IndexHeader header_;
  const std::string shm_path_ = "/x.db-shm";
  Writer writer_{Writer::Env{.index = &index_, .logs = &logs_}};
  LockByte write_;
  LockByte recover_;
  const std::array<std::string, 2> log_paths_{"/x.db-wal", "/x.db-wal2"};
  WalOptions options_{.sync = SyncLevel::kFull};
  LogDurability durability_{LogDurability::Env{.fs = &fs_,
                                               .index = &index_,
                                               .logs = &logs_,
                                               .page_size = kPageSize,
                                               .options = &options_,
                                               .log_paths = &log_paths_,
                                               .shm_path = &shm_path_,
                                               .writer = &writer_}};
  GroupFlush flush_;
  base::Counters counters_;
};

// V1: the log with the later generation is current, whichever file it is; its last commit gives
// the database's size. A log with no valid header is empty.
TEST_F(IndexRecoveryTest, TheLaterGenerationIsTheCurrentLog) {
  WriteLog(0, 8, {{2, 3}});
  WriteLog(1, 9, {{4}, {5}});
  IndexRecovery r = Make(/*wal2=*/true);
  JKV_ASSERT_OK_AND_ASSIGN(auto scans, r.ScanLogs());
  shm::IndexHeader h = r.HeaderFromScans(scans, nullptr);
  EXPECT_EQ(h.current_log, 1u);
  EXPECT_EQ(h.logs[0], header_.logs[0]);
  EXPECT_EQ(h.logs[1], header_.logs[1]);
  EXPECT_EQ(h.page_count, 11u);  // log 1's last commit: 10 + the frames before it
  // Log 0 restarted later: it is the current one now.
  WriteLog(0, 10, {{6}});
  JKV_ASSERT_OK_AND_ASSIGN(scans, r.ScanLogs());
  h = r.HeaderFromScans(scans, nullptr);
  EXPECT_EQ(h.current_log, 0u);
  EXPECT_EQ(h.page_count, 10u);
  // In WAL only log 0 counts.
  IndexRecovery wal = Make(/*wal2=*/false);
  JKV_ASSERT_OK_AND_ASSIGN(scans, wal.ScanLogs());
  EXPECT_EQ(scans[1].mx_frame, 0u);
}

// W6: the rebuilt index finds each page's newest frame, and nothing is taken as copied.
TEST_F(IndexRecoveryTest, TheRebuiltIndexHoldsEveryFrameAndNothingCopied) {
  WriteLog(0, 8, {{2, 3}, {2}});
  index_->set_backfill(0, 2);
  IndexRecovery r = Make(false);
  shm::IndexHeader h;
  Rebuild(r, &h);
  EXPECT_EQ(h.logs[0].mx_frame, 3u);
  EXPECT_EQ(*index_->Lookup(0, 2, 3), 3u);
  EXPECT_EQ(*index_->Lookup(0, 3, 3), 2u);
  EXPECT_EQ(*index_->Lookup(0, 2, 2), 1u);
  EXPECT_EQ(index_->backfill(0), 0u);
}

// W12 e: a torn appended header is rewritten from its whole copy; with neither whole there is
// nothing to repair from.
TEST_F(IndexRecoveryTest, ATornAppendedHeaderIsRewrittenFromItsWholeCopy) {
  WriteLog(0, 8, {{2}});
  IndexRecovery r = Make(false);
  shm::IndexHeader h;
  Rebuild(r, &h);
  shm::IndexHeader a;
  for (int copy = 0; copy < 2; ++copy) {
    index_->CorruptAppendedCopyForTesting(copy);
    EXPECT_FALSE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &a));
    write_.AssumeHeld();
    ASSERT_TRUE(r.RepairAppended(&a, write_));
    EXPECT_EQ(a, h);
    ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &a));  // whole again
    EXPECT_EQ(a, h);
  }
  index_->CorruptAppendedCopyForTesting(0);
  index_->CorruptAppendedCopyForTesting(1);
  write_.AssumeHeld();
  EXPECT_FALSE(r.RepairAppended(&a, write_));
  EXPECT_THAT(r.AppendedOrDamage(h, write_).status(), StatusIs(absl::StatusCode::kDataLoss, "damaged"));
}

// W12: pending commits only add frames to the current generation of the current log; W12 f: an
// appended header that does not extend the published one is set back to it.
TEST_F(IndexRecoveryTest, AnAppendedHeaderThatDoesNotExtendThePublishedOneIsSetBack) {
  WriteLog(0, 8, {{2}, {3}});
  IndexRecovery r = Make(false);
  shm::IndexHeader h;
  Rebuild(r, &h);
  shm::IndexHeader older = h;
  older.logs[0].mx_frame = 1;
  EXPECT_TRUE(r.ExtendsPublished(h, older));
  EXPECT_TRUE(r.ExtendsPublished(h, h));
  EXPECT_FALSE(r.ExtendsPublished(older, h));
  shm::IndexHeader other_generation = h;
  ++other_generation.logs[0].ckpt_seq;
  EXPECT_FALSE(r.ExtendsPublished(other_generation, h));
  // Published `h`, appended a later generation (a restart cut between its two headers).
  index_->WriteAppendedHeader(other_generation);
  write_.AssumeHeld();
  JKV_ASSERT_OK_AND_ASSIGN(shm::IndexHeader a, r.AppendedOrDamage(h, write_));
  EXPECT_EQ(a, h);
  ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &a));
  EXPECT_EQ(a, h);
}

// W6: a header the log contradicts is damage: a backfill past a log's end, or a last frame
// that is not the commit the header names. A header found consistent is not read again.
TEST_F(IndexRecoveryTest, AHeaderTheLogContradictsIsDamage) {
  WriteLog(0, 8, {{2}, {3}});
  IndexRecovery r = Make(false);
  shm::IndexHeader h;
  Rebuild(r, &h);
  write_.AssumeHeld();
  EXPECT_THAT(r.IndexDamage(h, write_), IsOk());
  shm::IndexHeader wrong = h;
  ++wrong.change;
  wrong.logs[0].last_checksum ^= 1;
  EXPECT_THAT(r.IndexDamage(wrong, write_), StatusIs(absl::StatusCode::kDataLoss, "damaged"));
  wrong = h;
  ++wrong.change;
  wrong.logs[0].mx_frame = 1;  // frame 1 is a commit frame, but not with this chain value
  EXPECT_THAT(r.IndexDamage(wrong, write_), StatusIs(absl::StatusCode::kDataLoss, "damaged"));
  index_->set_backfill(0, 3);
  EXPECT_THAT(r.IndexDamage(h, write_), StatusIs(absl::StatusCode::kDataLoss, "damaged"));
  index_->set_backfill(0, 2);
  // The change word checked above is not checked again (one frame read per foreign header):
  // the same change with another checksum passes.
  wrong = h;
  wrong.logs[0].last_checksum ^= 1;
  EXPECT_THAT(r.IndexDamage(wrong, write_), IsOk());
}

// W6, W13: RecoverIndex rebuilds the index from the log, the truth, and publishes it; a commit
// appended past what the log holds (its frames lost) is dropped, so its waiter fails rather
// than being acknowledged by a later commit that reaches the same frames. The rebuild counts.
TEST_F(IndexRecoveryTest, RecoverIndexPublishesTheLogAndDropsTheCommitsItLost) {
  WriteLog(0, 8, {{2}, {3}});
  IndexRecovery r = Make(false);
  ASSERT_THAT(durability_.JoinSyncFloor(false), IsOk());
  shm::IndexHeader h;
  Rebuild(r, &h);
  // A commit appended (frame 3, indexed) whose frame never reached the log.
  shm::IndexHeader lost = h;
  lost.logs[0].mx_frame = 3;
  ++lost.change;
  ASSERT_THAT(index_->Append(0, 3, 7), IsOk());
  index_->WriteAppendedHeader(lost);
  const uint32_t epoch = index_->append_epoch();
  write_.AssumeHeld();
  recover_.AssumeHeld();
  flush_.AssumeAlone();
  ASSERT_THAT(r.RecoverIndex(write_, recover_, flush_), IsOk());
  shm::IndexHeader now;
  ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kPublished, &now));
  EXPECT_EQ(now.logs[0].mx_frame, 2u);
  EXPECT_NE(now.change, h.change) << "a rebuilt state must not look like one cached before";
  EXPECT_THAT(index_->PageOfFrame(0, 2), IsOkAndHolds(3u));
  EXPECT_THAT(index_->PageOfFrame(0, 3), IsOkAndHolds(0u)) << "the lost commit's entry stayed";
  EXPECT_THAT(durability_.CommitDropped(lost, epoch),
              StatusIs(absl::StatusCode::kDataLoss, ""));
  EXPECT_EQ(counters_.Get(base::Counter::kRecoveries), 1u);
}

// W6, W12 e: a publisher that died between the header's copies left A torn and B whole. The
// repair republishes B and keeps the commit appended past it, pending, with its index entry:
// open read transactions looking up the entries are undisturbed, and the next flush publishes
// it. A connection that may not repair (its writer holds WRITE on another thread) waits, and
// gives up busy at its deadline.
TEST_F(IndexRecoveryTest, ATornHeaderIsRepairedFromItsWholeCopyKeepingPendingCommits) {
  WriteLog(0, 8, {{2}, {3}});
  IndexRecovery r = Make(false);
  ASSERT_THAT(durability_.JoinSyncFloor(false), IsOk());
  shm::IndexHeader h;
  Rebuild(r, &h);
  AppendCommits(0, {{4}});  // frame 3: a commit appended, waiting for its flush (W12)
  shm::IndexHeader pending = h;
  pending.logs[0] = header_.logs[0];
  ++pending.change;
  ASSERT_THAT(index_->Append(0, 3, 4), IsOk());
  index_->WriteAppendedHeader(pending);
  index_->CorruptHeaderForTesting();

  EXPECT_THAT(r.ReadHeaderOrRepair(absl::Now() + absl::Milliseconds(20), /*may_recover=*/false,
                                   write_, recover_, flush_),
              StatusIs(absl::StatusCode::kUnavailable, "busy"));
  shm::IndexHeader out;
  EXPECT_FALSE(ReadWholeHeader(*index_, HeaderCopy::kPublished, &out)) << "repaired anyway";

  JKV_ASSERT_OK_AND_ASSIGN(out, r.ReadHeaderOrRepair(absl::Now() + absl::Seconds(5),
                                                     /*may_recover=*/true, write_, recover_,
                                                     flush_));
  EXPECT_EQ(out.logs[0].mx_frame, 2u) << "the published state is copy B's";
  EXPECT_EQ(out.change, h.change + 1);
  EXPECT_THAT(index_->PageOfFrame(0, 3), IsOkAndHolds(4u)) << "the pending commit's entry went";
  shm::IndexHeader appended;
  ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &appended));
  EXPECT_EQ(appended.logs[0].mx_frame, 3u) << "the pending commit was dropped";
  EXPECT_EQ(counters_.Get(base::Counter::kRecoveries), 0u) << "rebuilt instead of repaired";
}

// The helper every reader of a header goes through: whole, or false once the tear stays.
TEST_F(IndexRecoveryTest, AHeaderIsReadWholeOrNotAtAll) {
  shm::IndexHeader h;
  h.page_size = kPageSize;
  h.change = 5;
  index_->WriteHeader(h);
  shm::IndexHeader out;
  ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kPublished, &out));
  EXPECT_EQ(out, h);
  ASSERT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &out));
  EXPECT_EQ(out, h);
  index_->CorruptHeaderForTesting();
  EXPECT_FALSE(ReadWholeHeader(*index_, HeaderCopy::kPublished, &out));
  EXPECT_TRUE(ReadWholeHeader(*index_, HeaderCopy::kAppended, &out));
}

}  // namespace
}  // namespace journalkv::wal
