// WalConnection's readers: a snapshot without a system call (W3), its pin in the reader slot or
// under an overflow mark (wal/reader_pins.h, M1..M5), and where a snapshot finds each page (V2,
// W7).
#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;
using internal::Sleep;

// W3: no system call. The pins are stored before the generations and the checkpoint targets
// are read again (seq_cst on both sides), so either a checkpoint sees the pin or this reader
// sees the checkpoint's target.
absl::StatusOr<WalSnapshot> WalConnection::BeginRead(absl::Duration timeout, bool writer_active) {
  if (private_.active()) {
    // No pin: WalOptions::private_reader_byte keeps every checkpoint and restart out (U1).
    JKV_RETURN_IF_ERROR(private_.Refresh(*pins_.mu()));
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return absl::InternalError("private wal-index header torn");
    return SnapshotOf(h, wal2_);
  }
  // The clock is read only once the read has to wait (absl::Now was 4% of a cached point read).
  std::optional<absl::Time> deadline_at;
  const auto deadline = [&] {
    if (!deadline_at.has_value()) deadline_at = absl::Now() + timeout;
    return *deadline_at;
  };
  std::optional<base::Backoff> mark_wait;
  while (true) {
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) {
      JKV_ASSIGN_OR_RETURN(h, recovery_.ReadHeaderOrRepair(deadline(), !writer_active,
                                                           write_lock_, recover_lock_, flush_));
    }
    CallWalHook("begin_read:header");
    WalSnapshot snap = SnapshotOf(h, wal2_);
    for (int l = 0; l < nlogs_; ++l) {
      if (logs_[l] == nullptr && snap.logs[l].mx > 0) {
        JKV_RETURN_IF_ERROR(private_.OpenLogForReading(l, *pins_.mu()));
      }
    }
    const PinPair pins = pins_.PinsOf(snap);
    if (pins_.Covered(pins)) {
      // An older snapshot of this connection already holds every checkpoint below `pins`.
      pins_.Open(pins);
      CallWalHook("begin_read:done");
      return MarkCopied(snap);
    }
    JKV_ASSIGN_OR_RETURN(bool pinned, pins_.Pin(pins));
    if (!pinned) {  // M3: every mark is held at a later snapshot: take a newer one
      if (!mark_wait.has_value()) mark_wait.emplace(deadline(), kMaxWait);
      if (mark_wait->Expired()) {
        return absl::UnavailableError(absl::StrCat(
            "busy: ", shm_path_, ": all ", shm::kMaxSlots, " reader slots and ",
            shm::kOverflowMarks, " overflow pins are in use"));
      }
      Sleep(*mark_wait);
      continue;
    }
    CallWalHook("begin_read:pinned");
    // The generation words alone, not the whole header again: a restart publishes its new
    // generation in both copies, and a publish within the generation only adds frames past
    // this snapshot (the second header read was 4% of a cached point read).
    bool settled = true;
    for (int l = 0; l < nlogs_ && settled; ++l) settled = index_->GenerationIs(l, snap.logs[l].seq);
    for (int l = 0; l < nlogs_ && settled; ++l) {
      const WalSnapshot::Log& mine = snap.logs[l];
      const uint64_t target = index_->ckpt_target(l);
      const bool target_past = (target >> 32) == mine.seq && static_cast<uint32_t>(target) > mine.mx;
      settled = !target_past && index_->backfill(l) <= mine.mx;
    }
    if (settled) {
      pins_.Open(pins);
      CallWalHook("begin_read:done");
      return MarkCopied(snap);
    }
    // A checkpoint may be copying past this snapshot: take a newer one.
    pins_.Unpin();
    if (absl::Now() >= deadline()) {
      return absl::UnavailableError("busy: could not pin a snapshot of the log");
    }
  }
}

// O9 (wal_types.h): after the pin (stored or covered), the backfill, then the generation
// again (seq_cst loads): a backfill read of the next generation (W8 clears it before that
// generation is published) is followed by a generation that no longer matches.
WalSnapshot WalConnection::MarkCopied(WalSnapshot snap) {
  CallWalHook("begin_read:mark_copied");
  const WalSnapshot::Log& log = snap.logs[0];
  snap.copied = nlogs_ == 1 && log.mx > 0 && index_->backfill(0) == log.mx &&
                index_->GenerationIs(0, log.seq);
  return snap;
}

void WalConnection::EndRead(const WalSnapshot& snapshot) {
  if (private_.active()) return;
  pins_.Close(pins_.PinsOf(snapshot));  // W3, M4
}

// V2: the current log, then (WAL2) the other one, then the database file.
absl::StatusOr<PageVersion> WalConnection::Locate(const WalSnapshot& snapshot, PageNo page_no) {
  PageVersion v;
  v.key = PageVersionKey(snapshot.cur().seq, 0);
  for (int i = 0; i < nlogs_; ++i) {
    const int l = i == 0 ? snapshot.current : 1 - snapshot.current;
    const WalSnapshot::Log& log = snapshot.logs[l];
    if (log.mx == 0) continue;
    JKV_ASSIGN_OR_RETURN(uint32_t frame, index_->Lookup(l, page_no.value(), log.mx));
    if (!index_->GenerationIs(l, log.seq)) {
      // W7: the log restarted; the lookup may have read the next generation's entries. The
      // database file holds this snapshot's pages of it and of every older log.
      return PageVersion{l, 0, 0, false};
    }
    if (frame != 0) {
      v.log = l;
      v.frame = frame;
      v.key = PageVersionKey(log.seq, frame);
      return v;
    }
  }
  return v;
}

absl::Status WalConnection::ReadPage(const WalSnapshot& snapshot, PageNo page_no,
                                   PageVersion* version, absl::Span<uint8_t> out) {
  const uint64_t offset = uint64_t{page_no.value() - 1} * page_size_;
  if (version->frame == 0) {
    CallWalHook("read:db");
    return db_file_->Read(offset, out);
  }
  const int l = version->log;
  CallWalHook("read:frame");
  // Q1, Q4: with the map, a guarded copy out of it (a pread past it, or after a fault).
  absl::Status s = logs_[l]->ReadPage(version->frame, page_size_, out);
  CallWalHook("read:frame_copied");  // Q3: the copy made, the generation not yet checked
  // Q2: after the copy (GenerationIs fences it): a copy that saw any byte of the next
  // generation, or faulted on a cut, sees the new generation here.
  if (index_->GenerationIs(l, snapshot.logs[l].seq)) return s;
  // W7: the frame may have been overwritten (or cut) by the next generation.
  version->frame = 0;
  version->cacheable = false;
  return db_file_->Read(offset, out);
}

}  // namespace journalkv::wal
