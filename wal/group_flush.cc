// wal::GroupFlush (group_flush.h): FLUSH, the header reads a flush compares, its publish, and
// the wait that lets the writers appending now join a flush.
#include "wal/group_flush.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "shm/pins.h"
#include "wal/index_recovery.h"
#include "wal/wal_connection.h"  // CallWalHook
#include "wal/wal_internal.h"

namespace journalkv::wal {
namespace {

// A wait for another connection's FLUSH looks again after this long at the latest (its holder
// wakes the waiters as it lets go, unless it died).
constexpr absl::Duration kMaxFlushWait = absl::Microseconds(500);
// A flusher lets writers that are appending right now finish and join its flush, for at most
// its last sync's duration within these bounds: waiting longer than a sync takes gains nothing
// (the next flush would have started), and a lone writer, whom no one follows, never waits.
constexpr absl::Duration kMinJoinWait = absl::Microseconds(20);
constexpr absl::Duration kMaxJoinWait = absl::Milliseconds(1);

}  // namespace

bool GroupFlush::Covers(const shm::IndexHeader& p, const shm::IndexHeader& h) {
  const int log = static_cast<int>(h.current_log & 1);
  const shm::LogState& mine = h.logs[log];
  const shm::LogState& published = p.logs[log];
  if (published.ckpt_seq == mine.ckpt_seq) return published.mx_frame >= mine.mx_frame;
  // A later generation of that log: it restarted, which it does only once everything in it
  // was published and copied (W12 c).
  return shm::SeqAfter(published.ckpt_seq, mine.ckpt_seq);
}

bool GroupFlush::ReadPublished(const shm::WalIndex& index, shm::IndexHeader* out) {
  return ReadWholeHeader(index, HeaderCopy::kPublished, out);
}

bool GroupFlush::ReadAppended(const shm::WalIndex& index, shm::IndexHeader* out) {
  return ReadWholeHeader(index, HeaderCopy::kAppended, out);
}

bool GroupFlush::TryLock(shm::WalIndex& index, absl::Status* error) {
  if (!mu_.TryLock()) return false;  // another thread of this connection holds FLUSH
  absl::StatusOr<bool> locked = index.TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
  if (locked.ok() && *locked) {
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);  // F1
    index.MarkHeld(shm::WalIndex::Wake::kFlush);                            // Z1
    return true;
  }
  if (!locked.ok()) *error = locked.status();
  mu_.Unlock();  // another connection holds FLUSH: neither lock (F1)
  return false;
}

absl::Status GroupFlush::Lock(shm::WalIndex& index, absl::Time deadline,
                              absl::Duration patience, const std::string& what) {
  deadline = std::max(deadline, absl::Now() + patience);
  mu_.Lock();
  // W14: the holder is flushing (one sync), or dead, which frees the lock, or stopped, which
  // the deadline is for. The deadline counts from the last flush that published.
  uint32_t progress = index.wake_seq(shm::WalIndex::Wake::kFlush);
  while (true) {
    const uint32_t seen = index.wake_seq(shm::WalIndex::Wake::kFlush);
    absl::StatusOr<bool> locked = index.TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
    if (!locked.ok()) {
      mu_.Unlock();
      return locked.status();
    }
    if (*locked) {
      holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);  // F1
      index.MarkHeld(shm::WalIndex::Wake::kFlush);                            // Z1
      return absl::OkStatus();
    }
    const absl::Time now = absl::Now();
    if (seen != progress) {
      progress = seen;
      deadline = std::max(deadline, now + patience);
    } else if (now >= deadline) {
      mu_.Unlock();
      return absl::UnavailableError(absl::StrCat(
          "busy: ", what, ": another connection holds the flush lock and has published "
          "nothing for ", absl::FormatDuration(patience), " (a process stopped while flushing?)"));
    }
    index.WaitWake(shm::WalIndex::Wake::kFlush, seen, kMaxFlushWait);
  }
}

