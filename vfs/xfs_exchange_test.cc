// Tests of the XFS exchange-range atomic batch (xfs_exchange.h) on a real XFS: a scratch XFS
// with the exchange-range feature (vfs/scratch_fs.h: a 300 MB image attached with
// `losetup --direct-io=on` and mounted); and a second one without the feature, where the batch
// must be refused. Everything is undone (umount, losetup -d, rm) at the end, also after a
// failure.
//
// Skips with one line where it cannot run: not root, mkfs.xfs/losetup/mount missing, a loop
// device or mount refused (a sandbox), or a kernel older than 6.10. Tagged "xfs".
#include "vfs/xfs_exchange.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_batch_testing.h"
#include "vfs/posix_fs.h"
#include "vfs/scratch_fs.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

constexpr OpenOptions kDbCreate{OpenMode::kCreate, FileKind::kDatabase};

// Both scratch file systems, made once for the suite (vfs/scratch_fs.h): XFS with the
// exchange-range feature, and without it.
struct Disks {
  std::unique_ptr<ScratchFs> with;
  std::unique_ptr<ScratchFs> without;
  std::string why_not;  // non-empty: skip, saying this
};

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  int got_major = 0, got_minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &got_major, &got_minor) == 2 &&
         (got_major > major || (got_major == major && got_minor >= minor));
}

class XfsExchangeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    disks_ = new Disks();
    disks_->why_not = MakeDisks(*disks_);
  }
  static std::string MakeDisks(Disks& d) {
    if (std::string why = ScratchFs::CannotMakeReason(ScratchFs::Kind::kXfs); !why.empty()) {
      return why;
    }
    if (!KernelAtLeast(6, 10)) return "needs Linux 6.10+ (XFS exchange-range)";
    absl::StatusOr<std::unique_ptr<ScratchFs>> with = ScratchFs::Make(ScratchFs::Kind::kXfs);
    if (!with.ok()) return std::string(with.status().message());
    d.with = *std::move(with);
    absl::StatusOr<std::unique_ptr<ScratchFs>> without =
        ScratchFs::Make(ScratchFs::Kind::kXfsNoExchange);
    if (!without.ok()) return std::string(without.status().message());
    d.without = *std::move(without);
    return "";
  }
  static void TearDownTestSuite() {
    delete disks_;
    disks_ = nullptr;
  }
  void SetUp() override {
    if (!disks_->why_not.empty()) GTEST_SKIP() << "real XFS test skipped: " << disks_->why_not;
    static int n = 0;
    dir_ = absl::StrCat(disks_->with->mount(), "/t", n++);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static uint64_t FileSize(const std::string& path, uint64_t* blocks = nullptr) {
    struct stat st = {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    if (blocks != nullptr) *blocks = st.st_blocks;
    return st.st_size;
  }

  static Disks* disks_;
  PosixFileSystem fs_;
  std::string dir_;
};

Disks* XfsExchangeTest::disks_ = nullptr;

TEST_F(XfsExchangeTest, DetectedAndKeepsTheContract) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  ASSERT_EQ(file->atomic_write_kind(), AtomicWriteKind::kXfsExchangeRange);
  EXPECT_EQ(file->atomic_write_block_size(), 4096u);
  RunAtomicBatchContract(fs_, dir_, file->atomic_write_block_size());
  uint64_t blocks = 0;
  EXPECT_EQ(FileSize(Path("batch_contract-shadow"), &blocks), 0u) << "the shadow is emptied";
  EXPECT_EQ(blocks, 0u);
}

TEST_F(XfsExchangeTest, APartialBlockWriteIsRefusedNamingTheSizes) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  EXPECT_THAT(batch->Write(0, std::vector<uint8_t>(512, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "atomic batch write of 512 bytes at offset 0: not whole blocks of the "
                       "file system's 4096 bytes"));
  EXPECT_THAT(batch->Write(512, std::vector<uint8_t>(4096, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "4096 bytes at offset 512"));
}

TEST_F(XfsExchangeTest, ALeftoverShadowIsEmptiedAndNeverApplied) {
  const std::vector<uint8_t> old = BatchTestPages(4096, 4, 0x10);
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  JKV_ASSERT_OK(file->Write(0, old));
  {
    // A dead process's batch: pages 1 and 3 written into the shadow, never committed.
    JKV_ASSERT_OK_AND_ASSIGN(auto shadow, fs_.Open(Path("db-shadow"), kDbCreate));
    JKV_ASSERT_OK(shadow->Write(4096, std::vector<uint8_t>(4096, 0xEE)));
    JKV_ASSERT_OK(shadow->Write(3 * 4096, std::vector<uint8_t>(4096, 0xEE)));
  }
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  EXPECT_EQ(FileSize(Path("db-shadow")), 0u);
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(4096, 0xAB)));
  JKV_ASSERT_OK(batch->Write(2 * 4096, std::vector<uint8_t>(4096, 0xAC)));
  JKV_ASSERT_OK(batch->Commit(BatchSync::kDurable));
  std::vector<uint8_t> expected = old;
  std::fill(expected.begin(), expected.begin() + 4096, 0xAB);
  std::fill(expected.begin() + 2 * 4096, expected.begin() + 3 * 4096, 0xAC);
  EXPECT_EQ(BatchTestReadAll(*file), expected);
  EXPECT_EQ(FileSize(Path("db-shadow")), 0u);
}

