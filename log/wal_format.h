// The write-ahead log file format (`x.db-wal`, and `x.db-wal2` in WAL2 mode).
//
// This comment is the specification of the log file; keep it exact. All integers little-endian.
//
// The file starts with a 32-byte header:
//
//   offset | size | field     | meaning
//   -------+------+-----------+-----------------------------------------------------------
//   0      | 4    | magic     | 0x4C574B4A ("JKWL" read as bytes 4A 4B 57 4C)
//   4      | 4    | version   | 2. A reader refuses a log with a larger version; version 1
//          |      |           | is the format of earlier builds (below)
//   8      | 4    | page_size | the database's page size P
//   12     | 4    | ckpt_seq  | checkpoint sequence: incremented each time the log restarts
//   16     | 4    | salt1     | random at each restart: frames of an older generation of the
//   20     | 4    | salt2     |   log carry other salts and are never accepted
//   24     | 8    | checksum  | XXH3-64 of bytes [0, 24), seed 0
//
// then frames, numbered from 1. Frame F starts at byte 32 + (F-1) * (32 + P): a 32-byte frame
// header, then the P-byte page image.
//
// A frame header:
//
//   offset | size | field     | meaning
//   -------+------+-----------+-----------------------------------------------------------
//   0      | 4    | page_no   | the database page this frame holds (>= 1)
//   4      | 4    | db_size   | for a commit frame, the database size in pages after the
//          |      |           | transaction; 0 for every other frame
//   8      | 4    | salt1     | the header's salts
//   12     | 4    | salt2     |
//   16     | 8    | image_sum | the image's own checksum, a copy of its last 8 bytes (below)
//   24     | 8    | checksum  | XXH3-64 of frame header bytes [0, 24), seeded with the
//          |      |           | previous frame's checksum (frame 1: with the header's
//          |      |           | checksum), so each frame vouches for all before it
//
// An image is a database page as the database file holds it, its trailer included: its last 8
// bytes are XXH3-64 of its bytes [0, P-8) seeded with page_no (pager/db_format.h). The chain
// covers that checksum (image_sum) instead of hashing the image a second time, so writing a
// frame hashes 24 bytes (where version 1 hashed the whole image again), and restoring the chain
// after a rewrite (below) reads and writes frame headers only, never an image.
//
// A frame is valid when its salts are the header's, page_no >= 1, its checksum continues the
// chain, its image ends with image_sum and image_sum is the image's checksum. A reader accepts
// the longest prefix of valid frames that ends in a commit frame; anything after the last valid
// commit frame is ignored (an uncommitted or torn tail). A log whose header does not check out
// is empty.
//
// Frames after the last commit frame belong to the transaction being written, and it may write
// a frame again (a page it spilled and changed since): its image and its header (with the new
// image_sum) are rewritten, and the checksums from the first frame so rewritten are recomputed,
// in order, before its commit frame is written, so a commit frame always vouches for the frames
// before it as they are (wal/wal_connection.h W11).
//
// Version 1 (builds before 2026-12-06) had 24-byte frame headers (page_no, db_size, the salts
// and a checksum of header bytes [0, 16) and the image, chained the same way), frame F at byte
// 32 + (F-1) * (24 + P). This build does not write it and recovers no frame from it: a
// version-1 log that holds a committed frame is refused (FailedPrecondition, naming the
// remedy), one that holds none is taken as empty.
//
// Thread-safety: pure functions.
#ifndef JOURNALKV_LOG_WAL_FORMAT_H_
#define JOURNALKV_LOG_WAL_FORMAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace journalkv::wal {

inline constexpr uint32_t kWalMagic = 0x4C574B4A;
inline constexpr uint32_t kWalVersion = 2;
inline constexpr uint32_t kWalHeaderSize = 32;
inline constexpr uint32_t kFrameHeaderSize = 32;

struct WalHeader {
  uint32_t page_size = 0;
  uint32_t ckpt_seq = 0;
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  uint64_t checksum = 0;  // filled in by EncodeWalHeader, checked by DecodeWalHeader
  // What DecodeWalHeader read (1 or 2); EncodeWalHeader always writes kWalVersion.
  uint32_t version = kWalVersion;
  bool operator==(const WalHeader&) const = default;
};

