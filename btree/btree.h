// The B+tree: an ordered map from byte-string keys to byte-string values, stored in pager pages.
//
// Used by engine/ through a transaction's PageReader (reads) or PageWriter (writes). BTree has
// no state of its own: the tree is found through the root page number in header meta slot 0,
// and every call works on the pages of the transaction it is given. Page formats and size
// limits are in btree_format.h; cursors in cursor.h; the structure check in btree_check.h.
//
// Keys are compared with memcmp (a prefix sorts first); the empty key is a valid key. A key may
// hold at most MaxKeySize(usable_size) bytes (1346 at 4096-byte pages) and a value at most
// kMaxValueSize (1 GiB); values that do not fit in their leaf go to overflow page chains.
//
// Errors. InvalidArgument for an oversized key or value, checked before anything is written.
// DataLoss when a page is damaged or the structure is impossible (message names the page).
// Any other error is the pager's (for example ResourceExhausted when the disk is full).
// REQUIRES: after a failed Put or Delete that was not InvalidArgument, the transaction may hold a
// half-made change and must be rolled back.
//
// Thread-safety: as the transaction's (one thread at a time).
#ifndef JOURNALKV_BTREE_BTREE_H_
#define JOURNALKV_BTREE_BTREE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/types.h"
#include "btree/btree_check.h"
#include "btree/btree_format.h"
#include "pager/page_access.h"

namespace journalkv::btree {

// The way to the tree's right-most leaf, remembered between the Puts of one write transaction
// (a sorted bulk load). A caller that passes the same hint to each Put of a transaction, and
// calls Reset() after any other change to the tree (Delete, a Put without it, a rollback),
// has a key greater than every key in the tree go straight to that leaf: no descent from the
// root, no search in each page on the way. Any other key is put the usual way. Append splits
// (SplitHint::kAppend) already leave the left pages full; the hint takes the descent away.
class AppendHint {
 public:
  void Reset() { valid_ = false; }
  bool valid() const { return valid_; }

 private:
  friend class BTree;
  bool valid_ = false;
  PageNo leaf_;
  // The interior pages from the root down to the leaf's parent, each with its cell count (the
  // right-most child of each is the next one down).
  absl::InlinedVector<std::pair<PageNo, int>, 8> interior_;
};

class BTree {
 public:
  BTree() = delete;

  // The value stored under `key`, or nullopt when there is none.
  static absl::StatusOr<std::optional<std::string>> Get(pager::PageReader& pages,
                                                        absl::string_view key);

  // As Get, into a caller-owned string whose capacity is reused (no allocation once it is large
  // enough): true and *value set when `key` is present, false (and *value unchanged) if not.
  static absl::StatusOr<bool> GetInto(pager::PageReader& pages, absl::string_view key,
                                      std::string* value);

  // Stores `value` under `key`, replacing any value it had (and freeing that value's overflow
  // pages). InvalidArgument, naming the limit, for a key longer than MaxKeySize or a value
  // longer than kMaxValueSize; nothing is written then.
  // With `hint` (see AppendHint), a key greater than every key in the tree skips the descent.
  static absl::Status Put(pager::PageWriter& pages, absl::string_view key, absl::string_view value,
                          AppendHint* hint = nullptr);

  // Removes `key` and its value; returns whether it existed. Pages left empty or nearly empty
  // are merged with a sibling or refilled from it, and freed pages go back to the pager's
  // freelist: deleting every key frees every page of the tree (meta slot 0 becomes 0).
  static absl::StatusOr<bool> Delete(pager::PageWriter& pages, absl::string_view key);

  // The number of keys, counted by reading every leaf.
  static absl::StatusOr<uint64_t> Count(pager::PageReader& pages);

  // Checks the whole structure; see CheckTree in btree_check.h.
  static absl::StatusOr<CheckReport> Check(pager::PageReader& pages,
                                           absl::Span<const PageNo> freelist_pages) {
    return CheckTree(pages, freelist_pages);
  }

  // InvalidArgument naming the limit when `key_size` or `value_size` is over it for pages of
  // `usable_size` bytes.
  static absl::Status CheckSizes(uint32_t usable_size, size_t key_size, size_t value_size);
};

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_H_
