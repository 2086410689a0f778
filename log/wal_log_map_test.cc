// A log read through its map (WalLog::Open's map_bytes; wal/wal_connection.h Q1, Q4) on the
// real file system: every frame reads the bytes pread reads, also frames appended after the
// map was made (growth without a remap) and frames past the map (preads); a log cut by another
// descriptor under the map faults into the pread, whose answer (DataLoss "missing") is the
// one a log without the map gives, and the log reads again once it is written again.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "vfs/file_system_testing.h"
#include "vfs/posix_fs.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;  // the map looks the size up before each copy: no fault (read_map.cc)
#else
constexpr bool kTsan = false;
#endif

constexpr uint32_t kPageSize = 4096;
// The map covers the header and the first 30 frames whole (frames are 4096 + 24 bytes); the
// 31st crosses its end, and every later one is a pread.
constexpr uint64_t kMapBytes = 32 * 4096;
constexpr uint32_t kFrames = 60;

std::vector<uint8_t> ImageOf(uint32_t frame, uint32_t page_no) {
  std::vector<uint8_t> image(kPageSize);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(frame * 37 + i * 7);
  base::EncodeFixed32(image.data(), frame);
  base::EncodeFixed32(image.data() + 4, page_no);
  base::EncodeFixed64(image.data() + image.size() - 8,
                      ImageChecksum(page_no, absl::MakeConstSpan(image)));
  return image;
}

class WalLogMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A small growth step, so that frames appended later lie past the size the map first saw.
    JKV_ASSERT_OK_AND_ASSIGN(mapped_, WalLog::Open(&fs_, path_, /*read_only=*/false,
                                                   kMinGrowBytes, kMapBytes));
    JKV_ASSERT_OK_AND_ASSIGN(plain_, WalLog::Open(&fs_, path_, /*read_only=*/true));
    header_ = WalHeader{kPageSize, 1, 0xa1, 0xb1};
    JKV_ASSERT_OK_AND_ASSIGN(header_.checksum, mapped_->WriteHeader(header_));
    chain_ = header_.checksum;
  }

  // Appends frames next_..next_+n-1 (one transaction, committed) through the mapped log.
  void Append(uint32_t n) {
    std::vector<std::vector<uint8_t>> images;
    std::vector<FramePage> pages;
    for (uint32_t i = 0; i < n; ++i) images.push_back(ImageOf(next_ + i, 2 + (next_ + i) % 9));
    for (uint32_t i = 0; i < n; ++i) pages.push_back({PageNo(2 + (next_ + i) % 9), images[i]});
    JKV_ASSERT_OK_AND_ASSIGN(chain_, mapped_->Append(header_, next_, chain_, pages, 11));
    next_ += n;
  }

  // Frame `frame` read through the map and with pread: equal, and the frame's own image.
  void ExpectFrameReadsTheSame(uint32_t frame) {
    std::vector<uint8_t> through_map(kPageSize), by_pread(kPageSize);
    ASSERT_THAT(mapped_->ReadPage(frame, kPageSize, absl::MakeSpan(through_map)), IsOk());
    ASSERT_THAT(plain_->ReadPage(frame, kPageSize, absl::MakeSpan(by_pread)), IsOk());
    ASSERT_EQ(through_map, by_pread) << "frame " << frame;
    ASSERT_EQ(through_map, ImageOf(frame, 2 + frame % 9)) << "frame " << frame;
  }

  vfs::ScopedTempDir dir_;
  vfs::PosixFileSystem fs_;
  std::string path_ = absl::StrCat(dir_.path(), "/x.db-wal");
  std::unique_ptr<WalLog> mapped_;
  std::unique_ptr<WalLog> plain_;
  WalHeader header_;
  uint64_t chain_ = 0;
  uint32_t next_ = 1;
};

TEST_F(WalLogMapTest, FramesReadThroughTheMapAreThePreadBytesAlsoAfterGrowth) {
  Append(4);
  for (uint32_t f = 1; f < next_; ++f) ExpectFrameReadsTheSame(f);
  const vfs::ReadMapCounters first = mapped_->map_counters();
  EXPECT_GE(first.copies, 4u);
  // The log grows past the size the map has seen, and past the map: no remap, the new frames
  // read through the same map (E3, E4), the ones past it with pread.
  for (int round = 0; round < 8; ++round) Append(7);
  ASSERT_GE(next_ - 1, kFrames - 10);
  for (uint32_t f = 1; f < next_; ++f) ExpectFrameReadsTheSame(f);
  const vfs::ReadMapCounters after = mapped_->map_counters();
  EXPECT_GE(after.copies - first.copies, 30u);  // every frame inside the map
  EXPECT_GT(after.fallbacks, 0u);               // the frames past it
  EXPECT_EQ(after.faults, 0u);
  // A frame overwritten in place (a restart's next generation writes over old frames) reads
  // its new bytes through the map.
  header_ = WalHeader{kPageSize, 2, 0xa2, 0xb2};
  JKV_ASSERT_OK_AND_ASSIGN(header_.checksum, mapped_->WriteHeader(header_));
  chain_ = header_.checksum;
  next_ = 1;
  std::vector<uint8_t> image = ImageOf(500, 3);
  FramePage page{PageNo(3), image};
  JKV_ASSERT_OK_AND_ASSIGN(chain_, mapped_->Append(header_, 1, chain_, {&page, 1}, 11));
  std::vector<uint8_t> read(kPageSize);
  ASSERT_THAT(mapped_->ReadPage(1, kPageSize, absl::MakeSpan(read)), IsOk());
  EXPECT_EQ(read, image);
  // And the scan (also through the map) finds that generation's one frame.
  JKV_ASSERT_OK_AND_ASSIGN(ScanResult scan, mapped_->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, 1u);
}

// Q4: another descriptor cuts the log under the map (a TRUNCATE checkpoint or a size limit of
// another connection). The copy faults (SIGBUS, caught), the read goes to pread, and the
// answer is pread's: DataLoss naming the missing frame. No crash; written again, it reads.
TEST_F(WalLogMapTest, ALogCutByAnotherDescriptorReadsAsPreadDoesNotACrash) {
  Append(20);
  for (uint32_t f = 1; f < next_; ++f) ExpectFrameReadsTheSame(f);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> other,
                             fs_.Open(path_, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}));
    ASSERT_THAT(other->Truncate(kWalHeaderSize), IsOk());
  }
  for (uint32_t f : {1u, 7u, 20u}) {
    std::vector<uint8_t> out(kPageSize);
    EXPECT_THAT(mapped_->ReadPage(f, kPageSize, absl::MakeSpan(out)),
                StatusIs(absl::StatusCode::kDataLoss, "is missing"))
        << "frame " << f;
    EXPECT_THAT(plain_->ReadPage(f, kPageSize, absl::MakeSpan(out)),
                StatusIs(absl::StatusCode::kDataLoss, "is missing"));
  }
  const vfs::ReadMapCounters cut = mapped_->map_counters();
  if (!kTsan) {
    EXPECT_GT(cut.faults, 0u) << "the cut never reached the map";
  }
  // The log is written again (the next generation): the map reads the new frames.
  header_ = WalHeader{kPageSize, 2, 0xa2, 0xb2};
  JKV_ASSERT_OK_AND_ASSIGN(header_.checksum, mapped_->WriteHeader(header_));
  chain_ = header_.checksum;
  next_ = 1;
  Append(12);
  for (uint32_t f = 1; f < next_; ++f) ExpectFrameReadsTheSame(f);
  EXPECT_GT(mapped_->map_counters().copies, cut.copies);
}

}  // namespace
}  // namespace journalkv::wal
