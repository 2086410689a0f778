// The private index on its own, over logs and a -shm in memory (vfs::MemFileSystem): it shows
// the frames the -shm publishes and none past them (U1), or without a -shm the logs' valid
// prefixes; it holds the private reader byte for its life; a full disk gives the -shm up and
// names itself as the reason (U2).
#include "wal/private_index.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/endian.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "wal/checkpoint_copy.h"
#include "wal/index_recovery.h"
#include "wal/writer.h"
#include "wal/wal_testing.h"

namespace journalkv::wal {
namespace {

using ::journalkv::wal::testing::AppendCommit;

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

constexpr uint32_t kPageSize = 1024;
constexpr uint64_t kPrivateByte = 1000;
constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr vfs::OpenOptions kDbOpen{vfs::OpenMode::kCreate, vfs::FileKind::kDatabase};

class PrivateIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(db_, fs_.Open(db_path_, kDbOpen));
    JKV_ASSERT_OK_AND_ASSIGN(writer_log_, WalLog::Open(&fs_, log_paths_[0], false));
    options_.private_reader_byte = kPrivateByte;
    options_.busy_timeout = absl::Seconds(1);
  }

  // Log 0 restarted as generation `seq`, then one commit per entry of `commits` (its pages,
  // the database's size after it): header_.logs[0] follows.
  void WriteLog(uint32_t seq, std::vector<std::vector<uint32_t>> commits) {
    header_.page_size = kPageSize;
    header_.logs[0] = {seq, 0x1000u + seq, 0x2000u + seq, 0, 0};
    JKV_ASSERT_OK_AND_ASSIGN(header_.logs[0].last_checksum,
                             writer_log_->WriteHeader(LogHeaderFor(header_, 0)));
    AppendCommits(commits);
  }
  void AppendCommits(std::vector<std::vector<uint32_t>> commits) {
    for (const std::vector<uint32_t>& pages : commits) {
      ASSERT_THAT(AppendCommit(*writer_log_, header_, 0, pages, /*fill=*/-1,
                               10 + header_.logs[0].mx_frame),
                  IsOk());
    }
  }

  // Another connection's -shm publishing `h` (as a writer's publish does).
  void Publish(shm::IndexHeader h) {
    if (shared_ == nullptr) {
      JKV_ASSERT_OK_AND_ASSIGN(shared_file_, fs_.Open(shm_path_, kShmOpen));
      JKV_ASSERT_OK_AND_ASSIGN(shared_, shm::WalIndex::OpenShared(shared_file_.get(), true));
    }
    h.change = ++change_;
    shared_->WriteHeader(h);
  }

  std::unique_ptr<PrivateIndex> Make() {
    return std::make_unique<PrivateIndex>(PrivateIndex::Env{
        .fs = &fs_,
        .db_file = db_.get(),
        .db_path = &db_path_,
        .shm_path = &shm_path_,
        .log_paths = &log_paths_,
        .nlogs = 1,
        .page_size = kPageSize,
        .options = &options_,
        .index = &index_,
        .logs = &logs_,
        .shm_file = &shm_file_,
        .recovery = &recovery_,
    });
  }

  uint32_t IndexedFrames() {
    shm::IndexHeader h;
    EXPECT_TRUE(index_->ReadHeader(&h));
    return h.logs[0].mx_frame;
  }

  vfs::MemFileSystem fs_;
  const std::string db_path_ = "/x.db";
  const std::string shm_path_ = "/x.db-shm";
  const std::array<std::string, 2> log_paths_{"/x.db-wal", "/x.db-wal2"};
  std::unique_ptr<vfs::File> db_;
  std::unique_ptr<WalLog> writer_log_;
  WalOptions options_;
  shm::IndexHeader header_;
  uint32_t change_ = 0;
  std::unique_ptr<vfs::File> shared_file_;
  std::unique_ptr<shm::WalIndex> shared_;
  // The connection's.
  std::unique_ptr<shm::WalIndex> index_;
  std::array<std::unique_ptr<WalLog>, 2> logs_;
  std::unique_ptr<vfs::File> shm_file_;
  Writer writer_{Writer::Env{.index = &index_, .logs = &logs_}};
  IndexRecovery recovery_{IndexRecovery::Env{.index = &index_,
                                             .logs = &logs_,
                                             .wal2 = false,
                                             .page_size = kPageSize,
                                             .shm_path = &shm_path_,
                                             .writer = &writer_}};
  base::Mutex pin_mu_;
};

