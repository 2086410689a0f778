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
// recovery are swept by wal_crash_sweep_test.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/test_scale.h"
#include "checkpoint/checkpointer.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "pager/wal_strategy.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

struct PolicyConfig {
  JournalMode mode;  // kWal or kWal2
  const char* policy;
  SyncLevel sync;
  Connections connections;
};

std::string ConfigName(const ::testing::TestParamInfo<PolicyConfig>& info) {
  std::string policy = info.param.policy;
  std::replace(policy.begin(), policy.end(), ':', '_');
  std::replace(policy.begin(), policy.end(), '/', '_');
  return absl::StrCat(pager::JournalModeName(info.param.mode), "_", policy, "_",
                      pager::SyncLevelName(info.param.sync), "_",
                      ConnectionsName(info.param.connections));
}

std::vector<PolicyConfig> Configs() {
  std::vector<PolicyConfig> out;
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2}) {
    for (SyncLevel sync : {SyncLevel::kNormal, SyncLevel::kFull}) {
      out.push_back({mode, "threshold:8", sync, Connections::kReopen});
      out.push_back({mode, "async:0/16", sync, Connections::kOne});
      out.push_back({mode, "async:4/24", sync, Connections::kTwo});
      out.push_back({mode, "manual", sync, Connections::kReopen});
    }
  }
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

void CheckpointEvent(const char* point) {
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
    options_.pager.journal_mode = GetParam().mode;
    options_.pager.wal2_switch_pages = kWal2SwitchPages;
    options_.pager.sync = GetParam().sync;
    options_.pager.page_size = 512;
    options_.pager.cache_pages = 16;
    options_.pager.busy_timeout = absl::Milliseconds(50);
    options_.pager.checkpoint_policy = *checkpoint::ParseCheckpointPolicy(GetParam().policy);
    options_.connections = GetParam().connections;
    disk_.sector_size = 512;
    checkpoint::SetCheckpointHookForTesting(&CheckpointEvent);
    pager::SetWalHookForTesting(&WalEvent);
  }
  void TearDown() override {
    checkpoint::SetCheckpointHookForTesting(nullptr);
    pager::SetWalHookForTesting(nullptr);
  }

  // RunTo of pager_workload.h, recording where copies and blocked writers were.
  std::unique_ptr<CrashWorld> RunTo(uint64_t point, bool* mid_copy, bool* mid_block) {
    auto w = std::make_unique<CrashWorld>();
    w->fs = std::make_unique<vfs::FaultInjectingFileSystem>(&w->base);
    w->fs->SetDiskModel(disk_);
    {
      base::MutexLock lock(&events_mu);
      events_fs = w->fs.get();
      copies.clear();
      blocked.clear();
    }
    w->fs->CrashAfterMutations(point);
    w->run = RunWorkload(*w->fs, options_, /*record=*/false);
    base::MutexLock lock(&events_mu);
    events_fs = nullptr;
    *mid_copy = Inside(copies, point);
    *mid_block = Inside(blocked, point);
    return w;
  }

  std::vector<int> UpTo(const RunResult& run) {
    std::vector<int> v;
    for (int t = 0; t <= std::max(run.acknowledged, run.in_flight); ++t) v.push_back(t);
    return v;
  }

  WorkloadOptions options_;
  vfs::FaultInjectingFileSystem::DiskModel disk_;
};

TEST_P(WalPolicyCrashTest, EveryCrashRecoversToAWholeTransactionAsTheSyncLevelGuarantees) {
  const PolicyConfig& c = GetParam();
  const bool power_durable = c.sync >= SyncLevel::kFull;
  const bool async = std::string(c.policy).rfind("async:", 0) == 0;
  std::vector<ModelState> history;
  uint64_t total = 0;
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetDiskModel(disk_);
    RunResult clean = RunWorkload(fs, options_, /*record=*/true);
    ASSERT_EQ(clean.acknowledged, options_.transactions);
    std::printf("%s: clean run: %llu checkpoints, %llu log restarts, %llu log switches, "
                "largest log %u frames\n",
                ConfigName({c, 0}).c_str(), static_cast<unsigned long long>(clean.checkpoints),
                static_cast<unsigned long long>(clean.log_restarts),
                static_cast<unsigned long long>(clean.log_switches), clean.max_log_frames);
    if (c.mode == JournalMode::kWal2) {
      EXPECT_GT(clean.log_switches, 3u) << "the workload never switched logs";
    }
    history = clean.after;
    total = fs.mutation_count();
  }
  // Crash points spread evenly over the run (a run's length varies a little with the
  // interleaving; points past its end crash nothing and are still verified).
  const int count = LongSweep() ? 400 : ScaledForSanitizer(60, 15);
  uint64_t states = 0, mid_copy_states = 0, mid_block_states = 0, lost = 0;
  for (int i = 1; i <= count; ++i) {
    const uint64_t point = 1 + (total * i) / (count + 1);
    const uint64_t seed = point * 131 + RunSeed() % 1000;
    for (CrashKind kind : {CrashKind::kPowerLoss, CrashKind::kProcessCrash,
                           CrashKind::kCrashThenPowerLoss}) {
      const std::string where = absl::StrCat(ConfigName({c, 0}), ": crash after mutation ",
                                             point, " of ~", total, ", ", CrashKindName(kind),
                                             kind == CrashKind::kProcessCrash
                                                 ? std::string()
                                                 : absl::StrCat(" seed ", seed));
      bool mid_copy = false, mid_block = false;
      auto w = RunTo(point, &mid_copy, &mid_block);
      std::vector<int> allowed = Allowed(w->run);
      if (kind == CrashKind::kPowerLoss) {
        const uint64_t before = FilesDigest(w->base);
        ASSERT_TRUE(w->fs->SimulatePowerLoss(seed).ok());
        lost += FilesDigest(w->base) != before;
        if (!power_durable) allowed = UpTo(w->run);
      } else {
        w->fs->SimulateProcessCrash();
      }
      Recovered r = Verify(*w->fs, options_, history, allowed);
      ASSERT_EQ(r.problem, "") << where;
      if (kind == CrashKind::kCrashThenPowerLoss) {
        // The recovering connection's close checkpointed what it saw (C1 makes the log durable
        // first at NORMAL): it survives the power loss.
        ASSERT_TRUE(w->fs->SimulatePowerLoss(seed + 1).ok());
        Recovered again = Verify(*w->fs, options_, history, {r.t});
        ASSERT_EQ(again.problem, "") << where << ", after the recovery";
      }
      ++states;
      mid_copy_states += mid_copy;
      mid_block_states += mid_block;
    }
  }
  std::printf("%s: %llu crash states over ~%llu mutations, %llu during a checkpoint's copy, "
              "%llu with a writer blocked by the policy, %llu power losses dropped data\n",
              ConfigName({c, 0}).c_str(), static_cast<unsigned long long>(states),
              static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(mid_copy_states),
              static_cast<unsigned long long>(mid_block_states),
              static_cast<unsigned long long>(lost));
  EXPECT_GT(lost, 0u) << "no power loss dropped anything";
  if (std::string(c.policy) != "manual") {
    EXPECT_GT(mid_copy_states, 0u) << "no crash hit a checkpoint while it copied";
  }
  if (async && !UnderSanitizer()) {
    EXPECT_GT(mid_block_states, 0u) << "no crash hit a writer blocked by the policy";
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, WalPolicyCrashTest, ::testing::ValuesIn(Configs()),
                         ConfigName);

}  // namespace
}  // namespace journalkv::testing
