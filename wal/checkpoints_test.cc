// The checkpoint role on its own: a heap wal-index, a log and a database file in memory, and
// commits written by the test as a writer would. W7: a log restarts only with every frame
// copied; the restart and the checkpoints are counted once; V4's phase bookkeeping.
#include "wal/checkpoints.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "base/check.h"
#include "base/counters.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "wal/wal_testing.h"

namespace journalkv::wal {
namespace {

using ::journalkv::wal::testing::AppendCommit;
using ::journalkv::wal::testing::IndexFrames;
using ::journalkv::wal::testing::PageImage;

using ::journalkv::testing::IsOk;

constexpr uint32_t kPageSize = 1024;
constexpr uint32_t kPages = 4;
constexpr uint32_t kSeq = 3;

class CheckpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(db_, fs_.Open("/x.db", {vfs::OpenMode::kCreate,
                                                     vfs::FileKind::kDatabase}));
    for (uint32_t p = 1; p <= kPages; ++p) {
      ASSERT_THAT(db_->Write(uint64_t{p - 1} * kPageSize, Image(p, '0')), IsOk());
    }
    JKV_ASSERT_OK_AND_ASSIGN(log_, WalLog::Open(&fs_, "/x.db-wal", false));
    index_ = shm::WalIndex::OpenHeap();
    header_.page_size = kPageSize;
    header_.page_count = kPages;
    header_.logs[0] = {kSeq, 0x1111, 0x2222, 0, 0};
    JKV_ASSERT_OK_AND_ASSIGN(header_.logs[0].last_checksum,
                             log_->WriteHeader(LogHeaderFor(header_, 0)));
    for (int l = 0; l < 2; ++l) ForgetCopies(*index_, l, header_.logs[l].ckpt_seq, 0);
    index_->WriteHeader(header_);
  }

  static std::vector<uint8_t> Image(uint32_t page, char tag) {
    return PageImage(page, tag, kPageSize);
  }

  // One commit of `pages`: frames appended, indexed, the header published.
  void Commit(const std::vector<uint32_t>& pages, char tag) {
    ASSERT_THAT(AppendCommit(*log_, header_, 0, pages, tag, kPages), IsOk());
    ASSERT_THAT(IndexFrames(*index_, header_, 0, pages), IsOk());
    ++header_.change;
    index_->WriteHeader(header_);
  }

  CheckpointFiles Files() {
    CheckpointFiles f;
    f.index = index_.get();
    f.logs[0] = log_.get();
    f.db = db_.get();
    f.page_size = kPageSize;
    f.busy_timeout = absl::Milliseconds(20);
    return f;
  }

  absl::Status Restart(bool allowed = true) {
    write_.AssumeHeld();  // the test is the writer
    return role_.RestartIfCopied(write_, *index_, header_, 0, /*make_current=*/false,
                                 /*may_skip=*/false, absl::InfinitePast(),
                                 [allowed] { return allowed; });
  }

  vfs::MemFileSystem fs_;
  std::unique_ptr<vfs::File> db_;
  std::unique_ptr<WalLog> log_;
  std::unique_ptr<shm::WalIndex> index_;
  shm::IndexHeader header_;
  base::Counters counters_;
  LockByte write_;
  Checkpoints role_{/*wal2=*/false, &counters_};
};

// W7: a log with a frame not yet copied keeps its generation and its frames.
TEST_F(CheckpointsTest, ALogWithUncopiedFramesIsNotRestarted) {
  Commit({1, 2}, 'a');
  ASSERT_THAT(Restart(), IsOk());
  EXPECT_EQ(header_.logs[0].ckpt_seq, kSeq);
  EXPECT_EQ(header_.logs[0].mx_frame, 2u);
  shm::IndexHeader published;
  ASSERT_TRUE(index_->ReadHeader(&published));
  EXPECT_EQ(published.logs[0].mx_frame, 2u);
  EXPECT_EQ(counters_.Get(base::Counter::kLogRestarts), 0u);
}

