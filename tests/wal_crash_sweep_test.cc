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
// WalMixedCrashSweepTest (issue 43) runs the same sweep with connections that differ: two or
// three connections taking turns, each at its own sync level (OFF, NORMAL, FULL, EXTRA mixed),
// some with no reader slot (reader_slots 0: the overflow marks), the explicit checkpoints and
// the last close given to a connection at another level than the writer of what they copy. Its
// guarantees are each transaction's, by the level of the connection that committed it: after a
// power loss a whole transaction no earlier than the last one acknowledged at FULL or EXTRA,
// whoever flushed or checkpointed it (Guarantees::power_loss_durable false, FromLastDurable).
// Five mixes run in the default tier (each about as cheap as a configuration above), five more
// in the long tier.
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "checkpoint/policy.h"
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
  // With the read map on (tests/sweep_base.h): wal at FULL with two connections and at NORMAL
  // with one, wal2 at EXTRA with two connections.
  if (SkipOnRealFiles(
          (c.mode == JournalMode::kWal && c.sync == SyncLevel::kFull &&
           c.connections == Connections::kTwo) ||
          (c.mode == JournalMode::kWal && c.sync == SyncLevel::kNormal &&
           c.connections == Connections::kOne) ||
          (c.mode == JournalMode::kWal2 && c.sync == SyncLevel::kExtra))) {
    GTEST_SKIP() << "on real files outside the long tier: a sample of the configurations";
  }
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
  spec.further_points = static_cast<size_t>(SweepScaled(60, 8, 150));
  spec.recovery_crash_states = static_cast<size_t>(SweepScaled(3, 1, 250));
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

// Connections that differ (issue 43). Every configuration above gives all connections of a run
// one sync level and one reader-slot setting; here the connections taking turns differ, and
// the explicit checkpoints (FULL, RESTART, TRUNCATE) and the last close are given to a
// connection at another level than the one that wrote what they copy. What a state may recover
// to is each transaction's own promise (Guarantees::power_loss_durable false, FromLastDurable):
// after a power loss, a whole transaction no earlier than the last one a connection at FULL or
// EXTRA acknowledged, whoever flushed or checkpointed it; after a process crash, the last
// acknowledged commit or the one in flight; never part of a transaction.
struct MixedConnection {
  SyncLevel sync;
  int reader_slots = 512;  // 0: every read pins under the overflow marks (M1..M5)
};

struct MixedConfig {
  std::string name;
  JournalMode mode;
  std::vector<MixedConnection> connections;
  std::vector<int> turns;  // which connection runs transaction t: turns[t % size] (empty: t % n)
  int checkpointer;        // the connection that runs the explicit checkpoints
  int last_closer;         // the connection whose close is the last close
  SyncLevel recovery;      // the level of the connection that recovers after the crash
  bool long_tier_only = false;
};

// The mixes. The checkpointer or the last closer is at another level than some writer in each,
// and one connection of three has no reader slot. The default tier runs the first five, the
// long tier all (each about as cheap as a configuration above: the default tier's sample of
// crash points).
std::vector<MixedConfig> MixedConfigs() {
  using C = MixedConnection;
  const SyncLevel kOff = SyncLevel::kOff, kNormal = SyncLevel::kNormal, kFull = SyncLevel::kFull,
                  kExtra = SyncLevel::kExtra;
  std::vector<MixedConfig> out = {
      // A FULL connection checkpoints (FULL, RESTART, TRUNCATE every ninth transaction, half of
      // them right after a NORMAL commit) and closes last after a NORMAL commit: C1 is owed to
      // the NORMAL connection's unsynced frames (issue 43, finding 3).
      {"wal_normal_full_checkpointed_by_full", JournalMode::kWal, {C{kNormal}, C{kFull}}, {}, 1,
       1, kFull},
      // The same in WAL2, where the FULL writer also switches away from a log whose tail the
      // NORMAL connection never synced (V6 at the switcher's level).
      {"wal2_normal_full_checkpointed_by_full", JournalMode::kWal2, {C{kNormal}, C{kFull}}, {},
       1, 1, kFull},
      // An OFF connection checkpoints, restarts and closes last over FULL commits: its shared
      // work must sync as the FULL connection's promise needs (G1, G2).
      {"wal_full_off_checkpointed_by_off", JournalMode::kWal, {C{kFull}, C{kOff}}, {}, 1, 1,
       kFull},
      // Three connections, EXTRA, NORMAL and OFF, each checkpointing after its own
      // transactions; the OFF one pins under the overflow marks; the NORMAL one closes last.
      {"wal_extra_normal_off_slots0", JournalMode::kWal,
       {C{kExtra}, C{kNormal}, C{kOff, /*reader_slots=*/0}}, {}, -1, 1, kNormal},
      // WAL2, FULL (pinning under the overflow marks) writing two transactions in three, OFF
      // the third and every checkpoint; the FULL connection closes last.
      {"wal2_full_off_checkpointed_by_off", JournalMode::kWal2, {C{kFull, 0}, C{kOff}},
       {1, 0, 0}, 1, 0, kFull},
      // The long tier: the other pairings.
      {"wal_full_normal_checkpointed_by_normal_slots0", JournalMode::kWal,
       {C{kFull}, C{kNormal, 0}}, {}, 1, 1, kNormal, true},
      {"wal_extra_normal_checkpointed_by_extra", JournalMode::kWal, {C{kNormal}, C{kExtra}},
       {0, 0, 1}, 1, 1, kExtra, true},
      {"wal_normal_off_checkpointed_by_off", JournalMode::kWal, {C{kNormal}, C{kOff}}, {}, 1, 1,
       kNormal, true},
      {"wal2_extra_normal_off_slots0", JournalMode::kWal2,
       {C{kExtra}, C{kNormal, 0}, C{kOff}}, {}, -1, 2, kFull, true},
      {"wal2_normal_extra_checkpointed_by_extra", JournalMode::kWal2, {C{kNormal}, C{kExtra}},
       {}, 1, 0, kNormal, true},
  };
  std::erase_if(out, [](const MixedConfig& c) { return c.long_tier_only && !LongSweep(); });
  return out;
}

