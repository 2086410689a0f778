// The multidb workloads and the adapters' transactions across databases (open_across,
// Session::PutIn/GetIn/CountIn): for journalkv and SQLite in every mode they run across
// (journalkv's atomic on a scratch XFS where root may make one), a transaction across the
// databases commits into all of them or, rolled back, into none; the workload runs and its
// count check passes; and the count check fails, naming the database, when an adapter loses a
// put or writes another key in its place. Also which cases jkvbench expands for multidb.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "bench/bench_config.h"
#include "bench/engine_adapter.h"
#include "bench/workloads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

// Where journalkv's atomic runs (vfs/scratch_fs.h, AtomicBatchFolder: the test folder if it has
// atomic batches, else a scratch XFS made once); empty (why: why_no_xfs) where there is none.
std::string why_no_xfs;
const std::string& ScratchXfs() {
  static const std::string folder = vfs::AtomicBatchFolder(::testing::TempDir(), &why_no_xfs);
  return folder;
}

struct AcrossCase {
  std::string engine;
  std::string mode;
};

std::vector<AcrossCase> AcrossCases() {
  std::vector<AcrossCase> cases;
  for (const EngineInfo& e : Engines()) {
    for (const std::string& mode : e.across_modes) cases.push_back({e.name, mode});
  }
  return cases;
}

class MultiDbTest : public ::testing::TestWithParam<AcrossCase> {
 protected:
  void SetUp() override {
    engine_ = FindEngine(GetParam().engine);
    ASSERT_NE(engine_, nullptr);
    const ModeInfo* mode = engine_->FindMode(GetParam().mode);
    ASSERT_NE(mode, nullptr);
    std::string root = ::testing::TempDir();
    if (!mode->file_systems.empty()) {
      if (ScratchXfs().empty()) GTEST_SKIP() << "no scratch XFS for atomic: " << why_no_xfs;
      root = ScratchXfs();
    }
    dir_ = (std::filesystem::path(root) /
            absl::StrCat("multidb-", GetParam().engine, "-", GetParam().mode))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    config_.mode = GetParam().mode;
    config_.sync = "off";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  const EngineInfo* engine_ = nullptr;
  std::string dir_;
  CaseConfig config_;
};

TEST_P(MultiDbTest, OneTransactionWritesEveryDatabaseOrNone) {
  auto adapter = engine_->open_across(dir_, config_, 3);
  ASSERT_THAT(adapter, IsOk());
  {
    auto session = (*adapter)->NewSession();
    ASSERT_THAT(session, IsOk());
    Session& s = **session;
    // Rolled back: in no database.
    ASSERT_THAT(s.BeginWrite(), IsOk());
    for (size_t i = 0; i < 3; ++i) ASSERT_THAT(s.PutIn(i, "gone", "x"), IsOk());
    EXPECT_THAT(s.PutIn(3, "k", "v"), StatusIs(absl::StatusCode::kInvalidArgument, "database 3"));
    ASSERT_THAT(s.Rollback(), IsOk());
    // Committed: in every database, each with its own value.
    ASSERT_THAT(s.BeginWrite(), IsOk());
    for (size_t i = 0; i < 3; ++i) ASSERT_THAT(s.PutIn(i, "k", absl::StrCat("v", i)), IsOk());
    auto inside = s.GetIn(1, "k");  // a transaction sees its own writes
    ASSERT_THAT(inside, IsOk());
    EXPECT_EQ(inside->value_or("none"), "v1");
    ASSERT_THAT(s.Commit(), IsOk());
    for (size_t i = 0; i < 3; ++i) {
      auto count = s.CountIn(i);
      ASSERT_THAT(count, IsOk());
      EXPECT_EQ(*count, 1u) << "database " << i;
      auto v = s.GetIn(i, "k");
      ASSERT_THAT(v, IsOk());
      EXPECT_EQ(v->value_or("none"), absl::StrCat("v", i));
      auto gone = s.GetIn(i, "gone");
      ASSERT_THAT(gone, IsOk());
      EXPECT_FALSE(gone->has_value()) << "database " << i;
    }
  }
  ASSERT_THAT((*adapter)->Close(), IsOk());
  // Each database is its own file: reopened, database 2 alone still holds its pair.
  auto reopened = engine_->open_across(dir_, config_, 3);
  ASSERT_THAT(reopened, IsOk());
  {
    auto session = (*reopened)->NewSession();
    ASSERT_THAT(session, IsOk());
    auto v = (*session)->GetIn(2, "k");
    ASSERT_THAT(v, IsOk());
    EXPECT_EQ(v->value_or("none"), "v2");
  }
  EXPECT_THAT((*reopened)->Close(), IsOk());
}

TEST_P(MultiDbTest, WorkloadCommitsAcrossAndPassesItsCountCheck) {
  WorkloadParams params;
  params.num = 6;
  params.puts_per_db = 4;
  params.value_size = 40;
  const CaseSpec spec{GetParam().engine, GetParam().mode, "off", "none", "multidb2", ""};
  auto result = RunCase(*engine_, spec, params, dir_, [](uint64_t, uint64_t) {});
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->ops, 6u);
  EXPECT_EQ(result->commits, 6u);
  EXPECT_EQ(result->databases, 2);
  EXPECT_GT(result->io.bytes_written, 6u * 2 * 4 * 40);  // every database written
  // The files outlive the case: each of the two databases holds the 24 keys.
  auto adapter = engine_->open_across(dir_, config_, 2);
  ASSERT_THAT(adapter, IsOk());
  {
    auto session = (*adapter)->NewSession();
    ASSERT_THAT(session, IsOk());
    for (size_t i = 0; i < 2; ++i) {
      auto count = (*session)->CountIn(i);
      ASSERT_THAT(count, IsOk());
      EXPECT_EQ(*count, 24u) << "database " << i;
    }
  }
  EXPECT_THAT((*adapter)->Close(), IsOk());
}

