// wal::LogDurability (log_durability.h): the sync floor (D1), how far each log is known durable
// (D2), and what a failed log sync does to every connection's commits (W13).
#include "wal/log_durability.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/wal_connection.h"  // CallWalHook
#include "wal/wal_internal.h"

namespace journalkv::wal {

using vfs::SyncLevel;

absl::Status LogDurability::LockFlush(GroupFlush& flush, absl::Time deadline) {
  return flush.Lock(index(), deadline, internal::FlushWait(env_.options->busy_timeout),
                    *env_.shm_path);
}

vfs::SyncLevel LogDurability::MaintenanceSync() const {
  const uint32_t floor = std::min(index().sync_floor(), static_cast<uint32_t>(SyncLevel::kExtra));
  return std::max(env_.options->sync, static_cast<SyncLevel>(floor));
}

absl::Status LogDurability::JoinSyncFloor(bool dir_synced) {
  const auto before = static_cast<SyncLevel>(std::min(
      index().RaiseSyncFloor(static_cast<uint32_t>(env_.options->sync)),
      static_cast<uint32_t>(SyncLevel::kExtra)));
  if (env_.options->read_only || env_.options->sync == SyncLevel::kOff || dir_synced ||
      before != SyncLevel::kOff) {
    return absl::OkStatus();  // the log's creator synced its directory, or nobody needs it
  }
  // D1, W5: every connection so far was at OFF, so whoever created the log may not have
  // synced its directory entry; this connection's commits (and checkpoints) will rely on it.
  return vfs::SyncDir(*env_.fs, (*env_.log_paths)[0], "W5 log directory (sync floor raised)");
}

absl::StatusOr<bool> LogDurability::MakeLogDurable(GroupFlush& flush, int log,
                                                  const shm::LogState& state,
                                                  const char* reason) {
  const uint32_t through = state.mx_frame;
  const uint64_t word = index().synced_through(log);
  const bool same = shm::SyncedSeq(word) == (state.ckpt_seq & 0x7fffffffu);
  const uint32_t synced = same ? shm::SyncedFrame(word) : 0;
  const bool failed = same && shm::SyncFailed(word);
  if (same && synced >= through) return false;  // D2: durable already
  if ((*env_.logs)[log] == nullptr) {
    return absl::InternalError(absl::StrCat("log ", log, " to sync is not open"));
  }
  absl::Status s;
  if (failed) {
    // W13 a: a sync of this generation failed, so frames past `synced` may be lost although
    // the page cache still shows them and a sync would succeed: written again, each checked.
    wal::WalHeader header;
    header.page_size = env_.page_size;
    header.ckpt_seq = state.ckpt_seq;
    header.salt1 = state.salt1;
    header.salt2 = state.salt2;
    s = (*env_.logs)[log]->WriteAgain(header, synced + 1, through, state.last_checksum);
  }
  if (s.ok()) s = vfs::SyncFile((*env_.logs)[log]->file(), vfs::SyncKind::kData, reason);
  if (!s.ok()) {
    RecordSyncFailure(flush, log, state);
    return s;
  }
  CallWalHook("sync:done");
  index().set_synced_through(log, shm::EncodeSynced(state.ckpt_seq, through, failed));
  return true;
}

absl::StatusOr<bool> LogDurability::MakeLogDurableLocking(GroupFlush& flush, int log,
                                                         const shm::LogState& state,
                                                         const char* reason,
                                                         absl::Time deadline) {
  const uint32_t through = state.mx_frame;
  const uint64_t word = index().synced_through(log);
  if (shm::SyncedSeq(word) == (state.ckpt_seq & 0x7fffffffu) &&
      shm::SyncedFrame(word) >= through) {
    return false;  // D2: durable already; no lock taken
  }
  JKV_RETURN_IF_ERROR(LockFlush(flush, deadline));
  flush.AssertHeld();
  absl::StatusOr<bool> synced = MakeLogDurable(flush, log, state, reason);
  flush.Unlock(index());
  return synced;
}

void LogDurability::RecordSyncFailure(GroupFlush& flush, int log,
                                      const shm::LogState& state) {
  (void)flush;  // the analysis's: nothing is published while FLUSH is held (W13 b)
  const uint32_t seq = state.ckpt_seq & 0x7fffffffu;
  const uint64_t word = index().synced_through(log);
  const uint32_t synced = shm::SyncedSeq(word) == seq ? shm::SyncedFrame(word) : 0;
  index().set_synced_through(log, shm::EncodeSynced(seq, synced, /*failed=*/true));
  const uint32_t epoch = index().append_epoch();
  shm::WalIndex::SyncFailure f;
  if (index().Failure(epoch, &f) == shm::WalIndex::FailureLookup::kRecorded) return;
  // What stays published: nothing is published while the record stands (W13 b), so the header
  // now is the one every later reset goes back to. A publisher of a NORMAL commit may be
  // between its two copies (it holds WRITE, not FLUSH): copy B, written first, is what it
  // publishes, and nothing is pending under it.
  shm::IndexHeader p;
  if (!GroupFlush::ReadPublished(index(), &p) && !index().ReadHeaderCopy(1, &p)) {
    index().ReadHeaderCopy(0, &p);  // neither whole: zeros, and every unpublished commit fails
  }
  for (int l = 0; l < 2; ++l) {
    f.ckpt_seq[l] = p.logs[l].ckpt_seq;
    f.mx_frame[l] = p.logs[l].mx_frame;
  }
  index().RecordFailure(epoch, f);
  // W13 e: the commits it fails must not come back either when the next connection alone
  // rebuilds the index from the log (after every connection closed): the first frame past the
  // published ones is made invalid. The frames up to the appended header are never written
  // again before the reset (which holds FLUSH), so no writer races this write. A crash may
  // leave them whole (I7).
  shm::IndexHeader a;
  if (GroupFlush::ReadAppended(index(), &a)) BreakChainAfter(p, a);
  CallWalHook("sync:failure_recorded");
}

void LogDurability::BreakChainAfter(const shm::IndexHeader& kept,
                                    const shm::IndexHeader& appended) {
  const int cur = CurrentLog(appended, env_.wal2);
  const shm::LogState& k = kept.logs[cur];
  const shm::LogState& a = appended.logs[cur];
  if ((*env_.logs)[cur] == nullptr || a.ckpt_seq != k.ckpt_seq || a.mx_frame <= k.mx_frame) return;
  // Its own error is not the caller's: a failed write leaves the frames for a recovery to find,
  // which a crash may do anyway (I7).
  (*env_.logs)[cur]->BreakChainAt(k.mx_frame + 1, env_.page_size).IgnoreError();
}

absl::Status LogDurability::CommitDropped(const shm::IndexHeader& header, uint32_t epoch) const {
  shm::WalIndex::SyncFailure f;
  switch (index().Failure(epoch, &f)) {
    case shm::WalIndex::FailureLookup::kNone:
      return absl::OkStatus();
    case shm::WalIndex::FailureLookup::kRecorded: {
      shm::IndexHeader at = header;  // the published state when the failure was recorded
      for (int l = 0; l < 2; ++l) {
        at.logs[l].ckpt_seq = f.ckpt_seq[l];
        at.logs[l].mx_frame = f.mx_frame[l];
      }
      if (GroupFlush::Covers(at, header)) return absl::OkStatus();  // published before it
      return absl::DataLossError(absl::StrCat(
          (*env_.log_paths)[header.current_log & 1],
          ": this commit was dropped before it was durable: a sync of the log failed (in this "
          "or another connection), or the wal-index was repaired; it will never be visible, "
          "and no later commit builds on it"));
    }
    case shm::WalIndex::FailureLookup::kForgotten:
      break;
  }
  return absl::DataLossError(absl::StrCat(
      (*env_.log_paths)[header.current_log & 1], ": more than ", shm::kFailureRecords,
      " failed log syncs happened while this commit waited for its flush: whether it was "
      "published before them cannot be told"));
}

absl::Status LogDurability::ResetAfterFailure(const LockByte& write, GroupFlush& flush,
                                              absl::Time deadline) {
  shm::WalIndex::SyncFailure f;
  if (index().Failure(index().append_epoch(), &f) != shm::WalIndex::FailureLookup::kRecorded) {
    return absl::OkStatus();  // the usual case: one load
  }
  JKV_RETURN_IF_ERROR(LockFlush(flush, deadline));
  flush.AssertHeld();
  absl::Status s;
  if (index().Failure(index().append_epoch(), &f) == shm::WalIndex::FailureLookup::kRecorded) {
    // Holding WRITE and FLUSH, nobody publishes: a torn header is a publisher that died.
    shm::IndexHeader published;
    if (!GroupFlush::ReadPublished(index(), &published)) {
      s = absl::UnavailableError(absl::StrCat(
          "busy: the wal-index header of ", *env_.shm_path,
          " is torn while a failed log sync is undone; retry"));
    } else {
      CallWalHook("reset:start");
      std::optional<shm::IndexHeader> appended(std::in_place);
      if (!GroupFlush::ReadAppended(index(), &*appended)) appended.reset();
      index().WriteAppendedHeader(published);  // W13 c: the one move back of the appended header
      for (int l = 0; l < nlogs_ && s.ok(); ++l) {
        s = index().Truncate(l, published.logs[l].mx_frame);  // W2
      }
      if (s.ok()) DropUnpublished(write, flush, published, appended);
    }
  }
  flush.Unlock(index());
  return s;
}

void LogDurability::DropUnpublished(const LockByte& write, GroupFlush& flush,
                                    const shm::IndexHeader& kept,
                                    const std::optional<shm::IndexHeader>& appended) {
  // W13 e. Holding WRITE, nobody else writes frames: the frame past `kept` goes even when the
  // appended header that named the dropped commits could not be read (a repair). Unless this
  // connection's own transaction has frames there (its writer thread repairing mid-write:
  // W9), which are not commits and which it still needs.
  const Writer::State state = env_.writer->state();
  if (state == Writer::State::kIdle || state == Writer::State::kLocked) {
    shm::IndexHeader past = kept;
    past.logs[CurrentLog(kept, env_.wal2)].mx_frame = UINT32_MAX;
    BreakChainAfter(kept, appended.value_or(past));
  }
  const uint32_t epoch = index().append_epoch();
  shm::WalIndex::SyncFailure f;
  if (index().Failure(epoch, &f) != shm::WalIndex::FailureLookup::kRecorded) {
    for (int l = 0; l < 2; ++l) {
      f.ckpt_seq[l] = kept.logs[l].ckpt_seq;
      f.mx_frame[l] = kept.logs[l].mx_frame;
    }
    index().RecordFailure(epoch, f);  // W13 b: the waiters of what goes fail
  }
  for (int l = 0; l < nlogs_; ++l) {
    // D2: never past the appended header, which is `kept` now.
    const uint64_t word = index().synced_through(l);
    if (shm::SyncedSeq(word) == (kept.logs[l].ckpt_seq & 0x7fffffffu) &&
        shm::SyncedFrame(word) > kept.logs[l].mx_frame) {
      index().set_synced_through(
          l, shm::EncodeSynced(kept.logs[l].ckpt_seq, kept.logs[l].mx_frame,
                               shm::SyncFailed(word)));
    }
  }
  index().set_append_epoch(epoch + 1);  // last: a writer killed before it leaves E failed
  CallWalHook("reset:done");
  (void)write;  // the analysis's: WRITE keeps other writers' frames out
  CheckInvariants(flush);
}

void LogDurability::CheckInvariants(const GroupFlush& flush) const {
  (void)flush;  // the analysis's
#if JKV_DCHECK_IS_ON
  // D2: synced_through never exceeds the appended header's frames of the same generation.
  shm::IndexHeader a;
  if (!GroupFlush::ReadAppended(index(), &a)) return;  // torn: a repair's to settle
  for (int l = 0; l < nlogs_; ++l) {
    const uint64_t word = index().synced_through(l);
    if (shm::SyncedSeq(word) != (a.logs[l].ckpt_seq & 0x7fffffffu)) continue;
    JKV_DCHECK(shm::SyncedFrame(word) <= a.logs[l].mx_frame);
  }
#endif
}

}  // namespace journalkv::wal
