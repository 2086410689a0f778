// WalConnection's group commit (wal_connection.h W12): a commit appended under WRITE waits,
// after WRITE is released, for a flush that covers it; the first waiter to hold FLUSH syncs the
// log through the newest appended commit and publishes it for every commit it covers. The
// flush role itself (FLUSH, the publish, the wait for joining writers) is wal::GroupFlush
// (group_flush.h); this file drives it with the connection's sync and W13's failure records.
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {
namespace {

// A committer's wait for another thread's or connection's flush looks again after this long at
// the latest (the flusher wakes the waiters as it lets go, unless it died).
constexpr absl::Duration kMaxJoinWait = absl::Milliseconds(1);

}  // namespace

absl::Status WalConnection::LockFlush(absl::Time deadline) {
  return flush_.Lock(*index_, deadline, internal::FlushWait(options_.busy_timeout), shm_path_);
}

absl::StatusOr<bool> WalConnection::FlushLocked(const shm::IndexHeader& target, uint32_t epoch,
                                                shm::IndexHeader* published, bool as_writer) {
  // W13 b: under FLUSH no failure is recorded and no reset made but by this thread, so a
  // commit not dropped now is not dropped until this flush ends.
  JKV_RETURN_IF_ERROR(durability_.CommitDropped(target, epoch));
  // W12 h: a header that stays torn is a publisher between its copies, slow or dead. Nothing
  // is published over it: a publisher that wrote copy B has its publish completed from B (the
  // newest; no lock needed), and one that died writing B is left to a repair under WRITE (the
  // caller's, W6).
  if (!GroupFlush::ReadPublished(*index_, published) &&
      !(index_->CompletePublishFromB() && GroupFlush::ReadPublished(*index_, published))) {
    return false;
  }
  if (GroupFlush::Covers(*published, target)) return true;
  shm::WalIndex::SyncFailure failure;
  if (index_->Failure(index_->append_epoch(), &failure) ==
      shm::WalIndex::FailureLookup::kRecorded) {
    // Not reachable (target would be dropped or covered): a flush never publishes past a
    // failure before the next writer's reset (W13 b).
    return absl::InternalError("a flush found an unpublished commit that a failed sync left");
  }
  // The newest commit appended. A writer may be writing the appended header right now (under
  // WRITE, which this flush does not hold): the copies agree again within nanoseconds. A
  // writer killed between them leaves them torn until the next writer repairs them; then this
  // flush covers `target`, which was appended whole.
  if (!as_writer) {
    const absl::Time join_start = absl::Now();
    flush_.WaitForAppenders(
        *index_, *published, [this] { return writer_.write_locked(); },
        [] { CallWalHook("wait"); });
    counters_.AddDuration(base::Counter::kFlushJoinWait, absl::Now() - join_start);
  }
  shm::IndexHeader appended;
  if (!GroupFlush::ReadAppended(*index_, &appended) || !GroupFlush::Covers(appended, target)) {
    appended = target;
  }
  const int log = static_cast<int>(appended.current_log & 1);
  if (durability_.MaintenanceSync() != SyncLevel::kOff) {
    // W1, W12, D1: every frame up to the newest appended commit is durable before it is
    // published, for every commit this flush covers, whatever this connection's own level:
    // a FULL commit pending under a NORMAL or OFF one is made durable by their flush too (the
    // log is preallocated: data only). With every connection at OFF nobody asked for it.
    const absl::Time sync_start = absl::Now();
    JKV_ASSIGN_OR_RETURN(const bool synced,
                         durability_.MakeLogDurable(flush_, log, appended.logs[log], "W1 log"));
    if (synced) {
      const absl::Duration took = absl::Now() - sync_start;
      flush_.SyncTook(took);
      counters_.AddDuration(base::Counter::kFlushSyncTime, took);
    }
  }
  CallWalHook("flush:synced");
  // W12 h: only over an older header, read again now.
  shm::IndexHeader now;
  if (!GroupFlush::ReadPublished(*index_, &now) &&
      !(index_->CompletePublishFromB() && GroupFlush::ReadPublished(*index_, &now))) {
    return false;
  }
  if (GroupFlush::Covers(now, appended)) {
    *published = now;
    return true;
  }
  flush_.Publish(*index_, *published, appended);  // W2, W12 a, F3
  *published = appended;
  counters_.Add(base::Counter::kGroupFlushes);
  return true;
}

absl::StatusOr<WalSnapshot> WalConnection::AwaitDurable(const CommitTicket& ticket) {
  if (ticket.published) return SnapshotOf(ticket.header, wal2_);
  CallWalHook("await:start");
  const absl::Time start = absl::Now();
  // W14: a flush that publishes nothing for the busy timeout is a flusher that stopped.
  const absl::Duration patience = internal::FlushWait(options_.busy_timeout);
  absl::Time deadline = start + patience;
  uint32_t progress = index_->wake_seq(shm::WalIndex::Wake::kFlush);
  shm::IndexHeader published;
  bool by_others = true;
  // Z2: false while the FLUSH word's parity may be trusted (a flush under way needs no try of
  // the lock byte); true after a sleep that ended with the word unchanged.
  bool must_try = false;
  while (true) {
    // W13 d: asked before the published header is trusted, and again after it (a failure, a
    // reset and a later commit over the same frames may all fall in between).
    JKV_RETURN_IF_ERROR(durability_.CommitDropped(ticket.header, ticket.epoch));
    if (index_->ReadHeader(&published) && GroupFlush::Covers(published, ticket.header)) {
      JKV_RETURN_IF_ERROR(durability_.CommitDropped(ticket.header, ticket.epoch));
      break;
    }
    const uint32_t seen = index_->wake_seq(shm::WalIndex::Wake::kFlush);
    absl::Status error;
    // Z2: a flush under way (odd) is not asked for its lock byte: sleep until it lets go.
    const bool skip_try = !must_try && GroupFlush::UnderWay(seen);
    if (!skip_try && flush_.TryLock(*index_, &error)) {
      absl::StatusOr<bool> covered =
          FlushLocked(ticket.header, ticket.epoch, &published, /*as_writer=*/false);
      flush_.Unlock(*index_);
      JKV_RETURN_IF_ERROR(covered.status());
      if (*covered) {
        by_others = false;
        break;
      }
      // The published header stays torn: repaired (W6) by this thread if no one else does.
      JKV_RETURN_IF_ERROR(recovery_
                              .ReadHeaderOrRepair(deadline, /*may_recover=*/true, write_lock_,
                                                  recover_lock_, flush_)
                              .status());
      continue;
    }
    JKV_RETURN_IF_ERROR(error);
    if (!skip_try) counters_.Add(base::Counter::kFlushLockMisses);
    const absl::Time now = absl::Now();
    if (seen != progress) {
      progress = seen;
      deadline = now + patience;
    } else if (now >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "busy: ", shm_path_, ": this commit is in the log, but the connection holding the "
          "flush lock has published nothing for ", absl::FormatDuration(patience),
          " (a process stopped while flushing?); the commit may still become visible and "
          "durable when that flush ends"));
    }
    // Another thread or connection is flushing: sleep until its publish bumps the flush word
    // (every waiter of every process wakes at once), or a flush's time at most.
    index_->WaitWake(shm::WalIndex::Wake::kFlush, seen, kMaxJoinWait);
    counters_.Add(base::Counter::kFlushSleeps);
    counters_.AddDuration(base::Counter::kFlushSleepTime, absl::Now() - now);
    // Z2: unchanged after the sleep (its bound ran out, or a spurious wake): the odd word may
    // be a killed holder's, so the next turn asks the lock byte, which death frees.
    must_try = index_->wake_seq(shm::WalIndex::Wake::kFlush) == seen;
  }
  counters_.Add(base::Counter::kFlushedCommits);
  if (by_others) counters_.Add(base::Counter::kCommitsFlushedByOthers);
  counters_.AddDuration(base::Counter::kFlushWait, absl::Now() - start);
  return SnapshotOf(published, wal2_);
}

