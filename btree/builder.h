// TreeBuilder: writes a whole B+tree bottom-up from keys given in strictly ascending order,
// instead of putting each key through the tree (a descent, a search and a split per page).
//
// Used by engine/ for Compact, Backup with compaction, a sorted `jkv load`, and a WriteBatch of
// sorted keys into an empty tree. The pages it writes are the ordinary pages of btree_format.h;
// once Finish returns, the tree is an ordinary tree that takes Put, Delete and cursors.
//
// What it writes (this comment is the specification; L1, L2, L3, L4, L5 and L6 are cited in
// builder.cc; L7 to L10, the pager's side of a rebuild, are in pager/txn.h):
//   L1. Leaves are filled left to right: a cell goes to the current leaf while the leaf's cells
//       and pointers stay within fill * CellSpace(U) bytes (and always within CellSpace(U));
//       a leaf holds at least one cell. The cells are exactly those BTree::Put would write for
//       the pair (same LocalValueSize split); a value that does not fit in its cell gets its
//       overflow chain through the same WriteOverflowChain, written when the pair is added.
//   L2. The separator between two neighbouring leaves is ShortestSeparator(last key of the
//       left, first key of the right), as a leaf split promotes it; the separator between two
//       interior pages is the one their parent would get from splitting them: the separator
//       before the right page's first child.
//   L3. Interior pages are filled as leaves are (fill * CellSpace(U)) and hold at least two
//       children (one separator), as CheckTree requires.
//   L4. At the end, the last page of each level is refilled from its left neighbour when it
//       is under a quarter of CellSpace (IsUnderfull) or, interior, holds one child: the two
//       are put in one page when they fit, else split evenly; so no page but the root is left
//       underfull and Delete's merge rules start from a valid tree.
//   L5. Every page comes from PageWriter::Allocate and is written through the span it returns
//       (nothing else): the builder works inside a write transaction of any journal mode, and
//       the pager's spill, journal or WAL and crash safety apply as they do to Put. At most
//       two pages per level are held in memory, in the builder's own buffers, until written.
//   L6. The root's page is the first page allocated (at the first Add, before its overflow
//       chain), so that it lies before the pages it covers, as a tree grown by Put has its
//       root early in the file: auto_vacuum's cut of freed tail pages is not stopped by a root
//       at the very end. It is held for the commit (PageWriter::HoldForCommit, pager/txn.h
//       L10), so a transaction that spills writes it once, at its commit, and WAL rewrites no
//       frame of it. The root is written last, and only then stored in meta slot 0; a
//       build that fails part way leaves the slot as it was (0) and its pages allocated: the
//       caller rolls the transaction back (as after a failed Put).
//
// Errors. FailedPrecondition when the tree is not empty at Create. InvalidArgument naming the
// pair's index (0-based, in the order of Add) for a key not greater than the previous one, and
// BTree::CheckSizes's errors for an oversized key or value; nothing is written for that pair
// and the builder may go on. Pager errors are returned as they are (roll back).
//
// Fill. kDefaultFill (0.9) leaves a tenth of each page free so that the next random inserts
// land in room already there instead of splitting every page they touch (a full leaf splits on
// its first insert, writing three pages); kFullFill (1.0) packs pages as tightly as the
// tree's own append splits do, for compaction, whose point is the fewest pages. Fills in
// [kMinFill, 1.0] are accepted.
//
// Thread-safety: as the transaction's (one thread at a time).
#ifndef JOURNALKV_BTREE_BUILDER_H_
#define JOURNALKV_BTREE_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/types.h"
#include "pager/page_access.h"

namespace journalkv::btree {

class TreeBuilder {
 public:
  static constexpr double kDefaultFill = 0.9;
  static constexpr double kFullFill = 1.0;
  static constexpr double kMinFill = 0.5;

  // A builder writing into `pages`, whose tree must be empty (meta slot 0 is 0).
  // InvalidArgument for a fill outside [kMinFill, 1].
  static absl::StatusOr<std::unique_ptr<TreeBuilder>> Create(pager::PageWriter& pages,
                                                             double fill = kDefaultFill);
  ~TreeBuilder();
  TreeBuilder(const TreeBuilder&) = delete;
  TreeBuilder& operator=(const TreeBuilder&) = delete;

  // Adds the next pair. Its key must be greater than every key added before.
  absl::Status Add(absl::string_view key, absl::string_view value);

  // Writes the pages still held, the root last, and stores the root in meta slot 0 (L6).
  // Returns the root (PageNo(0) when nothing was added). The builder is spent afterwards.
  absl::StatusOr<PageNo> Finish();

  uint64_t pairs() const { return pairs_; }
  // The key of the last pair added (empty before the first).
  absl::string_view last_key() const { return last_key_; }
  // Leaf and interior pages written so far (overflow pages not counted).
  uint32_t node_pages() const { return node_pages_; }

  // The number of b-tree pages (leaf and interior) a build at `fill` writes for leaf cells
  // taking `cell_bytes` bytes in all (their pointers included) in pages of `usable_size`
  // bytes, about: for estimates (jkv info's reclaimable_bytes), not exact.
  static uint64_t EstimatePages(uint64_t cell_bytes, uint64_t cells, uint32_t usable_size,
                                double fill);

  // What a rebuild of the tree in `pages` at `fill` would take: every leaf read in key order
  // and its cells packed as a build packs them (L1, so the leaf count is the build's but for
  // L4's merge of the last two), the separators of the first interior level computed (L2) and
  // packed, the levels above estimated; each value's overflow pages as they are.
  struct RebuildEstimate {
    uint64_t cells = 0;
    uint64_t cell_bytes = 0;       // leaf cells and their pointers
    uint64_t overflow_pages = 0;   // as the tree has them (a rebuild keeps the same chains)
    uint64_t tree_pages = 0;       // the leaf and interior pages a build would write
  };
  static absl::StatusOr<RebuildEstimate> EstimateRebuild(pager::PageReader& pages,
                                                         double fill = kFullFill);

 private:
  struct Level;
  TreeBuilder(pager::PageWriter& pages, double fill);

  // Adds an encoded item to `level` (creating it), writing a page when the current one is full.
  absl::Status Push(size_t level, absl::string_view item);
  // Writes the level's held page `which` (0 prev, 1 cur) and passes its separator up.
  absl::Status WritePage(size_t level, int which);
  // Writes a page of `items` into a new page, or into `into` when it is not PageNo(0).
  absl::StatusOr<PageNo> WriteNodePage(bool leaf, const std::vector<absl::string_view>& items,
                                       PageNo into);

  pager::PageWriter& pages_;
  const uint32_t usable_;
  const uint32_t target_;  // fill * CellSpace(U), in bytes of cells and pointers
  std::vector<std::unique_ptr<Level>> levels_;  // [0] the leaves
  std::string cell_;     // scratch: the cell being added
  std::string item_;     // scratch: an interior item
  std::string last_key_;  // the previous key (its page may already be written)
  PageNo root_;  // allocated at the first Add (L6)
  uint64_t pairs_ = 0;
  uint32_t node_pages_ = 0;
  bool finished_ = false;
};

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BUILDER_H_
