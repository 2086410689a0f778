#include "btree/btree_check.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "btree/btree.h"
#include "btree/btree_format.h"
#include "btree/btree_page.h"
#include "btree/btree_test_util.h"
#include "btree/mem_pages_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {

void PrintTo(const CheckProblem& p, std::ostream* os) { *os << "{" << p.message << "}"; }

namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;

// Matches a CheckProblem about `page` whose message contains `text`.
auto ProblemAt(uint32_t page, const std::string& text) {
  return AllOf(Field(&CheckProblem::page, PageNo(page)),
               Field(&CheckProblem::message, HasSubstr(text)));
}

class CheckTest : public ::testing::Test {
 protected:
  CheckTest() : pages_(512) {}

  // Keys NumKey(0..n-1) with short values: at 512-byte pages, 300 keys make a root with leaves
  // below it (two levels).
  void Fill(int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_THAT(BTree::Put(pages_, NumKey(i), "value"), ::journalkv::testing::IsOk());
    }
  }

  PageView View(PageNo page) { return *PageView::Open(page, pages_.RawPageForTesting(page)); }
  PageNo Root() { return PageNo(pages_.meta(kRootMetaSlot)); }
  PageNo FirstLeaf() {
    PageNo page = Root();
    while (!View(page).is_leaf()) page = View(page).child(0);
    return page;
  }

  CheckReport Run() { return Run(pages_.FreePages()); }
  CheckReport Run(const std::vector<PageNo>& free_pages) {
    absl::StatusOr<CheckReport> report = BTree::Check(pages_, free_pages);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *std::move(report) : CheckReport();
  }

  MemPages pages_;
};

TEST_F(CheckTest, HealthyTreeIsOkAndCounted) {
  Fill(300);
  JKV_ASSERT_OK(BTree::Put(pages_, "big", std::string(2000, 'b')));
  const CheckReport report = Run();
  ASSERT_TRUE(report.ok()) << report.ToString();
  EXPECT_EQ(report.keys, 301u);
  EXPECT_EQ(report.depth, 2);
  EXPECT_EQ(report.interior_pages, 1u);
  EXPECT_EQ(report.overflow_pages, 4u);  // 16 of the 2000 bytes stay in the cell
  EXPECT_EQ(report.leaf_pages + report.interior_pages + report.overflow_pages, pages_.used_count());
  EXPECT_THAT(report.ToString(), HasSubstr("ok: 301 keys, depth 2"));
}

TEST_F(CheckTest, EmptyTreeIsOk) {
  const CheckReport report = Run();
  EXPECT_TRUE(report.ok()) << report.ToString();
  EXPECT_EQ(report.depth, 0);
}

TEST_F(CheckTest, FindsKeysOutOfOrderInALeaf) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  absl::Span<uint8_t> page = pages_.RawPageForTesting(leaf);
  std::swap_ranges(page.begin() + kPageHeaderSize, page.begin() + kPageHeaderSize + 2,
                   page.begin() + kPageHeaderSize + 2);  // swap cell pointers 0 and 1
  const CheckReport report = Run();
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(report.problems,
              Contains(ProblemAt(leaf.value(), "keys of cells 0 and 1 are out of order")));
}

TEST_F(CheckTest, FindsAKeyOutsideItsParentsBounds) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  const PageView view = View(leaf);
  const uint32_t offset = view.cell_offset(view.cell_count() - 1);
  pages_.RawPageForTesting(leaf)[offset + kCellHeaderSize] = 'z';  // "k0000..." -> "z0000..."
  EXPECT_THAT(Run().problems,
              Contains(ProblemAt(leaf.value(), "last key is not below the separator")));
}

TEST_F(CheckTest, FindsAPageReferencedTwiceAndTheOneLeftUnreachable) {
  Fill(300);
  const PageNo root = Root();
  const PageView view = View(root);
  const PageNo first = view.child(0);
  const PageNo second = view.child(1);
  // Point the root's second child at the first one.
  base::EncodeFixed32(pages_.RawPageForTesting(root).data() + view.cell_offset(1) + 2,
                      first.value());
  const CheckReport report = Run();
  EXPECT_THAT(report.problems, Contains(ProblemAt(first.value(), "referenced twice")));
  EXPECT_THAT(report.problems, Contains(ProblemAt(second.value(), "not reachable")));
}

TEST_F(CheckTest, FindsAnUnreachablePage) {
  Fill(10);
  JKV_ASSERT_OK_AND_ASSIGN(pager::MutablePage lost, pages_.Allocate());
  const CheckReport report = Run();
  ASSERT_EQ(report.problem_count, 1u) << report.ToString();
  EXPECT_THAT(report.problems,
              Contains(ProblemAt(lost.page_no.value(),
                                 absl::StrCat("page ", lost.page_no.value(), ": not reachable"))));
}

