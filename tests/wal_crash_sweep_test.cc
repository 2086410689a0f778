// The crash sweep of WAL mode: the harness of tests/crash_sweep.h and the pager workload of
// tests/pager_workload.h (spills, rollbacks of spilled transactions, one connection, a
// reopened one, or two taking turns) run in journal mode wal with a low autocheckpoint
// threshold, so that the run holds commits, checkpoints (before and after their database
// sync), log restarts and the last-close checkpoint and removal of -wal and -shm. The same runs
// in journal mode wal2 (fewer configurations) with a small wal2_switch_pages, so that its run
// also holds switches between -wal and -wal2, checkpoints of the non-current log and the
// restart and removal of both logs.
//
// Each crash point (every sync, every moment between transactions, and 150 more spread over
// the run) is crashed by power loss, by a process crash, and by a process crash followed by
// recovery (open, a read, close: the close checkpoints and removes the log), an optional probe
// transaction and a power loss. A sample of the recoveries is crashed again at every mutation
// it makes (the close-time checkpoint included), and recovering once more must agree.
// What each sync level must give:
//   - a process crash, at any level: the last acknowledged commit or the one in flight;
//   - FULL and EXTRA after a power loss: the same;
//   - NORMAL after a power loss: some whole transaction no later than the one in flight (the
//     newest commits may be lost, atomicity never);
//   - a state a recovery produced, and a probe transaction committed after it, survive a later
//     power loss at every level but OFF: the closing connection checkpointed them (syncing the
//     log first at NORMAL).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

struct WalSweepConfig {
  JournalMode mode;  // kWal or kWal2
  SyncLevel sync;
  uint32_t page_size;
  uint64_t sector_size;
  bool truer_disk;
  Connections connections;
};

std::string ConfigName(const ::testing::TestParamInfo<WalSweepConfig>& info) {
  const WalSweepConfig& c = info.param;
  return absl::StrCat(pager::JournalModeName(c.mode), "_", pager::SyncLevelName(c.sync), "_p",
                      c.page_size, "_s", c.sector_size, c.truer_disk ? "_truer" : "", "_",
                      ConnectionsName(c.connections));
}

std::string Name(const WalSweepConfig& c) {
  return ConfigName(::testing::TestParamInfo<WalSweepConfig>(c, 0));
}

// wal: every sync level with each kind of connections. wal2 (two logs, shared with wal nearly
// everything but the switch and the ordering of the logs): half as many, every sync level and
// every kind of connections once, to keep the suite's time down (the reopen runs are the
// slowest: a wal2 one at FULL, the cheapest level).
std::vector<WalSweepConfig> Configs() {
  std::vector<WalSweepConfig> out;
  for (SyncLevel sync : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
    out.push_back({JournalMode::kWal, sync, 512, 512, false, Connections::kOne});
    out.push_back({JournalMode::kWal, sync, 4096, 512, true, Connections::kReopen});
    out.push_back({JournalMode::kWal, sync, 4096, 4096, true, Connections::kTwo});
  }
  out.push_back({JournalMode::kWal, SyncLevel::kOff, 4096, 512, true, Connections::kTwo});
  out.push_back({JournalMode::kWal2, SyncLevel::kNormal, 512, 512, false, Connections::kOne});
  out.push_back({JournalMode::kWal2, SyncLevel::kNormal, 4096, 4096, true, Connections::kTwo});
  out.push_back({JournalMode::kWal2, SyncLevel::kFull, 4096, 512, true, Connections::kReopen});
  out.push_back({JournalMode::kWal2, SyncLevel::kExtra, 4096, 4096, true, Connections::kTwo});
  out.push_back({JournalMode::kWal2, SyncLevel::kOff, 4096, 512, true, Connections::kTwo});
  return out;
}

// WAL2: the writer switches logs once the current one holds this many frames (the default,
// 1000, is more than a whole run writes). Small, so that a wal2 run switches logs 30-40 times
// and its crash points fall on switches, on checkpoints of the non-current log (the policy's
// PASSIVE ones), on the restarts of both logs (the last close's TRUNCATE) and between them.
// The policy's threshold is no larger: threshold:N looks at the non-current log only, which
// may keep fewer than N frames after a switch; with N > kWal2SwitchPages such a log is never
// copied, the writer never switches again and the current log takes the rest of the run.
constexpr uint32_t kWal2SwitchPages = 16;
constexpr char kWal2Policy[] = "threshold:16";

std::map<std::string, int>* sites = nullptr;
void CountSite(const char* site) {
  if (sites != nullptr) ++(*sites)[site];
}

