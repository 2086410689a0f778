#include "btree/cursor.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/compare.h"
#include "base/prefetch.h"
#include "base/status_macros.h"
#include "btree/btree_format.h"
#include "btree/btree_internal.h"
#include "btree/btree_overflow.h"

namespace journalkv::btree {

namespace {

constexpr PageNo kHeaderPage(1);

absl::Status NotOnKey() { return absl::FailedPreconditionError("cursor is not on a key"); }

}  // namespace

// The one use of RTTI in btree/: a read-only transaction's pages never change, so its cursors
// need neither a copy of their key nor a look at the write counter on every step.
Cursor::Cursor(pager::PageReader& pages)
    : pages_(pages), writable_(dynamic_cast<pager::PageWriter*>(&pages) != nullptr) {
  frames_.reserve(8);
}

bool Cursor::TreeChanged() const {
  return writable_ && static_cast<pager::PageWriter&>(pages_).write_count() != seen_writes_;
}

void Cursor::Reset() {
  valid_ = false;
  frames_.clear();
  if (writable_) seen_writes_ = static_cast<pager::PageWriter&>(pages_).write_count();
  status_ = absl::OkStatus();
}

// Decodes the whole cell once: a scan then reads the value without decoding it again.
absl::Status Cursor::LoadKey() {
  const Frame& leaf = frames_.back();
  // Decoded into a local and copied: key_ taken from cell_ just stored would be a 16-byte load
  // of two 8-byte stores, which the CPU cannot forward (a stall that was 12% of a scan).
  LeafCell cell;
  if (!leaf.view.leaf_cell_into(leaf.index, &cell)) {
    return leaf.view.leaf_cell(leaf.index).status();  // DataLoss saying what is wrong
  }
  cell_ = cell;
  if (writable_) {
    key_copy_.assign(cell.key.data(), cell.key.size());
    key_ = key_copy_;
  } else {
    key_ = cell.key;  // the leaf stays pinned in frames_ while the cursor is on it
  }
  valid_ = true;
  return absl::OkStatus();
}

absl::Status Cursor::PushPage(PageNo page_no, PageNo referrer) {
  if (frames_.size() > static_cast<size_t>(kMaxDepth)) {
    return absl::DataLossError(absl::StrCat("page ", page_no.value(), ": the tree is deeper than ",
                                            kMaxDepth, " levels (a cycle?)"));
  }
  PinnedPage page;
  JKV_RETURN_IF_ERROR(ReadNodePage(pages_, page_no, referrer, &page));
  frames_.push_back(Frame{std::move(page.ref), page.view, 0});
  return absl::OkStatus();
}

// Pushes the pages from `page_no` down to its first or last leaf, and positions that leaf on
// its first or last cell (index -1 for an empty leaf).
absl::Status Cursor::DescendEdge(PageNo page_no, PageNo referrer, Edge edge) {
  while (true) {
    JKV_RETURN_IF_ERROR(PushPage(page_no, referrer));
    Frame& f = frames_.back();
    const int n = f.view.cell_count();
    if (f.view.is_leaf()) {
      f.index = edge == Edge::kFirst ? 0 : n - 1;
      return absl::OkStatus();
    }
    f.index = edge == Edge::kFirst ? 0 : n;
    const PageNo child = f.view.child(f.index);
    if (f.view.damaged()) return f.view.DamageError();
    referrer = page_no;
    page_no = child;
  }
}

// Leaves the current leaf in `direction` (+1 or -1) for the nearest non-empty leaf beyond it,
// positioned on its first (or last) key; not valid when there is none.
absl::Status Cursor::StepLeaf(int direction) {
  valid_ = false;
  frames_.pop_back();
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    const int next = f.index + direction;
    if (next < 0 || next > f.view.cell_count()) {
      frames_.pop_back();
      continue;
    }
    f.index = next;
    const PageNo child = f.view.child(next);
    if (f.view.damaged()) return f.view.DamageError();
    JKV_RETURN_IF_ERROR(
        DescendEdge(child, f.view.page_no(), direction > 0 ? Edge::kFirst : Edge::kLast));
    if (frames_.back().view.cell_count() == 0) {  // an empty leaf: keep going
      frames_.pop_back();
      continue;
    }
    if (frames_.size() >= 2) PrefetchSibling(frames_[frames_.size() - 2], direction);
    return LoadKey();
  }
  return absl::OkStatus();
}

// The next leaf's first steps (its header and pointers, then its first cell, which a leaf
// written whole keeps at its end) are cache misses; asked for while this leaf is scanned, they
// overlap with it. Only a page the transaction has at hand: a scan that ends in this leaf must
// not read one more page from the file.
void Cursor::PrefetchSibling(const Frame& parent, int direction) {
  const int next = parent.index + direction;
  if (next < 0 || next > parent.view.cell_count()) return;
  PageView view = parent.view;  // a malformed cell marks the copy, not the frame's view
  const PageNo sibling = view.child(next);
  if (view.damaged() || sibling.value() == 0) return;
  const uint8_t* bytes = pages_.BytesAtHand(sibling);
  if (bytes == nullptr) return;
  const size_t size = pages_.usable_size();
  base::Prefetch(bytes);
  base::Prefetch(bytes + 64);
  base::Prefetch(bytes + size - 64);
  base::Prefetch(bytes + size - 128);
}

