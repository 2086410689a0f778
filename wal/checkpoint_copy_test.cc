// The checkpointer on its own: a heap wal-index, a log and a database file in memory, and
// commits written by the test as a writer would (frames appended, entries indexed, the header
// published). What the pager's WAL tests reach only through whole connections: the safe frame
// under readers' pins, deferred copies (C3), the restart's order (W8) and a damaged index (C6).
#include "wal/checkpoint_copy.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "wal/wal_testing.h"

namespace journalkv::wal {
namespace {

using ::journalkv::wal::testing::AppendCommit;
using ::journalkv::wal::testing::IndexFrames;

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using shm::EncodePin;
using shm::EncodeTarget;

constexpr uint32_t kPageSize = 1024;
constexpr uint32_t kPages = 8;  // the database's size in pages
constexpr uint32_t kSeq = 7;    // the log's generation

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(db_, fs_.Open("/x.db", {vfs::OpenMode::kCreate,
                                                     vfs::FileKind::kDatabase}));
    for (uint32_t p = 1; p <= kPages; ++p) {
      ASSERT_THAT(db_->Write(uint64_t{p - 1} * kPageSize, Image('0')), IsOk());
    }
    JKV_ASSERT_OK_AND_ASSIGN(log_, wal::WalLog::Open(&fs_, "/x.db-wal", false));
    index_ = shm::WalIndex::OpenHeap();
    header_.page_size = kPageSize;
    header_.page_count = kPages;
    header_.logs[0] = {kSeq, 0x1111, 0x2222, 0, 0};
    JKV_ASSERT_OK_AND_ASSIGN(header_.logs[0].last_checksum,
                             log_->WriteHeader(LogHeaderFor(header_, 0)));
    for (int l = 0; l < 2; ++l) ForgetCopies(*index_, l, header_.logs[l].ckpt_seq, 0);
    index_->WriteHeader(header_);
  }

  std::vector<uint8_t> Image(char c) const { return std::vector<uint8_t>(kPageSize, c); }

  // One commit of pages written with `tag`: frames appended, indexed, the header published.
  // Each image ends with its checksum, as every image the log takes does (log/wal_format.h).
  void Commit(std::vector<uint32_t> pages, char tag) {
    ASSERT_THAT(AppendCommit(*log_, header_, 0, pages, tag, kPages), IsOk());
    ASSERT_THAT(IndexFrames(*index_, header_, 0, pages), IsOk());
    ++header_.change;
    index_->WriteHeader(header_);
  }

  char PageInFile(uint32_t p) {
    std::vector<uint8_t> out(kPageSize);
    EXPECT_THAT(db_->Read(uint64_t{p - 1} * kPageSize, absl::MakeSpan(out)), IsOk());
    return static_cast<char>(out[0]);
  }

  CheckpointFiles Files() {
    CheckpointFiles f;
    f.index = index_.get();
    f.logs[0] = log_.get();
    f.db = db_.get();
    f.page_size = kPageSize;
    f.busy_timeout = absl::Milliseconds(20);
    f.write = &write_;  // the test is the writer
    return f;
  }

  // A reader in slot `slot` whose snapshot ends at `frame` of generation `seq`.
  void Pin(uint32_t seq, uint32_t frame, int slot = 0) {
    ASSERT_THAT(index_->TryLockSlot(slot), IsOk());
    index_->set_pin(slot, 0, EncodePin(seq, frame));
  }

  vfs::MemFileSystem fs_;
  std::unique_ptr<vfs::File> db_;
  std::unique_ptr<wal::WalLog> log_;
  std::unique_ptr<shm::WalIndex> index_;
  LockByte write_;  // the WRITE byte the test holds as the writer (CheckpointFiles::write)
  shm::IndexHeader header_;
};

TEST_F(CheckpointerTest, CopiesTheNewestVersionOfEachPageAndPublishesTheBackfill) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  Commit({2}, 'c');
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.log_frames, 3u);
  EXPECT_EQ(r.copied, 3u);
  EXPECT_EQ(r.backfilled, 3u);
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(index_->backfill(0), 3u);
  EXPECT_EQ(PageInFile(2), 'c');
  EXPECT_EQ(PageInFile(3), 'b');
  EXPECT_EQ(PageInFile(4), '0');
}

TEST_F(CheckpointerTest, AReadersPinStopsTheCopyAtItsSnapshot) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  Commit({2}, 'c');
  Pin(kSeq, 2);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.backfilled, 2u);
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(PageInFile(2), 'a') << "a version past the reader's snapshot was copied";
  EXPECT_EQ(PageInFile(3), 'b');
  EXPECT_EQ(index_->ckpt_target(0), EncodeTarget(kSeq, 2)) << "the target is lowered to it";
  index_->set_pin(0, 0, 0);
  JKV_ASSERT_OK_AND_ASSIGN(r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, 1u);
  EXPECT_EQ(r.backfilled, 3u);
  EXPECT_EQ(PageInFile(2), 'c');
}

