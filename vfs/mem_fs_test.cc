// Tests of MemFileSystem: the shared conformance suite, what only the in-memory file system has
// (ListFiles, test directories, heap shared regions), and a differential test of its byte-range
// locks against the kernel's open-file-description locks.
#include "vfs/mem_fs.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_conformance.h"
#include "vfs/file_system_testing.h"
#include "vfs/posix_fs.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;

INSTANTIATE_TEST_SUITE_P(Mem, FileSystemConformanceTest,
                         ::testing::Values(FileSystemEnvFactory{"Mem", &MakeMemEnv}),
                         FileSystemEnvFactoryName);

constexpr OpenOptions kCreate{OpenMode::kCreate, FileKind::kOther};
constexpr OpenOptions kReadWrite{OpenMode::kReadWrite, FileKind::kOther};

TEST(MemFileSystemTest, ListFilesReturnsTheSortedPathsOfFilesOnly) {
  MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  JKV_ASSERT_OK(WriteStringToFile(fs, "/d/b", "x"));
  JKV_ASSERT_OK(WriteStringToFile(fs, "/d/a", "x"));
  JKV_ASSERT_OK(WriteStringToFile(fs, "/d/c", "x"));
  JKV_ASSERT_OK(fs.Delete("/d/c"));
  EXPECT_THAT(fs.ListFiles(), ElementsAre("/d/a", "/d/b"));
}

TEST(MemFileSystemTest, TestDirectoriesExistAndRefuseFileOperations) {
  MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs.Exists("/d"));
  EXPECT_TRUE(exists);
  EXPECT_THAT(fs.Delete("/d"), StatusIs(absl::StatusCode::kInvalidArgument, "/d: unlink"));
  EXPECT_THAT(fs.Open("/d", kCreate), StatusIs(absl::StatusCode::kInvalidArgument, "/d: open"));
  EXPECT_TRUE(fs.ListFiles().empty());
}

TEST(MemFileSystemTest, SyncDirectoryOfAnyPathIsACountedNoOp) {
  MemFileSystem fs;
  JKV_EXPECT_OK(fs.SyncDirectory("/anywhere"));
  EXPECT_EQ(fs.stats().Total().dir_syncs, 1u);
}

TEST(MemFileSystemTest, SharedRegionStartsWithTheFileBytesAndReadsSeeIt) {
  MemFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/shm", kCreate));
  JKV_ASSERT_OK(WriteString(*file, 100, "abc"));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * region, file->MapSharedRegion(0, 512));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(region) + 100, 3), "abc");
  EXPECT_EQ(region[0], 0);
  region[0] = 'z';
  JKV_ASSERT_OK(WriteString(*file, 100, "XYZ"));
  // A read sees the mapping (as read() of a shared mmap does); a write does not reach it.
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 1));
  EXPECT_EQ(s, "z");
  EXPECT_EQ(region[100], 'a');
  JKV_ASSERT_OK_AND_ASSIGN(s, ReadString(*file, 99, 3));
  EXPECT_EQ(s, std::string("\0ab", 3));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 512u);
}

