// The crash sweep of transactions across two and three databases in journal mode atomic
// (pager/atomic_across.h, Y1..Y7) on FaultInjectingFileSystem, whose batches are emulated and
// whose power-loss model covers the prepared batches' side files and the super record.
//
// The workload: N databases, each holding k = "v0" (for odd seeds db0's record file and shadow
// made already by an earlier transaction); three transactions across all N, each
// setting k = "v<t>" in every database (the second also writes a few hundred keys into each,
// larger than the cache: its batches hold spilled pages). It is stopped after the m-th mutation
// (every m of the run; seeds and the crashed recoveries drawn from a per-run seed printed at
// the start: JKV_CRASH_SEED=N replays a run; base/test_scale.h's tiers say how many), then crashed by a power loss (drawn
// from a seed), a process crash, or a process crash followed by the recovery of one database
// alone and then a power loss.
// Recovery then opens the databases in one of three orders: first to last, last to first, and
// the last one alone first (read, closed) and then all. Some states crash the recovery too,
// after each of the mutations it makes, and recover again.
//
// Asserted after every crash: every database holds the same transaction (k = "v<t>" for one t
// in all), and no earlier than the last acknowledged one (the connections run at FULL), no
// later than the one in flight; a database recovered alone first holds what all agree on after.
// Each configuration prints the states it checked.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::LongTier;
using ::journalkv::testing::TierScaled;

enum class Crash { kPowerLoss, kProcessCrash, kCrashThenPowerLoss };
enum class Order { kForward, kBackward, kLastAloneFirst };

const char* CrashName(Crash c) {
  switch (c) {
    case Crash::kPowerLoss: return "power-loss";
    case Crash::kProcessCrash: return "process-crash";
    case Crash::kCrashThenPowerLoss: return "crash-then-power-loss";
  }
  return "?";
}
const char* OrderName(Order o) {
  switch (o) {
    case Order::kForward: return "first-to-last";
    case Order::kBackward: return "last-to-first";
    case Order::kLastAloneFirst: return "last-alone-first";
  }
  return "?";
}

constexpr int kTransactions = 3;

Options AtomicOptions(vfs::FileSystem* fs) {
  Options options;
  options.journal_mode = JournalMode::kAtomic;
  options.sync = SyncLevel::kFull;
  options.file_system = fs;
  options.cache_pages = 12;
  options.busy_timeout = absl::Milliseconds(1);
  return options;
}

std::vector<std::string> Paths(int n) {
  std::vector<std::string> paths;
  for (int i = 0; i < n; ++i) paths.push_back(absl::StrCat("/d/db", i));
  return paths;
}

// The databases as the sweep starts from: k = "v0" in each, durable, names synced. With
// `earlier_record`, an earlier transaction across db0 and a helper database has made db0's
// record file and db0's shadow already (their names synced), so the workload's first
// transaction creates only the other databases' shadows and no record file: the shadows'
// own folder sync (Y1) is then the only one that makes their names durable.
void Setup(vfs::FaultInjectingFileSystem& fs, const std::vector<std::string>& paths,
           bool earlier_record = false) {
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, AtomicOptions(&fs));
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Put("k", "v0").ok());
  }
  if (earlier_record) {
    absl::StatusOr<std::unique_ptr<Db>> db0 = Db::Open(paths[0], AtomicOptions(&fs));
    absl::StatusOr<std::unique_ptr<Db>> helper = Db::Open("/d/helper", AtomicOptions(&fs));
    ASSERT_TRUE(db0.ok() && helper.ok());
    absl::StatusOr<std::unique_ptr<WriteAcross>> txn =
        BeginWriteAcross({db0->get(), helper->get()});
    ASSERT_TRUE(txn.ok()) << txn.status();
    ASSERT_TRUE((*txn)->For(db0->get())->Put("setup", "1").ok());
    ASSERT_TRUE((*txn)->For(helper->get())->Put("setup", "1").ok());
    ASSERT_TRUE((*txn)->Commit().ok());
  }
  ASSERT_TRUE(fs.SyncDirectory("/d").ok());
}

