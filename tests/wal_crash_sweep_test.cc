// The crash sweep of WAL mode: the harness of tests/crash_sweep.h and the pager workload of
// tests/pager_workload.h (spills, rollbacks of spilled transactions, one connection, a
// reopened one, or two taking turns) run in journal mode wal with a low autocheckpoint
// threshold, so that the run holds commits, checkpoints (before and after their database
// sync; the policy's, and FULL, RESTART and TRUNCATE called every ninth transaction), log
// restarts and the last-close checkpoint and removal of -wal and -shm. The same runs
// in journal mode wal2 (fewer configurations) with a small wal2_switch_pages, so that its run
// also holds switches between -wal and -wal2, checkpoints of the non-current log and the
// restart and removal of both logs.
//
// Each crash point (syncs, moments between transactions, and 60 more spread over the run; every
// mutation in the long tier; tests/crash_sweep.h draws them) is crashed by power loss, by a process crash, and by a process crash followed by
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
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"

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

std::string Name(const WalSweepConfig& c) {
  return absl::StrCat(pager::JournalModeName(c.mode), "_", pager::SyncLevelName(c.sync), "_p",
                      c.page_size, "_s", c.sector_size, c.truer_disk ? "_truer" : "", "_",
                      ConnectionsName(c.connections));
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

class WalCrashSweepTest : public ::testing::TestWithParam<WalSweepConfig> {};

TEST_P(WalCrashSweepTest, EveryCrashRecoversToAWholeTransactionAsTheSyncLevelGuarantees) {
  const WalSweepConfig& c = GetParam();
  SweepSpec spec;
  spec.name = Name(c);
  spec.options.pager.journal_mode = c.mode;
  spec.options.pager.wal2_switch_pages = kWal2SwitchPages;
  spec.options.pager.sync = c.sync;
  spec.options.pager.wal_grow_bytes = kSweepWalGrowBytes;
  spec.options.pager.page_size = c.page_size;
  spec.options.pager.cache_pages = 16;
  spec.options.pager.busy_timeout = absl::Milliseconds(10);
  spec.options.pager.checkpoint_policy = *checkpoint::ParseCheckpointPolicy(
      c.mode == JournalMode::kWal2 ? kWal2Policy : "threshold:40");
  spec.options.connections = c.connections;
  // Under a sanitizer (many times slower) a shorter run: it still spills, rolls spills back,
  // checkpoints, restarts and (wal2) switches, as check_clean_run asserts.
  spec.options.transactions = ScaledForSanitizer(200, 80);
  // Checkpoints called by the application too, FULL, RESTART and TRUNCATE in turn (WAL2: in
  // phases, the writer held only to switch logs), beside the policy's and the last close's.
  spec.options.checkpoint_every = 9;
  spec.disk.sector_size = c.sector_size;
  spec.disk.unsynced_entries_may_survive = c.truer_disk;
  spec.disk.size_without_data = c.truer_disk;
  spec.guarantees.atomic = true;
  spec.guarantees.power_loss = c.sync != SyncLevel::kOff;
  spec.guarantees.power_loss_durable = c.sync >= SyncLevel::kFull;
  spec.further_points = static_cast<size_t>(TierScaled(60, 8, 150));
  spec.recovery_crash_states = static_cast<size_t>(TierScaled(3, 1, 250));
  spec.check_clean_run = [&](const RunResult& clean, const std::map<std::string, int>& sites) {
    if (c.mode == JournalMode::kWal2) {
      // Not vacuous: the writer went back and forth between the logs.
      EXPECT_GT(clean.log_switches, 3u) << "the workload never switched logs";
    }
    if (c.sync != SyncLevel::kOff) {
      // Not vacuous: the run checkpoints and restarts its log.
      auto count = [&](const char* site) { return sites.contains(site) ? sites.at(site) : 0; };
      EXPECT_GT(count("C2 database"), 3) << "the workload never checkpointed";
      EXPECT_GT(count("W4 log header"), 3) << "the log never restarted";
    }
    EXPECT_GT(clean.explicit_checkpoints, 3) << "the workload never called a checkpoint";
    // Not vacuous: spilled transactions wrote pages over their own frames (W11), so crash
    // points fall between a rewrite and its transaction's rechain and commit.
    // (The sanitizer tier's shorter clean run rewrites about 5; the others, more than 10.)
    EXPECT_GT(clean.frames_rewritten, static_cast<uint64_t>(TierScaled(10, 2, 10)))
        << "too few transactions rewrote their own frames";
  };
  RunCrashSweep(spec);
}

INSTANTIATE_TEST_SUITE_P(Wal, WalCrashSweepTest, ::testing::ValuesIn(Configs()),
                         [](const auto& info) { return Name(info.param); });

}  // namespace
}  // namespace journalkv::testing
