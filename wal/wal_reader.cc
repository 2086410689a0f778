// WalConnection's readers: a snapshot without a system call (W3), its pin in the reader slot or
// under an overflow mark (M1..M4), and where a snapshot finds each page (V2, W7).
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

bool WalConnection::MarkProtects(int mark, const PinPair& pins) const {
  for (int l = 0; l < nlogs_; ++l) {
    const uint64_t want = l == 0 ? pins.first : pins.second;
    const uint64_t have = index_->mark_pin(mark, l);
    if (have == 0 || shm::PinBefore(want, have)) return false;
  }
  return true;
}

absl::StatusOr<bool> WalConnection::JoinMark(const PinPair& pins) {
  const int held = mark_.load(std::memory_order_relaxed);
  if (held >= 0) return MarkProtects(held, pins);
  // M2: a mark nobody holds, set to this snapshot. Trying these first keeps marks fresh: a
  // mark's pin only moves while nobody reads under it.
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    JKV_ASSIGN_OR_RETURN(bool alone, index_->TryLockMark(m, vfs::LockMode::kExclusive));
    if (!alone) continue;
    // M5: this connection's own checkpoints know the mark as its own before its pin is there.
    mark_.store(m, std::memory_order_seq_cst);
    index_->set_mark_pin(m, 0, pins.first);
    index_->set_mark_pin(m, 1, pins.second);
    JKV_ASSIGN_OR_RETURN(bool shared, index_->TryLockMark(m, vfs::LockMode::kShared));
    if (!shared) {
      LeaveMark();
      return absl::InternalError("converting an exclusive lock to shared failed");
    }
    return true;
  }
  // M3: every mark is in use: share the newest one at or below this snapshot.
  int best = -1;
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    if (!MarkProtects(m, pins)) continue;
    if (best < 0 || shm::PinBefore(index_->mark_pin(best, 0), index_->mark_pin(m, 0))) {
      best = m;
    }
  }
  if (best < 0) return false;
  mark_.store(best, std::memory_order_seq_cst);  // M5: before the lock and the pin's re-read
  absl::StatusOr<bool> shared = index_->TryLockMark(best, vfs::LockMode::kShared);
  if (!shared.ok() || !*shared) {  // being set right now
    mark_.store(-1, std::memory_order_seq_cst);
    JKV_RETURN_IF_ERROR(shared.status());
    return false;
  }
  if (!MarkProtects(best, pins)) {  // set between the look and the lock
    LeaveMark();
    return false;
  }
  return true;
}

void WalConnection::LeaveMark() {
  const int m = mark_.exchange(-1, std::memory_order_seq_cst);
  if (m >= 0) index_->UnlockMark(m).IgnoreError();  // closing the file drops it anyway
}

WalSnapshot WalConnection::SnapshotOf(const shm::IndexHeader& h) const {
  WalSnapshot s;
  for (int l = 0; l < nlogs_; ++l) s.logs[l] = {h.logs[l].ckpt_seq, h.logs[l].mx_frame};
  s.current = wal2_ ? static_cast<int>(h.current_log & 1) : 0;
  s.change = h.change;
  return s;
}

// WAL pins log 0 only; WAL2 pins both, naming each log's generation even where the snapshot
// sees none of its frames (V5).
WalConnection::PinPair WalConnection::PinsOf(const WalSnapshot& s) const {
  return {s.pin(0), wal2_ ? s.pin(1) : 0};
}

void WalConnection::SetPins(const PinPair& pins) {
  index_->set_pin(slot_, 0, pins.first);
  if (wal2_) index_->set_pin(slot_, 1, pins.second);
}

void WalConnection::ReleasePins(const PinPair& pins) {
  index_->release_pin(slot_, 0, pins.first);
  if (wal2_) index_->release_pin(slot_, 1, pins.second);
}

