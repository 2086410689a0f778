#include "btree/btree_page.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/compare.h"
#include "base/status_macros.h"
#include "btree/key_hints.h"

namespace journalkv::btree {

using base::DecodeFixed16;
using base::DecodeFixed32;
using base::EncodeFixed16;
using base::EncodeFixed32;

namespace {

absl::Status PageError(PageNo page_no, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("page ", page_no.value(), ": ", what));
}

void SetCellCount(uint8_t* p, uint32_t n) { EncodeFixed16(p + kCellCountOffset, n); }
void SetContentStart(uint8_t* p, uint32_t v) { EncodeFixed16(p + kContentStartOffset, v); }
void SetGarbage(uint8_t* p, uint32_t v) { EncodeFixed16(p + kGarbageBytesOffset, v); }
uint8_t* PointerAt(uint8_t* p, int i) { return p + kPageHeaderSize + kCellPointerSize * i; }

// Rewrites the page with its cells packed at the end, in pointer order, and no garbage.
absl::Status Defragment(PageNo page_no, absl::Span<uint8_t> page) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[page.size()]);
  std::memcpy(copy.get(), page.data(), page.size());
  const absl::Span<const uint8_t> old(copy.get(), page.size());
  JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(page_no, old));  // reads only the copy
  const uint32_t pointers_end = kPageHeaderSize + kCellPointerSize * view.cell_count();
  uint32_t end = static_cast<uint32_t>(page.size());
  for (int i = 0; i < view.cell_count(); ++i) {
    JKV_ASSIGN_OR_RETURN(uint32_t size, view.cell_size(i));
    if (size > end - pointers_end) {
      return PageError(page_no, "cells take more bytes than the page has");
    }
    end -= size;
    std::memmove(page.data() + end, old.data() + view.cell_offset(i), size);
    EncodeFixed16(PointerAt(page.data(), i), end);
  }
  SetContentStart(page.data(), end);
  SetGarbage(page.data(), 0);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PageView> PageView::Open(PageNo page_no, absl::Span<const uint8_t> page) {
  PageView v;
  JKV_RETURN_IF_ERROR(Open(page_no, page, &v));
  return v;
}

absl::Status PageView::Open(PageNo page_no, absl::Span<const uint8_t> page, PageView* out) {
  const uint8_t type = page[kTypeOffset];
  if (type != static_cast<uint8_t>(PageType::kLeaf) &&
      type != static_cast<uint8_t>(PageType::kInterior)) {
    return PageError(page_no, absl::StrCat("not a b-tree page (type byte 0x",
                                           absl::Hex(type, absl::kZeroPad2), ")"));
  }
  PageView& v = *out;
  v = PageView();
  v.data_ = page.data();
  v.usable_ = static_cast<uint32_t>(page.size());
  v.page_no_ = page_no;
  v.type_ = static_cast<PageType>(type);
  v.cell_count_ = DecodeFixed16(page.data() + kCellCountOffset);
  const uint32_t start = v.content_start();
  const uint32_t pointers_end = kPageHeaderSize + kCellPointerSize * v.cell_count_;
  if (start < pointers_end || start > v.usable_ || v.garbage_bytes() > v.usable_ - start) {
    return PageError(
        page_no, absl::StrCat("impossible header (cell_count ", v.cell_count_, ", content_start ",
                              start, ", garbage_bytes ", v.garbage_bytes(), ")"));
  }
  return absl::OkStatus();
}

PageNo PageView::child(int i) const {
  if (i == cell_count_) return right_child();
  const uint32_t offset = cell_offset(i);
  if (offset + kCellHeaderSize > usable_ || offset < kPageHeaderSize) {
    Damage();
    return PageNo(0);
  }
  return PageNo(DecodeFixed32(data_ + offset + 2));
}

