// The bottom-up builder (builder.h) against std::map: for random sorted key/value sets (empty,
// one key, exactly one leaf, many levels, overflowing values, keys up to the maximum) at every
// fill it is tested at and page sizes 512, 4096 and 65536: every key and value readable through
// Get, a full scan forwards and backwards in order, CheckTree clean, and then ordinary Puts and
// Deletes on the built tree, checked against the model, ending with every page freed.
#include "btree/builder.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "btree/btree.h"
#include "btree/btree_format.h"
#include "btree/btree_test_util.h"
#include "btree/cursor.h"
#include "btree/mem_pages_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

using ::journalkv::testing::StatusIs;

enum class Shape { kEmpty, kOne, kOneLeaf, kMany, kOverflow, kMaxKeys };

std::string ShapeName(Shape s) {
  switch (s) {
    case Shape::kEmpty: return "Empty";
    case Shape::kOne: return "One";
    case Shape::kOneLeaf: return "OneLeaf";
    case Shape::kMany: return "Many";
    case Shape::kOverflow: return "Overflow";
    case Shape::kMaxKeys: return "MaxKeys";
  }
  return "?";
}

class Runner {
 public:
  Runner(uint32_t page_size, double fill, Shape shape, uint64_t seed)
      : pages_(page_size), fill_(fill), shape_(shape), rng_(seed) {}

  int Rand(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string Bytes(int n) {
    std::string s(n, '\0');
    for (char& ch : s) ch = static_cast<char>(Rand(0, 3) == 0 ? Rand(0, 255) : 'a' + Rand(0, 3));
    return s;
  }

  std::string Value() {
    const int u = static_cast<int>(pages_.usable_size());
    const int r = Rand(0, 99);
    if (shape_ == Shape::kOverflow && r < 40) return Bytes(Rand(u / 3, std::min(4 * u, 70000)));
    if (r < 70) return Bytes(Rand(0, 20));
    return Bytes(Rand(20, 120));
  }

  std::string Key() {
    const int max_key = static_cast<int>(MaxKeySize(pages_.usable_size()));
    if (shape_ == Shape::kMaxKeys) {
      return Bytes(Rand(0, 3) == 0 ? max_key : Rand(1, std::min(max_key, 3000)));
    }
    return Bytes(Rand(0, 12));
  }

  // Fills the model with the shape's pairs.
  void MakePairs() {
    int n = 0;
    switch (shape_) {
      case Shape::kEmpty: n = 0; break;
      case Shape::kOne: n = 1; break;
      case Shape::kOneLeaf: break;  // below: as many as fit one leaf
      case Shape::kMany:
        n = testing::ScaledForSanitizer(pages_.usable_size() > 8000 ? 60000 : 20000, 8000);
        break;
      case Shape::kOverflow: n = testing::ScaledForSanitizer(3000, 1000); break;
      case Shape::kMaxKeys: n = pages_.usable_size() > 8000 ? 300 : 1500; break;
    }
    if (shape_ == Shape::kOneLeaf) {
      // Pairs of fixed size filling just under one leaf at this fill.
      const uint32_t target = static_cast<uint32_t>(fill_ * CellSpace(pages_.usable_size()));
      const uint32_t cell = LeafCellSize(pages_.usable_size(), 8, 10) + kCellPointerSize;
      for (uint32_t i = 0; i < target / cell; ++i) model_[absl::StrFormat("k%07u", i)] = Bytes(10);
      return;
    }
    while (static_cast<int>(model_.size()) < n) model_[Key()] = Value();
  }

  void Build() {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<TreeBuilder> b, TreeBuilder::Create(pages_, fill_));
    for (const auto& [k, v] : model_) JKV_ASSERT_OK(b->Add(k, v));
    JKV_ASSERT_OK_AND_ASSIGN(PageNo root, b->Finish());
    EXPECT_EQ(root.value(), pages_.meta(kRootMetaSlot));
    EXPECT_EQ(b->pairs(), model_.size());
    if (shape_ == Shape::kOneLeaf) {
      EXPECT_EQ(b->node_pages(), 1u);
    }
  }

