#include "btree/builder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "btree/btree.h"
#include "btree/btree_format.h"
#include "btree/btree_internal.h"
#include "btree/btree_overflow.h"
#include "btree/btree_page.h"

namespace journalkv::btree {

namespace {

// An interior item: the child page, then the separator before it ([4 bytes child][key]).
constexpr uint32_t kItemChildSize = 4;

PageNo ItemChild(absl::string_view item) {
  return PageNo(base::DecodeFixed32(reinterpret_cast<const uint8_t*>(item.data())));
}
absl::string_view ItemKey(absl::string_view item) { return item.substr(kItemChildSize); }

// The key of an encoded leaf cell.
absl::string_view LeafKey(absl::string_view cell) {
  const uint32_t k = base::DecodeFixed16(reinterpret_cast<const uint8_t*>(cell.data()));
  return cell.substr(kCellHeaderSize, k);
}

}  // namespace

// One page being filled: its items back to back in `data`, item i ending at ends[i].
struct Page {
  std::string data;
  std::vector<uint32_t> ends;
  uint64_t cost = 0;        // bytes of CellSpace the page's cells and pointers take
  std::string sep_before;  // the separator its parent gets for it (unused for the first page)

  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  absl::string_view item(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends[i - 1];
    return absl::string_view(data).substr(begin, ends[i] - begin);
  }
  void Clear() {
    data.clear();
    ends.clear();
    cost = 0;
    sep_before.clear();
  }
};

struct TreeBuilder::Level {
  bool leaf = true;
  Page prev;  // complete, held back for L4 until the level's end is known
  Page cur;   // being filled
  bool wrote_any = false;  // a page of this level has been written
};

namespace {

// What item `item` adds to a page already holding `count` items (L1, L3): a leaf cell and its
// pointer; an interior item the cell of its separator, except the page's first child, whose
// separator goes up to the parent instead.
uint32_t ItemCost(bool leaf, absl::string_view item, size_t count) {
  if (leaf) return static_cast<uint32_t>(item.size()) + kCellPointerSize;
  if (count == 0) return 0;
  return InteriorCellSize(static_cast<uint32_t>(ItemKey(item).size())) + kCellPointerSize;
}

}  // namespace

TreeBuilder::TreeBuilder(pager::PageWriter& pages, double fill)
    : pages_(pages),
      usable_(pages.usable_size()),
      target_(static_cast<uint32_t>(fill * CellSpace(pages.usable_size()))) {}

TreeBuilder::~TreeBuilder() = default;

absl::StatusOr<std::unique_ptr<TreeBuilder>> TreeBuilder::Create(pager::PageWriter& pages,
                                                                 double fill) {
  if (!(fill >= kMinFill && fill <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fill ", fill, " is outside [", kMinFill, ", 1]"));
  }
  if (RootPage(pages).value() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the tree is not empty (root page ", RootPage(pages).value(),
                     "): a bottom-up build needs an empty tree"));
  }
  return std::unique_ptr<TreeBuilder>(new TreeBuilder(pages, fill));
}

absl::Status TreeBuilder::Add(absl::string_view key, absl::string_view value) {
  if (finished_) return absl::FailedPreconditionError("TreeBuilder::Add after Finish");
  if (absl::Status sizes = BTree::CheckSizes(usable_, key.size(), value.size()); !sizes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("pair ", pairs_, ": ", sizes.message()));
  }
  if (pairs_ > 0 && !(absl::string_view(last_key_) < key)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pair ", pairs_, ": key of ", key.size(), " bytes is ",
        absl::string_view(last_key_) == key ? "equal to" : "less than",
        " the key before it (a bottom-up build needs keys in strictly ascending order)"));
  }
  if (pairs_ == 0) {
    // L6: the root's page number is taken first, so the root sits before the pages it covers
    // (auto_vacuum can then cut a tail of freed leaves that the root would otherwise end).
    JKV_ASSIGN_OR_RETURN(pager::MutablePage root, pages_.Allocate());
    root_ = root.page_no;
    pages_.HoldForCommit(root_);  // written again at Finish: kept out of spills (pager L10)
  }
  const auto key_size = static_cast<uint32_t>(key.size());
  const auto value_size = static_cast<uint32_t>(value.size());
  const uint32_t local = LocalValueSize(usable_, key_size, value_size);
  PageNo overflow;
  if (local < value_size) {  // L1: the same chain Put writes
    JKV_ASSIGN_OR_RETURN(overflow, WriteOverflowChain(pages_, value.substr(local)));
  }
  cell_.resize(LeafCellSize(usable_, key_size, value_size));
  EncodeLeafCell(usable_, key, value_size, value.substr(0, local), overflow,
                 reinterpret_cast<uint8_t*>(cell_.data()));
  last_key_.assign(key.data(), key.size());
  ++pairs_;
  return Push(0, cell_);
}

