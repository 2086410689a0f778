#include "btree/cursor.h"

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "btree/btree.h"
#include "btree/btree_format.h"
#include "btree/btree_test_util.h"
#include "btree/mem_pages_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

using ::journalkv::testing::StatusIs;

// A tree of keys NumKey(0), NumKey(2), ..., NumKey(2 * (n - 1)) over 512-byte pages, so that
// even a few hundred keys make several levels.
class CursorTest : public ::testing::Test {
 protected:
  CursorTest() : pages_(512) {}

  void Fill(int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_THAT(BTree::Put(pages_, NumKey(2 * i), absl::StrCat("v", 2 * i)),
                  ::journalkv::testing::IsOk());
    }
  }

  MemPages pages_;
};

TEST_F(CursorTest, EmptyTreeIsNeverValid) {
  Cursor c(pages_);
  EXPECT_FALSE(c.Valid());
  JKV_ASSERT_OK(c.SeekToFirst());
  EXPECT_FALSE(c.Valid());
  JKV_ASSERT_OK(c.SeekToLast());
  EXPECT_FALSE(c.Valid());
  JKV_ASSERT_OK(c.Seek(""));
  EXPECT_FALSE(c.Valid());
  EXPECT_THAT(c.Next(), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
  EXPECT_THAT(c.Prev(), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
  EXPECT_THAT(c.value(), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
}

TEST_F(CursorTest, ScansForwardAndBackwardOverEveryKey) {
  Fill(2000);
  Cursor c(pages_);
  int i = 0;
  JKV_ASSERT_OK(c.SeekToFirst());
  while (c.Valid()) {
    ASSERT_EQ(c.key(), NumKey(2 * i));
    ASSERT_THAT(c.value(), IsOkAndHolds(absl::StrCat("v", 2 * i)));
    ++i;
    JKV_ASSERT_OK(c.Next());
  }
  EXPECT_EQ(i, 2000);
  JKV_ASSERT_OK(c.SeekToLast());
  while (c.Valid()) {
    --i;
    ASSERT_EQ(c.key(), NumKey(2 * i));
    JKV_ASSERT_OK(c.Prev());
  }
  EXPECT_EQ(i, 0);
}

TEST_F(CursorTest, ReadValueReusesTheCallersString) {
  Fill(50);
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(20), std::string(3000, 'x')));  // overflows
  Cursor c(pages_);
  std::string value;
  JKV_ASSERT_OK(c.Seek(NumKey(20)));
  JKV_ASSERT_OK(c.ReadValue(&value));
  EXPECT_EQ(value, std::string(3000, 'x'));
  JKV_ASSERT_OK(c.Next());
  JKV_ASSERT_OK(c.ReadValue(&value));
  EXPECT_EQ(value, "v22");
  JKV_ASSERT_OK(c.SeekToLast());
  JKV_ASSERT_OK(c.Next());
  EXPECT_THAT(c.ReadValue(&value), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
}

TEST_F(CursorTest, ValueViewPointsIntoTheLeafOrAssemblesAnOverflowValue) {
  Fill(50);
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(20), std::string(3000, 'x')));  // overflows
  ReadOnlyPages reader(pages_);
  Cursor c(reader);
  JKV_ASSERT_OK(c.Seek(NumKey(18)));
  JKV_ASSERT_OK_AND_ASSIGN(absl::string_view inline_value, c.ValueView());
  EXPECT_EQ(inline_value, "v18");
  // An inline value is read in place: the view points into the key's page, not a copy.
  EXPECT_LT(static_cast<size_t>(std::abs(inline_value.data() - c.key().data())), 512u);
  JKV_ASSERT_OK(c.Next());
  JKV_ASSERT_OK_AND_ASSIGN(absl::string_view overflow_value, c.ValueView());
  EXPECT_EQ(overflow_value, std::string(3000, 'x'));
  JKV_ASSERT_OK(c.Next());
  JKV_ASSERT_OK_AND_ASSIGN(absl::string_view next_value, c.ValueView());
  EXPECT_EQ(next_value, "v22");
  JKV_ASSERT_OK(c.SeekToLast());
  JKV_ASSERT_OK(c.Next());
  EXPECT_THAT(c.ValueView(), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
}

TEST_F(CursorTest, ReadOnlyCursorReadsKeysInPlace) {
  Fill(1000);
  ReadOnlyPages reader(pages_);
  Cursor c(reader);
  int i = 0;
  JKV_ASSERT_OK(c.SeekToFirst());
  while (c.Valid()) {
    ASSERT_EQ(c.key(), NumKey(2 * i));
    ++i;
    JKV_ASSERT_OK(c.Next());
  }
  EXPECT_EQ(i, 1000);
  // Seeking to the cursor's own key, which lives in a page the cursor pins.
  JKV_ASSERT_OK(c.Seek(NumKey(500)));
  for (int step = 0; step < 600; ++step) {
    JKV_ASSERT_OK(c.Seek(c.key()));
    ASSERT_TRUE(c.Valid());
    JKV_ASSERT_OK(c.Next());
  }
  EXPECT_EQ(c.key(), NumKey(1700));
}

TEST_F(CursorTest, SeekFindsTheFirstKeyAtOrAfter) {
  Fill(500);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.Seek(NumKey(100)));  // present
  ASSERT_TRUE(c.Valid());
  EXPECT_EQ(c.key(), NumKey(100));
  JKV_ASSERT_OK(c.Seek(NumKey(101)));  // absent: the next one
  ASSERT_TRUE(c.Valid());
  EXPECT_EQ(c.key(), NumKey(102));
  JKV_ASSERT_OK(c.Seek(""));  // before everything
  ASSERT_TRUE(c.Valid());
  EXPECT_EQ(c.key(), NumKey(0));
  JKV_ASSERT_OK(c.Seek(NumKey(998)));  // the last key
  ASSERT_TRUE(c.Valid());
  JKV_ASSERT_OK(c.Seek(NumKey(999)));  // past the end
  EXPECT_FALSE(c.Valid());
  JKV_ASSERT_OK(c.Seek("zzz"));
  EXPECT_FALSE(c.Valid());
}

