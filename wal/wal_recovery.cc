// WalConnection's index from the log(s): the rebuild under WRITE, RECOVER and FLUSH (W6), the
// repair of a torn header, and reading the index header until whole or repaired (W9). The
// scans, the entries, the appended header's repairs and the damage checks are IndexRecovery's
// (wal/index_recovery.h).
#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;
using internal::Sleep;

// W6. Rebuilds the index from the log(s): the valid prefix of each log is the truth, and in
// WAL2 their order is their generations' (V1).
absl::Status WalConnection::RecoverIndex() {
  JKV_ASSIGN_OR_RETURN(auto scans, recovery_.ScanLogs());
  shm::IndexHeader old;
  const bool had_header = index_->ReadHeader(&old);
  shm::IndexHeader h = recovery_.HeaderFromScans(scans, had_header ? &old : nullptr);
  bool found = false;
  for (int l = 0; l < nlogs_; ++l) {
    if (scans[l].mx_frame == 0) continue;
    found = true;
    if (durability_.MaintenanceSync() >= SyncLevel::kFull) {
      // W6, D1: frames a crashed writer wrote but never synced are about to be published: made
      // durable first when any connection of the -shm is at FULL or EXTRA (whatever this
      // one's level: they may be a FULL writer's pending commits), so that what readers see
      // from now on survives a power loss. synced_through then says so (D2).
      JKV_RETURN_IF_ERROR(
          durability_.MakeLogDurable(flush_, l, h.logs[l], "W6 log at recovery").status());
    }
  }
  // A fresh change word, so that no connection mistakes the rebuilt state for one it cached.
  h.change = had_header ? old.change + 1 : static_cast<uint32_t>(internal::RandomId());
  // The entries, and what was copied forgotten, before the header (W8).
  JKV_RETURN_IF_ERROR(recovery_.RebuildEntries(scans, h, write_lock_, recover_lock_));
  shm::IndexHeader appended;
  const bool had_appended = had_header && GroupFlush::ReadAppended(*index_, &appended);
  index_->WriteHeader(h);
  if (had_header && (!had_appended || !GroupFlush::Covers(h, appended))) {
    // W13: commits appended and waiting for their flush that the log's valid prefix does not
    // hold are gone; their waiters must fail, not be acknowledged by a later commit that
    // reaches the same frames.
    durability_.DropUnpublished(
        write_lock_, flush_, h,
        had_appended ? std::optional<shm::IndexHeader>(appended) : std::nullopt);
  }
  if (found) counters_.Add(base::Counter::kRecoveries);
  return absl::OkStatus();
}

// W6. A writer that died publishing left copy B (written first) whole and copy A torn, or B
// torn and A whole: the whole one is the published state, and every index entry up to its
// mx_frame is in place (W2), so republishing it repairs the index without touching the entries
// that other connections' open read transactions are looking up. Only when neither copy checks
// out (the -shm was damaged otherwise) is the index rebuilt from the log.
absl::Status WalConnection::RepairHeader() {
  shm::IndexHeader h;
  if (index_->ReadHeaderCopy(1, &h) || index_->ReadHeaderCopy(0, &h)) {
    ++h.change;
    // Commits appended past it whose flush is pending (W12) stay: their frames and entries
    // are whole (the appended header is written last, under WRITE), and the next flush
    // publishes them. A torn appended header is repaired from its whole copy (W12 e); with
    // neither copy whole, what is past the published header goes.
    shm::IndexHeader a;
    const int cur = CurrentLog(h, wal2_);
    const bool appended_whole = recovery_.RepairAppended(&a, write_lock_);
    const bool pending = appended_whole && a.current_log == h.current_log &&
                         a.logs[cur].ckpt_seq == h.logs[cur].ckpt_seq &&
                         a.logs[cur].mx_frame > h.logs[cur].mx_frame;
    if (pending) {
      index_->PublishHeader(h);
    } else {
      index_->WriteHeader(h);
    }
    for (int l = 0; l < nlogs_; ++l) {
      // A dead writer's unpublished (and unappended) entries.
      const uint32_t keep = pending && l == cur ? a.logs[l].mx_frame : h.logs[l].mx_frame;
      JKV_RETURN_IF_ERROR(index_->Truncate(l, keep));
    }
    // W13: with no whole appended copy, commits appended past `h` are gone: their waiters fail.
    if (!appended_whole) durability_.DropUnpublished(write_lock_, flush_, h, std::nullopt);
    return absl::OkStatus();
  }
  return RecoverIndex();
}

// Reads the published header; a header that stays torn means a process died publishing it,
// and the index is rebuilt (W6) unless this connection's own writer is active.
absl::StatusOr<shm::IndexHeader> WalConnection::ReadHeaderOrRecover(absl::Time deadline,
                                                                  bool may_recover) {
  shm::IndexHeader h;
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    if (ReadWholeHeader(*index_, HeaderCopy::kPublished, &h)) return h;
    // W9: this connection's writer thread repairs under the WRITE it holds; another thread
    // repairs only when this connection holds no WRITE, taking it under the role's mutex (the
    // lock is granted to every thread of the File, so it tells nothing about this
    // connection's own writer); while this connection's writer holds WRITE it waits.
    const bool own_write = writer_.OnWriterThread();
    if (own_write || may_recover) {
      absl::Status s;
      bool repaired = false;
      {
        std::optional<base::MutexLock> role;
        if (!own_write) role.emplace(writer_.role_mu());
        bool write = own_write;
        if (!own_write && !writer_.write_locked()) {
          JKV_ASSIGN_OR_RETURN(write,
                               index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
        }
        if (write) {
          write_lock_.AssumeHeld();  // this thread's writer's, or taken just above
          JKV_ASSIGN_OR_RETURN(bool r,
                               index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
          // W12 d: and FLUSH, without waiting: a flusher holding it is publishing (the torn
          // copies are its own), and its publish ends the tear.
          absl::Status flush_error;
          if (r && flush_.TryLock(*index_, &flush_error)) {
            recover_lock_.AssumeHeld();  // r: taken just above
            if (!index_->ReadHeader(&h)) s = RepairHeader();
            flush_.Unlock(*index_);
            repaired = true;
          }
          if (r) index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
          if (!own_write) index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
          if (s.ok()) s = flush_error;
          if (!r) repaired = true;  // another repairs: look again at once
        }
      }
      JKV_RETURN_IF_ERROR(s);
      if (repaired) continue;
    }
    if (wait.Expired()) {
      return absl::UnavailableError(
          absl::StrCat("busy: the wal-index header of ", shm_path_, " is being rewritten"));
    }
    Sleep(wait);
  }
}

}  // namespace journalkv::wal
