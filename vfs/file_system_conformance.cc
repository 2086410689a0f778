// file_system_conformance.cc: the tests of the FileSystem conformance suite (see
// file_system_conformance.h). Linked with alwayslink so every instantiating binary gets them.
#include "vfs/file_system_conformance.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr OpenOptions kCreate{OpenMode::kCreate, FileKind::kOther};
constexpr OpenOptions kCreateExclusive{OpenMode::kCreateExclusive, FileKind::kOther};
constexpr OpenOptions kReadWrite{OpenMode::kReadWrite, FileKind::kOther};
constexpr OpenOptions kReadOnly{OpenMode::kReadOnly, FileKind::kOther};

// n bytes of a reproducible pseudo-random pattern.
std::string Pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// ---- Content ----

TEST_P(FileSystemConformanceTest, NewFileExistsAndIsEmpty) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  EXPECT_EQ(file->path(), Path("a"));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 0u);
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs().Exists(Path("a")));
  EXPECT_TRUE(exists);
  JKV_ASSERT_OK_AND_ASSIGN(exists, fs().Exists(Path("b")));
  EXPECT_FALSE(exists);
}

TEST_P(FileSystemConformanceTest, ReadReturnsWhatWasWritten) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 0, "hello world"));
  JKV_ASSERT_OK(WriteString(*file, 6, "WORLD"));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 11));
  EXPECT_EQ(s, "hello WORLD");
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 11u);
}

TEST_P(FileSystemConformanceTest, ReadPastTheEndIsOutOfRangeNamingPathOffsetAndBytesAvailable) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 0, std::string(100, 'x')));
  EXPECT_THAT(ReadString(*file, 90, 20),
              StatusIs(absl::StatusCode::kOutOfRange,
                       absl::StrCat(Path("a"),
                                    ": read of 20 bytes at offset 90: only 10 bytes "
                                    "available")));
  EXPECT_THAT(ReadString(*file, 500, 1),
              StatusIs(absl::StatusCode::kOutOfRange, "only 0 bytes available"));
  EXPECT_THAT(ReadString(*file, 100, 0), IsOk());
}

TEST_P(FileSystemConformanceTest, WriteBeyondTheEndFillsTheGapWithZeros) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 10, "x"));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 11));
  EXPECT_EQ(s, std::string(10, '\0') + "x");
}

TEST_P(FileSystemConformanceTest, EmptyWriteDoesNotExtendTheFile) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 4096, ""));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 0u);
}

TEST_P(FileSystemConformanceTest, TruncateShrinksAndGrowsWithZeros) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 0, "abcdef"));
  JKV_ASSERT_OK(file->Truncate(3));
  JKV_ASSERT_OK(file->Truncate(5));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 5));
  EXPECT_EQ(s, std::string("abc\0\0", 5));
  JKV_ASSERT_OK(file->Truncate(0));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 0u);
}

TEST_P(FileSystemConformanceTest, LargeTransfersRoundTrip) {
  const std::string data = Pattern(6 << 20, 7);
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("big"), kCreate));
  JKV_ASSERT_OK(WriteString(*file, 4095, data));  // deliberately unaligned
  JKV_ASSERT_OK_AND_ASSIGN(std::string back, ReadString(*file, 4095, data.size()));
  EXPECT_TRUE(back == data);
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 4095u + data.size());
}

// ---- Open modes and names ----

TEST_P(FileSystemConformanceTest, OpeningAMissingFileWithoutCreateIsNotFound) {
  EXPECT_THAT(fs().Open(Path("missing"), kReadWrite),
              StatusIs(absl::StatusCode::kNotFound, "No such file or directory"));
  EXPECT_THAT(fs().Open(Path("missing"), kReadOnly),
              StatusIs(absl::StatusCode::kNotFound, Path("missing")));
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs().Exists(Path("missing")));
  EXPECT_FALSE(exists);
}

TEST_P(FileSystemConformanceTest, CreateOpensAnExistingFileWithoutTruncatingIt) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "keep"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 4));
  EXPECT_EQ(s, "keep");
}

TEST_P(FileSystemConformanceTest, CreateExclusiveFailsWhenTheFileExists) {
  JKV_ASSERT_OK(fs().Open(Path("a"), kCreateExclusive).status());
  EXPECT_THAT(fs().Open(Path("a"), kCreateExclusive),
              StatusIs(absl::StatusCode::kAlreadyExists, "File exists"));
}

