// The checkpoint modes and what one checkpoint did: the part of the checkpointer that the public
// engine/db.h and checkpoint/policy.h name (they include this, not checkpointer.h, so that an
// embedder's build sees none of the log's or the wal-index's internals).
#ifndef JOURNALKV_CHECKPOINT_CHECKPOINT_MODE_H_
#define JOURNALKV_CHECKPOINT_CHECKPOINT_MODE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace journalkv::checkpoint {

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
  bool stopped = false;     // CheckpointFiles::stop was set: it stopped between pages
  int syncs = 0;            // flushes it made (C1, C2)
  absl::Duration lock_wait;  // waiting for the CKPT lock and for readers
  absl::Duration work;       // the rest: copying, syncing, restarting
};

}  // namespace journalkv::checkpoint

#endif  // JOURNALKV_CHECKPOINT_CHECKPOINT_MODE_H_