absl::Status TreeBuilder::Push(size_t level_index, absl::string_view item) {
  if (level_index == levels_.size()) {
    levels_.push_back(std::make_unique<Level>());
    levels_.back()->leaf = level_index == 0;
  }
  Level& level = *levels_[level_index];
  Page* cur = &level.cur;
  const size_t min_items = level.leaf ? 1 : 2;  // L1, L3
  const uint32_t cost = ItemCost(level.leaf, item, cur->size());
  if (cur->size() >= min_items &&
      (cur->cost + cost > target_ || cur->cost + cost > CellSpace(usable_))) {
    // The current page is full: the held one is written, the current one held (L4).
    if (!level.prev.empty()) JKV_RETURN_IF_ERROR(WritePage(level_index, 0));
    Level& again = *levels_[level_index];  // (levels_ may have grown)
    std::swap(again.prev, again.cur);
    again.cur.Clear();
    cur = &again.cur;
    // L2: the separator before the new page.
    if (again.leaf) {
      const absl::string_view last = LeafKey(again.prev.item(again.prev.size() - 1));
      cur->sep_before = std::string(ShortestSeparator(last, LeafKey(item)));
    } else {
      cur->sep_before = std::string(ItemKey(item));
    }
  }
  Level& now = *levels_[level_index];
  Page& page = now.cur;
  page.cost += ItemCost(now.leaf, item, page.size());
  page.data.append(item.data(), item.size());
  page.ends.push_back(static_cast<uint32_t>(page.data.size()));
  return absl::OkStatus();
}

absl::StatusOr<PageNo> TreeBuilder::WriteNodePage(bool leaf,
                                                  const std::vector<absl::string_view>& items,
                                                  PageNo into) {
  pager::MutablePage page;
  if (into.value() != 0) {  // the root's page, allocated at the first Add (L6)
    JKV_ASSIGN_OR_RETURN(page.data, pages_.GetMutable(into));
    page.page_no = into;
  } else {
    JKV_ASSIGN_OR_RETURN(page, pages_.Allocate());  // L5
  }
  uint8_t* p = page.data.data();
  const int n = leaf ? static_cast<int>(items.size()) : static_cast<int>(items.size()) - 1;
  PageNo right;
  uint32_t content = usable_;
  for (int j = 0; j < n; ++j) {
    if (leaf) {
      content -= static_cast<uint32_t>(items[j].size());
      std::memcpy(p + content, items[j].data(), items[j].size());
    } else {
      // Cell j: the separator before child j + 1, with child j to its left.
      const absl::string_view key = ItemKey(items[j + 1]);
      content -= InteriorCellSize(static_cast<uint32_t>(key.size()));
      EncodeInteriorCell(key, ItemChild(items[j]), p + content);
    }
    base::EncodeFixed16(p + kPageHeaderSize + kCellPointerSize * j, content);
  }
  if (!leaf) right = ItemChild(items.back());
  p[kTypeOffset] = static_cast<uint8_t>(leaf ? PageType::kLeaf : PageType::kInterior);
  p[1] = 0;
  base::EncodeFixed16(p + kCellCountOffset, static_cast<uint16_t>(n));
  base::EncodeFixed16(p + kContentStartOffset, static_cast<uint16_t>(content));
  base::EncodeFixed16(p + kGarbageBytesOffset, 0);
  base::EncodeFixed32(p + kRightChildOffset, right.value());
  ++node_pages_;
  return page.page_no;
}