// The workload; returns the last transaction acknowledged (0: none).
int RunWorkload(vfs::FaultInjectingFileSystem& fs, const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<Db>> dbs;
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, AtomicOptions(&fs));
    if (!db.ok()) return 0;
    dbs.push_back(*std::move(db));
  }
  std::vector<Db*> raw;
  for (auto& db : dbs) raw.push_back(db.get());
  int acked = 0;
  for (int t = 1; t <= kTransactions; ++t) {
    absl::StatusOr<std::unique_ptr<WriteAcross>> txn = BeginWriteAcross(raw);
    if (!txn.ok()) break;
    bool ok = true;
    for (Db* db : raw) {
      ok = ok && (*txn)->For(db)->Put("k", absl::StrCat("v", t)).ok();
      for (int i = 0; ok && t == 2 && i < 150; ++i) {
        ok = (*txn)->For(db)->Put(absl::StrCat("bulk", i), std::string(200, 'b')).ok();
      }
    }
    if (!ok || !(*txn)->Commit().ok()) break;
    acked = t;
  }
  return acked;
}

// Opens `path`, reads k (recovering the database if needed), closes. -1 when it cannot.
int ReadOne(vfs::FileSystem& fs, const std::string& path) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, AtomicOptions(&fs));
  if (!db.ok()) return -1;
  absl::StatusOr<std::optional<std::string>> v = (*db)->Get("k");
  if (!v.ok() || !v->has_value() || (*v)->size() < 2) return -1;
  return std::atoi((*v)->c_str() + 1);
}

// Recovery in `order`: the value of k in each database (-1: could not read). Databases are
// kept open until all are read, so each is recovered by its own opener in the order given.
std::vector<int> Recover(vfs::FileSystem& fs, const std::vector<std::string>& paths, Order order,
                         int* alone) {
  const int n = static_cast<int>(paths.size());
  if (order == Order::kLastAloneFirst) *alone = ReadOne(fs, paths.back());
  std::vector<int> values(n, -1);
  std::vector<std::unique_ptr<Db>> open;
  for (int j = 0; j < n; ++j) {
    const int i = order == Order::kBackward ? n - 1 - j : j;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(paths[i], AtomicOptions(&fs));
    if (!db.ok()) continue;
    absl::StatusOr<std::optional<std::string>> v = (*db)->Get("k");
    if (v.ok() && v->has_value() && (*v)->size() >= 2) values[i] = std::atoi((*v)->c_str() + 1);
    open.push_back(*std::move(db));
  }
  return values;
}

struct SweepCounts {
  int states = 0;
  int recovery_crashes = 0;
  int rolled_forward = 0;  // states where the in-flight transaction survived unacknowledged
};

// One state: crash the workload after `m` mutations, crash kind `crash` (power-loss seed
// `seed`), optionally crash the recovery after `r` mutations, recover in `order` and check.
void CheckState(int n, Crash crash, Order order, uint64_t m, uint64_t seed,
                std::optional<uint64_t> r, SweepCounts& counts) {
  SCOPED_TRACE(absl::StrCat(n, " databases, ", CrashName(crash), ", recovery ", OrderName(order),
                            ", crash after mutation ", m, ", seed ", seed,
                            r.has_value() ? absl::StrCat(", recovery crashed after ", *r) : ""));
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  const std::vector<std::string> paths = Paths(n);
  Setup(fs, paths, /*earlier_record=*/(seed & 1) != 0);
  fs.CrashAfterMutations(m);
  const int acked = RunWorkload(fs, paths);
  auto crash_now = [&](uint64_t s) {
    if (crash == Crash::kPowerLoss) {
      ASSERT_TRUE(fs.SimulatePowerLoss(s).ok());
    } else {
      fs.SimulateProcessCrash();
    }
  };
  crash_now(seed);
  if (crash == Crash::kCrashThenPowerLoss) {
    // A recovery of one database alone (every one in turn, by seed), then the power fails:
    // what that recovery rolled forward must not outlive what the others need (Y5).
    ReadOne(fs, paths[seed % n]);
    ASSERT_TRUE(fs.SimulatePowerLoss(seed).ok());
  }
  if (r.has_value()) {
    fs.CrashAfterMutations(*r);
    int ignored = 0;
    Recover(fs, paths, order, &ignored);
    if (crash == Crash::kProcessCrash) {
      fs.SimulateProcessCrash();
    } else {
      ASSERT_TRUE(fs.SimulatePowerLoss(seed + 7).ok());
    }
    ++counts.recovery_crashes;
  }
  int alone = -2;
  const std::vector<int> values = Recover(fs, paths, order, &alone);
  ++counts.states;
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(values[i], values[0]) << "database " << i << " holds transaction " << values[i]
                                    << ", database 0 holds " << values[0];
  }
  ASSERT_GE(values[0], acked) << "an acknowledged transaction was lost";
  ASSERT_LE(values[0], std::min(acked + 1, kTransactions));
  if (order == Order::kLastAloneFirst) {
    ASSERT_EQ(alone, values.back()) << "the database recovered alone first";
  }
  if (values[0] > acked) ++counts.rolled_forward;
}

