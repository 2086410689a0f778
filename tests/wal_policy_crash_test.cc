// The crash harness over WAL and WAL2 under each built-in checkpoint policy, at NORMAL and
// FULL: the pager workload of tests/pager_workload.h (spills, rolled-back spills, one
// connection, a reopened one, or two taking turns) runs with threshold:N, async:N/B (a
// background checkpointer per connection, writers blocked at B frames) or manual, and is
// crashed at points spread over the run by power loss, by a process crash, and by a process
// crash followed by recovery and a power loss. In wal2 the writer switches logs every 16
// frames (kWal2SwitchPages), so the policies act on both logs.
//
// The asynchronous policies make a run nondeterministic: the background checkpointer's
// writes interleave with the writer's at a different place each time. So every crash state is
// judged against its own run (its last acknowledged commit and the one in flight), the crash
// points are mutation counts rather than named operations, and the sweep counts, to show it
// is not vacuous, the states crashed while a background checkpoint was copying (between its
// "copy" and "synced" points) and while a writer was blocked by the policy. Recovery itself
// (open, read, close) commits nothing, so the policy never runs in it: crashes during
// recovery are swept by wal_crash_sweep_test. The loop is tests/crash_sweep.h's driver, with
// its nondeterministic mode: 25 crash points a configuration in the default tier, each at a
// random place in its stretch of the run, 400 in the long tier.
// The "mixed" configurations (issue 43) run two connections that differ in level, policy and
// reader slots, so that one connection's background checkpointer (or checkpoints at OFF)
// copies what the other committed; judged by each transaction's own level (FromLastDurable),
// 160 crash points each in the default tier; where a FULL connection's background checkpointer
// copies a NORMAL connection's commits, its copies are slowed a little per page so that the
// other connection commits while one runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/test_scale.h"
#include "checkpoint/policy.h"
#include "gtest/gtest.h"
#include "wal/checkpoint_copy.h"
#include "pager/pager.h"
#include "wal/wal_connection.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

// A connection of a mix (issue 43): its own level, policy and reader slots.
struct MixedPolicyConnection {
  SyncLevel sync;
  const char* policy;
  int reader_slots = 512;  // 0: its reads pin under the overflow marks
};

struct PolicyConfig {
  JournalMode mode;  // kWal or kWal2
  const char* policy;
  SyncLevel sync;  // every connection's; with `mixed`, the recovering connection's
  Connections connections;
  // Non-empty: two connections taking turns that differ (Connections::kTwo), each with its own
  // level and policy, so that one's background checkpointer copies the other's commits: the
  // first connection runs two transactions in three, the second one the third.
  std::vector<MixedPolicyConnection> mixed = {};
  // Mixes: the background checkpointers' copies slowed (see CheckpointEvent).
  bool slow_background_copies = false;
};

std::string PolicyName(const char* p) {
  std::string policy = p;
  std::replace(policy.begin(), policy.end(), ':', '_');
  std::replace(policy.begin(), policy.end(), '/', '_');
  return policy;
}

std::string ConfigName(const ::testing::TestParamInfo<PolicyConfig>& info) {
  const PolicyConfig& c = info.param;
  if (!c.mixed.empty()) {
    std::string name = absl::StrCat(pager::JournalModeName(c.mode), "_mixed");
    for (const MixedPolicyConnection& m : c.mixed) {
      absl::StrAppend(&name, "_", pager::SyncLevelName(m.sync), "_", PolicyName(m.policy),
                      m.reader_slots == 0 ? "_slots0" : "");
    }
    return name;
  }
  return absl::StrCat(pager::JournalModeName(c.mode), "_", PolicyName(c.policy), "_",
                      pager::SyncLevelName(c.sync), "_", ConnectionsName(c.connections));
}

void PrintTo(const PolicyConfig& c, std::ostream* os) { *os << ConfigName({c, 0}); }

