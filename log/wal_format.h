// The write-ahead log file format (`x.db-wal`, and `x.db-wal2` in WAL2 mode).
//
// This comment is the specification of the log file; keep it exact. All integers little-endian.
//
// The file starts with a 32-byte header:
//
//   offset | size | field     | meaning
//   -------+------+-----------+-----------------------------------------------------------
//   0      | 4    | magic     | 0x4C574B4A ("JKWL" read as bytes 4A 4B 57 4C)
//   4      | 4    | version   | 1. A reader refuses a log with a larger version.
//   8      | 4    | page_size | the database's page size P
//   12     | 4    | ckpt_seq  | checkpoint sequence: incremented each time the log restarts
//   16     | 4    | salt1     | random at each restart: frames of an older generation of the
//   20     | 4    | salt2     |   log carry other salts and are never accepted
//   24     | 8    | checksum  | XXH3-64 of bytes [0, 24), seed 0
//
// then frames, numbered from 1. Frame F starts at byte 32 + (F-1) * (24 + P):
//
//   offset | size | field     | meaning
//   -------+------+-----------+-----------------------------------------------------------
//   0      | 4    | page_no   | the database page this frame holds (>= 1)
//   4      | 4    | db_size   | for a commit frame, the database size in pages after the
//          |      |           | transaction; 0 for every other frame
//   8      | 4    | salt1     | the header's salts
//   12     | 4    | salt2     |
//   16     | 8    | checksum  | XXH3-64 of frame bytes [0, 16) followed by the page image,
//          |      |           | seeded with the previous frame's checksum (frame 1: with the
//          |      |           | header's checksum), so each frame vouches for all before it
//   24     | P    | image     | the page image, its trailer included
//
// A reader accepts the longest prefix of frames that all check out (salts equal to the
// header's, checksum chain intact, page_no >= 1) and ends in a commit frame; anything after the
// last valid commit frame is ignored (an uncommitted or torn tail). A log whose header does not
// check out is empty.
//
// Frames after the last commit frame belong to the transaction being written, and it may write
// a frame again (a page it spilled and changed since): the checksums from the first frame so
// rewritten are recomputed, in order, before its commit frame is written, so a commit frame
// always vouches for the frames before it as they are (wal/wal_connection.h W11).
//
// Thread-safety: pure functions.
#ifndef JOURNALKV_LOG_WAL_FORMAT_H_
#define JOURNALKV_LOG_WAL_FORMAT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace journalkv::wal {

inline constexpr uint32_t kWalMagic = 0x4C574B4A;
inline constexpr uint32_t kWalVersion = 1;
inline constexpr uint32_t kWalHeaderSize = 32;
inline constexpr uint32_t kFrameHeaderSize = 24;

struct WalHeader {
  uint32_t page_size = 0;
  uint32_t ckpt_seq = 0;
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  uint64_t checksum = 0;  // filled in by EncodeWalHeader, checked by DecodeWalHeader
  bool operator==(const WalHeader&) const = default;
};

struct FrameHeader {
  uint32_t page_no = 0;
  uint32_t db_size = 0;  // nonzero: a commit frame
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  uint64_t checksum = 0;
  bool operator==(const FrameHeader&) const = default;
};

// Byte offset of frame `frame` (1-based) in a log of pages of `page_size`.
constexpr uint64_t FrameOffset(uint32_t frame, uint32_t page_size) {
  return kWalHeaderSize + uint64_t{frame - 1} * (kFrameHeaderSize + page_size);
}
constexpr uint64_t FrameSize(uint32_t page_size) { return kFrameHeaderSize + page_size; }

// Writes the 32-byte header (computing its checksum) into out[0, 32); returns the checksum.
uint64_t EncodeWalHeader(const WalHeader& header, absl::Span<uint8_t> out);
// The header in `in` (32 bytes), or InvalidArgument naming what is wrong (magic, version,
// checksum, page size). FailedPrecondition for a newer version.
absl::StatusOr<WalHeader> DecodeWalHeader(absl::Span<const uint8_t> in);

// The checksum of a frame: XXH3-64 of header bytes [0, 16) then `image`, seeded with `prev`.
uint64_t FrameChecksum(uint64_t prev, uint32_t page_no, uint32_t db_size, uint32_t salt1,
                       uint32_t salt2, absl::Span<const uint8_t> image);
// Fills `header.checksum` from the chain and writes the 24-byte frame header into out.
void EncodeFrameHeader(FrameHeader& header, uint64_t prev, absl::Span<const uint8_t> image,
                       absl::Span<uint8_t> out);
FrameHeader DecodeFrameHeader(absl::Span<const uint8_t> in);
// True when a frame decoded from the log belongs to the log `log` (salts) and continues the
// chain from `prev`.
bool FrameValid(const FrameHeader& frame, const WalHeader& log, uint64_t prev,
                absl::Span<const uint8_t> image);

}  // namespace journalkv::wal

#endif  // JOURNALKV_LOG_WAL_FORMAT_H_
