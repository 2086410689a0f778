// Tests of PosixFileSystem: the shared conformance suite, plus what only a real kernel shows
// (locks and shared memory between processes, errno texts, file modes, close-on-exec).
#include "vfs/posix_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/errno_status.h"
#include "vfs/file_system_conformance.h"
#include "vfs/file_system_testing.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

INSTANTIATE_TEST_SUITE_P(Posix, FileSystemConformanceTest,
                         ::testing::Values(FileSystemEnvFactory{"Posix", &MakePosixEnv}),
                         FileSystemEnvFactoryName);

constexpr OpenOptions kCreate{OpenMode::kCreate, FileKind::kOther};
constexpr OpenOptions kReadWrite{OpenMode::kReadWrite, FileKind::kOther};

// A pipe whose ends are closed when it goes out of scope (so that a failed assertion in the
// parent lets a waiting child see end-of-file and exit).
class Pipe {
 public:
  Pipe() {
    int fds[2];
    ok_ = ::pipe(fds) == 0;
    read_fd_ = ok_ ? fds[0] : -1;
    write_fd_ = ok_ ? fds[1] : -1;
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  bool ok() const { return ok_; }
  bool Send() const { return ::write(write_fd_, "x", 1) == 1; }
  bool Receive() const {  // false at end-of-file
    char c;
    return ::read(read_fd_, &c, 1) == 1;
  }
  void CloseRead() { CloseFd(read_fd_); }
  void CloseWrite() { CloseFd(write_fd_); }

 private:
  static void CloseFd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  bool ok_;
  int read_fd_;
  int write_fd_;
};

// Waits for the child and returns its exit code (-1 when it did not exit normally).
int WaitForChild(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Child side of the lock test: takes an exclusive lock through its own File, tells the parent,
// and holds the lock until the parent says to exit. Returns the child's exit code.
int HoldExclusiveLockInChild(const std::string& path, const Pipe& to_parent, const Pipe& to_child) {
  PosixFileSystem fs;
  absl::StatusOr<std::unique_ptr<File>> file = fs.Open(path, kReadWrite);
  if (!file.ok()) return 1;
  absl::StatusOr<bool> locked = (*file)->TryLock(0, 1, LockMode::kExclusive);
  if (!locked.ok() || !*locked) return 2;
  if (!to_parent.Send()) return 3;
  return to_child.Receive() ? 0 : 4;
}

TEST(PosixFileSystemTest, LockOfAnotherProcessConflictsUntilThatProcessExits) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  const std::string path = dir.path() + "/lock";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, kCreate));
  Pipe to_parent;
  Pipe to_child;
  ASSERT_TRUE(to_parent.ok() && to_child.ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // child: no gtest here, only the exit code
    to_parent.CloseRead();
    to_child.CloseWrite();
    ::_exit(HoldExclusiveLockInChild(path, to_parent, to_child));
  }
  to_parent.CloseWrite();
  to_child.CloseRead();
  ASSERT_TRUE(to_parent.Receive());  // the child holds the lock
  JKV_ASSERT_OK_AND_ASSIGN(bool locked, file->TryLock(0, 1, LockMode::kShared));
  EXPECT_FALSE(locked);
  JKV_ASSERT_OK_AND_ASSIGN(locked, file->TryLock(1, 10, LockMode::kExclusive));
  EXPECT_TRUE(locked);  // other bytes are free
  ASSERT_TRUE(to_child.Send());
  EXPECT_EQ(WaitForChild(pid), 0);
  JKV_ASSERT_OK_AND_ASSIGN(locked, file->TryLock(0, 1, LockMode::kExclusive));
  EXPECT_TRUE(locked);
}

// Child side of the shared-memory test: maps region 1 through its own File, checks the parent's
// byte and writes its own.
int TouchSharedRegionInChild(const std::string& path, size_t region_size) {
  PosixFileSystem fs;
  absl::StatusOr<std::unique_ptr<File>> file = fs.Open(path, kReadWrite);
  if (!file.ok()) return 1;
  absl::StatusOr<uint8_t*> region = (*file)->MapSharedRegion(1, region_size);
  if (!region.ok()) return 2;
  if ((*region)[0] != 0x5a) return 3;
  (*region)[1] = 0xa5;
  return 0;
}