TEST_F(CursorTest, StepsOffBothEnds) {
  Fill(300);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.SeekToFirst());
  JKV_ASSERT_OK(c.Prev());  // prev from the first key
  EXPECT_FALSE(c.Valid());
  EXPECT_THAT(c.Prev(), StatusIs(absl::StatusCode::kFailedPrecondition, "not on a key"));
  JKV_ASSERT_OK(c.SeekToLast());
  EXPECT_EQ(c.key(), NumKey(598));
  JKV_ASSERT_OK(c.Next());
  EXPECT_FALSE(c.Valid());
  // Every leaf boundary, in both directions, from a seek.
  for (int i = 1; i < 300; ++i) {
    JKV_ASSERT_OK(c.Seek(NumKey(2 * i)));
    JKV_ASSERT_OK(c.Prev());
    ASSERT_TRUE(c.Valid());
    ASSERT_EQ(c.key(), NumKey(2 * i - 2));
    JKV_ASSERT_OK(c.Next());
    ASSERT_EQ(c.key(), NumKey(2 * i));
  }
}

TEST_F(CursorTest, DeletingTheCurrentKeyThenNextSkipsNothing) {
  Fill(1000);
  Cursor c(pages_);
  int seen = 0;
  JKV_ASSERT_OK(c.SeekToFirst());
  while (c.Valid()) {
    ASSERT_EQ(c.key(), NumKey(2 * seen));
    ASSERT_THAT(BTree::Delete(pages_, c.key()), IsOkAndHolds(true));
    ++seen;
    JKV_ASSERT_OK(c.Next());
  }
  EXPECT_EQ(seen, 1000);
  EXPECT_EQ(pages_.meta(kRootMetaSlot), 0u);
  EXPECT_EQ(pages_.used_count(), 0u);
}

TEST_F(CursorTest, DeletingBackwardWithPrev) {
  Fill(1000);
  Cursor c(pages_);
  int seen = 0;
  JKV_ASSERT_OK(c.SeekToLast());
  while (c.Valid()) {
    ASSERT_EQ(c.key(), NumKey(2 * (999 - seen)));
    ASSERT_THAT(BTree::Delete(pages_, c.key()), IsOkAndHolds(true));
    ++seen;
    JKV_ASSERT_OK(c.Prev());
  }
  EXPECT_EQ(seen, 1000);
  JKV_EXPECT_TREE_OK(pages_);
}

