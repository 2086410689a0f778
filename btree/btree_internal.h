// Helpers shared by the files of btree/: descending the tree, and restructuring it after a
// change that leaves a page overfull or underfull (btree_balance.cc).
//
// Internal to btree/ (package-private target). Thread-compatible.
#ifndef JOURNALKV_BTREE_BTREE_INTERNAL_H_
#define JOURNALKV_BTREE_BTREE_INTERNAL_H_

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/types.h"
#include "btree/btree_page.h"
#include "pager/page_access.h"

namespace journalkv::btree {

// Deeper than any valid tree can be (every interior page has at least two children, and a
// database has fewer than 2^32 pages); a descent that goes deeper has met a cycle.
inline constexpr int kMaxDepth = 40;

// One page on the way from the root to a leaf.
struct PathEntry {
  PageNo page;
  int child_index = 0;  // interior: the child descended to (cell_count: the right child)
  int cell_count = 0;
};
using Path = absl::InlinedVector<PathEntry, 8>;  // [0] is the root

// A b-tree page kept in memory together with its view.
struct PinnedPage {
  pager::PageRef ref;
  PageView view;
};

// The root page number, or PageNo(0) for an empty tree.
inline PageNo RootPage(const pager::PageReader& pages) { return PageNo(pages.meta(kRootMetaSlot)); }

// Reads b-tree page `page_no`, which `referrer` points to (PageNo(1): the header's root slot),
// into *out, which lets go of the page it held. (Out-parameters, not StatusOr<PinnedPage>: the
// page's reference moved between return values was a quarter of ReadNodePage's time in a point
// read, loads of fields just stored in other widths, which the CPU cannot forward.)
absl::Status ReadNodePage(pager::PageReader& pages, PageNo page_no, PageNo referrer,
                          PinnedPage* out);

// Descends from `root` to the leaf whose key range holds `key`, into *leaf. When `path` is not
// null it receives every interior page on the way (root first); the leaf is not added.
absl::Status DescendToLeaf(pager::PageReader& pages, PageNo root, absl::string_view key,
                           Path* path, PinnedPage* leaf);

// Makes `node` the content of page path[level] and restores the tree's shape: a node that does
// not fit is split (and the split propagates up, growing a new root when the root splits); a
// non-root node under a quarter full is merged with a sibling or takes cells from it (and the
// parent shrinks, collapsing the root when it has one child left); an empty root leaf is freed.
// `path` holds the pages from the root down to path[level], with the child index taken at each.
absl::Status StoreNode(pager::PageWriter& pages, const Path& path, int level, Node node,
                       SplitHint hint);

// True when a non-root page using `used_bytes` of CellSpace should be merged or refilled.
inline bool IsUnderfull(uint64_t used_bytes, uint32_t usable_size) {
  return used_bytes < CellSpace(usable_size) / 4;
}

// Records a write so that cursors of this transaction notice it.
inline void CountWrite(pager::PageWriter& pages) { pages.CountWrite(); }

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_INTERNAL_H_
