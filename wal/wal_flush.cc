// WalConnection's group commit (wal_connection.h W12): a commit appended under WRITE waits,
// after WRITE is released, for a flush that covers it; the first waiter to hold FLUSH syncs the
// log through the newest appended commit and publishes it for every commit it covers.
#include <algorithm>
#include <climits>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {
namespace {

using internal::Sleep;

// A wait for another connection's FLUSH looks again after this long at the latest (its holder
// wakes the waiters as it lets go, unless it died).
constexpr absl::Duration kMaxFlushWait = absl::Microseconds(500);
// A flusher lets writers that are appending right now finish and join its flush, for at most
// its last sync's duration within these bounds: waiting longer than a sync takes gains nothing
// (the next flush would have started), and a lone writer, whom no one follows, never waits.
constexpr absl::Duration kMinJoinWait = absl::Microseconds(20);
constexpr absl::Duration kMaxJoinWait = absl::Milliseconds(1);

}  // namespace

bool WalConnection::Covers(const shm::IndexHeader& p, const shm::IndexHeader& h) {
  const int log = static_cast<int>(h.current_log & 1);
  const shm::LogState& mine = h.logs[log];
  const shm::LogState& published = p.logs[log];
  if (published.ckpt_seq == mine.ckpt_seq) return published.mx_frame >= mine.mx_frame;
  // A later generation of that log: it restarted, which it does only once everything in it
  // was published and copied (W12 c).
  return shm::SeqAfter(published.ckpt_seq, mine.ckpt_seq);
}

bool WalConnection::ReadPublishedSpinning(shm::IndexHeader* out) const {
  for (int i = 0; i < internal::kTornHeaderSpins; ++i) {
    if (index_->ReadHeader(out)) return true;
  }
  return false;
}

bool WalConnection::ReadAppended(shm::IndexHeader* out) const {
  for (int i = 0; i < internal::kTornHeaderSpins; ++i) {
    if (index_->ReadAppendedHeader(out)) return true;
  }
  return false;
}

WalConnection::FlushTry WalConnection::TryLockFlush(absl::Status* error) {
  if (!flush_mu_.TryLock()) return FlushTry::kBusyHere;
  absl::StatusOr<bool> locked = index_->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
  if (locked.ok() && *locked) return FlushTry::kLocked;
  if (!locked.ok()) *error = locked.status();
  flush_mu_.Unlock();
  return FlushTry::kBusyElsewhere;
}

absl::Status WalConnection::LockFlush(absl::Time deadline) {
  const absl::Duration patience = internal::FlushWait(options_.busy_timeout);
  deadline = std::max(deadline, absl::Now() + patience);
  flush_mu_.Lock();
  // W14: the holder is flushing (one sync), or dead, which frees the lock, or stopped, which
  // the deadline is for. The deadline counts from the last flush that published.
  uint32_t progress = index_->wake_seq(shm::WalIndex::Wake::kFlush);
  while (true) {
    const uint32_t seen = index_->wake_seq(shm::WalIndex::Wake::kFlush);
    absl::StatusOr<bool> locked =
        index_->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
    if (!locked.ok()) {
      flush_mu_.Unlock();
      return locked.status();
    }
    if (*locked) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (seen != progress) {
      progress = seen;
      deadline = std::max(deadline, now + patience);
    } else if (now >= deadline) {
      flush_mu_.Unlock();
      return absl::UnavailableError(absl::StrCat(
          "busy: ", shm_path_, ": another connection holds the flush lock and has published "
          "nothing for ", absl::FormatDuration(patience), " (a process stopped while flushing?)"));
    }
    index_->WaitWake(shm::WalIndex::Wake::kFlush, seen, kMaxFlushWait);
  }
}

void WalConnection::UnlockFlush() {
  index_->Unlock(shm::ShmLock::kFlush).IgnoreError();  // closing the file drops it anyway
  flush_mu_.Unlock();
  // After the unlock: a waiter whose commit this flush did not cover takes FLUSH when it wakes.
  index_->Bump(shm::WalIndex::Wake::kFlush);
}

