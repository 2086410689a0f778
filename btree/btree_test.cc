#include "btree/btree.h"

#include <algorithm>
#include <map>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "btree/btree_format.h"
#include "btree/btree_test_util.h"
#include "btree/mem_pages_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::Optional;

// A value whose bytes depend on a seed and their position, so that misplaced bytes show.
std::string PatternValue(size_t size, uint32_t seed) {
  std::string v(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<char>(x >> 24);
  }
  return v;
}

class BtreePageSizeTest : public ::testing::TestWithParam<uint32_t> {};

INSTANTIATE_TEST_SUITE_P(PageSizes, BtreePageSizeTest, ::testing::Values(512, 4096, 65536),
                         [](const auto& info) { return absl::StrCat("P", info.param); });

TEST(BtreeTest, EmptyTreeHasNoPagesAndNoKeys) {
  MemPages pages;
  EXPECT_THAT(BTree::Get(pages, "a"), IsOkAndHolds(std::nullopt));
  EXPECT_THAT(BTree::Delete(pages, "a"), IsOkAndHolds(false));
  EXPECT_THAT(BTree::Count(pages), IsOkAndHolds(0u));
  EXPECT_EQ(pages.page_count(), 1u);
  JKV_EXPECT_TREE_OK(pages);
}

TEST(BtreeTest, PutGetOverwriteDelete) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "apple", "red"));
  JKV_ASSERT_OK(BTree::Put(pages, "banana", "yellow"));
  EXPECT_THAT(BTree::Get(pages, "apple"), IsOkAndHolds(Optional(std::string("red"))));
  EXPECT_THAT(BTree::Get(pages, "banana"), IsOkAndHolds(Optional(std::string("yellow"))));
  EXPECT_THAT(BTree::Get(pages, "cherry"), IsOkAndHolds(std::nullopt));
  EXPECT_THAT(BTree::Get(pages, "appl"), IsOkAndHolds(std::nullopt));
  JKV_ASSERT_OK(BTree::Put(pages, "apple", "green and longer"));
  EXPECT_THAT(BTree::Get(pages, "apple"), IsOkAndHolds(Optional(std::string("green and longer"))));
  EXPECT_THAT(BTree::Count(pages), IsOkAndHolds(2u));
  EXPECT_THAT(BTree::Delete(pages, "apple"), IsOkAndHolds(true));
  EXPECT_THAT(BTree::Delete(pages, "apple"), IsOkAndHolds(false));
  EXPECT_THAT(BTree::Get(pages, "apple"), IsOkAndHolds(std::nullopt));
  EXPECT_THAT(BTree::Count(pages), IsOkAndHolds(1u));
  JKV_EXPECT_TREE_OK(pages);
}

TEST(BtreeTest, GetIntoFillsACallerOwnedString) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "a", "first"));
  JKV_ASSERT_OK(BTree::Put(pages, "b", std::string(10000, 'b')));  // overflows
  std::string value = "old";
  EXPECT_THAT(BTree::GetInto(pages, "missing", &value), IsOkAndHolds(false));
  EXPECT_EQ(value, "old");
  EXPECT_THAT(BTree::GetInto(pages, "b", &value), IsOkAndHolds(true));
  EXPECT_EQ(value, std::string(10000, 'b'));
  EXPECT_THAT(BTree::GetInto(pages, "a", &value), IsOkAndHolds(true));
  EXPECT_EQ(value, "first");
}

TEST(BtreeTest, EmptyKeyAndEmptyValueAreOrdinaryEntries) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "", "value of the empty key"));
  JKV_ASSERT_OK(BTree::Put(pages, "k", ""));
  JKV_ASSERT_OK(BTree::Put(pages, std::string(1, '\0'), "nul"));
  EXPECT_THAT(BTree::Get(pages, ""), IsOkAndHolds(Optional(std::string("value of the empty key"))));
  EXPECT_THAT(BTree::Get(pages, "k"), IsOkAndHolds(Optional(std::string(""))));
  JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].first, "");  // the empty key sorts first
  EXPECT_EQ(all[1].first, std::string(1, '\0'));
  EXPECT_THAT(BTree::Delete(pages, ""), IsOkAndHolds(true));
  EXPECT_THAT(BTree::Get(pages, ""), IsOkAndHolds(std::nullopt));
  JKV_EXPECT_TREE_OK(pages);
}

