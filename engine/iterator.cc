#include "engine/iterator.h"

#include "btree/cursor.h"

namespace journalkv {

Iterator::Iterator(pager::PageReader& pages) : cursor_(std::make_unique<btree::Cursor>(pages)) {}

Iterator::~Iterator() = default;

void Iterator::Keep(const absl::Status& s) {
  if (!s.ok() && status_.ok()) status_ = s;
}

void Iterator::Seek(absl::string_view key) { Keep(cursor_->Seek(key)); }
void Iterator::SeekToFirst() { Keep(cursor_->SeekToFirst()); }
void Iterator::SeekToLast() { Keep(cursor_->SeekToLast()); }
void Iterator::Next() { Keep(cursor_->Next()); }
void Iterator::Prev() { Keep(cursor_->Prev()); }

bool Iterator::Valid() {
  const bool valid = cursor_->Valid();
  Keep(cursor_->status());
  return valid && status_.ok();
}

absl::string_view Iterator::key() const { return cursor_->key(); }

absl::StatusOr<std::string> Iterator::value() {
  absl::StatusOr<std::string> v = cursor_->value();
  Keep(v.status());
  return v;
}

absl::StatusOr<absl::string_view> Iterator::value_view() {
  absl::StatusOr<absl::string_view> v = cursor_->ValueView();
  Keep(v.status());
  return v;
}

absl::Status Iterator::status() const { return status_; }

}  // namespace journalkv
