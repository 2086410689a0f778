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
// Thread-safety: one thread at a time; destroy it before its transaction ends.
#ifndef JOURNALKV_ENGINE_ITERATOR_H_
#define JOURNALKV_ENGINE_ITERATOR_H_

#include <memory>
#include <string>

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
  explicit Iterator(pager::PageReader& pages);
  void Keep(const absl::Status& s);

  std::unique_ptr<btree::Cursor> cursor_;
  absl::Status status_;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_ITERATOR_H_