absl::StatusOr<bool> WalConnection::FlushLocked(const shm::IndexHeader& target, uint32_t epoch,
                                                shm::IndexHeader* published, bool as_writer) {
  // W13 b: under FLUSH no failure is recorded and no reset made but by this thread, so a
  // commit not dropped now is not dropped until this flush ends.
  JKV_RETURN_IF_ERROR(CommitDropped(target, epoch));
  // W12 h: a header that stays torn is a publisher between its copies, slow or dead. Nothing
  // is published over it: a publisher that wrote copy B has its publish completed from B (the
  // newest; no lock needed), and one that died writing B is left to a repair under WRITE (the
  // caller's, W6).
  if (!ReadPublishedSpinning(published) &&
      !(index_->CompletePublishFromB() && ReadPublishedSpinning(published))) {
    return false;
  }
  if (Covers(*published, target)) return true;
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
  if (!as_writer) WaitForAppenders(*published);
  shm::IndexHeader appended;
  if (!ReadAppended(&appended) || !Covers(appended, target)) appended = target;
  const int log = static_cast<int>(appended.current_log & 1);
  if (MaintenanceSync() != SyncLevel::kOff) {
    // W1, W12, D1: every frame up to the newest appended commit is durable before it is
    // published, for every commit this flush covers, whatever this connection's own level:
    // a FULL commit pending under a NORMAL or OFF one is made durable by their flush too (the
    // log is preallocated: data only). With every connection at OFF nobody asked for it.
    const absl::Time sync_start = absl::Now();
    JKV_ASSIGN_OR_RETURN(const bool synced,
                         MakeLogDurable(log, appended.logs[log], "W1 log"));
    if (synced) {
      last_sync_ns_.store(absl::ToInt64Nanoseconds(absl::Now() - sync_start),
                          std::memory_order_relaxed);
    }
  }
  CallWalHook("flush:synced");
  // W12 h: only over an older header, read again now.
  shm::IndexHeader now;
  if (!ReadPublishedSpinning(&now) &&
      !(index_->CompletePublishFromB() && ReadPublishedSpinning(&now))) {
    return false;
  }
  if (Covers(now, appended)) {
    *published = now;
    return true;
  }
  index_->PublishHeader(appended);  // W2: every entry up to it is in place (W12 a)
  last_group_.store(appended.change - published->change, std::memory_order_relaxed);
  *published = appended;
  counters_.Add(base::Counter::kGroupFlushes);
  return true;
}

// Group commit's convoy: without this, the writers a flush acknowledges append during the
// next flush and only the one after covers them, so groups alternate between the few that
// were appending when a flush began and the rest (1.5 commits a flush with 4 writer threads,
// measured). So a flush waits until as many commits are pending as its connection's last
// flush covered (those writers are on their way back: acknowledged, beginning their next
// commit), or while a writer of this connection is appending or waiting to, or one of another
// connection sleeps waiting for WRITE, for at most a sync's duration. A lone
// writer's last group is 1, its own commit: it never waits. A group that shrank costs one wait.
void WalConnection::WaitForAppenders(const shm::IndexHeader& published) {
  const uint32_t want = std::max<uint32_t>(1, last_group_.load(std::memory_order_relaxed));
  const absl::Duration cap = std::clamp(
      absl::Nanoseconds(last_sync_ns_.load(std::memory_order_relaxed)), kMinJoinWait,
      kMaxJoinWait);
  const absl::Time deadline = absl::Now() + cap;
  // Sleepers on WRITE that a whole wait showed to be no one (a process that died asleep keeps
  // its count) are not waited for again.
  uint32_t ignored = ignored_write_waiters_.load(std::memory_order_relaxed);
  uint32_t pending = 0;
  uint32_t first_pending = UINT32_MAX;
  while (absl::Now() < deadline) {
    shm::IndexHeader a;
    const bool read = index_->ReadAppendedHeader(&a);
    pending = read ? a.change - published.change : 0;
    if (first_pending == UINT32_MAX) first_pending = pending;
    const uint32_t sleepers = index_->wake_waiters(shm::WalIndex::Wake::kWrite);
    if (sleepers < ignored) ignored = sleepers;
    if (read && pending >= want) {
      // Memory reads only: a lone writer's flush makes no system call here.
      const bool appending = write_locked() ||
                             waiting_writers_.load(std::memory_order_acquire) > 0 ||
                             sleepers > ignored;
      if (!appending) break;  // the group is whole and no one else is on the way
    }
    // Yield, not sleep: the writers waited for are runnable and need the CPU, and a sleep's
    // real length (tens of microseconds of timer slack) is most of what an append takes.
    CallWalHook("wait");
    std::this_thread::yield();
  }
  if (absl::Now() >= deadline && pending == first_pending) {
    ignored = index_->wake_waiters(shm::WalIndex::Wake::kWrite);  // no one came
  }
  ignored_write_waiters_.store(ignored, std::memory_order_relaxed);
}