TEST_P(BtreePageSizeTest, KeyAtTheLimitIsStoredAndOneByteOverIsRefused) {
  MemPages pages(GetParam());
  const uint32_t limit = MaxKeySize(pages.usable_size());
  // Enough maximal keys for several levels of interior pages.
  for (int i = 0; i < 40; ++i) {
    std::string key(limit, static_cast<char>('a' + i % 26));
    key[limit - 1] = static_cast<char>(i);
    JKV_ASSERT_OK(BTree::Put(pages, key, PatternValue(i * 37, i)));
  }
  JKV_ASSERT_TREE_OK(pages);
  const uint32_t page_count = pages.page_count();
  const uint32_t writes = pages.write_count();
  EXPECT_THAT(BTree::Put(pages, std::string(limit + 1, 'z'), "v"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("key of ", limit + 1, " bytes exceeds the limit of ", limit,
                                    " bytes for ", GetParam(), "-byte pages")));
  EXPECT_EQ(pages.page_count(), page_count);
  EXPECT_EQ(pages.write_count(), writes);
  EXPECT_THAT(BTree::Get(pages, std::string(limit + 1, 'z')), IsOkAndHolds(std::nullopt));
  EXPECT_THAT(BTree::Count(pages), IsOkAndHolds(40u));
}

// Keys near the limit that differ only near their end make separators as long as the keys, so
// interior pages hold three or four of them: every split, merge and redistribution of interior
// pages runs with cells of the largest size, where the fit bounds of btree_balance.cc are tight.
TEST_P(BtreePageSizeTest, LongSeparatorsSplitMergeAndRedistributeInteriorPages) {
  MemPages pages(GetParam());
  const uint32_t limit = MaxKeySize(pages.usable_size());
  std::mt19937 rng(GetParam());
  std::vector<std::string> keys;
  for (int i = 0; i < 150; ++i) {
    const uint32_t size = std::uniform_int_distribution<uint32_t>(limit / 2, limit)(rng);
    std::string key(size - 2, 'p');
    key.push_back(static_cast<char>(i >> 8));
    key.push_back(static_cast<char>(i));
    keys.push_back(key);
    JKV_ASSERT_OK(BTree::Put(pages, key, PatternValue(i % 3 == 0 ? 0 : rng() % 300, i)));
    JKV_ASSERT_TREE_OK(pages) << "after put " << i;
  }
  JKV_ASSERT_OK_AND_ASSIGN(CheckReport report, BTree::Check(pages, pages.FreePages()));
  EXPECT_GE(report.depth, 3) << report.ToString();
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_THAT(BTree::Delete(pages, keys[i]), IsOkAndHolds(true));
    JKV_ASSERT_TREE_OK(pages) << "after delete " << i;
    if (i + 1 < keys.size()) {
      ASSERT_THAT(BTree::Get(pages, keys[i + 1]), IsOkAndHolds(Optional(::testing::_)));
    }
  }
  EXPECT_EQ(pages.used_count(), 0u);
}

TEST(BtreeTest, KeyLimitMessageAtDefaultPageSize) {
  MemPages pages;
  EXPECT_THAT(BTree::Put(pages, std::string(1347, 'k'), "v"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "key of 1347 bytes exceeds the limit of 1346 bytes for 4096-byte pages"));
  EXPECT_EQ(pages.page_count(), 1u);
  EXPECT_EQ(pages.meta(kRootMetaSlot), 0u);
}

TEST(BtreeTest, ValueOverTheLimitIsRefusedBeforeAnythingIsWritten) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "a", "b"));
  // The size check comes before the value is read, so the view need not be backed by 1 GiB.
  static const char kByte = 'x';
  const absl::string_view huge(&kByte, size_t{kMaxValueSize} + 1);
  EXPECT_THAT(BTree::Put(pages, "a", huge),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "value of 1073741825 bytes exceeds the limit of 1073741824 bytes"));
  EXPECT_THAT(BTree::Get(pages, "a"), IsOkAndHolds(Optional(std::string("b"))));
  EXPECT_EQ(pages.page_count(), 2u);
}

TEST_P(BtreePageSizeTest, ValuesOfEverySizeClassRoundTrip) {
  MemPages pages(GetParam());
  const uint32_t u = pages.usable_size();
  const uint32_t c = OverflowCapacity(u);
  const uint32_t m = MaxCellSize(u);
  std::vector<size_t> sizes = {0, 1,     7,     m - 8,     m - 7,       m - 6,     c - 1,
                               c, c + 1, 2 * c, 2 * c + 1, 2 * c + 100, 3 * c - 1, 5 * c + m / 2};
  for (size_t i = 0; i < sizes.size(); ++i) {
    JKV_ASSERT_OK(BTree::Put(pages, absl::StrCat("key", i), PatternValue(sizes[i], i)))
        << "size " << sizes[i];
  }
  JKV_ASSERT_TREE_OK(pages);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_THAT(BTree::Get(pages, absl::StrCat("key", i)),
                IsOkAndHolds(Optional(PatternValue(sizes[i], i))))
        << "size " << sizes[i];
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_THAT(BTree::Delete(pages, absl::StrCat("key", i)), IsOkAndHolds(true));
  }
  EXPECT_EQ(pages.used_count(), 0u);
  JKV_EXPECT_TREE_OK(pages);
}