// The scan of the pins stops at the slots claimed so far (S1 in shm/wal_index.h): a reader
// in the highest of them still holds the copy back.
TEST_F(CheckpointerTest, APinInTheHighestClaimedSlotStopsTheCopy) {
  Commit({2}, 'a');
  Commit({2}, 'b');
  Pin(kSeq, 1, /*slot=*/37);
  EXPECT_EQ(index_->slots_used(), 38);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.backfilled, 1u);
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(PageInFile(2), 'a') << "a version past the reader's snapshot was copied";
}

TEST_F(CheckpointerTest, APinOfAnOlderGenerationAllowsNothingPastTheBackfill) {
  Commit({2}, 'a');
  Pin(kSeq - 1, 9);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, 0u);
  EXPECT_EQ(r.backfilled, 0u);
  EXPECT_EQ(PageInFile(2), '0');
}

TEST_F(CheckpointerTest, ADeadReadersPinIsSkipped) {
  Commit({2}, 'a');
  Pin(kSeq, 0);
  ASSERT_THAT(index_->UnlockSlot(0), IsOk());  // the reader's process is gone
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.backfilled, 1u);
}

// C3: a deferred copy records what the file holds without publishing it, and the next
// checkpoint publishes it without copying again.
TEST_F(CheckpointerTest, ADeferredCopyIsRecordedAndTheNextCheckpointPublishesIt) {
  Commit({2, 3}, 'a');
  CheckpointFiles deferred = Files();
  deferred.publish = false;
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(deferred, CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, 2u);
  EXPECT_EQ(r.backfilled, 0u);
  EXPECT_EQ(index_->backfill(0), 0u);
  EXPECT_EQ(index_->copied_through(0), EncodeTarget(kSeq, 2));
  EXPECT_EQ(index_->written_through(0), EncodeTarget(kSeq, 2));
  EXPECT_EQ(PageInFile(2), 'a');
  JKV_ASSERT_OK_AND_ASSIGN(r, CheckpointLog(Files(), CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, 0u) << "copied again";
  EXPECT_EQ(r.backfilled, 2u);
  EXPECT_EQ(index_->backfill(0), 2u);
}

// W8: the target names the old generation's last frame and the backfill is cleared before the
// new generation is published; then its words start empty and its entries are gone.
TEST_F(CheckpointerTest, ARestartMovesTheIndexThroughWholeStatesInOrder) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  static shm::WalIndex* index;
  static bool midway_checked;
  index = index_.get();
  midway_checked = false;
  SetCheckpointHookForTesting([](const char* point) {
    if (std::string(point) != "restart:midway") return;
    shm::IndexHeader h;
    EXPECT_TRUE(index->ReadHeader(&h));
    EXPECT_EQ(h.logs[0].ckpt_seq, kSeq) << "published before the backfill was cleared";
    EXPECT_EQ(index->backfill(0), 0u);
    EXPECT_EQ(index->ckpt_target(0), EncodeTarget(kSeq, 2));
    midway_checked = true;
  });
  absl::StatusOr<CheckpointResult> r = CheckpointLog(Files(), CheckpointMode::kRestart);
  SetCheckpointHookForTesting(nullptr);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(midway_checked);
  EXPECT_TRUE(r->restarted);
  shm::IndexHeader h;
  ASSERT_TRUE(index_->ReadHeader(&h));
  EXPECT_EQ(h.logs[0].ckpt_seq, kSeq + 1);
  EXPECT_EQ(h.logs[0].mx_frame, 0u);
  EXPECT_NE(std::make_pair(h.logs[0].salt1, h.logs[0].salt2),
            std::make_pair(header_.logs[0].salt1, header_.logs[0].salt2));
  EXPECT_EQ(index_->backfill(0), 0u);
  for (uint64_t word : {index_->ckpt_target(0), index_->copied_through(0),
                        index_->written_through(0)}) {
    EXPECT_EQ(word, EncodeTarget(kSeq + 1, 0));
  }
  JKV_ASSERT_OK_AND_ASSIGN(uint32_t page, index_->PageOfFrame(0, 1));
  EXPECT_EQ(page, 0u) << "the old generation's entries are still there";
  EXPECT_EQ(PageInFile(2), 'a');
  EXPECT_EQ(PageInFile(3), 'b');
}

TEST_F(CheckpointerTest, ARestartWaitsForAReaderThenGivesUpBlocked) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  Pin(kSeq, 1);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kRestart));
  EXPECT_TRUE(r.blocked);
  EXPECT_FALSE(r.restarted);
  EXPECT_EQ(r.backfilled, 1u);
  shm::IndexHeader h;
  ASSERT_TRUE(index_->ReadHeader(&h));
  EXPECT_EQ(h.logs[0].ckpt_seq, kSeq);
  EXPECT_EQ(h.logs[0].mx_frame, 2u);
}

