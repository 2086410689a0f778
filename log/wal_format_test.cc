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

std::vector<uint8_t> GoldenImage() {
  std::vector<uint8_t> image(512);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 7 % 251);
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
      1, 0, 0, 0,                                      // version
      0x00, 0x10, 0, 0,                                // page_size 4096
      7, 0, 0, 0,                                      // ckpt_seq
      0x44, 0x33, 0x22, 0x11,                          // salt1
      0x88, 0x77, 0x66, 0x55,                          // salt2
      0x77, 0x62, 0x9c, 0x81, 0xa5, 0xb9, 0x87, 0xb8,  // checksum (XXH3 of [0, 24), seed 0)
  };
  for (size_t i = 0; i < kWalHeaderSize; ++i) EXPECT_EQ(out[i], expected[i]) << "byte " << i;
  for (size_t i = kWalHeaderSize; i < out.size(); ++i) EXPECT_EQ(out[i], 0xee) << "byte " << i;
  EXPECT_EQ(checksum, 0xb887b9a5819c6277ull);
  EXPECT_EQ(checksum, base::Xxh3(expected, 24, 0));  // the literal is what the spec says
}

TEST(WalFormatTest, FrameMatchesTheSpecification) {
  WalHeader log = kHeader;
  log.page_size = 512;
  std::vector<uint8_t> raw_header(kWalHeaderSize);
  const uint64_t prev = EncodeWalHeader(log, absl::MakeSpan(raw_header));
  EXPECT_EQ(prev, 0x0ea7dcc6e641cb86ull);

  const std::vector<uint8_t> image = GoldenImage();
  std::vector<uint8_t> out(kFrameHeaderSize + 4, 0xee);
  FrameHeader frame{3, 9, log.salt1, log.salt2};
  EncodeFrameHeader(frame, prev, image, absl::MakeSpan(out));
  const uint8_t expected[kFrameHeaderSize] = {
      3, 0, 0, 0,                                      // page_no
      9, 0, 0, 0,                                      // db_size
      0x44, 0x33, 0x22, 0x11,                          // salt1
      0x88, 0x77, 0x66, 0x55,                          // salt2
      0x17, 0xf4, 0xaf, 0x82, 0x92, 0x9f, 0x46, 0xe5,  // checksum
  };
  for (size_t i = 0; i < kFrameHeaderSize; ++i) EXPECT_EQ(out[i], expected[i]) << "byte " << i;
  for (size_t i = kFrameHeaderSize; i < out.size(); ++i) EXPECT_EQ(out[i], 0xee) << "byte " << i;
  EXPECT_EQ(frame.checksum, 0xe5469f9282aff417ull);

  // The literal checksum is XXH3 of bytes [0, 16) then the image, seeded with the header's.
  std::vector<uint8_t> covered(16 + image.size());
  std::memcpy(covered.data(), expected, 16);
  std::memcpy(covered.data() + 16, image.data(), image.size());
  EXPECT_EQ(frame.checksum, base::Xxh3(covered.data(), covered.size(), prev));
  EXPECT_EQ(FrameChecksum(prev, 3, 9, log.salt1, log.salt2, image), frame.checksum);
}

TEST(WalFormatTest, Xxh3PairEqualsXxh3OfTheConcatenation) {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + (i >> 8));
  // Lengths around XXH3's internal thresholds (16, 128 and 240 bytes, its 64-byte stripes and
  // 1 KiB blocks), and the frame's 16 + page size.
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
  FrameHeader frame{0xfffffffe, 0, 0xdeadbeef, 1};
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
              StatusIs(absl::StatusCode::kFailedPrecondition, "wal header: version 2 is newer"));
  Reseal(raw);
  EXPECT_THAT(DecodeWalHeader(raw),
              StatusIs(absl::StatusCode::kFailedPrecondition, "wal header: version 2 is newer"));
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
  image_[100] ^= 0x20;
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
  FrameHeader zero{0, 0, log_.salt1, log_.salt2};
  EncodeFrameHeader(zero, log_.checksum, image_, absl::MakeSpan(raw_frame_));
  EXPECT_FALSE(FrameValid(zero, log_, log_.checksum, image_));
}

}  // namespace
}  // namespace journalkv::wal
