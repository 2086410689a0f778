// The journal mode x sync level parameters of the key-value power-loss sweep
// (kv_power_loss_test); its crash points and seeds are tests/crash_sweep.h's.
#ifndef JOURNALKV_TESTS_SWEEP_TESTING_H_
#define JOURNALKV_TESTS_SWEEP_TESTING_H_

#include <string>

#include "absl/strings/str_cat.h"
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

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SWEEP_TESTING_H_
