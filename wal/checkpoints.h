// wal::Checkpoints: the checkpoint role of one WAL connection. It owns what keeps this
// connection's checkpoints apart and orders them with the restarts: the checkpoint mutex (one
// checkpoint of the connection at a time; the -shm's CKPT byte belongs to the File that every
// thread of the connection shares, so its lock call alone would not keep them apart) and CKPT
// as a capability for the analysis (wal/lock_byte.h). It runs a checkpoint over the files the
// connection hands it (which log, which phase: V4), restarts a copied log (W7), and counts
// both. The copy and the restart themselves are wal/checkpoint_copy.h's; the writer's state
// (its header and cursor, the switch) and the files are the connection's.
//
// WAL2's FULL, RESTART and TRUNCATE run as the phases of V4 (wal/wal_connection.h), which the
// caller steps through one at a time (WalConnection::Wal2CheckpointStep), holding its writer
// role (BeginWrite ... EndWrite: the pager's, which owns it) around the phases that switch
// logs and only around those, so the WAL layer never calls up to become the writer:
//
//   phase          writer  the step                                  hook ("checkpoint:...")
//   kCopy          no      1. the non-current log, completely
//   kSwitch        yes     2. a V3 switch, when the current log      switching
//                             still is the call's generation and
//                             has frames
//   kCopySwitched  no      3. the log switched from, completely;     switched, then copied
//                             RESTART and TRUNCATE go on to 4
//   kRestart       yes     4. restarts what holds nothing to copy    restarting
//   kDone                  `result` is final and counted
// A blocked phase (readers, CKPT busy) goes to kDone, and so does FULL after 3.
//
// CheckInvariants (debug builds) asserts, where a restart or a phase step begins or ends:
//   W7: a log restarted here had every frame copied (backfill == mx_frame, under CKPT), and
//       afterwards holds none (mx_frame and backfill 0); WAL2 (V1), its generation is the
//       newer of the two;
//   V4: a phase step runs as the writer exactly when it is a switch (kSwitch, kRestart), and
//       the phases only move forward.
//
// Thread-safety: any thread; Run and RestartIfCopied serialize on the checkpoint mutex.
#ifndef JOURNALKV_WAL_CHECKPOINTS_H_
#define JOURNALKV_WAL_CHECKPOINTS_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "base/mutex.h"
#include "shm/wal_index.h"
#include "wal/checkpoint_copy.h"
#include "wal/checkpoint_types.h"
#include "wal/lock_byte.h"

namespace journalkv::wal {

// One WAL2 FULL, RESTART or TRUNCATE on its way through the phases above.
struct Wal2Checkpoint {
  enum class Phase { kCopy, kSwitch, kCopySwitched, kRestart, kDone };

  // V4: the phases that switch logs, which the caller runs holding its writer role.
  bool needs_writer() const { return next == Phase::kSwitch || next == Phase::kRestart; }
  bool done() const { return next == Phase::kDone; }

  CheckpointMode mode = CheckpointMode::kFull;
  absl::Time deadline;       // the busy timeout, from the call
  uint32_t seq = 0;          // the current log's generation at the call
  bool nothing_new = false;  // phase 2 found the call's generation of the current log empty
  // The calling thread held WRITE at the call: its own write transaction is open (a checkpoint
  // asked inside it). Every phase then runs beside that WRITE, which the checkpoint did not
  // take, and a switch waits for the writer role the caller holds itself (busy); V4's check,
  // which tells the checkpoint's writer role by the thread that holds WRITE, does not apply.
  bool caller_writes = false;
  Phase next = Phase::kCopy;
  CheckpointResult result;   // the phases' figures so far
};

class Checkpoints {
 public:
  // `counters`: the connection's (not owned).
  Checkpoints(bool wal2, base::Counters* counters) : wal2_(wal2), counters_(counters) {}
  Checkpoints(const Checkpoints&) = delete;
  Checkpoints& operator=(const Checkpoints&) = delete;

  // One checkpoint of `files` (CheckpointLog), under the checkpoint mutex. WAL: the log. WAL2
  // with `writer_log` < 0 (PASSIVE, or a copy phase of V4): the non-current log. WAL2 as the
  // writer (`writer_log` the log it appends to: CloseLast, and phase 4 with nothing left to
  // copy): the other log completely, then that one; the result says whether both restarted.
  absl::StatusOr<CheckpointResult> Run(CheckpointFiles files, CheckpointMode mode,
                                       int writer_log) ABSL_LOCKS_EXCLUDED(mu_);

  // W7, V3: restarts log `log` of `header` (the current published header; updated) when
  // every frame of it is copied and `allowed()` (no private reader: asked under CKPT), under
  // the checkpoint mutex and CKPT. With `ckpt_deadline` it waits for both until then (V4: a
  // checkpoint's switch); else, with `may_skip`, a busy mutex leaves the restart to a later
  // writer; else it waits for the mutex (its own checkpoint ends at once: nothing is left to
  // copy) and not for CKPT. Counts the restart. REQUIRES: WRITE (`write`) held.
  absl::Status RestartIfCopied(const LockByte& write, shm::WalIndex& index,
                               shm::IndexHeader& header, int log,
                               bool make_current, bool may_skip, absl::Time ckpt_deadline,
                               absl::FunctionRef<bool()> allowed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write) ABSL_LOCKS_EXCLUDED(mu_);

  // Counts a checkpoint in the stats; `restart_counted`: its restart was a switch, which
  // RestartIfCopied counted already.
  void Count(const CheckpointResult& r, bool restart_counted = false);
  // Adds a later phase's (or log's) figures to `total`; its `blocked` is the phase's.
  static void AddPhase(CheckpointResult& total, const CheckpointResult& phase);

  // Debug builds: W7 (and V1 in WAL2) just after this role restarted log `log`, `header`
  // being the header it published.
  void CheckInvariants(const shm::WalIndex& index, const shm::IndexHeader& header,
                       int log) const;
  // Debug builds: V4 after a phase step that began at `before` and moved `c` on, run by a
  // caller that held the writer role (`as_writer`) or not.
  static void CheckInvariants(const Wal2Checkpoint& c, Wal2Checkpoint::Phase before,
                              bool as_writer);

 private:
  const bool wal2_;
  base::Counters* const counters_;
  base::Mutex mu_;    // one checkpoint of this connection at a time (CKPT is per File)
  LockByte ckpt_lock_;  // CKPT, held by this role between its lock and unlock calls
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_CHECKPOINTS_H_