TEST(MemFileSystemTest, SharedRegionOutlivesItsFilesUntilTheFileIsDeleted) {
  MemFileSystem fs;
  uint8_t* first = nullptr;
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/shm", kCreate));
    JKV_ASSERT_OK_AND_ASSIGN(first, file->MapSharedRegion(2, 4096));
    first[7] = 7;
  }
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/shm", kReadWrite));
    JKV_ASSERT_OK_AND_ASSIGN(uint8_t * again, file->MapSharedRegion(2, 4096));
    EXPECT_EQ(again, first);
    EXPECT_EQ(again[7], 7);
  }
  JKV_ASSERT_OK(fs.Delete("/shm"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/shm", kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * fresh, file->MapSharedRegion(2, 4096));
  EXPECT_EQ(fresh[7], 0);
}

TEST(MemFileSystemTest, FilesLargerThanFourGibibytesAreRefused) {
  MemFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/f", kCreate));
  EXPECT_THAT(WriteString(*file, uint64_t{1} << 32, "x"),
              StatusIs(absl::StatusCode::kInternal, "File too large"));
  EXPECT_THAT(file->Truncate((uint64_t{1} << 32) + 1),
              StatusIs(absl::StatusCode::kInternal, "File too large"));
}

TEST(MemFileSystemTest, SetMaxFileBytesLimitsFilesOpenedAfterIt) {
  MemFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto before, fs.Open("/a", kCreate));
  fs.SetMaxFileBytes(4096);
  JKV_ASSERT_OK_AND_ASSIGN(auto after, fs.Open("/b", kCreate));
  EXPECT_THAT(WriteString(*after, 4095, "x"), IsOk());
  EXPECT_THAT(WriteString(*after, 4096, "x"),
              StatusIs(absl::StatusCode::kInternal, "File too large"));
  EXPECT_THAT(after->Truncate(4097), StatusIs(absl::StatusCode::kInternal, "File too large"));
  EXPECT_THAT(WriteString(*before, 8192, "x"), IsOk());
}

// Drives the same random sequence of lock calls through three Files of one path on
// MemFileSystem and on PosixFileSystem, and expects the same answers: the kernel's
// open-file-description locks are the specification of RangeLockTable.
TEST(MemFileSystemTest, LocksAnswerLikeTheKernelsOpenFileDescriptionLocks) {
  constexpr int kOwners = 3;
  constexpr int kSteps = 3000;
  ScopedTempDir dir;
  PosixFileSystem posix;
  MemFileSystem mem;
  const std::string posix_path = dir.path() + "/lock";
  std::vector<std::unique_ptr<File>> posix_files;
  std::vector<std::unique_ptr<File>> mem_files;
  for (int i = 0; i < kOwners; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(auto p, posix.Open(posix_path, kCreate));
    JKV_ASSERT_OK_AND_ASSIGN(auto m, mem.Open("/lock", kCreate));
    posix_files.push_back(std::move(p));
    mem_files.push_back(std::move(m));
  }
  std::mt19937 rng(20240601);
  for (int step = 0; step < kSteps; ++step) {
    const int owner = rng() % kOwners;
    const uint64_t offset = rng() % 16;
    const uint64_t length = rng() % 8;  // 0 = to the end of every file
    const int action = rng() % 4;       // 0: unlock, 1: shared, 2-3: exclusive
    SCOPED_TRACE(::testing::Message() << "step " << step << " owner " << owner << " action "
                                      << action << " [" << offset << ", +" << length << ")");
    if (action == 0) {
      ASSERT_THAT(posix_files[owner]->Unlock(offset, length), IsOk());
      ASSERT_THAT(mem_files[owner]->Unlock(offset, length), IsOk());
      continue;
    }
    const LockMode mode = action == 1 ? LockMode::kShared : LockMode::kExclusive;
    JKV_ASSERT_OK_AND_ASSIGN(bool posix_can, posix_files[owner]->CanLock(offset, length, mode));
    JKV_ASSERT_OK_AND_ASSIGN(bool mem_can, mem_files[owner]->CanLock(offset, length, mode));
    ASSERT_EQ(mem_can, posix_can);
    JKV_ASSERT_OK_AND_ASSIGN(bool posix_locked, posix_files[owner]->TryLock(offset, length, mode));
    JKV_ASSERT_OK_AND_ASSIGN(bool mem_locked, mem_files[owner]->TryLock(offset, length, mode));
    ASSERT_EQ(mem_locked, posix_locked);
    ASSERT_EQ(posix_locked, posix_can);  // CanLock foretold what TryLock did
    if (step % 500 == 499) {  // now and then an owner closes and reopens, dropping its locks
      posix_files[owner].reset();
      mem_files[owner].reset();
      JKV_ASSERT_OK_AND_ASSIGN(posix_files[owner], posix.Open(posix_path, kReadWrite));
      JKV_ASSERT_OK_AND_ASSIGN(mem_files[owner], mem.Open("/lock", kReadWrite));
    }
  }
}

}  // namespace
}  // namespace journalkv::vfs
