// The database file format: page trailers and the page-1 header.
//
// This comment is the specification of the database file; keep it exact.
//
// The file is an array of pages of one size P, a power of two in [512, 65536], fixed when the
// database is created. Pages are numbered from 1; page N occupies bytes [(N-1)*P, N*P). All
// integers are little-endian.
//
// Every page ends with an 8-byte trailer:
//
//   offset  | size | field    | meaning
//   --------+------+----------+------------------------------------------------------------
//   P-8     | 8    | checksum | XXH3-64 of bytes [0, P-8) of the page, seeded with the page
//           |      |          | number N. A torn, stale or misdirected page fails this check.
//
// so the layers above see P-8 usable bytes per page (UsableSize).
//
// Page 1 is the database header page and holds nothing else:
//
//   offset | size | field              | meaning
//   -------+------+--------------------+----------------------------------------------------
//   0      | 16   | magic              | "journalkv\0fmt\0\0\0" (kMagic)
//   16     | 4    | format_version     | 1. A reader refuses a file with a larger version.
//   20     | 4    | page_size          | P
//   24     | 8    | change_counter     | incremented by every committed write transaction
//   32     | 4    | page_count         | pages in the database; the file may be longer (bytes
//          |      |                    | past page_count*P are ignored), never shorter
//   36     | 4    | freelist_head      | first freelist trunk page, 0 when the freelist is empty
//   40     | 4    | freelist_count     | pages on the freelist, trunks included
//   44     | 1    | journal_family     | JournalFamily last used: 0 rollback, 1 wal, 2 wal2,
//          |      |                    | 3 atomic
//   45     | 3    | reserved           | zero
//   48     | 64   | meta[16]           | 16 uint32 slots owned by the layers above the pager
//          |      |                    | (the B+tree keeps its root page in slot 0)
//   112    | P-120| reserved           | zero
//   P-8    | 8    | checksum           | the page trailer
//
// Freelist trunk pages (see freelist.h) are the only other pages the pager formats itself.
#ifndef JOURNALKV_PAGER_DB_FORMAT_H_
#define JOURNALKV_PAGER_DB_FORMAT_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/types.h"

namespace journalkv::pager {

inline constexpr char kMagic[16] = {'j', 'o', 'u', 'r', 'n', 'a', 'l', 'k',
                                    'v', 0,   'f', 'm', 't', 0,   0,   0};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kMinPageSize = 512;
inline constexpr uint32_t kMaxPageSize = 65536;
inline constexpr uint32_t kDefaultPageSize = 4096;
inline constexpr uint32_t kPageTrailerSize = 8;
inline constexpr int kNumMetaSlots = 16;

// Bytes of the header that identify the file and give its page size: enough to read first.
inline constexpr uint32_t kHeaderPrefixSize = 24;

// Where the change counter lives in page 1: a transaction start reads just these 8 bytes to
// learn whether another connection has committed (docs/design-notes.md, "Cache validation").
inline constexpr uint32_t kChangeCounterOffset = 24;

// On disk: never renumber.
enum class JournalFamily : uint8_t { kRollback = 0, kWal = 1, kWal2 = 2, kAtomic = 3 };
// "rollback", "wal", "wal2", "atomic" (messages, `jkv info`).
absl::string_view JournalFamilyName(JournalFamily family);
// Where page 1 records the family (the table above).
inline constexpr uint32_t kJournalFamilyOffset = 44;

inline constexpr uint32_t UsableSize(uint32_t page_size) {
  return page_size - kPageTrailerSize;
}

inline constexpr bool IsValidPageSize(uint32_t page_size) {
  return page_size >= kMinPageSize && page_size <= kMaxPageSize &&
         (page_size & (page_size - 1)) == 0;
}

// Computes the trailer checksum of a whole page (`page` is P bytes).
uint64_t ComputePageChecksum(PageNo page_no, absl::Span<const uint8_t> page);
// Writes the trailer of a whole page.
void SealPage(PageNo page_no, absl::Span<uint8_t> page);
// Returns the trailer stored in a whole page.
uint64_t StoredPageChecksum(absl::Span<const uint8_t> page);
// True when the stored trailer matches the content.
bool PageChecksumOk(PageNo page_no, absl::Span<const uint8_t> page);

struct DbHeader {
  uint32_t page_size = kDefaultPageSize;
  uint64_t change_counter = 0;
  uint32_t page_count = 1;
  PageNo freelist_head;  // PageNo(0): empty
  uint32_t freelist_count = 0;
  JournalFamily journal_family = JournalFamily::kRollback;
  std::array<uint32_t, kNumMetaSlots> meta{};

  bool operator==(const DbHeader&) const = default;
};

// Writes the header fields into page 1 (`page` is P bytes; the trailer is not touched).
void EncodeDbHeader(const DbHeader& header, absl::Span<uint8_t> page);

// Checks the first kHeaderPrefixSize bytes of a file: magic, version and page size.
// InvalidArgument when the bytes are not a journalkv header ("not a journalkv database"),
// FailedPrecondition for a newer format version, DataLoss for an invalid page size.
// `what` names the file in messages. Returns the page size.
absl::StatusOr<uint32_t> DecodeHeaderPrefix(absl::Span<const uint8_t> prefix,
                                            const std::string& what);

// Decodes a whole page 1 whose checksum has been verified. DataLoss when a field is impossible.
absl::StatusOr<DbHeader> DecodeDbHeader(absl::Span<const uint8_t> page, const std::string& what);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_DB_FORMAT_H_
