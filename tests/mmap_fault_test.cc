// The read map's failure modes from outside the process (Options::mmap_size; vfs/read_map.h E5;
// engine/mmap_test.cc tests the same handle cut by this process): a read of a mapped page that
// the kernel cannot serve is a SIGBUS, not a return value, and each case here must end as an
// error of the transaction that read, with the process alive and the handle usable again:
//   - another process cuts the database file (ftruncate) under a reader's transaction, then
//     puts the bytes back;
//   - another process cuts and restores the file over and over while threads read (the cut
//     lands inside copies: every read gives the right value or an error, never another value);
//   - the disk fails to read: an XFS file system shut down under the reader (the ioctl
//     xfs_io's `shutdown` calls), its pages dropped from the kernel's cache first, so that the
//     map's next touch of them is a read the file system refuses (EIO), a real I/O error.
// Under ThreadSanitizer the cases that take a SIGBUS skip (read_map.h: Debian 12's libtsan
// keeps its in-signal state after the handler's siglongjmp).
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/scratch_fs.h"

namespace journalkv {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif

constexpr int kKeys = 3000;
std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i) { return absl::StrCat("value-", i, std::string(60, 'v')); }

// XFS_IOC_GOINGDOWN (xfs_fs.h, not installed here): _IOR('X', 125, uint32_t); the flag
// XFS_FSOP_GOING_FLAGS_NOLOGFLUSH shuts the file system down at once.
constexpr unsigned long kXfsGoingDown = _IOR('X', 125, uint32_t);
constexpr uint32_t kGoingDownNoLogFlush = 2;

class MmapFaultTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  // WAL and WAL2 read the database file's pages in place (pager/mapped_pages.h): a fault there
  // maps zeros over the page and fails the handle's open reads with the map's own DataLoss
  // (vfs/read_map.h O2), counted in map_damage; the rollback modes copy out of the map (E5),
  // and a fault falls back to pread, whose error the read returns, counted in map_faults (WAL
  // modes copy interior pages once, so they count both).
  bool InPlace() const { return GetParam() == JournalMode::kWal || GetParam() == JournalMode::kWal2; }
  static constexpr char kMapError[] = "memory-mapped database file could not be read";
  uint64_t Faults(Db& db) const {
    return db.Stats().map_faults + (InPlace() ? db.Stats().map_damage : 0);
  }

  Options Opts() const {
    Options o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kOff;
    o.cache_pages = 16;  // most reads reach the file
    o.mmap_size = uint64_t{64} << 20;
    o.checkpoint_policy = "manual";
    return o;
  }
  // A database of kKeys keys at `path`, everything in the database file (WAL checkpointed).
  void Create(const std::string& path) {
    auto db = Db::Open(path, Opts());
    ASSERT_TRUE(db.ok()) << db.status();
    auto w = (*db)->BeginWrite();
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < kKeys; ++i) JKV_ASSERT_OK((*w)->Put(Key(i), Value(i)));
    JKV_ASSERT_OK((*w)->Commit());
    if (GetParam() == JournalMode::kWal) {
      JKV_ASSERT_OK((*db)->Checkpoint(CheckpointMode::kTruncate).status());
    }
  }
  static void ExpectAll(Db& db) {
    for (int i = 0; i < kKeys; i += 7) {
      auto v = db.Get(Key(i));
      ASSERT_TRUE(v.ok()) << Key(i) << ": " << v.status();
      ASSERT_EQ(v->value_or("<none>"), Value(i)) << Key(i);
    }
  }
  static std::string ReadAll(const std::string& path) {
    std::string bytes(std::filesystem::file_size(path), '\0');
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    return bytes;
  }
  // Runs `child` in another process (fork; only system calls there) and waits for it; true when
  // it exited 0.
  template <typename F>
  static bool InAnotherProcess(F child) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(child() ? 0 : 1);
    int status = 0;
    return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
  }
  static bool Cut(const std::string& path, off_t size) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    const bool ok = fd >= 0 && ::ftruncate(fd, size) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
  }
  static bool Restore(const std::string& path, const std::string& bytes) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    const bool ok = fd >= 0 && ::pwrite(fd, bytes.data(), bytes.size(), 0) ==
                                   static_cast<ssize_t>(bytes.size());
    if (fd >= 0) ::close(fd);
    return ok;
  }

  vfs::ScopedTempDir dir_;
  std::string path_ = absl::StrCat(dir_.path(), "/m.db");
};

