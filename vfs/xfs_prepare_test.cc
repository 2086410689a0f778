// Prepared atomic batches on a real XFS with exchange-range (xfs_exchange.h: the batch's blocks
// and a trailer in the shadow, one fdatasync; the exchange of a prepared batch by a later
// File), on a scratch XFS made for the test (vfs/scratch_fs.h). The contract, a process that
// prepares and is killed before it commits (a real SIGKILL of a forked child), and a torn
// trailer that must not count as prepared. Skips with one line where no scratch XFS can be
// made (not root, no loop devices, a kernel older than 6.10). Tagged "xfs".
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>
#include <functional>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_prepare_testing.h"
#include "vfs/posix_fs.h"
#include "vfs/scratch_fs.h"
#include "vfs/xfs_exchange.h"

namespace journalkv::vfs {
namespace {

constexpr OpenOptions kOpen{OpenMode::kReadWrite, FileKind::kDatabase};

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  int got_major = 0, got_minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &got_major, &got_minor) == 2 &&
         (got_major > major || (got_major == major && got_minor >= minor));
}

class XfsPrepareTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    why_not_ = new std::string(ScratchFs::CannotMakeReason(ScratchFs::Kind::kXfs));
    if (why_not_->empty() && !KernelAtLeast(6, 10)) *why_not_ = "needs Linux 6.10+";
    if (!why_not_->empty()) return;
    absl::StatusOr<std::unique_ptr<ScratchFs>> xfs = ScratchFs::Make(ScratchFs::Kind::kXfs);
    if (!xfs.ok()) {
      *why_not_ = std::string(xfs.status().message());
      return;
    }
    xfs_ = xfs->release();
  }
  static void TearDownTestSuite() {
    delete xfs_;
    xfs_ = nullptr;
    delete why_not_;
  }
  void SetUp() override {
    if (!why_not_->empty()) GTEST_SKIP() << "real XFS test skipped: " << *why_not_;
    static int n = 0;
    dir_ = absl::StrCat(xfs_->mount(), "/p", n++);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  }

  static std::string* why_not_;
  static ScratchFs* xfs_;
  PosixFileSystem fs_;
  std::string dir_;
};
std::string* XfsPrepareTest::why_not_ = nullptr;
ScratchFs* XfsPrepareTest::xfs_ = nullptr;

TEST_F(XfsPrepareTest, KeepsTheContract) {
  auto file = fs_.Open(dir_ + "/probe", kPrepareDbOpen);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ((*file)->atomic_write_kind(), AtomicWriteKind::kXfsExchangeRange);
  const uint64_t block = (*file)->atomic_write_block_size();
  RunPreparedCommitContract(fs_, dir_, block);
  RunPreparedDiscardContract(fs_, dir_, block);
}