TEST(BtreeTest, LargeValueUsesAnOverflowChainFreedOnOverwriteAndDelete) {
  MemPages pages;
  const std::string big = PatternValue(size_t{64} << 20, 7);
  JKV_ASSERT_OK(BTree::Put(pages, "big", big));
  JKV_ASSERT_OK(BTree::Put(pages, "small", "s"));
  const uint32_t chain =
      OverflowPageCount(pages.usable_size(), 3, static_cast<uint32_t>(big.size()));
  EXPECT_EQ(pages.used_count(), 1 + chain);
  JKV_ASSERT_OK_AND_ASSIGN(CheckReport report, BTree::Check(pages, pages.FreePages()));
  EXPECT_TRUE(report.ok()) << report.ToString();
  EXPECT_EQ(report.overflow_pages, chain);
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, BTree::Get(pages, "big"));
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == big);
  got.reset();

  JKV_ASSERT_OK(BTree::Put(pages, "big", "now small"));  // overwrite frees the chain
  EXPECT_EQ(pages.used_count(), 1u);
  EXPECT_EQ(pages.free_count(), chain);
  JKV_EXPECT_TREE_OK(pages);

  JKV_ASSERT_OK(BTree::Put(pages, "big", big));  // reuses the freed pages
  EXPECT_EQ(pages.page_count(), 2 + chain);
  EXPECT_THAT(BTree::Delete(pages, "big"), IsOkAndHolds(true));
  EXPECT_THAT(BTree::Delete(pages, "small"), IsOkAndHolds(true));
  EXPECT_EQ(pages.used_count(), 0u);
  EXPECT_EQ(pages.meta(kRootMetaSlot), 0u);
  JKV_EXPECT_TREE_OK(pages);
}

TEST_P(BtreePageSizeTest, DeletingEveryKeyFreesEveryPage) {
  MemPages pages(GetParam());
  std::mt19937 rng(GetParam());
  std::vector<int> ids(GetParam() == 65536 ? 60000 : 20000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int id : ids) {
    JKV_ASSERT_OK(BTree::Put(pages, NumKey(id), PatternValue(id % 50 == 0 ? 3000 : id % 40, id)));
  }
  JKV_ASSERT_TREE_OK(pages);
  EXPECT_THAT(BTree::Count(pages), IsOkAndHolds(ids.size()));
  std::shuffle(ids.begin(), ids.end(), rng);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_THAT(BTree::Delete(pages, NumKey(ids[i])), IsOkAndHolds(true));
    if (i % 5000 == 0) {
      JKV_ASSERT_TREE_OK(pages);
    }
  }
  EXPECT_EQ(pages.meta(kRootMetaSlot), 0u);
  EXPECT_EQ(pages.used_count(), 0u);
  EXPECT_EQ(pages.free_count(), pages.page_count() - 1);
  JKV_EXPECT_TREE_OK(pages);
}

TEST_P(BtreePageSizeTest, SequentialInsertsFillLeavesAlmostFully) {
  MemPages pages(GetParam());
  const int n = GetParam() == 512 ? 5000 : 50000;
  for (int i = 0; i < n; ++i) JKV_ASSERT_OK(BTree::Put(pages, NumKey(i), "v"));
  JKV_ASSERT_OK_AND_ASSIGN(CheckReport report, BTree::Check(pages, pages.FreePages()));
  ASSERT_TRUE(report.ok()) << report.ToString();
  // Each cell takes 6 + 9 + 1 bytes plus a 2-byte pointer.
  const uint64_t per_leaf = CellSpace(pages.usable_size()) / 18;
  EXPECT_LE(report.leaf_pages, n / per_leaf + 2) << report.ToString();
  // Descending inserts are not helped by the append rule but must stay correct.
  MemPages down(GetParam());
  for (int i = n; i > 0; --i) JKV_ASSERT_OK(BTree::Put(down, NumKey(i), "v"));
  JKV_EXPECT_TREE_OK(down);
  EXPECT_THAT(BTree::Count(down), IsOkAndHolds(static_cast<uint64_t>(n)));
}