void PrintTo(const MixedConfig& c, std::ostream* os) { *os << c.name; }

class WalMixedCrashSweepTest : public ::testing::TestWithParam<MixedConfig> {};

TEST_P(WalMixedCrashSweepTest, EveryCrashKeepsWhatEachTransactionsOwnLevelPromises) {
  const MixedConfig& c = GetParam();
  // With the read map on (tests/sweep_base.h): the first mix only.
  if (SkipOnRealFiles(c.name == std::string("wal_normal_full_checkpointed_by_full"))) {
    GTEST_SKIP() << "on real files outside the long tier: a sample of the configurations";
  }
  SweepSpec spec;
  spec.name = c.name;
  pager::PagerOptions base;
  base.journal_mode = c.mode;
  base.wal2_switch_pages = kWal2SwitchPages;
  base.wal_grow_bytes = kSweepWalGrowBytes;
  base.page_size = 4096;
  base.cache_pages = 16;
  base.busy_timeout = absl::Milliseconds(10);
  base.checkpoint_policy = *checkpoint::ParseCheckpointPolicy(
      c.mode == JournalMode::kWal2 ? kWal2Policy : "threshold:40");
  for (const MixedConnection& m : c.connections) {
    pager::PagerOptions o = base;
    o.sync = m.sync;
    o.reader_slots = m.reader_slots;
    spec.options.connection_pager.push_back(o);
  }
  spec.options.pager = base;
  spec.options.pager.sync = c.recovery;
  spec.options.connections = Connections::kTwo;
  spec.options.turns = c.turns;
  spec.options.checkpointer = c.checkpointer;
  spec.options.last_closer = c.last_closer;
  spec.options.transactions = ScaledForSanitizer(200, 80);
  spec.options.checkpoint_every = 9;
  spec.disk.sector_size = 512;
  spec.disk.unsynced_entries_may_survive = true;
  spec.disk.size_without_data = true;
  spec.guarantees.atomic = true;
  spec.guarantees.power_loss = true;
  spec.guarantees.power_loss_durable = false;  // each transaction's own level: FromLastDurable
  spec.further_points = static_cast<size_t>(SweepScaled(60, 8, 150));
  spec.recovery_crash_states = static_cast<size_t>(SweepScaled(3, 1, 250));
  bool durable_writer = false;  // some connection at FULL or EXTRA
  for (const MixedConnection& m : c.connections) durable_writer |= m.sync >= SyncLevel::kFull;
  spec.check_clean_run = [&, durable_writer](const RunResult& clean,
                                             const std::map<std::string, int>& sites) {
    if (c.mode == JournalMode::kWal2) {
      EXPECT_GT(clean.log_switches, 3u) << "the workload never switched logs";
    }
    auto count = [&](const char* site) { return sites.contains(site) ? sites.at(site) : 0; };
    // (Counted by the connections, not by their syncs: an OFF checkpointer makes none today.)
    EXPECT_GT(clean.checkpoints, 3u) << "the workload never checkpointed";
    EXPECT_GT(clean.explicit_checkpoints, 3) << "the workload never called a checkpoint";
    if (durable_writer) {
      // Not vacuous: commits were acknowledged durably, by their own flushes.
      EXPECT_GT(count("W1 log"), 3) << "no group flush synced a commit";
      EXPECT_GT(clean.acknowledged_durable, 0) << "no connection at FULL or EXTRA committed";
    }
  };
  RunCrashSweep(spec);
}

INSTANTIATE_TEST_SUITE_P(Mixed, WalMixedCrashSweepTest, ::testing::ValuesIn(MixedConfigs()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace journalkv::testing