TEST_F(XfsExchangeTest, CommitsAreCountedAndAbortEmptiesTheShadow) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  JKV_ASSERT_OK(file->Write(0, BatchTestPages(4096, 2, 1)));
  const IoCounts before = fs_.stats().Snapshot(FileKind::kDatabase);
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(4096, std::vector<uint8_t>(4096, 9)));
  EXPECT_GT(FileSize(Path("db-shadow")), 0u);
  JKV_ASSERT_OK(batch->Abort());
  EXPECT_EQ(FileSize(Path("db-shadow")), 0u);
  EXPECT_EQ(BatchTestReadAll(*file), BatchTestPages(4096, 2, 1));
  JKV_ASSERT_OK_AND_ASSIGN(batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(4096, std::vector<uint8_t>(4096, 9)));
  JKV_ASSERT_OK(batch->Commit(BatchSync::kDurable));
  const IoCounts after = fs_.stats().Snapshot(FileKind::kDatabase);
  EXPECT_EQ(after.atomic_commits - before.atomic_commits, 1u);
  EXPECT_EQ(after.durable_atomic_commits - before.durable_atomic_commits, 1u);
  EXPECT_EQ(after.syncs, before.syncs) << "a commit is no fsync";
}

TEST_F(XfsExchangeTest, RefusedOnAnXfsWithoutTheFeature) {
  const std::string path = disks_->without->mount() + "/db";
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(path, kDbCreate));
  EXPECT_EQ(file->atomic_write_kind(), AtomicWriteKind::kNone);
  EXPECT_THAT(file->BeginAtomicBatch(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "(xfs without the exchange-range feature: make it with mkfs.xfs -i "
                       "exchange=1 (xfsprogs 6.10+) on Linux 6.10+); it needs XFS"));
}

// A disk that fills in the middle of a batch: the shadow's write fails with ResourceExhausted
// naming the shadow, the batch ends with nothing applied (the database byte for byte as it
// was), and once space is back a batch commits.
TEST_F(XfsExchangeTest, AFullDiskInTheMiddleOfABatchLeavesTheDatabaseAsItWas) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  JKV_ASSERT_OK(file->Write(0, BatchTestPages(4096, 4, 1)));
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  {
    // The shadow exists before the disk fills (a first batch makes it): a new inode needs room.
    JKV_ASSERT_OK_AND_ASSIGN(auto first, file->BeginAtomicBatch());
    JKV_ASSERT_OK(first->Abort());
  }
  // Everything free but 256 KiB goes to a filler file, removed however the test ends.
  struct statvfs st = {};
  ASSERT_EQ(::statvfs(dir_.c_str(), &st), 0);
  const uint64_t free_bytes = uint64_t{st.f_bavail} * st.f_frsize;
  ASSERT_GT(free_bytes, uint64_t{1} << 20);
  const std::string filler = Path("filler");
  struct RemoveFiller {
    std::string path;
    ~RemoveFiller() { ::unlink(path.c_str()); }
  } remove_filler{filler};
  const int fd = ::open(filler.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fallocate(fd, 0, 0, static_cast<off_t>(free_bytes - (256 << 10))), 0);
  ::close(fd);
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  absl::Status s;
  for (uint64_t p = 0; p < 1024 && s.ok(); ++p) {  // 4 MiB into a shadow with 256 KiB of room
    s = batch->Write(p * 4096, std::vector<uint8_t>(4096, 7));
  }
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted, "-shadow"));
  (void)batch->Abort();  // the batch may have ended with the failed write
  batch.reset();
  EXPECT_EQ(BatchTestReadAll(*file), BatchTestPages(4096, 4, 1)) << "a failed batch applied";
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  JKV_ASSERT_OK_AND_ASSIGN(batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(4096, std::vector<uint8_t>(4096, 9)));
  JKV_ASSERT_OK(batch->Commit(BatchSync::kDurable));
  std::vector<uint8_t> want = BatchTestPages(4096, 4, 1);
  std::fill(want.begin() + 4096, want.begin() + 8192, 9);
  EXPECT_EQ(BatchTestReadAll(*file), want);
}

// The cost of a commit of 3 scattered 4 KiB pages (the experiment, through the File
// layer), printed; not asserted (a loop device's speed is the host's).
TEST_F(XfsExchangeTest, CommitRateOfThreeScatteredPages) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs_.Open(Path("db"), kDbCreate));
  JKV_ASSERT_OK(file->Write(0, std::vector<uint8_t>(256 * 4096, 1)));
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  std::vector<uint8_t> page(4096, 2);
  for (BatchSync sync : {BatchSync::kDurable, BatchSync::kAtomicOnly}) {
    constexpr int kCommits = 1000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCommits; ++i) {
      JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
      for (uint64_t p :
           {uint64_t{0}, uint64_t(1 + (i * 7) % 120), uint64_t(130 + (i * 13) % 120)}) {
        page[0] = static_cast<uint8_t>(i);
        JKV_ASSERT_OK(batch->Write(p * 4096, page));
      }
      JKV_ASSERT_OK(batch->Commit(sync));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "xfs exchange-range, %s: %d commits of 3 scattered 4 KiB pages in %.3f s: %.0f commits/s\n",
        sync == BatchSync::kDurable ? "durable (DSYNC)" : "atomic only", kCommits, seconds,
        kCommits / seconds);
  }
  // The floor beside it, at the same moment: the same pages written in place and fdatasync'd
  // (no atomicity at all).
  constexpr int kCommits = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCommits; ++i) {
    for (uint64_t p : {uint64_t{0}, uint64_t(1 + (i * 7) % 120), uint64_t(130 + (i * 13) % 120)}) {
      JKV_ASSERT_OK(file->Write(p * 4096, page));
    }
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("in place + fdatasync (not atomic): %d commits in %.3f s: %.0f commits/s\n", kCommits,
              seconds, kCommits / seconds);
}

}  // namespace
}  // namespace journalkv::vfs
