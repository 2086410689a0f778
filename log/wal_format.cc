#include "log/wal_format.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
// The bytes of a frame header the frame checksum covers, before the image.
constexpr size_t kFrameChecksummed = 16;

bool PageSizeValid(uint32_t page_size) {
  return page_size >= 512 && page_size <= 65536 && (page_size & (page_size - 1)) == 0;
}

// Frame header bytes [0, 16): what the chain hashes ahead of the image.
void EncodeFramePrefix(uint32_t page_no, uint32_t db_size, uint32_t salt1, uint32_t salt2,
                       uint8_t* p) {
  EncodeFixed32(p, page_no);
  EncodeFixed32(p + 4, db_size);
  EncodeFixed32(p + 8, salt1);
  EncodeFixed32(p + 12, salt2);
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

uint64_t FrameChecksum(uint64_t prev, uint32_t page_no, uint32_t db_size, uint32_t salt1,
                       uint32_t salt2, absl::Span<const uint8_t> image) {
  uint8_t prefix[kFrameChecksummed];
  EncodeFramePrefix(page_no, db_size, salt1, salt2, prefix);
  return base::Xxh3Pair(prefix, sizeof(prefix), image.data(), image.size(), prev);
}

void EncodeFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<const uint8_t> image,
                       absl::Span<uint8_t> out) {
  uint8_t* p = out.data();
  EncodeFramePrefix(header.page_no, header.db_size, header.salt1, header.salt2, p);
  header.checksum = base::Xxh3Pair(p, kFrameChecksummed, image.data(), image.size(), prev);
  EncodeFixed64(p + 16, header.checksum);
}

FrameHeader DecodeFrameHeader(absl::Span<const uint8_t> in) {
  const uint8_t* p = in.data();
  FrameHeader h;
  h.page_no = DecodeFixed32(p);
  h.db_size = DecodeFixed32(p + 4);
  h.salt1 = DecodeFixed32(p + 8);
  h.salt2 = DecodeFixed32(p + 12);
  h.checksum = DecodeFixed64(p + 16);
  return h;
}

bool FrameValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev,
                absl::Span<const uint8_t> image) {
  // Salts first: they reject a frame of an older generation without hashing its page.
  if (frame.salt1 != log.salt1 || frame.salt2 != log.salt2) return false;
  if (frame.page_no == 0) return false;
  return frame.checksum ==
         FrameChecksum(prev, frame.page_no, frame.db_size, frame.salt1, frame.salt2, image);
}

}  // namespace journalkv::wal
