#include "btree/btree_page.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "btree/btree_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

using ::journalkv::testing::StatusIs;

constexpr uint32_t kU = 504;
constexpr PageNo kPage(5);

class PageTest : public ::testing::Test {
 protected:
  PageTest() : page_(kU, 0) { InitNodePage(absl::MakeSpan(page_), PageType::kLeaf, PageNo(0)); }

  // Inserts key -> value at `index`; false when the page is full.
  bool Insert(int index, const std::string& key, const std::string& value) {
    const std::string cell =
        MakeLeafCell(kU, key, static_cast<uint32_t>(value.size()), value, PageNo(0));
    absl::StatusOr<uint8_t*> dst =
        ReserveCell(kPage, absl::MakeSpan(page_), index, static_cast<uint32_t>(cell.size()));
    EXPECT_TRUE(dst.ok()) << dst.status();
    if (!dst.ok() || *dst == nullptr) return false;
    std::copy(cell.begin(), cell.end(), *dst);
    return true;
  }

  void Remove(int index) {
    const PageView view = View();
    RemoveCell(absl::MakeSpan(page_), index, *view.cell_size(index));
  }

  PageView View() { return *PageView::Open(kPage, page_); }

  // Every key and value in the page, checked cell by cell.
  std::vector<std::string> Contents() {
    std::vector<std::string> out;
    const PageView view = View();
    for (int i = 0; i < view.cell_count(); ++i) {
      absl::StatusOr<LeafCell> cell = view.leaf_cell(i);
      EXPECT_TRUE(cell.ok()) << cell.status();
      if (cell.ok()) out.push_back(absl::StrCat(cell->key, "=", cell->local_value));
    }
    return out;
  }

  std::vector<uint8_t> page_;
};

TEST_F(PageTest, InsertsKeepPointerOrderAndAccounting) {
  ASSERT_TRUE(Insert(0, "b", "2"));
  ASSERT_TRUE(Insert(0, "a", "1"));
  ASSERT_TRUE(Insert(2, "c", "3"));
  EXPECT_THAT(Contents(), ::testing::ElementsAre("a=1", "b=2", "c=3"));
  EXPECT_EQ(View().free_bytes(), kU - kPageHeaderSize - 3 * (8 + 2));
  bool exact = false;
  EXPECT_EQ(View().LowerBound("b", &exact), 1);
  EXPECT_TRUE(exact);
  EXPECT_EQ(View().LowerBound("bb", &exact), 2);
  EXPECT_FALSE(exact);
  EXPECT_EQ(View().UpperBound("b"), 2);
  EXPECT_EQ(View().UpperBound(""), 0);
}

TEST_F(PageTest, RemovingTheLowestCellReturnsItsBytesToTheGap) {
  ASSERT_TRUE(Insert(0, "a", "1"));
  ASSERT_TRUE(Insert(1, "b", "2"));  // written last: lowest in the page
  Remove(1);
  EXPECT_EQ(View().garbage_bytes(), 0u);
  Remove(0);
  EXPECT_EQ(View().garbage_bytes(), 0u);
  EXPECT_EQ(View().content_start(), kU);
}

// Regression: defragmenting read cell sizes from the page it was rewriting, so a cell moved
// over another one before that one was measured.
TEST_F(PageTest, InsertIntoFragmentedPageDefragmentsAndKeepsEveryCell) {
  // Descending keys, each inserted in front: the pointer order is the reverse of the order of
  // the cells in the page, so packing cell 0 first moves it over cells not yet copied.
  std::vector<std::string> expected;
  int n = 0;
  while (Insert(0, absl::StrCat("key", 900 - n), std::string(n % 7 + 3, 'a' + n % 26))) {
    expected.insert(expected.begin(),
                    absl::StrCat("key", 900 - n, "=", std::string(n % 7 + 3, 'a' + n % 26)));
    ++n;
  }
  // Free every other cell: lots of garbage, no contiguous gap.
  for (int i = n - 1; i >= 0; i -= 2) {
    Remove(i);
    expected.erase(expected.begin() + i);
  }
  EXPECT_GT(View().garbage_bytes(), 40u);
  // A cell bigger than the gap but smaller than the free bytes forces a defragmentation.
  const PageView view = View();
  const uint32_t gap =
      view.content_start() - kPageHeaderSize - kCellPointerSize * view.cell_count();
  const std::string big(gap, 'Z');  // cell of 12 + gap bytes
  ASSERT_LE(12 + gap + kCellPointerSize, view.free_bytes());
  ASSERT_TRUE(Insert(0, "key000", big));
  expected.insert(expected.begin(), "key000=" + big);
  EXPECT_EQ(View().garbage_bytes(), 0u);
  EXPECT_EQ(Contents(), expected);
}

TEST_F(PageTest, FullPageRefusesACellAndStaysUnchanged) {
  int n = 0;
  while (Insert(n, absl::StrCat("k", 1000 + n), "value")) ++n;
  const std::vector<uint8_t> before = page_;
  EXPECT_FALSE(Insert(0, "a", "v"));
  EXPECT_EQ(page_, before);
}

TEST_F(PageTest, DefragmentingADamagedPageIsDataLossNotAnOverrun) {
  ASSERT_TRUE(Insert(0, "a", "1"));
  ASSERT_TRUE(Insert(1, "b", "2"));
  Remove(0);                           // garbage, so the next insert needs a defragmentation
  page_[View().cell_offset(0)] = 150;  // key size 150: the cell runs past the page end
  std::vector<uint8_t> copy = page_;
  const uint32_t need = View().free_bytes() - kCellPointerSize;
  EXPECT_THAT(ReserveCell(kPage, absl::MakeSpan(copy), 0, need),
              StatusIs(absl::StatusCode::kDataLoss, "page 5"));
}

TEST(NodeSplitTest, BalancedSplitEvensOutBytes) {
  Node node;
  node.type = PageType::kLeaf;
  for (int i = 0; i < 10; ++i) {
    node.cells.push_back(
        node.Own(MakeLeafCell(kU, absl::StrCat("k", i), 20, std::string(20, 'v'), PageNo(0))));
  }
  EXPECT_EQ(ChooseSplit(node, kU, SplitHint::kBalanced), 5);
  EXPECT_EQ(ChooseSplit(node, kU, SplitHint::kAppend), 9);
  EXPECT_TRUE(SplitFits(node, kU, 5));
  EXPECT_FALSE(SplitFits(node, kU, 0));
  EXPECT_FALSE(SplitFits(node, kU, 10));
}

TEST(NodeSplitTest, InteriorSplitKeepsACellOnEachSide) {
  Node node;
  node.type = PageType::kInterior;
  node.right_child = PageNo(99);
  for (int i = 0; i < 3; ++i) {
    node.cells.push_back(node.Own(MakeInteriorCell(absl::StrCat("k", i), PageNo(10 + i))));
  }
  EXPECT_EQ(ChooseSplit(node, kU, SplitHint::kBalanced), 1);
  EXPECT_EQ(ChooseSplit(node, kU, SplitHint::kAppend), 1);
  EXPECT_EQ(node.child(1), PageNo(11));
  EXPECT_EQ(node.child(3), PageNo(99));
  node.set_child(1, PageNo(77));
  EXPECT_EQ(node.child(1), PageNo(77));
  EXPECT_EQ(node.key(1), "k1");
}

}  // namespace
}  // namespace journalkv::btree