// W7: once a checkpoint copied every frame, the log restarts as a new generation with none,
// and the restart and the checkpoint are each counted once.
TEST_F(CheckpointsTest, ACopiedLogRestartsAsANewGeneration) {
  Commit({1, 2}, 'a');
  Commit({2}, 'b');
  JKV_ASSERT_OK_AND_ASSIGN(const CheckpointResult r,
                           role_.Run(Files(), CheckpointMode::kPassive, -1));
  EXPECT_EQ(r.copied, 3u);
  EXPECT_EQ(index_->backfill(0), 3u);
  role_.Count(r);
  ASSERT_THAT(Restart(), IsOk());
  EXPECT_EQ(header_.logs[0].ckpt_seq, kSeq + 1);
  EXPECT_EQ(header_.logs[0].mx_frame, 0u);
  EXPECT_EQ(index_->backfill(0), 0u);
  role_.CheckInvariants(*index_, header_, 0);
  EXPECT_EQ(counters_.Get(base::Counter::kCheckpoints), 1u);
  EXPECT_EQ(counters_.Get(base::Counter::kFramesCopied), 3u);
  EXPECT_EQ(counters_.Get(base::Counter::kLogRestarts), 1u);
}

// A restart the connection does not allow (a private reader's frames) leaves the log.
TEST_F(CheckpointsTest, ARestartNotAllowedLeavesTheLog) {
  Commit({1}, 'a');
  ASSERT_THAT(role_.Run(Files(), CheckpointMode::kPassive, -1).status(), IsOk());
  ASSERT_THAT(Restart(/*allowed=*/false), IsOk());
  EXPECT_EQ(header_.logs[0].ckpt_seq, kSeq);
  EXPECT_EQ(header_.logs[0].mx_frame, 1u);
}

// A readers' pin keeps the copy, and so the restart, back (W7: never past a pinned reader).
TEST_F(CheckpointsTest, APinnedReaderKeepsTheLogFromRestarting) {
  Commit({1}, 'a');
  ASSERT_THAT(index_->TryLockSlot(0), IsOk());
  index_->set_pin(0, 0, shm::EncodePin(kSeq, 1));
  Commit({2}, 'b');
  JKV_ASSERT_OK_AND_ASSIGN(const CheckpointResult r,
                           role_.Run(Files(), CheckpointMode::kPassive, -1));
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(index_->backfill(0), 1u);
  ASSERT_THAT(Restart(), IsOk());
  EXPECT_EQ(header_.logs[0].ckpt_seq, kSeq);
  EXPECT_EQ(header_.logs[0].mx_frame, 2u);
}

TEST(CheckpointPhasesTest, AddPhaseSumsAndKeepsTheLastBlocked) {
  CheckpointResult total;
  CheckpointResult a;
  a.copied = 2;
  a.syncs = 1;
  a.blocked = true;
  CheckpointResult b;
  b.copied = 3;
  Checkpoints::AddPhase(total, a);
  Checkpoints::AddPhase(total, b);
  EXPECT_EQ(total.copied, 5u);
  EXPECT_EQ(total.syncs, 1);
  EXPECT_FALSE(total.blocked);
}

// V4: the writer for the switches only, the phases in order. Debug builds check it.
TEST(CheckpointPhasesTest, TheWriterHeldForACopyOrMissingForASwitchIsCaught) {
  using Phase = Wal2Checkpoint::Phase;
  Wal2Checkpoint c;
  c.next = Phase::kSwitch;
  Checkpoints::CheckInvariants(c, Phase::kCopy, /*as_writer=*/false);
  c.next = Phase::kCopySwitched;
  Checkpoints::CheckInvariants(c, Phase::kSwitch, /*as_writer=*/true);
  if (!JKV_DCHECK_IS_ON) GTEST_SKIP() << "JKV_DCHECK is off in this build";
  c.next = Phase::kSwitch;
  EXPECT_DEATH(Checkpoints::CheckInvariants(c, Phase::kCopy, /*as_writer=*/true), "");
  c.next = Phase::kCopySwitched;
  EXPECT_DEATH(Checkpoints::CheckInvariants(c, Phase::kSwitch, /*as_writer=*/false), "");
  c.next = Phase::kRestart;
  EXPECT_DEATH(Checkpoints::CheckInvariants(c, Phase::kCopy, /*as_writer=*/false), "");
}

}  // namespace
}  // namespace journalkv::wal