INSTANTIATE_TEST_SUITE_P(AcrossModes, MultiDbTest, ::testing::ValuesIn(AcrossCases()),
                         [](const ::testing::TestParamInfo<AcrossCase>& info) {
                           return absl::StrCat(info.param.engine, "_", info.param.mode);
                         });

// How a faulty adapter spoils one put: database 1's put number `nth` (counted from 0 over the
// run) is dropped, or made to another key.
enum class Fault { kDrop, kOtherKey };

class FaultySession final : public Session {
 public:
  FaultySession(std::unique_ptr<Session> s, Fault fault, int nth)
      : s_(std::move(s)), fault_(fault), nth_(nth) {}
  absl::Status BeginWrite() override { return s_->BeginWrite(); }
  absl::Status Put(absl::string_view k, absl::string_view v) override { return s_->Put(k, v); }
  absl::Status Delete(absl::string_view k) override { return s_->Delete(k); }
  absl::Status Commit() override { return s_->Commit(); }
  absl::Status Rollback() override { return s_->Rollback(); }
  absl::Status BeginRead() override { return s_->BeginRead(); }
  absl::Status EndRead() override { return s_->EndRead(); }
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view k) override {
    return s_->Get(k);
  }
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor v) override {
    return s_->Scan(from, limit, v);
  }
  absl::Status PutIn(size_t db, absl::string_view k, absl::string_view v) override {
    if (db == 1 && puts_in_1_++ == nth_) {
      if (fault_ == Fault::kDrop) return absl::OkStatus();
      return s_->PutIn(db, "not-the-key", v);
    }
    return s_->PutIn(db, k, v);
  }
  absl::StatusOr<std::optional<std::string>> GetIn(size_t db, absl::string_view k) override {
    return s_->GetIn(db, k);
  }
  absl::StatusOr<uint64_t> CountIn(size_t db) override { return s_->CountIn(db); }

 private:
  std::unique_ptr<Session> s_;
  const Fault fault_;
  const int nth_;
  int puts_in_1_ = 0;
};

class FaultyAdapter final : public EngineAdapter {
 public:
  FaultyAdapter(std::unique_ptr<EngineAdapter> a, Fault fault) : a_(std::move(a)), fault_(fault) {}
  absl::string_view name() const override { return a_->name(); }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, a_->NewSession());
    return std::make_unique<FaultySession>(std::move(s), fault_, /*nth=*/5);
  }
  uint64_t LogBytes() override { return a_->LogBytes(); }
  EngineCounters Counters() override { return a_->Counters(); }
  absl::Status Close() override { return a_->Close(); }

 private:
  std::unique_ptr<EngineAdapter> a_;
  const Fault fault_;
};

