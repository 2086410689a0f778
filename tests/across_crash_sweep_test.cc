// Crash sweeps of transactions across two and three databases in the rollback journal modes
// (pager/super_journal.h; the driver and what it asserts: tests/across_sweep.h): DELETE,
// TRUNCATE and PERSIST at sync FULL and NORMAL (and EXTRA at two databases), power loss and
// process crash after every mutation of the workload (a sample in the default tier), recovery
// in both orders and one database alone first, and crashes during recovery. Then the
// sync-removal checks: each sync that the protocol adds (the super-journal's, its
// directory's, the commit point's directory sync, and recovery's sync of a gone
// super-journal's directory) taken away makes the sweep find a broken state.
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "tests/across_sweep.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using vfs::SyncLevel;

const char* SyncName(SyncLevel s) {
  switch (s) {
    case SyncLevel::kOff: return "off";
    case SyncLevel::kNormal: return "normal";
    case SyncLevel::kFull: return "full";
    case SyncLevel::kExtra: return "extra";
  }
  return "?";
}

using Param = std::tuple<JournalMode, SyncLevel, int>;

class AcrossCrashSweepTest : public ::testing::TestWithParam<Param> {};

TEST_P(AcrossCrashSweepTest, AllOrNone) {
  const auto [mode, sync, dbs] = GetParam();
  AcrossConfig config;
  config.name = absl::StrCat(pager::JournalModeName(mode), "_", SyncName(sync), "_", dbs, "db");
  config.mode = mode;
  config.sync = sync;
  config.dbs = dbs;
  AcrossCounts counts = RunAcrossSweep(config);
  EXPECT_EQ(counts.failure, "");
  // Not vacuous: crashes mid-commit that landed and that were undone, every kind, one
  // database recovered alone first, crashed recoveries. Under a sanitizer the sweep takes half
  // of its crash points and two crashed recoveries a kind, so a run may meet no commit that
  // landed or no recovery worth crashing: those two are asserted by the optimized run.
  if (!testing::UnderSanitizer()) {
    EXPECT_GT(counts.landed, 0u) << counts.Summary();
    EXPECT_GT(counts.recovery_crashes, 0u) << counts.Summary();
  }
  EXPECT_GT(counts.undone, 0u) << counts.Summary();
  for (uint64_t k : counts.by_kind) EXPECT_GT(k, 0u) << counts.Summary();
  EXPECT_GT(counts.lone_first, 0u) << counts.Summary();
}

INSTANTIATE_TEST_SUITE_P(
    Rollback, AcrossCrashSweepTest,
    ::testing::Combine(::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                         JournalMode::kPersist),
                       ::testing::Values(SyncLevel::kFull, SyncLevel::kNormal),
                       ::testing::Values(2, 3)),
    [](const auto& info) {
      return absl::StrCat(pager::JournalModeName(std::get<0>(info.param)), "_",
                          SyncName(std::get<1>(info.param)), "_", std::get<2>(info.param), "db");
    });

INSTANTIATE_TEST_SUITE_P(
    Extra, AcrossCrashSweepTest,
    ::testing::Combine(::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                         JournalMode::kPersist),
                       ::testing::Values(SyncLevel::kExtra), ::testing::Values(2)),
    [](const auto& info) {
      return absl::StrCat(pager::JournalModeName(std::get<0>(info.param)), "_extra_2db");
    });

// A disk whose directories keep a prefix of their unsynced entry changes after a power loss
// (a metadata journal): the super-journal's creation or removal may survive unsynced.
TEST(AcrossCrashSweepEntriesTest, AllOrNone) {
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist}) {
    AcrossConfig config;
    config.name = absl::StrCat(pager::JournalModeName(mode), "_full_3db_entries_survive");
    config.mode = mode;
    config.dbs = 3;
    config.one_order = true;
    config.entries_may_survive = true;
    AcrossCounts counts = RunAcrossSweep(config);
    EXPECT_EQ(counts.failure, "");
    EXPECT_GT(counts.states, 0u);
  }
}

// Sync OFF promises nothing against a power loss, but a process crash still leaves every
// database at one transaction (the super-journal is then not synced at all: J2, J4).
TEST(AcrossCrashSweepOffTest, ProcessCrashIsAllOrNone) {
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist}) {
    AcrossConfig config;
    config.name = absl::StrCat(pager::JournalModeName(mode), "_off_3db");
    config.mode = mode;
    config.sync = SyncLevel::kOff;
    config.dbs = 3;
    config.power_loss = false;
    AcrossCounts counts = RunAcrossSweep(config);
    EXPECT_EQ(counts.failure, "");
    EXPECT_GT(counts.by_kind[1], 0u);
    if (!testing::UnderSanitizer()) {
      EXPECT_GT(counts.recovery_crashes, 0u);  // as above
    }
  }
}

// Each sync the protocol adds, removed, breaks the guarantee somewhere in the sweep.
class AcrossSyncRemovalTest : public ::testing::TestWithParam<const char*> {};

TEST_P(AcrossSyncRemovalTest, SweepFails) {
  AcrossConfig config;
  config.name = absl::StrCat("persist_full_3db_without_", GetParam());
  config.mode = JournalMode::kPersist;
  config.sync = SyncLevel::kFull;
  config.dbs = 3;
  config.all_points = true;
  config.power_loss_seeds = 4;  // the broken states need the right power loss
  config.one_order = true;
  config.skip_sites = {GetParam()};
  AcrossCounts counts = RunAcrossSweep(config);
  EXPECT_NE(counts.failure, "") << "the sweep passed without the sync at " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Sites, AcrossSyncRemovalTest,
                         ::testing::Values("J2 super-journal", "J2 super-journal directory",
                                           "J4 super-journal removal (commit point)",
                                           "J5 super-journal absence (recovery)"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace journalkv::testing
