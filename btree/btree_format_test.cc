// Golden-byte tests of the page formats, written from the specification in btree_format.h (not
// from the encoders): if one of these fails, either the code or the comment is wrong.
#include "btree/btree_format.h"

#include <cstdint>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "btree/btree_page.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::ElementsAreArray;

constexpr uint32_t kU512 = 504;  // usable size of a 512-byte page

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(BtreeFormatTest, SizeLimitsFollowTheFormulas) {
  EXPECT_EQ(MaxCellSize(504), 162u);  // (504 - 12) / 3 - 2
  EXPECT_EQ(MaxKeySize(504), 152u);
  EXPECT_EQ(MaxKeySize(4088), 1346u);
  EXPECT_EQ(MaxKeySize(65528), 21826u);
  EXPECT_EQ(OverflowCapacity(504), 496u);
  EXPECT_EQ(kMaxValueSize, 1u << 30);
}

TEST(BtreeFormatTest, LocalValueSizeFollowsTheRule) {
  // Inline while 6 + k + v <= 162.
  EXPECT_EQ(LocalValueSize(kU512, 1, 155), 155u);
  EXPECT_FALSE(ValueOverflows(kU512, 1, 155));
  // 156 overflows; 156 mod 496 = 156 > room = 162 - 10 - 1 = 151, so nothing stays local.
  EXPECT_EQ(LocalValueSize(kU512, 1, 156), 0u);
  EXPECT_EQ(OverflowPageCount(kU512, 1, 156), 1u);
  // 1000 = 2 * 496 + 8: the 8 bytes stay in the cell and both overflow pages are full.
  EXPECT_EQ(LocalValueSize(kU512, 1, 1000), 8u);
  EXPECT_EQ(OverflowPageCount(kU512, 1, 1000), 2u);
  EXPECT_EQ(LeafCellSize(kU512, 1, 1000), 6u + 1 + 8 + 4);
  // 700 = 496 + 204 and 204 > 151: two pages, the second one partly used.
  EXPECT_EQ(LocalValueSize(kU512, 1, 700), 0u);
  EXPECT_EQ(OverflowPageCount(kU512, 1, 700), 2u);
  EXPECT_EQ(LeafCellSize(kU512, 1, 700), 11u);
  // A maximal key and an overflowing value still make a cell of at most MaxCellSize.
  EXPECT_EQ(LeafCellSize(kU512, 152, 100000), 162u);
}

TEST(BtreeFormatTest, InlineLeafCellGolden) {
  const std::string cell = MakeLeafCell(kU512, "ab", 3, "xyz", PageNo(0));
  const std::vector<uint8_t> golden = {
      0x02, 0x00,              // key_size 2
      0x03, 0x00, 0x00, 0x00,  // value_size 3
      'a',  'b',               // key
      'x',  'y',  'z',         // local_value: the whole value
  };
  EXPECT_THAT(Bytes(cell), ElementsAreArray(golden));
  const LeafCell parsed = ParseLeafCell(kU512, cell);
  EXPECT_EQ(parsed.key, "ab");
  EXPECT_EQ(parsed.value_size, 3u);
  EXPECT_EQ(parsed.local_value, "xyz");
  EXPECT_EQ(parsed.overflow_page, PageNo(0));
}

TEST(BtreeFormatTest, OverflowingLeafCellGolden) {
  // Value of 1000 bytes at U = 504: 8 local bytes, then the chain from page 0x0A0B0C0D.
  const std::string cell = MakeLeafCell(kU512, "k", 1000, "01234567", PageNo(0x0A0B0C0D));
  const std::vector<uint8_t> golden = {
      0x01, 0x00,                                  // key_size 1
      0xE8, 0x03, 0x00, 0x00,                      // value_size 1000
      'k',                                         // key
      '0',  '1',  '2',  '3',  '4', '5', '6', '7',  // local_value
      0x0D, 0x0C, 0x0B, 0x0A,                      // overflow_page
  };
  EXPECT_THAT(Bytes(cell), ElementsAreArray(golden));
  const LeafCell parsed = ParseLeafCell(kU512, cell);
  EXPECT_EQ(parsed.local_value, "01234567");
  EXPECT_EQ(parsed.overflow_page, PageNo(0x0A0B0C0D));
  EXPECT_EQ(parsed.size, 19u);
}

TEST(BtreeFormatTest, InteriorCellGolden) {
  const std::string cell = MakeInteriorCell("mn", PageNo(0x01020304));
  const std::vector<uint8_t> golden = {
      0x02, 0x00,              // key_size 2
      0x04, 0x03, 0x02, 0x01,  // child
      'm',  'n',               // key
  };
  EXPECT_THAT(Bytes(cell), ElementsAreArray(golden));
  const InteriorCell parsed = ParseInteriorCell(cell);
  EXPECT_EQ(parsed.key, "mn");
  EXPECT_EQ(parsed.child, PageNo(0x01020304));
}

