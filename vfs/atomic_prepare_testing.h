// The contract of prepared atomic batches (vfs.h: AtomicBatch::Prepare, File::PreparedBatch,
// CommitPreparedBatch, DiscardPreparedBatch) as test bodies every mechanism runs: the emulated
// batch (atomic_prepare_test.cc, on MemFileSystem and FaultInjectingFileSystem) and the XFS
// one on a scratch XFS (xfs_prepare_test.cc). `page` is the file's batch block size.
#ifndef JOURNALKV_VFS_ATOMIC_PREPARE_TESTING_H_
#define JOURNALKV_VFS_ATOMIC_PREPARE_TESTING_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_batch_testing.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

inline constexpr OpenOptions kPrepareDbOpen{OpenMode::kCreate, FileKind::kDatabase};

// The file `path` holding `pages` pages of 0x10.., and a batch over it that writes page 1 and
// page pages+1 (growing the file) with 0x70.., prepared with `note`; the batch is then
// destroyed without a commit (as its process dying would leave it). Returns the bytes the
// file holds once the batch is applied.
inline std::vector<uint8_t> LeavePreparedBatch(FileSystem& fs, const std::string& path,
                                               uint64_t page, int pages,
                                               const std::string& note) {
  std::vector<uint8_t> old = BatchTestPages(page, pages, 0x10);
  std::vector<uint8_t> want = old;
  std::vector<uint8_t> fresh = BatchTestPages(page, 2, 0x70);
  want.resize(page * (pages + 2), 0);
  std::copy(fresh.begin(), fresh.begin() + page, want.begin() + page);
  std::copy(fresh.begin() + page, fresh.end(), want.begin() + page * (pages + 1));
  auto file = fs.Open(path, kPrepareDbOpen);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return want;
  EXPECT_TRUE((*file)->Write(0, old).ok());
  EXPECT_TRUE((*file)->Sync(SyncKind::kData).ok());
  auto batch = (*file)->BeginAtomicBatch();
  EXPECT_TRUE(batch.ok()) << batch.status();
  if (!batch.ok()) return want;
  EXPECT_TRUE((*batch)->Write(page, absl::MakeConstSpan(fresh).first(page)).ok());
  EXPECT_TRUE((*batch)->Write(page * (pages + 1), absl::MakeConstSpan(fresh).subspan(page)).ok());
  absl::Status prepared = (*batch)->Prepare(note);
  EXPECT_TRUE(prepared.ok()) << prepared;
  // Once prepared, the batch takes no more writes.
  EXPECT_EQ((*batch)->Write(0, absl::MakeConstSpan(fresh).first(page)).code(),
            absl::StatusCode::kFailedPrecondition);
  return want;
}

// A prepared batch left by a dead batch: another File finds its note, no batch may begin over
// it, the file is untouched; committing it applies it whole and clears it.
inline void RunPreparedCommitContract(FileSystem& fs, const std::string& dir, uint64_t page) {
  const std::string path = dir + "/prepared_commit";
  const std::vector<uint8_t> want = LeavePreparedBatch(fs, path, page, 3, "note one");
  auto file = fs.Open(path, OpenOptions{OpenMode::kReadWrite, FileKind::kDatabase});
  ASSERT_TRUE(file.ok()) << file.status();
  auto note = (*file)->PreparedBatch();
  ASSERT_TRUE(note.ok()) << note.status();
  ASSERT_TRUE(note->has_value());
  EXPECT_EQ(**note, "note one");
  EXPECT_EQ(BatchTestReadAll(**file), BatchTestPages(page, 3, 0x10)) << "not applied yet";
  auto refused = (*file)->BeginAtomicBatch();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("a prepared batch is left in"));
  ASSERT_TRUE((*file)->CommitPreparedBatch(BatchSync::kDurable).ok());
  EXPECT_EQ(BatchTestReadAll(**file), want);
  note = (*file)->PreparedBatch();
  ASSERT_TRUE(note.ok());
  EXPECT_FALSE(note->has_value()) << "cleared by its commit";
  EXPECT_EQ((*file)->CommitPreparedBatch(BatchSync::kDurable).code(),
            absl::StatusCode::kFailedPrecondition);
  auto batch = (*file)->BeginAtomicBatch();
  EXPECT_TRUE(batch.ok()) << batch.status();
}

// Discarding leaves the file as it was; a live prepared batch's Commit clears it, its Abort
// drops it.
inline void RunPreparedDiscardContract(FileSystem& fs, const std::string& dir, uint64_t page) {
  const std::string path = dir + "/prepared_discard";
  LeavePreparedBatch(fs, path, page, 2, "note two");
  auto file = fs.Open(path, OpenOptions{OpenMode::kReadWrite, FileKind::kDatabase});
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->DiscardPreparedBatch().ok());
  auto note = (*file)->PreparedBatch();
  ASSERT_TRUE(note.ok());
  EXPECT_FALSE(note->has_value());
  EXPECT_EQ(BatchTestReadAll(**file), BatchTestPages(page, 2, 0x10));

  const std::vector<uint8_t> fresh = BatchTestPages(page, 1, 0x55);
  {
    auto batch = (*file)->BeginAtomicBatch();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE((*batch)->Write(0, fresh).ok());
    ASSERT_TRUE((*batch)->Prepare("live").ok());
    note = (*file)->PreparedBatch();
    ASSERT_TRUE(note.ok());
    EXPECT_EQ(note->value_or(""), "live");
    ASSERT_TRUE((*batch)->Abort().ok());
    note = (*file)->PreparedBatch();
    ASSERT_TRUE(note.ok());
    EXPECT_FALSE(note->has_value()) << "an aborted prepared batch is dropped";
    EXPECT_EQ(BatchTestReadAll(**file), BatchTestPages(page, 2, 0x10));
  }
  {
    auto batch = (*file)->BeginAtomicBatch();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE((*batch)->Write(0, fresh).ok());
    ASSERT_TRUE((*batch)->Prepare("live").ok());
    std::vector<uint8_t> read(page);
    ASSERT_TRUE((*batch)->Read(0, absl::MakeSpan(read)).ok());
    EXPECT_EQ(read, fresh) << "a prepared batch still reads as it would leave the file";
    ASSERT_TRUE((*batch)->Commit(BatchSync::kDurable).ok());
    note = (*file)->PreparedBatch();
    ASSERT_TRUE(note.ok());
    EXPECT_FALSE(note->has_value()) << "a committed prepared batch is cleared";
    std::vector<uint8_t> want = BatchTestPages(page, 2, 0x10);
    std::copy(fresh.begin(), fresh.end(), want.begin());
    EXPECT_EQ(BatchTestReadAll(**file), want);
  }
}

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_ATOMIC_PREPARE_TESTING_H_