// U1: frames past the published header (a commit appended but not yet durable, which a failed
// sync may drop and overwrite) are never indexed; once published they are.
TEST_F(PrivateIndexTest, IndexesOnlyTheFramesTheShmPublishes) {
  WriteLog(8, {{2, 3}});
  Publish(header_);
  AppendCommits({{4}});  // frame 3, appended, not published
  std::unique_ptr<PrivateIndex> p = Make();
  ASSERT_THAT(p->Join(absl::PermissionDeniedError("read-only"), pin_mu_), IsOk());
  EXPECT_TRUE(p->active());
  EXPECT_TRUE(p->reason().empty());
  EXPECT_EQ(IndexedFrames(), 2u);
  EXPECT_EQ(*index_->Lookup(0, 3, 3), 2u);
  EXPECT_EQ(*index_->Lookup(0, 4, 3), 0u);  // frame 3 is not the private index's
  // The writer publishes it: the next look indexes it.
  Publish(header_);
  {
    base::MutexLock lock(&pin_mu_);
    ASSERT_THAT(p->Refresh(pin_mu_), IsOk());
    p->CheckInvariants(pin_mu_);
  }
  EXPECT_EQ(IndexedFrames(), 3u);
  EXPECT_EQ(*index_->Lookup(0, 4, 3), 3u);
  EXPECT_EQ(p->change(), change_);
  // U2: nothing was written to the shared -shm.
  shm::IndexHeader shared;
  ASSERT_TRUE(shared_->ReadHeader(&shared));
  EXPECT_EQ(shared.change, change_);
}

// Without a -shm no other connection is open: the logs' valid prefixes are the state.
TEST_F(PrivateIndexTest, WithoutAShmIndexesTheLogsValidPrefixes) {
  WriteLog(8, {{2, 3}, {4}});
  std::unique_ptr<PrivateIndex> p = Make();
  ASSERT_THAT(p->Join(absl::NotFoundError("no -shm"), pin_mu_), IsOk());
  EXPECT_EQ(IndexedFrames(), 3u);
  EXPECT_EQ(*index_->Lookup(0, 4, 3), 3u);
}

// The private reader byte is held from Join to the end, so that no checkpoint or restart
// changes the files under the private index (a checkpoint tests it: NoPrivateReaders).
TEST_F(PrivateIndexTest, HoldsThePrivateReaderByteForItsLife) {
  WriteLog(8, {{2}});
  Publish(header_);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> other, fs_.Open(db_path_, kDbOpen));
  std::unique_ptr<PrivateIndex> p = Make();
  ASSERT_THAT(p->Join(absl::PermissionDeniedError("read-only"), pin_mu_), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(bool free, other->CanLock(kPrivateByte, 1, vfs::LockMode::kExclusive));
  EXPECT_FALSE(free);
  p.reset();
  JKV_ASSERT_OK_AND_ASSIGN(free, other->CanLock(kPrivateByte, 1, vfs::LockMode::kExclusive));
  EXPECT_TRUE(free);
}

// A log restarted under the private reader is not one of ours (restarts wait for the byte):
// DataLoss, not a silently different snapshot.
TEST_F(PrivateIndexTest, ALogRestartedUnderItIsDataLoss) {
  WriteLog(8, {{2}});
  Publish(header_);
  std::unique_ptr<PrivateIndex> p = Make();
  ASSERT_THAT(p->Join(absl::PermissionDeniedError("read-only"), pin_mu_), IsOk());
  WriteLog(9, {{3}});
  Publish(header_);
  base::MutexLock lock(&pin_mu_);
  EXPECT_THAT(p->Refresh(pin_mu_), StatusIs(absl::StatusCode::kDataLoss, "restarted under a read-only reader"));
}

// U2: a read-write connection whose -shm the disk cannot hold gives the -shm up, reads through
// the private index, and names the full disk as the reason it refuses writes.
TEST_F(PrivateIndexTest, AFullDiskGivesTheShmUpAndNamesItself) {
  WriteLog(8, {{2}});
  Publish(header_);
  JKV_ASSERT_OK_AND_ASSIGN(shm_file_, fs_.Open(shm_path_, kShmOpen));
  const absl::Status full = absl::ResourceExhaustedError("no space left on device");
  EXPECT_TRUE(PrivateIndex::DiskFull(full));
  EXPECT_FALSE(PrivateIndex::DiskFull(absl::UnavailableError("busy")));
  std::unique_ptr<PrivateIndex> p = Make();
  ASSERT_THAT(p->JoinFullDisk(full, pin_mu_), IsOk());
  EXPECT_TRUE(p->active());
  EXPECT_EQ(shm_file_, nullptr);
  EXPECT_NE(p->reason().find("the disk is full"), std::string::npos);
  EXPECT_EQ(IndexedFrames(), 1u);
}

}  // namespace
}  // namespace journalkv::wal
