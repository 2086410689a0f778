#include "log/wal_format.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/hash.h"

namespace journalkv::wal {
namespace {

using base::DecodeFixed32;
using base::DecodeFixed64;
using base::EncodeFixed32;
using base::EncodeFixed64;

// The bytes of a header the checksum covers (everything before the checksum itself).
constexpr size_t kHeaderChecksummed = 24;
// The bytes of a frame header its checksum covers.
constexpr size_t kFrameChecksummed = 24;
// Version 1: the bytes of a frame header hashed ahead of the image.
constexpr size_t kV1FrameChecksummed = 16;
constexpr uint32_t kImageTrailerSize = 8;

bool PageSizeValid(uint32_t page_size) {
  return page_size >= 512 && page_size <= 65536 && (page_size & (page_size - 1)) == 0;
}

// Frame header bytes [0, 24): what the chain hashes.
void EncodeFramePrefix(const FrameHeader& h, uint8_t* p) {
  EncodeFixed32(p, h.page_no);
  EncodeFixed32(p + 4, h.db_size);
  EncodeFixed32(p + 8, h.salt1);
  EncodeFixed32(p + 12, h.salt2);
  EncodeFixed64(p + 16, h.image_sum);
}

absl::Status HeaderError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("wal header: ", what));
}

}  // namespace

uint64_t EncodeWalHeader(const WalHeader& header, absl::Span<uint8_t> out) {
  uint8_t* p = out.data();
  EncodeFixed32(p, kWalMagic);
  EncodeFixed32(p + 4, kWalVersion);
  EncodeFixed32(p + 8, header.page_size);
  EncodeFixed32(p + 12, header.ckpt_seq);
  EncodeFixed32(p + 16, header.salt1);
  EncodeFixed32(p + 20, header.salt2);
  const uint64_t checksum = base::Xxh3(p, kHeaderChecksummed, 0);
  EncodeFixed64(p + 24, checksum);
  return checksum;
}

absl::StatusOr<WalHeader> DecodeWalHeader(absl::Span<const uint8_t> in) {
  if (in.size() < kWalHeaderSize) {
    return HeaderError(absl::StrCat(in.size(), " bytes, need ", kWalHeaderSize));
  }
  const uint8_t* p = in.data();
  if (DecodeFixed32(p) != kWalMagic) return HeaderError("bad magic");
  // The version before the checksum: a newer format may lay out or checksum its header
  // differently, and must be refused as newer, not mistaken for damage (an empty log).
  const uint32_t version = DecodeFixed32(p + 4);
  if (version > kWalVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "wal header: version ", version, " is newer than the supported ", kWalVersion));
  }
  if (DecodeFixed64(p + 24) != base::Xxh3(p, kHeaderChecksummed, 0)) {
    return HeaderError("bad checksum");
  }
  if (version == 0) return HeaderError("version 0 is invalid");
  WalHeader h;
  h.version = version;
  h.page_size = DecodeFixed32(p + 8);
  h.ckpt_seq = DecodeFixed32(p + 12);
  h.salt1 = DecodeFixed32(p + 16);
  h.salt2 = DecodeFixed32(p + 20);
  h.checksum = DecodeFixed64(p + 24);
  if (!PageSizeValid(h.page_size)) {
    return HeaderError(absl::StrCat("page size ", h.page_size, " is invalid"));
  }
  return h;
}

uint32_t FramesInFile(uint64_t file_size, uint32_t page_size) {
  if (file_size < kWalHeaderSize) return 0;
  const uint64_t frames = (file_size - kWalHeaderSize) / FrameSize(page_size);
  return static_cast<uint32_t>(std::min<uint64_t>(frames, std::numeric_limits<uint32_t>::max()));
}

uint64_t ImageChecksum(uint32_t page_no, absl::Span<const uint8_t> image) {
  return base::Xxh3(image.data(), image.size() - kImageTrailerSize, page_no);
}

uint64_t StoredImageChecksum(absl::Span<const uint8_t> image) {
  return DecodeFixed64(image.data() + image.size() - kImageTrailerSize);
}

uint64_t FrameChecksum(uint64_t prev, const FrameHeader& header) {
  uint8_t prefix[kFrameChecksummed];
  EncodeFramePrefix(header, prefix);
  return base::Xxh3(prefix, sizeof(prefix), prev);
}

void EncodeFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<const uint8_t> image,
                       absl::Span<uint8_t> out) {
  header.image_sum = StoredImageChecksum(image);
  JKV_DCHECK(header.image_sum == ImageChecksum(header.page_no, image));
  RechainFrameHeader(header, prev, out);
}

void RechainFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<uint8_t> out) {
  uint8_t* p = out.data();
  EncodeFramePrefix(header, p);
  header.checksum = base::Xxh3(p, kFrameChecksummed, prev);
  EncodeFixed64(p + 24, header.checksum);
}

FrameHeader DecodeFrameHeader(absl::Span<const uint8_t> in) {
  const uint8_t* p = in.data();
  FrameHeader h;
  h.page_no = DecodeFixed32(p);
  h.db_size = DecodeFixed32(p + 4);
  h.salt1 = DecodeFixed32(p + 8);
  h.salt2 = DecodeFixed32(p + 12);
  h.image_sum = DecodeFixed64(p + 16);
  h.checksum = DecodeFixed64(p + 24);
  return h;
}

bool FrameHeaderValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev) {
  // Salts first: they reject a frame of an older generation without hashing anything.
  if (frame.salt1 != log.salt1 || frame.salt2 != log.salt2) return false;
  if (frame.page_no == 0) return false;
  return frame.checksum == FrameChecksum(prev, frame);
}

bool FrameImageValid(const FrameHeader& frame, absl::Span<const uint8_t> image) {
  if (image.size() <= kImageTrailerSize) return false;
  return StoredImageChecksum(image) == frame.image_sum &&
         ImageChecksum(frame.page_no, image) == frame.image_sum;
}

bool FrameValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev,
                absl::Span<const uint8_t> image) {
  return FrameHeaderValid(frame, log, prev) && FrameImageValid(frame, image);
}

bool V1FrameValid(absl::Span<const uint8_t> frame, const WalHeader& log, uint64_t prev,
                  uint64_t* checksum, uint32_t* db_size) {
  const uint8_t* p = frame.data();
  if (DecodeFixed32(p + 8) != log.salt1 || DecodeFixed32(p + 12) != log.salt2) return false;
  if (DecodeFixed32(p) == 0) return false;
  const auto image = frame.subspan(kV1FrameHeaderSize);
  *checksum = DecodeFixed64(p + 16);
  *db_size = DecodeFixed32(p + 4);
  return *checksum ==
         base::Xxh3Pair(p, kV1FrameChecksummed, image.data(), image.size(), prev);
}

}  // namespace journalkv::wal