TEST_P(FileSystemConformanceTest, DeleteRemovesTheName) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "x"));
  JKV_ASSERT_OK(fs().Delete(Path("a")));
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs().Exists(Path("a")));
  EXPECT_FALSE(exists);
  EXPECT_THAT(fs().Delete(Path("a")),
              StatusIs(absl::StatusCode::kNotFound, absl::StrCat(Path("a"), ": unlink")));
}

TEST_P(FileSystemConformanceTest, RenameMovesTheFileAndReplacesTheTarget) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "from a"));
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("b"), "old b"));
  JKV_ASSERT_OK_AND_ASSIGN(auto open_a, fs().Open(Path("a"), kReadWrite));
  JKV_ASSERT_OK(fs().Rename(Path("a"), Path("b")));
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs().Exists(Path("a")));
  EXPECT_FALSE(exists);
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("b"), kReadOnly));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*b, 0, 6));
  EXPECT_EQ(s, "from a");
  // A file open under the old name is the renamed file.
  JKV_ASSERT_OK(WriteString(*open_a, 0, "FROM"));
  JKV_ASSERT_OK_AND_ASSIGN(s, ReadString(*b, 0, 6));
  EXPECT_EQ(s, "FROM a");
  EXPECT_THAT(fs().Rename(Path("a"), Path("c")), StatusIs(absl::StatusCode::kNotFound,
                                                          absl::StrCat(Path("a"), ": rename to")));
}

// Only to a free name: an existing target is refused whole, naming it, and both files stay.
TEST_P(FileSystemConformanceTest, RenameNoReplaceMovesTheFileToAFreeNameOnly) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "from a"));
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("b"), "old b"));
  JKV_ASSERT_OK_AND_ASSIGN(auto open_a, fs().Open(Path("a"), kReadWrite));
  EXPECT_THAT(fs().RenameNoReplace(Path("a"), Path("b")),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       absl::StrCat(Path("a"), ": rename to ", Path("b"))));
  EXPECT_THAT(ReadFileToString(fs(), Path("a")), IsOkAndHolds("from a"));
  EXPECT_THAT(ReadFileToString(fs(), Path("b")), IsOkAndHolds("old b"));

  JKV_ASSERT_OK(fs().RenameNoReplace(Path("a"), Path("c")));
  JKV_ASSERT_OK_AND_ASSIGN(bool exists, fs().Exists(Path("a")));
  EXPECT_FALSE(exists);
  EXPECT_THAT(ReadFileToString(fs(), Path("c")), IsOkAndHolds("from a"));
  EXPECT_THAT(ReadFileToString(fs(), Path("b")), IsOkAndHolds("old b"));
  // A file open under the old name is the renamed file.
  JKV_ASSERT_OK(WriteString(*open_a, 0, "FROM"));
  EXPECT_THAT(ReadFileToString(fs(), Path("c")), IsOkAndHolds("FROM a"));
  EXPECT_THAT(fs().RenameNoReplace(Path("a"), Path("d")),
              StatusIs(absl::StatusCode::kNotFound, absl::StrCat(Path("a"), ": rename to")));
  JKV_ASSERT_OK_AND_ASSIGN(exists, fs().Exists(Path("d")));
  EXPECT_FALSE(exists);
}

TEST_P(FileSystemConformanceTest, DeletedFileStaysUsableThroughAnOpenFile) {
  JKV_ASSERT_OK_AND_ASSIGN(auto old_file, fs().Open(Path("a"), kCreate));
  JKV_ASSERT_OK(WriteString(*old_file, 0, "old"));
  JKV_ASSERT_OK(fs().Delete(Path("a")));
  JKV_ASSERT_OK(WriteString(*old_file, 3, "er"));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*old_file, 0, 5));
  EXPECT_EQ(s, "older");
  // A new file of the same name starts empty and is independent of the old one.
  JKV_ASSERT_OK_AND_ASSIGN(auto new_file, fs().Open(Path("a"), kCreateExclusive));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, new_file->Size());
  EXPECT_EQ(size, 0u);
}

TEST_P(FileSystemConformanceTest, TwoFilesOfOnePathShareTheContent) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("f"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("f"), kReadWrite));
  JKV_ASSERT_OK(WriteString(*a, 0, "from a"));
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*b, 0, 6));
  EXPECT_EQ(s, "from a");
}

