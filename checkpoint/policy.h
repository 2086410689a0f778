// Checkpoint policies: when the log is copied back into the database file, and on which thread.
//
// After every commit in a WAL mode the pager asks the connection's policy what to do, passing
// the log's state as the commit left it (wal::LogSnapshot, wal/checkpoint_types.h). The policy
// answers with one action:
//
//   action            | what the pager does, before Commit returns
//   ------------------+------------------------------------------------------------------------
//   kNone             | nothing
//   kCheckpointNow    | runs a checkpoint of `mode` on the committing thread (FULL, RESTART and
//                     |   TRUNCATE take the writer role, waiting like Db::Checkpoint does)
//   kWakeBackground   | wakes the connection's background checkpointer (started on first use)
//                     |   and returns at once; the checkpointer copies what readers allow
//   kBlockUnder       | wakes the background checkpointer, then blocks the committing thread
//                     |   while the log's live frames (frames not yet reusable: every frame of
//                     |   the current generation unless all are copied) are >= `limit`, for
//                     |   at most the busy timeout (the commit is already durable: a timeout
//                     |   is counted, not an error). A thread that has a read transaction open
//                     |   on any database is never blocked (it could be waiting for itself).
//
// A checkpoint run by a policy never undoes the commit: its error is reported by the next call
// on the database (and in Stats), and a failed sync puts the handle in its error state.
//
// The built-in policies (ParseCheckpointPolicy names them):
//   threshold:N   kCheckpointNow(PASSIVE) when the log holds N frames or more and some are not
//                 yet copied: like SQLite, every commit tries again until the log restarts
//                 (threshold:1000 is the default, SQLite's; threshold:100 is Android's)
//   async:N/B     kBlockUnder(B) when the log holds B live frames or more, else
//                 kWakeBackground once N frames or more are not yet copied (WeChat's WCDB runs
//                 ACP(0/100) = async:0/100 and ACP(100/300) = async:100/300). REQUIRES N < B.
//   manual        kNone: only Db::Checkpoint and jkv checkpoint copy the log
//
// Thread-safety: a connection calls its policy from one thread at a time (its committing
// writer). A policy object shared by several connections is called by each of them
// concurrently and must be thread-safe itself; the built-in ones are (they are immutable).
#ifndef JOURNALKV_CHECKPOINT_POLICY_H_
#define JOURNALKV_CHECKPOINT_POLICY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "wal/checkpoint_types.h"

namespace journalkv::checkpoint {

enum class PolicyAction { kNone, kCheckpointNow, kWakeBackground, kBlockUnder };
absl::string_view PolicyActionName(PolicyAction action);

struct PolicyDecision {
  PolicyAction action = PolicyAction::kNone;
  wal::CheckpointMode mode = wal::CheckpointMode::kPassive;  // kCheckpointNow
  uint32_t limit = 0;                              // kBlockUnder: live frames to get under

  static PolicyDecision None() { return {}; }
  static PolicyDecision CheckpointNow(wal::CheckpointMode mode = wal::CheckpointMode::kPassive) {
    return {PolicyAction::kCheckpointNow, mode, 0};
  }
  static PolicyDecision WakeBackground() { return {PolicyAction::kWakeBackground}; }
  static PolicyDecision BlockUnder(uint32_t limit) {
    return {PolicyAction::kBlockUnder, wal::CheckpointMode::kPassive, limit};
  }
  bool operator==(const PolicyDecision&) const = default;
};

class CheckpointPolicy {
 public:
  virtual ~CheckpointPolicy() = default;
  // What to do after a commit that left the log as `log` describes.
  virtual PolicyDecision AfterCommit(const wal::LogSnapshot& log) = 0;
  // The policy's name as Stats and jkv info show it ("threshold:1000", "async:0/100", ...).
  virtual std::string Name() const = 0;
};

// threshold:N. REQUIRES: frames >= 1.
class ThresholdPolicy final : public CheckpointPolicy {
 public:
  explicit ThresholdPolicy(uint32_t frames) : frames_(frames) {}
  PolicyDecision AfterCommit(const wal::LogSnapshot& log) override;
  std::string Name() const override;

 private:
  const uint32_t frames_;
};

// async:N/B. REQUIRES: wake < block.
class AsyncPolicy final : public CheckpointPolicy {
 public:
  AsyncPolicy(uint32_t wake, uint32_t block) : wake_(wake), block_(block) {}
  PolicyDecision AfterCommit(const wal::LogSnapshot& log) override;
  std::string Name() const override;

 private:
  const uint32_t wake_;
  const uint32_t block_;
};

// manual.
class ManualPolicy final : public CheckpointPolicy {
 public:
  PolicyDecision AfterCommit(const wal::LogSnapshot&) override { return PolicyDecision::None(); }
  std::string Name() const override { return "manual"; }
};

// The default policy's name.
inline constexpr absl::string_view kDefaultCheckpointPolicy = "threshold:1000";

// Parses "threshold:N" (N >= 1), "async:N/B" (0 <= N < B) or "manual". InvalidArgument naming
// the text and the accepted forms otherwise.
absl::StatusOr<std::shared_ptr<CheckpointPolicy>> ParseCheckpointPolicy(absl::string_view text);

}  // namespace journalkv::checkpoint

#endif  // JOURNALKV_CHECKPOINT_POLICY_H_