// With an AppendHint, ascending keys past the tree's greatest skip the descent: the same load
// reads far fewer pages and builds the same tree.
TEST_P(BtreePageSizeTest, AnAppendHintSkipsTheDescentForAscendingKeysAndBuildsTheSameTree) {
  const int n = GetParam() == 512 ? 5000 : 50000;
  MemPages plain(GetParam());
  MemPages hinted(GetParam());
  AppendHint hint;
  for (int i = 0; i < n; ++i) {
    const std::string value = PatternValue(i % 50 == 0 ? GetParam() + 100 : 20, i);  // overflow too
    JKV_ASSERT_OK(BTree::Put(plain, NumKey(i), value));
    JKV_ASSERT_OK(BTree::Put(hinted, NumKey(i), value, &hint));
  }
  EXPECT_TRUE(hint.valid());
  JKV_ASSERT_TREE_OK(hinted);
  // The same tree: the same pages in use, the same shape, the same pairs.
  ASSERT_EQ(hinted.page_count(), plain.page_count());
  JKV_ASSERT_OK_AND_ASSIGN(CheckReport a, BTree::Check(plain, plain.FreePages()));
  JKV_ASSERT_OK_AND_ASSIGN(CheckReport b, BTree::Check(hinted, hinted.FreePages()));
  EXPECT_EQ(a.ToString(), b.ToString());
  EXPECT_EQ(*ScanAll(plain), *ScanAll(hinted));
  // A hinted put reads its leaf only (and the descent's pages after each split): at most 60%
  // of the reads for these trees of two levels (64 KiB pages) or more.
  EXPECT_LT(hinted.get_calls() * 5, plain.get_calls() * 3)
      << hinted.get_calls() << " vs " << plain.get_calls();
}

// The hint is only a shortcut: keys that are not the greatest, replacements, deletes (with the
// Reset the contract asks for) and appends again, in any mix, give the same map as without it.
TEST_P(BtreePageSizeTest, AnAppendHintKeepsEveryMixOfPutsAndDeletesCorrect) {
  MemPages pages(GetParam());
  AppendHint hint;
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(GetParam());
  int next = 0;  // appends use keys past every key so far
  for (int op = 0; op < 20000; ++op) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 6) {  // append
      const std::string key = NumKey(1000000 + next++);
      const std::string value = PatternValue(rng() % 60, op);
      JKV_ASSERT_OK(BTree::Put(pages, key, value, &hint));
      model[key] = value;
    } else if (kind < 8) {  // a key anywhere, new or replaced
      const std::string key = NumKey(static_cast<int>(rng() % (1000000 + next + 10)));
      const std::string value = PatternValue(rng() % 60, op);
      JKV_ASSERT_OK(BTree::Put(pages, key, value, &hint));
      model[key] = value;
    } else {  // delete, then Reset as the contract says
      if (model.empty()) continue;
      auto it = model.lower_bound(NumKey(static_cast<int>(rng() % (1000000 + next + 1))));
      if (it == model.end()) it = std::prev(model.end());
      hint.Reset();
      JKV_ASSERT_OK_AND_ASSIGN(bool existed, BTree::Delete(pages, it->first));
      ASSERT_TRUE(existed);
      model.erase(it);
    }
    if (op % 2000 == 0) {
      JKV_ASSERT_TREE_OK(pages);
    }
  }
  JKV_ASSERT_TREE_OK(pages);
  JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages));
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(all, Pairs(model.begin(), model.end()));
}

TEST(BtreeTest, GetOfDamagedPageIsDataLossNamingThePage) {
  MemPages pages;
  for (int i = 0; i < 1000; ++i) JKV_ASSERT_OK(BTree::Put(pages, NumKey(i), "value"));
  const PageNo root(pages.meta(kRootMetaSlot));
  pages.InjectDataLossForTesting(root);
  EXPECT_THAT(BTree::Get(pages, NumKey(5)),
              StatusIs(absl::StatusCode::kDataLoss, absl::StrCat("page ", root.value())));
}

TEST(BtreeTest, WrongRootPointerIsDataLossNotInvalidArgument) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "a", "b"));
  pages.set_meta(kRootMetaSlot, 99);
  EXPECT_THAT(BTree::Get(pages, "a"),
              StatusIs(absl::StatusCode::kDataLoss, "points to page 99, outside 2..2"));
  pages.set_meta(kRootMetaSlot, 1);
  EXPECT_THAT(BTree::Get(pages, "a"), StatusIs(absl::StatusCode::kDataLoss, "page 1"));
}

TEST(BtreeTest, EveryWriteAdvancesTheWriteCounter) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "a", "1"));
  JKV_ASSERT_OK(BTree::Put(pages, "a", "2"));
  EXPECT_EQ(pages.write_count(), 2u);
  EXPECT_THAT(BTree::Delete(pages, "zz"), IsOkAndHolds(false));  // nothing changed
  EXPECT_EQ(pages.write_count(), 2u);
  EXPECT_THAT(BTree::Delete(pages, "a"), IsOkAndHolds(true));
  EXPECT_EQ(pages.write_count(), 3u);
}

}  // namespace
}  // namespace journalkv::btree
