// The bottom-up builder's writes under the crash harness (tests/crash_sweep.h): its sorted
// loads (btree/builder.h, through WriteTransaction::Put into an empty tree) and Db::Compact,
// which builds the new tree straight into its transaction over the pages of the old one (pager
// L7-L9), crashed by power loss, by a process crash, and by a process crash then recovery then
// power loss, at the crash points the driver picks (every sync, every moment between
// transactions, and more; every mutation in the long tier); and a sample of the states whose
// recovery writes anything crashed again at every mutation of that recovery. A 16-page cache
// makes every one of these transactions spill, so pages of a half-built tree reach the file
// (rollback modes) or the log (WAL) before the commit.
//
// The workload, one connection, deterministic:
//   1. a sorted load of the even keys (bottom-up; some values overflow);
//   2. the odd keys put in a shuffled order and every third key deleted: leaves split all
//      over the file and half empty, so that the compaction's new leaves overwrite pages of
//      the old tree it has not read yet (L8: read back from the original, in memory or in the
//      journal; in WAL from the start snapshot);
//   3. Compact;
//   4. a run of keys deleted (free pages) and a few put;
//   5. Compact again.
// Each recovered database must pass Check() and hold exactly the keys and page count after
// one transaction the guarantees allow (the last acknowledged, or the one in flight): the
// old content or the new, never a mix. The compactions keep the keys and lower the page count,
// which tells their before and after apart.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/compact_testing.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"

namespace journalkv::testing {
namespace {

using compact_testing::Model;
using compact_testing::Read;

constexpr int kKeys = 1200;
constexpr int kTransactions = 5;

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
// Some values overflow (their chains are written by the build and by the rebuild).
std::string Value(int i, int version) {
  return absl::StrCat("value-", i, "-", version, std::string(i % 97 == 0 ? 6000 : i % 150, 'v'));
}

// What the database holds after transaction t.
struct State {
  Model keys;
  uint32_t pages = 0;
};

Model KeysAfter(int t) {
  Model m;
  if (t < 1) return m;
  for (int i = 0; i < kKeys; i += 2) m[Key(i)] = Value(i, 1);
  if (t < 2) return m;
  for (int i = 1; i < kKeys; i += 2) m[Key(i)] = Value(i, 2);
  for (int i = 0; i < kKeys; i += 3) m.erase(Key(i));
  if (t < 4) return m;
  for (int i = 300; i < 800; ++i) m.erase(Key(i));
  for (int i = kKeys; i < kKeys + 20; ++i) m[Key(i)] = Value(i, 4);
  return m;
}

Options DbOptions(vfs::FileSystem* fs, pager::JournalMode mode) {
  Options o;
  o.file_system = fs;
  o.journal_mode = mode;
  o.sync = SyncLevel::kFull;
  o.cache_pages = 16;  // every transaction below spills
  o.wal_grow_bytes = kSweepWalGrowBytes;
  return o;
}

// One transaction of the workload; false when it failed (the crash point).
bool Step(Db& db, int t) {
  if (t == 3 || t == 5) return db.Compact().ok();
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
  if (!w.ok()) return false;
  absl::Status s;
  if (t == 1) {
    for (int i = 0; s.ok() && i < kKeys; i += 2) s = (*w)->Put(Key(i), Value(i, 1));
  } else if (t == 2) {
    std::vector<int> odd;
    for (int i = 1; i < kKeys; i += 2) odd.push_back(i);
    std::shuffle(odd.begin(), odd.end(), std::mt19937(42));
    for (int i : odd) {
      if (s.ok()) s = (*w)->Put(Key(i), Value(i, 2));
    }
    for (int i = 0; s.ok() && i < kKeys; i += 3) s = (*w)->Delete(Key(i)).status();
  } else {
    for (int i = 300; s.ok() && i < 800; ++i) s = (*w)->Delete(Key(i)).status();
    for (int i = kKeys; s.ok() && i < kKeys + 20; ++i) s = (*w)->Put(Key(i), Value(i, 4));
  }
  if (s.ok()) s = (*w)->Commit();
  return s.ok();
}

struct Workload {
  pager::JournalMode mode;
  std::vector<State> states;  // after each transaction, from the clean run
  uint64_t built_pairs = 0;   // in the clean run