int PageView::LowerBound(absl::string_view key, bool* exact) const {
  if (hints_ != nullptr) return hints_->LowerBound(*this, key, exact);
  int lo = 0;
  int hi = cell_count_;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (base::CompareBytes(this->key(mid), key) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  *exact = lo < cell_count_ && this->key(lo) == key;
  return lo;
}

int PageView::UpperBound(absl::string_view key) const {
  if (hints_ != nullptr) return hints_->UpperBound(*this, key);
  int lo = 0;
  int hi = cell_count_;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (base::CompareBytes(this->key(mid), key) <= 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

absl::StatusOr<uint32_t> PageView::cell_size(int i) const {
  if (is_leaf()) {
    JKV_ASSIGN_OR_RETURN(LeafCell cell, leaf_cell(i));
    return cell.size;
  }
  JKV_ASSIGN_OR_RETURN(InteriorCell cell, interior_cell(i));
  return cell.size;
}

absl::Status PageView::DamageError() const {
  return PageError(page_no_, "a cell pointer or key size points outside the page");
}

void InitNodePage(absl::Span<uint8_t> page, PageType type, PageNo right_child) {
  uint8_t* p = page.data();
  std::memset(p, 0, kPageHeaderSize);
  p[kTypeOffset] = static_cast<uint8_t>(type);
  SetContentStart(p, static_cast<uint32_t>(page.size()));
  EncodeFixed32(p + kRightChildOffset, right_child.value());
}

absl::StatusOr<uint8_t*> ReserveCell(PageNo page_no, absl::Span<uint8_t> page, int index,
                                     uint32_t size) {
  uint8_t* p = page.data();
  const uint32_t n = DecodeFixed16(p + kCellCountOffset);
  const uint32_t pointers_end = kPageHeaderSize + kCellPointerSize * n;
  const uint32_t need = size + kCellPointerSize;
  uint32_t start = DecodeFixed16(p + kContentStartOffset);
  const uint32_t garbage = DecodeFixed16(p + kGarbageBytesOffset);
  if (start - pointers_end + garbage < need) return nullptr;
  if (start - pointers_end < need) {
    JKV_RETURN_IF_ERROR(Defragment(page_no, page));
    start = DecodeFixed16(p + kContentStartOffset);
  }
  start -= size;
  SetContentStart(p, start);
  uint8_t* slot = PointerAt(p, index);
  std::memmove(slot + kCellPointerSize, slot, kCellPointerSize * (n - index));
  EncodeFixed16(slot, start);
  SetCellCount(p, n + 1);
  return p + start;
}

void RemoveCell(absl::Span<uint8_t> page, int index, uint32_t size) {
  uint8_t* p = page.data();
  const uint32_t n = DecodeFixed16(p + kCellCountOffset);
  uint8_t* slot = PointerAt(p, index);
  const uint32_t offset = DecodeFixed16(slot);
  std::memmove(slot, slot + kCellPointerSize, kCellPointerSize * (n - 1 - index));
  SetCellCount(p, n - 1);
  const uint32_t start = DecodeFixed16(p + kContentStartOffset);
  if (offset == start) {
    SetContentStart(p, start + size);  // the lowest cell: give its bytes back to the gap
  } else {
    SetGarbage(p, DecodeFixed16(p + kGarbageBytesOffset) + size);
  }
}

absl::string_view Node::Own(std::string bytes) {
  storage.push_back(std::make_unique<std::string>(std::move(bytes)));
  return *storage.back();
}

void Node::AdoptStorage(Node& other) {
  for (auto& s : other.storage) storage.push_back(std::move(s));
  other.storage.clear();
}

uint64_t Node::bytes() const {
  uint64_t total = 0;
  for (absl::string_view c : cells) total += c.size() + kCellPointerSize;
  return total;
}

PageNo Node::child(int i) const {
  if (i == cell_count()) return right_child;
  return ParseInteriorCell(cells[i]).child;
}

void Node::set_child(int i, PageNo page_no) {
  if (i == cell_count()) {
    right_child = page_no;
    return;
  }
  cells[i] = Own(MakeInteriorCell(key(i), page_no));
}

absl::StatusOr<Node> DecodeNode(PageNo page_no, absl::Span<const uint8_t> page) {
  Node node;
  const absl::string_view copy =
      node.Own(std::string(reinterpret_cast<const char*>(page.data()), page.size()));
  const absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(copy.data()), copy.size());
  JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(page_no, bytes));
  node.type = view.type();
  node.right_child = view.is_leaf() ? PageNo(0) : view.right_child();
  node.cells.reserve(view.cell_count() + 1);
  for (int i = 0; i < view.cell_count(); ++i) {
    JKV_ASSIGN_OR_RETURN(uint32_t size, view.cell_size(i));
    node.cells.push_back(copy.substr(view.cell_offset(i), size));
  }
  return node;
}

void WriteNodeCells(absl::Span<uint8_t> page, const Node& node, int begin, int end,
                    PageNo right_child) {
  InitNodePage(page, node.type, node.is_leaf() ? PageNo(0) : right_child);
  uint8_t* p = page.data();
  uint32_t start = static_cast<uint32_t>(page.size());
  for (int i = begin; i < end; ++i) {
    const absl::string_view cell = node.cells[i];
    start -= static_cast<uint32_t>(cell.size());
    std::memcpy(p + start, cell.data(), cell.size());
    EncodeFixed16(PointerAt(p, i - begin), start);
  }
  JKV_CHECK(start >= kPageHeaderSize + kCellPointerSize * (end - begin));
  SetCellCount(p, end - begin);
  SetContentStart(p, start);
}

int ChooseSplit(const Node& node, uint32_t usable_size, SplitHint hint) {
  const int n = node.cell_count();
  const uint64_t cap = CellSpace(usable_size);
  // Each side keeps at least one cell; an interior split also moves cell p up.
  const int first = 1;
  const int last = node.is_leaf() ? n - 1 : n - 2;
  if (hint == SplitHint::kAppend) {
    const int p = node.is_leaf() ? n - 1 : n - 2;
    uint64_t left = 0;
    for (int i = 0; i < p; ++i) left += node.cells[i].size() + kCellPointerSize;
    if (p >= first && left <= cap) return p;
  }
  std::vector<uint64_t> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + node.cells[i].size() + kCellPointerSize;
  int best = first;
  uint64_t best_max = UINT64_MAX;
  for (int p = first; p <= last; ++p) {
    const uint64_t left = prefix[p];
    const uint64_t right = prefix[n] - prefix[node.is_leaf() ? p : p + 1];
    const uint64_t worst = std::max(left, right);
    if (worst < best_max) {
      best_max = worst;
      best = p;
    }
  }
  return best;
}

bool SplitFits(const Node& node, uint32_t usable_size, int p) {
  const int n = node.cell_count();
  if (p < 1 || p > (node.is_leaf() ? n - 1 : n - 2)) return false;
  uint64_t left = 0;
  uint64_t right = 0;
  for (int i = 0; i < p; ++i) left += node.cells[i].size() + kCellPointerSize;
  for (int i = node.is_leaf() ? p : p + 1; i < n; ++i) {
    right += node.cells[i].size() + kCellPointerSize;
  }
  return left <= CellSpace(usable_size) && right <= CellSpace(usable_size);
}

absl::string_view ShortestSeparator(absl::string_view left, absl::string_view right) {
  size_t i = 0;
  const size_t common = std::min(left.size(), right.size());
  while (i < common && left[i] == right[i]) ++i;
  return right.substr(0, i + 1);
}

}  // namespace journalkv::btree