TEST(PosixFileSystemTest, SharedRegionIsSharedWithAnotherProcess) {
  constexpr size_t kRegionSize = 64 << 10;
  ScopedTempDir dir;
  PosixFileSystem fs;
  const std::string path = dir.path() + "/shm";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * region, file->MapSharedRegion(1, kRegionSize));
  region[0] = 0x5a;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(TouchSharedRegionInChild(path, kRegionSize));
  EXPECT_EQ(WaitForChild(pid), 0);
  EXPECT_EQ(region[1], 0xa5);
}

TEST(PosixFileSystemTest, SharedRegionMustStartOnAPageBoundary) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(dir.path() + "/shm", kCreate));
  EXPECT_THAT(file->MapSharedRegion(1, 1000),
              StatusIs(absl::StatusCode::kInvalidArgument, "page boundary"));
  EXPECT_THAT(file->MapSharedRegion(0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "shared region of 0 bytes"));
  JKV_EXPECT_OK(file->MapSharedRegion(0, 1000).status());  // region 0 always starts at 0
}

// The pages of a shared region get their disk blocks when it is mapped: on a full disk the
// map fails with ResourceExhausted (mapped sparse, as before, the first store into a hole
// raised SIGBUS). A region allocated before the disk filled maps again (a reader joining).
TEST(PosixFileSystemTest, SharedRegionOnAFullDiskIsResourceExhaustedNotASignal) {
  absl::StatusOr<std::unique_ptr<ScopedTmpfs>> disk = ScopedTmpfs::Mount(1 << 20);
  if (!disk.ok()) GTEST_SKIP() << disk.status().message();
  constexpr size_t kRegionSize = 64 << 10;
  PosixFileSystem fs;
  const std::string path = (*disk)->path() + "/shm";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * region, file->MapSharedRegion(0, kRegionSize));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  // (Sparse, the store below would raise SIGBUS, and the mount would outlive the test.)
  ASSERT_GE(uint64_t(st.st_blocks) * 512, kRegionSize) << "the region's pages have no blocks";
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t filled, (*disk)->Fill("filler"));
  EXPECT_GT(filled, 0u);
  region[kRegionSize - 1] = 7;  // allocated: no block needed
  EXPECT_THAT(file->MapSharedRegion(1, kRegionSize),
              StatusIs(absl::StatusCode::kResourceExhausted, "the disk is full"));
  JKV_ASSERT_OK_AND_ASSIGN(auto again, fs.Open(path, kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * same, again->MapSharedRegion(0, kRegionSize));
  EXPECT_EQ(same[kRegionSize - 1], 7);
}

// (It wrote to /dev/full, which Open now refuses as not a regular file, so it was skipped on
// every machine; a full tmpfs is a full disk for real.)
TEST(PosixFileSystemTest, WriteToAFullDiskIsResourceExhaustedWithTheErrnoText) {
  absl::StatusOr<std::unique_ptr<ScopedTmpfs>> disk = ScopedTmpfs::Mount(256 << 10);
  if (!disk.ok()) GTEST_SKIP() << disk.status().message();
  PosixFileSystem fs;
  const std::string path = (*disk)->path() + "/f";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, kCreate));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t filled, (*disk)->Fill("filler"));
  EXPECT_GT(filled, 0u);
  const std::string block(8192, 'x');
  EXPECT_THAT(WriteString(*file, 0, block),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       path + ": pwrite at offset 0: No space left on device"));
}

TEST(PosixFileSystemTest, ErrorsNameTheFileTheOperationAndTheErrnoText) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  const std::string file_path = dir.path() + "/f";
  JKV_ASSERT_OK(WriteStringToFile(fs, file_path, "x"));
  EXPECT_THAT(fs.Open(dir.path() + "/missing/x", kCreate),
              StatusIs(absl::StatusCode::kNotFound,
                       dir.path() + "/missing/x: open: No such file or directory"));
  EXPECT_THAT(fs.Open(file_path + "/x", kCreate),
              StatusIs(absl::StatusCode::kInternal, file_path + "/x: open: Not a directory"));
  EXPECT_THAT(fs.SyncDirectory(dir.path() + "/missing"),
              StatusIs(absl::StatusCode::kNotFound, "open directory: No such file"));
  EXPECT_THAT(fs.SyncDirectory(file_path),
              StatusIs(absl::StatusCode::kInternal, "Not a directory"));
}

