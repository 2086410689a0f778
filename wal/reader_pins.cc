#include "wal/reader_pins.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

ReaderPins::~ReaderPins() {
  if (index_ == nullptr) return;
  if (slot_ >= 0) {
    index_->set_pin(slot_, 0, 0);
    index_->set_pin(slot_, 1, 0);
    index_->UnlockSlot(slot_).IgnoreError();  // closing the file drops it anyway
  }
  LeaveMark();
}

// A connection that finds every slot it may claim taken (WalOptions::reader_slots; a heap
// index, whose one connection needs one slot, ignores the option) reads under the overflow
// marks instead (M1..M5): it works, at a few lock calls per read transaction.
absl::Status ReaderPins::Claim(shm::WalIndex* index, int max_slots, const std::string& what) {
  JKV_DCHECK(index_ == nullptr);
  index_ = index;
  const int slots = index_->shared() ? std::min(max_slots, shm::kMaxSlots) : shm::kMaxSlots;
  for (int slot = 0; slot < slots; ++slot) {
    JKV_ASSIGN_OR_RETURN(bool mine, index_->TryLockSlot(slot));
    if (!mine) continue;
    slot_ = slot;
    index_->set_pin(slot, 0, 0);  // a dead owner's pin
    index_->set_pin(slot, 1, 0);
    index_->set_owner(slot, internal::RandomId());
    return absl::OkStatus();
  }
  if (!index_->shared()) {
    return absl::InternalError(absl::StrCat(what, ": no free slot in a private wal-index"));
  }
  return absl::OkStatus();
}

bool ReaderPins::Covered(const PinPair& pins) const {
  const PinPair held = OldestOpen();
  return held.first != 0 && !shm::PinBefore(pins.first, held.first) &&
         !shm::PinBefore(pins.second, held.second);
}

absl::StatusOr<bool> ReaderPins::Pin(const PinPair& pins) {
  if (slot_ < 0) return JoinMark(pins);
  SetPins(pins);
  return true;
}

void ReaderPins::Unpin() {
  if (slot_ >= 0) {
    SetPins(OldestOpen());
  } else if (open_pins_.empty()) {
    LeaveMark();
  }
}

void ReaderPins::Open(const PinPair& pins) {
  open_pins_.insert(std::upper_bound(open_pins_.begin(), open_pins_.end(), pins, PinPairBefore()),
                    pins);
  CheckInvariants();
}

void ReaderPins::Close(const PinPair& pins) {
  auto it = std::lower_bound(open_pins_.begin(), open_pins_.end(), pins, PinPairBefore());
  const bool found = it != open_pins_.end() && !PinPairBefore()(pins, *it);
  JKV_DCHECK(found);
  if (!found) return;
  const bool was_oldest = it == open_pins_.begin();
  open_pins_.erase(it);
  if (was_oldest) {
    if (slot_ >= 0) {
      ReleasePins(OldestOpen());  // W3
    } else if (open_pins_.empty()) {
      LeaveMark();  // M4
    }
  }
  CheckInvariants();
}

void ReaderPins::SetPins(const PinPair& pins) {
  index_->set_pin(slot_, 0, pins.first);
  if (wal2_) index_->set_pin(slot_, 1, pins.second);
}

void ReaderPins::ReleasePins(const PinPair& pins) {
  index_->release_pin(slot_, 0, pins.first);
  if (wal2_) index_->release_pin(slot_, 1, pins.second);
}

bool ReaderPins::MarkProtects(int mark, const PinPair& pins) const {
  for (int l = 0; l < (wal2_ ? 2 : 1); ++l) {
    const uint64_t want = l == 0 ? pins.first : pins.second;
    const uint64_t have = index_->mark_pin(mark, l);
    if (have == 0 || shm::PinBefore(want, have)) return false;
  }
  return true;
}

absl::StatusOr<bool> ReaderPins::JoinMark(const PinPair& pins) {
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

void ReaderPins::LeaveMark() {
  const int m = mark_.exchange(-1, std::memory_order_seq_cst);
  if (m >= 0) index_->UnlockMark(m).IgnoreError();  // closing the file drops it anyway
}

void ReaderPins::CheckInvariants() const {
#if JKV_DCHECK_IS_ON
  JKV_DCHECK(std::is_sorted(open_pins_.begin(), open_pins_.end(), PinPairBefore()));
  for (const PinPair& p : open_pins_) {
    JKV_DCHECK(p.first != 0 && (wal2_ ? p.second != 0 : p.second == 0));  // V5
  }
  if (index_ == nullptr) {  // not claimed: reads pin nothing
    JKV_DCHECK(open_pins_.empty() && mark_.load(std::memory_order_relaxed) < 0);
    return;
  }
  const int mark = mark_.load(std::memory_order_relaxed);
  if (slot_ >= 0) {
    // The slot's pin: the oldest open snapshot's, or none (W3).
    JKV_DCHECK(mark < 0);
    const PinPair oldest = OldestOpen();
    JKV_DCHECK(index_->pin(slot_, 0) == oldest.first);
    JKV_DCHECK(!wal2_ || index_->pin(slot_, 1) == oldest.second);
    return;
  }
  // M1, M4: the mark is held exactly while a snapshot is open, and its pin is at or below each.
  JKV_DCHECK((mark >= 0) == !open_pins_.empty());
  for (const PinPair& p : open_pins_) JKV_DCHECK(MarkProtects(mark, p));  // M1
#endif
}

}  // namespace journalkv::wal