absl::Status TreeBuilder::WritePage(size_t level_index, int which) {
  Level& level = *levels_[level_index];
  Page& page = which == 0 ? level.prev : level.cur;
  std::vector<absl::string_view> items;
  items.reserve(page.size());
  for (size_t i = 0; i < page.size(); ++i) items.push_back(page.item(i));
  JKV_ASSIGN_OR_RETURN(const PageNo page_no, WriteNodePage(level.leaf, items, PageNo(0)));
  level.wrote_any = true;
  item_.resize(kItemChildSize);
  base::EncodeFixed32(reinterpret_cast<uint8_t*>(item_.data()), page_no.value());
  item_.append(page.sep_before);
  page.Clear();
  std::string up = std::move(item_);
  item_.clear();
  return Push(level_index + 1, up);
}

namespace {

// L4: evens out the last two pages of a level when the last is underfull (or, interior, has
// one child): one page when both fit in one, else a split into halves of about equal size.
void Rebalance(bool leaf, uint32_t usable, Page& prev, Page& cur) {
  const size_t min_items = leaf ? 1 : 2;
  if (cur.size() >= min_items && !IsUnderfull(cur.cost, usable)) return;
  std::vector<std::string> items;
  for (size_t i = 0; i < prev.size(); ++i) items.emplace_back(prev.item(i));
  for (size_t i = 0; i < cur.size(); ++i) items.emplace_back(cur.item(i));
  const size_t n = items.size();
  // costs[i]: item i's cost in a page where it is not first.
  std::vector<uint64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + ItemCost(leaf, items[i], 1);
  auto range_cost = [&](size_t a, size_t b) {  // items [a, b) as one page
    uint64_t c = prefix[b] - prefix[a];
    if (!leaf) c -= ItemCost(leaf, items[a], 1);
    return c;
  };
  std::string sep_before = std::move(prev.sep_before);
  prev.Clear();
  cur.Clear();
  auto fill = [&](Page& page, size_t a, size_t b) {
    for (size_t i = a; i < b; ++i) {
      page.cost += ItemCost(leaf, items[i], i - a);
      page.data.append(items[i]);
      page.ends.push_back(static_cast<uint32_t>(page.data.size()));
    }
  };
  if (range_cost(0, n) <= CellSpace(usable)) {  // one page: it is the level's last
    fill(cur, 0, n);
    cur.sep_before = std::move(sep_before);
    return;
  }
  size_t best = 0;
  uint64_t best_max = UINT64_MAX;
  for (size_t p = min_items; p + min_items <= n; ++p) {
    const uint64_t m = std::max(range_cost(0, p), range_cost(p, n));
    if (m < best_max) {
      best_max = m;
      best = p;
    }
  }
  fill(prev, 0, best);
  fill(cur, best, n);
  prev.sep_before = std::move(sep_before);
  cur.sep_before = leaf ? std::string(ShortestSeparator(LeafKey(items[best - 1]),
                                                        LeafKey(items[best])))
                        : std::string(ItemKey(items[best]));
}

}  // namespace

absl::StatusOr<PageNo> TreeBuilder::Finish() {
  if (finished_) return absl::FailedPreconditionError("TreeBuilder::Finish called twice");
  finished_ = true;
  if (levels_.empty()) return PageNo(0);
  for (size_t i = 0;; ++i) {
    Level& level = *levels_[i];
    if (!level.prev.empty()) Rebalance(level.leaf, usable_, level.prev, level.cur);
    if (!level.prev.empty()) JKV_RETURN_IF_ERROR(WritePage(i, 0));
    if (i + 1 == levels_.size()) {
      // Nothing above: the level's one page is the root (L6).
      Level& top = *levels_[i];
      std::vector<absl::string_view> items;
      for (size_t j = 0; j < top.cur.size(); ++j) items.push_back(top.cur.item(j));
      JKV_ASSIGN_OR_RETURN(const PageNo root, WriteNodePage(top.leaf, items, root_));
      top.cur.Clear();
      pages_.set_meta(kRootMetaSlot, root.value());
      CountWrite(pages_);
      return root;
    }
    JKV_RETURN_IF_ERROR(WritePage(i, 1));
  }
}