TEST_P(FileSystemConformanceTest, ReadOnlyFileRefusesWritesTruncatesAndExclusiveLocks) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "data"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadOnly));
  EXPECT_THAT(WriteString(*file, 0, "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "opened read-only"));
  EXPECT_THAT(file->Truncate(0),
              StatusIs(absl::StatusCode::kFailedPrecondition, "opened read-only"));
  EXPECT_THAT(file->TryLock(0, 1, LockMode::kExclusive),
              StatusIs(absl::StatusCode::kFailedPrecondition, "opened read-only"));
  JKV_ASSERT_OK_AND_ASSIGN(bool locked, file->TryLock(0, 1, LockMode::kShared));
  EXPECT_TRUE(locked);
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, ReadString(*file, 0, 4));
  EXPECT_EQ(s, "data");
  JKV_EXPECT_OK(file->Sync(SyncKind::kAll));
}

// ---- Directories ----

TEST_P(FileSystemConformanceTest, IsDirectoryIsTrueOnlyForDirectories) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "x"));
  JKV_ASSERT_OK_AND_ASSIGN(bool is_dir, fs().IsDirectory(env_->dir()));
  EXPECT_TRUE(is_dir);
  JKV_ASSERT_OK_AND_ASSIGN(is_dir, fs().IsDirectory(Path("a")));
  EXPECT_FALSE(is_dir);
  JKV_ASSERT_OK_AND_ASSIGN(is_dir, fs().IsDirectory(Path("missing")));
  EXPECT_FALSE(is_dir);
}

TEST_P(FileSystemConformanceTest, OpeningADirectoryIsInvalidArgumentInEveryMode) {
  for (OpenOptions options : {kReadOnly, kReadWrite, kCreate}) {
    EXPECT_THAT(fs().Open(env_->dir(), options),
                StatusIs(absl::StatusCode::kInvalidArgument, "is a directory"));
  }
}

TEST_P(FileSystemConformanceTest, DeletingADirectoryIsInvalidArgument) {
  EXPECT_THAT(fs().Delete(env_->dir()),
              StatusIs(absl::StatusCode::kInvalidArgument, "is a directory"));
}

TEST_P(FileSystemConformanceTest, SyncDirectorySucceedsAndIsCounted) {
  JKV_ASSERT_OK(WriteStringToFile(fs(), Path("a"), "x"));
  JKV_EXPECT_OK(fs().SyncDirectory(env_->dir()));
  EXPECT_EQ(fs().stats().Snapshot(FileKind::kOther).dir_syncs, 1u);
  EXPECT_EQ(fs().stats().Total().dir_syncs, 1u);
}

// ---- Counters ----

TEST_P(FileSystemConformanceTest, CountersCountEveryOperationUnderItsFileKind) {
  JKV_ASSERT_OK_AND_ASSIGN(auto wal,
                           fs().Open(Path("w"), OpenOptions{OpenMode::kCreate, FileKind::kWal}));
  JKV_ASSERT_OK(WriteString(*wal, 0, std::string(100, 'x')));
  JKV_ASSERT_OK(WriteString(*wal, 100, std::string(28, 'y')));
  JKV_ASSERT_OK(ReadString(*wal, 0, 64).status());
  JKV_ASSERT_OK(wal->Sync(SyncKind::kData));
  JKV_ASSERT_OK(wal->Sync(SyncKind::kAll));
  JKV_ASSERT_OK(wal->Truncate(0));
  JKV_ASSERT_OK_AND_ASSIGN(
      auto db, fs().Open(Path("d"), OpenOptions{OpenMode::kCreate, FileKind::kDatabase}));
  JKV_ASSERT_OK(WriteString(*db, 0, "z"));

  const IoCounts w = fs().stats().Snapshot(FileKind::kWal);
  EXPECT_EQ(w.writes, 2u);
  EXPECT_EQ(w.bytes_written, 128u);
  EXPECT_EQ(w.reads, 1u);
  EXPECT_EQ(w.bytes_read, 64u);
  EXPECT_EQ(w.syncs, 2u);
  EXPECT_EQ(w.truncates, 1u);
  const IoCounts d = fs().stats().Snapshot(FileKind::kDatabase);
  EXPECT_EQ(d.writes, 1u);
  EXPECT_EQ(d.reads, 0u);
  EXPECT_EQ(fs().stats().Snapshot(FileKind::kJournal).writes, 0u);
  EXPECT_EQ(fs().stats().Total().bytes_written, 129u);
  EXPECT_EQ(FileKindName(FileKind::kWal), "wal");
}