TEST_F(CursorTest, ValidAfterDeletingTheCurrentKeyMovesToTheNextGreaterKey) {
  Fill(100);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.Seek(NumKey(50)));
  ASSERT_THAT(BTree::Delete(pages_, NumKey(50)), IsOkAndHolds(true));
  ASSERT_TRUE(c.Valid());
  EXPECT_EQ(c.key(), NumKey(52));
  // And past the end: the cursor becomes invalid.
  JKV_ASSERT_OK(c.SeekToLast());
  ASSERT_THAT(BTree::Delete(pages_, NumKey(198)), IsOkAndHolds(true));
  EXPECT_FALSE(c.Valid());
  JKV_EXPECT_OK(c.status());
}

TEST_F(CursorTest, SeesInsertsAheadAndNotBehind) {
  Fill(200);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.Seek(NumKey(100)));
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(101), "new ahead"));
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(99), "new behind"));
  ASSERT_TRUE(c.Valid());
  EXPECT_EQ(c.key(), NumKey(100));  // still on its key
  JKV_ASSERT_OK(c.Next());
  EXPECT_EQ(c.key(), NumKey(101));
  EXPECT_THAT(c.value(), IsOkAndHolds(std::string("new ahead")));
  JKV_ASSERT_OK(c.Prev());
  JKV_ASSERT_OK(c.Prev());
  EXPECT_EQ(c.key(), NumKey(99));
  // Many inserts that split the cursor's leaf many times over.
  for (int i = 0; i < 400; i += 2) JKV_ASSERT_OK(BTree::Put(pages_, NumKey(i) + "x", "split"));
  JKV_ASSERT_OK(c.Prev());
  EXPECT_EQ(c.key(), NumKey(98) + "x");
  JKV_ASSERT_OK(c.Next());
  EXPECT_EQ(c.key(), NumKey(99));
  JKV_ASSERT_OK(c.Next());
  EXPECT_EQ(c.key(), NumKey(100));
  JKV_ASSERT_OK(c.Next());
  EXPECT_EQ(c.key(), NumKey(100) + "x");
  JKV_ASSERT_OK(c.Next());
  EXPECT_EQ(c.key(), NumKey(101));
}

TEST_F(CursorTest, ValueReflectsAnOverwrite) {
  Fill(100);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.Seek(NumKey(10)));
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(10), std::string(5000, 'o')));  // now overflows
  EXPECT_THAT(c.value(), IsOkAndHolds(std::string(5000, 'o')));
  JKV_ASSERT_OK(BTree::Put(pages_, NumKey(10), "short"));
  EXPECT_THAT(c.value(), IsOkAndHolds(std::string("short")));
}

TEST_F(CursorTest, InterleavedWritesFollowAModel) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 3000; i += 3) {
    JKV_ASSERT_OK(BTree::Put(pages_, NumKey(i), "v"));
    model[NumKey(i)] = "v";
  }
  Cursor c(pages_);
  JKV_ASSERT_OK(c.SeekToFirst());
  int step = 0;
  while (c.Valid()) {
    const std::string at(c.key());
    ASSERT_EQ(model.count(at), 1u) << at;
    // Around each position: delete the key after, add one two further on, rewrite this one.
    auto next = model.upper_bound(at);
    if (next != model.end() && step % 2 == 0) {
      JKV_ASSERT_OK(BTree::Delete(pages_, next->first).status());
      model.erase(next);
    }
    if (step % 3 == 0) {
      const std::string added = at + "+";
      JKV_ASSERT_OK(BTree::Put(pages_, added, "added"));
      model[added] = "added";
    }
    JKV_ASSERT_OK(BTree::Put(pages_, at, "rewritten"));
    model[at] = "rewritten";
    JKV_ASSERT_OK(c.Next());
    auto expected = model.upper_bound(at);
    if (expected == model.end()) {
      EXPECT_FALSE(c.Valid());
    } else {
      ASSERT_TRUE(c.Valid());
      ASSERT_EQ(c.key(), expected->first);
    }
    ++step;
  }
  JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages_));
  ASSERT_EQ(all.size(), model.size());
  JKV_EXPECT_TREE_OK(pages_);
}

TEST_F(CursorTest, DamagedPageIsDataLossAndLeavesTheCursorInvalid) {
  Fill(500);
  Cursor c(pages_);
  JKV_ASSERT_OK(c.SeekToFirst());
  pages_.InjectDataLossForTesting(PageNo(pages_.meta(kRootMetaSlot)));
  EXPECT_THAT(c.Seek(NumKey(10)), StatusIs(absl::StatusCode::kDataLoss, "checksum mismatch"));
  EXPECT_FALSE(c.Valid());
  EXPECT_THAT(c.SeekToLast(), StatusIs(absl::StatusCode::kDataLoss, "checksum mismatch"));
  EXPECT_FALSE(c.Valid());
}

