// Cursor: ordered iteration over the B+tree of one transaction, forward and backward.
//
// Used by engine/'s iterators and scans. A cursor is made over the transaction's PageReader (a
// write transaction's PageWriter is one) and keeps the pages from the root to its leaf pinned,
// so stepping to the next key reads no page at all until the leaf is used up.
//
//   Cursor c(txn);
//   for (JKV_RETURN_IF_ERROR(c.Seek("b")); c.Valid(); JKV_RETURN_IF_ERROR(c.Next())) {
//     JKV_ASSIGN_OR_RETURN(std::string v, c.value());
//     ... c.key() ...
//   }
//   JKV_RETURN_IF_ERROR(c.status());
//
// Writes of the same transaction. The cursor stays usable across BTree::Put and BTree::Delete
// made through the same transaction: its position is its current key K, which a cursor over a
// PageWriter keeps a copy of (a cursor over a read-only transaction reads K in place, as its
// pages cannot change). It notices a write through the write counter in meta slot 1
// (btree_format.h) and then, on its next call:
//   - Valid() and value() move it to the first key >= K: it stays on K if K still exists, else
//     it moves on to the next greater key (and Valid() is false when there is none);
//   - Next() moves to the first key > K and Prev() to the last key < K, so deleting the current
//     key and then calling Next() skips nothing;
//   - Seek, SeekToFirst and SeekToLast behave as always.
// key() returns the key the cursor was last positioned on, until the next call of a method
// above. A cursor that is not Valid() stays so across writes, even if keys are added after K.
//
// Errors. Positioning methods return DataLoss for a damaged page (and the cursor is then not
// Valid()); an error met by Valid() while repositioning after a write is kept in status().
//
// Thread-safety: as the transaction's (one thread at a time). The cursor must not outlive the
// transaction.
#ifndef JOURNALKV_BTREE_CURSOR_H_
#define JOURNALKV_BTREE_CURSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/compare.h"
#include "base/types.h"
#include "btree/btree_page.h"
#include "pager/page_access.h"

namespace journalkv::btree {

class Cursor {
 public:
  // The cursor starts not Valid(); position it with a Seek method.
  explicit Cursor(pager::PageReader& pages);

  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;

  // Positions the cursor at the first key >= `key` (not Valid() when there is none).
  absl::Status Seek(absl::string_view key);
  // Positions the cursor at the smallest key (not Valid() when the tree is empty).
  absl::Status SeekToFirst();
  // Positions the cursor at the largest key (not Valid() when the tree is empty).
  absl::Status SeekToLast();

  // Moves to the next greater key; past the last key the cursor is no longer Valid().
  // FailedPrecondition when the cursor is not Valid().
  ABSL_ATTRIBUTE_ALWAYS_INLINE absl::Status Next() {
    // Inline, the step a scan takes almost every time: a read-only cursor to the next cell of
    // its leaf, well formed and in order. Anything else (the leaf's end, a write to the tree,
    // damage, which NextSlow reports) takes the general way. Forced: with a second caller in
    // engine/iterator.cc, GCC made it a call there, and an Iterator's scan took 5-7% longer.
    if (valid_ && !writable_) {
      Frame& leaf = frames_.back();
      const int next = leaf.index + 1;
      LeafCell cell;
      if (next < leaf.view.cell_count() && leaf.view.leaf_cell_into(next, &cell) &&
          base::CompareBytes(key_, cell.key) < 0) {
        leaf.index = next;
        cell_ = cell;
        key_ = cell.key;
        return absl::OkStatus();
      }
    }
    return NextSlow();
  }
  // For scans (the transactions' Scan in engine/): steps to each next pair of the current leaf
  // and calls fn(key, value) with it, until fn returns false or the leaf's next pair is not one
  // it can hand over as it lies: the leaf's end, a value in overflow pages, a cell out of order
  // or malformed stop it before that pair, and Next takes the general way to it. The cursor is
  // left on the last pair fn was called with. Returns false when fn did. Nothing is stored in
  // the cursor per pair, only once at the end. REQUIRES: Valid() and !writable().
  template <typename Fn>
  bool ScanInLeaf(Fn&& fn) {
    Frame& leaf = frames_.back();
    const int count = leaf.view.cell_count();
    int index = leaf.index;
    absl::string_view key = key_;
    LeafCell cell = cell_;
    LeafCell next;
    bool more = true;
    while (index + 1 < count && leaf.view.leaf_cell_into(index + 1, &next) &&
           next.local_value.size() == next.value_size && base::CompareBytes(key, next.key) < 0) {
      ++index;
      cell = next;
      key = next.key;
      if (!fn(key, absl::string_view(next.local_value.data(), next.value_size))) {
        more = false;
        break;
      }
    }
    if (index != leaf.index) {
      leaf.index = index;
      cell_ = cell;
      key_ = key;
    }
    return more;
  }