struct FrameHeader {
  uint32_t page_no = 0;
  uint32_t db_size = 0;  // nonzero: a commit frame
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  uint64_t image_sum = 0;  // filled in by EncodeFrameHeader from the image's trailer
  uint64_t checksum = 0;
  bool operator==(const FrameHeader&) const = default;
};

// Bytes of one frame: its header and its image.
constexpr uint64_t FrameSize(uint32_t page_size) { return kFrameHeaderSize + uint64_t{page_size}; }
// Byte offset of the header of frame `frame` (1-based).
constexpr uint64_t FrameHeaderOffset(uint32_t frame, uint32_t page_size) {
  return kWalHeaderSize + uint64_t{frame - 1} * FrameSize(page_size);
}
// Byte offset of the image of frame `frame` (1-based).
constexpr uint64_t FrameImageOffset(uint32_t frame, uint32_t page_size) {
  return FrameHeaderOffset(frame, page_size) + kFrameHeaderSize;
}
// The bytes a log of `frames` frames spans: to the end of the last image (the header alone
// when there are none).
constexpr uint64_t LogEnd(uint32_t frames, uint32_t page_size) {
  return kWalHeaderSize + uint64_t{frames} * FrameSize(page_size);
}
// The number of whole frames (image included) a file of `file_size` bytes has room for.
uint32_t FramesInFile(uint64_t file_size, uint32_t page_size);

// Writes the 32-byte header (computing its checksum) into out[0, 32); returns the checksum.
uint64_t EncodeWalHeader(const WalHeader& header, absl::Span<uint8_t> out);
// The header in `in` (32 bytes), or InvalidArgument naming what is wrong (magic, version,
// checksum, page size). FailedPrecondition for a newer version.
absl::StatusOr<WalHeader> DecodeWalHeader(absl::Span<const uint8_t> in);

// The checksum an image of page `page_no` carries in its last 8 bytes (the database file's
// page trailer): XXH3-64 of bytes [0, size - 8), seeded with page_no.
uint64_t ImageChecksum(uint32_t page_no, absl::Span<const uint8_t> image);
// The last 8 bytes of `image`.
uint64_t StoredImageChecksum(absl::Span<const uint8_t> image);

// The checksum of a frame: XXH3-64 of its header bytes [0, 24), seeded with `prev`.
uint64_t FrameChecksum(uint64_t prev, const FrameHeader& header);
// Fills `header.image_sum` from the image's trailer and `header.checksum` from the chain, and
// writes the 32-byte frame header into out. The image is not hashed: REQUIRES it carries its
// checksum (checked in debug builds).
void EncodeFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<const uint8_t> image,
                       absl::Span<uint8_t> out);
// Recomputes `header.checksum` from `prev` (image_sum as it is) and rewrites `out` with it.
void RechainFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<uint8_t> out);
FrameHeader DecodeFrameHeader(absl::Span<const uint8_t> in);
// The checks of a frame that need only its header: the salts of the log `log`, page_no >= 1,
// and the chain from `prev`.
bool FrameHeaderValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev);
// The checks that need its image: the image ends with image_sum, and it is the image's
// checksum.
bool FrameImageValid(const FrameHeader& frame, absl::Span<const uint8_t> image);
// Both: a frame decoded from the log belongs to the log `log` and continues the chain from
// `prev`.
bool FrameValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev,
                absl::Span<const uint8_t> image);

// Version 1 (see above), kept to tell whether a log of an earlier build holds a commit.
inline constexpr uint32_t kV1FrameHeaderSize = 24;
constexpr uint64_t V1FrameOffset(uint32_t frame, uint32_t page_size) {
  return kWalHeaderSize + uint64_t{frame - 1} * (kV1FrameHeaderSize + page_size);
}
// Whether the version-1 frame at `frame` (24-byte header then image) is valid from `prev`;
// its checksum and db_size into *checksum and *db_size.
bool V1FrameValid(absl::Span<const uint8_t> frame, const WalHeader& log, uint64_t prev,
                  uint64_t* checksum, uint32_t* db_size);

}  // namespace journalkv::wal

#endif  // JOURNALKV_LOG_WAL_FORMAT_H_