// Under ThreadSanitizer (the CI stage of the concurrency tests) only the asynchronous policies,
// whose background checkpointers are what runs beside the writer.
std::vector<PolicyConfig> Configs() {
  const bool tsan = UnderThreadSanitizer();
  std::vector<PolicyConfig> out;
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2}) {
    for (SyncLevel sync : {SyncLevel::kNormal, SyncLevel::kFull}) {
      if (!tsan) out.push_back({mode, "threshold:8", sync, Connections::kReopen});
      out.push_back({mode, "async:0/16", sync, Connections::kOne});
      out.push_back({mode, "async:4/24", sync, Connections::kTwo});
      if (!tsan) out.push_back({mode, "manual", sync, Connections::kReopen});
    }
  }
  // Connections that differ (issue 43): a FULL connection's background checkpointer copies
  // what a NORMAL connection (policy manual: it copies nothing itself) committed without a
  // sync (C1 is owed to those frames, finding 3);
  // an OFF connection's checkpoints copy and restart over a FULL connection's commits, whose
  // background checkpointer runs too (G1, G2); and, as the pairing that needs nothing new, a
  // NORMAL connection's background checkpointer beside an EXTRA writer.
  using M = MixedPolicyConnection;
  out.push_back({JournalMode::kWal, "", SyncLevel::kFull, Connections::kTwo,
                 {M{SyncLevel::kNormal, "manual"}, M{SyncLevel::kFull, "async:0/48"}}, true});
  out.push_back({JournalMode::kWal2, "", SyncLevel::kFull, Connections::kTwo,
                 {M{SyncLevel::kNormal, "manual"}, M{SyncLevel::kFull, "async:0/16", 0}}, true});
  out.push_back({JournalMode::kWal, "", SyncLevel::kFull, Connections::kTwo,
                 {M{SyncLevel::kFull, "async:4/24", 0}, M{SyncLevel::kOff, "threshold:8"}}});
  out.push_back({JournalMode::kWal, "", SyncLevel::kNormal, Connections::kTwo,
                 {M{SyncLevel::kNormal, "async:0/16"}, M{SyncLevel::kExtra, "manual"}}});
  return out;
}

// WAL2: the writer switches logs once the current one holds this many frames (the default,
// 1000, is more than a whole run writes), so that the policies run over both logs: the
// switches, their checkpoints of the non-current log (the only one they copy) and writers
// blocked until it is copied. Not below threshold:8's N: that policy looks at the non-current
// log only, which keeps at least this many frames after a switch (a larger N would never copy
// it, and the writer would never switch again).
constexpr uint32_t kWal2SwitchPages = 16;

// Where, in mutations, background copies and blocked writers were in the current run. The
// hooks run on the writer's and the checkpointers' threads.
base::Mutex events_mu;
vfs::FaultInjectingFileSystem* events_fs ABSL_GUARDED_BY(events_mu) = nullptr;
struct Span {
  uint64_t from = 0;
  uint64_t to = UINT64_MAX;  // UINT64_MAX: did not end
};
std::vector<Span> copies ABSL_GUARDED_BY(events_mu);
std::vector<Span> blocked ABSL_GUARDED_BY(events_mu);

void Record(std::vector<Span>& spans, bool start) ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu) {
  if (events_fs == nullptr) return;
  const uint64_t at = events_fs->mutation_count();
  if (start) {
    spans.push_back({at});
  } else {
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      if (it->to == UINT64_MAX) {
        it->to = at;
        break;
      }
    }
  }
}

// Mixes: a background copy takes a while per page (as a real disk's writes do), so that the
// other connection commits while it runs and the step after it finds those commits to copy.
// Only the background checkpointers' copies: the workload's thread (its explicit and policy
// checkpoints, the last close) runs at full speed.
std::atomic<bool> slow_copies{false};
std::thread::id workload_thread;

void CheckpointEvent(const char* point) {
  if (slow_copies.load(std::memory_order_relaxed) && std::string_view(point) == "copy:page" &&
      std::this_thread::get_id() != workload_thread) {
    std::this_thread::sleep_for(std::chrono::microseconds(40));
  }
  base::MutexLock lock(&events_mu);
  const std::string p = point;
  if (p == "copy") Record(copies, true);
  if (p == "synced") Record(copies, false);
}

void WalEvent(const char* point) {
  base::MutexLock lock(&events_mu);
  const std::string p = point;
  if (p == "policy:blocked") Record(blocked, true);
  if (p == "policy:released") Record(blocked, false);
}

// Whether one of `spans` had begun before mutation `point` and not ended before it.
bool Inside(const std::vector<Span>& spans, uint64_t point) {
  for (const Span& s : spans) {
    if (s.from < point && s.to >= point) return true;
  }
  return false;
}

class WalPolicyCrashTest : public ::testing::TestWithParam<PolicyConfig> {
 protected:
  void SetUp() override {
    wal::SetCheckpointHookForTesting(&CheckpointEvent);
    wal::SetWalHookForTesting(&WalEvent);
  }
  void TearDown() override {
    slow_copies = false;
    wal::SetCheckpointHookForTesting(nullptr);
    wal::SetWalHookForTesting(nullptr);
  }
};