  void Verify() {
    JKV_ASSERT_TREE_OK(pages_);
    for (const auto& [k, v] : model_) {
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, BTree::Get(pages_, k));
      ASSERT_TRUE(got.has_value()) << "key of " << k.size() << " bytes";
      ASSERT_TRUE(*got == v);
    }
    JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages_));
    ASSERT_EQ(all.size(), model_.size());
    auto it = model_.begin();
    for (const auto& [k, v] : all) {
      ASSERT_EQ(k, it->first);
      ASSERT_TRUE(v == it->second);
      ++it;
    }
    Cursor c(pages_);
    JKV_ASSERT_OK(c.SeekToLast());
    auto rit = model_.rbegin();
    while (c.Valid()) {
      ASSERT_NE(rit, model_.rend());
      ASSERT_EQ(c.key(), rit->first);
      ++rit;
      JKV_ASSERT_OK(c.Prev());
    }
    ASSERT_EQ(rit, model_.rend());
  }

  // Pages a build at fill 1.0 should not exceed by much: what the tree's own append path
  // writes. Checks the fill is real: leaves, bar the last two, at least fill - one cell full.
  void CheckFill() {
    const std::vector<PageNo> free_pages = pages_.FreePages();
    JKV_ASSERT_OK_AND_ASSIGN(CheckReport report, BTree::Check(pages_, free_pages));
    if (report.leaf_pages < 4 || shape_ != Shape::kMany) return;
    const double space = static_cast<double>(report.leaf_pages + report.interior_pages) *
                         CellSpace(pages_.usable_size());
    const double used = (space - static_cast<double>(report.free_bytes)) / space;
    // Cells of at most ~140 bytes: each page is within one cell of the target, so on average
    // about half a cell under it.
    // The last leaves and the interior pages (nearly empty roots at 64 KiB) are allowed two
    // pages' worth.
    const double slack = 0.5 * 140.0 / CellSpace(pages_.usable_size()) + 0.03 +
                         2.0 / (report.leaf_pages + report.interior_pages);
    EXPECT_GT(used, fill_ - slack) << report.ToString();
    EXPECT_LE(used, fill_ + 0.01) << report.ToString();
  }

  // Ordinary writes on the built tree, checked against the model; then everything deleted.
  void Mutate() {
    std::vector<std::string> keys;
    for (const auto& [k, v] : model_) keys.push_back(k);
    const int ops = testing::ScaledForSanitizer(4000, 1500);
    for (int op = 0; op < ops; ++op) {
      if (Rand(0, 1) == 0 || keys.empty()) {
        const std::string k = Key();
        const std::string v = Value();
        JKV_ASSERT_OK(BTree::Put(pages_, k, v));
        if (model_.insert_or_assign(k, v).second) keys.push_back(k);
      } else {
        const std::string k = keys[Rand(0, static_cast<int>(keys.size()) - 1)];
        ASSERT_THAT(BTree::Delete(pages_, k), IsOkAndHolds(model_.erase(k) > 0));
      }
    }
    Verify();
    if (::testing::Test::HasFatalFailure()) return;
    for (const auto& [k, v] : model_) ASSERT_THAT(BTree::Delete(pages_, k), IsOkAndHolds(true));
    EXPECT_EQ(pages_.meta(kRootMetaSlot), 0u);
    EXPECT_EQ(pages_.used_count(), 0u);
    JKV_EXPECT_TREE_OK(pages_);
  }

  MemPages pages_;
  double fill_;
  Shape shape_;
  std::mt19937_64 rng_;
  std::map<std::string, std::string> model_;
};

class BuilderModelTest
    : public ::testing::TestWithParam<std::tuple<uint32_t, double, Shape>> {};

TEST_P(BuilderModelTest, MatchesStdMap) {
  const auto [page_size, fill, shape] = GetParam();
  Runner r(page_size, fill, shape, page_size * 31 + static_cast<int>(shape));
  r.MakePairs();
  r.Build();
  if (::testing::Test::HasFatalFailure()) return;
  r.Verify();
  if (::testing::Test::HasFatalFailure()) return;
  r.CheckFill();
  r.Mutate();
}

INSTANTIATE_TEST_SUITE_P(
    PageSizesFillsShapes, BuilderModelTest,
    ::testing::Combine(::testing::Values(512u, 4096u, 65536u),
                       ::testing::Values(TreeBuilder::kMinFill, TreeBuilder::kDefaultFill,
                                         TreeBuilder::kFullFill),
                       ::testing::Values(Shape::kEmpty, Shape::kOne, Shape::kOneLeaf,
                                         Shape::kMany, Shape::kOverflow, Shape::kMaxKeys)),
    [](const auto& info) {
      return absl::StrCat("P", std::get<0>(info.param), "_Fill",
                          static_cast<int>(std::get<1>(info.param) * 100), "_",
                          ShapeName(std::get<2>(info.param)));
    });

