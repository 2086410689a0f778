// Iterator bounds (IteratorOptions) against a std::map: every bound pair, forward and backward
// scans, seeks inside and outside the range, prefixes with 0xff bytes, and a write
// transaction's bounded iterator across its own writes.
#include "engine/iterator.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using Keys = std::vector<std::string>;

Options MemOptions(vfs::FileSystem* fs) {
  Options o;
  o.file_system = fs;
  return o;
}

// What the iterator shows from SeekToFirst forward, or from SeekToLast backward.
Keys Forward(Iterator& it) {
  Keys out;
  for (it.SeekToFirst(); it.Valid(); it.Next()) out.emplace_back(it.key());
  EXPECT_THAT(it.status(), IsOk());
  return out;
}

Keys Backward(Iterator& it) {
  Keys out;
  for (it.SeekToLast(); it.Valid(); it.Prev()) out.emplace_back(it.key());
  EXPECT_THAT(it.status(), IsOk());
  return out;
}

// The model's keys in [lower, upper).
Keys Expected(const std::map<std::string, std::string>& model, const IteratorOptions& o) {
  Keys out;
  for (const auto& [k, v] : model) {
    if (o.lower_bound.has_value() && k < *o.lower_bound) continue;
    if (o.upper_bound.has_value() && k >= *o.upper_bound) continue;
    out.push_back(k);
  }
  return out;
}

TEST(IteratorBoundsTest, BoundedScansSeeExactlyTheKeysInRangeInBothDirections) {
  vfs::MemFileSystem fs;
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(11);
  const std::string alphabet("\x00\x01" "ab\x7f\xfe\xff", 7);
  auto random_key = [&] {
    std::string k;
    for (size_t n = rng() % 4; n > 0; --n) k.push_back(alphabet[rng() % alphabet.size()]);
    return k;
  };
  WriteBatch batch;
  for (int i = 0; i < 300; ++i) {
    const std::string k = random_key();
    model[k] = "v";
    batch.Put(k, "v");
  }
  ASSERT_THAT((*db)->Write(batch), IsOk());
  auto snapshot = (*db)->BeginRead();
  ASSERT_THAT(snapshot, IsOk());
  for (int round = 0; round < 400; ++round) {
    IteratorOptions o;
    if (round % 4 == 0) {
      o = IteratorOptions::Prefix(random_key());
    } else {
      if (rng() % 3 != 0) o.lower_bound = random_key();
      if (rng() % 3 != 0) o.upper_bound = random_key();
    }
    SCOPED_TRACE(::testing::PrintToString(o.lower_bound) + " .. " +
                 ::testing::PrintToString(o.upper_bound));
    auto it = (*snapshot)->NewIterator(o);
    const Keys want = Expected(model, o);
    EXPECT_EQ(Forward(*it), want);
    EXPECT_EQ(Backward(*it), Keys(want.rbegin(), want.rend()));
    // A seek lands on the first key in range at or after its target, or nowhere.
    const std::string target = random_key();
    it->Seek(target);
    auto first = std::find_if(want.begin(), want.end(), [&](const std::string& k) {
      return k >= target;
    });
    if (first == want.end()) {
      EXPECT_FALSE(it->Valid());
    } else {
      ASSERT_TRUE(it->Valid());
      EXPECT_EQ(it->key(), *first);
    }
  }
}

TEST(IteratorBoundsTest, PrefixBoundsCoverEveryKeyWithThePrefixAndNoOther) {
  EXPECT_EQ(IteratorOptions::Prefix("ab").upper_bound, std::optional<std::string>("ac"));
  EXPECT_EQ(IteratorOptions::Prefix(std::string("a\xff\xff", 3)).upper_bound,
            std::optional<std::string>("b"));
  EXPECT_EQ(IteratorOptions::Prefix(std::string("\xff", 1)).upper_bound, std::nullopt);
  EXPECT_EQ(IteratorOptions::Prefix("").upper_bound, std::nullopt);
  EXPECT_EQ(IteratorOptions::Prefix("ab").lower_bound, std::optional<std::string>("ab"));
}

TEST(IteratorBoundsTest, AWriteTransactionsBoundedIteratorFollowsItsWrites) {
  vfs::MemFileSystem fs;
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  for (const char* k : {"a", "user:1", "user:2", "v"}) ASSERT_THAT((*db)->Put(k, "x"), IsOk());
  auto txn = (*db)->BeginWrite();
  ASSERT_THAT(txn, IsOk());
  auto it = (*txn)->NewIterator(IteratorOptions::Prefix("user:"));
  EXPECT_EQ(Forward(*it), (Keys{"user:1", "user:2"}));
  ASSERT_THAT((*txn)->Put("user:0", "x"), IsOk());
  ASSERT_THAT((*txn)->Put("user;", "x"), IsOk());  // just past the prefix
  ASSERT_THAT((*txn)->Delete("user:2"), IsOk());
  EXPECT_EQ(Forward(*it), (Keys{"user:0", "user:1"}));
  EXPECT_EQ(Backward(*it), (Keys{"user:1", "user:0"}));
  it.reset();
  ASSERT_THAT((*txn)->Commit(), IsOk());
}

}  // namespace
}  // namespace journalkv