// C6: a backfill past the log's last frame is damage; everything is copied again.
TEST_F(CheckpointerTest, ABackfillPastTheLastFrameIsForgottenAndEverythingCopied) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  index_->set_backfill(0, 40);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(Files(), CheckpointMode::kRestart));
  EXPECT_EQ(r.copied, 2u);
  EXPECT_TRUE(r.restarted);
  EXPECT_EQ(PageInFile(2), 'a');
  EXPECT_EQ(PageInFile(3), 'b');
}

// W7: only the writer restarts the log. A RESTART whose caller does not hold WRITE (no
// CheckpointFiles::write) copies every frame and then refuses to restart: a writer could be
// appending past the header it would restart from.
TEST_F(CheckpointerTest, ARestartWithoutTheWriteLockCopiesButDoesNotRestart) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  CheckpointFiles f = Files();
  f.write = nullptr;
  EXPECT_THAT(CheckpointLog(f, CheckpointMode::kRestart),
              StatusIs(absl::StatusCode::kFailedPrecondition, "only as the writer"));
  EXPECT_EQ(PageInFile(2), 'a');
  EXPECT_EQ(PageInFile(3), 'b');
  shm::IndexHeader h;
  ASSERT_TRUE(index_->ReadHeader(&h));
  EXPECT_EQ(h.logs[0].ckpt_seq, kSeq) << "restarted without WRITE";
  EXPECT_EQ(h.logs[0].mx_frame, 2u);
}

// C6: an entry naming another page than its frame's own header is refused, and nothing is
// written where it points.
TEST_F(CheckpointerTest, AnIndexEntryNamingAnotherPageIsDataLoss) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  ASSERT_THAT(index_->Truncate(0, 1), IsOk());
  ASSERT_THAT(index_->Append(0, 2, 5), IsOk());
  EXPECT_THAT(CheckpointLog(Files(), CheckpointMode::kPassive),
              StatusIs(absl::StatusCode::kDataLoss, "holds page 3 where the wal-index says page 5"));
  EXPECT_EQ(PageInFile(5), '0');
  EXPECT_EQ(index_->backfill(0), 0u);
}

// C6: a frame whose image is not the one its header vouches for (after a failed sync the
// kernel may drop the frame, and the disk then shows an older image of the same page, whose
// page trailer still checks) is refused, and the older version never reaches the file.
TEST_F(CheckpointerTest, AnImageItsHeaderDoesNotVouchForIsDataLoss) {
  Commit({2}, 'a');
  Commit({2}, 'b');
  std::vector<uint8_t> older(kPageSize);
  ASSERT_THAT(log_->ReadPage(1, kPageSize, absl::MakeSpan(older)), IsOk());
  ASSERT_THAT(log_->file().Write(wal::FrameImageOffset(2, kPageSize), older), IsOk());
  EXPECT_THAT(CheckpointLog(Files(), CheckpointMode::kPassive),
              StatusIs(absl::StatusCode::kDataLoss, "holds an image other than the one"));
  EXPECT_EQ(PageInFile(2), '0') << "the older image was copied";
  EXPECT_EQ(index_->backfill(0), 0u);
}

// C1: the frames a copy takes are made durable (by the caller's make_log_durable: wal/
// wal_connection.h D2, through the header's last frame) before the first database write, and
// not at all when nothing is copied.
TEST_F(CheckpointerTest, C1MakesTheCopiedFramesDurableBeforeTheFirstDatabaseWrite) {
  Commit({2}, 'a');
  Commit({3}, 'b');
  Pin(kSeq, 1);
  std::vector<std::pair<int, uint32_t>> calls;
  std::vector<char> page2_at_call;
  CheckpointFiles f = Files();
  f.make_log_durable = [&](int log, const shm::LogState& state) -> absl::StatusOr<bool> {
    EXPECT_EQ(state.ckpt_seq, kSeq);
    calls.emplace_back(log, state.mx_frame);
    page2_at_call.push_back(PageInFile(2));
    return true;
  };
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, CheckpointLog(f, CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, 1u);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(0, uint32_t{2}));
  EXPECT_EQ(page2_at_call[0], '0') << "the database was written before the log was durable";
  EXPECT_EQ(r.syncs, 2u);  // C1 and C2
  JKV_ASSERT_OK_AND_ASSIGN(r, CheckpointLog(f, CheckpointMode::kPassive));  // the pin stays
  EXPECT_EQ(calls.size(), 1u) << "nothing to copy, yet the log was made durable";
  // A failure of C1 is the checkpoint's, before any database write.
  index_->set_pin(0, 0, 0);
  f.make_log_durable = [](int, const shm::LogState&) -> absl::StatusOr<bool> {
    return absl::InternalError("x.db-wal: fdatasync: Input/output error");
  };
  EXPECT_THAT(CheckpointLog(f, CheckpointMode::kPassive),
              StatusIs(absl::StatusCode::kInternal, "Input/output error"));
  EXPECT_EQ(PageInFile(3), '0');
}

}  // namespace
}  // namespace journalkv::wal