absl::StatusOr<WalSnapshot> WalConnection::AwaitDurable(const CommitTicket& ticket) {
  if (ticket.published) return SnapshotOf(ticket.header);
  CallWalHook("await:start");
  const absl::Time start = absl::Now();
  // W14: a flush that publishes nothing for the busy timeout is a flusher that stopped.
  const absl::Duration patience = internal::FlushWait(options_.busy_timeout);
  absl::Time deadline = start + patience;
  uint32_t progress = index_->wake_seq(shm::WalIndex::Wake::kFlush);
  shm::IndexHeader published;
  bool by_others = true;
  while (true) {
    // W13 d: asked before the published header is trusted, and again after it (a failure, a
    // reset and a later commit over the same frames may all fall in between).
    JKV_RETURN_IF_ERROR(CommitDropped(ticket.header, ticket.epoch));
    if (index_->ReadHeader(&published) && Covers(published, ticket.header)) {
      JKV_RETURN_IF_ERROR(CommitDropped(ticket.header, ticket.epoch));
      break;
    }
    const uint32_t seen = index_->wake_seq(shm::WalIndex::Wake::kFlush);
    absl::Status error;
    if (TryLockFlush(&error) == FlushTry::kLocked) {
      absl::StatusOr<bool> covered =
          FlushLocked(ticket.header, ticket.epoch, &published, /*as_writer=*/false);
      UnlockFlush();
      JKV_RETURN_IF_ERROR(covered.status());
      if (*covered) {
        by_others = false;
        break;
      }
      // The published header stays torn: repaired (W6) by this thread if no one else does.
      JKV_RETURN_IF_ERROR(ReadHeaderOrRecover(deadline, /*may_recover=*/true).status());
      continue;
    }
    JKV_RETURN_IF_ERROR(error);
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
  }
  counters_.Add(base::Counter::kFlushedCommits);
  if (by_others) counters_.Add(base::Counter::kCommitsFlushedByOthers);
  counters_.AddDuration(base::Counter::kFlushWait, absl::Now() - start);
  return SnapshotOf(published);
}

absl::Status WalConnection::FlushPendingAsWriter() {
  JKV_DCHECK(write_locked());
  shm::IndexHeader published;
  if (ReadPublishedSpinning(&published) && published == writer_header_) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + options_.busy_timeout;
  for (int attempt = 0;; ++attempt) {
    JKV_RETURN_IF_ERROR(LockFlush(deadline));
    absl::StatusOr<bool> covered =
        FlushLocked(writer_header_, epoch_, &published, /*as_writer=*/true);
    UnlockFlush();
    JKV_RETURN_IF_ERROR(covered.status());
    if (*covered) return absl::OkStatus();
    // A torn published header under WRITE: a flusher died publishing. This thread holds WRITE,
    // so it repairs it (W6, W9), then flushes again.
    if (attempt > 0) {
      return absl::UnavailableError(absl::StrCat(
          "busy: the wal-index header of ", shm_path_, " stays torn while the writer flushes"));
    }
    JKV_RETURN_IF_ERROR(ReadHeaderOrRecover(deadline, /*may_recover=*/true).status());
  }
}

}  // namespace journalkv::wal
