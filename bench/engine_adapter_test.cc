// One correctness test for every engine adapter x mode (at sync off, to stay fast): random
// puts, deletes, gets and scans in multi-operation transactions, rollbacks, read transactions
// and a second session, checked against a std::map. Also the histogram's geometry.
#include "bench/engine_adapter.h"

#include <filesystem>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "bench/histogram.h"
#include "bench/workloads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

using ::journalkv::testing::IsOk;

struct AdapterCase {
  std::string engine;
  std::string mode;
  std::string sync;
};

std::vector<AdapterCase> AllCases() {
  std::vector<AdapterCase> cases;
  for (const EngineInfo& e : Engines()) {
    for (const ModeInfo& m : e.modes) {
      for (const std::string& sync : SyncLevels()) {
        // Each mode at sync off where it runs there; LMDB's modes at their own level.
        if (e.runs_at(m.name, sync) && (sync == "off" || !e.runs_at(m.name, "off"))) {
          cases.push_back({e.name, m.name, sync});
          break;
        }
      }
    }
  }
  return cases;
}

class EngineAdapterTest : public ::testing::TestWithParam<AdapterCase> {
 protected:
  // Where the modes that need atomic batches run (vfs/scratch_fs.h, AtomicBatchFolder: the
  // test folder if it has them, else a scratch XFS with exchange-range made once and removed
  // at exit); empty (and why_ says why) where there is none.
  static const std::string& ScratchXfs() {
    static const std::string folder = vfs::AtomicBatchFolder(::testing::TempDir(), &why_);
    return folder;
  }
  static inline std::string why_;

  void SetUp() override {
    const ModeInfo* mode = FindEngine(GetParam().engine)->FindMode(GetParam().mode);
    std::string root = ::testing::TempDir();
    if (!mode->file_systems.empty()) {
      // journalkv's atomic: on a scratch XFS with exchange-range, where root may make one.
      if (ScratchXfs().empty()) GTEST_SKIP() << "no scratch XFS for " << mode->name << ": " << why_;
      root = ScratchXfs();
    }
    dir_ = (std::filesystem::path(root) /
            absl::StrCat("adapter-", GetParam().engine, "-", GetParam().mode))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const EngineInfo* info = FindEngine(GetParam().engine);
    ASSERT_NE(info, nullptr);
    CaseConfig config;
    config.mode = GetParam().mode;
    config.sync = GetParam().sync;
    auto adapter = info->open(dir_, config);
    ASSERT_THAT(adapter, IsOk());
    adapter_ = std::move(adapter).value();
  }
  void TearDown() override {
    if (adapter_ != nullptr) {
      EXPECT_THAT(adapter_->Close(), IsOk());
    }
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Session> NewSession() {
    auto s = adapter_->NewSession();
    EXPECT_THAT(s, IsOk());
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  std::unique_ptr<EngineAdapter> adapter_;
};

// Every pair with key >= from, up to limit, per the model.
std::vector<std::pair<std::string, std::string>> ModelScan(
    const std::map<std::string, std::string>& model, const std::string& from, uint64_t limit) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = model.lower_bound(from); it != model.end() && out.size() < limit; ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> AdapterScan(Session& s, const std::string& from,
                                                             uint64_t limit) {
  std::vector<std::pair<std::string, std::string>> out;
  auto n = s.Scan(from, limit, [&](absl::string_view k, absl::string_view v) {
    out.emplace_back(std::string(k), std::string(v));
  });
  EXPECT_THAT(n, IsOk());
  if (n.ok()) {
    EXPECT_EQ(*n, out.size());
  }
  return out;
}

void ExpectMatchesModel(Session& s, const std::map<std::string, std::string>& model, uint64_t seed,
                        int keys) {
  for (int i = 0; i < keys; ++i) {
    const std::string key = BenchKey(seed, i);
    auto v = s.Get(key);
    ASSERT_THAT(v, IsOk());
    auto it = model.find(key);
    if (it == model.end()) {
      EXPECT_FALSE(v->has_value()) << key;
    } else {
      ASSERT_TRUE(v->has_value()) << key;
      EXPECT_EQ(**v, it->second) << key;
    }
  }
  EXPECT_EQ(AdapterScan(s, "", model.size() + 10), ModelScan(model, "", model.size() + 10));
}

TEST_P(EngineAdapterTest, PutsGetsScansDeletesAgreeWithAMap) {
  constexpr uint64_t kSeed = 7;
  constexpr int kKeys = 300;
  std::unique_ptr<Session> s = NewSession();
  ASSERT_NE(s, nullptr);
  std::map<std::string, std::string> model;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL, x >> 33; };
  for (int txn = 0; txn < 40; ++txn) {
    std::map<std::string, std::string> pending = model;
    ASSERT_THAT(s->BeginWrite(), IsOk());
    for (int op = 0; op < 25; ++op) {
      const std::string key = BenchKey(kSeed, next() % kKeys);
      if (next() % 4 == 0) {
        ASSERT_THAT(s->Delete(key), IsOk());
        pending.erase(key);
      } else {
        const std::string value(1 + next() % 300, static_cast<char>('a' + next() % 26));
        ASSERT_THAT(s->Put(key, value), IsOk());
        pending[key] = value;
      }
    }
    // The write transaction sees its own writes.
    const std::string from = BenchKey(kSeed, next() % kKeys);
    EXPECT_EQ(AdapterScan(*s, from, 7), ModelScan(pending, from, 7));
    // SQLite documents ROLLBACK as undefined with journal_mode=OFF; every other mode here
    // (journalkv's off included) rolls back.
    const bool can_roll_back = !(GetParam().engine == "sqlite" && GetParam().mode == "off");
    if (txn % 5 == 4 && can_roll_back) {
      ASSERT_THAT(s->Rollback(), IsOk());
    } else {
      ASSERT_THAT(s->Commit(), IsOk());
      model = pending;
    }
  }
  ExpectMatchesModel(*s, model, kSeed, kKeys);
  // A read transaction, and a second session, see the same.
  ASSERT_THAT(s->BeginRead(), IsOk());
  ExpectMatchesModel(*s, model, kSeed, kKeys);
  ASSERT_THAT(s->EndRead(), IsOk());
  std::unique_ptr<Session> other = NewSession();
  ASSERT_NE(other, nullptr);
  ExpectMatchesModel(*other, model, kSeed, kKeys);
  for (int i = 0; i < 20; ++i) {
    const std::string from = BenchKey(kSeed, next() % kKeys);
    EXPECT_EQ(AdapterScan(*other, from, 10), ModelScan(model, from, 10));
  }
}

TEST_P(EngineAdapterTest, EmptyValuesAndMissingDeletes) {
  std::unique_ptr<Session> s = NewSession();
  ASSERT_NE(s, nullptr);
  ASSERT_THAT(s->BeginWrite(), IsOk());
  ASSERT_THAT(s->Put("k", ""), IsOk());
  ASSERT_THAT(s->Delete("missing"), IsOk());
  ASSERT_THAT(s->Commit(), IsOk());
  auto v = s->Get("k");
  ASSERT_THAT(v, IsOk());
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ(**v, "");
  auto none = s->Get("missing");
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());
  EXPECT_GE(adapter_->LogBytes(), 0u);
}

