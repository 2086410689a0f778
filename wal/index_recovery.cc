// wal::IndexRecovery (wal/index_recovery.h): the logs' scans and the header describing them
// (V1), the index entries rebuilt from them (W6), and the appended header's repairs and checks
// (W12 e, f; IndexDamage).
#include "wal/index_recovery.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
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

}  // namespace journalkv::wal