  // Moves to the next smaller key; before the first key the cursor is no longer Valid().
  // FailedPrecondition when the cursor is not Valid().
  absl::Status Prev();

  // Whether the cursor is on a key. Repositions it first when the tree has been written since
  // the cursor last moved (see the header comment); an error doing so is kept in status().
  bool Valid() { return writable_ && valid_ ? Reposition() : valid_; }

  // The current key. REQUIRES: Valid(). The view is valid until the cursor next moves.
  absl::string_view key() const { return key_; }

  // A copy of the current key's value, read from its overflow chain when it has one.
  // FailedPrecondition when the cursor is not Valid(); DataLoss for a damaged page.
  absl::StatusOr<std::string> value();
  // As value(), into a caller-owned string whose capacity is reused (for scans).
  absl::Status ReadValue(std::string* value);
  // The current key's value without a copy when it is stored in the leaf (a view into the
  // pinned page), else assembled from its overflow chain into a buffer the cursor owns. The
  // view is valid until the cursor next moves or the transaction next writes.
  absl::StatusOr<absl::string_view> ValueView() {
    if (valid_ && !writable_ && cell_.local_value.size() == cell_.value_size) {
      // In the leaf (the inline case of CurrentValue). Built from the pointer and value_size,
      // not by copying local_value whole: cell_ was just stored in pieces that local_value
      // straddles, and one 16-byte load of it cannot be forwarded from them (that stall was
      // most of this call's time in a scan).
      return absl::string_view(cell_.local_value.data(), cell_.value_size);
    }
    return CurrentValue(&value_buffer_);
  }

  // Whether the cursor reads through a PageWriter, whose pages can change under it.
  bool writable() const { return writable_; }

  // The error Valid() met while repositioning, or OK.
  const absl::Status& status() const { return status_; }

 private:
  // One pinned page on the path from the root to the current leaf.
  struct Frame {
    pager::PageRef ref;
    PageView view;
    int index = 0;  // leaf: the current cell; interior: the child the path goes through
  };
  enum class Edge { kFirst, kLast };

  bool TreeChanged() const;
  // Valid() of a cursor over a PageWriter: re-seeks first when the tree has changed.
  bool Reposition();
  absl::StatusOr<absl::string_view> CurrentValue(std::string* assembled);
  void Reset();
  absl::Status LoadKey();
  absl::Status PushPage(PageNo page_no, PageNo referrer);
  absl::Status DescendEdge(PageNo page_no, PageNo referrer, Edge edge);
  absl::Status SeekImpl(absl::string_view key);
  absl::Status SeekEdge(Edge edge);
  absl::Status StepLeaf(int direction);
  void PrefetchSibling(const Frame& parent, int direction);
  absl::Status Step(int direction);
  absl::Status NextSlow();

  pager::PageReader& pages_;
  // Whether `pages_` is a PageWriter, whose pages can change under the cursor.
  const bool writable_;
  std::vector<Frame> frames_;        // root first; the leaf last when valid_
  std::vector<Frame> spare_frames_;  // the previous position's pages, during Seek only
  // The current key: in the leaf page when !writable_, else in key_copy_.
  absl::string_view key_;
  std::string key_copy_;
  std::string prev_key_;  // Step's copy of the key it moves from, where one is needed
  // The current cell, decoded by LoadKey; its views point into the pinned leaf, which does
  // not change while the tree does not (Valid() re-seeks, and so reloads it, when it has).
  LeafCell cell_;
  std::string value_buffer_;  // ValueView()'s value when it lives in overflow pages
  bool valid_ = false;
  uint64_t seen_writes_ = 0;  // write_count() when the cursor last moved (writable_ only)
  absl::Status status_;
};

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_CURSOR_H_
