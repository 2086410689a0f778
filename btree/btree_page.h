// Reading and rewriting one b-tree page (leaf or interior; format in btree_format.h).
//
// PageView is the read side used on every lookup: header accessors and binary search over the
// cell pointer array, reading keys in place (no copies, no allocation). Every access stays
// inside the page even when the page is damaged; damage is reported as DataLoss.
//
// The write side has two tiers. The in-place functions (ReserveCell, RemoveCell) handle the
// common case of a cell that fits in its page. Node is a decoded copy of a page that may hold
// more (or less) than a page, used when a page must be split, merged or redistributed; it is
// written back with WriteNodeCells.
//
// Internal to btree/. Thread-compatible.
#ifndef JOURNALKV_BTREE_BTREE_PAGE_H_
#define JOURNALKV_BTREE_BTREE_PAGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/endian.h"
#include "base/types.h"
#include "btree/btree_format.h"

namespace journalkv::btree {

class KeyHints;

// A read-only view of a b-tree page. Cheap to copy; the bytes must outlive it.
class PageView {
 public:
  PageView() = default;

  // Validates the header (type, cell count, content area). DataLoss naming the page otherwise.
  static absl::StatusOr<PageView> Open(PageNo page_no, absl::Span<const uint8_t> page);
  // The same into *out (every read's descent: a PageView returned in a StatusOr was copied in
  // 16-byte loads of fields just stored one by one, which the CPU cannot forward).
  static absl::Status Open(PageNo page_no, absl::Span<const uint8_t> page, PageView* out);

  PageNo page_no() const { return page_no_; }
  PageType type() const { return type_; }
  bool is_leaf() const { return type_ == PageType::kLeaf; }
  int cell_count() const { return cell_count_; }
  uint32_t usable_size() const { return usable_; }
  uint32_t content_start() const { return base::DecodeFixed16(data_ + kContentStartOffset); }
  uint32_t garbage_bytes() const { return base::DecodeFixed16(data_ + kGarbageBytesOffset); }
  PageNo right_child() const { return PageNo(base::DecodeFixed32(data_ + kRightChildOffset)); }
  // Bytes available for new cells and their pointers (after defragmenting).
  uint32_t free_bytes() const {
    return content_start() - (kPageHeaderSize + kCellPointerSize * cell_count_) + garbage_bytes();
  }
  // Bytes taken by cells and their pointers.
  uint32_t used_bytes() const { return CellSpace(usable_) - free_bytes(); }
  absl::Span<const uint8_t> data() const { return absl::Span<const uint8_t>(data_, usable_); }

  uint32_t cell_offset(int i) const {
    return base::DecodeFixed16(data_ + kPageHeaderSize + kCellPointerSize * i);
  }

  // The key of cell i, read in place. REQUIRES: 0 <= i < cell_count(). A cell that does not
  // lie within the page yields "" and marks the view damaged().
  absl::string_view key(int i) const {
    const uint32_t offset = cell_offset(i);
    if (offset + kCellHeaderSize > usable_ || offset < kPageHeaderSize) return Damage();
    const uint32_t key_size = base::DecodeFixed16(data_ + offset);
    if (offset + kCellHeaderSize + key_size > usable_) return Damage();
    return absl::string_view(reinterpret_cast<const char*>(data_) + offset + kCellHeaderSize,
                             key_size);
  }

  // Child i of an interior page, 0 <= i <= cell_count(); i == cell_count() is the right child.
  // A damaged cell yields PageNo(0) and marks the view damaged().
  PageNo child(int i) const;

  // Index of the first cell whose key is >= `key` (cell_count() if none); `*exact` tells
  // whether that key equals `key`. Used on leaves. Both searches use the page's hints when the
  // view has them (set_hints).
  int LowerBound(absl::string_view key, bool* exact) const;
  // Index of the first cell whose key is > `key`: on an interior page, the child to descend to.
  int UpperBound(absl::string_view key) const;

  absl::StatusOr<LeafCell> leaf_cell(int i) const {
    return DecodeLeafCell(page_no_, data(), cell_offset(i));
  }
  // As leaf_cell(i), inline and without a Status on success (scans); false for a damaged
  // cell, which leaf_cell(i) then describes.
  bool leaf_cell_into(int i, LeafCell* cell) const {
    return DecodeLeafCellInto(data(), cell_offset(i), cell) == LeafCellProblem::kNone;
  }
  absl::StatusOr<InteriorCell> interior_cell(int i) const {
    return DecodeInteriorCell(page_no_, data(), cell_offset(i));
  }
  // The encoded size of cell i, or DataLoss.
  absl::StatusOr<uint32_t> cell_size(int i) const;

