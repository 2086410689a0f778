// The on-page formats of the B+tree: leaf pages, interior pages, overflow pages, and the cells
// inside them. Used by the rest of btree/ only; the pager never looks inside these pages.
//
// This comment is the specification of those pages; keep it exact. btree_format_test.cc checks
// golden byte arrays written from it.
//
// Conventions. U is the usable size of a page (UsableSize(page_size) = page_size - 8: the pager
// keeps an 8-byte checksum trailer after it). All integers are little-endian. Page numbers are
// 1-based and 0 means "no page". Keys are byte strings ordered by memcmp, a shorter key before
// every longer key it is a prefix of; the empty key is a valid key. U <= 65528, so every offset
// inside a page fits in 16 bits.
//
// The tree. Leaves hold every key with its value; interior pages hold separator keys and child
// page numbers. All leaves are at the same depth. The root page number is meta slot 0 of the
// page-1 header (0: the tree is empty and has no pages); meta slot 1 counts the writes made to
// the tree, modulo 2^32, so that a cursor notices the writes of its own transaction.
//
// B-tree page (leaf or interior):
//
//   offset      | size | field         | meaning
//   ------------+------+---------------+----------------------------------------------------
//   0           | 1    | page_type     | 0x4C leaf, 0x49 interior (PageType)
//   1           | 1    | reserved      | 0
//   2           | 2    | cell_count    | n, the number of cells
//   4           | 2    | content_start | offset of the cell content area, which runs to U;
//               |      |               | U when the page has no cells
//   6           | 2    | garbage_bytes | bytes of the content area that belong to no cell
//               |      |               | (left by deletions; reclaimed by defragmenting)
//   8           | 4    | right_child   | interior: the child holding the keys >= the last
//               |      |               | separator. Leaf: 0
//   12          | 2n   | cell_pointers | offset of each cell, in increasing key order
//   12+2n       | gap  | unused        | content undefined
//   content_start | U-content_start | cells | the cells, in any order, and garbage_bytes of
//               |      |               | garbage between them
//
// Free-space accounting: content_start - (12 + 2n) + garbage_bytes is the page's free space, and
// the cell sizes plus garbage_bytes add up to exactly U - content_start.
//
// Leaf cell (one key and its value):
//
//   offset | size | field          | meaning
//   -------+------+----------------+----------------------------------------------------------
//   0      | 2    | key_size       | k, at most MaxKeySize(U)
//   2      | 4    | value_size     | v, the whole value, at most kMaxValueSize
//   6      | k    | key            |
//   6+k    | l    | local_value    | the first l = LocalValueSize(U, k, v) bytes of the value
//   6+k+l  | 4    | overflow_page  | present only when l < v: the first page of the overflow
//          |      |                | chain holding the remaining v - l bytes
//
// Interior cell (one separator key and the child to its left):
//
//   offset | size | field    | meaning
//   -------+------+----------+----------------------------------------------------------------
//   0      | 2    | key_size | k
//   2      | 4    | child    | the child holding the keys < key (and >= the previous separator)
//   6      | k    | key      | the separator
//
// An interior page with separators s_0 < ... < s_{n-1}, children c_0 ... c_{n-1} and right
// child c_n holds in subtree c_i the keys in [s_{i-1}, s_i), with s_{-1} and s_n the bounds the
// page itself got from its parent. A separator need not be a stored key: splitting a leaf
// promotes the shortest prefix of the right half's first key that is greater than the left
// half's last key.
//
// Overflow page (one link of a value's overflow chain):
//
//   offset | size | field     | meaning
//   -------+------+-----------+-------------------------------------------------------------
//   0      | 1    | page_type | 0x4F (PageType::kOverflow)
//   1      | 3    | reserved  | 0
//   4      | 4    | next_page | the next page of the chain, 0 on the last page
//   8      | U-8  | data      | the next U-8 bytes of the value; the last page uses only
//          |      |           | what is left and the rest of it is undefined
//
// Size limits, as functions of U:
//   MaxCellSize(U)    = (U - 12) / 3 - 2   (integer division: three maximal cells and their
//                                           pointers always fit in one page, so a split or a
//                                           redistribution always yields pages that fit)
//   MaxKeySize(U)     = MaxCellSize(U) - 10 (a leaf cell with a maximal key and an overflowing
//                                           value still fits)
//                     = 152 at 512-byte pages, 1346 at 4096, 21826 at 65536
//   A value is stored in the cell ("inline") when 6 + k + v <= MaxCellSize(U). Otherwise it
//   overflows: with C = U - 8 and room = MaxCellSize(U) - 10 - k, the cell keeps l = v mod C
//   bytes when that is <= room (so every overflow page is full), else l = 0.
//
// Version rule: these formats belong to database format version 1 (pager/db_format.h). A page
// whose type byte is unknown is reported as DataLoss.
#ifndef JOURNALKV_BTREE_BTREE_FORMAT_H_
#define JOURNALKV_BTREE_BTREE_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/endian.h"
#include "base/types.h"