uint64_t RunSeed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("JKV_CRASH_SEED");
    const uint64_t s = env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("atomic across sweep run seed %llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// The mutations of a whole run and of a clean recovery after a crash at `m`.
uint64_t WorkloadMutations(int n) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  Setup(fs, Paths(n));
  const uint64_t start = fs.mutation_count();
  EXPECT_EQ(RunWorkload(fs, Paths(n)), kTransactions);
  return fs.mutation_count() - start;
}

struct Param {
  int dbs;
  Crash crash;
  Order order;
};

class AtomicAcrossSweepTest : public ::testing::TestWithParam<Param> {};

TEST_P(AtomicAcrossSweepTest, EveryDatabaseHasTheTransactionOrNoneHas) {
  const Param p = GetParam();
  const uint64_t total = WorkloadMutations(p.dbs);
  std::mt19937_64 rng(RunSeed() ^ (p.dbs * 131 + static_cast<int>(p.crash) * 17 +
                                   static_cast<int>(p.order)));
  // Default tier: every crash point with two seeds (one under a sanitizer, every third
  // point), and the recovery crashed after each of its first mutations for a few states; the
  // long tier: five seeds and many more crashed recoveries.
  const int seeds = TierScaled(2, 1, 5);
  const int every = TierScaled(1, 3, 1);
  const int recovery_samples = TierScaled(6, 2, 60);
  SweepCounts counts;
  std::vector<uint64_t> points;
  for (uint64_t m = rng() % every; m <= total; m += every) points.push_back(m);
  for (uint64_t m : points) {
    for (int s = 0; s < seeds; ++s) {
      CheckState(p.dbs, p.crash, p.order, m, rng(), std::nullopt, counts);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  for (int i = 0; i < recovery_samples; ++i) {
    const uint64_t m = rng() % (total + 1);
    const uint64_t seed = rng();
    for (uint64_t r = 0; r < 12; ++r) {
      CheckState(p.dbs, p.crash, p.order, m, seed, r, counts);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::printf("%d databases, %s, recovery %s: %d states checked (%llu mutations per run, %d "
              "with the recovery crashed, %d rolled forward unacknowledged)%s\n",
              p.dbs, CrashName(p.crash), OrderName(p.order), counts.states,
              static_cast<unsigned long long>(total), counts.recovery_crashes,
              counts.rolled_forward, LongTier() ? " [long tier]" : "");
  EXPECT_GT(counts.states, 0);
}

std::vector<Param> AllParams() {
  std::vector<Param> params;
  for (int n : {2, 3}) {
    for (Crash c : {Crash::kPowerLoss, Crash::kProcessCrash, Crash::kCrashThenPowerLoss}) {
      for (Order o : {Order::kForward, Order::kBackward, Order::kLastAloneFirst}) {
        params.push_back({n, c, o});
      }
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Configs, AtomicAcrossSweepTest, ::testing::ValuesIn(AllParams()),
                         [](const auto& info) {
                           std::string name = absl::StrCat(info.param.dbs, "dbs_",
                                                           CrashName(info.param.crash), "_",
                                                           OrderName(info.param.order));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace journalkv
