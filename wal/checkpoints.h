// wal::Wal2Checkpoint: WAL2's FULL, RESTART and TRUNCATE as the phases of V4
// (wal/wal_connection.h), which the caller runs one at a time through
// WalConnection::Wal2CheckpointStep. The caller holds its writer role (BeginWrite ... EndWrite:
// the pager's, which owns it) around the phases that switch logs, and only around those, so
// the WAL layer never calls up to become the writer:
//
//   phase          as the writer  what the step does                               hook
//   kCopy          no             1. the non-current log, completely
//   kSwitch        yes            2. a V3 switch, when the current log still is     "checkpoint:switching"
//                                    the call's generation and has frames
//   kCopySwitched  no             3. the log switched from, completely;            "checkpoint:switched"
//                                    RESTART and TRUNCATE then go on to 4          "checkpoint:copied"
//   kRestart       yes            4. restarts what holds nothing left to copy      "checkpoint:restarting"
//   kDone                         `result` is final, and counted in the stats
// A phase that is blocked (readers, CKPT busy) goes to kDone, and so does FULL after 3.
#ifndef JOURNALKV_WAL_CHECKPOINTS_H_
#define JOURNALKV_WAL_CHECKPOINTS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "wal/checkpoint_types.h"

namespace journalkv::wal {

struct Wal2Checkpoint {
  enum class Phase { kCopy, kSwitch, kCopySwitched, kRestart, kDone };

  // V4: the phases that switch logs, which the caller runs holding its writer role.
  bool needs_writer() const { return next == Phase::kSwitch || next == Phase::kRestart; }
  bool done() const { return next == Phase::kDone; }

  CheckpointMode mode = CheckpointMode::kFull;
  absl::Time deadline;     // the busy timeout, from the call
  uint32_t seq = 0;        // the current log's generation at the call
  bool nothing_new = false;  // 2 found the call's generation of the current log empty
  Phase next = Phase::kCopy;
  CheckpointResult result;  // the phases' figures so far
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_CHECKPOINTS_H_
