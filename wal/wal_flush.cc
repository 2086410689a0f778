// WalConnection's group commit (wal_connection.h W12): a commit appended under WRITE waits,
// after WRITE is released, for a flush that covers it; the first waiter to hold FLUSH syncs the
// log through the newest appended commit and publishes it for every commit it covers.
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

// A commit whose flush another holder is running waits at most this long between looks: a
// flush is one fdatasync (about 100 us here), and a waiter that sleeps much past its end only
// adds to its commit's latency. (Threads of the connection that runs the flush wait on
// flush_mu_ instead, and wake as it ends.)
constexpr absl::Duration kMaxFlushWait = absl::Microseconds(100);
constexpr absl::Duration kFirstFlushWait = absl::Microseconds(10);

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

bool WalConnection::TryLockFlush(absl::Status* error) {
  if (!flush_mu_.TryLock()) return false;
  absl::StatusOr<bool> locked = index_->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
  if (locked.ok() && *locked) return true;
  if (!locked.ok()) *error = locked.status();
  flush_mu_.Unlock();
  return false;
}

absl::Status WalConnection::LockFlush() {
  flush_mu_.Lock();
  // No deadline: the holder is flushing (one sync), or dead, which frees the lock.
  base::Backoff wait(absl::InfiniteFuture(), kMaxFlushWait, kFirstFlushWait);
  while (true) {
    absl::StatusOr<bool> locked =
        index_->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
    if (!locked.ok()) {
      flush_mu_.Unlock();
      return locked.status();
    }
    if (*locked) return absl::OkStatus();
    Sleep(wait);
  }
}

void WalConnection::UnlockFlush() {
  index_->Unlock(shm::ShmLock::kFlush).IgnoreError();  // closing the file drops it anyway
  flush_mu_.Unlock();
}

absl::Status WalConnection::FlushLocked(const shm::IndexHeader& target,
                                        shm::IndexHeader* published) {
  if (ReadPublishedSpinning(published) && Covers(*published, target)) return absl::OkStatus();
  // The newest commit appended. A writer may be writing the appended header right now (under
  // WRITE, which this flush does not hold): the copies agree again within nanoseconds. A
  // writer killed between them leaves them torn until the next writer repairs them; then this
  // flush covers `target`, which was appended whole.
  shm::IndexHeader appended;
  if (!ReadAppended(&appended) || !Covers(appended, target)) appended = target;
  const int log = static_cast<int>(appended.current_log & 1);
  if (options_.sync != SyncLevel::kOff) {
    // W1, W12: every frame up to the newest appended commit is durable before it is
    // published, for every commit this flush covers (the log is preallocated: data only).
    // At OFF a connection flushes only to publish other connections' pending commits, and
    // OFF promises nothing of a power loss.
    JKV_RETURN_IF_ERROR(vfs::SyncFile(logs_[log]->file(), vfs::SyncKind::kData, "W1 log"));
  }
  CallWalHook("flush:synced");
  index_->PublishHeader(appended);  // W2: every entry up to it is in place (W12 a)
  *published = appended;
  base::MutexLock lock(&stats_mu_);
  ++stats_.group_flushes;
  return absl::OkStatus();
}

absl::StatusOr<WalSnapshot> WalConnection::AwaitDurable(const CommitTicket& ticket) {
  if (ticket.published) return SnapshotOf(ticket.header);
  const absl::Time start = absl::Now();
  base::Backoff wait(absl::InfiniteFuture(), kMaxFlushWait, kFirstFlushWait);
  shm::IndexHeader published;
  bool by_others = true;
  while (true) {
    if (index_->ReadHeader(&published) && Covers(published, ticket.header)) break;
    absl::Status error;
    if (TryLockFlush(&error)) {
      const absl::Status s = FlushLocked(ticket.header, &published);
      UnlockFlush();
      JKV_RETURN_IF_ERROR(s);
      by_others = false;
      break;
    }
    JKV_RETURN_IF_ERROR(error);
    // Another thread of this connection is flushing: wait for it on flush_mu_, which wakes
    // this thread as it ends; another connection is: look again shortly.
    if (flush_mu_.TryLock()) {
      flush_mu_.Unlock();
      Sleep(wait);
    } else {
      base::MutexLock wait_for_it(&flush_mu_);
    }
  }
  base::MutexLock lock(&stats_mu_);
  ++stats_.flushed_commits;
  if (by_others) ++stats_.commits_flushed_by_others;
  stats_.flush_wait += absl::Now() - start;
  return SnapshotOf(published);
}

absl::Status WalConnection::FlushPendingAsWriter() {
  JKV_DCHECK(write_locked());
  shm::IndexHeader published;
  if (ReadPublishedSpinning(&published) && published == writer_header_) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(LockFlush());
  const absl::Status s = FlushLocked(writer_header_, &published);
  UnlockFlush();
  return s;
}

}  // namespace journalkv::wal