uint64_t TreeBuilder::EstimatePages(uint64_t cell_bytes, uint64_t cells, uint32_t usable_size,
                                    double fill) {
  if (cells == 0) return 0;
  const double target = fill * CellSpace(usable_size);
  const double avg = static_cast<double>(cell_bytes) / static_cast<double>(cells);
  const uint64_t per_page = std::max<uint64_t>(1, static_cast<uint64_t>(target / avg));
  uint64_t level = (cells + per_page - 1) / per_page;
  uint64_t total = level;
  // Interior levels: one separator per page below, each no longer than a cell (a guess at
  // their size: a third of the average cell, floored at 8 bytes).
  const double sep = std::max(8.0, avg / 3) + kCellPointerSize;
  const uint64_t fanout = std::max<uint64_t>(2, static_cast<uint64_t>(target / sep));
  while (level > 1) {
    level = (level + fanout - 1) / fanout;
    total += level;
  }
  return total;
}

absl::StatusOr<TreeBuilder::RebuildEstimate> TreeBuilder::EstimateRebuild(
    pager::PageReader& pages, double fill) {
  RebuildEstimate e;
  const PageNo root = RootPage(pages);
  if (root.value() == 0) return e;
  const uint32_t usable = pages.usable_size();
  const uint64_t target = static_cast<uint64_t>(fill * CellSpace(usable));
  // The leaves are packed as Push packs them (L1), in key order; the separators between the
  // packed leaves are computed as L2 computes them and packed into the first interior level
  // the same way; the levels above that are estimated from its average separator.
  uint64_t leaf_pages = 0, leaf_cost = 0;
  uint64_t sep_pages = 0, sep_cost = 0, sep_items = 0, sep_bytes = 0;
  std::string last_key;  // the last key put in the current packed leaf
  auto add_separator = [&](uint64_t key_size) {
    const uint64_t c = InteriorCellSize(static_cast<uint32_t>(key_size)) + kCellPointerSize;
    ++sep_items;
    sep_bytes += c;
    if (sep_cost + c > target && sep_cost > 0) {
      ++sep_pages;
      sep_cost = 0;  // that separator's child starts the next page: its cell goes up
    } else {
      sep_cost += c;
    }
  };
  std::vector<std::pair<PageNo, PageNo>> stack = {{root, PageNo(1)}};  // page, referrer
  uint64_t visited = 0;
  while (!stack.empty()) {
    const auto [page_no, referrer] = stack.back();
    stack.pop_back();
    if (++visited > pages.page_count()) {
      return absl::DataLossError(
          absl::StrCat("page ", page_no.value(), ": the tree is larger than the database"));
    }
    PinnedPage page;
    JKV_RETURN_IF_ERROR(ReadNodePage(pages, page_no, referrer, &page));
    if (!page.view.is_leaf()) {
      for (int i = page.view.cell_count(); i >= 0; --i) {  // the left-most child popped first
        stack.push_back({page.view.child(i), page_no});
      }
      if (page.view.damaged()) return page.view.DamageError();
      continue;
    }
    for (int i = 0; i < page.view.cell_count(); ++i) {
      LeafCell cell;
      if (!page.view.leaf_cell_into(i, &cell)) return page.view.leaf_cell(i).status();
      const uint64_t c = cell.size + kCellPointerSize;
      ++e.cells;
      e.cell_bytes += c;
      if (cell.overflow_page.value() != 0) {
        e.overflow_pages += OverflowPageCount(usable, static_cast<uint32_t>(cell.key.size()),
                                              cell.value_size);
      }
      if (leaf_pages == 0 || (leaf_cost + c > target && leaf_cost > 0)) {
        if (leaf_pages > 0) add_separator(ShortestSeparator(last_key, cell.key).size());
        ++leaf_pages;
        leaf_cost = 0;
      }
      leaf_cost += c;
      last_key.assign(cell.key.data(), cell.key.size());
    }
  }
  e.tree_pages = leaf_pages;
  if (leaf_pages > 1) {
    uint64_t level = sep_pages + 1;
    e.tree_pages += level;
    const double avg = static_cast<double>(sep_bytes) / static_cast<double>(sep_items);
    const uint64_t fanout = std::max<uint64_t>(2, static_cast<uint64_t>(target / avg));
    while (level > 1) {
      level = (level + fanout - 1) / fanout;
      e.tree_pages += level;
    }
  }
  return e;
}

}  // namespace journalkv::btree