  RunResult Run(vfs::FaultInjectingFileSystem& fs, bool record) {
    RunResult result;
    std::vector<State> states(1, State{Model(), 1});
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (!db.ok()) return result;
    if (record) {
      result.after.emplace_back();
      result.idle_points.push_back(fs.mutation_count());
    }
    for (int t = 1; t <= kTransactions; ++t) {
      result.in_flight = t;
      if (!Step(**db, t)) return result;
      result.in_flight = 0;
      result.acknowledged = result.acknowledged_durable = t;
      // Stats read the connection's own counters and header: no mutation, so a recorded run
      // and a crashed one make the same mutations.
      states.push_back(State{KeysAfter(t), (*db)->Stats().page_count});
      if (record) {
        result.after.emplace_back();
        result.idle_points.push_back(fs.mutation_count());
      }
    }
    if (record) {
      built_pairs = (*db)->Stats().built_pairs;
      this->states = std::move(states);
    }
    (void)(*db)->Close();  // WAL: the last close checkpoints and removes the log
    return result;
  }

  Recovered Verify(vfs::FaultInjectingFileSystem& fs, const std::vector<int>& allowed) {
    Recovered r;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (!db.ok()) {
      r.problem = absl::StrCat("open: ", db.status().ToString());
      return r;
    }
    r.rolled_back = (*db)->Stats().recoveries > 0;
    absl::StatusOr<Model> keys = Read(**db);  // Check() first
    if (!keys.ok()) {
      r.problem = absl::StrCat("check or read: ", keys.status().ToString());
      return r;
    }
    const uint32_t pages = (*db)->Stats().page_count;
    std::vector<int> candidates = allowed;
    if (candidates.empty()) {
      for (int t = 0; t <= kTransactions; ++t) candidates.push_back(t);
    }
    for (int t : candidates) {
      if (states[t].keys == *keys && states[t].pages == pages) {
        r.t = t;
        break;
      }
    }
    if (r.t < 0) {
      std::string which;
      for (int t = 0; t <= kTransactions; ++t) {
        if (states[t].keys == *keys) absl::StrAppend(&which, " (the keys of transaction ", t, ")");
      }
      std::string want;
      for (int t : candidates) absl::StrAppend(&want, want.empty() ? "" : " or ", t);
      r.problem = absl::StrCat("recovered to ", keys->size(), " keys in ", pages, " pages",
                               which, ": not the state after transaction ", want);
      return r;
    }
    const absl::Status closed = (*db)->Close();
    if (!closed.ok()) r.problem = absl::StrCat("close: ", closed.ToString());
    return r;
  }

  void Recover(vfs::FaultInjectingFileSystem& fs) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (db.ok()) (void)(*db)->BeginRead();
  }
};

class BuilderSweepTest : public ::testing::TestWithParam<pager::JournalMode> {};

TEST_P(BuilderSweepTest, LoadsAndCompactionsUnderCrashesAndCrashedRecoveries) {
  const pager::JournalMode mode = GetParam();
  auto workload = std::make_shared<Workload>();
  workload->mode = mode;
  SweepSpec spec;
  spec.name = absl::StrCat("builder_", pager::JournalModeName(mode));
  spec.options.pager.journal_mode = mode;
  spec.options.transactions = kTransactions;
  spec.guarantees.atomic = true;
  spec.guarantees.power_loss = true;
  spec.guarantees.power_loss_durable = true;
  spec.further_points = static_cast<size_t>(TierScaled(100, 15, 400));
  spec.recovery_crash_states = static_cast<size_t>(TierScaled(6, 2, 250));
  spec.workload = SweepWorkload{
      [workload](vfs::FaultInjectingFileSystem& fs, bool record) {
        return workload->Run(fs, record);
      },
      [workload](vfs::FaultInjectingFileSystem& fs, const std::vector<int>& allowed) {
        return workload->Verify(fs, allowed);
      },
      [workload](vfs::FaultInjectingFileSystem& fs) { workload->Recover(fs); }};
  spec.check_clean_run = [workload](const RunResult&, const std::map<std::string, int>&) {
    const std::vector<State>& s = workload->states;
    ASSERT_EQ(s.size(), static_cast<size_t>(kTransactions + 1));
    // The load was built bottom-up, and both compactions gave pages back.
    EXPECT_GE(workload->built_pairs, static_cast<uint64_t>(kKeys / 2));
    EXPECT_LT(s[3].pages, s[2].pages) << "the first compaction gave nothing back";
    EXPECT_LT(s[5].pages, s[4].pages) << "the second compaction gave nothing back";
    std::printf("%s: pages after each transaction:", pager::JournalModeName(workload->mode).data());
    for (const State& state : s) std::printf(" %u", state.pages);
    std::printf("\n");
  };
  RunCrashSweep(spec);
}

INSTANTIATE_TEST_SUITE_P(Modes, BuilderSweepTest,
                         ::testing::Values(pager::JournalMode::kDelete,
                                           pager::JournalMode::kPersist,
                                           pager::JournalMode::kWal,
                                           pager::JournalMode::kWal2),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv::testing
