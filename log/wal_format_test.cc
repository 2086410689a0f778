// Golden-byte tests: the fixed fields of the expected bytes are written from the format comment
// of wal_format.h, not produced by the encoders. The checksum bytes were computed once with
// XXH3 and are fixed as literals, so that any change of the format fails here.
#include "log/wal_format.h"

#include <cstring>
#include <vector>

#include "base/endian.h"
#include "base/hash.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::StatusIs;

constexpr WalHeader kHeader{4096, 7, 0x11223344, 0x55667788};

// A 512-byte image of page `page_no` carrying its checksum in its last 8 bytes, as every
// image the log takes does: XXH3 of bytes [0, 504) seeded with the page number.
std::vector<uint8_t> GoldenImage(uint32_t page_no = 3) {
  std::vector<uint8_t> image(512);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 7 % 251);
  base::EncodeFixed64(image.data() + 504, base::Xxh3(image.data(), 504, page_no));
  return image;
}

std::vector<uint8_t> Encoded(const WalHeader& header) {
  std::vector<uint8_t> out(kWalHeaderSize);
  EncodeWalHeader(header, absl::MakeSpan(out));
  return out;
}

// Rewrites the checksum of an encoded header after a test changed its bytes.
void Reseal(std::vector<uint8_t>& raw) {
  base::EncodeFixed64(raw.data() + 24, base::Xxh3(raw.data(), 24, 0));
}

TEST(WalFormatTest, HeaderMatchesTheSpecification) {
  std::vector<uint8_t> out(kWalHeaderSize + 8, 0xee);
  const uint64_t checksum = EncodeWalHeader(kHeader, absl::MakeSpan(out));
  const uint8_t expected[kWalHeaderSize] = {
      0x4A, 0x4B, 0x57, 0x4C,                          // magic "JKWL"
      2, 0, 0, 0,                                      // version
      0x00, 0x10, 0, 0,                                // page_size 4096
      7, 0, 0, 0,                                      // ckpt_seq
      0x44, 0x33, 0x22, 0x11,                          // salt1
      0x88, 0x77, 0x66, 0x55,                          // salt2
      0x98, 0x64, 0x23, 0xfd, 0x2e, 0x06, 0x61, 0x96,  // checksum (XXH3 of [0, 24), seed 0)
  };
  for (size_t i = 0; i < kWalHeaderSize; ++i) EXPECT_EQ(out[i], expected[i]) << "byte " << i;
  for (size_t i = kWalHeaderSize; i < out.size(); ++i) EXPECT_EQ(out[i], 0xee) << "byte " << i;
  EXPECT_EQ(checksum, 0x9661062efd236498ull);
  EXPECT_EQ(checksum, base::Xxh3(expected, 24, 0));  // the literal is what the spec says
}

TEST(WalFormatTest, FrameMatchesTheSpecification) {
  WalHeader log = kHeader;
  log.page_size = 512;
  std::vector<uint8_t> raw_header(kWalHeaderSize);
  const uint64_t prev = EncodeWalHeader(log, absl::MakeSpan(raw_header));
  EXPECT_EQ(prev, 0xcef61075fb349206ull);

  const std::vector<uint8_t> image = GoldenImage();
  std::vector<uint8_t> out(kFrameHeaderSize + 4, 0xee);
  FrameHeader frame{3, 9, log.salt1, log.salt2};
  EncodeFrameHeader(frame, prev, image, absl::MakeSpan(out));
  const uint8_t expected[kFrameHeaderSize] = {
      3, 0, 0, 0,                                      // page_no
      9, 0, 0, 0,                                      // db_size
      0x44, 0x33, 0x22, 0x11,                          // salt1
      0x88, 0x77, 0x66, 0x55,                          // salt2
      0x2c, 0x79, 0xa8, 0xbc, 0xe0, 0xe3, 0x11, 0x15,  // image_sum
      0xb9, 0x22, 0xfe, 0x2c, 0x81, 0x77, 0x2e, 0x24,  // checksum
  };
  for (size_t i = 0; i < kFrameHeaderSize; ++i) EXPECT_EQ(out[i], expected[i]) << "byte " << i;
  for (size_t i = kFrameHeaderSize; i < out.size(); ++i) EXPECT_EQ(out[i], 0xee) << "byte " << i;
  EXPECT_EQ(frame.image_sum, 0x1511e3e0bca8792cull);
  EXPECT_EQ(frame.checksum, 0x242e77812cfe22b9ull);

  // The literals are what the spec says: image_sum is the image's checksum (XXH3 of its bytes
  // [0, P-8) seeded with the page number) and its last 8 bytes; the frame's checksum is XXH3
  // of header bytes [0, 24) seeded with the previous checksum.
  EXPECT_EQ(frame.image_sum, base::Xxh3(image.data(), 504, 3));
  EXPECT_EQ(frame.image_sum, base::DecodeFixed64(image.data() + 504));
  EXPECT_EQ(frame.image_sum, ImageChecksum(3, image));
  EXPECT_EQ(frame.checksum, base::Xxh3(expected, 24, prev));
  EXPECT_EQ(FrameChecksum(prev, frame), frame.checksum);
}

