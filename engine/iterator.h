// Iterator: ordered iteration over the keys of a transaction (public API).
//
//   auto it = txn->NewIterator();
//   for (it->Seek("b"); it->Valid(); it->Next()) { use(it->key(), it->value()); }
//   JKV_RETURN_IF_ERROR(it->status());
//
// An iterator of a write transaction sees that transaction's writes, also those made while it
// is open: after a write it stays on its key if the key still exists, else it moves to the next
// greater key (Next and Prev step from the key it was on). Positioning methods never fail
// loudly: an error (a damaged page) makes the iterator not Valid() and is kept in status().
//
// Bounds (IteratorOptions): an iterator made with a lower bound (inclusive) or an upper bound
// (exclusive) sees only the keys in between: Seek and SeekToFirst start at the lower bound at
// the earliest, SeekToLast at the last key below the upper bound, and the iterator stops being
// Valid() where the keys leave the range, in either direction. IteratorOptions::Prefix(p)
// bounds it to the keys that start with p.
//
// Thread-safety: one thread at a time; destroy it before its transaction ends.
#ifndef JOURNALKV_ENGINE_ITERATOR_H_
#define JOURNALKV_ENGINE_ITERATOR_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace journalkv {

namespace btree {
class Cursor;
}  // namespace btree
namespace pager {
class PageReader;
}  // namespace pager

// What ReadTransaction::Scan and WriteTransaction::Scan call with each pair, in key order; the
// views last until it returns. Returning false stops the scan after that pair.
using ScanVisitor = absl::FunctionRef<bool(absl::string_view key, absl::string_view value)>;

struct IteratorOptions {
  std::optional<std::string> lower_bound;  // the first key it may show (inclusive)
  std::optional<std::string> upper_bound;  // the first key past its range (exclusive)

  // The keys that start with `prefix`: [prefix, the least key greater than every such key).
  // An empty prefix (or one of 0xff bytes only) has no upper bound.
  static IteratorOptions Prefix(absl::string_view prefix);
};

class Iterator {
 public:
  ~Iterator();
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  void Seek(absl::string_view key);  // the first key >= key
  void SeekToFirst();
  void SeekToLast();
  void Next();  // REQUIRES: Valid()
  void Prev();  // REQUIRES: Valid()
  bool Valid();

  // REQUIRES: Valid(). The view lasts until the iterator moves.
  absl::string_view key() const;
  // REQUIRES: Valid(). A copy of the value (values may be large and live in overflow pages).
  absl::StatusOr<std::string> value();
  // REQUIRES: Valid(). The value without a copy: the view lasts until the iterator moves or
  // the transaction writes. Scans that only look at each value should prefer it.
  absl::StatusOr<absl::string_view> value_view();

  // The first error met, or OK.
  absl::Status status() const;

 private:
  friend class ReadTransaction;
  friend class WriteTransaction;
  Iterator(pager::PageReader& pages, IteratorOptions options);
  void Keep(const absl::Status& s);
  bool InBounds(absl::string_view key) const;

  const pager::PageReader& pages_;
  std::unique_ptr<btree::Cursor> cursor_;
  const IteratorOptions options_;
  const bool bounded_;  // options_ has a bound: Valid checks the key against it
  absl::Status status_;
};

namespace internal {
// The scans of both transaction kinds (engine/db.h): a cursor on the stack over `pages`, from
// the first key >= max(from, lower bound) while below the upper bound, at most `limit` pairs.
absl::StatusOr<uint64_t> ScanPages(pager::PageReader& pages, absl::string_view from,
                                   uint64_t limit, const IteratorOptions& options,
                                   ScanVisitor visit);
}  // namespace internal

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_ITERATOR_H_
