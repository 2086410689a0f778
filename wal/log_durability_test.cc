// The durability role on its own, over a -shm and logs in memory (vfs::MemFileSystem): the sync
// floor (D1), synced_through (D2: a log synced once is not synced again for the same frames),
// and a failed sync (W13: recorded, the commits it may have lost dropped for every waiter, the
// chain broken past the published frames, and the reset of the next writer).
#include "wal/log_durability.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "wal/checkpoint_copy.h"
#include "wal/group_flush.h"
#include "wal/lock_byte.h"
#include "wal/wal_testing.h"
#include "wal/writer.h"

namespace journalkv::wal {
namespace {

using ::journalkv::wal::testing::AppendCommit;
using ::journalkv::wal::testing::IndexFrames;

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr uint32_t kPageSize = 1024;
constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};

class LogDurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(logs_[0], WalLog::Open(&fs_, log_paths_[0], false));
    JKV_ASSERT_OK_AND_ASSIGN(shm_file_, fs_.Open(shm_path_, kShmOpen));
    JKV_ASSERT_OK_AND_ASSIGN(index_, shm::WalIndex::OpenShared(shm_file_.get(), true));
    options_.sync = SyncLevel::kFull;
    options_.busy_timeout = absl::Seconds(1);
    header_.page_size = kPageSize;
    header_.logs[0] = {8, 0x1008u, 0x2008u, 0, 0};
    JKV_ASSERT_OK_AND_ASSIGN(header_.logs[0].last_checksum,
                             logs_[0]->WriteHeader(LogHeaderFor(header_, 0)));
  }

  // One commit of `pages` appended to log 0 and indexed: header_ follows.
  void Append(std::vector<uint32_t> pages) {
    ASSERT_THAT(AppendCommit(*logs_[0], header_, 0, pages, /*fill=*/-1,
                             10 + header_.logs[0].mx_frame),
                IsOk());
    ASSERT_THAT(IndexFrames(*index_, header_, 0, pages), IsOk());
    ++header_.change;
  }

  LogDurability Make() {
    return LogDurability({.fs = &fs_,
                          .index = &index_,
                          .logs = &logs_,
                          .wal2 = false,
                          .page_size = kPageSize,
                          .options = &options_,
                          .log_paths = &log_paths_,
                          .shm_path = &shm_path_,
                          .writer = &writer_});
  }

  uint32_t LogFrames() {
    absl::StatusOr<ScanResult> scan = logs_[0]->Scan(kPageSize, shm::MaxLogFrames());
    EXPECT_THAT(scan.status(), IsOk());
    return scan.ok() ? scan->mx_frame : 0;
  }

  vfs::MemFileSystem fs_;
  const std::array<std::string, 2> log_paths_{"/x.db-wal", "/x.db-wal2"};
  const std::string shm_path_ = "/x.db-shm";
  WalOptions options_;
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
  std::array<std::unique_ptr<WalLog>, 2> logs_;
  Writer writer_{Writer::Env{.index = &index_, .logs = &logs_}};
  shm::IndexHeader header_;
  GroupFlush flush_;
  LockByte write_;
};

// D1: the level of the maintenance syncs is this connection's or the floor, the stronger.
TEST_F(LogDurabilityTest, MaintenanceSyncsAtTheFloorWhenItIsStronger) {
  LogDurability d = Make();
  options_.sync = SyncLevel::kNormal;
  ASSERT_THAT(d.JoinSyncFloor(/*dir_synced=*/true), IsOk());
  EXPECT_EQ(d.MaintenanceSync(), SyncLevel::kNormal);
  index_->RaiseSyncFloor(static_cast<uint32_t>(SyncLevel::kFull));  // a FULL connection joins
  EXPECT_EQ(d.MaintenanceSync(), SyncLevel::kFull);
  EXPECT_EQ(index_->sync_floor(), static_cast<uint32_t>(SyncLevel::kFull));
}

// D2: a log synced through a header's frames is not synced again for them, and synced_through
// names them; frames appended later are synced again.
TEST_F(LogDurabilityTest, ALogSyncedThroughItsFramesIsNotSyncedAgain) {
  LogDurability d = Make();
  Append({2, 3});
  absl::Status e;
  if (!flush_.TryLock(*index_, &e)) FAIL() << e;
  // EXPECTs only while FLUSH is held: an ASSERT's early return would leave it held.
  EXPECT_THAT(d.MakeLogDurable(flush_, 0, header_.logs[0], "test"), IsOkAndHolds(true));
  EXPECT_EQ(index_->synced_through(0), shm::EncodeSynced(8, 2, false));
  EXPECT_THAT(d.MakeLogDurable(flush_, 0, header_.logs[0], "test"), IsOkAndHolds(false));
  Append({4});
  EXPECT_THAT(d.MakeLogDurable(flush_, 0, header_.logs[0], "test"), IsOkAndHolds(true));
  flush_.Unlock(*index_);
  // Durable already: no FLUSH taken.
  EXPECT_THAT(d.MakeLogDurableLocking(flush_, 0, header_.logs[0], "test",
                                      absl::Now() + absl::Seconds(1)),
              IsOkAndHolds(false));
}

// W13: a failed sync fails every commit the published header does not cover, and only those;
// the chain is broken past the published frames (e); the next writer resets (c).
TEST_F(LogDurabilityTest, AFailedSyncDropsTheUnpublishedCommitsAndTheWriterResets) {
  LogDurability d = Make();
  Append({2});
  index_->WriteHeader(header_);  // published (and appended)
  const shm::IndexHeader published = header_;
  Append({3, 4});
  index_->WriteAppendedHeader(header_);  // appended, pending its flush
  const shm::IndexHeader pending = header_;
  const uint32_t epoch = index_->append_epoch();
  EXPECT_THAT(d.CommitDropped(pending, epoch), IsOk());
  {
    absl::Status e;
    if (!flush_.TryLock(*index_, &e)) FAIL() << e;
    d.RecordSyncFailure(flush_, 0, pending.logs[0]);  // as MakeLogDurable does on a failure
    flush_.Unlock(*index_);
  }
  EXPECT_TRUE(shm::SyncFailed(index_->synced_through(0)));
  EXPECT_THAT(d.CommitDropped(pending, epoch), StatusIs(absl::StatusCode::kDataLoss, "dropped"));
  EXPECT_THAT(d.CommitDropped(published, epoch), IsOk());
  EXPECT_EQ(LogFrames(), 1u);  // e: a rebuild does not find the dropped commit either
  // c: the next writer resets the appended header and moves to the next epoch.
  write_.AssumeHeld();
  ASSERT_THAT(d.ResetAfterFailure(write_, flush_, absl::Now() + absl::Seconds(1)), IsOk());
  shm::IndexHeader appended;
  ASSERT_TRUE(index_->ReadAppendedHeader(&appended));
  EXPECT_EQ(appended.logs[0], published.logs[0]);
  EXPECT_EQ(index_->append_epoch(), epoch + 1);
  EXPECT_EQ(*index_->Lookup(0, 3, 3), 0u);  // W2: the dropped entries are gone
  // A waiter of the old epoch still learns its commit was dropped.
  EXPECT_THAT(d.CommitDropped(pending, epoch), StatusIs(absl::StatusCode::kDataLoss, "dropped"));
  EXPECT_THAT(d.CommitDropped(pending, epoch + 1), IsOk());
}

}  // namespace
}  // namespace journalkv::wal
