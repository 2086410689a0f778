#include "btree/btree.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/btree_internal.h"
#include "btree/btree_overflow.h"
#include "btree/btree_page.h"
#include "btree/key_hints.h"
#include "pager/db_format.h"

namespace journalkv::btree {

namespace {

// PageNo(1), the header page, stands for the root slot as the referrer of the root page.
constexpr PageNo kHeaderPage(1);

bool PathIsRightmost(const Path& path) {
  for (const PathEntry& e : path) {
    if (e.child_index != e.cell_count) return false;
  }
  return true;
}

// Returns the root page, first creating an empty root leaf when the tree is empty.
absl::StatusOr<PageNo> RootForWrite(pager::PageWriter& pages) {
  const PageNo root = RootPage(pages);
  if (root.value() != 0) return root;
  JKV_ASSIGN_OR_RETURN(pager::MutablePage page, pages.Allocate());
  InitNodePage(page.data, PageType::kLeaf, PageNo(0));
  pages.set_meta(kRootMetaSlot, page.page_no.value());
  return page.page_no;
}

// Stores a new leaf cell for key/value at `index` of the leaf `page`, whose cell at `index`
// (when `replaced` is set) has the same key and has already been freed of its overflow chain.
// Returns false when the cell does not fit in the page; then nothing is changed in the page
// except that the replaced cell has been removed, and *cell holds the encoded new cell.
absl::StatusOr<bool> PutInLeaf(pager::PageWriter& pages, PageNo leaf, absl::Span<uint8_t> page,
                               int index, const LeafCell* replaced, absl::string_view key,
                               absl::string_view value, std::string* cell) {
  const uint32_t usable = pages.usable_size();
  const auto key_size = static_cast<uint32_t>(key.size());
  const auto value_size = static_cast<uint32_t>(value.size());
  const uint32_t local = LocalValueSize(usable, key_size, value_size);
  const uint32_t size = LeafCellSize(usable, key_size, value_size);
  PageNo overflow;
  if (local < value_size) {
    JKV_ASSIGN_OR_RETURN(overflow, WriteOverflowChain(pages, value.substr(local)));
  }
  uint8_t* dst = nullptr;
  if (replaced != nullptr && replaced->size == size) {
    JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(leaf, page));
    dst = page.data() + view.cell_offset(index);  // same size: overwrite in place
  } else {
    if (replaced != nullptr) RemoveCell(page, index, replaced->size);
    JKV_ASSIGN_OR_RETURN(dst, ReserveCell(leaf, page, index, size));
  }
  if (dst == nullptr) {
    *cell = MakeLeafCell(usable, key, value_size, value.substr(0, local), overflow);
    return false;
  }
  EncodeLeafCell(usable, key, value_size, value.substr(0, local), overflow, dst);
  return true;
}

// The search hints of an interior page's image (key_hints.h), built at its first search: every
// descent of its snapshot passes it, and its search, some eight probes whose branches go either
// way at random, was a sixth of a cached point read. Leaves are searched without: their hints
// are an allocation apart from the page, one more cache miss before the cell the search must
// read anyway, and measured no faster (bench/results-2026-12-05/NOTES.md). Only a fixed image
// is decorated (K1, pager/page_access.h), and the btree is the only layer that decorates pages.
const KeyHints* HintsFor(const pager::PageRef& ref, const PageView& view) {
  if (view.is_leaf() || !ref.fixed() || view.cell_count() < KeyHints::kMinCells) return nullptr;
  if (const pager::PageDecoration* d = ref.decoration()) return static_cast<const KeyHints*>(d);
  std::unique_ptr<KeyHints> built = KeyHints::Build(view);
  if (built == nullptr) return nullptr;
  return static_cast<const KeyHints*>(ref.Decorate(std::move(built)));  // K2
}

}  // namespace

absl::Status ReadNodePage(pager::PageReader& pages, PageNo page_no, PageNo referrer,
                          PinnedPage* out) {
  JKV_ASSIGN_OR_RETURN(out->ref, GetReferencedPage(pages, page_no, referrer));
  if (out->ref.mapped()) {
    // A page read in place in the memory map is usually in no CPU cache: its search is a chain
    // of dependent misses (the header, a cell pointer, that cell's key, the next pointer, ...),
    // each waiting for the one before. Asking for every line of the page at once lets the
    // misses overlap (perf of a point read past the cache: PageView::Open and LowerBound, the
    // first touches, were half of Db::Get; bench/results-2026-12-07/mmap/NOTES.md).
    const uint8_t* bytes = out->ref.data().data();
    for (size_t at = 0; at < out->ref.data().size(); at += 64) __builtin_prefetch(bytes + at);
  }
  JKV_RETURN_IF_ERROR(PageView::Open(page_no, out->ref.data(), &out->view));
  out->view.set_hints(HintsFor(out->ref, out->view));
  if (!out->view.is_leaf()) {
    pages.NoteInterior(out->ref);
  } else if (out->ref.mapped()) {
    pages.NoteLeaf(out->ref);  // only a page read in place has anything to note
  }
  return absl::OkStatus();
}