TEST(WalFormatTest, FramesFollowTheHeaderEachItsHeaderThenItsImage) {
  EXPECT_EQ(FrameSize(512), 544u);
  EXPECT_EQ(FrameHeaderOffset(1, 512), 32u);
  EXPECT_EQ(FrameImageOffset(1, 512), 64u);
  EXPECT_EQ(FrameHeaderOffset(2, 512), 576u);
  EXPECT_EQ(FrameImageOffset(3, 4096), 32u + 2 * 4128 + 32);
  EXPECT_EQ(LogEnd(0, 512), kWalHeaderSize);
  EXPECT_EQ(LogEnd(2, 512), 32u + 2 * 544);
  for (uint32_t page_size : {512u, 4096u, 65536u}) {
    for (uint32_t f : {1u, 2u, 100u, 100000u}) {
      EXPECT_EQ(FramesInFile(LogEnd(f, page_size), page_size), f) << f << " " << page_size;
      EXPECT_EQ(FramesInFile(LogEnd(f, page_size) - 1, page_size), f - 1) << f;
    }
  }
  EXPECT_EQ(FramesInFile(0, 512), 0u);
  EXPECT_EQ(FramesInFile(31, 512), 0u);
}

TEST(WalFormatTest, Xxh3PairEqualsXxh3OfTheConcatenation) {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + (i >> 8));
  // Lengths around XXH3's internal thresholds (16, 128 and 240 bytes, its 64-byte stripes and
  // 1 KiB blocks), and a version-1 frame's 16 + page size.
  for (size_t a : {0, 1, 16, 100, 240, 300}) {
    for (size_t b : {0, 3, 17, 129, 241, 512, 1024, 4096}) {
      for (uint64_t seed : {0ull, 99ull, 99ull, 0x8000000000000001ull}) {  // 99 twice in a row
        EXPECT_EQ(base::Xxh3Pair(data.data(), a, data.data() + a, b, seed),
                  base::Xxh3(data.data(), a + b, seed))
            << a << "+" << b << " seed " << seed;
      }
    }
  }
}

TEST(WalFormatTest, HeaderRoundTrips) {
  std::vector<uint8_t> raw(kWalHeaderSize);
  const uint64_t checksum = EncodeWalHeader(kHeader, absl::MakeSpan(raw));
  JKV_ASSERT_OK_AND_ASSIGN(const WalHeader decoded, DecodeWalHeader(raw));
  WalHeader want = kHeader;
  want.checksum = checksum;
  EXPECT_EQ(decoded, want);
}

TEST(WalFormatTest, FrameHeaderRoundTrips) {
  const std::vector<uint8_t> image = GoldenImage();
  std::vector<uint8_t> raw(kFrameHeaderSize);
  FrameHeader frame{3, 0, 0xdeadbeef, 1};
  EncodeFrameHeader(frame, 42, image, absl::MakeSpan(raw));
  EXPECT_EQ(DecodeFrameHeader(raw), frame);
}

TEST(WalFormatTest, HeaderWithBadMagicIsRefused) {
  std::vector<uint8_t> raw = Encoded(kHeader);
  raw[3] = 0x4D;
  Reseal(raw);
  EXPECT_THAT(DecodeWalHeader(raw),
              StatusIs(absl::StatusCode::kInvalidArgument, "wal header: bad magic"));
  const std::vector<uint8_t> zeros(kWalHeaderSize, 0);
  EXPECT_THAT(DecodeWalHeader(zeros), StatusIs(absl::StatusCode::kInvalidArgument, "bad magic"));
}