TEST(PosixFileSystemTest, OffsetsBeyondOffTAreInvalidArgument) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(dir.path() + "/f", kCreate));
  const uint64_t huge = uint64_t{1} << 63;
  EXPECT_THAT(WriteString(*file, huge, "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest file offset"));
  EXPECT_THAT(ReadString(*file, huge, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest file offset"));
  EXPECT_THAT(file->Truncate(huge),
              StatusIs(absl::StatusCode::kInvalidArgument, "largest file offset"));
}

TEST(PosixFileSystemTest, NewFilesAreCreatedWithMode0644) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  const std::string path = dir.path() + "/f";
  const mode_t old_umask = ::umask(022);
  absl::StatusOr<std::unique_ptr<File>> file = fs.Open(path, kCreate);
  ::umask(old_umask);
  JKV_ASSERT_OK(file.status());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(PosixFileSystemTest, FilesAreOpenedCloseOnExec) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  const std::string path = dir.path() + "/f";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, kCreate));
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec) != path) continue;
    const int fd = std::stoi(entry.path().filename().string());
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ++found;
  }
  EXPECT_EQ(found, 1);
}

// Where a file system refuses RENAME_NOREPLACE, RenameNoReplace links the new name and
// unlinks the old one: the same results as renameat2's.
TEST(PosixFileSystemTest, RenameNoReplaceByLinkAndUnlinkRefusesATakenName) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  fs.UseLinkForRenameNoReplaceForTesting();
  const std::string a = dir.path() + "/a", b = dir.path() + "/b", c = dir.path() + "/c";
  ASSERT_THAT(WriteStringToFile(fs, a, "from a"), IsOk());
  ASSERT_THAT(WriteStringToFile(fs, b, "old b"), IsOk());
  EXPECT_THAT(fs.RenameNoReplace(a, b),
              StatusIs(absl::StatusCode::kAlreadyExists, absl::StrCat(a, ": rename to ", b)));
  EXPECT_THAT(ReadFileToString(fs, a), IsOkAndHolds("from a"));
  EXPECT_THAT(ReadFileToString(fs, b), IsOkAndHolds("old b"));
  ASSERT_THAT(fs.RenameNoReplace(a, c), IsOk());
  EXPECT_THAT(fs.Exists(a), IsOkAndHolds(false));
  EXPECT_THAT(ReadFileToString(fs, c), IsOkAndHolds("from a"));
  struct stat st;
  ASSERT_EQ(::stat(c.c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);  // the old name is gone, not a second link
  EXPECT_THAT(fs.RenameNoReplace(a, b), StatusIs(absl::StatusCode::kNotFound, a));
}

TEST(PosixFileSystemTest, BothSyncKindsSucceed) {
  ScopedTempDir dir;
  PosixFileSystem fs;
  JKV_ASSERT_OK_AND_ASSIGN(
      auto file, fs.Open(dir.path() + "/f", OpenOptions{OpenMode::kCreate, FileKind::kJournal}));
  JKV_ASSERT_OK(WriteString(*file, 0, "x"));
  JKV_EXPECT_OK(file->Sync(SyncKind::kData));
  JKV_EXPECT_OK(file->Sync(SyncKind::kAll));
  EXPECT_EQ(fs.stats().Snapshot(FileKind::kJournal).syncs, 2u);
}

TEST(ErrnoToStatusTest, MapsErrnoToTheCodeTheCallerActsOn) {
  const struct {
    int err;
    absl::StatusCode code;
  } cases[] = {
      {ENOSPC, absl::StatusCode::kResourceExhausted},
      {EDQUOT, absl::StatusCode::kResourceExhausted},
      {ENOENT, absl::StatusCode::kNotFound},
      {EEXIST, absl::StatusCode::kAlreadyExists},
      {EACCES, absl::StatusCode::kPermissionDenied},
      {EPERM, absl::StatusCode::kPermissionDenied},
      {EROFS, absl::StatusCode::kPermissionDenied},
      {EISDIR, absl::StatusCode::kInvalidArgument},
      {EIO, absl::StatusCode::kInternal},
      {EBADF, absl::StatusCode::kInternal},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ErrnoToStatus(c.err, "ctx").code(), c.code) << c.err;
  }
  EXPECT_EQ(ErrnoToStatus(EIO, "x.db: fsync").message(), "x.db: fsync: Input/output error");
  EXPECT_EQ(ErrnoToStatus(EISDIR, "d: open").message(), "d: open: is a directory");
}

}  // namespace
}  // namespace journalkv::vfs