absl::Status DescendToLeaf(pager::PageReader& pages, PageNo root, absl::string_view key,
                           Path* path, PinnedPage* leaf) {
  PageNo page_no = root;
  PageNo referrer = kHeaderPage;
  PinnedPage& page = *leaf;  // each level's page, the leaf at last
  for (int depth = 0; depth <= kMaxDepth; ++depth) {
    JKV_RETURN_IF_ERROR(ReadNodePage(pages, page_no, referrer, &page));
    if (page.view.is_leaf()) return absl::OkStatus();
    const int i = page.view.UpperBound(key);
    const PageNo child = page.view.child(i);
    if (page.view.damaged()) return page.view.DamageError();
    if (path != nullptr) path->push_back({page_no, i, page.view.cell_count()});
    referrer = page_no;
    page_no = child;
  }
  return absl::DataLossError(absl::StrCat("page ", root.value(), ": the tree under it is deeper ",
                                          "than ", kMaxDepth, " levels (a cycle?)"));
}

absl::Status BTree::CheckSizes(uint32_t usable_size, size_t key_size, size_t value_size) {
  if (key_size > MaxKeySize(usable_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key_size, " bytes exceeds the limit of ", MaxKeySize(usable_size),
                     " bytes for ", usable_size + pager::kPageTrailerSize, "-byte pages"));
  }
  if (value_size > kMaxValueSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value of ", value_size, " bytes exceeds the limit of ", kMaxValueSize, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> BTree::GetInto(pager::PageReader& pages, absl::string_view key,
                                    std::string* value) {
  const PageNo root = RootPage(pages);
  if (root.value() == 0 || key.size() > MaxKeySize(pages.usable_size())) return false;
  PinnedPage leaf;
  JKV_RETURN_IF_ERROR(DescendToLeaf(pages, root, key, nullptr, &leaf));
  bool exact = false;
  const int i = leaf.view.LowerBound(key, &exact);
  if (leaf.view.damaged()) return leaf.view.DamageError();
  if (!exact) return false;
  JKV_ASSIGN_OR_RETURN(LeafCell cell, leaf.view.leaf_cell(i));
  if (cell.local_value.size() == cell.value_size) {
    value->assign(cell.local_value.data(), cell.local_value.size());
    return true;
  }
  JKV_RETURN_IF_ERROR(ReadValue(pages, leaf.view.page_no(), cell, value));
  return true;
}

absl::StatusOr<std::optional<std::string>> BTree::Get(pager::PageReader& pages,
                                                      absl::string_view key) {
  std::string value;
  JKV_ASSIGN_OR_RETURN(const bool found, GetInto(pages, key, &value));
  if (!found) return std::nullopt;
  return value;
}