TEST(WalFormatTest, HeaderWithBadChecksumIsRefused) {
  for (size_t i : {8, 12, 16, 23, 24, 31}) {
    std::vector<uint8_t> raw = Encoded(kHeader);
    raw[i] ^= 0x01;
    EXPECT_THAT(DecodeWalHeader(raw),
                StatusIs(absl::StatusCode::kInvalidArgument, "wal header: bad checksum"))
        << "byte " << i;
  }
}

TEST(WalFormatTest, NewerVersionIsAFailedPrecondition) {
  std::vector<uint8_t> raw = Encoded(kHeader);
  base::EncodeFixed32(raw.data() + 4, kWalVersion + 1);
  // Refused as newer whether or not its checksum is ours: a newer format may checksum
  // differently.
  EXPECT_THAT(DecodeWalHeader(raw),
              StatusIs(absl::StatusCode::kFailedPrecondition, "wal header: version 3 is newer than the supported 2"));
  Reseal(raw);
  EXPECT_THAT(DecodeWalHeader(raw),
              StatusIs(absl::StatusCode::kFailedPrecondition, "wal header: version 3 is newer than the supported 2"));
}

TEST(WalFormatTest, VersionZeroIsInvalid) {
  std::vector<uint8_t> raw = Encoded(kHeader);
  base::EncodeFixed32(raw.data() + 4, 0);
  Reseal(raw);
  EXPECT_THAT(DecodeWalHeader(raw),
              StatusIs(absl::StatusCode::kInvalidArgument, "wal header: version 0 is invalid"));
}

TEST(WalFormatTest, BadPageSizeIsRefused) {
  for (uint32_t page_size : {0u, 256u, 1000u, 4097u, 131072u}) {
    WalHeader header = kHeader;
    header.page_size = page_size;
    EXPECT_THAT(DecodeWalHeader(Encoded(header)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "wal header: page size " + std::to_string(page_size) + " is invalid"));
  }
  for (uint32_t page_size : {512u, 1024u, 4096u, 65536u}) {
    WalHeader header = kHeader;
    header.page_size = page_size;
    JKV_ASSERT_OK_AND_ASSIGN(const WalHeader decoded, DecodeWalHeader(Encoded(header)));
    EXPECT_EQ(decoded.page_size, page_size);
  }
}

TEST(WalFormatTest, ShortHeaderIsRefused) {
  const std::vector<uint8_t> raw = Encoded(kHeader);
  EXPECT_THAT(DecodeWalHeader(absl::MakeConstSpan(raw.data(), 31)),
              StatusIs(absl::StatusCode::kInvalidArgument, "wal header: 31 bytes, need 32"));
}

class FrameValidTest : public ::testing::Test {
 protected:
  FrameValidTest() : image_(GoldenImage()) {
    log_ = kHeader;
    log_.page_size = 512;
    log_.checksum = EncodeWalHeader(log_, absl::MakeSpan(raw_header_));
    frame_ = {3, 0, log_.salt1, log_.salt2};
    EncodeFrameHeader(frame_, log_.checksum, image_, absl::MakeSpan(raw_frame_));
  }

  std::vector<uint8_t> raw_header_ = std::vector<uint8_t>(kWalHeaderSize);
  std::vector<uint8_t> raw_frame_ = std::vector<uint8_t>(kFrameHeaderSize);
  std::vector<uint8_t> image_;
  WalHeader log_;
  FrameHeader frame_;
};

TEST_F(FrameValidTest, AcceptsTheFrameItEncoded) {
  EXPECT_TRUE(FrameValid(DecodeFrameHeader(raw_frame_), log_, log_.checksum, image_));
}

TEST_F(FrameValidTest, RefusesADamagedImageOrHeader) {
  image_[100] ^= 0x20;
  EXPECT_FALSE(FrameValid(frame_, log_, log_.checksum, image_));
  EXPECT_TRUE(FrameHeaderValid(frame_, log_, log_.checksum));  // the image's own check fails
  image_[100] ^= 0x20;
  image_[510] ^= 0x20;  // its trailer: no longer image_sum
  EXPECT_FALSE(FrameValid(frame_, log_, log_.checksum, image_));
  image_[510] ^= 0x20;
  FrameHeader other_sum = frame_;
  other_sum.image_sum ^= 1;  // the chain covers image_sum
  EXPECT_FALSE(FrameHeaderValid(other_sum, log_, log_.checksum));
  FrameHeader committed = frame_;
  committed.db_size = 5;  // the checksum covers db_size
  EXPECT_FALSE(FrameValid(committed, log_, log_.checksum, image_));
}