// --settle=checkpoint (Session::Settle): the database at rest after a load. Engines with a log
// (journalkv and SQLite in WAL modes, ModeInfo::uses_checkpoint) leave it empty, its pairs in
// the database file; every engine keeps every pair. Fails if Settle leaves the log as it was.
TEST_P(EngineAdapterTest, SettleEmptiesTheLogAndKeepsEveryPair) {
  constexpr uint64_t kSeed = 11;
  constexpr int kKeys = 400;
  std::unique_ptr<Session> s = NewSession();
  ASSERT_NE(s, nullptr);
  std::map<std::string, std::string> model;
  for (int i = 0; i < kKeys; i += 50) {
    ASSERT_THAT(s->BeginWrite(), IsOk());
    for (int j = i; j < i + 50; ++j) {
      const std::string value(100, static_cast<char>('a' + j % 26));
      ASSERT_THAT(s->Put(BenchKey(kSeed, j), value), IsOk());
      model[BenchKey(kSeed, j)] = value;
    }
    ASSERT_THAT(s->Commit(), IsOk());
  }
  const bool has_log = FindEngine(GetParam().engine)->FindMode(GetParam().mode)->uses_checkpoint;
  if (has_log) {
    EXPECT_GT(adapter_->LogBytes(), 0u) << "the load left nothing in the log to settle";
  }
  ASSERT_THAT(s->Settle(), IsOk());
  if (has_log) {
    EXPECT_EQ(adapter_->LogBytes(), 0u);
  }
  ExpectMatchesModel(*s, model, kSeed, kKeys);
}