void GroupFlush::Unlock(shm::WalIndex& index) {
  JKV_DCHECK(HeldHere());  // F1: only the holder lets go
  holder_.store(std::thread::id(), std::memory_order_relaxed);
  // Z1: even before either lock is let go; a committer that reads it even from here tries the
  // lock byte, and may miss it until the unlock below.
  index.MarkReleasing(shm::WalIndex::Wake::kFlush);
  CallWalHook("flush:releasing");
  index.Unlock(shm::ShmLock::kFlush).IgnoreError();  // closing the file drops it anyway
  mu_.Unlock();
  // After the unlock (Z1, Z2): a waiter whose commit this flush did not cover takes FLUSH when
  // it wakes. +2 keeps the parity: a taker may have marked it held meanwhile.
  index.Bump(shm::WalIndex::Wake::kFlush, 2);
}

void GroupFlush::Publish(shm::WalIndex& index, const shm::IndexHeader& published,
                         const shm::IndexHeader& appended) {
  JKV_DCHECK(HeldHere());  // F1
  index.PublishHeader(appended);  // W2: every entry up to it is in place (W12 a)
  last_group_.store(appended.change - published.change, std::memory_order_relaxed);
  CheckInvariants(index);
}

// Group commit's convoy: without this, the writers a flush acknowledges append during the
// next flush and only the one after covers them, so groups alternate between the few that
// were appending when a flush began and the rest (1.5 commits a flush with 4 writer threads,
// measured). So a flush waits until as many commits are pending as its connection's last
// flush covered (those writers are on their way back: acknowledged, beginning their next
// commit), or while a writer of this connection is appending or waiting to, or one of another
// connection sleeps waiting for WRITE, for at most a sync's duration. A lone
// writer's last group is 1, its own commit: it never waits. A group that shrank costs one wait.
void GroupFlush::WaitForAppenders(const shm::WalIndex& index, const shm::IndexHeader& published,
                                  absl::FunctionRef<bool()> appending_here,
                                  absl::FunctionRef<void()> on_wait) {
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
    const bool read = index.ReadAppendedHeader(&a);
    pending = read ? a.change - published.change : 0;
    if (first_pending == UINT32_MAX) first_pending = pending;
    const uint32_t sleepers = index.wake_waiters(shm::WalIndex::Wake::kWrite);
    if (sleepers < ignored) ignored = sleepers;
    if (read && pending >= want) {
      // Memory reads only: a lone writer's flush makes no system call here.
      const bool appending = appending_here() ||
                             waiting_writers_.load(std::memory_order_acquire) > 0 ||
                             sleepers > ignored;
      if (!appending) break;  // the group is whole and no one else is on the way
    }
    // Yield, not sleep: the writers waited for are runnable and need the CPU, and a sleep's
    // real length (tens of microseconds of timer slack) is most of what an append takes.
    on_wait();
    std::this_thread::yield();
  }
  if (absl::Now() >= deadline && pending == first_pending) {
    ignored = index.wake_waiters(shm::WalIndex::Wake::kWrite);  // no one came
  }
  ignored_write_waiters_.store(ignored, std::memory_order_relaxed);
}

void GroupFlush::CheckInvariants(const shm::WalIndex& index) const {
  if (!JKV_DCHECK_IS_ON) return;
  JKV_DCHECK(HeldHere());                                                     // F1
  shm::IndexHeader published;
  shm::IndexHeader appended;
  if (index.ReadHeader(&published) && index.ReadAppendedHeader(&appended)) {
    JKV_DCHECK(Covers(appended, published));                                  // F2
  }
  JKV_DCHECK(last_group_.load(std::memory_order_relaxed) >= 1);               // F3
  JKV_DCHECK(waiting_writers_.load(std::memory_order_relaxed) >= 0);          // F4
}

}  // namespace journalkv::wal