TEST_F(FrameValidTest, RefusesABrokenChain) {
  EXPECT_FALSE(FrameValid(frame_, log_, log_.checksum + 1, image_));
}

TEST_F(FrameValidTest, RefusesOtherSaltsEvenWithAnIntactChain) {
  WalHeader newer = log_;
  newer.salt2 ^= 1;
  EXPECT_FALSE(FrameValid(frame_, newer, log_.checksum, image_));
  newer = log_;
  newer.salt1 ^= 1;
  EXPECT_FALSE(FrameValid(frame_, newer, log_.checksum, image_));
}

TEST_F(FrameValidTest, RefusesPageZeroEvenWithAValidChecksum) {
  FrameHeader zero{0, 0, log_.salt1, log_.salt2, ImageChecksum(0, image_)};
  RechainFrameHeader(zero, log_.checksum, absl::MakeSpan(raw_frame_));
  EXPECT_EQ(zero.checksum, FrameChecksum(log_.checksum, zero));
  EXPECT_FALSE(FrameValid(zero, log_, log_.checksum, image_));
}

TEST_F(FrameValidTest, RefusesTheImageOfAnotherPage) {
  // The image's checksum is seeded with its page number: page 3's image under page 4's
  // header, chained right, does not pass.
  FrameHeader moved = frame_;
  moved.page_no = 4;
  RechainFrameHeader(moved, log_.checksum, absl::MakeSpan(raw_frame_));
  EXPECT_TRUE(FrameHeaderValid(moved, log_, log_.checksum));
  EXPECT_FALSE(FrameValid(moved, log_, log_.checksum, image_));
}

TEST(WalFormatTest, VersionOneFramesAreCheckedByTheirOwnRules) {
  WalHeader log = kHeader;
  log.page_size = 512;
  std::vector<uint8_t> raw_header(kWalHeaderSize);
  log.checksum = EncodeWalHeader(log, absl::MakeSpan(raw_header));
  const std::vector<uint8_t> image = GoldenImage();
  // A version-1 frame: 16 header bytes, the chain over them and the image, then the image.
  std::vector<uint8_t> frame(kV1FrameHeaderSize + image.size());
  base::EncodeFixed32(frame.data(), 3);
  base::EncodeFixed32(frame.data() + 4, 9);
  base::EncodeFixed32(frame.data() + 8, log.salt1);
  base::EncodeFixed32(frame.data() + 12, log.salt2);
  std::memcpy(frame.data() + kV1FrameHeaderSize, image.data(), image.size());
  std::vector<uint8_t> covered(frame.begin(), frame.begin() + 16);
  covered.insert(covered.end(), image.begin(), image.end());
  const uint64_t want = base::Xxh3(covered.data(), covered.size(), log.checksum);
  base::EncodeFixed64(frame.data() + 16, want);
  uint64_t checksum = 0;
  uint32_t db_size = 0;
  EXPECT_TRUE(V1FrameValid(frame, log, log.checksum, &checksum, &db_size));
  EXPECT_EQ(checksum, want);
  EXPECT_EQ(db_size, 9u);
  EXPECT_FALSE(V1FrameValid(frame, log, log.checksum + 1, &checksum, &db_size));
  frame[kV1FrameHeaderSize + 7] ^= 1;
  EXPECT_FALSE(V1FrameValid(frame, log, log.checksum, &checksum, &db_size));
  EXPECT_EQ(V1FrameOffset(2, 512), 32u + 536u);
}

TEST(WalFormatTest, VersionOneHeadersDecodeWithTheirVersion) {
  std::vector<uint8_t> raw = Encoded(kHeader);
  base::EncodeFixed32(raw.data() + 4, 1);
  Reseal(raw);
  JKV_ASSERT_OK_AND_ASSIGN(const WalHeader decoded, DecodeWalHeader(raw));
  EXPECT_EQ(decoded.version, 1u);
  JKV_ASSERT_OK_AND_ASSIGN(const WalHeader current, DecodeWalHeader(Encoded(kHeader)));
  EXPECT_EQ(current.version, kWalVersion);
}

}  // namespace
}  // namespace journalkv::wal
