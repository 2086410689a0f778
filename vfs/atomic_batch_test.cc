// Tests of the atomic batch outside XFS: the in-memory batch and its ranges, MemFileSystem's
// emulated batch (the shared contract), PosixFileSystem's refusal where the file system has no
// atomic write (ext4 here, tmpfs when the test may mount one), and the F2FS batch's calling
// sequence against a fake ioctl layer (it is untested on a real F2FS).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_batch_testing.h"
#include "vfs/batch_overlay.h"
#include "vfs/f2fs_atomic.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr OpenOptions kDbCreate{OpenMode::kCreate, FileKind::kDatabase};

TEST(BatchRangesTest, MergesAndCutsIntoPieces) {
  BatchRanges ranges;
  ranges.Add(10, 20);
  ranges.Add(30, 40);
  ranges.Add(20, 25);  // touches the first
  EXPECT_EQ(ranges.ranges().size(), 2u);
  EXPECT_EQ(ranges.lowest(), 10u);
  EXPECT_EQ(ranges.end(), 40u);
  std::vector<std::tuple<uint64_t, uint64_t, bool>> got;
  for (const auto& p : ranges.Pieces(5, 35)) got.emplace_back(p.start, p.end, p.in_batch);
  EXPECT_THAT(got, ElementsAre(std::make_tuple(5, 10, false), std::make_tuple(10, 25, true),
                               std::make_tuple(25, 30, false), std::make_tuple(30, 35, true)));
  ranges.Add(0, 100);
  EXPECT_EQ(ranges.ranges().size(), 1u);
}

TEST(BatchBufferTest, LaterWritesWinAndOverlapsAreCut) {
  BatchBuffer buffer;
  buffer.Write(0, std::vector<uint8_t>(10, 1));
  buffer.Write(4, std::vector<uint8_t>(2, 2));
  buffer.Write(8, std::vector<uint8_t>(4, 3));
  std::vector<uint8_t> out(12);
  buffer.Read(0, absl::MakeSpan(out));
  EXPECT_THAT(out, ElementsAre(1, 1, 1, 1, 2, 2, 1, 1, 3, 3, 3, 3));
  EXPECT_EQ(buffer.bytes(), 12u);
  EXPECT_EQ(buffer.ranges().end(), 12u);
}

TEST(MemAtomicBatchTest, KeepsTheContract) {
  MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  RunAtomicBatchContract(fs, "/d", 512);
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/d/batch_contract", kDbCreate));
  EXPECT_EQ(file->atomic_write_kind(), AtomicWriteKind::kEmulated);
  EXPECT_EQ(AtomicWriteKindName(file->atomic_write_kind()), "emulated");
}

TEST(MemAtomicBatchTest, ReadOnlyFileHasNone) {
  MemFileSystem fs;
  JKV_ASSERT_OK(WriteStringToFile(fs, "/f", "x"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file,
                           fs.Open("/f", OpenOptions{OpenMode::kReadOnly, FileKind::kDatabase}));
  EXPECT_EQ(file->atomic_write_kind(), AtomicWriteKind::kNone);
  EXPECT_THAT(file->BeginAtomicBatch(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
}

TEST(MemAtomicBatchTest, ABatchPastTheSizeLimitChangesNothing) {
  MemFileSystem fs;
  fs.SetMaxFileBytes(8192);
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open("/f", kDbCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(4096, 1)));
  JKV_ASSERT_OK(batch->Write(8192, std::vector<uint8_t>(4096, 2)));
  EXPECT_THAT(batch->Commit(BatchSync::kDurable),
              StatusIs(absl::StatusCode::kInternal, "/f: atomic batch write"));
  EXPECT_THAT(file->Size(), ::journalkv::testing::IsOkAndHolds(0u));
}

TEST(AtomicWriteKindTest, Names) {
  EXPECT_EQ(AtomicWriteKindName(AtomicWriteKind::kNone), "none");
  EXPECT_EQ(AtomicWriteKindName(AtomicWriteKind::kXfsExchangeRange), "xfs-exchange-range");
  EXPECT_EQ(AtomicWriteKindName(AtomicWriteKind::kF2fs), "f2fs-atomic-write");
  EXPECT_EQ(AtomicWriteKindName(AtomicWriteKind::kEmulated), "emulated");
}

// TEST_TMPDIR is on ext4 here; elsewhere the message names that file system instead.
TEST(PosixAtomicBatchTest, RefusedWithWhatIsNeededWhereUnsupported) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(dir.path() + "/db", kDbCreate));
  if (file->atomic_write_kind() != AtomicWriteKind::kNone) {
    GTEST_SKIP() << "TEST_TMPDIR's file system has atomic writes ("
                 << AtomicWriteKindName(file->atomic_write_kind()) << ")";
  }
  const absl::StatusOr<std::unique_ptr<AtomicBatch>> batch = file->BeginAtomicBatch();
  EXPECT_THAT(batch, StatusIs(absl::StatusCode::kUnimplemented, ""));
  const std::string message(batch.status().message());
  EXPECT_THAT(message, HasSubstr(dir.path() + "/db: atomic batch: not supported"));
  EXPECT_THAT(message,
              HasSubstr("needs XFS with the exchange-range feature on Linux 6.10+, or F2FS"));
  EXPECT_FALSE(fs.Exists(dir.path() + "/db-shadow").value_or(true)) << "no shadow made";
}