TEST_P(WalPolicyCrashTest, EveryCrashRecoversToAWholeTransactionAsTheSyncLevelGuarantees) {
  const PolicyConfig& c = GetParam();
  const std::string name = ConfigName({c, 0});
  bool async = std::string(c.policy).rfind("async:", 0) == 0;
  bool manual_only = std::string(c.policy) == "manual";
  if (!c.mixed.empty()) {
    manual_only = true;
    for (const MixedPolicyConnection& m : c.mixed) {
      async |= std::string(m.policy).rfind("async:", 0) == 0;
      manual_only &= std::string(m.policy) == "manual";
    }
  }
  SweepSpec spec;
  spec.name = name;
  spec.options.pager.journal_mode = c.mode;
  spec.options.pager.wal2_switch_pages = kWal2SwitchPages;
  spec.options.pager.sync = c.sync;
  spec.options.pager.wal_grow_bytes = kSweepWalGrowBytes;
  spec.options.pager.page_size = 512;
  spec.options.pager.cache_pages = 16;
  spec.options.pager.busy_timeout = absl::Milliseconds(50);
  // (With a mix, the recovering connection's: by threshold, as a new connection's would be.)
  spec.options.pager.checkpoint_policy =
      *checkpoint::ParseCheckpointPolicy(c.mixed.empty() ? c.policy : "threshold:8");
  spec.options.connections = c.connections;
  for (const MixedPolicyConnection& m : c.mixed) {
    pager::PagerOptions o = spec.options.pager;
    o.sync = m.sync;
    o.checkpoint_policy = *checkpoint::ParseCheckpointPolicy(m.policy);
    o.reader_slots = m.reader_slots;
    spec.options.connection_pager.push_back(o);
  }
  // The second connection of a mix runs every third transaction (its background checkpointer,
  // woken by its commit, copies while the first connection commits the next two) and closes
  // last (its close checkpoints what both committed).
  // Explicit checkpoints too (FULL, RESTART, TRUNCATE in turn, after every fourth transaction,
  // by the connection that ran it), so that the log restarts often: in a short generation the
  // pages a background copy took from an unsynced commit are seldom also in the log's older
  // frames, which would hide them after a power loss.
  if (!c.mixed.empty()) {
    spec.options.turns = {0, 0, 1};
    spec.options.last_closer = 1;
    spec.options.checkpoint_every = 4;
    workload_thread = std::this_thread::get_id();
    slow_copies = c.slow_background_copies;
  }
  spec.disk.sector_size = 512;
  // With connections that differ, each transaction's own level (FromLastDurable).
  spec.guarantees.power_loss_durable = c.mixed.empty() && c.sync >= SyncLevel::kFull;
  spec.deterministic = false;
  // (A mix: more points, each as cheap: the windows where one connection's checkpoint copies
  // another's unsynced frames are a few mutations wide.)
  spec.further_points = static_cast<size_t>(
      UnderThreadSanitizer() ? 6 : TierScaled(c.mixed.empty() ? 25 : 160, 8, 400));
  spec.check_clean_run = [&](const RunResult& clean, const std::map<std::string, int>&) {
    if (c.mode == JournalMode::kWal2) {
      EXPECT_GT(clean.log_switches, 3u) << "the workload never switched logs";
    }
  };
  // Where the background copies and blocked writers were in each run.
  uint64_t mid_copy_states = 0, mid_block_states = 0;
  spec.before_run = [](CrashWorld& w) {
    base::MutexLock lock(&events_mu);
    events_fs = w.fs.get();
    copies.clear();
    blocked.clear();
  };
  spec.after_run = [&](CrashWorld&, uint64_t point) {
    base::MutexLock lock(&events_mu);
    events_fs = nullptr;
    mid_copy_states += Inside(copies, point);
    mid_block_states += Inside(blocked, point);
  };
  const SweepCounts counts = RunCrashSweep(spec);
  std::printf("%s: %llu crash states during a checkpoint's copy, %llu with a writer blocked by "
              "the policy\n",
              name.c_str(), static_cast<unsigned long long>(mid_copy_states),
              static_cast<unsigned long long>(mid_block_states));
  if (counts.states == 0) return;
  // Under a sanitizer the sweep draws too few points for these to be sure (CI's ASan stage once
  // drew 8 points in wal2_threshold_8_full_reopen, none inside a copy); the optimized build
  // asserts them.
  if (!manual_only && !UnderSanitizer()) {
    EXPECT_GT(mid_copy_states, 0u) << "no crash hit a checkpoint while it copied";
  }
  // (A mix is for one connection's copies of another's commits; its writers seldom block.)
  if (async && c.mixed.empty() && !UnderSanitizer()) {
    EXPECT_GT(mid_block_states, 0u) << "no crash hit a writer blocked by the policy";
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, WalPolicyCrashTest, ::testing::ValuesIn(Configs()),
                         ConfigName);

}  // namespace
}  // namespace journalkv::testing
