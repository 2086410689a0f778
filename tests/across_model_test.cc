// Randomized model test of transactions across databases (engine/across.h) against one
// std::map per database.
//
// For the journal modes that take part (delete, persist, wal, wal2, atomic on the emulated batch
// of MemFileSystem) and two or three databases, two seeds (1 and one new each run, printed;
// JKV_MODEL_SEED=N replays it) each run 3,000 steps (500 under a sanitizer, 30,000 in the long
// tier, base/test_scale.h): transactions across a random subset of the databases, named in a
// random order, that put, delete and read in random parts and then commit or roll back;
// autocommit writes to one database between them; transactions large enough to spill; and
// reopenings of every database, with the full structure check. After every step each database
// must equal its model: a committed transaction is in every database it wrote, a rolled-back
// one in none, and each part saw its own writes and no other part's.
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using Model = std::map<std::string, std::string>;

struct Param {
  JournalMode mode;
  int databases;
};

class AcrossModelTest : public ::testing::TestWithParam<Param> {
 protected:
  Options DbOptions() {
    Options o;
    o.file_system = &fs_;
    o.journal_mode = GetParam().mode;
    o.page_size = 1024;
    o.cache_pages = 48;  // transactions of a few hundred keys spill
    return o;
  }
  void OpenAll() {
    dbs_.clear();
    for (int i = 0; i < GetParam().databases; ++i) {
      auto db = Db::Open(absl::StrCat("/db", i), DbOptions());
      ASSERT_THAT(db, IsOk());
      dbs_.push_back(*std::move(db));
    }
  }
  std::string Key() { return absl::StrCat("k", rng_() % 400); }
  std::string Value() {
    std::string v(rng_() % 5 == 0 ? 300 + rng_() % 2000 : rng_() % 30, 'a' + rng_() % 26);
    if (!v.empty()) v[0] = static_cast<char>('A' + rng_() % 26);
    return v;
  }
  void ExpectEqual(int i, const Model& want, const std::string& context) {
    auto read = dbs_[i]->BeginRead();
    ASSERT_THAT(read, IsOk());
    auto it = (*read)->NewIterator();
    auto w = want.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++w) {
      ASSERT_NE(w, want.end()) << context << ": database " << i << " has extra key " << it->key();
      ASSERT_EQ(it->key(), w->first) << context << ": database " << i;
      ASSERT_EQ(*it->value(), w->second) << context << ": database " << i << " key " << w->first;
    }
    ASSERT_THAT(it->status(), IsOk());
    ASSERT_EQ(w, want.end()) << context << ": database " << i << " lacks key " << w->first;
  }

  // One transaction across a random subset, committed or rolled back.
  void Transaction(std::vector<Model>& models, const std::string& context) {
    std::vector<int> chosen;
    for (int i = 0; i < GetParam().databases; ++i) {
      if (rng_() % 2 == 0) chosen.push_back(i);
    }
    if (chosen.empty()) chosen.push_back(static_cast<int>(rng_() % GetParam().databases));
    std::shuffle(chosen.begin(), chosen.end(), rng_);
    std::vector<Db*> dbs;
    for (int i : chosen) dbs.push_back(dbs_[i].get());
    auto txn = BeginWriteAcross(dbs);
    ASSERT_THAT(txn, IsOk()) << context;
    std::vector<Model> pending;
    for (int i : chosen) pending.push_back(models[i]);
    const int ops = rng_() % 10 == 0 ? 300 : 1 + rng_() % 12;
    for (int op = 0; op < ops; ++op) {
      const size_t part = rng_() % chosen.size();
      WriteTransaction& t = (**txn)[part];
      const std::string key = Key();
      switch (rng_() % 4) {
        case 0:
        case 1: {
          const std::string value = Value();
          ASSERT_THAT(t.Put(key, value), IsOk()) << context;
          pending[part][key] = value;
          break;
        }
        case 2: {
          auto existed = t.Delete(key);
          ASSERT_THAT(existed, IsOk()) << context;
          ASSERT_EQ(*existed, pending[part].erase(key) == 1) << context << " delete " << key;
          break;
        }
        default: {
          auto got = t.Get(key);
          ASSERT_THAT(got, IsOk()) << context;
          auto want = pending[part].find(key);
          ASSERT_EQ(got->has_value(), want != pending[part].end()) << context << " get " << key;
          if (got->has_value()) {
            ASSERT_EQ(**got, want->second) << context;
          }
        }
      }
    }
    if (rng_() % 4 == 0) {
      ASSERT_THAT((*txn)->Rollback(), IsOk()) << context;
    } else {
      ASSERT_THAT((*txn)->Commit(), IsOk()) << context;
      for (size_t p = 0; p < chosen.size(); ++p) models[chosen[p]] = std::move(pending[p]);
    }
  }

  vfs::MemFileSystem fs_;
  std::vector<std::unique_ptr<Db>> dbs_;
  std::mt19937_64 rng_;
};

