// Randomized differential test: the B+tree against std::map, at the smallest, the default and
// the largest page size, with the structure check run every few thousand operations.
//
// Each run alternates growing phases (mostly puts) and shrinking phases (mostly deletes), so
// pages split, merge and redistribute at every level; a long-lived cursor is stepped between
// writes and compared with the semantics documented in cursor.h. At the end every key is
// deleted and every page must be back on the freelist.
//
// Failures print the page size and seed. To reproduce or run longer:
//   JKV_BTREE_SEED=<seed> JKV_BTREE_OPS=<ops> bazel test //btree:btree_model_test
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
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

constexpr int kDefaultOps = 100000;
constexpr int kCheckEvery = 5000;
constexpr int kFullScanEvery = 25000;
constexpr int kPhaseLength = 12500;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoi(v);
}

class ModelRunner {
 public:
  ModelRunner(uint32_t page_size, uint64_t seed) : pages_(page_size), rng_(seed), cursor_(pages_) {
    max_key_ = MaxKeySize(pages_.usable_size());
  }

  void Run(int ops) {
    for (int op = 1; op <= ops && !::testing::Test::HasFatalFailure(); ++op) {
      growing_ = (op / kPhaseLength) % 2 == 0;
      Step();
      if (op % kCheckEvery == 0) {
        ASSERT_EQ(CheckProblems(pages_), "") << "after op " << op;
      }
      if (op % kFullScanEvery == 0) FullScan();
    }
    if (::testing::Test::HasFatalFailure()) return;
    FullScan();
    JKV_ASSERT_TREE_OK(pages_);
    DeleteEverything();
  }

 private:
  int Rand(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string RandomKey() {
    const int r = Rand(0, 999);
    if (r < 5) return "";
    if (r < 25) {  // long keys, some exactly at the limit
      const int limit = static_cast<int>(std::min<uint32_t>(max_key_, 3000));
      std::string key(r < 8 ? max_key_ : Rand(100, limit), 'a');
      for (char& ch : key) ch = static_cast<char>('a' + Rand(0, 3));
      return key;
    }
    // Short keys over a small alphabet (shared prefixes, collisions), with some 0x00 and 0xff.
    std::string key(Rand(1, 16), 'a');
    for (char& ch : key) {
      const int c = Rand(0, 40);
      ch = c == 0 ? '\0' : c == 1 ? '\xff' : static_cast<char>('a' + c % 4);
    }
    return key;
  }

  // An existing key most of the time, when there is one.
  std::string SomeKey(int existing_percent) {
    if (!keys_.empty() && Rand(0, 99) < existing_percent) {
      return keys_[Rand(0, static_cast<int>(keys_.size()) - 1)];
    }
    return RandomKey();
  }

  std::string RandomValue() {
    const int r = Rand(0, 999);
    const int u = static_cast<int>(pages_.usable_size());
    int size;
    if (r < 600) {
      size = Rand(0, 20);
    } else if (r < 850) {
      size = Rand(20, 200);
    } else if (r < 990) {
      size = Rand(200, std::min(3 * u, 20000));
    } else {
      size = Rand(u, std::min(8 * u, 256 * 1024));
    }
    std::string value(size, '\0');
    uint32_t x = static_cast<uint32_t>(rng_());
    for (char& ch : value) {
      x = x * 1103515245u + 12345u;
      ch = static_cast<char>(x >> 24);
    }
    return value;
  }

  void Step() {
    const int r = Rand(0, 99);
    const int put_share = growing_ ? 45 : 12;
    if (r < put_share) return Put();
    if (r < 57) return Delete();
    if (r < 77) return Get();
    if (r < 90) return StepCursor();
    return ShortScan();
  }

  void Put() {
    const std::string key = SomeKey(30);
    const std::string value = RandomValue();
    ASSERT_THAT(BTree::Put(pages_, key, value), ::journalkv::testing::IsOk());
    if (model_.insert_or_assign(key, value).second) keys_.push_back(key);
  }

  void Delete() {
    const std::string key = SomeKey(80);
    const bool existed = model_.erase(key) > 0;
    ASSERT_THAT(BTree::Delete(pages_, key), IsOkAndHolds(existed)) << "key size " << key.size();
  }

  void Get() {
    const std::string key = SomeKey(70);
    auto it = model_.find(key);
    if (it == model_.end()) {
      ASSERT_THAT(BTree::Get(pages_, key), IsOkAndHolds(std::nullopt));
    } else {
      // Compared with == rather than a matcher: gMock's Optional prints values even when they
      // match, and some are large.
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> value, BTree::Get(pages_, key));
      ASSERT_TRUE(value.has_value());
      ASSERT_TRUE(*value == it->second) << "value of " << value->size() << " bytes";
    }
  }

  // Compares the long-lived cursor with where cursor.h says it must be.
  void ExpectCursorAt(std::map<std::string, std::string>::const_iterator it) {
    if (it == model_.end()) {
      ASSERT_FALSE(cursor_.Valid());
      JKV_ASSERT_OK(cursor_.status());
      cursor_key_.reset();
      return;
    }
    ASSERT_TRUE(cursor_.Valid()) << cursor_.status();
    ASSERT_EQ(cursor_.key(), it->first);
    cursor_key_ = it->first;
  }