// E5 from another process: the reader's transaction fails with an error naming the cut, the
// process lives, and once the other process has put the bytes back the same handle reads.
TEST_P(MmapFaultTest, AnotherProcessCutsTheFileUnderAReader) {
  if (kUnderTsan) GTEST_SKIP() << "takes a SIGBUS on purpose (see the file's comment)";
  ASSERT_NO_FATAL_FAILURE(Create(path_));
  const std::string image = ReadAll(path_);
  auto db = Db::Open(path_, Opts());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_NO_FATAL_FAILURE(ExpectAll(**db));  // the map has seen the whole file
  {
    auto txn = (*db)->BeginRead();
    ASSERT_TRUE(txn.ok()) << txn.status();
    ASSERT_TRUE((*txn)->Get(Key(0)).ok());
    ASSERT_TRUE(InAnotherProcess([&] { return Cut(path_, 2 * 4096); }));
    int failed = 0;
    for (int i = 0; i < kKeys; i += 3) {
      auto v = (*txn)->Get(Key(i));
      if (v.ok()) {
        EXPECT_EQ(v->value_or("<none>"), Value(i));  // a page the cache still held
        continue;
      }
      ++failed;
      EXPECT_TRUE(absl::IsDataLoss(v.status())) << v.status();
      const bool named =
          v.status().message().find("past the end of the file") != std::string::npos ||
          (InPlace() && v.status().message().find(kMapError) != std::string::npos);
      EXPECT_TRUE(named) << v.status();
    }
    EXPECT_GT(failed, 0);
  }
  EXPECT_GT(Faults(**db), 0u) << "the cut never reached the map";
  ASSERT_TRUE(InAnotherProcess([&] { return Restore(path_, image); }));
  ASSERT_NO_FATAL_FAILURE(ExpectAll(**db));
  JKV_ASSERT_OK((*db)->Put("after", "the cut"));
  auto v = (*db)->Get("after");
  JKV_ASSERT_OK(v.status());
  EXPECT_EQ(v->value_or(""), "the cut");
}