namespace journalkv::btree {

// On disk: never renumber.
enum class PageType : uint8_t {
  kInterior = 0x49,  // 'I'
  kLeaf = 0x4C,      // 'L'
  kOverflow = 0x4F,  // 'O'
};

// Header meta slots (pager::PageReader::meta) owned by the B+tree.
inline constexpr int kRootMetaSlot = 0;
// Slot 1 held a write counter before it moved into the transaction (PageWriter::write_count);
// databases written then carry a count there, which nothing reads.

// B-tree page header offsets.
inline constexpr uint32_t kTypeOffset = 0;
inline constexpr uint32_t kCellCountOffset = 2;
inline constexpr uint32_t kContentStartOffset = 4;
inline constexpr uint32_t kGarbageBytesOffset = 6;
inline constexpr uint32_t kRightChildOffset = 8;
inline constexpr uint32_t kPageHeaderSize = 12;
inline constexpr uint32_t kCellPointerSize = 2;

// Cell layout.
inline constexpr uint32_t kCellHeaderSize = 6;  // key_size, then value_size or child
inline constexpr uint32_t kOverflowPointerSize = 4;

// Overflow page layout.
inline constexpr uint32_t kOverflowNextOffset = 4;
inline constexpr uint32_t kOverflowHeaderSize = 8;

// The largest value Put accepts (1 GiB).
inline constexpr uint32_t kMaxValueSize = uint32_t{1} << 30;

// Bytes of a b-tree page available to cell pointers and cells.
constexpr uint32_t CellSpace(uint32_t usable_size) { return usable_size - kPageHeaderSize; }

// The largest cell, so that three of them with their pointers fit in a page.
constexpr uint32_t MaxCellSize(uint32_t usable_size) {
  return CellSpace(usable_size) / 3 - kCellPointerSize;
}

// The longest key accepted for pages of `usable_size` bytes: (U - 12) / 3 - 12.
constexpr uint32_t MaxKeySize(uint32_t usable_size) {
  return MaxCellSize(usable_size) - kCellHeaderSize - kOverflowPointerSize;
}

// Value bytes held by one overflow page.
constexpr uint32_t OverflowCapacity(uint32_t usable_size) {
  return usable_size - kOverflowHeaderSize;
}

// How many bytes of a value of `value_size` bytes the leaf cell keeps (the rest overflows).
constexpr uint32_t LocalValueSize(uint32_t usable_size, uint32_t key_size, uint32_t value_size) {
  const uint64_t inline_size = uint64_t{kCellHeaderSize} + key_size + value_size;
  if (inline_size <= MaxCellSize(usable_size)) return value_size;
  const uint32_t room =
      MaxCellSize(usable_size) - kCellHeaderSize - kOverflowPointerSize - key_size;
  const uint32_t tail = value_size % OverflowCapacity(usable_size);
  return tail <= room ? tail : 0;
}

constexpr bool ValueOverflows(uint32_t usable_size, uint32_t key_size, uint32_t value_size) {
  return LocalValueSize(usable_size, key_size, value_size) < value_size;
}

// Encoded size of a leaf cell.
constexpr uint32_t LeafCellSize(uint32_t usable_size, uint32_t key_size, uint32_t value_size) {
  const uint32_t local = LocalValueSize(usable_size, key_size, value_size);
  return kCellHeaderSize + key_size + local + (local < value_size ? kOverflowPointerSize : 0);
}

constexpr uint32_t InteriorCellSize(uint32_t key_size) { return kCellHeaderSize + key_size; }

// Overflow pages needed by a value (0 when it is stored inline).
constexpr uint32_t OverflowPageCount(uint32_t usable_size, uint32_t key_size, uint32_t value_size) {
  const uint32_t rest = value_size - LocalValueSize(usable_size, key_size, value_size);
  const uint32_t cap = OverflowCapacity(usable_size);
  return rest / cap + (rest % cap != 0 ? 1 : 0);
}

static_assert(MaxKeySize(504) == 152);
static_assert(MaxKeySize(4088) == 1346);
static_assert(MaxKeySize(65528) == 21826);
static_assert(MaxKeySize(4088) >= 1024);

// A decoded leaf cell. The views point into the page the cell was decoded from.
struct LeafCell {
  absl::string_view key;
  uint32_t value_size = 0;
  absl::string_view local_value;  // the first local_value.size() bytes of the value
  PageNo overflow_page;           // PageNo(0) when the value is inline
  uint32_t size = 0;              // encoded size of the cell in bytes
};

// A decoded interior cell.
struct InteriorCell {
  absl::string_view key;
  PageNo child;
  uint32_t size = 0;
};

// Writes a leaf cell to `dst`, which has room for LeafCellSize(usable_size, key.size(),
// value_size) bytes. `local_value` is the first LocalValueSize(...) bytes of the value;
// `overflow_page` is written only when the value overflows.
void EncodeLeafCell(uint32_t usable_size, absl::string_view key, uint32_t value_size,
                    absl::string_view local_value, PageNo overflow_page, uint8_t* dst);

// Returns a leaf cell as a string (for cells built outside a page).
std::string MakeLeafCell(uint32_t usable_size, absl::string_view key, uint32_t value_size,
                         absl::string_view local_value, PageNo overflow_page);

void EncodeInteriorCell(absl::string_view key, PageNo child, uint8_t* dst);
std::string MakeInteriorCell(absl::string_view key, PageNo child);

// What is wrong with a leaf cell, if anything (DecodeLeafCell words it).
enum class LeafCellProblem { kNone, kHeaderOutOfBounds, kImpossibleSizes, kPastThePage };

// The decoding itself, inline for scans: fills *cell unless a problem is returned.
inline LeafCellProblem DecodeLeafCellInto(absl::Span<const uint8_t> page, uint32_t offset,
                                          LeafCell* cell) {
  const uint32_t usable = static_cast<uint32_t>(page.size());
  if (offset < kPageHeaderSize || uint64_t{offset} + kCellHeaderSize > usable) {
    return LeafCellProblem::kHeaderOutOfBounds;
  }
  const uint8_t* p = page.data() + offset;
  const uint32_t key_size = base::DecodeFixed16(p);
  const uint32_t value_size = base::DecodeFixed32(p + 2);
  if (key_size > MaxKeySize(usable) || value_size > kMaxValueSize) {
    return LeafCellProblem::kImpossibleSizes;
  }
  const uint32_t local = LocalValueSize(usable, key_size, value_size);
  const bool overflows = local < value_size;
  const uint32_t size =
      kCellHeaderSize + key_size + local + (overflows ? kOverflowPointerSize : 0);
  if (uint64_t{offset} + size > usable) return LeafCellProblem::kPastThePage;
  const char* key = reinterpret_cast<const char*>(p) + kCellHeaderSize;
  cell->size = size;
  cell->value_size = value_size;
  cell->key = absl::string_view(key, key_size);
  cell->local_value = absl::string_view(key + key_size, local);
  cell->overflow_page =
      overflows ? PageNo(base::DecodeFixed32(p + kCellHeaderSize + key_size + local)) : PageNo(0);
  return LeafCellProblem::kNone;
}

// Decodes the leaf cell at `offset` of a page of `page.size()` (= U) bytes. DataLoss naming
// `page_no` and the offset when the cell does not lie within the page or is impossible.
absl::StatusOr<LeafCell> DecodeLeafCell(PageNo page_no, absl::Span<const uint8_t> page,
                                        uint32_t offset);
absl::StatusOr<InteriorCell> DecodeInteriorCell(PageNo page_no, absl::Span<const uint8_t> page,
                                                uint32_t offset);

// Decodes a cell that is already known to lie within its buffer (cells held in memory while a
// page is rebuilt). REQUIRES: `cell` is a well-formed cell of the given kind.
LeafCell ParseLeafCell(uint32_t usable_size, absl::string_view cell);
InteriorCell ParseInteriorCell(absl::string_view cell);

// The key of an encoded cell of either kind. REQUIRES: `cell` is well formed.
absl::string_view CellKey(absl::string_view cell);

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_FORMAT_H_
