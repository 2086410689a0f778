// Restructuring the tree after a change leaves a page overfull or underfull (StoreNode).
//
// The procedure works on decoded Nodes, which may hold more or fewer bytes than a page:
//
//   Store(level, node):
//     node does not fit a page   -> Split: left half stays in the page, right half goes to a
//                                   new page, the separator is inserted in the parent
//                                   (Promote), and the parent is stored the same way
//     level is the root          -> StoreRoot: write it, or free it when it is an empty leaf,
//                                   or make its only child the root when it has no separator
//     node is under 1/4 full     -> Rebalance: merge with the left sibling (or the right one
//                                   for a first child) when both fit in one page and drop the
//                                   separator between them, else split their cells evenly
//                                   and replace the separator; then store the parent
//     otherwise                  -> write it
//
// Why the pieces always fit (MaxCellSize is a third of CellSpace, S = CellSpace):
//  - a split node holds at most S + MaxCellSize bytes (a full page plus one cell, or one
//    separator grown by at most MaxCellSize), and ChooseSplit keeps either side within
//    (total + MaxCellSize) / 2 <= S;
//  - a redistributed pair holds less than S / 4 + S + MaxCellSize < 2 S - MaxCellSize bytes.
// SplitFits still checks every split, so a broken bound is an Internal error, not a bad page.
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/btree_internal.h"

namespace journalkv::btree {

namespace {

class Restructurer {
 public:
  Restructurer(pager::PageWriter& pages, const Path& path)
      : pages_(pages), path_(path), usable_(pages.usable_size()) {}

  absl::Status Store(int level, Node node, SplitHint hint) {
    if (node.bytes() > CellSpace(usable_)) return Split(level, std::move(node), hint);
    if (level == 0) return StoreRoot(std::move(node));
    if (IsUnderfull(node.bytes(), usable_)) return Rebalance(level, std::move(node));
    return Write(path_[level].page, node, 0, node.cell_count(), node.right_child);
  }

 private:
  absl::Status StoreRoot(Node node);
  absl::Status Split(int level, Node node, SplitHint hint);
  absl::Status Promote(int level, const std::string& separator, PageNo left, PageNo right);
  absl::StatusOr<bool> PromoteInPlace(const PathEntry& parent, const std::string& separator,
                                      PageNo left, PageNo right);
  absl::Status Rebalance(int level, Node node);
  absl::Status WriteSplit(const Node& node, int p, PageNo left, PageNo right);

  absl::StatusOr<Node> Load(PageNo page_no) {
    JKV_ASSIGN_OR_RETURN(pager::PageRef ref, pages_.Get(page_no));
    return DecodeNode(page_no, ref.data());
  }

  absl::Status Write(PageNo page_no, const Node& node, int begin, int end, PageNo right_child) {
    JKV_ASSIGN_OR_RETURN(absl::Span<uint8_t> page, pages_.GetMutable(page_no));
    WriteNodeCells(page, node, begin, end, right_child);
    return absl::OkStatus();
  }

  // True when every page above `level` was left through its right child.
  bool IsRightmost(int level) const {
    for (int l = 0; l < level; ++l) {
      if (path_[l].child_index != path_[l].cell_count) return false;
    }
    return true;
  }

  absl::Status SplitError(int level, const Node& node) const {
    return absl::InternalError(absl::StrCat("page ", path_[level].page.value(), ": cannot split ",
                                            node.cell_count(), " cells of ", node.bytes(),
                                            " bytes into two pages"));
  }