// ---- Locks: two Files of one path are two owners ----

// Takes a lock, expecting the call itself to succeed; returns whether the lock was granted.
bool Lock(File& f, uint64_t offset, uint64_t length, LockMode mode) {
  absl::StatusOr<bool> locked = f.TryLock(offset, length, mode);
  EXPECT_THAT(locked, IsOk());
  return locked.ok() && *locked;
}

constexpr LockMode kShared = LockMode::kShared;
constexpr LockMode kExclusive = LockMode::kExclusive;

TEST_P(FileSystemConformanceTest, SharedLocksOfTwoFilesCoexist) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_TRUE(Lock(*b, 5, 10, kShared));
}

TEST_P(FileSystemConformanceTest, ExclusiveLockConflictsWithAnyOverlappingLockOfAnotherFile) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_FALSE(Lock(*b, 9, 1, kExclusive));
  EXPECT_TRUE(Lock(*b, 10, 5, kExclusive));  // adjacent, not overlapping
  EXPECT_FALSE(Lock(*a, 14, 1, kShared));
  EXPECT_FALSE(Lock(*a, 14, 1, kExclusive));
}

TEST_P(FileSystemConformanceTest, OwnLockConvertsBetweenSharedAndExclusive) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_TRUE(Lock(*a, 0, 10, kExclusive));
  EXPECT_FALSE(Lock(*b, 3, 1, kShared));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_TRUE(Lock(*b, 3, 1, kShared));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));  // taking a held lock again is harmless
}

TEST_P(FileSystemConformanceTest, FailedLockConversionKeepsTheSharedLock) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_TRUE(Lock(*b, 0, 10, kShared));
  EXPECT_FALSE(Lock(*a, 0, 10, kExclusive));
  JKV_ASSERT_OK(b->Unlock(0, 10));
  JKV_ASSERT_OK_AND_ASSIGN(auto c, fs().Open(Path("lock"), kReadWrite));
  EXPECT_FALSE(Lock(*c, 5, 1, kExclusive));  // a still holds its shared lock
}

bool Can(File& f, uint64_t offset, uint64_t length, LockMode mode) {
  absl::StatusOr<bool> can = f.CanLock(offset, length, mode);
  EXPECT_THAT(can, IsOk());
  return can.ok() && *can;
}

TEST_P(FileSystemConformanceTest, CanLockTellsWhetherTryLockWouldSucceedAndTakesNothing) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Can(*b, 0, 10, kExclusive));
  EXPECT_TRUE(Lock(*a, 0, 10, kShared));
  EXPECT_TRUE(Can(*b, 5, 10, kShared));
  EXPECT_FALSE(Can(*b, 9, 1, kExclusive));
  EXPECT_TRUE(Can(*b, 10, 5, kExclusive));  // adjacent, not overlapping
  EXPECT_TRUE(Can(*a, 0, 10, kExclusive));  // an owner never conflicts with itself
  EXPECT_TRUE(Lock(*a, 0, 10, kExclusive));
  EXPECT_FALSE(Can(*b, 3, 1, kShared));
  // Asking took nothing: b holds no lock, so a can still convert and c can lock what b asked.
  JKV_ASSERT_OK(a->Unlock(0, 10));
  JKV_ASSERT_OK_AND_ASSIGN(auto c, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*c, 0, 20, kExclusive));
}

TEST_P(FileSystemConformanceTest, UnlockOfASubrangeSplitsTheLock) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 100, kExclusive));
  JKV_ASSERT_OK(a->Unlock(40, 20));
  EXPECT_TRUE(Lock(*b, 40, 20, kExclusive));
  EXPECT_FALSE(Lock(*b, 39, 1, kShared));
  EXPECT_FALSE(Lock(*b, 60, 1, kShared));
  EXPECT_FALSE(Lock(*b, 0, 1, kShared));
  EXPECT_FALSE(Lock(*b, 99, 1, kShared));
}

TEST_P(FileSystemConformanceTest, ZeroLengthLockReachesTheEndOfEveryFile) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 100, 0, kExclusive));
  EXPECT_FALSE(Lock(*b, uint64_t{1} << 40, 1, kShared));
  EXPECT_TRUE(Lock(*b, 0, 100, kExclusive));
  JKV_ASSERT_OK(a->Unlock(0, 0));
  EXPECT_TRUE(Lock(*b, uint64_t{1} << 40, 1, kShared));
}