TEST_F(CheckTest, FindsATreePageThatIsAlsoOnTheFreelist) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  std::vector<PageNo> free_pages = pages_.FreePages();
  free_pages.push_back(leaf);
  EXPECT_THAT(Run(free_pages).problems,
              Contains(ProblemAt(leaf.value(), "already as a free page")));
}

TEST_F(CheckTest, ReportsADamagedPageAsAProblem) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  pages_.InjectDataLossForTesting(leaf);
  const CheckReport report = Run();
  ASSERT_EQ(report.problem_count, 1u) << report.ToString();
  EXPECT_THAT(report.problems, Contains(ProblemAt(leaf.value(), "checksum mismatch")));
}

TEST_F(CheckTest, FindsFreeSpaceAccountingThatDoesNotAddUp) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  uint8_t* p = pages_.RawPageForTesting(leaf).data();
  base::EncodeFixed16(p + kGarbageBytesOffset, base::DecodeFixed16(p + kGarbageBytesOffset) + 1);
  EXPECT_THAT(Run().problems, Contains(ProblemAt(leaf.value(), "free-space accounting is off")));
}

TEST_F(CheckTest, FindsOverlappingCells) {
  Fill(300);
  const PageNo leaf = FirstLeaf();
  const PageView view = View(leaf);
  uint8_t* p = pages_.RawPageForTesting(leaf).data();
  base::EncodeFixed16(p + kPageHeaderSize + 2, view.cell_offset(0));  // cell 1 is cell 0 again
  EXPECT_THAT(Run().problems, Contains(ProblemAt(leaf.value(), "overlap")));
}

TEST_F(CheckTest, FindsAnOverflowChainCutShort) {
  JKV_ASSERT_OK(BTree::Put(pages_, "k", std::string(3 * 496, 'v')));  // exactly 3 pages
  const PageView leaf = View(Root());
  JKV_ASSERT_OK_AND_ASSIGN(LeafCell cell, leaf.leaf_cell(0));
  const PageNo first = cell.overflow_page;
  const PageNo second(base::DecodeFixed32(pages_.RawPageForTesting(first).data() + 4));
  const PageNo third(base::DecodeFixed32(pages_.RawPageForTesting(second).data() + 4));
  base::EncodeFixed32(pages_.RawPageForTesting(second).data() + 4, 0);
  const CheckReport report = Run();
  EXPECT_THAT(report.problems,
              Contains(ProblemAt(Root().value(), "overflow chain ends after 2 of 3 pages")));
  EXPECT_THAT(report.problems, Contains(ProblemAt(third.value(), "not reachable")));
  EXPECT_THAT(BTree::Get(pages_, "k"),
              ::journalkv::testing::StatusIs(absl::StatusCode::kDataLoss, "too short"));
}

TEST_F(CheckTest, FindsLeavesAtDifferentDepthsAndAnInteriorPageWithoutSeparators) {
  // Built by hand: root -> (leaf A | "m" | interior B -> (leaf C | "t" | leaf D)), and an empty
  // interior page E -> leaf F in place of D.
  auto make = [&](PageType type, std::vector<std::string> cells, PageNo right) {
    pager::MutablePage page = *pages_.Allocate();
    Node node;
    node.type = type;
    for (std::string& c : cells) node.cells.push_back(node.Own(std::move(c)));
    WriteNodeCells(page.data, node, 0, node.cell_count(), right);
    return page.page_no;
  };
  const uint32_t u = pages_.usable_size();
  const PageNo a = make(PageType::kLeaf, {MakeLeafCell(u, "a", 1, "1", PageNo(0))}, PageNo(0));
  const PageNo c = make(PageType::kLeaf, {MakeLeafCell(u, "p", 1, "2", PageNo(0))}, PageNo(0));
  const PageNo f = make(PageType::kLeaf, {MakeLeafCell(u, "x", 1, "3", PageNo(0))}, PageNo(0));
  const PageNo e = make(PageType::kInterior, {}, f);
  const PageNo b = make(PageType::kInterior, {MakeInteriorCell("t", c)}, e);
  const PageNo root = make(PageType::kInterior, {MakeInteriorCell("m", a)}, b);
  pages_.set_meta(kRootMetaSlot, root.value());
  const CheckReport report = Run();
  EXPECT_THAT(report.problems, Contains(ProblemAt(c.value(),
                                                  "leaf at depth 2, other leaves "
                                                  "are at depth 1")));
  EXPECT_THAT(report.problems, Contains(ProblemAt(f.value(), "leaf at depth 3")));
  EXPECT_THAT(report.problems, Contains(ProblemAt(e.value(), "interior page has no separator")));
  EXPECT_EQ(report.problem_count, 3u) << report.ToString();
}

}  // namespace
}  // namespace journalkv::btree