// `real`'s engine, but each across adapter loses a put to database 1 as `fault` says.
EngineInfo Faulty(const EngineInfo& real, Fault fault) {
  EngineInfo info = real;
  info.open_across = [real, fault](const std::string& dir, const CaseConfig& config,
                                   int databases) -> absl::StatusOr<std::unique_ptr<EngineAdapter>> {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> a,
                         real.open_across(dir, config, databases));
    return std::make_unique<FaultyAdapter>(std::move(a), fault);
  };
  return info;
}

class CountCheckTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CountCheckTest, FailsNamingTheDatabaseWhenAPutIsLost) {
  const std::string dir = (std::filesystem::path(::testing::TempDir()) /
                           absl::StrCat("countcheck-", GetParam()))
                              .string();
  WorkloadParams params;
  params.num = 4;
  params.puts_per_db = 3;
  const CaseSpec spec{GetParam(), "delete", "off", "none", "multidb4", ""};
  for (const Fault fault : {Fault::kDrop, Fault::kOtherKey}) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const EngineInfo faulty = Faulty(*FindEngine(GetParam()), fault);
    auto result = RunCase(faulty, spec, params, dir, [](uint64_t, uint64_t) {});
    if (fault == Fault::kDrop) {
      // 11 of the 12 keys reached database 1: the count says so.
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kDataLoss,
                                   "database 1 holds 11 keys, 12 were committed"));
    } else {
      // 12 keys, but the 6th (transaction 1's third) is another: the key check finds it.
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kDataLoss, "database 1 lacks key"));
      EXPECT_THAT(result.status().message(), HasSubstr("(key 5 of 12)"));
    }
  }
  // The unspoilt adapter passes the same check.
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_THAT(RunCase(*FindEngine(GetParam()), spec, params, dir, [](uint64_t, uint64_t) {}),
              IsOk());
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(JournalkvAndSqlite, CountCheckTest,
                         ::testing::Values("journalkv", "sqlite"));

TEST(MultiDbCasesTest, LmdbAndModesWithoutAJournalAreLeftOut) {
  BenchConfig config;
  config.workloads = {"multidb2", "smalltxn"};
  config.syncs = {"full"};
  std::vector<SkippedCases> skipped;
  auto cases = ExpandCases(config, &skipped);
  ASSERT_THAT(cases, IsOk());
  std::vector<std::string> multidb, smalltxn_engines;
  for (const CaseSpec& c : *cases) {
    if (c.workload == "multidb2") multidb.push_back(absl::StrCat(c.engine, ":", c.mode));
    if (c.workload == "smalltxn") smalltxn_engines.push_back(c.engine);
  }
  EXPECT_THAT(multidb, ::testing::UnorderedElementsAre(
                           "journalkv:delete", "journalkv:truncate", "journalkv:persist",
                           "journalkv:wal", "journalkv:wal2", "sqlite:delete", "sqlite:truncate",
                           "sqlite:persist", "sqlite:wal"));
  EXPECT_THAT(smalltxn_engines, ::testing::Contains("lmdb"));  // other workloads keep LMDB
  std::vector<std::string> why;
  for (const SkippedCases& s : skipped) {
    if (s.workload == "multidb2") why.push_back(absl::StrCat(s.engine, ":", s.mode, ": ", s.why));
  }
  EXPECT_THAT(why, ::testing::Contains(
                       "lmdb:default: no transaction across database files"));
  EXPECT_THAT(why, ::testing::Contains(HasSubstr("journalkv:memory: ")));
  EXPECT_THAT(why, ::testing::Contains(HasSubstr("sqlite:off: ")));
  // atomic, named, runs across (on XFS: --fs keeps its file_systems rule).
  config.modes = {"atomic"};
  config.workloads = {"multidb4"};
  config.filesystems = {"xfs", "ext4"};
  cases = ExpandCases(config, &skipped);
  ASSERT_THAT(cases, IsOk());
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ((*cases)[0].fs, "xfs");
  EXPECT_EQ(AcrossDatabases("multidb4"), 4);
  EXPECT_EQ(AcrossDatabases("smalltxn"), 0);
}

}  // namespace
}  // namespace journalkv::bench
