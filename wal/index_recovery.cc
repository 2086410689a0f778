// wal::IndexRecovery (wal/index_recovery.h): the logs' scans and the header describing them
// (V1), the index entries rebuilt from them (W6), and the appended header's repairs and checks
// (W12 e, f; IndexDamage); the rebuild under WRITE, RECOVER and FLUSH (W6), the repair of a torn
// header, and reading the published header until whole or repaired (W9).
#include "wal/index_recovery.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/checkpoint_copy.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"
#include "wal/writer_cursor.h"

namespace journalkv::wal {

bool ReadWholeHeader(const shm::WalIndex& index, HeaderCopy which, shm::IndexHeader* out) {
  for (int i = 0; i < internal::kTornHeaderSpins; ++i) {
    if (which == HeaderCopy::kPublished ? index.ReadHeader(out) : index.ReadAppendedHeader(out)) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::array<ScanResult, 2>> IndexRecovery::ScanLogs() const {
  std::array<ScanResult, 2> scans;  // no log file (a read-only connection found none): empty
  for (int l = 0; l < nlogs_; ++l) {
    const std::unique_ptr<WalLog>& log = (*env_.logs)[l];
    if (log != nullptr) {
      JKV_ASSIGN_OR_RETURN(scans[l], log->Scan(env_.page_size, shm::MaxLogFrames()));
    }
  }
  return scans;
}

shm::IndexHeader IndexRecovery::HeaderFromScans(const std::array<ScanResult, 2>& scans,
                                                const shm::IndexHeader* old) const {
  shm::IndexHeader h;
  h.page_size = env_.page_size;
  for (int l = 0; l < nlogs_; ++l) {
    const ScanResult& scan = scans[l];
    if (scan.header_valid) {
      // Generations are 31 bits (shm::SeqAfter); a foreign top bit is dropped.
      h.logs[l] = {scan.header.ckpt_seq & 0x7fffffffu, scan.header.salt1, scan.header.salt2,
                   scan.mx_frame, scan.last_checksum};
    } else {
      // No usable log: the next writer starts a generation after the highest one seen.
      h.logs[l] = {old != nullptr ? old->logs[l].ckpt_seq : internal::FirstGeneration(), 0, 0,
                   0, 0};
    }
  }
  // V1: the later valid generation is the current log (a log with no valid header is empty).
  h.current_log = 0;
  if (env_.wal2 && scans[1].header_valid &&
      (!scans[0].header_valid || shm::SeqAfter(h.logs[1].ckpt_seq, h.logs[0].ckpt_seq))) {
    h.current_log = 1;
  }
  const int cur = static_cast<int>(h.current_log);
  const int other = 1 - cur;
  h.page_count = scans[cur].mx_frame > 0                    ? scans[cur].db_size
                 : env_.wal2 && scans[other].mx_frame > 0 ? scans[other].db_size
                                                            : 0;
  return h;
}

absl::Status IndexRecovery::RebuildEntries(const std::array<ScanResult, 2>& scans,
                                           const shm::IndexHeader& h,
                                           const LockByte& /*write*/,
                                           const LockByte& /*recover*/) {
  shm::WalIndex& index = this->index();
  for (int l = 0; l < nlogs_; ++l) {
    JKV_RETURN_IF_ERROR(index.Truncate(l, 0));
    for (uint32_t f = 1; f <= scans[l].mx_frame; ++f) {
      JKV_RETURN_IF_ERROR(index.Append(l, f, scans[l].pages[f - 1]));
    }
  }
  // Copying again is harmless; what was copied is unknown: the file may hold page versions of
  // any frame of the rebuilt logs (C3), so written_through and the target cover them whole
  // (C4), and the backfill starts again from 0. All of it before the header (W8): a reader of
  // an older header of the same generation then finds the target past its snapshot.
  for (int l = 0; l < nlogs_; ++l) {
    ForgetCopies(index, l, h.logs[l].ckpt_seq, h.logs[l].mx_frame);
  }
  return absl::OkStatus();
}

// W12 e. Under WRITE nobody else writes the appended header, so copies that stay torn are a
// writer that died writing them. D, written first, is whole once that writer finished it: its
// commit's frames and entries were in place before (W12 a), and the next flush publishes it,
// never acknowledged, as it would have been. D torn: C still holds the header before, whole.
// Either keeps every commit appended earlier whose writer waits for its flush; the entries and
// frames the index needs stay untouched, so open read transactions go on undisturbed. (It was
// once taken for damage, and the rebuild that followed (W6) emptied the hash tables under
// readers, who then read pages from the database file: wal_multiprocess_test's readers saw
// their snapshots change; wal_damaged_index_test's ATornAppendedHeaderIsRepairedNotRebuilt.)
bool IndexRecovery::RepairAppended(shm::IndexHeader* out, const LockByte& /*write*/) {
  shm::WalIndex& index = this->index();
  if (ReadWholeHeader(index, HeaderCopy::kAppended, out)) return true;
  if (!index.ReadAppendedHeaderCopy(1, out) && !index.ReadAppendedHeaderCopy(0, out)) {
    return false;
  }
  CallWalHook("repair:appended");
  index.WriteAppendedHeader(*out);
  return true;
}

bool IndexRecovery::ExtendsPublished(const shm::IndexHeader& a,
                                     const shm::IndexHeader& published) const {
  if (a.current_log != published.current_log) return false;
  const int cur = CurrentLog(a, env_.wal2);
  for (int l = 0; l < nlogs_; ++l) {
    const shm::LogState& mine = a.logs[l];
    const shm::LogState& theirs = published.logs[l];
    // Pending commits (W12) only add frames to the current log.
    if (l == cur ? mine.ckpt_seq != theirs.ckpt_seq || mine.mx_frame < theirs.mx_frame
                 : mine != theirs) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<shm::IndexHeader> IndexRecovery::AppendedOrDamage(
    const shm::IndexHeader& published, const LockByte& write) {
  const auto damaged = [&](auto... what) {
    return absl::DataLossError(
        absl::StrCat(*env_.shm_path, ": the wal-index is damaged: ", what...));
  };
  shm::IndexHeader a;
  if (!RepairAppended(&a, write)) return damaged("both copies of its appended header are damaged");
  if (a.page_size != published.page_size) {
    return damaged("its appended header names page size ", a.page_size, ", the published one ",
                   published.page_size);
  }
  if (!ExtendsPublished(a, published)) {
    // W12 f: a header write cut between its halves (WriteHeader: appended, then published)
    // by a process that died there: the published header is the state (W8: an old generation
    // whose backfill may be cleared), and nothing past it is pending (a restart and a switch
    // only happen with nothing pending, W12 c).
    CallWalHook("repair:appended");
    index().WriteAppendedHeader(published);
    a = published;
  }
  JKV_RETURN_IF_ERROR(IndexDamage(a, write));
  return a;
}

absl::Status IndexRecovery::IndexDamage(const shm::IndexHeader& h,
                                        const LockByte& /*write*/) {
  const auto damaged = [&](auto... what) {
    return absl::DataLossError(
        absl::StrCat(*env_.shm_path, ": the wal-index is damaged: ", what...));
  };
  shm::WalIndex& index = this->index();
  for (int l = 0; l < nlogs_; ++l) {
    if (index.backfill(l) > h.logs[l].mx_frame) {
      return damaged("log ", l, "'s backfill ", index.backfill(l), " is past its last frame ",
                     h.logs[l].mx_frame);
    }
  }
  const int cur = CurrentLog(h, env_.wal2);
  const shm::LogState& c = h.logs[cur];
  const std::unique_ptr<WalLog>& log = (*env_.logs)[cur];
  if (c.mx_frame == 0 || log == nullptr || env_.writer->Checked(h.change)) {
    return absl::OkStatus();
  }
  // One small read per transaction that follows another connection's (or the first one):
  // the frame the next append chains from.
  absl::StatusOr<FrameHeader> last = log->ReadFrameHeader(c.mx_frame, env_.page_size);
  if (absl::IsDataLoss(last.status())) return damaged(last.status().message());  // cut short
  JKV_RETURN_IF_ERROR(last.status());
  if (last->salt1 != c.salt1 || last->salt2 != c.salt2 || last->db_size == 0 ||
      last->checksum != c.last_checksum) {
    return damaged("its last frame ", c.mx_frame, " of ", log->path(),
                   " is not the commit the header describes");
  }
  env_.writer->NoteChecked(h.change);
  return absl::OkStatus();
}

// W6. Rebuilds the index from the log(s): the valid prefix of each log is the truth, and in
// WAL2 their order is their generations' (V1).
absl::Status IndexRecovery::RecoverIndex(const LockByte& write, const LockByte& recover,
                                         GroupFlush& flush) {
  JKV_ASSIGN_OR_RETURN(auto scans, ScanLogs());
  shm::IndexHeader old;
  const bool had_header = index().ReadHeader(&old);
  shm::IndexHeader h = HeaderFromScans(scans, had_header ? &old : nullptr);
  bool found = false;
  for (int l = 0; l < nlogs_; ++l) {
    if (scans[l].mx_frame == 0) continue;
    found = true;
    if (env_.durability->MaintenanceSync() >= SyncLevel::kFull) {
      // W6, D1: frames a crashed writer wrote but never synced are about to be published: made
      // durable first when any connection of the -shm is at FULL or EXTRA (whatever this
      // one's level: they may be a FULL writer's pending commits), so that what readers see
      // from now on survives a power loss. synced_through then says so (D2).
      JKV_RETURN_IF_ERROR(
          env_.durability->MakeLogDurable(flush, l, h.logs[l], "W6 log at recovery").status());
    }
  }
  // A fresh change word, so that no connection mistakes the rebuilt state for one it cached.
  h.change = had_header ? old.change + 1 : static_cast<uint32_t>(internal::RandomId());
  // The entries, and what was copied forgotten, before the header (W8).
  JKV_RETURN_IF_ERROR(RebuildEntries(scans, h, write, recover));
  shm::IndexHeader appended;
  const bool had_appended = had_header && GroupFlush::ReadAppended(index(), &appended);
  index().WriteHeader(h);
  if (had_header && (!had_appended || !GroupFlush::Covers(h, appended))) {
    // W13: commits appended and waiting for their flush that the log's valid prefix does not
    // hold are gone; their waiters must fail, not be acknowledged by a later commit that
    // reaches the same frames.
    env_.durability->DropUnpublished(
        write, flush, h,
        had_appended ? std::optional<shm::IndexHeader>(appended) : std::nullopt);
  }
  if (found) env_.counters->Add(base::Counter::kRecoveries);
  CheckInvariants(scans, h);
  return absl::OkStatus();
}

void IndexRecovery::CheckInvariants([[maybe_unused]] const std::array<ScanResult, 2>& scans,
                                    [[maybe_unused]] const shm::IndexHeader& h) const {
#ifndef NDEBUG
  shm::WalIndex& index = this->index();
  shm::IndexHeader published;
  JKV_DCHECK(index.ReadHeader(&published) && published == h);  // W6: the scans' header
  for (int l = 0; l < nlogs_; ++l) {
    JKV_DCHECK(h.logs[l].mx_frame == scans[l].mx_frame);
    JKV_DCHECK(index.backfill(l) == 0);  // nothing known copied
    const uint32_t mx = h.logs[l].mx_frame;
    // Every frame with the page the log holds there (W2), and no entry past the last one (looked
    // at only where its block is mapped already: a look never grows the -shm).
    const uint32_t last = mx % shm::kFramesPerBlock != 0 ? mx + 1 : mx;
    for (uint32_t f = 1; f <= last; ++f) {
      absl::StatusOr<uint32_t> page = index.PageOfFrame(l, f);
      JKV_DCHECK(page.ok() && *page == (f <= mx ? scans[l].pages[f - 1] : 0));
    }
  }
#endif
}

// W6. A writer that died publishing left copy B (written first) whole and copy A torn, or B
// torn and A whole: the whole one is the published state, and every index entry up to its
// mx_frame is in place (W2), so republishing it repairs the index without touching the entries
// that other connections' open read transactions are looking up. Only when neither copy checks
// out (the -shm was damaged otherwise) is the index rebuilt from the log.
absl::Status IndexRecovery::RepairHeader(const LockByte& write, const LockByte& recover,
                                         GroupFlush& flush) {
  shm::IndexHeader h;
  if (index().ReadHeaderCopy(1, &h) || index().ReadHeaderCopy(0, &h)) {
    ++h.change;
    // Commits appended past it whose flush is pending (W12) stay: their frames and entries
    // are whole (the appended header is written last, under WRITE), and the next flush
    // publishes them. A torn appended header is repaired from its whole copy (W12 e); with
    // neither copy whole, what is past the published header goes.
    shm::IndexHeader a;
    const int cur = CurrentLog(h, env_.wal2);
    const bool appended_whole = RepairAppended(&a, write);
    const bool pending = appended_whole && a.current_log == h.current_log &&
                         a.logs[cur].ckpt_seq == h.logs[cur].ckpt_seq &&
                         a.logs[cur].mx_frame > h.logs[cur].mx_frame;
    if (pending) {
      index().PublishHeader(h);
    } else {
      index().WriteHeader(h);
    }
    for (int l = 0; l < nlogs_; ++l) {
      // A dead writer's unpublished (and unappended) entries.
      const uint32_t keep = pending && l == cur ? a.logs[l].mx_frame : h.logs[l].mx_frame;
      JKV_RETURN_IF_ERROR(index().Truncate(l, keep));
    }
    // W13: with no whole appended copy, commits appended past `h` are gone: their waiters fail.
    if (!appended_whole) env_.durability->DropUnpublished(write, flush, h, std::nullopt);
    return absl::OkStatus();
  }
  return RecoverIndex(write, recover, flush);
}

// Reads the published header; a header that stays torn means a process died publishing it,
// and the index is rebuilt (W6) unless this connection's own writer is active.
absl::StatusOr<shm::IndexHeader> IndexRecovery::ReadHeaderOrRepair(absl::Time deadline,
                                                                  bool may_recover,
                                                                  const LockByte& write,
                                                                  const LockByte& recover,
                                                                  GroupFlush& flush) {
  shm::IndexHeader h;
  base::Backoff wait(deadline, internal::kMaxWait);
  while (true) {
    if (ReadWholeHeader(index(), HeaderCopy::kPublished, &h)) return h;
    // W9: this connection's writer thread repairs under the WRITE it holds; another thread
    // repairs only when this connection holds no WRITE, taking it under the role's mutex (the
    // lock is granted to every thread of the File, so it tells nothing about this
    // connection's own writer); while this connection's writer holds WRITE it waits.
    const bool own_write = env_.writer->OnWriterThread();
    if (own_write || may_recover) {
      absl::Status s;
      bool repaired = false;
      {
        std::optional<base::MutexLock> role;
        if (!own_write) role.emplace(env_.writer->role_mu());
        bool have_write = own_write;
        if (!own_write && !env_.writer->write_locked()) {
          JKV_ASSIGN_OR_RETURN(have_write,
                               index().TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
        }
        if (have_write) {
          write.AssumeHeld();  // this thread's writer's, or taken just above
          JKV_ASSIGN_OR_RETURN(bool r,
                               index().TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
          // W12 d: and FLUSH, without waiting: a flusher holding it is publishing (the torn
          // copies are its own), and its publish ends the tear.
          absl::Status flush_error;
          if (r && flush.TryLock(index(), &flush_error)) {
            recover.AssumeHeld();  // r: taken just above
            if (!index().ReadHeader(&h)) s = RepairHeader(write, recover, flush);
            flush.Unlock(index());
            repaired = true;
          }
          if (r) index().Unlock(shm::ShmLock::kRecover).IgnoreError();
          if (!own_write) index().Unlock(shm::ShmLock::kWrite).IgnoreError();
          if (s.ok()) s = flush_error;
          if (!r) repaired = true;  // another repairs: look again at once
        }
      }
      JKV_RETURN_IF_ERROR(s);
      if (repaired) continue;
    }
    if (wait.Expired()) {
      return absl::UnavailableError(
          absl::StrCat("busy: the wal-index header of ", *env_.shm_path, " is being rewritten"));
    }
    internal::Sleep(wait);
  }
}

}  // namespace journalkv::wal