  // Search through `hints` (key_hints.h), built from the bytes this view reads; nullptr: the
  // plain binary search over the cells.
  void set_hints(const KeyHints* hints) { hints_ = hints; }

  bool damaged() const { return damaged_; }
  // DataLoss naming the page; call when damaged().
  absl::Status DamageError() const;

 private:
  absl::string_view Damage() const {
    damaged_ = true;
    return absl::string_view();
  }

  const uint8_t* data_ = nullptr;
  uint32_t usable_ = 0;
  PageNo page_no_;
  PageType type_ = PageType::kLeaf;
  int cell_count_ = 0;
  const KeyHints* hints_ = nullptr;
  mutable bool damaged_ = false;  // set by const accessors that met a malformed cell
};

// Formats `page` as an empty leaf or interior page.
void InitNodePage(absl::Span<uint8_t> page, PageType type, PageNo right_child);

// Makes room for a cell of `size` bytes at position `index` (shifting later pointers) and
// returns where to encode it, defragmenting the page first when the free bytes are not
// contiguous. Returns nullptr, changing nothing, when the page has too little free space.
// DataLoss when defragmenting finds a damaged cell. REQUIRES: `page` passed PageView::Open.
absl::StatusOr<uint8_t*> ReserveCell(PageNo page_no, absl::Span<uint8_t> page, int index,
                                     uint32_t size);

// Removes cell `index`, whose encoded size is `size`. REQUIRES: the cell is valid.
void RemoveCell(absl::Span<uint8_t> page, int index, uint32_t size);

// A decoded page: its cells as views into storage the Node owns, so the Node may hold more or
// fewer bytes than fit in one page while the tree is being restructured.
struct Node {
  PageType type = PageType::kLeaf;
  PageNo right_child;                                 // interior only
  std::vector<absl::string_view> cells;               // encoded cells in key order
  std::vector<std::unique_ptr<std::string>> storage;  // owns the bytes `cells` point into

  bool is_leaf() const { return type == PageType::kLeaf; }
  int cell_count() const { return static_cast<int>(cells.size()); }
  absl::string_view key(int i) const { return CellKey(cells[i]); }

  // Keeps `bytes` alive as long as the node and returns a view of them.
  absl::string_view Own(std::string bytes);
  // Takes over the storage of `other` (whose cells may then live in this node).
  void AdoptStorage(Node& other);

  // Cell bytes plus cell pointers: what the node needs of CellSpace(U).
  uint64_t bytes() const;

  // Interior only: child i (0..cell_count()), and replacing it.
  PageNo child(int i) const;
  void set_child(int i, PageNo page_no);
};

// Copies and decodes a whole page, checking every cell. DataLoss naming the page on damage.
absl::StatusOr<Node> DecodeNode(PageNo page_no, absl::Span<const uint8_t> page);

// Writes cells [begin, end) of `node` as the whole content of `page`, with `right_child`.
// REQUIRES: they fit.
void WriteNodeCells(absl::Span<uint8_t> page, const Node& node, int begin, int end,
                    PageNo right_child);

// How to choose the split point of an overfull node.
enum class SplitHint {
  kBalanced,  // halves of equal size
  kAppend,    // the last cell was just appended to the right-most page: keep the left page
              // full and start the right one nearly empty (sequential inserts fill pages)
};

// Where to split a node into two pages: for a leaf, the left page gets cells [0, p) and the
// right [p, n); for an interior node cell p moves up to the parent, the left page gets [0, p)
// and the right [p + 1, n). Each side keeps at least one cell, and the larger side is as small
// as possible (kBalanced). REQUIRES: at least 2 cells (leaf) or 3 (interior). With cells of at
// most MaxCellSize and a node of at most 2 * CellSpace - MaxCellSize bytes both sides fit; the
// caller still checks (SplitFits) so that a broken bound is an error, not a corrupt page.
int ChooseSplit(const Node& node, uint32_t usable_size, SplitHint hint);

// True when both sides of split point p fit in a page.
bool SplitFits(const Node& node, uint32_t usable_size, int p);

// The shortest key s with left < s <= right. REQUIRES: left < right.
absl::string_view ShortestSeparator(absl::string_view left, absl::string_view right);

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_PAGE_H_