INSTANTIATE_TEST_SUITE_P(AllEnginesAndModes, EngineAdapterTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<AdapterCase>& info) {
                           return absl::StrCat(info.param.engine, "_", info.param.mode);
                         });

TEST(EngineAdapterRegistryTest, EveryEngineHasModes) {
  ASSERT_EQ(Engines().size(), 3u);
  for (const EngineInfo& e : Engines()) EXPECT_FALSE(e.modes.empty()) << e.name;
  EXPECT_EQ(AllCases().size(), FindEngine("journalkv")->modes.size() + 6 + 2);
}

TEST(EngineAdapterRegistryTest, JournalkvRunsWalAndWal2UnderCheckpointPolicies) {
  const EngineInfo* journalkv = FindEngine("journalkv");
  ASSERT_NE(journalkv, nullptr);
  for (const char* mode : {"wal", "wal2"}) {
    const ModeInfo* m = journalkv->FindMode(mode);
    ASSERT_NE(m, nullptr) << mode;
    EXPECT_TRUE(m->uses_checkpoint) << mode;
  }
  ASSERT_NE(journalkv->FindMode("delete"), nullptr);
  EXPECT_FALSE(journalkv->FindMode("delete")->uses_checkpoint);
  EXPECT_EQ(FindEngine("sqlite")->FindMode("wal2"), nullptr);  // journalkv's own
}

// The same commits in wal and in wal2 (no switch yet: all in -wal) leave logs of the same size
// in frames, and wal2's counts both logs (the engine's own mark is of the log its policy
// watches, which is the empty one here).
uint32_t MaxLogFramesAfterCommits(const std::string& mode, uint64_t* log_bytes) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / absl::StrCat("maxlog-", mode)).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CaseConfig config;
  config.mode = mode;
  config.sync = "off";
  config.checkpoint = "manual";
  auto adapter = FindEngine("journalkv")->open(dir, config);
  EXPECT_THAT(adapter, IsOk());
  if (!adapter.ok()) return 0;
  uint32_t frames = 0;
  {
    auto s = (*adapter)->NewSession();
    EXPECT_THAT(s, IsOk());
    if (!s.ok()) return 0;
    for (int i = 0; i < 20; ++i) {
      EXPECT_THAT((*s)->BeginWrite(), IsOk());
      EXPECT_THAT((*s)->Put(BenchKey(1, i), std::string(100, 'v')), IsOk());
      EXPECT_THAT((*s)->Commit(), IsOk());
    }
    *log_bytes = (*adapter)->LogBytes();
    frames = static_cast<uint32_t>((*adapter)->Counters()[base::Counter::kMaxLogFrames]);
  }
  EXPECT_THAT((*adapter)->Close(), IsOk());
  std::filesystem::remove_all(dir);
  return frames;
}

TEST(JournalkvAdapterTest, Wal2MaxLogFramesCountsBothLogs) {
  uint64_t wal_bytes = 0, wal2_bytes = 0;
  const uint32_t wal = MaxLogFramesAfterCommits("wal", &wal_bytes);
  const uint32_t wal2 = MaxLogFramesAfterCommits("wal2", &wal2_bytes);
  EXPECT_GE(wal, 20u);
  EXPECT_EQ(wal2, wal);
  EXPECT_GT(wal_bytes, 0u);
  EXPECT_GT(wal2_bytes, 0u);
}

// The phase arithmetic follows each row's kind: tickers are differences and sums, a mark
// (max_log_frames) and a gauge (log_frames) are values, of two connections the larger.
TEST(EngineCountersTest, SinceAndSumFollowTheTablesKinds) {
  using base::Counter;
  EngineCounters before, after;
  before[Counter::kCommits] = 10;
  after[Counter::kCommits] = 25;
  before[Counter::kFlushWait] = 1.5;
  after[Counter::kFlushWait] = 4.0;
  before[Counter::kMaxLogFrames] = 300;
  after[Counter::kMaxLogFrames] = 300;
  before[Counter::kLogFrames] = 120;
  after[Counter::kLogFrames] = 80;
  before.db_writes = 3;
  after.db_writes = 7;
  EngineCounters phase = after.Since(before);
  EXPECT_EQ(phase[Counter::kCommits], 15);
  EXPECT_DOUBLE_EQ(phase[Counter::kFlushWait], 2.5);
  EXPECT_EQ(phase[Counter::kMaxLogFrames], 300);  // a mark, not a count: not 0
  EXPECT_EQ(phase[Counter::kLogFrames], 80);      // the state at the end
  EXPECT_EQ(phase.db_writes, 4u);

  EngineCounters other;
  other[Counter::kCommits] = 5;
  other[Counter::kMaxLogFrames] = 500;
  other[Counter::kLogFrames] = 60;
  phase += other;
  EXPECT_EQ(phase[Counter::kCommits], 20);
  EXPECT_EQ(phase[Counter::kMaxLogFrames], 500);
  EXPECT_EQ(phase[Counter::kLogFrames], 80);
}