// W3: no system call. The pins are stored before the generations and the checkpoint targets
// are read again (seq_cst on both sides), so either a checkpoint sees the pin or this reader
// sees the checkpoint's target.
absl::StatusOr<WalSnapshot> WalConnection::BeginRead(absl::Duration timeout, bool writer_active) {
  if (private_) {
    // No pin: WalOptions::private_reader_byte keeps every checkpoint and restart out.
    JKV_RETURN_IF_ERROR(RefreshPrivate());
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return absl::InternalError("private wal-index header torn");
    return SnapshotOf(h);
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
      JKV_ASSIGN_OR_RETURN(h, ReadHeaderOrRecover(deadline(), !writer_active));
    }
    CallWalHook("begin_read:header");
    const WalSnapshot snap = SnapshotOf(h);
    for (int l = 0; l < nlogs_; ++l) {
      if (logs_[l] == nullptr && snap.logs[l].mx > 0) JKV_RETURN_IF_ERROR(OpenLogForReading(l));
    }
    const PinPair pins = PinsOf(snap);
    const PinPair held = open_pins_.empty() ? PinPair{0, 0} : open_pins_.front();
    if (held.first != 0 && !shm::PinBefore(pins.first, held.first) &&
        !shm::PinBefore(pins.second, held.second)) {
      // An older snapshot of this connection already holds every checkpoint below `pins`.
      AddOpenPins(pins);
      CallWalHook("begin_read:done");
      return snap;
    }
    if (slot_ >= 0) {
      SetPins(pins);
    } else {
      JKV_ASSIGN_OR_RETURN(bool joined, JoinMark(pins));
      if (!joined) {  // M3: every mark is held at a later snapshot: take a newer one
        if (!mark_wait.has_value()) mark_wait.emplace(deadline(), kMaxWait);
        if (mark_wait->Expired()) {
          return absl::UnavailableError(absl::StrCat(
              "busy: ", shm_path_, ": all ", shm::kMaxSlots, " reader slots and ",
              shm::kOverflowMarks, " overflow pins are in use"));
        }
        Sleep(*mark_wait);
        continue;
      }
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
      AddOpenPins(pins);
      CallWalHook("begin_read:done");
      return snap;
    }
    // A checkpoint may be copying past this snapshot: take a newer one.
    if (slot_ >= 0) {
      SetPins(held);
    } else if (held.first == 0) {
      LeaveMark();
    }
    if (absl::Now() >= deadline()) {
      return absl::UnavailableError("busy: could not pin a snapshot of the log");
    }
  }
}

// A read-only connection that joined without log `log`: a writer has since created it and
// published frames in it, so it exists (only the last connection removes it, and this one is
// open).
absl::Status WalConnection::OpenLogForReading(int log) {
  absl::StatusOr<std::unique_ptr<wal::WalLog>> opened =
      wal::WalLog::Open(fs_, log_paths_[log], /*read_only=*/true);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("the wal-index publishes frames, but ", log_paths_[log],
                                     " cannot be opened: ", opened.status().message()));
  }
  logs_[log] = std::move(*opened);
  return absl::OkStatus();
}

void WalConnection::AddOpenPins(const PinPair& pins) {
  open_pins_.insert(std::upper_bound(open_pins_.begin(), open_pins_.end(), pins, PinPairBefore()),
                    pins);
}

void WalConnection::EndRead(const WalSnapshot& snapshot) {
  if (private_) return;
  const PinPair pins = PinsOf(snapshot);
  auto it = std::lower_bound(open_pins_.begin(), open_pins_.end(), pins, PinPairBefore());
  const bool found = it != open_pins_.end() && !PinPairBefore()(pins, *it);
  JKV_DCHECK(found);
  if (!found) return;
  const bool was_oldest = it == open_pins_.begin();
  open_pins_.erase(it);
  if (!was_oldest) return;
  if (slot_ >= 0) {
    ReleasePins(open_pins_.empty() ? PinPair{0, 0} : open_pins_.front());  // W3
  } else if (open_pins_.empty()) {
    LeaveMark();  // M4
  }
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
  absl::Status s = logs_[l]->ReadPage(version->frame, page_size_, out);
  if (index_->GenerationIs(l, snapshot.logs[l].seq)) return s;
  // W7: the frame may have been overwritten (or cut) by the next generation.
  version->frame = 0;
  version->cacheable = false;
  return db_file_->Read(offset, out);
}

}  // namespace journalkv::wal