TEST(PosixAtomicBatchTest, RefusedOnTmpfs) {
  absl::StatusOr<std::unique_ptr<ScopedTmpfs>> tmpfs = ScopedTmpfs::Mount(1 << 20);
  if (!tmpfs.ok()) GTEST_SKIP() << "cannot mount a tmpfs: " << tmpfs.status().message();
  PosixFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open((*tmpfs)->path() + "/db", kDbCreate));
  EXPECT_EQ(file->atomic_write_kind(), AtomicWriteKind::kNone);
  EXPECT_THAT(file->BeginAtomicBatch(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "(tmpfs); it needs XFS with the exchange-range feature"));
}

// ---- F2FS, against a fake ioctl layer ----

class FakeF2fsIoctls final : public F2fsIoctls {
 public:
  int Ioctl(int fd, unsigned long request) override {
    EXPECT_EQ(fd, expected_fd);
    const char* name = request == kF2fsIocStartAtomicWrite    ? "start"
                       : request == kF2fsIocCommitAtomicWrite ? "commit"
                       : request == kF2fsIocAbortAtomicWrite  ? "abort"
                                                              : "unknown";
    // What the file held when the call came: the writes went to the file before it.
    calls.push_back(absl::StrCat(name, "@", SizeOf(fd)));
    auto it = fail.find(request);
    return it == fail.end() ? 0 : it->second;
  }
  static long SizeOf(int fd) { return static_cast<long>(::lseek(fd, 0, SEEK_END)); }

  int expected_fd = -1;
  std::map<unsigned long, int> fail;
  std::vector<std::string> calls;
};

class F2fsAtomicBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(file_, fs_.Open(dir_.path() + "/db", kDbCreate));
    fd_ = ::open((dir_.path() + "/db").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ioctls_.expected_fd = fd_;
  }
  void TearDown() override { ::close(fd_); }
  absl::StatusOr<std::unique_ptr<AtomicBatch>> Begin() {
    open_.store(true);
    return BeginF2fsAtomicBatch(file_.get(), fd_, &ioctls_, &fs_.stats(), FileKind::kDatabase,
                                &open_);
  }

  ScopedTempDir dir_;
  PosixFileSystem fs_;
  std::unique_ptr<File> file_;
  int fd_ = -1;
  FakeF2fsIoctls ioctls_;
  std::atomic<bool> open_{false};
};

TEST_F(F2fsAtomicBatchTest, StartWritesThenCommitWithNoFsync) {
  const uint64_t syncs = fs_.stats().Snapshot(FileKind::kDatabase).syncs;
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, Begin());
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(4096, 7)));
  JKV_ASSERT_OK(batch->Write(8192, std::vector<uint8_t>(100, 8)));  // any size on F2FS
  std::vector<uint8_t> back(100);
  JKV_ASSERT_OK(batch->Read(8192, absl::MakeSpan(back)));
  EXPECT_EQ(back, std::vector<uint8_t>(100, 8));
  JKV_ASSERT_OK(batch->Commit(BatchSync::kDurable));
  EXPECT_THAT(ioctls_.calls, ElementsAre("start@0", "commit@8292"));
  EXPECT_FALSE(open_.load());
  // The commit ioctl syncs the file itself.
  EXPECT_EQ(fs_.stats().Snapshot(FileKind::kDatabase).syncs, syncs);
  EXPECT_EQ(fs_.stats().Snapshot(FileKind::kDatabase).atomic_commits, 1u);
  EXPECT_THAT(batch->Commit(BatchSync::kDurable),
              StatusIs(absl::StatusCode::kFailedPrecondition, ""));
}

TEST_F(F2fsAtomicBatchTest, AbortAndDestroyCallAbort) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto batch, Begin());
    JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(10, 1)));
    JKV_ASSERT_OK(batch->Abort());
  }
  { JKV_ASSERT_OK_AND_ASSIGN(auto batch, Begin()); }
  EXPECT_THAT(ioctls_.calls, ElementsAre("start@0", "abort@10", "start@10", "abort@10"));
}

TEST_F(F2fsAtomicBatchTest, AFailedCommitAbortsAndNamesTheCall) {
  ioctls_.fail[kF2fsIocCommitAtomicWrite] = EIO;
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, Begin());
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(10, 1)));
  EXPECT_THAT(batch->Commit(BatchSync::kDurable),
              StatusIs(absl::StatusCode::kInternal, "/db: ioctl(F2FS_IOC_COMMIT_ATOMIC_WRITE)"));
  EXPECT_THAT(ioctls_.calls, ElementsAre("start@0", "commit@10", "abort@10"));
  EXPECT_FALSE(open_.load());
}

TEST_F(F2fsAtomicBatchTest, ARefusedStartIsUnsupportedOrTheMappedError) {
  ioctls_.fail[kF2fsIocStartAtomicWrite] = ENOTTY;
  EXPECT_THAT(Begin(), StatusIs(absl::StatusCode::kUnimplemented,
                                "f2fs refused F2FS_IOC_START_ATOMIC_WRITE"));
  ioctls_.fail[kF2fsIocStartAtomicWrite] = EPERM;
  EXPECT_THAT(Begin(),
              StatusIs(absl::StatusCode::kPermissionDenied, "ioctl(F2FS_IOC_START_ATOMIC_WRITE)"));
  EXPECT_FALSE(open_.load());
}

}  // namespace
}  // namespace journalkv::vfs