absl::Status WalConnection::FlushPendingAsWriter() {
  JKV_DCHECK(writer_.write_locked());
  shm::IndexHeader published;
  if (GroupFlush::ReadPublished(*index_, &published) && published == writer_.header()) {
    return absl::OkStatus();
  }
  const absl::Time deadline = absl::Now() + options_.busy_timeout;
  for (int attempt = 0;; ++attempt) {
    JKV_RETURN_IF_ERROR(LockFlush(deadline));
    flush_.AssertHeld();
    absl::StatusOr<bool> covered =
        FlushLocked(writer_.header(), writer_.epoch(), &published, /*as_writer=*/true);
    flush_.Unlock(*index_);
    JKV_RETURN_IF_ERROR(covered.status());
    if (*covered) return absl::OkStatus();
    // A torn published header under WRITE: a flusher died publishing. This thread holds WRITE,
    // so it repairs it (W6, W9), then flushes again.
    if (attempt > 0) {
      return absl::UnavailableError(absl::StrCat(
          "busy: the wal-index header of ", shm_path_, " stays torn while the writer flushes"));
    }
    JKV_RETURN_IF_ERROR(recovery_
                            .ReadHeaderOrRepair(deadline, /*may_recover=*/true, write_lock_,
                                                recover_lock_, flush_)
                            .status());
  }
}

}  // namespace journalkv::wal