absl::Status BTree::Put(pager::PageWriter& pages, absl::string_view key, absl::string_view value,
                        AppendHint* hint) {
  JKV_RETURN_IF_ERROR(CheckSizes(pages.usable_size(), key.size(), value.size()));
  Path path;
  std::optional<PinnedPage> hinted;
  bool greatest = false;  // the key is past every key in the tree (known from the hint)
  if (hint != nullptr && hint->valid_) {
    // The hint's leaf is the right-most one: a key past its last key is the tree's greatest,
    // and goes at its end.
    hint->valid_ = false;  // set again below when it still holds
    const PageNo parent = hint->interior_.empty() ? kHeaderPage : hint->interior_.back().first;
    PinnedPage leaf;
    JKV_RETURN_IF_ERROR(ReadNodePage(pages, hint->leaf_, parent, &leaf));
    const int n = leaf.view.cell_count();
    if (leaf.view.is_leaf() && n > 0 && leaf.view.key(n - 1) < key && !leaf.view.damaged()) {
      for (const auto& [page, count] : hint->interior_) path.push_back({page, count, count});
      hinted = std::move(leaf);
      greatest = true;
    }
  }
  if (!hinted.has_value()) {
    JKV_ASSIGN_OR_RETURN(const PageNo root, RootForWrite(pages));
    JKV_RETURN_IF_ERROR(DescendToLeaf(pages, root, key, &path, &hinted.emplace()));
  }
  PinnedPage& leaf = *hinted;
  bool exact = false;
  const int index = greatest ? leaf.view.cell_count() : leaf.view.LowerBound(key, &exact);
  if (leaf.view.damaged()) return leaf.view.DamageError();
  const PageNo leaf_no = leaf.view.page_no();
  const int old_count = leaf.view.cell_count();
  JKV_ASSIGN_OR_RETURN(absl::Span<uint8_t> page, pages.GetMutable(leaf_no));
  CountWrite(pages);
  LeafCell replaced;
  if (exact) {
    JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(leaf_no, page));
    JKV_ASSIGN_OR_RETURN(replaced, view.leaf_cell(index));
    JKV_RETURN_IF_ERROR(FreeOverflowChain(pages, leaf_no, replaced));
  }
  std::string cell;
  JKV_ASSIGN_OR_RETURN(bool done, PutInLeaf(pages, leaf_no, page, index,
                                            exact ? &replaced : nullptr, key, value, &cell));
  if (done) {
    if (hint != nullptr && !exact && index == old_count && PathIsRightmost(path)) {
      // The key went to the end of the right-most leaf, which did not split: the next
      // greater key goes there too.
      hint->valid_ = true;
      hint->leaf_ = leaf_no;
      hint->interior_.clear();
      for (const PathEntry& e : path) hint->interior_.emplace_back(e.page, e.cell_count);
    }
    return absl::OkStatus();
  }
  // A split changes the right-most leaf: the next Put descends again (and hints again).
  // The leaf is full: rebuild it with the new cell, which splits it.
  JKV_ASSIGN_OR_RETURN(Node node, DecodeNode(leaf_no, page));
  node.cells.insert(node.cells.begin() + index, node.Own(std::move(cell)));
  const bool append = !exact && index == old_count && PathIsRightmost(path);
  path.push_back({leaf_no, index, old_count});
  return StoreNode(pages, path, static_cast<int>(path.size()) - 1, std::move(node),
                   append ? SplitHint::kAppend : SplitHint::kBalanced);
}

absl::StatusOr<bool> BTree::Delete(pager::PageWriter& pages, absl::string_view key) {
  const PageNo root = RootPage(pages);
  if (root.value() == 0 || key.size() > MaxKeySize(pages.usable_size())) return false;
  Path path;
  PinnedPage leaf;
  JKV_RETURN_IF_ERROR(DescendToLeaf(pages, root, key, &path, &leaf));
  bool exact = false;
  const int index = leaf.view.LowerBound(key, &exact);
  if (leaf.view.damaged()) return leaf.view.DamageError();
  if (!exact) return false;
  const PageNo leaf_no = leaf.view.page_no();
  JKV_ASSIGN_OR_RETURN(absl::Span<uint8_t> page, pages.GetMutable(leaf_no));
  CountWrite(pages);
  {
    JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(leaf_no, page));
    JKV_ASSIGN_OR_RETURN(LeafCell cell, view.leaf_cell(index));
    JKV_RETURN_IF_ERROR(FreeOverflowChain(pages, leaf_no, cell));
    RemoveCell(page, index, cell.size);
  }
  JKV_ASSIGN_OR_RETURN(PageView after, PageView::Open(leaf_no, page));
  if (path.empty()) {  // the leaf is the root
    if (after.cell_count() == 0) {
      pages.set_meta(kRootMetaSlot, 0);
      JKV_RETURN_IF_ERROR(pages.Free(leaf_no));
    }
    return true;
  }
  if (!IsUnderfull(after.used_bytes(), pages.usable_size())) return true;
  JKV_ASSIGN_OR_RETURN(Node node, DecodeNode(leaf_no, page));
  path.push_back({leaf_no, index, after.cell_count()});
  JKV_RETURN_IF_ERROR(StoreNode(pages, path, static_cast<int>(path.size()) - 1, std::move(node),
                                SplitHint::kBalanced));
  return true;
}

absl::StatusOr<uint64_t> BTree::Count(pager::PageReader& pages) {
  const PageNo root = RootPage(pages);
  if (root.value() == 0) return 0;
  struct Pending {
    PageNo page;
    PageNo referrer;
    int depth;
  };
  std::vector<Pending> stack = {{root, kHeaderPage, 0}};
  uint64_t keys = 0;
  uint64_t visited = 0;
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    if (p.depth > kMaxDepth || ++visited > pages.page_count()) {
      return absl::DataLossError(absl::StrCat("page ", p.page.value(), ": the tree is deeper ",
                                              "or larger than the database (a cycle?)"));
    }
    PinnedPage page;
    JKV_RETURN_IF_ERROR(ReadNodePage(pages, p.page, p.referrer, &page));
    if (page.view.is_leaf()) {
      keys += page.view.cell_count();
      continue;
    }
    for (int i = 0; i <= page.view.cell_count(); ++i) {
      stack.push_back({page.view.child(i), p.page, p.depth + 1});
    }
    if (page.view.damaged()) return page.view.DamageError();
  }
  return keys;
}

}  // namespace journalkv::btree