TEST(BuilderTest, RefusesKeysOutOfOrderNamingTheIndex) {
  MemPages pages;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<TreeBuilder> b, TreeBuilder::Create(pages));
  JKV_ASSERT_OK(b->Add("a", "1"));
  JKV_ASSERT_OK(b->Add("c", "2"));
  EXPECT_THAT(b->Add("b", "3"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         "pair 2: key of 1 bytes is less than"));
  EXPECT_THAT(b->Add("c", "3"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         "pair 2: key of 1 bytes is equal to"));
  const std::string big(MaxKeySize(pages.usable_size()) + 1, 'z');
  EXPECT_THAT(b->Add(big, "x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         "pair 2: key of 1347 bytes exceeds"));
  JKV_ASSERT_OK(b->Add("d", "4"));  // the refused pairs changed nothing
  JKV_ASSERT_OK(b->Finish().status());
  JKV_EXPECT_TREE_OK(pages);
  JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages));
  EXPECT_EQ(all.size(), 3u);
}

TEST(BuilderTest, RefusesANonEmptyTreeAndBadFills) {
  MemPages pages;
  JKV_ASSERT_OK(BTree::Put(pages, "k", "v"));
  EXPECT_THAT(TreeBuilder::Create(pages).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not empty"));
  MemPages empty;
  EXPECT_THAT(TreeBuilder::Create(empty, 0.3).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "fill 0.3"));
  EXPECT_THAT(TreeBuilder::Create(empty, 1.5).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, "fill 1.5"));
}

TEST(BuilderTest, FullFillWritesNoMorePagesThanAppendPuts) {
  MemPages built;
  MemPages put;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<TreeBuilder> b,
                           TreeBuilder::Create(built, TreeBuilder::kFullFill));
  AppendHint hint;
  for (int i = 0; i < 20000; ++i) {
    const std::string v(20 + i % 50, 'v');
    JKV_ASSERT_OK(b->Add(NumKey(i), v));
    JKV_ASSERT_OK(BTree::Put(put, NumKey(i), v, &hint));
  }
  JKV_ASSERT_OK(b->Finish().status());
  EXPECT_LE(built.used_count(), put.used_count());
  EXPECT_GE(built.used_count() + 2, put.used_count());
  // The estimate (for jkv info) is close to what was built.
  uint64_t bytes = 0;
  for (int i = 0; i < 20000; ++i) {
    bytes += LeafCellSize(built.usable_size(), 9, 20 + i % 50) + kCellPointerSize;
  }
  const uint64_t estimate =
      TreeBuilder::EstimatePages(bytes, 20000, built.usable_size(), TreeBuilder::kFullFill);
  EXPECT_NEAR(static_cast<double>(estimate), built.used_count(), built.used_count() * 0.03);
}

// EstimateRebuild of a tree that lost every other key predicts the pages a rebuild writes.
TEST(BuilderTest, EstimateRebuildMatchesARebuild) {
  for (uint32_t page_size : {512u, 4096u, 65536u}) {
    MemPages pages(page_size);
    std::map<std::string, std::string> model;
    for (int i = 0; i < 20000; ++i) {
      std::string v(i % 7 == 0 ? page_size * 2 + 5 : 10 + i % 60, 'v');
      JKV_ASSERT_OK(BTree::Put(pages, NumKey(i), v));
      if (i % 2 == 1) model[NumKey(i)] = v;
    }
    for (int i = 0; i < 20000; i += 2) ASSERT_THAT(BTree::Delete(pages, NumKey(i)), IsOkAndHolds(true));
    JKV_ASSERT_OK_AND_ASSIGN(TreeBuilder::RebuildEstimate e, TreeBuilder::EstimateRebuild(pages));
    EXPECT_EQ(e.cells, 10000u);
    MemPages rebuilt(page_size);
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<TreeBuilder> b,
                             TreeBuilder::Create(rebuilt, TreeBuilder::kFullFill));
    for (const auto& [k, v] : model) JKV_ASSERT_OK(b->Add(k, v));
    JKV_ASSERT_OK(b->Finish().status());
    EXPECT_EQ(e.overflow_pages + e.tree_pages, rebuilt.used_count()) << "page size " << page_size;
    EXPECT_EQ(e.tree_pages, b->node_pages()) << "page size " << page_size;
  }
}

}  // namespace
}  // namespace journalkv::btree
