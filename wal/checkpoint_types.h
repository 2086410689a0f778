// The vocabulary of checkpoints that the layers above the WAL name: the modes, what one
// checkpoint did, and the log's state a checkpoint policy decides from (checkpoint/policy.h).
// The public engine/db.h and the pager's mode-neutral seam include this, not checkpoint_copy.h,
// so that an embedder's build and the rollback journal see none of the log's or the
// wal-index's internals (tools/check_layering.sh lets them reach this header alone of wal/).
#ifndef JOURNALKV_WAL_CHECKPOINT_TYPES_H_
#define JOURNALKV_WAL_CHECKPOINT_TYPES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace journalkv::wal {

enum class CheckpointMode { kPassive, kFull, kRestart, kTruncate };
absl::string_view CheckpointModeName(CheckpointMode mode);
absl::StatusOr<CheckpointMode> ParseCheckpointMode(absl::string_view text);

struct CheckpointResult {
  uint32_t log_frames = 0;  // committed frames in the log when the checkpoint looked
  uint32_t copied = 0;      // frames this checkpoint copied into the database file
  uint32_t backfilled = 0;  // frames of the log in the database file afterwards
  bool blocked = false;     // could not copy every frame (readers, a writer, another checkpoint)
  // The log was restarted (RESTART, TRUNCATE). WAL2: the log the writer appends to began
  // after every commit made before the call was copied, whether this checkpoint restarted it
  // or a writer's switch did meanwhile (wal/wal_connection.h V4).
  bool restarted = false;
  bool stopped = false;     // CheckpointFiles::stop (checkpoint_copy.h) was set: it stopped
                            // between pages
  int syncs = 0;            // flushes it made (C1, C2)
  absl::Duration lock_wait;  // waiting for the CKPT lock and for readers
  absl::Duration work;       // the rest: copying, syncing, restarting
};

// The log's state after a commit, as the checkpoint policy sees it
// (WalConnection::PolicyView).
struct LogSnapshot {
  uint32_t log_frames = 0;    // committed frames in the log's current generation
  uint32_t uncopied = 0;      // of those, not yet copied into the database file
  uint32_t live_frames = 0;   // log_frames, or 0 when every frame is copied (the log restarts);
                              // WAL2: both logs while the non-current one has frames to copy
  uint32_t pinned_back = 0;   // frames past the oldest pinned snapshot: no checkpoint copies them
  int active_readers = 0;     // connections (all processes) with a read transaction pinned
  uint32_t commit_frames = 0;  // frames the commit just appended
  absl::Duration since_last_checkpoint = absl::InfiniteDuration();  // by this connection
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_CHECKPOINT_TYPES_H_