class WalCrashSweepTest : public ::testing::TestWithParam<WalSweepConfig> {
 protected:
  void SetUp() override {
    const WalSweepConfig& c = GetParam();
    options_.pager.journal_mode = c.mode;
    options_.pager.wal2_switch_pages = kWal2SwitchPages;
    options_.pager.sync = c.sync;
    options_.pager.page_size = c.page_size;
    options_.pager.cache_pages = 16;
    options_.pager.busy_timeout = absl::Milliseconds(10);
    options_.pager.checkpoint_policy = *checkpoint::ParseCheckpointPolicy(
        c.mode == JournalMode::kWal2 ? kWal2Policy : "threshold:40");
    options_.connections = c.connections;
    disk_.sector_size = c.sector_size;
    disk_.unsynced_entries_may_survive = c.truer_disk;
    disk_.size_without_data = c.truer_disk;
  }

  std::unique_ptr<CrashWorld> RunTo(uint64_t point) {
    return testing::RunTo(options_, disk_, point);
  }

  void PowerLoss(CrashWorld& w, uint64_t seed) {
    const uint64_t before = FilesDigest(w.base);
    ASSERT_TRUE(w.fs->SimulatePowerLoss(seed).ok());
    counts_.lost_unsynced += FilesDigest(w.base) != before;
  }

  // Recovery as a new connection does it: open, read, close. Returns the state and counts
  // every mutation it made (the close-time checkpoint included).
  Recovered Recover(CrashWorld& w, const std::vector<ModelState>& history,
                    const std::vector<int>& allowed, const ModelState* exact = nullptr) {
    const uint64_t start = w.fs->mutation_count();
    Recovered r = Verify(*w.fs, options_, history, allowed, exact);
    r.mutations = w.fs->mutation_count() - start;
    return r;
  }

  // NORMAL may lose the newest commits after a power loss: any whole transaction up to the one
  // in flight.
  std::vector<int> UpTo(const RunResult& run) {
    std::vector<int> v;
    for (int t = 0; t <= std::max(run.acknowledged, run.in_flight); ++t) v.push_back(t);
    return v;
  }

  bool Check(const Recovered& r, const std::string& context) {
    EXPECT_EQ(r.problem, "") << context;
    if (!r.problem.empty()) return false;
    ++counts_.states;
    counts_.rollbacks += r.rolled_back;
    return true;
  }

  WorkloadOptions options_;
  vfs::FaultInjectingFileSystem::DiskModel disk_;
  SweepCounts counts_;
};

