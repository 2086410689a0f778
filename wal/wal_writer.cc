// WalConnection's writer side: BeginWrite (the WRITE lock through the writer role, wal/writer.h,
// the header it starts from, repaired or rebuilt when damaged, W6, and a restart or switch when
// the log is copied, W7, W8, V3) and the calls the writer role answers (Spill, Commit, Rollback,
// EndWrite).
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;
using internal::Sleep;

absl::StatusOr<WalSnapshot> WalConnection::BeginWrite(absl::Time deadline) {
  JKV_DCHECK(!writer_.write_locked());
  if (private_.active()) {
    return absl::ResourceExhaustedError(absl::StrCat(db_path_, ": ", private_.reason()));
  }
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    const uint32_t seen = index_->wake_seq(shm::WalIndex::Wake::kWrite);
    absl::StatusOr<bool> locked = writer_.TryLock();  // W9
    absl::Status s = locked.status();
    if (s.ok() && *locked) break;  // WRITE held until EndWrite
    if (s.ok() && wait.Expired()) {
      s = absl::UnavailableError("busy: another connection is writing the database");
    }
    if (!s.ok()) return s;
    // Asleep until the holder releases WRITE (EndWrite bumps the word), or the back-off's step;
    // counted as the word's waiter, so that a group flush lets this writer join it (W12).
    index_->WaitWake(shm::WalIndex::Wake::kWrite, seen, wait.Step());
  }
  write_lock_.AssumeHeld();  // taken above (kLocked)
  // The published header (readers') and the appended one (this writer's base, W12).
  absl::StatusOr<shm::IndexHeader> published =
      recovery_.ReadHeaderOrRepair(deadline, true, write_lock_, recover_lock_, flush_);
  absl::Status s = published.status();
  // W13 c: commits a failed log sync left unpublished are dropped before anything builds on
  // them (one load when no sync failed).
  // The published header stays as it is: the appended one goes back to it.
  if (s.ok()) s = durability_.ResetAfterFailure(write_lock_, flush_, deadline);
  absl::StatusOr<shm::IndexHeader> h = published;  // the appended one, once read below
  if (s.ok()) {
    h = recovery_.AppendedOrDamage(*published, write_lock_);
    absl::Status damage = h.status();
    if (!damage.ok() && !absl::IsDataLoss(damage)) {
      s = damage;  // an I/O error reading the log: not the index's fault
    } else if (!damage.ok()) {
      // W6: the index contradicts the log, the truth: rebuilt from it, as at a torn header,
      // under FLUSH too (W12 d).
      absl::StatusOr<bool> r = index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive);
      s = !r.ok() ? r.status()
          : *r    ? LockFlush(deadline)
                  : absl::UnavailableError(absl::StrCat(
                        "busy: ", shm_path_, " is being recovered (", damage.message(), ")"));
      if (s.ok()) {
        flush_.AssertHeld();        // s is OK only after LockFlush returned OK,
        recover_lock_.AssumeHeld();  // which follows a taken RECOVER
        s = recovery_.RecoverIndex(write_lock_, recover_lock_, flush_);
        flush_.Unlock(*index_);
      }
      if (r.ok() && *r) index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      if (s.ok()) {
        published =
            recovery_.ReadHeaderOrRepair(deadline, true, write_lock_, recover_lock_, flush_);
      }
      if (s.ok()) s = published.status();
      // Still damaged: the rebuild did not take.
      if (s.ok()) h = recovery_.AppendedOrDamage(*published, write_lock_);
      if (s.ok()) s = h.status();
    }
  }
  if (s.ok() && !wal2_) {
    // W7. A generation with no frames restarts too, so that every generation the writer
    // writes has salts of its own (a rebuilt index may describe a log whose header was lost).
    const uint32_t backfill = index_->backfill(0);
    const uint32_t published_mx = published->logs[0].mx_frame;
    if (backfill == h->logs[0].mx_frame) {
      s = MaybeRestart(*h, 0, false);
    } else if (published->logs[0].ckpt_seq == h->logs[0].ckpt_seq && backfill <= published_mx &&
               published_mx - backfill <= internal::kRestartCopyFrames &&
               published_mx >= internal::RestartThroughPendingFrames()) {
      s = RestartThroughPending(*h);
    }
  } else if (s.ok()) {
    const int cur = CurrentLog(*h, wal2_);
    const int other = 1 - cur;
    const shm::LogState& c = h->logs[cur];
    if (c.mx_frame == 0) {
      // An empty current log restarts in place (salts of its own, as in WAL).
      s = MaybeRestart(*h, cur, true);
    } else if (index_->backfill(other) == h->logs[other].mx_frame &&
               (c.mx_frame >= std::min(options_.wal2_switch_pages, shm::MaxLogFrames() / 2) ||
                index_->backfill(cur) == c.mx_frame)) {
      // (At half the frame limit at the latest, so that a log near it is left while the
      // other one can take a whole transaction.)
      // V3: the switch. The other log is in the database file: it becomes the current one,
      // once what is pending in this one is durable and published (W12 c).
      const uint32_t before = h->current_log;
      writer_.MoveTo(*h);  // FlushPendingAsWriter's base
      if (*h != *published) s = FlushPendingAsWriter();
      if (s.ok()) s = MaybeRestart(*h, other, true);
      if (s.ok() && h->current_log != before) counters_.Add(base::Counter::kLogSwitches);
    }
  }
  if (s.ok()) {
    const WriterCursor end = WriterCursor::AtEndOf(*h, wal2_);
    s = index_->Truncate(end.log, end.next_frame - 1);  // W2
  }
  if (!s.ok()) {
    EndWrite();
    return s;
  }
  writer_.Begin(*h, index_->append_epoch());  // W13 d: the epoch is fixed while WRITE is held
  CallWalHook("begin_write:locked");
  return SnapshotOf(*h, wal2_);
}

