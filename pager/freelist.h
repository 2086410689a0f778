// The freelist: pages given back by transactions, reused before the file grows.
//
// Format. The header (db_format.h) holds the first trunk page and the number of free pages
// (trunks included). A trunk page (usable bytes U = P - 8):
//
//   offset | size | field     | meaning
//   -------+------+-----------+-------------------------------------------------------------
//   0      | 4    | next      | next trunk page, 0 for the last trunk
//   4      | 4    | n         | number of leaf entries, <= TrunkCapacity(U)
//   8      | 4*n  | leaves    | free page numbers (leaf pages; their content is meaningless)
//   8+4n   | ...  | unused    |
//
// Allocation takes the last leaf of the first trunk; when that trunk has no leaves the trunk
// page itself is allocated and its `next` becomes the first trunk. Freeing appends a leaf to
// the first trunk, or makes the freed page the new first trunk when that one is full.
//
// A leaf that was free when a transaction began needs no journal record when the transaction
// reuses it: its old content is meaningless, so a rollback need not restore it. For the same
// reason a leaf's checksum is not checked: a crash may leave a torn write in a page that the
// rollback returns to the freelist, and nothing ever reads a leaf before overwriting it whole.
#ifndef JOURNALKV_PAGER_FREELIST_H_
#define JOURNALKV_PAGER_FREELIST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/page_access.h"

namespace journalkv::pager {

inline constexpr uint32_t kTrunkHeaderSize = 8;

inline constexpr uint32_t TrunkCapacity(uint32_t usable_size) {
  return (usable_size - kTrunkHeaderSize) / 4;
}

// Every page on the freelist described by `header`, trunks first in chain order with their
// leaves. DataLoss (naming the trunk page) for a page out of range, a cycle, or a count that
// disagrees with the header.
absl::StatusOr<std::vector<PageNo>> WalkFreelist(PageReader& reader, const DbHeader& header);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_FREELIST_H_