// Every row of the table reaches the adapter's counters, by id: a row added to the table
// needs nothing here.
TEST(EngineCountersTest, FromTableCopiesEveryRow) {
  base::CounterArray raw;
  for (const base::CounterInfo& row : base::kCounterTable) {
    raw[row.id] = row.unit == base::CounterUnit::kFlag ? 1 : 1000000 + static_cast<int>(row.id);
  }
  const base::CounterValues values = base::CounterValues::From(raw);
  const EngineCounters c = EngineCounters::FromTable(values, 9);
  for (const base::CounterInfo& row : base::kCounterTable) {
    EXPECT_EQ(c[row.id], values.Value(row.id)) << row.name;
    EXPECT_NE(c[row.id], 0) << row.name;
  }
  EXPECT_EQ(c.db_writes, 9u);
}

TEST(HistogramTest, BucketsCoverEveryValueInOrder) {
  for (uint64_t v :
       std::vector<uint64_t>{0, 1, 63, 64, 65, 127, 128, 1000, 123456789, UINT64_MAX}) {
    const int b = Histogram::BucketFor(v);
    EXPECT_LE(Histogram::BucketLow(b), v);
    EXPECT_GE(Histogram::BucketHigh(b), v);
  }
  for (int b = 0; b + 1 < Histogram::NumBuckets(); ++b) {
    EXPECT_EQ(Histogram::BucketHigh(b) + 1, Histogram::BucketLow(b + 1)) << b;
  }
}

TEST(HistogramTest, PercentilesAreOrderedAndClose) {
  Histogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100000u);
  EXPECT_NEAR(h.Percentile(0.5), 50000, 50000 / 64.0);
  EXPECT_NEAR(h.Percentile(0.99), 99000, 99000 / 64.0);
  EXPECT_LE(h.Percentile(0.5), h.Percentile(0.99));
  EXPECT_LE(h.Percentile(0.99), h.Percentile(0.999));
  EXPECT_LE(h.Percentile(0.999), static_cast<double>(h.max()));
  EXPECT_EQ(h.Percentile(1.0), 100000);
  Histogram other;
  other.Record(5000000);
  h.Merge(other);
  EXPECT_EQ(h.max(), 5000000u);
  EXPECT_EQ(h.count(), 100001u);
  EXPECT_EQ(Histogram().Percentile(0.5), 0);
}

TEST(HistogramTest, EncodeDecodeRoundTripsAndRefusesForeignBytes) {
  Histogram h;
  for (uint64_t v : {3u, 70u, 1500u, 999999u, 70u}) h.Record(v);
  Histogram copy;
  ASSERT_TRUE(copy.Decode(h.Encode()));
  EXPECT_EQ(copy.count(), 5u);
  EXPECT_EQ(copy.min(), 3u);
  EXPECT_EQ(copy.max(), 999999u);
  EXPECT_DOUBLE_EQ(copy.Mean(), h.Mean());
  EXPECT_EQ(copy.Percentile(0.5), h.Percentile(0.5));
  std::string bytes = h.Encode();
  EXPECT_FALSE(copy.Decode(bytes.substr(1)));  // short
  bytes[0] ^= 1;                               // count no longer matches the buckets
  EXPECT_FALSE(copy.Decode(bytes));
  EXPECT_EQ(copy.count(), 5u);  // unchanged by a refused decode
}

TEST(WorkloadKeysTest, KeysAreSixteenBytesDistinctAndSeeded) {
  std::set<std::string> seen;
  for (uint64_t i = 0; i < 1000; ++i) {
    const std::string k = BenchKey(301, i);
    EXPECT_EQ(k.size(), 16u);
    seen.insert(k);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(BenchKey(301, 5), BenchKey(301, 5));
  EXPECT_NE(BenchKey(301, 5), BenchKey(302, 5));
  EXPECT_EQ(NumberName(0), "zero");
  EXPECT_EQ(NumberName(1203), "one thousand two hundred three");
  EXPECT_EQ(NumberName(45000017), "forty five million seventeen");
}

}  // namespace
}  // namespace journalkv::bench
