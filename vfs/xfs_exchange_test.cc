// Tests of the XFS exchange-range atomic batch (xfs_exchange.h) on a real XFS: a 300 MB image
// made by mkfs.xfs, given the exchange-range feature (see SetExchangeRangeFeature), attached
// with `losetup --direct-io=on` and mounted; and a second image without the feature, where
// the batch must be refused. Everything is undone (umount, losetup -d, rm) at the end, also
// after a failure.
//
// Skips with one line where it cannot run: not root, mkfs.xfs/losetup/mount missing, a loop
// device or mount refused (a sandbox), or a kernel older than 6.10. Tagged "xfs".
#include "vfs/xfs_exchange.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

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

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

constexpr OpenOptions kDbCreate{OpenMode::kCreate, FileKind::kDatabase};

// Runs a shell command; true when it exits 0. `out` gets its first line of output.
bool Shell(const std::string& command, std::string* out = nullptr) {
  FILE* p = ::popen(absl::StrCat(command, " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return false;
  // Reads all of the output (closing the pipe early could kill the command with SIGPIPE).
  std::string first;
  char line[512];
  for (bool first_line = true; std::fgets(line, sizeof(line), p) != nullptr; first_line = false) {
    if (first_line) first = line;
  }
  const int status = ::pclose(p);
  if (out != nullptr) {
    *out = first;
    while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  }
  return status == 0;
}

// CRC32C (Castagnoli, reflected, initial and final value 0xFFFFFFFF), bit by bit: XFS's
// metadata checksum. Slow, but it checksums one sector.
uint32_t Crc32c(const uint8_t* data, size_t size) {
  uint32_t crc = 0xFFFFFFFF;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78 & (0u - (crc & 1)));
  }
  return ~crc;
}

// Sets the exchange-range feature (incompat bit 0x40) in the primary superblock of the XFS
// image at `image`, as `xfs_repair -c exchange=1` of xfsprogs 6.10+ would (Debian 12's 6.1
// cannot): the big-endian incompat word at byte 216, then the superblock's CRC32C over its
// 512-byte sector with the CRC field zeroed, stored little-endian at byte 224. Empty on
// success, else why not.
std::string SetExchangeRangeFeature(const std::string& image) {
  const int fd = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return "cannot open the image";
  uint8_t sector[512];
  std::string why;
  if (::pread(fd, sector, sizeof(sector), 0) != static_cast<ssize_t>(sizeof(sector))) {
    why = "cannot read the superblock";
  } else if (std::memcmp(sector, "XFSB", 4) != 0) {
    why = "no XFS superblock";
  } else {
    uint32_t incompat = (uint32_t{sector[216]} << 24) | (uint32_t{sector[217]} << 16) |
                        (uint32_t{sector[218]} << 8) | sector[219];
    incompat |= 0x40;
    for (int i = 0; i < 4; ++i) sector[216 + i] = static_cast<uint8_t>(incompat >> (24 - 8 * i));
    std::memset(sector + 224, 0, 4);
    const uint32_t crc = Crc32c(sector, sizeof(sector));
    for (int i = 0; i < 4; ++i) sector[224 + i] = static_cast<uint8_t>(crc >> (8 * i));
    if (::pwrite(fd, sector, sizeof(sector), 0) != static_cast<ssize_t>(sizeof(sector)) ||
        ::fsync(fd) != 0) {
      why = "cannot write the superblock";
    }
  }
  ::close(fd);
  return why;
}

// A scratch XFS: an image in `dir`, attached with direct I/O and mounted at `dir`/mnt.
class ScratchXfs {
 public:
  // Empty on success, else the reason to skip.
  std::string Make(const std::string& dir, const std::string& name, bool exchange_range) {
    image_ = absl::StrCat(dir, "/", name, ".img");
    mount_ = absl::StrCat(dir, "/", name);
    if (!Shell(absl::StrCat("mkdir -p ", mount_, " && truncate -s 300M ", image_,
                            " && mkfs.xfs -q -f ", image_))) {
      return "mkfs.xfs of a 300 MB image failed";
    }
    if (exchange_range) {
      if (std::string why = SetExchangeRangeFeature(image_); !why.empty()) return why;
    }
    if (!Shell(absl::StrCat("losetup --direct-io=on -f --show ", image_), &loop_) ||
        loop_.empty()) {
      loop_.clear();
      return "losetup --direct-io=on refused (no loop devices here?)";
    }
    if (!Shell(absl::StrCat("mount ", loop_, " ", mount_))) return "mount of the xfs image refused";
    mounted_ = true;
    return "";
  }
  ~ScratchXfs() {
    if (mounted_) Shell(absl::StrCat("umount ", mount_));
    if (!loop_.empty()) Shell(absl::StrCat("losetup -d ", loop_));
  }
  const std::string& mount() const { return mount_; }

 private:
  std::string image_, mount_, loop_;
  bool mounted_ = false;
};

// Both scratch file systems, made once for the suite.
struct Disks {
  std::string dir;
  std::unique_ptr<ScratchXfs> with = std::make_unique<ScratchXfs>();
  std::unique_ptr<ScratchXfs> without = std::make_unique<ScratchXfs>();
  std::string why_not;  // non-empty: skip, saying this
  ~Disks() {
    with.reset();  // unmounted and detached before their images are removed
    without.reset();
    if (!dir.empty()) Shell(absl::StrCat("rm -rf ", dir));
  }
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
    if (::geteuid() != 0) return "needs root (loop devices and mounts)";
    if (!KernelAtLeast(6, 10)) return "needs Linux 6.10+ (XFS exchange-range)";
    // mkfs.xfs, losetup and mount live in /usr/sbin, which a test's PATH may lack.
    const char* path = std::getenv("PATH");
    ::setenv("PATH",
             absl::StrCat("/usr/sbin:/sbin:", path != nullptr ? path : "/usr/bin:/bin").c_str(), 1);
    if (!Shell("command -v mkfs.xfs && command -v losetup && command -v mount")) {
      return "needs mkfs.xfs (Debian: xfsprogs), losetup and mount";
    }
    // Not under $TEST_TMPDIR: a test killed before its cleanup would leave a mount inside
    // Bazel's tree.
    char dir[] = "/tmp/jkv_xfs_XXXXXX";
    if (::mkdtemp(dir) == nullptr) return "mkdtemp failed";
    d.dir = dir;
    if (std::string why = d.with->Make(d.dir, "exchange", true); !why.empty()) return why;
    return d.without->Make(d.dir, "plain", false);
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
