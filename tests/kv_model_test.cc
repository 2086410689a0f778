// Randomized model test of the whole key-value engine against std::map.
//
// For every journal mode and page sizes 512, 4096 and 65536, three seeds (1, 2 and one new each
// run, printed; JKV_MODEL_SEED=N replays it) each run 40,000 operations (5,000 under a
// sanitizer, 200,000 in the long tier, base/test_scale.h): puts of new keys, overwrites, deletes, point reads, forward and backward
// scans from random keys, inside write transactions that commit or roll back, autocommit
// operations, and reopenings of the database, with the full structure check after every
// reopening. The seed is printed on failure.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "btree/btree_format.h"
#include "engine/db.h"
#include "pager/db_format.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using Model = std::map<std::string, std::string>;

struct ModelParam {
  JournalMode mode;
  uint32_t page_size;
};

class KvModelTest : public ::testing::TestWithParam<ModelParam> {
 protected:
  std::string RandomKey() {
    const int kind = rng_() % 20;
    if (kind == 0) return "";
    // Long keys: up to the page size's limit.
    const size_t max_key = btree::MaxKeySize(pager::UsableSize(GetParam().page_size));
    const size_t len = kind == 1 ? max_key - rng_() % 64 : 1 + rng_() % 12;
    std::string k(len, '\0');
    for (char& c : k) c = static_cast<char>(kind == 2 ? rng_() % 256 : 'a' + rng_() % 6);
    return k;
  }
  std::string RandomValue() {
    const int kind = rng_() % 50;
    size_t len = rng_() % 40;
    if (kind == 0) len = rng_() % (3 * GetParam().page_size);  // overflow chains
    if (kind == 1) len = 0;
    // Distinct contents without a random draw per byte (large values would be slow).
    std::string v(len, '\0');
    const uint64_t seed = rng_();
    for (size_t i = 0; i < len; ++i) v[i] = static_cast<char>((seed >> (i % 56)) + i * 131);
    return v;
  }
  // A key present in the model with probability about `existing_percent`, else a random one.
  std::string AnyKey(const Model& m, int existing_percent) {
    if (m.empty() || static_cast<int>(rng_() % 100) >= existing_percent) return RandomKey();
    auto it = m.lower_bound(RandomKey());
    if (it == m.end()) it = m.begin();
    return it->first;
  }

  std::mt19937_64 rng_;
};

// Compares up to `limit` keys from `from` (forward, or backward from the last key <= from).
void CompareScan(Iterator& it, const Model& m, const std::string& from, bool forward, int limit,
                 const std::string& context) {
  if (forward) {
    it.Seek(from);
    auto want = m.lower_bound(from);
    for (int i = 0; i < limit && want != m.end(); ++i, ++want) {
      ASSERT_TRUE(it.Valid()) << context << " forward scan ended early at " << want->first.size();
      ASSERT_EQ(it.key(), want->first) << context;
      auto v = it.value();
      ASSERT_TRUE(v.ok()) << context << v.status();
      ASSERT_EQ(*v, want->second) << context;
      auto view = it.value_view();
      ASSERT_TRUE(view.ok()) << context << view.status();
      ASSERT_EQ(*view, want->second) << context;
      it.Next();
    }
    if (want == m.end()) {
      ASSERT_FALSE(it.Valid()) << context;
    }
  } else {
    it.Seek(from);
    if (it.Valid()) {
      if (it.key() != from) it.Prev();
    } else {
      it.SeekToLast();
    }
    auto want = m.upper_bound(from);
    for (int i = 0; i < limit && want != m.begin(); ++i) {
      --want;
      ASSERT_TRUE(it.Valid()) << context << " backward scan ended early";
      ASSERT_EQ(it.key(), want->first) << context;
      auto view = it.value_view();
      ASSERT_TRUE(view.ok()) << context << view.status();
      ASSERT_EQ(*view, want->second) << context;
      it.Prev();
    }
    if (want == m.begin()) {
      ASSERT_FALSE(it.Valid()) << context;
    }
  }
  ASSERT_TRUE(it.status().ok()) << context << it.status();
}