  pager::PageWriter& pages_;
  const Path& path_;
  const uint32_t usable_;
};

absl::Status Restructurer::StoreRoot(Node node) {
  const PageNo root = path_[0].page;
  if (node.cell_count() > 0) return Write(root, node, 0, node.cell_count(), node.right_child);
  // An empty leaf root leaves an empty tree; an interior root with one child hands over to it.
  pages_.set_meta(kRootMetaSlot, node.is_leaf() ? 0 : node.right_child.value());
  return pages_.Free(root);
}

// Writes the two sides of split point p of `node` to pages `left` and `right`.
absl::Status Restructurer::WriteSplit(const Node& node, int p, PageNo left, PageNo right) {
  const int n = node.cell_count();
  if (node.is_leaf()) {
    JKV_RETURN_IF_ERROR(Write(left, node, 0, p, PageNo(0)));
    return Write(right, node, p, n, PageNo(0));
  }
  JKV_RETURN_IF_ERROR(Write(left, node, 0, p, node.child(p)));
  return Write(right, node, p + 1, n, node.right_child);
}

// The key that goes up to the parent for split point p.
std::string SplitSeparator(const Node& node, int p) {
  if (node.is_leaf()) return std::string(ShortestSeparator(node.key(p - 1), node.key(p)));
  return std::string(node.key(p));
}

absl::Status Restructurer::Split(int level, Node node, SplitHint hint) {
  const int p = ChooseSplit(node, usable_, hint);
  if (!SplitFits(node, usable_, p)) return SplitError(level, node);
  const PageNo left = path_[level].page;
  JKV_ASSIGN_OR_RETURN(pager::MutablePage right, pages_.Allocate());
  JKV_RETURN_IF_ERROR(WriteSplit(node, p, left, right.page_no));
  return Promote(level, SplitSeparator(node, p), left, right.page_no);
}

// Inserts (separator, left) into the parent in place when it has room, pointing the entry
// after it at `right`. Returns false, changing nothing, when the parent is too full.
absl::StatusOr<bool> Restructurer::PromoteInPlace(const PathEntry& parent,
                                                  const std::string& separator, PageNo left,
                                                  PageNo right) {
  JKV_ASSIGN_OR_RETURN(absl::Span<uint8_t> page, pages_.GetMutable(parent.page));
  JKV_ASSIGN_OR_RETURN(PageView before, PageView::Open(parent.page, page));
  if (parent.child_index > before.cell_count() || before.child(parent.child_index) != left) {
    return absl::InternalError(absl::StrCat("page ", parent.page.value(), ": child ",
                                            parent.child_index, " is not page ", left.value()));
  }
  const uint32_t size = InteriorCellSize(static_cast<uint32_t>(separator.size()));
  JKV_ASSIGN_OR_RETURN(uint8_t * cell, ReserveCell(parent.page, page, parent.child_index, size));
  if (cell == nullptr) return false;
  EncodeInteriorCell(separator, left, cell);
  JKV_ASSIGN_OR_RETURN(PageView view, PageView::Open(parent.page, page));
  const int next = parent.child_index + 1;
  if (next == view.cell_count()) {
    base::EncodeFixed32(page.data() + kRightChildOffset, right.value());
  } else {
    base::EncodeFixed32(page.data() + view.cell_offset(next) + 2, right.value());
  }
  return true;
}

absl::Status Restructurer::Promote(int level, const std::string& separator, PageNo left,
                                   PageNo right) {
  if (level == 0) {
    JKV_ASSIGN_OR_RETURN(pager::MutablePage root, pages_.Allocate());
    Node node;
    node.type = PageType::kInterior;
    node.cells.push_back(node.Own(MakeInteriorCell(separator, left)));
    WriteNodeCells(root.data, node, 0, 1, right);
    pages_.set_meta(kRootMetaSlot, root.page_no.value());
    return absl::OkStatus();
  }
  const PathEntry& up = path_[level - 1];
  JKV_ASSIGN_OR_RETURN(bool done, PromoteInPlace(up, separator, left, right));
  if (done) return absl::OkStatus();
  // The parent is full: it splits too, toward the right when the tree grows at its right edge.
  const bool append = up.child_index == up.cell_count && IsRightmost(level - 1);
  JKV_ASSIGN_OR_RETURN(Node parent, Load(up.page));
  const int i = up.child_index;
  if (i > parent.cell_count() || parent.child(i) != left) {
    return absl::InternalError(
        absl::StrCat("page ", up.page.value(), ": child ", i, " is not page ", left.value()));
  }
  parent.cells.insert(parent.cells.begin() + i, parent.Own(MakeInteriorCell(separator, left)));
  parent.set_child(i + 1, right);
  return Store(level - 1, std::move(parent), append ? SplitHint::kAppend : SplitHint::kBalanced);
}

// Joins two siblings and the separator between them into one node (which may not fit a page).
Node Concatenate(Node& left, absl::string_view separator, Node& right) {
  Node all;
  all.type = left.type;
  all.cells = left.cells;
  if (!left.is_leaf()) all.cells.push_back(all.Own(MakeInteriorCell(separator, left.right_child)));
  all.cells.insert(all.cells.end(), right.cells.begin(), right.cells.end());
  all.right_child = right.right_child;
  all.AdoptStorage(left);
  all.AdoptStorage(right);
  return all;
}

absl::Status Restructurer::Rebalance(int level, Node node) {
  const PathEntry& up = path_[level - 1];
  JKV_ASSIGN_OR_RETURN(Node parent, Load(up.page));
  const int i = up.child_index;
  if (i > parent.cell_count() || parent.child(i) != path_[level].page) {
    return absl::InternalError(absl::StrCat("page ", up.page.value(), ": child ", i,
                                            " is not page ", path_[level].page.value()));
  }
  if (parent.cell_count() == 0) {  // no sibling to work with
    return Write(path_[level].page, node, 0, node.cell_count(), node.right_child);
  }
  const int li = i > 0 ? i - 1 : 0;  // the pair is children li and li + 1
  const PageNo left_page = parent.child(li);
  const PageNo right_page = parent.child(li + 1);
  JKV_ASSIGN_OR_RETURN(Node sibling, Load(i > 0 ? left_page : right_page));
  if (sibling.type != node.type) {
    return absl::DataLossError(absl::StrCat("page ", up.page.value(), ": children ",
                                            left_page.value(), " and ", right_page.value(),
                                            " are not both leaves or both interior pages"));
  }
  Node all = i > 0 ? Concatenate(sibling, parent.key(li), node)
                   : Concatenate(node, parent.key(li), sibling);
  if (all.bytes() <= CellSpace(usable_)) {
    JKV_RETURN_IF_ERROR(Write(left_page, all, 0, all.cell_count(), all.right_child));
    JKV_RETURN_IF_ERROR(pages_.Free(right_page));
    parent.cells.erase(parent.cells.begin() + li);
    parent.set_child(li, left_page);
  } else {
    const int p = ChooseSplit(all, usable_, SplitHint::kBalanced);
    if (!SplitFits(all, usable_, p)) return SplitError(level, all);
    JKV_RETURN_IF_ERROR(WriteSplit(all, p, left_page, right_page));
    parent.cells[li] = parent.Own(MakeInteriorCell(SplitSeparator(all, p), left_page));
  }
  return Store(level - 1, std::move(parent), SplitHint::kBalanced);
}

}  // namespace

absl::Status StoreNode(pager::PageWriter& pages, const Path& path, int level, Node node,
                       SplitHint hint) {
  return Restructurer(pages, path).Store(level, std::move(node), hint);
}

}  // namespace journalkv::btree
