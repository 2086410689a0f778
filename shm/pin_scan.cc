#include "shm/pin_scan.h"

#include <algorithm>

#include "shm/pins.h"

namespace journalkv::shm {

absl::StatusOr<bool> HolderLive(WalIndex& index, int holder, const OwnHolders& own) {
  if (own.Is(holder)) return true;
  absl::StatusOr<bool> gone = index.HolderGone(holder);
  if (!gone.ok()) return gone.status();
  return !*gone;
}

absl::StatusOr<PinScanResult> OldestLivePin(WalIndex& index, int log, uint32_t seq,
                                            uint32_t backfill, uint32_t ceiling,
                                            const OwnHolders& own, PinScanUse use) {
  const bool checkpoint = use == PinScanUse::kCheckpoint;
  PinScanResult r;
  r.limit = ceiling;
  const uint32_t generation = seq & 0x7fffffffu;
  const int used = index.slots_used();  // S1: loaded once, before the pins
  for (int holder = FirstHolder(used); holder < kPinHolders; holder = NextHolder(holder, used)) {
    const uint64_t pin = index.holder_pin(holder, log);
    if (pin == 0) continue;
    const uint32_t limit = PinSeq(pin) == generation ? PinFrame(pin) : backfill;
    if (checkpoint && limit >= r.limit) continue;  // holds nothing back past what is found
    // After the pin (M5): a pin one of the caller's threads stored is its own.
    const bool mine = own.Is(holder);
    if (!mine) {
      absl::StatusOr<bool> gone = index.HolderGone(holder);
      if (!gone.ok()) {
        if (checkpoint) return gone.status();
        // kView: a holder the lock table cannot answer for is counted live.
      } else if (*gone) {
        continue;
      }
    }
    ++r.live;
    if (r.oldest == 0 || PinBefore(pin, r.oldest)) r.oldest = pin;
    if (checkpoint) {
      r.limit = std::max(limit, backfill);
      r.own_limits = mine;
    } else {
      r.limit = std::min(r.limit, limit);
    }
  }
  return r;
}

}  // namespace journalkv::shm