// The third seed: JKV_MODEL_SEED, else new each run. Printed once.
uint64_t RunModelSeed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    const char* env = std::getenv("JKV_MODEL_SEED");
    if (env == nullptr || !absl::SimpleAtoi(env, &s)) s = std::random_device{}();
    std::printf("model seeds 1, 2 and %llu (replay: --test_env=JKV_MODEL_SEED=%llu)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

TEST_P(KvModelTest, RandomOperationsAgreeWithStdMap) {
  const ModelParam param = GetParam();
  for (uint64_t seed : {uint64_t{1}, uint64_t{2}, RunModelSeed()}) {
    rng_.seed(seed * 1000003 + param.page_size + static_cast<int>(param.mode));
    const std::string context =
        absl::StrCat("seed ", seed, " mode ", JournalModeName(param.mode), " page ",
                     param.page_size);
    vfs::MemFileSystem fs;
    Options options;
    options.file_system = &fs;
    options.journal_mode = param.mode;
    options.page_size = param.page_size;
    options.cache_pages = 64;  // small, so large transactions spill
    auto db_or = Db::Open("/model.db", options);
    ASSERT_THAT(db_or, journalkv::testing::IsOk()) << context;
    std::unique_ptr<Db> db = std::move(db_or).value();
    Model model;
    int ops = 0, commits = 0, rollbacks = 0, reopens = 0;
    const int kOps = journalkv::testing::TierScaled(40000, 5000, 200000);
    while (ops < kOps) {
      const int what = rng_() % 100;
      if (what < 2) {  // reopen and check
        ASSERT_THAT(db->Close(), journalkv::testing::IsOk());
        db.reset();
        auto reopened = Db::Open("/model.db", options);
        ASSERT_THAT(reopened, journalkv::testing::IsOk()) << context;
        db = std::move(reopened).value();
        auto check = db->Check();
        ASSERT_THAT(check, journalkv::testing::IsOk()) << context;
        ASSERT_TRUE(check->ok()) << context << ": " << check->problems[0];
        ASSERT_EQ(check->keys, model.size()) << context;
        ++reopens;
        ++ops;
        continue;
      }
      if (what < 10) {  // autocommit
        const bool put = rng_() % 2;
        const std::string k = AnyKey(model, put ? 40 : 90);
        if (put) {
          const std::string v = RandomValue();
          ASSERT_THAT(db->Put(k, v), journalkv::testing::IsOk()) << context;
          model[k] = v;
        } else {
          auto existed = db->Delete(k);
          ASSERT_THAT(existed, journalkv::testing::IsOk()) << context;
          ASSERT_EQ(*existed, model.erase(k) > 0) << context;
        }
        ++ops;
        continue;
      }
      auto txn_or = db->BeginWrite();
      ASSERT_THAT(txn_or, journalkv::testing::IsOk()) << context;
      WriteTransaction& txn = **txn_or;
      // The model is changed in place; `undo` restores it when the transaction rolls back.
      Model& staged = model;
      std::vector<std::pair<std::string, std::optional<std::string>>> undo;
      auto remember = [&](const std::string& k) {
        auto it = staged.find(k);
        undo.emplace_back(k, it == staged.end() ? std::nullopt
                                                : std::optional<std::string>(it->second));
      };
      const int n = (rng_() % 10 == 0) ? 200 + rng_() % 300 : 1 + rng_() % 20;
      for (int i = 0; i < n; ++i, ++ops) {
        const int op = rng_() % 100;
        const std::string k = AnyKey(staged, op < 50 ? 40 : 85);
        if (op < 50) {
          const std::string v = RandomValue();
          ASSERT_THAT(txn.Put(k, v), journalkv::testing::IsOk()) << context;
          remember(k);
          staged[k] = v;
        } else if (op < 65) {  // deletes: fewer than puts, so the tree grows
          auto existed = txn.Delete(k);
          ASSERT_THAT(existed, journalkv::testing::IsOk()) << context;
          remember(k);
          ASSERT_EQ(*existed, staged.erase(k) > 0) << context;
        } else if (op < 90) {
          auto v = txn.Get(k);
          ASSERT_THAT(v, journalkv::testing::IsOk()) << context;
          auto want = staged.find(k);
          ASSERT_EQ(v->has_value(), want != staged.end()) << context;
          if (want != staged.end()) {
            ASSERT_EQ(**v, want->second) << context;
          }
        } else {
          auto it = txn.NewIterator();
          CompareScan(*it, staged, RandomKey(), op < 95, 1 + rng_() % 30, context);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
      if (rng_() % 10 == 0) {
        ASSERT_THAT(txn.Rollback(), journalkv::testing::IsOk()) << context;
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
          if (it->second.has_value()) {
            model[it->first] = *it->second;
          } else {
            model.erase(it->first);
          }
        }
        ++rollbacks;
      } else {
        ASSERT_THAT(txn.Commit(), journalkv::testing::IsOk()) << context;
        ++commits;
      }
    }
    // A final full comparison in both directions.
    auto read = db->BeginRead();
    ASSERT_THAT(read, journalkv::testing::IsOk());
    auto it = (*read)->NewIterator();
    CompareScan(*it, model, "", true, static_cast<int>(model.size()) + 1, context);
    if (HasFatalFailure()) return;
    if (!model.empty()) {
      CompareScan(*it, model, model.rbegin()->first, false, static_cast<int>(model.size()) + 1,
                  context);
    }
    std::printf("%s: %d ops, %d commits, %d rollbacks, %d reopens, %zu keys at the end\n",
                context.c_str(), ops, commits, rollbacks, reopens, model.size());
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndPageSizes, KvModelTest,
    ::testing::Values(ModelParam{JournalMode::kDelete, 512}, ModelParam{JournalMode::kDelete, 4096},
                      ModelParam{JournalMode::kDelete, 65536},
                      ModelParam{JournalMode::kTruncate, 512},
                      ModelParam{JournalMode::kTruncate, 4096},
                      ModelParam{JournalMode::kTruncate, 65536},
                      ModelParam{JournalMode::kPersist, 512},
                      ModelParam{JournalMode::kPersist, 4096},
                      ModelParam{JournalMode::kPersist, 65536},
                      ModelParam{JournalMode::kMemory, 512}, ModelParam{JournalMode::kMemory, 4096},
                      ModelParam{JournalMode::kMemory, 65536}, ModelParam{JournalMode::kOff, 512},
                      ModelParam{JournalMode::kOff, 4096}, ModelParam{JournalMode::kOff, 65536},
                      ModelParam{JournalMode::kWal, 512}, ModelParam{JournalMode::kWal, 4096},
                      ModelParam{JournalMode::kWal, 65536}, ModelParam{JournalMode::kWal2, 512},
                      ModelParam{JournalMode::kWal2, 4096}, ModelParam{JournalMode::kWal2, 65536},
                      ModelParam{JournalMode::kAtomic, 512}, ModelParam{JournalMode::kAtomic, 4096},
                      ModelParam{JournalMode::kAtomic, 65536}),
    [](const auto& info) {
      return absl::StrCat(JournalModeName(info.param.mode), "_", info.param.page_size);
    });

}  // namespace
}  // namespace journalkv