TEST_P(FileSystemConformanceTest, LocksGoAwayWhenTheirFileIsDestroyed) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kExclusive));
  EXPECT_FALSE(Lock(*b, 0, 10, kShared));
  a.reset();
  EXPECT_TRUE(Lock(*b, 0, 10, kExclusive));
}

TEST_P(FileSystemConformanceTest, DestroyingAnotherFileOfThePathKeepsTheLocks) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("lock"), kReadWrite));
  EXPECT_TRUE(Lock(*a, 0, 10, kExclusive));
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto c, fs().Open(Path("lock"), kReadWrite));
    EXPECT_FALSE(Lock(*c, 0, 10, kShared));
  }
  EXPECT_FALSE(Lock(*b, 0, 10, kShared));
}

TEST_P(FileSystemConformanceTest, LockRangeBeyondTheLargestOffsetIsInvalidArgument) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("lock"), kCreate));
  EXPECT_THAT(a->TryLock(std::numeric_limits<uint64_t>::max() - 1, 10, kShared),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest file offset"));
}

// ---- Shared regions ----

constexpr size_t kRegionSize = 64 << 10;  // a multiple of every page size Linux uses

TEST_P(FileSystemConformanceTest, SharedRegionIsSharedByEveryFileOfThePath) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("shm"), kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("shm"), kReadWrite));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * a1, a->MapSharedRegion(1, kRegionSize));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * b1, b->MapSharedRegion(1, kRegionSize));
  a1[0] = 42;
  a1[kRegionSize - 1] = 43;
  EXPECT_EQ(b1[0], 42);
  EXPECT_EQ(b1[kRegionSize - 1], 43);
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * again, a->MapSharedRegion(1, kRegionSize));
  EXPECT_EQ(again, a1);
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, a->Size());
  EXPECT_GE(size, 2 * kRegionSize);  // grown to cover the region
}

TEST_P(FileSystemConformanceTest, SharedRegionKeepsALongerFile) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("shm"), kCreate));
  JKV_ASSERT_OK(WriteString(*a, 3 * kRegionSize, "end"));
  JKV_ASSERT_OK(a->MapSharedRegion(0, kRegionSize).status());
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, a->Size());
  EXPECT_EQ(size, 3 * kRegionSize + 3);
}

TEST_P(FileSystemConformanceTest, SharedRegionMappedAgainWithAnotherSizeIsInvalidArgument) {
  JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("shm"), kCreate));
  JKV_ASSERT_OK(a->MapSharedRegion(0, kRegionSize).status());
  EXPECT_THAT(a->MapSharedRegion(0, 2 * kRegionSize),
              StatusIs(absl::StatusCode::kInvalidArgument, "already mapped"));
}

// ---- Concurrency (meaningful under TSan) ----

TEST_P(FileSystemConformanceTest, ThreadsWriteAndReadDisjointRangesOfOneFile) {
  constexpr int kThreads = 4;
  constexpr int kBlocks = 32;
  constexpr size_t kBlock = 4096;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBlocks; ++i) {
        const uint64_t offset = (static_cast<uint64_t>(i) * kThreads + t) * kBlock;
        const std::string block = Pattern(kBlock, t * 1000 + i);
        EXPECT_THAT(WriteString(*file, offset, block), IsOk());
        absl::StatusOr<std::string> back = ReadString(*file, offset, kBlock);
        EXPECT_TRUE(back.ok() && *back == block);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, kThreads * kBlocks * kBlock);
  EXPECT_EQ(fs().stats().Snapshot(FileKind::kOther).writes, uint64_t{kThreads * kBlocks});
}

TEST_P(FileSystemConformanceTest, ThreadsLockAndUnlockTheirOwnBytes) {
  constexpr int kThreads = 4;
  JKV_ASSERT_OK(fs().Open(Path("lock"), kCreate).status());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<File>> file = fs().Open(Path("lock"), kReadWrite);
      ASSERT_THAT(file, IsOk());
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<bool> locked = (*file)->TryLock(t, 1, LockMode::kExclusive);
        EXPECT_TRUE(locked.ok() && *locked);
        EXPECT_THAT((*file)->TryLock(100, 1, LockMode::kShared), IsOk());
        EXPECT_THAT((*file)->Unlock(t, 1), IsOk());
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace
}  // namespace journalkv::vfs