  void StepCursor() {
    const int r = Rand(0, 9);
    if (r == 0 || !cursor_key_.has_value()) {
      const std::string key = SomeKey(50);
      JKV_ASSERT_OK(cursor_.Seek(key));
      return ExpectCursorAt(model_.lower_bound(key));
    }
    const std::string at = *cursor_key_;
    if (r <= 4) {
      JKV_ASSERT_OK(cursor_.Next());
      return ExpectCursorAt(model_.upper_bound(at));
    }
    if (r <= 7) {
      JKV_ASSERT_OK(cursor_.Prev());
      auto it = model_.lower_bound(at);
      return ExpectCursorAt(it == model_.begin() ? model_.end() : std::prev(it));
    }
    auto it = model_.lower_bound(at);  // Valid() and value() after possible writes
    ExpectCursorAt(it);
    if (it != model_.end()) {
      JKV_ASSERT_OK_AND_ASSIGN(std::string value, cursor_.value());
      ASSERT_TRUE(value == it->second) << "value of " << value.size() << " bytes";
    }
  }

  void ShortScan() {
    ReadOnlyPages reader(pages_);
    Cursor c(reader);
    const std::string key = SomeKey(50);
    JKV_ASSERT_OK(c.Seek(key));
    auto it = model_.lower_bound(key);
    const bool forward = Rand(0, 1) == 0;
    for (int i = 0; i < 20; ++i) {
      if (it == model_.end()) {
        ASSERT_FALSE(c.Valid());
        return;
      }
      ASSERT_TRUE(c.Valid());
      ASSERT_EQ(c.key(), it->first);
      if (i < 3) {
        JKV_ASSERT_OK_AND_ASSIGN(std::string value, c.value());
        ASSERT_TRUE(value == it->second) << "value of " << value.size() << " bytes";
      }
      if (forward) {
        JKV_ASSERT_OK(c.Next());
        ++it;
      } else {
        JKV_ASSERT_OK(c.Prev());
        it = it == model_.begin() ? model_.end() : std::prev(it);
      }
    }
  }

  void FullScan() {
    JKV_ASSERT_OK_AND_ASSIGN(auto all, ScanAll(pages_));
    ASSERT_EQ(all.size(), model_.size());
    auto it = model_.begin();
    for (const auto& [key, value] : all) {
      ASSERT_EQ(key, it->first);
      ASSERT_TRUE(value == it->second) << "value of a key of " << key.size() << " bytes";
      ++it;
    }
    ReadOnlyPages reader(pages_);
    Cursor c(reader);
    auto rit = model_.rbegin();
    JKV_ASSERT_OK(c.SeekToLast());
    while (c.Valid()) {
      ASSERT_NE(rit, model_.rend());
      ASSERT_EQ(c.key(), rit->first);
      ++rit;
      JKV_ASSERT_OK(c.Prev());
    }
    ASSERT_EQ(rit, model_.rend());
    EXPECT_THAT(BTree::Count(pages_), IsOkAndHolds(model_.size()));
  }

  void DeleteEverything() {
    std::vector<std::string> keys;
    for (const auto& [key, value] : model_) keys.push_back(key);
    std::shuffle(keys.begin(), keys.end(), rng_);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_THAT(BTree::Delete(pages_, keys[i]), IsOkAndHolds(true));
      if (i % kCheckEvery == 0) {
        JKV_ASSERT_TREE_OK(pages_);
      }
    }
    model_.clear();
    EXPECT_EQ(pages_.meta(kRootMetaSlot), 0u);
    EXPECT_EQ(pages_.used_count(), 0u);
    JKV_EXPECT_TREE_OK(pages_);
  }

  MemPages pages_;
  std::mt19937_64 rng_;
  Cursor cursor_;
  std::optional<std::string> cursor_key_;  // where the model says the cursor is
  std::map<std::string, std::string> model_;
  std::vector<std::string> keys_;  // every key ever put, for picking existing keys
  uint32_t max_key_ = 0;
  bool growing_ = true;
};

class BtreeModelTest : public ::testing::TestWithParam<std::tuple<uint32_t, uint64_t>> {};

TEST_P(BtreeModelTest, MatchesStdMap) {
  const auto [page_size, param_seed] = GetParam();
  const uint64_t seed = static_cast<uint64_t>(EnvInt("JKV_BTREE_SEED", 0)) != 0
                            ? static_cast<uint64_t>(EnvInt("JKV_BTREE_SEED", 0))
                            : param_seed;
  SCOPED_TRACE(absl::StrCat("page size ", page_size, ", seed ", seed));
  // Under a sanitizer (which makes it ten times slower) 40% of the operations.
  ModelRunner(page_size, seed)
      .Run(EnvInt("JKV_BTREE_OPS", testing::ScaledForSanitizer(kDefaultOps, 40000)));
}

INSTANTIATE_TEST_SUITE_P(PageSizesAndSeeds, BtreeModelTest,
                         ::testing::Combine(::testing::Values(512u, 4096u, 65536u),
                                            ::testing::Values(uint64_t{1}, uint64_t{2}, uint64_t{3},
                                                              uint64_t{4}, uint64_t{5})),
                         [](const auto& info) {
                           return absl::StrCat("P", std::get<0>(info.param), "_Seed",
                                               std::get<1>(info.param));
                         });

}  // namespace
}  // namespace journalkv::btree
