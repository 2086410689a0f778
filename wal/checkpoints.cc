#include "wal/checkpoints.h"

#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "shm/pins.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

absl::StatusOr<CheckpointResult> Checkpoints::Run(CheckpointFiles files, CheckpointMode mode,
                                                  int writer_log) {
  base::MutexLock lock(&mu_);
  if (!wal2_) return CheckpointLog(files, mode);
  if (writer_log < 0) {
    files.log_no = kNonCurrentLog;  // V4: the log no writer appends to, chosen under CKPT
    return CheckpointLog(files, mode);
  }
  // The writer is held, so neither log changes: the older log completely, then the current
  // one (CloseLast; and V4's last phase, where neither has anything to copy).
  files.log_no = 1 - writer_log;
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, CheckpointLog(files, CheckpointMode::kFull));
  if (!r.blocked) {
    files.log_no = writer_log;
    JKV_ASSIGN_OR_RETURN(const CheckpointResult newer, CheckpointLog(files, mode));
    AddPhase(r, newer);
    r.restarted = newer.restarted;
    r.stopped = newer.stopped;
  }
  return r;
}

// W7, V3. The restart takes CKPT too (a checkpoint reads the header and then the backfill,
// and must not pair one generation's mx_frame with the next one's backfill).
absl::Status Checkpoints::RestartIfCopied(const LockByte& write, shm::WalIndex& index,
                                          shm::IndexHeader& header,
                                          int log, bool make_current, bool may_skip,
                                          absl::Time ckpt_deadline,
                                          absl::FunctionRef<bool()> allowed) {
  const bool wait = ckpt_deadline != absl::InfinitePast();
  if (may_skip && !wait) {
    if (!mu_.TryLock()) return absl::OkStatus();
  } else {
    mu_.Lock();
  }
  absl::Status s;
  absl::StatusOr<bool> locked = index.TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive);
  base::Backoff ckpt_wait(ckpt_deadline, internal::kMaxWait);
  while (wait && locked.ok() && !*locked && !ckpt_wait.Expired()) {
    internal::Sleep(ckpt_wait);
    locked = index.TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive);
  }
  if (!locked.ok()) s = locked.status();
  if (locked.ok() && *locked) {
    ckpt_lock_.AssumeHeld();  // just taken
    // W7: only a log whose every frame is copied (and synced, C2).
    if (index.backfill(log) == header.logs[log].mx_frame && allowed()) {
      s = RestartLog(write, ckpt_lock_, index, header, log, make_current, wal2_);
      if (s.ok()) {
        CheckInvariants(index, header, log);
        counters_->Add(base::Counter::kLogRestarts);
      }
    }
    index.Unlock(shm::ShmLock::kCkpt).IgnoreError();  // closing the file drops it anyway
  }
  mu_.Unlock();
  return s;
}

void Checkpoints::Count(const CheckpointResult& r, bool restart_counted) {
  counters_->Add(base::Counter::kCheckpoints);
  counters_->Add(base::Counter::kFramesCopied, r.copied);
  if (r.restarted && !restart_counted) counters_->Add(base::Counter::kLogRestarts);
  counters_->AddDuration(base::Counter::kCheckpointLockWait, r.lock_wait);
  counters_->AddDuration(base::Counter::kCheckpointTime, r.work);
  counters_->Add(base::Counter::kCheckpointSyncs, r.syncs);
}

void Checkpoints::AddPhase(CheckpointResult& total, const CheckpointResult& phase) {
  total.log_frames += phase.log_frames;
  total.copied += phase.copied;
  total.backfilled += phase.backfilled;
  total.blocked = phase.blocked;
  total.syncs += phase.syncs;
  total.lock_wait += phase.lock_wait;
  total.work += phase.work;
}

void Checkpoints::CheckInvariants(const shm::WalIndex& index, const shm::IndexHeader& header,
                                  int log) const {
  // W7: the restarted log starts with nothing to copy.
  JKV_DCHECK(header.logs[log].mx_frame == 0 && index.backfill(log) == 0);
  // V1: its generation is the newest of both logs.
  JKV_DCHECK(!wal2_ || !shm::SeqAfter(header.logs[1 - log].ckpt_seq, header.logs[log].ckpt_seq));
}

void Checkpoints::CheckInvariants(const Wal2Checkpoint& c, Wal2Checkpoint::Phase before,
                                  bool as_writer) {
  using Phase = Wal2Checkpoint::Phase;
  // V4: the writer for the switches, and for nothing else.
  JKV_DCHECK(as_writer == (before == Phase::kSwitch || before == Phase::kRestart));
  // The phases only move forward (a blocked one ends the checkpoint).
  JKV_DCHECK(c.next == Phase::kDone || static_cast<int>(c.next) == static_cast<int>(before) + 1);
  JKV_DCHECK(c.next != Phase::kRestart || c.mode != CheckpointMode::kFull);
}

}  // namespace journalkv::wal
