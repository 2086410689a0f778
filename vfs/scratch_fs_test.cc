// Tests of vfs::ScratchFs and the device counters (vfs/scratch_fs.h). The names and the
// superblock edit run everywhere; the scratch file systems themselves need root, loop devices
// and mounts, and the test says in one line why it skips where they are refused. Tagged "xfs".
#include "vfs/scratch_fs.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  int got_major = 0, got_minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &got_major, &got_minor) == 2 &&
         (got_major > major || (got_major == major && got_minor >= minor));
}

TEST(ScratchFsTest, KindsHaveNamesAndUnknownNamesAreRefused) {
  for (ScratchFs::Kind k :
       {ScratchFs::Kind::kXfs, ScratchFs::Kind::kXfsNoExchange, ScratchFs::Kind::kExt4}) {
    JKV_ASSERT_OK_AND_ASSIGN(ScratchFs::Kind back, ScratchFs::ParseKind(ScratchFs::KindName(k)));
    EXPECT_EQ(back, k);
  }
  EXPECT_THAT(ScratchFs::ParseKind("btrfs"),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown file system \"btrfs\""));
}

// The superblock edit: incompat bit 0x40 set at byte 216 (big-endian), the rest of the word
// kept, and a CRC32C at byte 224 that XFS accepts. The CRC is checked against a known value:
// CRC32C of 512 bytes of a fixed pattern, computed independently.
TEST(ScratchFsTest, TheExchangeRangeFeatureBitIsSetWithItsChecksum) {
  const std::string image = absl::StrCat(::testing::TempDir(), "/sb");
  const auto write_image = [&](const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen(image.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  };
  // The checksum covers the superblock's whole sector (sb_sectsize): 512 bytes, or 4096 as
  // `mkfs.xfs -s size=4096` makes it (the power-cut tests' guests).
  for (const size_t sector_size : {size_t{512}, size_t{4096}}) {
    SCOPED_TRACE(sector_size);
    std::vector<uint8_t> sector(sector_size, 0);
    std::memcpy(sector.data(), "XFSB", 4);
    sector[102] = static_cast<uint8_t>(sector_size >> 8);
    sector[103] = static_cast<uint8_t>(sector_size);
    sector[219] = 0x01;       // an incompat bit already set stays set
    sector[sector_size - 1] = 0x5a;  // a byte the checksum must cover
    write_image(sector);
    ASSERT_THAT(ScratchFs::SetExchangeRangeFeature(image), IsOk());
    std::vector<uint8_t> out(sector_size);
    const int fd = ::open(image.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(sector_size));
    ::close(fd);
    EXPECT_EQ(out[216], 0);
    EXPECT_EQ(out[217], 0);
    EXPECT_EQ(out[218], 0);
    EXPECT_EQ(out[219], 0x41);
    // Recomputing the checksum with its own field zeroed gives it back.
    uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= uint32_t{out[224 + i]} << (8 * i);
    std::memset(out.data() + 224, 0, 4);
    uint32_t crc = 0xFFFFFFFF;
    for (uint8_t b : out) {
      crc ^= b;
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78 & (0u - (crc & 1)));
    }
    EXPECT_EQ(stored, ~crc);
  }
  // Not an XFS image: refused.
  write_image(std::vector<uint8_t>(512, 0));
  EXPECT_THAT(ScratchFs::SetExchangeRangeFeature(image),
              StatusIs(absl::StatusCode::kInvalidArgument, "no XFS superblock"));
}

TEST(ScratchFsTest, APathNotOnABlockDeviceHasNoDeviceCounters) {
  // /proc is not on a block device.
  EXPECT_THAT(DeviceStatPath("/proc/self"),
              StatusIs(absl::StatusCode::kNotFound, "not on a block device"));
}

// A real scratch file system of each kind: mounted, writable, on its own loop device, whose
// bytes written grow by at least what a synced file write put there; gone after the destructor.
TEST(ScratchFsTest, ScratchFileSystemsMountAndCountTheirDevicesWrites) {
  for (ScratchFs::Kind kind : {ScratchFs::Kind::kXfs, ScratchFs::Kind::kExt4}) {
    if (std::string why = ScratchFs::CannotMakeReason(kind); !why.empty()) {
      GTEST_SKIP() << "scratch file system test skipped: " << why;
    }
    absl::StatusOr<std::unique_ptr<ScratchFs>> made = ScratchFs::Make(kind);
    if (!made.ok()) GTEST_SKIP() << "scratch file system test skipped: " << made.status();
    std::unique_ptr<ScratchFs> fs = *std::move(made);
    SCOPED_TRACE(ScratchFs::KindName(kind));
    // Atomic batches: on the XFS with exchange-range where the kernel has it (6.10+), never on
    // ext4.
    if (kind == ScratchFs::Kind::kExt4) {
      EXPECT_FALSE(HasAtomicBatches(fs->mount()));
    } else if (KernelAtLeast(6, 10)) {
      EXPECT_TRUE(HasAtomicBatches(fs->mount()));
    }
    JKV_ASSERT_OK_AND_ASSIGN(std::string stat_path, DeviceStatPath(fs->mount()));
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t before, DeviceBytesWritten(stat_path));
    const std::string file = fs->mount() + "/f";
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> data(1 << 20, 'x');
    ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t after, DeviceBytesWritten(stat_path));
    EXPECT_GE(after - before, data.size()) << "the device saw less than the synced megabyte";
    const std::string mount = fs->mount();
    fs.reset();
    EXPECT_NE(::access(mount.c_str(), F_OK), 0) << "left behind: " << mount;
  }
}

}  // namespace
}  // namespace journalkv::vfs
