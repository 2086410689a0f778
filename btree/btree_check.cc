#include "btree/btree_check.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/btree_internal.h"
#include "btree/btree_page.h"

namespace journalkv::btree {

namespace {

constexpr PageNo kHeaderPage(1);

// The key range a page must keep to: [lo, hi), each bound absent at the tree's edges.
struct Bounds {
  std::optional<absl::string_view> lo;
  std::optional<absl::string_view> hi;
};

class Checker {
 public:
  explicit Checker(pager::PageReader& pages)
      : pages_(pages), usable_(pages.usable_size()), use_(pages.page_count() + 1, Use::kNone) {}

  absl::StatusOr<CheckReport> Run(absl::Span<const PageNo> freelist_pages);

 private:
  enum class Use : uint8_t { kNone, kHeader, kTree, kOverflow, kFree };

  void Problem(PageNo page, std::string message) {
    ++report_.problem_count;
    if (report_.problems.size() < CheckReport::kMaxKept) {
      report_.problems.push_back({page, std::move(message)});
    }
  }

  bool Claim(PageNo page, PageNo referrer, Use use);
  absl::StatusOr<std::optional<pager::PageRef>> Fetch(PageNo page);
  absl::Status CheckNode(PageNo page, PageNo referrer, const Bounds& bounds, int depth);
  bool CheckLayout(const PageView& view);
  void CheckKeys(const PageView& view, const Bounds& bounds);
  absl::Status CheckLeaf(const PageView& view, int depth);
  absl::Status CheckInterior(const PageView& view, const Bounds& bounds, int depth);
  absl::Status CheckChain(PageNo leaf, const LeafCell& cell);

  static const char* UseName(Use use) {
    switch (use) {
      case Use::kHeader:
        return "the header page";
      case Use::kTree:
        return "a tree page";
      case Use::kOverflow:
        return "an overflow page";
      case Use::kFree:
        return "a free page";
      case Use::kNone:
        break;
    }
    return "unused";
  }

