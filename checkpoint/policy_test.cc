#include "checkpoint/policy.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::checkpoint {
namespace {

using ::testing::HasSubstr;

// The log's state in the tables below: frames in the log, of which not copied.
wal::LogSnapshot Log(uint32_t frames, uint32_t uncopied) {
  wal::LogSnapshot log;
  log.log_frames = frames;
  log.uncopied = uncopied;
  log.live_frames = uncopied == 0 ? 0 : frames;
  return log;
}

struct Row {
  std::string policy;
  uint32_t frames;
  uint32_t uncopied;
  PolicyDecision want;
};

TEST(CheckpointPolicyTest, BuiltInDecisions) {
  const std::vector<Row> rows = {
      // threshold:N: PASSIVE on this thread from N frames on, while any is not copied.
      {"threshold:1000", 0, 0, PolicyDecision::None()},
      {"threshold:1000", 999, 999, PolicyDecision::None()},
      {"threshold:1000", 1000, 1000, PolicyDecision::CheckpointNow()},
      {"threshold:1000", 1500, 10, PolicyDecision::CheckpointNow()},  // retried each commit
      {"threshold:1000", 1500, 0, PolicyDecision::None()},            // all copied: restarts
      {"threshold:100", 100, 100, PolicyDecision::CheckpointNow()},
      {"threshold:1", 1, 1, PolicyDecision::CheckpointNow()},
      // async:N/B: wake at N uncopied, block at B live frames.
      {"async:0/100", 0, 0, PolicyDecision::None()},  // nothing to copy
      {"async:0/100", 1, 1, PolicyDecision::WakeBackground()},
      {"async:0/100", 99, 99, PolicyDecision::WakeBackground()},
      {"async:0/100", 100, 100, PolicyDecision::BlockUnder(100)},
      {"async:0/100", 100, 1, PolicyDecision::BlockUnder(100)},  // not yet reusable
      {"async:0/100", 100, 0, PolicyDecision::None()},           // all copied: restarts
      {"async:100/300", 99, 99, PolicyDecision::None()},
      {"async:100/300", 150, 100, PolicyDecision::WakeBackground()},
      {"async:100/300", 150, 99, PolicyDecision::None()},
      {"async:100/300", 299, 299, PolicyDecision::WakeBackground()},
      {"async:100/300", 300, 5, PolicyDecision::BlockUnder(300)},
      // manual: never.
      {"manual", 0, 0, PolicyDecision::None()},
      {"manual", 100000, 100000, PolicyDecision::None()},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.policy + " frames " + std::to_string(row.frames) + " uncopied " +
                 std::to_string(row.uncopied));
    JKV_ASSERT_OK_AND_ASSIGN(std::shared_ptr<CheckpointPolicy> policy,
                         ParseCheckpointPolicy(row.policy));
    EXPECT_EQ(policy->Name(), row.policy);
    const PolicyDecision got = policy->AfterCommit(Log(row.frames, row.uncopied));
    EXPECT_EQ(PolicyActionName(got.action), PolicyActionName(row.want.action));
    EXPECT_TRUE(got == row.want) << "limit " << got.limit;
  }
}

TEST(CheckpointPolicyTest, TheDefaultIsSqlites) {
  JKV_ASSERT_OK_AND_ASSIGN(std::shared_ptr<CheckpointPolicy> policy,
                       ParseCheckpointPolicy(kDefaultCheckpointPolicy));
  EXPECT_EQ(policy->Name(), "threshold:1000");
}

TEST(CheckpointPolicyTest, BadPolicyStringsAreRefusedByName) {
  for (const char* text : {"", "threshold", "threshold:", "threshold:0", "threshold:-5",
                           "threshold:12x", "threshold: 5", "threshold:99999999999", "async:",
                           "async:5", "async:5/5", "async:6/5", "async:1/2/3", "async:a/b",
                           "Manual", "sometimes"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<std::shared_ptr<CheckpointPolicy>> p = ParseCheckpointPolicy(text);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr(absl::StrCat("'", text, "'")));
    EXPECT_THAT(p.status().message(), HasSubstr("expected threshold:N"));
  }
}

}  // namespace
}  // namespace journalkv::checkpoint