TEST(BtreeFormatTest, LeafPageGolden) {
  std::vector<uint8_t> page(kU512, 0xEE);
  Node node;
  node.type = PageType::kLeaf;
  node.cells.push_back(node.Own(MakeLeafCell(kU512, "a", 1, "x", PageNo(0))));   // 8 bytes
  node.cells.push_back(node.Own(MakeLeafCell(kU512, "b", 2, "yz", PageNo(0))));  // 9 bytes
  WriteNodeCells(absl::MakeSpan(page), node, 0, 2, PageNo(0));
  // Cells are packed from the end in pointer order: "a" at 504 - 8 = 496, "b" at 496 - 9 = 487.
  const std::vector<uint8_t> header = {
      0x4C, 0x00,              // page_type leaf, reserved
      0x02, 0x00,              // cell_count 2
      0xE7, 0x01,              // content_start 487
      0x00, 0x00,              // garbage_bytes 0
      0x00, 0x00, 0x00, 0x00,  // right_child: none in a leaf
      0xF0, 0x01,              // cell pointer 0: 496
      0xE7, 0x01,              // cell pointer 1: 487
  };
  EXPECT_THAT(std::vector<uint8_t>(page.begin(), page.begin() + 16), ElementsAreArray(header));
  const std::vector<uint8_t> content = {
      0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 'b', 'y', 'z',  // cell 1 at 487
      0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 'a', 'x',       // cell 0 at 496
  };
  EXPECT_THAT(std::vector<uint8_t>(page.begin() + 487, page.end()), ElementsAreArray(content));

  JKV_ASSERT_OK_AND_ASSIGN(PageView view, PageView::Open(PageNo(9), page));
  EXPECT_TRUE(view.is_leaf());
  EXPECT_EQ(view.cell_count(), 2);
  EXPECT_EQ(view.key(0), "a");
  EXPECT_EQ(view.key(1), "b");
  // Free space: 487 - (12 + 4) + 0.
  EXPECT_EQ(view.free_bytes(), 471u);
}

TEST(BtreeFormatTest, InteriorPageGolden) {
  std::vector<uint8_t> page(kU512, 0xEE);
  Node node;
  node.type = PageType::kInterior;
  node.cells.push_back(node.Own(MakeInteriorCell("m", PageNo(5))));  // 7 bytes
  WriteNodeCells(absl::MakeSpan(page), node, 0, 1, PageNo(0x11223344));
  const std::vector<uint8_t> header = {
      0x49, 0x00,              // page_type interior, reserved
      0x01, 0x00,              // cell_count 1
      0xF1, 0x01,              // content_start 497
      0x00, 0x00,              // garbage_bytes 0
      0x44, 0x33, 0x22, 0x11,  // right_child
      0xF1, 0x01,              // cell pointer 0: 497
  };
  EXPECT_THAT(std::vector<uint8_t>(page.begin(), page.begin() + 14), ElementsAreArray(header));
  const std::vector<uint8_t> cell = {0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 'm'};
  EXPECT_THAT(std::vector<uint8_t>(page.begin() + 497, page.end()), ElementsAreArray(cell));
  JKV_ASSERT_OK_AND_ASSIGN(PageView view, PageView::Open(PageNo(9), page));
  EXPECT_EQ(view.child(0), PageNo(5));
  EXPECT_EQ(view.child(1), PageNo(0x11223344));
}

TEST(BtreeFormatTest, DecodeRejectsCellsOutsideThePage) {
  std::vector<uint8_t> page(kU512, 0);
  // A leaf cell at offset 500 claiming a 4-byte key runs past the page end.
  page[500] = 4;
  EXPECT_THAT(DecodeLeafCell(PageNo(7), page, 500),
              StatusIs(absl::StatusCode::kDataLoss, "page 7"));
  EXPECT_THAT(DecodeLeafCell(PageNo(7), page, 2), StatusIs(absl::StatusCode::kDataLoss, "page 7"));
  // A key longer than MaxKeySize is impossible.
  page[100] = 200;
  EXPECT_THAT(DecodeInteriorCell(PageNo(7), page, 100),
              StatusIs(absl::StatusCode::kDataLoss, "impossible key size 200"));
  page[100] = 2;
  EXPECT_THAT(DecodeInteriorCell(PageNo(7), page, 100), IsOk());
}

TEST(BtreeFormatTest, OpenRejectsUnknownTypesAndImpossibleHeaders) {
  std::vector<uint8_t> page(kU512, 0);
  EXPECT_THAT(PageView::Open(PageNo(3), page),
              StatusIs(absl::StatusCode::kDataLoss, "page 3: not a b-tree page (type byte 0x00)"));
  page[0] = static_cast<uint8_t>(PageType::kOverflow);
  EXPECT_THAT(PageView::Open(PageNo(3), page), StatusIs(absl::StatusCode::kDataLoss, "0x4f"));
  InitNodePage(absl::MakeSpan(page), PageType::kLeaf, PageNo(0));
  EXPECT_THAT(PageView::Open(PageNo(3), page), IsOk());
  page[kCellCountOffset] = 250;  // 250 pointers end at 512 > content_start 504
  EXPECT_THAT(PageView::Open(PageNo(3), page),
              StatusIs(absl::StatusCode::kDataLoss, "impossible header"));
}

TEST(BtreeFormatTest, ShortestSeparatorIsBetweenItsNeighbours) {
  EXPECT_EQ(ShortestSeparator("abc", "abd"), "abd");
  EXPECT_EQ(ShortestSeparator("abc", "abzzz"), "abz");
  EXPECT_EQ(ShortestSeparator("ab", "abc"), "abc");
  EXPECT_EQ(ShortestSeparator("", "q"), "q");
  EXPECT_EQ(ShortestSeparator("apple", "banana"), "b");
}

}  // namespace
}  // namespace journalkv::btree
