#include "engine/iterator.h"

#include <cstdint>
#include <utility>

#include "base/compare.h"
#include "base/status_macros.h"
#include "btree/cursor.h"

namespace journalkv {

IteratorOptions IteratorOptions::Prefix(absl::string_view prefix) {
  IteratorOptions o;
  o.lower_bound = std::string(prefix);
  // The successor of every key with the prefix: the prefix with its last byte below 0xff
  // incremented and what follows it dropped.
  std::string upper(prefix);
  while (!upper.empty() && static_cast<uint8_t>(upper.back()) == 0xff) upper.pop_back();
  if (!upper.empty()) {
    upper.back() = static_cast<char>(static_cast<uint8_t>(upper.back()) + 1);
    o.upper_bound = std::move(upper);
  }
  return o;
}

Iterator::Iterator(pager::PageReader& pages, IteratorOptions options)
    : pages_(pages),
      cursor_(std::make_unique<btree::Cursor>(pages)),
      options_(std::move(options)),
      bounded_(options_.lower_bound.has_value() || options_.upper_bound.has_value()) {}

Iterator::~Iterator() = default;

void Iterator::Keep(const absl::Status& s) {
  if (!s.ok() && status_.ok()) status_ = s;
}

bool Iterator::InBounds(absl::string_view key) const {
  if (options_.lower_bound.has_value() && base::CompareBytes(key, *options_.lower_bound) < 0) {
    return false;
  }
  if (options_.upper_bound.has_value() && base::CompareBytes(key, *options_.upper_bound) >= 0) {
    return false;
  }
  return true;
}

void Iterator::Seek(absl::string_view key) {
  if (options_.lower_bound.has_value() && key < *options_.lower_bound) {
    key = *options_.lower_bound;
  }
  Keep(cursor_->Seek(key));
}

void Iterator::SeekToFirst() {
  if (options_.lower_bound.has_value()) {
    Keep(cursor_->Seek(*options_.lower_bound));
  } else {
    Keep(cursor_->SeekToFirst());
  }
}

void Iterator::SeekToLast() {
  if (!options_.upper_bound.has_value()) {
    Keep(cursor_->SeekToLast());
    return;
  }
  // The last key below the upper bound: the one before the first key at or past it.
  Keep(cursor_->Seek(*options_.upper_bound));
  if (!status_.ok()) return;
  if (cursor_->Valid()) {
    Keep(cursor_->Prev());
  } else {
    Keep(cursor_->SeekToLast());
  }
}

void Iterator::Next() { Keep(cursor_->Next()); }
void Iterator::Prev() { Keep(cursor_->Prev()); }

bool Iterator::Valid() {
  const bool valid = cursor_->Valid();
  Keep(cursor_->status());
  Keep(pages_.CheckReads());  // a page read in place in the memory map read zeros (O2)
  return valid && status_.ok() && (!bounded_ || InBounds(cursor_->key()));
}

absl::string_view Iterator::key() const { return cursor_->key(); }

absl::StatusOr<std::string> Iterator::value() {
  absl::StatusOr<std::string> v = cursor_->value();
  Keep(v.status());
  Keep(pages_.CheckReads());  // the copy was made from the page: O2 after it
  if (!status_.ok()) return status_;
  return v;
}

absl::StatusOr<absl::string_view> Iterator::value_view() {
  absl::StatusOr<absl::string_view> v = cursor_->ValueView();
  Keep(v.status());
  return v;
}

absl::Status Iterator::status() const {
  // O2 (vfs/read_map.h): also a fault met while the caller read a view the iterator gave.
  return status_.ok() ? pages_.CheckReads() : status_;
}

namespace internal {

absl::StatusOr<uint64_t> ScanPages(pager::PageReader& pages, absl::string_view from,
                                   uint64_t limit, const IteratorOptions& options,
                                   ScanVisitor visit) {
  if (options.lower_bound.has_value() && from < *options.lower_bound) from = *options.lower_bound;
  const std::optional<std::string>& upper = options.upper_bound;
  btree::Cursor cursor(pages);
  JKV_RETURN_IF_ERROR(cursor.Seek(from));
  uint64_t visited = 0;
  // Whether the scan goes on to a pair with this key: checked before its value is read (one in
  // overflow pages past the bound or the limit would be read for nothing).
  const auto wanted = [&](absl::string_view key) {
    return visited < limit && !(upper.has_value() && base::CompareBytes(key, *upper) >= 0);
  };
  const auto each = [&](absl::string_view key, absl::string_view value) {
    if (!wanted(key)) return false;
    ++visited;
    return visit(key, value);
  };
  // One call out per pair (visit). Within a leaf a read-only cursor hands over its pairs in a
  // loop that keeps its position in registers (ScanInLeaf); the first pair, each leaf's first
  // and any the loop leaves (a value in overflow pages) take the general way.
  while (cursor.Valid() && wanted(cursor.key())) {
    JKV_ASSIGN_OR_RETURN(absl::string_view value, cursor.ValueView());
    JKV_RETURN_IF_ERROR(pages.CheckReads());  // O2: each leaf's first pair, before the visit
    ++visited;
    if (!visit(cursor.key(), value)) break;
    if (!cursor.writable() && !cursor.ScanInLeaf(each)) break;
    if (visited == limit) break;  // before Next, which may read the next leaf for nothing
    JKV_RETURN_IF_ERROR(cursor.Next());
  }
  JKV_RETURN_IF_ERROR(cursor.status());
  JKV_RETURN_IF_ERROR(pages.CheckReads());  // O2: also faults met while the visitor read
  return visited;
}

}  // namespace internal

}  // namespace journalkv