TEST_F(XfsPrepareTest, AProcessKilledAfterItsPrepareLeavesABatchAnotherCommits) {
  const std::string path = dir_ + "/db";
  const uint64_t block = 4096;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PosixFileSystem fs;
    LeavePreparedBatch(fs, path, block, 3, "from a dead process");
    ::kill(::getpid(), SIGKILL);  // dies with the prepared batch in place
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  auto file = fs_.Open(path, kOpen);
  ASSERT_TRUE(file.ok());
  auto note = (*file)->PreparedBatch();
  ASSERT_TRUE(note.ok());
  ASSERT_EQ(note->value_or("(none)"), "from a dead process");
  EXPECT_EQ(BatchTestReadAll(**file), BatchTestPages(block, 3, 0x10));
  ASSERT_TRUE((*file)->CommitPreparedBatch(BatchSync::kDurable).ok());
  std::vector<uint8_t> want = BatchTestPages(block, 3, 0x10);
  const std::vector<uint8_t> fresh = BatchTestPages(block, 2, 0x70);
  want.resize(block * 5, 0);
  std::copy(fresh.begin(), fresh.begin() + block, want.begin() + block);
  std::copy(fresh.begin() + block, fresh.end(), want.begin() + block * 4);
  EXPECT_EQ(BatchTestReadAll(**file), want);
  struct stat st = {};
  ASSERT_EQ(::stat(ShadowPath(path).c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0) << "the shadow is emptied once the prepared batch is applied";
}

// A trailer a crash cut short (one byte of its checksum wrong, or the shadow cut inside it)
// is no prepared batch: the next batch empties the shadow as any leftover.
TEST_F(XfsPrepareTest, ATornTrailerIsNoPreparedBatch) {
  const std::string path = dir_ + "/torn";
  LeavePreparedBatch(fs_, path, 4096, 2, "torn");
  const std::string shadow = ShadowPath(path);
  struct stat st = {};
  ASSERT_EQ(::stat(shadow.c_str(), &st), 0);
  {
    auto s = fs_.Open(shadow, OpenOptions{OpenMode::kReadWrite, FileKind::kOther});
    ASSERT_TRUE(s.ok());
    const uint8_t junk[1] = {0xEE};
    ASSERT_TRUE((*s)->Write(st.st_size - 1, junk).ok());
  }
  auto file = fs_.Open(path, kOpen);
  ASSERT_TRUE(file.ok());
  auto note = (*file)->PreparedBatch();
  ASSERT_TRUE(note.ok());
  EXPECT_FALSE(note->has_value());
  auto batch = (*file)->BeginAtomicBatch();
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE((*batch)->Abort().ok());
  ASSERT_EQ(::stat(shadow.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(BatchTestReadAll(**file), BatchTestPages(4096, 2, 0x10));
}


// The floor of a commit across two files without the engine (issue 46's measurement): the
// system calls of pager/atomic_across.h's commit and nothing else, timed, printed, never
// asserted. Each transaction: in each file a batch of 11 scattered 4 KiB pages (page 1 and ten
// leaves: the shape of jkvbench's multidb2, ten puts into each database), prepared (one
// fdatasync of its shadow), both at once on two threads; a 4 KiB record overwritten and
// fdatasync'd (the commit point); both batches committed durably (the exchange with DSYNC), at
// once on two threads. Beside it, at the same moment: each step alone, and what WAL and WAL2
// pay for the same transaction committed database by database (11 pages appended to a log
// file and fdatasync'd, once per file, in turn).
TEST_F(XfsPrepareTest, FloorOfACommitAcrossTwoFiles) {
  std::vector<std::unique_ptr<File>> files;
  for (const char* name : {"a", "b"}) {
    auto file = fs_.Open(absl::StrCat(dir_, "/", name), kPrepareDbOpen);
    ASSERT_TRUE(file.ok()) << file.status();
    JKV_ASSERT_OK((*file)->Write(0, std::vector<uint8_t>(256 * 4096, 1)));
    JKV_ASSERT_OK((*file)->Sync(SyncKind::kData));
    files.push_back(*std::move(file));
  }
  auto record = fs_.Open(dir_ + "/record", kPrepareDbOpen);
  ASSERT_TRUE(record.ok());
  JKV_ASSERT_OK((*record)->Write(0, std::vector<uint8_t>(4096, 0)));
  JKV_ASSERT_OK((*record)->Sync(SyncKind::kData));
  std::vector<uint8_t> page(4096, 2);
  constexpr int kCommits = 300;
  auto rate = [](auto start) {
    return kCommits /
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Runs f(0) and f(1) at once, as the engine's commit does on a real file system.
  auto both = [](const std::function<absl::Status(int)>& f) {
    absl::Status s1;
    std::thread other([&] { s1 = f(1); });
    absl::Status s0 = f(0);
    other.join();
    return s0.ok() ? s1 : s0;
  };
  std::vector<std::unique_ptr<AtomicBatch>> batches(2);
  auto prepare = [&](int f, int i) -> absl::Status {
    JKV_ASSIGN_OR_RETURN(batches[f], files[f]->BeginAtomicBatch());
    JKV_RETURN_IF_ERROR(batches[f]->Write(0, page));
    for (uint64_t leaf = 0; leaf < 10; ++leaf) {
      page[0] = static_cast<uint8_t>(i);
      JKV_RETURN_IF_ERROR(batches[f]->Write((1 + leaf * 25 + (i * 7 + leaf) % 25) * 4096, page));
    }
    return batches[f]->Prepare("note");
  };
  auto commit = [&](int f) {
    absl::Status s = batches[f]->Commit(BatchSync::kDurable);
    batches[f].reset();
    return s;
  };
  auto write_record = [&](int i) {
    std::vector<uint8_t> bytes(4096, static_cast<uint8_t>(i));
    JKV_RETURN_IF_ERROR((*record)->Write(0, bytes));
    return (*record)->Sync(SyncKind::kData);
  };
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCommits; ++i) {
    JKV_ASSERT_OK(both([&](int f) { return prepare(f, i); }));
    JKV_ASSERT_OK(write_record(i));
    JKV_ASSERT_OK(both(commit));
  }
  const double across = rate(start);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCommits; ++i) {
    JKV_ASSERT_OK(both([&](int f) { return prepare(f, i); }));
    for (auto& batch : batches) {
      JKV_ASSERT_OK(batch->Abort());
      batch.reset();
    }
  }
  const double prepares = rate(start);
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCommits; ++i) JKV_ASSERT_OK(write_record(i));
  const double records = rate(start);
  double commits_sum = 0;
  for (int i = 0; i < kCommits; ++i) {
    JKV_ASSERT_OK(both([&](int f) { return prepare(f, i); }));
    const auto t = std::chrono::steady_clock::now();
    JKV_ASSERT_OK(both(commit));
    commits_sum += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  // WAL's way: 11 pages appended to each file's log and fdatasync'd, database by database.
  std::vector<std::unique_ptr<File>> logs;
  for (const char* name : {"a-log", "b-log"}) {
    auto log = fs_.Open(absl::StrCat(dir_, "/", name), kPrepareDbOpen);
    ASSERT_TRUE(log.ok());
    logs.push_back(*std::move(log));
  }
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCommits; ++i) {
    for (auto& log : logs) {
      for (int p = 0; p < 11; ++p) JKV_ASSERT_OK(log->Write((i * 11 + p) * 4096ull, page));
      JKV_ASSERT_OK(log->Sync(SyncKind::kData));
    }
  }
  const double wal = rate(start);
  std::printf(
      "commit across two files on xfs, no engine: %.0f/s (both prepares at once %.0f/s, the "
      "record's overwrite + fdatasync %.0f/s, both durable exchanges at once %.0f/s); WAL's "
      "way (11 pages appended + fdatasync, file by file): %.0f/s\n",
      across, prepares, records, kCommits / commits_sum, wal);
}

}  // namespace
}  // namespace journalkv::vfs
