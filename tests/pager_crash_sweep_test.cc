// The crash sweep of the pager's rollback journal (tests/crash_sweep.h describes the harness,
// tests/pager_workload.h the workload and its model).
//
// For every configuration (journal mode, sync level, page and sector size, connections) a clean
// run gives the model history, the mutation index of every sync and of every moment between
// transactions. Then the workload is cut at each crash point (every one of those indexes plus
// 300 more spread over the run) and crashed by power loss, by a process crash, and by a process
// crash followed by recovery, a probe transaction and a power loss; a sample of the states whose
// recovery writes anything is crashed again at every mutation of the recovery. Each recovered
// database must pass the page check and equal the model after one transaction:
//   - crash-atomic and durable configurations (DELETE, TRUNCATE, PERSIST at sync NORMAL and
//     up, and against a process crash at every sync level): the last acknowledged commit or
//     the one in flight, nothing else;
//   - MEMORY and OFF, which are not crash-atomic: exactly the last acknowledged commit when the
//     crash falls between transactions (durability), at NORMAL and up for power loss;
//   - EXTRA also ends every journal durably: after a power loss between transactions no valid
//     journal is left;
//   - a state that recovery produced survives a later power loss (with or without a probe
//     transaction committed after it), and recovering twice gives the state of recovering once.
// The truer disks tear 4 KiB pages over 512-byte sectors, or use 4 KiB sectors, let unsynced
// creates and deletes survive (a prefix of them), and keep an append's size without its data.
#include <algorithm>
#include <cstdio>
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

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

struct SweepConfig {
  JournalMode mode;
  SyncLevel sync;
  uint32_t page_size;
  uint64_t sector_size;
  bool truer_disk;  // unsynced entries may survive; an append may keep its size only
  Connections connections;
};

std::string ConfigName(const ::testing::TestParamInfo<SweepConfig>& info) {
  const SweepConfig& c = info.param;
  return absl::StrCat(pager::JournalModeName(c.mode), "_", pager::SyncLevelName(c.sync), "_p",
                      c.page_size, "_s", c.sector_size, c.truer_disk ? "_truer" : "", "_",
                      ConnectionsName(c.connections));
}

std::string Name(const SweepConfig& c) {
  return ConfigName(::testing::TestParamInfo<SweepConfig>(c, 0));
}

std::vector<SweepConfig> Configs() {
  std::vector<SweepConfig> out;
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist}) {
    for (SyncLevel sync : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
      out.push_back({mode, sync, 512, 512, false, Connections::kOne});
      out.push_back({mode, sync, 4096, 512, true, Connections::kReopen});
      out.push_back({mode, sync, 4096, 4096, true, Connections::kTwo});
    }
    out.push_back({mode, SyncLevel::kOff, 4096, 512, true, Connections::kTwo});
  }
  for (JournalMode mode : {JournalMode::kMemory, JournalMode::kOff}) {
    for (SyncLevel sync : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull}) {
      out.push_back({mode, sync, 4096, 512, true, Connections::kReopen});
    }
  }
  return out;
}

class CrashSweepTest : public ::testing::TestWithParam<SweepConfig> {
 protected:
  void SetUp() override {
    const SweepConfig& c = GetParam();
    options_.pager.journal_mode = c.mode;
    options_.pager.sync = c.sync;
    options_.pager.page_size = c.page_size;
    options_.pager.cache_pages = 16;
    options_.pager.busy_timeout = absl::Milliseconds(10);
    options_.connections = c.connections;
    disk_.sector_size = c.sector_size;
    disk_.unsynced_entries_may_survive = c.truer_disk;
    disk_.size_without_data = c.truer_disk;
  }

  std::unique_ptr<CrashWorld> RunTo(uint64_t point) {
    return testing::RunTo(options_, disk_, point);
  }