TEST_P(WalCrashSweepTest, EveryCrashRecoversToAWholeTransactionAsTheSyncLevelGuarantees) {
  const WalSweepConfig& c = GetParam();
  const bool power_durable = c.sync >= SyncLevel::kFull;
  const bool power_atomic = c.sync != SyncLevel::kOff;
  std::vector<ModelState> history;
  std::vector<uint64_t> must;
  uint64_t total = 0;
  std::map<std::string, int> clean_sites;
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetDiskModel(disk_);
    sites = &clean_sites;
    vfs::SetSyncObserverForTesting(&CountSite);
    RunResult clean = RunWorkload(fs, options_, /*record=*/true);
    vfs::SetSyncObserverForTesting(nullptr);
    sites = nullptr;
    ASSERT_EQ(clean.acknowledged, options_.transactions);
    std::printf("%s: clean run: %llu checkpoints, %llu log restarts, %llu log switches, "
                "largest log %u frames\n",
                Name(c).c_str(), static_cast<unsigned long long>(clean.checkpoints),
                static_cast<unsigned long long>(clean.log_restarts),
                static_cast<unsigned long long>(clean.log_switches), clean.max_log_frames);
    if (c.mode == JournalMode::kWal2) {
      // Not vacuous: the writer went back and forth between the logs.
      EXPECT_GT(clean.log_switches, 3u) << "the workload never switched logs";
    }
    history = clean.after;
    must = fs.sync_mutation_indexes();
    must.insert(must.end(), clean.idle_points.begin(), clean.idle_points.end());
    total = fs.mutation_count();
  }
  if (c.sync != SyncLevel::kOff) {
    // Not vacuous: the run checkpoints and restarts its log.
    EXPECT_GT(clean_sites["C2 database"], 3) << "the workload never checkpointed";
    EXPECT_GT(clean_sites["W4 log header"], 3) << "the log never restarted";
  }
  const std::vector<uint64_t> points =
      SweepPoints(must, total, static_cast<size_t>(ScaledForSanitizer(150, 40)));
  std::vector<uint64_t> recovering_after_process_crash, recovering_after_power_loss;

  for (uint64_t point : points) {
    const std::string where = absl::StrCat(Name(c), ": crash after mutation ", point,
                                           " of ", total);
    if (power_atomic) {
      for (uint64_t seed : PowerLossSeeds(point)) {
        auto w = RunTo(point);
        PowerLoss(*w, seed);
        const std::string context = absl::StrCat(where, ", power loss seed ", seed);
        Recovered r = Recover(*w, history, power_durable ? Allowed(w->run) : UpTo(w->run));
        if (!Check(r, context)) return;
        ++counts_.by_kind[0];
        counts_.in_flight_landed += r.t == w->run.in_flight && r.t != 0;
        if (r.mutations > 0 && seed == point * 131) recovering_after_power_loss.push_back(point);
      }
    }
    {
      auto w = RunTo(point);
      w->fs->SimulateProcessCrash();
      Recovered r = Recover(*w, history, Allowed(w->run));
      if (!Check(r, absl::StrCat(where, ", process crash"))) return;
      ++counts_.by_kind[1];
      if (r.mutations > 0) recovering_after_process_crash.push_back(point);
    }
    if (power_atomic) {
      for (uint64_t seed : PowerLossSeeds(point)) {
        const std::string context = absl::StrCat(where, ", process crash, recovery, ",
                                                  seed % 2 ? "probe, " : "",
                                                  "power loss seed ", seed);
        auto w = RunTo(point);
        w->fs->SimulateProcessCrash();
        Recovered first = Recover(*w, history, Allowed(w->run));
        if (!Check(first, context + " (first recovery)")) return;
        ModelState expect = first.state;
        bool probed = false;
        if (seed % 2 == 1) {
          expect = Probe(*w->fs, options_, first.state, seed, &probed);
          ASSERT_TRUE(probed) << context << ": the probe transaction failed";
        }
        PowerLoss(*w, seed);
        // The closing connections checkpointed what they saw (syncing the log first at
        // NORMAL, C1; it was already durable at FULL, W1 and W6): it survives at every level.
        Recovered second = probed ? Recover(*w, history, {}, &expect)
                                  : Recover(*w, history, {first.t});
        if (!Check(second, context)) return;
        ++counts_.by_kind[2];
      }
    }
  }

  // Crashes during recovery (the close-time checkpoint and log removal included).
  const size_t cap = static_cast<size_t>(ScaledForSanitizer(12, 3));
  auto recover_twice = [&](uint64_t point, bool power_loss_first) {
    const uint64_t seed = point * 131;
    auto first_crash = [&](CrashWorld& w) {
      if (power_loss_first) {
        PowerLoss(w, seed);
      } else {
        w.fs->SimulateProcessCrash();
      }
    };
    auto clean = RunTo(point);
    first_crash(*clean);
    const std::vector<int> allowed =
        power_loss_first && !power_durable ? UpTo(clean->run) : Allowed(clean->run);
    Recovered once = Recover(*clean, history, allowed);
    if (!Check(once, absl::StrCat("point ", point, ": clean recovery"))) return false;
    for (uint64_t j = 0; j < once.mutations; ++j) {
      for (bool second_power_loss : {false, true}) {
        if (second_power_loss && !power_atomic) continue;
        const std::string context =
            absl::StrCat(Name(c), ": crash after mutation ", point, ", ",
                         power_loss_first ? "power loss" : "process crash",
                         ", recovery crashed after its mutation ", j, " of ", once.mutations,
                         " by ", second_power_loss ? "power loss" : "process crash");
        auto w = RunTo(point);
        first_crash(*w);
        w->fs->CrashAfterMutations(w->fs->mutation_count() + j);
        {
          auto pager = pager::Pager::Open(w->fs.get(), kSweepPath, options_.pager);
          if (pager.ok()) (*pager)->BeginRead().IgnoreError();
        }
        if (second_power_loss) {
          PowerLoss(*w, seed + j + 1);
        } else {
          w->fs->SimulateProcessCrash();
        }
        // The first recovery's state is durable once it is published at FULL (W6); at NORMAL a
        // power loss during recovery may still lose the unsynced tail.
        const bool same = (power_loss_first || !second_power_loss) || power_durable;
        Recovered again = Recover(*w, history,
                                  same ? std::vector<int>{once.t}
                                       : (power_durable ? allowed : UpTo(clean->run)));
        if (!Check(again, context)) return false;
        ++counts_.recovery_crashes;
      }
    }
    return true;
  };
  for (uint64_t point : Sample(recovering_after_process_crash, cap)) {
    if (!recover_twice(point, false)) return;
  }
  if (power_atomic) {
    for (uint64_t point : Sample(recovering_after_power_loss, cap)) {
      if (!recover_twice(point, true)) return;
    }
  }

  std::printf("%s: %zu crash points over %llu mutations; %s\n", Name(c).c_str(),
              points.size(), static_cast<unsigned long long>(total), counts_.Summary().c_str());
  EXPECT_GT(counts_.states, 0u);
  EXPECT_GT(counts_.rollbacks, 0u) << "no crash left frames to recover: the sweep tests nothing";
  EXPECT_GT(counts_.recovery_crashes, 0u) << "recovery was never crashed";
  if (power_atomic) {
    EXPECT_GT(counts_.lost_unsynced, 0u) << "no power loss dropped anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Wal, WalCrashSweepTest, ::testing::ValuesIn(Configs()), ConfigName);

}  // namespace
}  // namespace journalkv::testing