// The cursor decodes each cell whole when it lands on it (the value is then read without a
// second decode): a cell with an impossible value size is DataLoss naming the page at once.
TEST_F(CursorTest, ACellWithAnImpossibleValueSizeIsDataLossWhereTheCursorLands) {
  Fill(3);  // one leaf: the root
  const PageNo leaf(pages_.meta(kRootMetaSlot));
  absl::Span<uint8_t> page = pages_.RawPageForTesting(leaf);
  const uint32_t cell = base::DecodeFixed16(page.data() + kPageHeaderSize + kCellPointerSize);
  base::EncodeFixed32(page.data() + cell + 2, kMaxValueSize + 1);  // cell 1's value_size
  Cursor c(pages_);
  JKV_ASSERT_OK(c.SeekToFirst());
  JKV_ASSERT_OK_AND_ASSIGN(absl::string_view v, c.ValueView());
  EXPECT_EQ(v, "v0");
  EXPECT_THAT(c.Next(), StatusIs(absl::StatusCode::kDataLoss,
                                 absl::StrCat("page ", leaf.value(), ": cell at offset ", cell,
                                              ": impossible sizes")));
  EXPECT_FALSE(c.Valid());
  EXPECT_THAT(c.Seek(NumKey(2)), StatusIs(absl::StatusCode::kDataLoss, "impossible sizes"));
}

// Pages with valid checksums can still hold cells out of order (a buggy or hostile writer
// sealed them; the db_file fuzzer made such files): a scan stops with DataLoss there instead
// of handing out keys twice or backwards, in a read-only and in a writable cursor.
TEST_F(CursorTest, KeysOutOfOrderInALeafAreDataLoss) {
  Fill(3);  // one leaf: the root
  const PageNo leaf(pages_.meta(kRootMetaSlot));
  absl::Span<uint8_t> page = pages_.RawPageForTesting(leaf);
  // Cell pointer 1 repeats cell 0: the keys read NumKey(0), NumKey(0), NumKey(4).
  base::EncodeFixed16(page.data() + kPageHeaderSize + kCellPointerSize,
                      base::DecodeFixed16(page.data() + kPageHeaderSize));
  ReadOnlyPages reader(pages_);
  for (pager::PageReader* pages : {static_cast<pager::PageReader*>(&reader),
                                   static_cast<pager::PageReader*>(&pages_)}) {
    Cursor c(*pages);
    JKV_ASSERT_OK(c.SeekToFirst());
    EXPECT_EQ(c.key(), NumKey(0));
    EXPECT_THAT(c.Next(), StatusIs(absl::StatusCode::kDataLoss, "keys out of order"));
    EXPECT_FALSE(c.Valid());
    JKV_ASSERT_OK(c.SeekToLast());
    EXPECT_EQ(c.key(), NumKey(4));
    JKV_ASSERT_OK(c.Prev());  // NumKey(0), the repeated cell
    EXPECT_THAT(c.Prev(), StatusIs(absl::StatusCode::kDataLoss, "keys out of order"));
  }
}

TEST_F(CursorTest, LeavesOutOfOrderAreDataLoss) {
  Fill(300);  // several leaves under an interior root
  const PageNo root(pages_.meta(kRootMetaSlot));
  absl::Span<uint8_t> page = pages_.RawPageForTesting(root);
  ASSERT_NE(page[0], static_cast<uint8_t>(PageType::kLeaf));
  // Swap the first two children: the second leaf's keys now come first.
  const uint32_t cell0 = base::DecodeFixed16(page.data() + kPageHeaderSize);
  const uint32_t cell1 = base::DecodeFixed16(page.data() + kPageHeaderSize + kCellPointerSize);
  const uint32_t child0 = base::DecodeFixed32(page.data() + cell0 + 2);
  base::EncodeFixed32(page.data() + cell0 + 2, base::DecodeFixed32(page.data() + cell1 + 2));
  base::EncodeFixed32(page.data() + cell1 + 2, child0);
  ReadOnlyPages reader(pages_);
  Cursor c(reader);
  JKV_ASSERT_OK(c.SeekToFirst());
  absl::Status s;
  while (s.ok() && c.Valid()) s = c.Next();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, "keys out of order"));
}

}  // namespace
}  // namespace journalkv::btree