// W12 g: a long log copied up to a few frames of its published end, which only those frames
// and the commits appended since (pending, their flush not yet run) keep from restarting. With
// writers in several processes some commit is nearly always pending when a writer begins (it
// appended during the last flush), so without this the log never restarted: it grew by every
// commit, and the policy's checkpoint, finding it over its threshold, ran after every commit
// (one checkpoint and one database sync per commit with 4 writer processes). Holding WRITE,
// nobody appends: the pending commits are made durable and published (the flush their writers
// wait for, W12 c), copied with the frames left (a passive checkpoint: readers that began
// before the publish hold it back, and then the log waits for a later writer), and the log
// restarts when that copy reached them.
absl::Status WalConnection::RestartThroughPending(shm::IndexHeader& header) {
  CallWalHook("begin_write:restart_through_pending");
  writer_.MoveTo(header);
  JKV_RETURN_IF_ERROR(FlushPendingAsWriter());
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, RunCheckpoint(CheckpointMode::kPassive, nullptr, false));
  checkpoints_.Count(r);
  if (index_->backfill(0) != header.logs[0].mx_frame) return absl::OkStatus();
  return MaybeRestart(header, 0, false);
}

// W7, V3: the restart is the checkpoint role's (wal/checkpoints.h), under its mutex and CKPT.
absl::Status WalConnection::MaybeRestart(shm::IndexHeader& header, int log, bool make_current,
                                       absl::Time ckpt_deadline) {
  // This connection's own checkpoint (the background checkpointer's, say) is waited for: every
  // frame is copied and no commit can start meanwhile, so it has nothing left to copy and ends
  // at once. Skipping the restart instead would let a checkpointer that runs after every commit
  // keep the log from ever restarting. In WAL2 the writer waits for no checkpoint (V3): its own
  // may be copying the other log, so the restart is left to a later transaction, unless the
  // generation has no salts of its own (a rebuilt index whose log header was lost), or a
  // checkpoint's switch asks to wait (`ckpt_deadline`, V4: the other log is copied, so any
  // checkpoint holding CKPT has nothing to copy and ends at once).
  const bool may_skip = wal2_ && (header.logs[log].salt1 | header.logs[log].salt2) != 0;
  // A read-only private reader's frames must stay where they are (asked under CKPT).
  return checkpoints_.RestartIfCopied(write_lock_, *index_, header, log, make_current, may_skip,
                                      ckpt_deadline, [this] { return private_.NoPrivateReaders(); });
}

// Spill, Commit and Rollback are the writer role's (wal/writer.cc: W2, W4, V6, W11, W12 a, b).
absl::StatusOr<std::vector<uint32_t>> WalConnection::Spill(absl::Span<const wal::FramePage> pages) {
  std::vector<uint32_t> frames;
  JKV_RETURN_IF_ERROR(writer_.WriteFrames(pages, 0, &frames));
  return frames;
}

absl::StatusOr<WalConnection::CommitTicket> WalConnection::Commit(
    absl::Span<const wal::FramePage> pages, uint32_t db_size) {
  return writer_.Commit(pages, db_size);
}

absl::Status WalConnection::Rollback() { return writer_.Rollback(); }

void WalConnection::EndWrite() {
  if (writer_.write_locked()) writer_.Unlock();
}

}  // namespace journalkv::wal
