// The crash harness (tests/crash_sweep.h) over a workload in which every 8th transaction
// rewrites the database compacted, as Db::Compact's transaction does (WriteTxn::StartRewrite:
// the live pages moved down, the freelist emptied, the file cut at commit after the database
// sync in the rollback modes, pager I11, and by the checkpoint that copies the whole log in WAL,
// checkpoint C7); every other such one rolls back. Two connections take turns, so one finds the
// database the other cut. Beside compact_sweep_test's power loss after every mutation of one
// Compact, this crashes the process too, and crashes the recovery of a cut: the harness crashes
// the recovering connection after each mutation a clean recovery makes, and recovering again
// must give a whole transaction.
#include <map>
#include <string>

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

class RewriteCrashSweepTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(RewriteCrashSweepTest, CrashesAndCrashedRecoveriesOfACompactingRewrite) {
  const JournalMode mode = GetParam();
  SweepSpec spec;
  spec.name = absl::StrCat("rewrite_", pager::JournalModeName(mode));
  spec.options.pager.journal_mode = mode;
  spec.options.pager.sync = SyncLevel::kFull;
  spec.options.pager.page_size = 512;
  spec.options.pager.cache_pages = 16;  // a rewrite of more pages spills
  spec.options.pager.busy_timeout = absl::Milliseconds(10);
  spec.options.pager.wal_grow_bytes = kSweepWalGrowBytes;
  spec.options.connections = Connections::kTwo;
  spec.options.transactions = 65;  // the harness wants the last one committed
  spec.options.rewrite_every = 8;
  // WAL: checkpoints in the run (FULL, RESTART, TRUNCATE in turn), so that the cut (C7) happens
  // within it and not only in the recovering connection's close.
  if (mode == JournalMode::kWal || mode == JournalMode::kWal2) spec.options.checkpoint_every = 5;
  spec.guarantees.atomic = FileJournal(mode);
  spec.guarantees.power_loss = true;
  spec.guarantees.power_loss_durable = true;
  spec.further_points = static_cast<size_t>(TierScaled(150, 20, 400));
  spec.recovery_crash_states = static_cast<size_t>(TierScaled(6, 2, 250));
  spec.check_clean_run = [](const RunResult& clean, const std::map<std::string, int>&) {
    // The committed rewrites (8, 24, 40, 56) shrank the database.
    int shrank = 0;
    for (int t = 8; t < static_cast<int>(clean.after.size()); t += 16) {
      shrank += clean.after[t].page_count < clean.after[t - 1].page_count;
    }
    EXPECT_GE(shrank, 2) << "the rewrites gave no page back: the cut went untested";
  };
  RunCrashSweep(spec);
}

INSTANTIATE_TEST_SUITE_P(Modes, RewriteCrashSweepTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kPersist,
                                           JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv::testing