  // Power loss of the world; counts whether it dropped unsynced data.
  void PowerLoss(CrashWorld& w, uint64_t seed) {
    const uint64_t before = FilesDigest(w.base);
    ASSERT_TRUE(w.fs->SimulatePowerLoss(seed).ok());
    counts_.lost_unsynced += FilesDigest(w.base) != before;
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

TEST_P(CrashSweepTest, EveryCrashRecoversToAWholeTransactionAsTheModeGuarantees) {
  const SweepConfig& c = GetParam();
  const bool atomic = FileJournal(c.mode);
  const bool power_durable = c.sync != SyncLevel::kOff;
  std::vector<ModelState> history;
  std::vector<uint64_t> must;  // after every sync and between transactions
  std::set<uint64_t> idle;
  uint64_t total = 0;
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetDiskModel(disk_);
    RunResult clean = RunWorkload(fs, options_, /*record=*/true);
    ASSERT_EQ(clean.acknowledged, options_.transactions);
    history = clean.after;
    must = fs.sync_mutation_indexes();
    must.insert(must.end(), clean.idle_points.begin(), clean.idle_points.end());
    idle.insert(clean.idle_points.begin(), clean.idle_points.end());
    total = fs.mutation_count();
  }
  const std::vector<uint64_t> points =
      SweepPoints(must, total, static_cast<size_t>(ScaledForSanitizer(300, 60)));
  // States whose recovery wrote something: (point, power-loss seed or none for a process crash).
  std::vector<uint64_t> recovering_after_process_crash, recovering_after_power_loss;

  for (uint64_t point : points) {
    // Without crash atomicity, only a crash between transactions has a defined outcome, and
    // one while the database is created (I9: creation is atomic in every mode).
    if (!atomic && !idle.contains(point) && point > *idle.begin()) continue;
    const std::string where = absl::StrCat(Name(c), ": crash after mutation ", point,
                                           " of ", total);
    if (power_durable) {
      for (uint64_t seed : PowerLossSeeds(point)) {
        auto w = RunTo(point);
        PowerLoss(*w, seed);
        const std::string context = absl::StrCat(where, ", power loss seed ", seed);
        if (c.sync == SyncLevel::kExtra && idle.contains(point)) {
          EXPECT_FALSE(HotJournalPresent(*w->fs)) << context << ": EXTRA left a journal";
        }
        Recovered r = Verify(*w->fs, options_, history, Allowed(w->run));
        if (!Check(r, context)) return;
        ++counts_.by_kind[0];
        counts_.in_flight_landed += r.t == w->run.in_flight && r.t != 0;
        if (r.mutations > 0 && seed == point * 131) recovering_after_power_loss.push_back(point);
      }
    }
    {
      auto w = RunTo(point);
      w->fs->SimulateProcessCrash();
      Recovered r = Verify(*w->fs, options_, history, Allowed(w->run));
      if (!Check(r, absl::StrCat(where, ", process crash"))) return;
      ++counts_.by_kind[1];
      if (r.mutations > 0) recovering_after_process_crash.push_back(point);
    }
    if (power_durable) {
      for (uint64_t seed : PowerLossSeeds(point)) {
        const std::string context = absl::StrCat(where, ", process crash, recovery, ",
                                                  seed % 2 ? "probe, " : "",
                                                  "power loss seed ", seed);
        auto w = RunTo(point);
        w->fs->SimulateProcessCrash();
        Recovered first = Verify(*w->fs, options_, history, Allowed(w->run));
        if (!Check(first, context + " (first recovery)")) return;
        ModelState expect = first.state;
        bool probed = false;
        if (seed % 2 == 1) {
          expect = Probe(*w->fs, options_, first.state, seed, &probed);
          ASSERT_TRUE(probed) << context << ": the probe transaction failed";
        }
        PowerLoss(*w, seed);
        Recovered second = probed ? Verify(*w->fs, options_, history, {}, &expect)
                                  : Verify(*w->fs, options_, history, {first.t});
        if (!Check(second, context)) return;
        ++counts_.by_kind[2];
      }
    }
  }

  // Crashes during recovery: crash the recovering connection after each mutation it makes,
  // recover again, and compare with the clean recovery.
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
    const std::vector<int> allowed = Allowed(clean->run);
    Recovered once = Verify(*clean->fs, options_, history, allowed);
    if (!Check(once, absl::StrCat("point ", point, ": clean recovery"))) return false;
    for (uint64_t j = 0; j < once.mutations; ++j) {
      for (bool second_power_loss : {false, true}) {
        if (second_power_loss && !power_durable) continue;
        const std::string context =
            absl::StrCat(Name(c), ": crash after mutation ", point, ", ",
                         power_loss_first ? "power loss" : "process crash",
                         ", recovery crashed after its mutation ", j, " of ", once.mutations,
                         " by ", second_power_loss ? "power loss" : "process crash");
        auto w = RunTo(point);
        first_crash(*w);
        w->fs->CrashAfterMutations(j);
        {
          auto pager = pager::Pager::Open(w->fs.get(), kSweepPath, options_.pager);
          if (pager.ok()) (*pager)->BeginRead().IgnoreError();  // the crash point stops it
        }
        if (second_power_loss) {
          PowerLoss(*w, seed + j + 1);
        } else {
          w->fs->SimulateProcessCrash();
        }
        // After a power loss first, the state on disk is fixed: recovery must reach the same
        // transaction however often it is interrupted. After a process crash first, a power
        // loss during recovery may still drop the crashed writer's unsynced pages.
        const bool same = power_loss_first || !second_power_loss;
        Recovered again =
            Verify(*w->fs, options_, history, same ? std::vector<int>{once.t} : allowed);
        if (!Check(again, context)) return false;
        ++counts_.recovery_crashes;
      }
    }
    return true;
  };
  if (atomic) {
    for (uint64_t point : Sample(recovering_after_process_crash, cap)) {
      if (!recover_twice(point, false)) return;
    }
    if (power_durable) {
      for (uint64_t point : Sample(recovering_after_power_loss, cap)) {
        if (!recover_twice(point, true)) return;
      }
    }
  }

  std::printf("%s: %zu crash points over %llu mutations; %s\n", Name(c).c_str(),
              points.size(), static_cast<unsigned long long>(total), counts_.Summary().c_str());
  // Not vacuous: states were verified, and where the mode can roll back, some did.
  EXPECT_GT(counts_.states, 0u);
  if (atomic) {
    EXPECT_GT(counts_.rollbacks, 0u) << "no crash left a hot journal: the sweep tests nothing";
    EXPECT_GT(counts_.recovery_crashes, 0u) << "recovery was never crashed";
  }
  // (MEMORY and OFF are crashed only between transactions, when nothing is left unsynced.)
  if (atomic && power_durable) {
    EXPECT_GT(counts_.lost_unsynced, 0u) << "no power loss dropped anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Rollback, CrashSweepTest, ::testing::ValuesIn(Configs()), ConfigName);

}  // namespace
}  // namespace journalkv::testing