absl::Status Cursor::SeekEdge(Edge edge) {
  Reset();
  const PageNo root = RootPage(pages_);
  if (root.value() == 0) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(DescendEdge(root, kHeaderPage, edge));
  if (frames_.back().view.cell_count() == 0) {
    return StepLeaf(edge == Edge::kFirst ? 1 : -1);
  }
  return LoadKey();
}

absl::Status Cursor::Seek(absl::string_view key) {
  // A cursor's first Seek (every scan's) has no pages to keep, and keeps the frames it reserved
  // (swapped away, the descent regrew them one reallocation per level).
  if (frames_.empty()) return SeekImpl(key);
  // `key` may be key() itself, a view into a page pinned by frames_: keep those pages pinned
  // until the descent is done.
  spare_frames_.swap(frames_);
  absl::Status status = SeekImpl(key);
  spare_frames_.clear();
  return status;
}

absl::Status Cursor::SeekImpl(absl::string_view key) {
  Reset();
  PageNo page_no = RootPage(pages_);
  if (page_no.value() == 0) return absl::OkStatus();
  PageNo referrer = kHeaderPage;
  absl::Status status;
  while (status.ok()) {
    status = PushPage(page_no, referrer);
    if (!status.ok()) break;
    Frame& f = frames_.back();
    if (f.view.is_leaf()) {
      bool exact = false;
      f.index = f.view.LowerBound(key, &exact);
      if (f.view.damaged()) {
        status = f.view.DamageError();
      } else {
        status = f.index < f.view.cell_count() ? LoadKey() : StepLeaf(1);
      }
      break;
    }
    f.index = f.view.UpperBound(key);
    referrer = page_no;
    page_no = f.view.child(f.index);
    if (f.view.damaged()) status = f.view.DamageError();
  }
  if (!status.ok()) Reset();
  return status;
}

absl::Status Cursor::SeekToFirst() {
  absl::Status status = SeekEdge(Edge::kFirst);
  if (!status.ok()) Reset();
  return status;
}

absl::Status Cursor::SeekToLast() {
  absl::Status status = SeekEdge(Edge::kLast);
  if (!status.ok()) Reset();
  return status;
}

// Moves one key in `direction` and checks that the keys come in order. Pages carry valid
// checksums even when a buggy or hostile writer sealed cells out of order, and a scan must
// not hand such keys out as good (the fuzzer found duplicated and descending keys): one
// comparison per step, and a copy of the key only when leaving a leaf (or, for a writable
// cursor, the buffer swap that costs nothing).
absl::Status Cursor::Step(int direction) {
  Frame& leaf = frames_.back();
  leaf.index += direction;
  const bool same_leaf = leaf.index >= 0 && leaf.index < leaf.view.cell_count();
  absl::string_view prev = key_;  // a read-only cursor's key stays in the leaf, still pinned
  if (writable_) {
    prev_key_.swap(key_copy_);
    prev = prev_key_;
  } else if (!same_leaf) {
    prev_key_.assign(key_.data(), key_.size());
    prev = prev_key_;
  }
  JKV_RETURN_IF_ERROR(same_leaf ? LoadKey() : StepLeaf(direction));
  if (valid_ && (direction > 0 ? base::CompareBytes(prev, key_) >= 0
                               : base::CompareBytes(key_, prev) >= 0)) {
    return absl::DataLossError(absl::StrCat("page ", frames_.back().view.page_no().value(),
                                            ": keys out of order"));
  }
  return absl::OkStatus();
}

absl::Status Cursor::NextSlow() {
  if (!valid_) return NotOnKey();
  if (TreeChanged()) {  // move to the first key > key_ in the tree as it is now
    const std::string current(key_);
    JKV_RETURN_IF_ERROR(Seek(current));
    if (valid_ && key_ == current) return Next();
    return absl::OkStatus();
  }
  absl::Status status = Step(1);
  if (!status.ok()) Reset();
  return status;
}

absl::Status Cursor::Prev() {
  if (!valid_) return NotOnKey();
  if (TreeChanged()) {  // move to the last key < key_ in the tree as it is now
    const std::string current(key_);
    JKV_RETURN_IF_ERROR(Seek(current));
    return valid_ ? Prev() : SeekToLast();
  }
  absl::Status status = Step(-1);
  if (!status.ok()) Reset();
  return status;
}

bool Cursor::Reposition() {
  if (TreeChanged()) {
    const std::string current(key_);
    absl::Status status = Seek(current);
    if (!status.ok()) status_ = std::move(status);
  }
  return valid_;
}

// The current value: a view into the leaf when it is stored there, else assembled from its
// overflow chain into *assembled.
absl::StatusOr<absl::string_view> Cursor::CurrentValue(std::string* assembled) {
  if (!Valid()) return status_.ok() ? NotOnKey() : status_;  // re-seeks (and reloads cell_)
  if (cell_.local_value.size() == cell_.value_size) return cell_.local_value;
  JKV_RETURN_IF_ERROR(btree::ReadValue(pages_, frames_.back().view.page_no(), cell_, assembled));
  return absl::string_view(*assembled);
}

absl::Status Cursor::ReadValue(std::string* value) {
  JKV_ASSIGN_OR_RETURN(absl::string_view v, CurrentValue(value));
  if (v.data() != value->data()) value->assign(v.data(), v.size());  // it was in the leaf
  return absl::OkStatus();
}

absl::StatusOr<std::string> Cursor::value() {
  std::string value;
  JKV_RETURN_IF_ERROR(ReadValue(&value));
  return value;
}

}  // namespace journalkv::btree
