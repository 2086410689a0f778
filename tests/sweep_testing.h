// Shared parts of the power-loss sweeps (pager_power_loss_test, kv_power_loss_test) and the
// I/O-fault tests: the journal mode x sync level parameters and the choice of crash points.
#ifndef JOURNALKV_TESTS_SWEEP_TESTING_H_
#define JOURNALKV_TESTS_SWEEP_TESTING_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager_options.h"

namespace journalkv::testing {

struct ModeAndSync {
  pager::JournalMode mode;
  pager::SyncLevel sync;
};

// DELETE, TRUNCATE and PERSIST at sync NORMAL, FULL and EXTRA: the pairs README.md calls
// crash-atomic and durable.
inline auto DurableRollbackModes() {
  using pager::JournalMode;
  using pager::SyncLevel;
  return ::testing::Values(ModeAndSync{JournalMode::kDelete, SyncLevel::kNormal},
                           ModeAndSync{JournalMode::kDelete, SyncLevel::kFull},
                           ModeAndSync{JournalMode::kDelete, SyncLevel::kExtra},
                           ModeAndSync{JournalMode::kTruncate, SyncLevel::kNormal},
                           ModeAndSync{JournalMode::kTruncate, SyncLevel::kFull},
                           ModeAndSync{JournalMode::kTruncate, SyncLevel::kExtra},
                           ModeAndSync{JournalMode::kPersist, SyncLevel::kNormal},
                           ModeAndSync{JournalMode::kPersist, SyncLevel::kFull},
                           ModeAndSync{JournalMode::kPersist, SyncLevel::kExtra});
}

// Test names such as "delete_full".
inline std::string ModeAndSyncName(const ::testing::TestParamInfo<ModeAndSync>& info) {
  return absl::StrCat(pager::JournalModeName(info.param.mode), "_",
                      pager::SyncLevelName(info.param.sync));
}

// The crash points of a sweep: every mutation index right after a sync, plus `further` other
// indexes in [1, total] spread evenly (500; 100 under a sanitizer).
inline std::vector<uint64_t> CrashPoints(const std::vector<uint64_t>& sync_points, uint64_t total) {
  const size_t further = ScaledForSanitizer(500, 100);
  std::set<uint64_t> points(sync_points.begin(), sync_points.end());
  if (total <= sync_points.size() + further) {
    ADD_FAILURE() << "workload too small: " << total << " mutations";
    return {};
  }
  for (uint64_t i = 0; points.size() < sync_points.size() + further; ++i) {
    points.insert(1 + (i * 7919) % total);
  }
  return std::vector<uint64_t>(points.begin(), points.end());
}

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SWEEP_TESTING_H_
