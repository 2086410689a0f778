// The contract every AtomicBatch keeps (vfs.h), as one test body that the tests of each
// implementation run on their own file system: MemFileSystem (atomic_batch_test.cc),
// FaultInjectingFileSystem (fault_injecting_fs_batch_test.cc) and PosixFileSystem on a real
// XFS with exchange-range (xfs_exchange_test.cc). Test-only.
#ifndef JOURNALKV_VFS_ATOMIC_BATCH_TESTING_H_
#define JOURNALKV_VFS_ATOMIC_BATCH_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// `pages` pages of `page` bytes, page i filled with byte `fill + i`.
inline std::vector<uint8_t> BatchTestPages(uint64_t page, int pages, uint8_t fill) {
  std::vector<uint8_t> bytes(page * pages);
  for (int i = 0; i < pages; ++i) {
    std::fill(bytes.begin() + i * page, bytes.begin() + (i + 1) * page,
              static_cast<uint8_t>(fill + i));
  }
  return bytes;
}

inline std::vector<uint8_t> BatchTestReadAll(File& file) {
  absl::StatusOr<uint64_t> size = file.Size();
  EXPECT_THAT(size, ::journalkv::testing::IsOk());
  std::vector<uint8_t> bytes(size.value_or(0));
  EXPECT_THAT(file.Read(0, absl::MakeSpan(bytes)), ::journalkv::testing::IsOk());
  return bytes;
}

// Runs the contract on a file `dir`/batch_contract of `fs` with pages of `page` bytes (a
// multiple of the file's atomic_write_block_size()).
inline void RunAtomicBatchContract(FileSystem& fs, const std::string& dir, uint64_t page) {
  using ::journalkv::testing::IsOk;
  using ::journalkv::testing::StatusIs;
  const std::string path = dir + "/batch_contract";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<File> file,
                           fs.Open(path, OpenOptions{OpenMode::kCreate, FileKind::kDatabase}));
  ASSERT_NE(file->atomic_write_kind(), AtomicWriteKind::kNone);
  ASSERT_EQ(page % file->atomic_write_block_size(), 0u);
  const std::vector<uint8_t> old = BatchTestPages(page, 4, 0x10);
  JKV_ASSERT_OK(file->Write(0, old));
  const std::vector<uint8_t> fresh = BatchTestPages(page, 8, 0x80);
  auto page_of = [&](const std::vector<uint8_t>& bytes, int i) {
    return absl::MakeConstSpan(bytes).subspan(i * page, page);
  };
  const uint64_t commits_before = fs.stats().Snapshot(FileKind::kDatabase).atomic_commits;

  {
    SCOPED_TRACE("commit: all pages, nothing before");
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicBatch> batch, file->BeginAtomicBatch());
    EXPECT_THAT(file->BeginAtomicBatch(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
    JKV_ASSERT_OK(batch->Write(0, page_of(fresh, 0)));
    JKV_ASSERT_OK(batch->Write(2 * page, page_of(fresh, 2)));
    JKV_ASSERT_OK(batch->Write(3 * page, page_of(fresh, 1)));
    JKV_ASSERT_OK(batch->Write(3 * page, page_of(fresh, 3)));  // the later write wins
    EXPECT_EQ(BatchTestReadAll(*file), old) << "the batch reached the file before Commit";
    std::vector<uint8_t> expected = old;
    for (int i : {0, 2, 3}) {
      std::copy(page_of(fresh, i).begin(), page_of(fresh, i).end(), expected.begin() + i * page);
    }
    std::vector<uint8_t> back(4 * page);
    JKV_ASSERT_OK(batch->Read(0, absl::MakeSpan(back)));
    EXPECT_EQ(back, expected) << "Read of the batch";
    std::vector<uint8_t> past(page);
    EXPECT_THAT(batch->Read(4 * page, absl::MakeSpan(past)),
                StatusIs(absl::StatusCode::kOutOfRange, ""));
    JKV_ASSERT_OK(batch->Commit(BatchSync::kDurable));
    EXPECT_EQ(BatchTestReadAll(*file), expected) << "after Commit";
    EXPECT_THAT(batch->Write(0, page_of(fresh, 0)),
                StatusIs(absl::StatusCode::kFailedPrecondition, ""));
    EXPECT_THAT(batch->Commit(BatchSync::kDurable),
                StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  }
  const std::vector<uint8_t> committed = BatchTestReadAll(*file);
  {
    SCOPED_TRACE("abort, and a batch destroyed without commit");
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicBatch> batch, file->BeginAtomicBatch());
    JKV_ASSERT_OK(batch->Write(page, page_of(fresh, 5)));
    JKV_ASSERT_OK(batch->Abort());
    EXPECT_EQ(BatchTestReadAll(*file), committed);
    JKV_ASSERT_OK_AND_ASSIGN(batch, file->BeginAtomicBatch());
    JKV_ASSERT_OK(batch->Write(page, page_of(fresh, 6)));
    batch.reset();
    EXPECT_EQ(BatchTestReadAll(*file), committed);
  }
  {
    SCOPED_TRACE("a batch extending the file, past a gap");
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicBatch> batch, file->BeginAtomicBatch());
    JKV_ASSERT_OK(batch->Write(page, page_of(fresh, 4)));
    JKV_ASSERT_OK(batch->Write(6 * page, page_of(fresh, 7)));
    std::vector<uint8_t> expected = committed;
    expected.resize(7 * page);
    std::copy(page_of(fresh, 4).begin(), page_of(fresh, 4).end(), expected.begin() + page);
    std::copy(page_of(fresh, 7).begin(), page_of(fresh, 7).end(), expected.begin() + 6 * page);
    std::vector<uint8_t> back(7 * page);
    JKV_ASSERT_OK(batch->Read(0, absl::MakeSpan(back)));
    EXPECT_EQ(back, expected) << "Read of the batch (pages 4 and 5 are zeros)";
    EXPECT_EQ(BatchTestReadAll(*file), committed);
    JKV_ASSERT_OK(batch->Commit(BatchSync::kAtomicOnly));
    EXPECT_EQ(BatchTestReadAll(*file), expected) << "after Commit";
  }
  EXPECT_EQ(fs.stats().Snapshot(FileKind::kDatabase).atomic_commits, commits_before + 2);
}

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_ATOMIC_BATCH_TESTING_H_