TEST_P(AcrossModelTest, EveryDatabaseMatchesItsModel) {
  std::vector<uint64_t> seeds = {1};
  if (const char* env = std::getenv("JKV_MODEL_SEED"); env != nullptr) {
    uint64_t seed = 0;
    ASSERT_TRUE(absl::SimpleAtoi(env, &seed)) << "JKV_MODEL_SEED=" << env;
    seeds = {seed};
  } else {
    seeds.push_back(std::random_device()());
  }
  const int steps = testing::TierScaled(3000, 500, 30000);
  for (uint64_t seed : seeds) {
    std::printf("across model seed %llu\n", static_cast<unsigned long long>(seed));
    rng_.seed(seed);
    dbs_.clear();
    for (int i = 0; i < GetParam().databases; ++i) {  // a fresh set of databases per seed
      for (const char* suffix : {"", "-journal", "-wal", "-wal2", "-shm"}) {
        (void)fs_.Delete(absl::StrCat("/db", i, suffix));
      }
    }
    OpenAll();
    std::vector<Model> models(GetParam().databases);
    for (int step = 0; step < steps; ++step) {
      const std::string context = absl::StrCat("seed ", seed, " step ", step);
      const int kind = rng_() % 20;
      if (kind == 0) {
        OpenAll();  // every handle closed and reopened
        for (auto& db : dbs_) {
          auto check = db->Check();
          ASSERT_THAT(check, IsOk());
          ASSERT_TRUE(check->ok()) << context << ": " << check->problems.front();
        }
      } else if (kind < 4) {
        const int i = static_cast<int>(rng_() % GetParam().databases);
        const std::string key = Key(), value = Value();
        ASSERT_THAT(dbs_[i]->Put(key, value), IsOk()) << context;
        models[i][key] = value;
      } else {
        ASSERT_NO_FATAL_FAILURE(Transaction(models, context));
      }
      if (step % 25 == 0 || kind == 0) {
        for (int i = 0; i < GetParam().databases; ++i) {
          ASSERT_NO_FATAL_FAILURE(ExpectEqual(i, models[i], context));
        }
      }
    }
    for (int i = 0; i < GetParam().databases; ++i) {
      ASSERT_NO_FATAL_FAILURE(ExpectEqual(i, models[i], absl::StrCat("seed ", seed, " end")));
    }
    dbs_.clear();
  }
}

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(JournalModeName(info.param.mode), "_", info.param.databases, "dbs");
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AcrossModelTest,
    ::testing::Values(Param{JournalMode::kDelete, 2}, Param{JournalMode::kPersist, 3},
                      Param{JournalMode::kTruncate, 2}, Param{JournalMode::kWal, 3},
                      Param{JournalMode::kWal2, 2}, Param{JournalMode::kAtomic, 2},
                      Param{JournalMode::kAtomic, 3}),
    Name);

}  // namespace
}  // namespace journalkv