  pager::PageReader& pages_;
  const uint32_t usable_;
  std::vector<Use> use_;  // indexed by page number
  int leaf_depth_ = -1;   // depth of the first leaf met
  PageNo root_;
  CheckReport report_;
};

absl::StatusOr<CheckReport> Checker::Run(absl::Span<const PageNo> freelist_pages) {
  use_[1] = Use::kHeader;
  for (PageNo page : freelist_pages) {
    if (Claim(page, kHeaderPage, Use::kFree)) ++report_.free_pages;
  }
  root_ = RootPage(pages_);
  if (root_.value() != 0) {
    JKV_RETURN_IF_ERROR(CheckNode(root_, kHeaderPage, Bounds(), 0));
    report_.depth = leaf_depth_ + 1;
  }
  for (uint32_t p = 2; p <= pages_.page_count(); ++p) {
    if (use_[p] == Use::kNone) {
      Problem(PageNo(p), absl::StrCat("page ", p, ": not reachable from the tree, an overflow ",
                                      "chain or the freelist"));
    }
  }
  return std::move(report_);
}

// Marks `page` as used; false (with a problem reported) when it is out of range or used already.
bool Checker::Claim(PageNo page, PageNo referrer, Use use) {
  if (page.value() < 2 || page.value() > pages_.page_count()) {
    Problem(referrer, absl::StrCat("page ", referrer.value(), ": refers to page ", page.value(),
                                   ", outside 2..", pages_.page_count()));
    return false;
  }
  Use& slot = use_[page.value()];
  if (slot != Use::kNone) {
    Problem(page,
            absl::StrCat("page ", page.value(), ": referenced twice (as ", UseName(use),
                         " from page ", referrer.value(), ", and already as ", UseName(slot), ")"));
    return false;
  }
  slot = use;
  return true;
}

// The page, or nullopt after reporting it when it is damaged.
absl::StatusOr<std::optional<pager::PageRef>> Checker::Fetch(PageNo page) {
  absl::StatusOr<pager::PageRef> ref = pages_.Get(page);
  if (ref.ok()) return std::optional<pager::PageRef>(*std::move(ref));
  if (ref.status().code() != absl::StatusCode::kDataLoss) return ref.status();
  Problem(page, std::string(ref.status().message()));
  return std::optional<pager::PageRef>();
}

absl::Status Checker::CheckNode(PageNo page, PageNo referrer, const Bounds& bounds, int depth) {
  if (depth > kMaxDepth) {
    Problem(page, absl::StrCat("page ", page.value(), ": deeper than ", kMaxDepth, " levels"));
    return absl::OkStatus();
  }
  if (!Claim(page, referrer, Use::kTree)) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(std::optional<pager::PageRef> ref, Fetch(page));
  if (!ref.has_value()) return absl::OkStatus();
  absl::StatusOr<PageView> view = PageView::Open(page, ref->data());
  if (!view.ok()) {
    Problem(page, std::string(view.status().message()));
    return absl::OkStatus();
  }
  report_.free_bytes += view->free_bytes();
  if (!CheckLayout(*view)) return absl::OkStatus();
  CheckKeys(*view, bounds);
  if (view->is_leaf()) return CheckLeaf(*view, depth);
  return CheckInterior(*view, bounds, depth);
}

// Cells inside the content area, not overlapping, and the accounting adding up. Returns false
// when the cells cannot be trusted enough to look further into the page.
bool Checker::CheckLayout(const PageView& view) {
  const PageNo page = view.page_no();
  std::vector<std::pair<uint32_t, uint32_t>> extents;  // offset, size
  extents.reserve(view.cell_count());
  for (int i = 0; i < view.cell_count(); ++i) {
    absl::StatusOr<uint32_t> size = view.cell_size(i);
    if (!size.ok()) {
      Problem(page, std::string(size.status().message()));
      return false;
    }
    if (view.cell_offset(i) < view.content_start()) {
      Problem(page,
              absl::StrCat("page ", page.value(), ": cell ", i, " at offset ", view.cell_offset(i),
                           " is before the content area at ", view.content_start()));
      return false;
    }
    extents.emplace_back(view.cell_offset(i), *size);
  }
  std::sort(extents.begin(), extents.end());
  uint64_t cell_bytes = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    cell_bytes += extents[i].second;
    if (i > 0 && extents[i - 1].first + extents[i - 1].second > extents[i].first) {
      Problem(page, absl::StrCat("page ", page.value(), ": cells at offsets ", extents[i - 1].first,
                                 " and ", extents[i].first, " overlap"));
      return false;
    }
  }
  const uint64_t area = view.usable_size() - view.content_start();
  if (cell_bytes + view.garbage_bytes() != area) {
    Problem(page, absl::StrCat("page ", page.value(),
                               ": free-space accounting is off: ", view.cell_count(), " cells of ",
                               cell_bytes, " bytes plus ", view.garbage_bytes(),
                               " garbage bytes in a content area of ", area, " bytes"));
  }
  return true;
}

void Checker::CheckKeys(const PageView& view, const Bounds& bounds) {
  const PageNo page = view.page_no();
  const int n = view.cell_count();
  for (int i = 1; i < n; ++i) {
    if (view.key(i - 1) >= view.key(i)) {
      Problem(page, absl::StrCat("page ", page.value(), ": keys of cells ", i - 1, " and ", i,
                                 " are out of order"));
    }
  }
  if (n == 0) return;
  if (bounds.lo.has_value() && view.key(0) < *bounds.lo) {
    Problem(page, absl::StrCat("page ", page.value(), ": first key is below the separator ",
                               "before it in the parent"));
  }
  if (bounds.hi.has_value() && view.key(n - 1) >= *bounds.hi) {
    Problem(page, absl::StrCat("page ", page.value(), ": last key is not below the separator ",
                               "after it in the parent"));
  }
}

absl::Status Checker::CheckLeaf(const PageView& view, int depth) {
  const PageNo page = view.page_no();
  ++report_.leaf_pages;
  report_.keys += view.cell_count();
  if (leaf_depth_ < 0) leaf_depth_ = depth;
  if (depth != leaf_depth_) {
    Problem(page, absl::StrCat("page ", page.value(), ": leaf at depth ", depth,
                               ", other leaves are at depth ", leaf_depth_));
  }
  if (view.right_child().value() != 0) {
    Problem(page, absl::StrCat("page ", page.value(), ": leaf has a right child"));
  }
  if (view.cell_count() == 0 && page != root_) {
    Problem(page, absl::StrCat("page ", page.value(), ": leaf other than the root is empty"));
  }
  for (int i = 0; i < view.cell_count(); ++i) {
    absl::StatusOr<LeafCell> cell = view.leaf_cell(i);
    if (!cell.ok()) continue;  // reported by CheckLayout
    if (cell->local_value.size() < cell->value_size) {
      JKV_RETURN_IF_ERROR(CheckChain(page, *cell));
    }
  }
  return absl::OkStatus();
}

absl::Status Checker::CheckInterior(const PageView& view, const Bounds& bounds, int depth) {
  const PageNo page = view.page_no();
  ++report_.interior_pages;
  const int n = view.cell_count();
  if (n == 0) {
    Problem(page, absl::StrCat("page ", page.value(), ": interior page has no separator"));
  }
  for (int i = 0; i <= n; ++i) {
    Bounds child_bounds;
    child_bounds.lo = i == 0 ? bounds.lo : std::optional<absl::string_view>(view.key(i - 1));
    child_bounds.hi = i == n ? bounds.hi : std::optional<absl::string_view>(view.key(i));
    JKV_RETURN_IF_ERROR(CheckNode(view.child(i), page, child_bounds, depth + 1));
  }
  return absl::OkStatus();
}

absl::Status Checker::CheckChain(PageNo leaf, const LeafCell& cell) {
  const uint32_t count =
      OverflowPageCount(usable_, static_cast<uint32_t>(cell.key.size()), cell.value_size);
  PageNo page = cell.overflow_page;
  PageNo referrer = leaf;
  for (uint32_t i = 0; i < count; ++i) {
    if (page.value() == 0) {
      Problem(leaf, absl::StrCat("page ", leaf.value(), ": overflow chain ends after ", i, " of ",
                                 count, " pages"));
      return absl::OkStatus();
    }
    if (!Claim(page, referrer, Use::kOverflow)) return absl::OkStatus();
    ++report_.overflow_pages;
    JKV_ASSIGN_OR_RETURN(std::optional<pager::PageRef> ref, Fetch(page));
    if (!ref.has_value()) return absl::OkStatus();
    const uint8_t* data = ref->data().data();
    if (data[kTypeOffset] != static_cast<uint8_t>(PageType::kOverflow)) {
      Problem(page, absl::StrCat("page ", page.value(), ": in an overflow chain but of type 0x",
                                 absl::Hex(data[kTypeOffset], absl::kZeroPad2)));
      return absl::OkStatus();
    }
    referrer = page;
    page = PageNo(base::DecodeFixed32(data + kOverflowNextOffset));
  }
  if (page.value() != 0) {
    Problem(referrer, absl::StrCat("page ", referrer.value(), ": overflow chain goes on to page ",
                                   page.value(), " after the ", count, " pages its value needs"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string CheckReport::ToString() const {
  if (ok()) {
    return absl::StrCat("ok: ", keys, " keys, depth ", depth, ", ", leaf_pages, " leaf, ",
                        interior_pages, " interior, ", overflow_pages, " overflow, ", free_pages,
                        " free pages");
  }
  std::string out = absl::StrCat(problem_count, " problems:");
  for (const CheckProblem& p : problems) absl::StrAppend(&out, "\n  ", p.message);
  return out;
}

absl::StatusOr<CheckReport> CheckTree(pager::PageReader& pages,
                                      absl::Span<const PageNo> freelist_pages) {
  return Checker(pages).Run(freelist_pages);
}

}  // namespace journalkv::btree
