// Overflow chains: the pages holding the part of a value that does not fit in its leaf cell
// (format in btree_format.h). Written once when the value is stored, read page by page, and
// freed as a whole when the value is overwritten or deleted.
//
// Internal to btree/. Thread-compatible.
#ifndef JOURNALKV_BTREE_BTREE_OVERFLOW_H_
#define JOURNALKV_BTREE_BTREE_OVERFLOW_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/types.h"
#include "btree/btree_format.h"
#include "pager/page_access.h"

namespace journalkv::btree {

// The page `page_no`, which `referrer` points to. DataLoss (naming `referrer`) when the number
// is outside 2..page_count, so a damaged pointer never reaches the pager as a bad argument.
absl::StatusOr<pager::PageRef> GetReferencedPage(pager::PageReader& pages, PageNo page_no,
                                                 PageNo referrer);

// Writes `data` (not empty) to a new chain of overflow pages; returns the first page.
absl::StatusOr<PageNo> WriteOverflowChain(pager::PageWriter& pages, absl::string_view data);

// Sets *value to the whole value of `cell`, which was decoded from page `leaf`, reading its
// overflow chain if it has one (reusing the string's capacity). DataLoss when the chain is
// damaged, shorter or longer than the value; *value is unspecified then.
absl::Status ReadValue(pager::PageReader& pages, PageNo leaf, const LeafCell& cell,
                       std::string* value);

// Frees the overflow chain of `cell` (nothing when its value is inline).
absl::Status FreeOverflowChain(pager::PageWriter& pages, PageNo leaf, const LeafCell& cell);

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_OVERFLOW_H_