// The cut races the copies: another process cuts the file to one page and writes it back, over
// and over, while two threads read. Every read answers the right value or fails with DataLoss
// (a page past the end, or one caught half written back, which its checksum refuses); after
// the other process stops, every key reads.
TEST_P(MmapFaultTest, CutsRacingTheReadsGiveErrorsNeverOtherValues) {
  if (kUnderTsan) GTEST_SKIP() << "takes a SIGBUS on purpose (see the file's comment)";
  ASSERT_NO_FATAL_FAILURE(Create(path_));
  const std::string image = ReadAll(path_);
  auto db = Db::Open(path_, Opts());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_NO_FATAL_FAILURE(ExpectAll(**db));
  // The cutter runs at least 200 rounds, and on until the readers have met a cut (a word of
  // shared memory says so) or 20,000 rounds: whether a read lands inside a cut is up to the
  // scheduler (delete-mode reads, slower for their file lock, met none in 200 rounds once).
  void* shared = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* met_a_cut = new (shared) std::atomic<int>(0);
  const pid_t cutter = ::fork();
  if (cutter == 0) {
    for (int round = 0; round < 20000; ++round) {
      if (round >= 200 && met_a_cut->load() != 0) break;
      if (!Cut(path_, 4096)) ::_exit(1);
      ::usleep(100);  // the file stays cut a moment, for the readers to meet it
      if (!Restore(path_, image)) ::_exit(1);
      ::usleep(500);
    }
    ::_exit(0);
  }
  ASSERT_GT(cutter, 0);
  std::atomic<bool> done{false};
  std::atomic<int> ok_reads{0}, failed_reads{0}, wrong{0}, odd_errors{0};
  auto reader = [&](int start) {
    for (int i = start; !done.load(); i = (i + 13) % kKeys) {
      auto v = (*db)->Get(Key(i));
      if (v.ok()) {
        ++ok_reads;
        if (v->value_or("<none>") != Value(i)) ++wrong;
      } else {
        ++failed_reads;
        met_a_cut->store(1);
        if (!absl::IsDataLoss(v.status()) && !absl::IsOutOfRange(v.status())) {
          ++odd_errors;
          ADD_FAILURE() << v.status();
        }
      }
    }
  };
  std::thread a(reader, 0), b(reader, 5);
  int status = 0;
  const bool waited = ::waitpid(cutter, &status, 0) == cutter;
  done.store(true);
  a.join();
  b.join();
  ::munmap(shared, sizeof(std::atomic<int>));
  ASSERT_TRUE(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(odd_errors.load(), 0);
  EXPECT_GT(ok_reads.load(), 0);
  EXPECT_GT(failed_reads.load(), 0) << "no read met a cut: the test tested nothing";
  std::printf("%s: %d reads answered, %d failed, %llu map faults\n",
              std::string(pager::JournalModeName(GetParam())).c_str(), ok_reads.load(),
              failed_reads.load(), static_cast<unsigned long long>(Faults(**db)));
  ASSERT_NO_FATAL_FAILURE(ExpectAll(**db));
}

// A real I/O error under the map: XFS shut down under the reader after its cached pages were
// dropped. The map's copy faults (SIGBUS), pread says EIO, and the read's transaction fails
// with "Input/output error"; the process lives. (Nothing on a shut-down file system reads
// again until it is mounted anew; the scratch file system is then thrown away.)
TEST_P(MmapFaultTest, AnIOErrorUnderTheMapIsAnErrorOfTheRead) {
  if (kUnderTsan) GTEST_SKIP() << "takes a SIGBUS on purpose (see the file's comment)";
  const std::string why = vfs::ScratchFs::CannotMakeReason(vfs::ScratchFs::Kind::kXfsNoExchange);
  if (!why.empty()) GTEST_SKIP() << "needs a scratch XFS: " << why;
  auto xfs = vfs::ScratchFs::Make(vfs::ScratchFs::Kind::kXfsNoExchange);
  if (!xfs.ok()) GTEST_SKIP() << "needs a scratch XFS: " << xfs.status();
  const std::string path = absl::StrCat((*xfs)->mount(), "/m.db");
  ASSERT_NO_FATAL_FAILURE(Create(path));
  auto db = Db::Open(path, Opts());
  ASSERT_TRUE(db.ok()) << db.status();
  {
    auto v = (*db)->Get(Key(0));
    ASSERT_TRUE(v.ok()) << v.status();
  }
  const uint64_t reads_before = (*db)->Stats().map_reads + (*db)->Stats().map_pages;
  EXPECT_GT(reads_before, 0u) << "the map did not serve the first reads";
  // The file's pages out of the kernel's cache (written back first: only clean pages go), then
  // the file system down: every read of the disk now fails.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fsync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  uint32_t flags = kGoingDownNoLogFlush;
  ASSERT_EQ(::ioctl(fd, kXfsGoingDown, &flags), 0) << "XFS_IOC_GOINGDOWN: " << errno;
  ::close(fd);
  int failed = 0;
  for (int i = 1; i < kKeys; i += 11) {
    auto v = (*db)->Get(Key(i));
    if (v.ok()) {
      EXPECT_EQ(v->value_or("<none>"), Value(i));  // from the pager's own cache
      continue;
    }
    ++failed;
    // In WAL modes a page taken in place fails with the map's error, and one copied (an
    // interior page, copied once for its search hints) with pread's, as in delete.
    const bool named = v.status().message().find("Input/output error") != std::string::npos ||
                       (InPlace() && v.status().message().find(kMapError) != std::string::npos);
    EXPECT_TRUE(named) << v.status();
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(Faults(**db), 0u) << "no read faulted in the map: pread alone was tested";
  db->reset();  // its close fails on the dead file system; the process goes on
}

INSTANTIATE_TEST_SUITE_P(Modes, MmapFaultTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
