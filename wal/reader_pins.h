// wal::ReaderPins: the reader role of one WAL connection, that is how its open read
// transactions hold the log back: the reader slot it claimed in the wal-index (one per
// connection, for its life), or, when every slot was taken, the overflow mark it reads under
// (M1-M5 below), and its open snapshots' pins, oldest first. WalConnection::BeginRead and
// EndRead (wal/wal_reader.cc) drive it; W3 (wal/wal_connection.h) is the protocol they follow:
// a reader stores its pin (Pin), then re-checks the generation and the checkpoint target, and
// either keeps the snapshot (Open) or takes a newer one (Unpin, then Pin again).
//
// The scans of every connection's pins (a checkpoint's safe frame, the policy's view, Stats)
// are shm::OldestLivePin (shm/pin_scan.h); Own() names this connection's holders for them.
//
// Invariants (cited at their call sites; CheckInvariants asserts them in debug builds):
//   (The slot's pin.) A connection with a slot stores there the oldest of its open snapshots'
//       pins (each log), or none while it has none open (W3: a read's end only clears its pin
//       or moves it to a later snapshot, a release store). Pins of either log only grow with
//       time (V1), so a later snapshot is covered by an older open one (Covered).
//   M1. A connection that found no free reader slot (more connections than
//       WalOptions::reader_slots) pins under an overflow mark: it holds the mark's lock
//       byte SHARED from its first open read transaction to its last, and the mark's pin is at
//       or below (PinBefore, each log) every one of its open snapshots. A checkpoint honours
//       a mark's pin while anyone holds that byte (shm::OldestLivePin, shm/pin_scan.h), so one mark
//       protects every connection sharing it.
//   M2. A mark's pin changes only under its byte EXCLUSIVE, that is while nobody reads under
//       it: the setter stores the pin (seq_cst), converts the lock to SHARED, then makes W3's
//       re-check, exactly as a slot's owner does after storing its pin.
//   M3. While every mark is held, a connection shares the newest mark at or below its
//       snapshot: it locks it SHARED, then reads its pin again (fixed while the lock is held)
//       and then makes W3's re-check. The lock call orders it against a checkpointer's lock
//       test: a checkpoint that found the byte free had announced its target before that
//       test, so the re-check sees the target and takes a newer snapshot. With no mark at or
//       below (every mark set from a newer header) it takes a newer snapshot.
//   M4. The byte is released when the connection's last read transaction ends (or W3 sends
//       its only snapshot back): a mark nobody holds pins nothing, whatever its words say.
//       A checkpoint waits for a shared mark as for a slot; a mark stays at its pin while
//       readers keep overlapping on it, so the marks are tried free-first (M2) to keep them
//       fresh.
//   M5. A checkpoint honours the mark this connection reads under as its own (it never waits
//       for it, and never asks the lock table about it: an OFD lock never conflicts with its
//       owner's own test, so the mark would read as held by nobody). The mark is read for each
//       holder scanned, after its pin (wal/checkpoint_copy.h step 2), and a joiner stores
//       the mark (seq_cst) before it stores the mark's pin (M2) or locks it shared (M3): so a pin
//       one of this connection's threads stored is seen as its own, and a checkpoint that read
//       the mark before the store had announced its target before it too (W3's re-check then sends
//       that reader to a newer snapshot). (Sampled once when a checkpoint began, a mark
//       another thread joined after that was skipped: a torn snapshot with overflow readers and
//       the handle's own background checkpointer.)
//
// Thread-safety: Claim once, before any read; Pin, Unpin, Open, Close and CheckInvariants
// with the pin mutex held (the caller's, given at construction); Own() and overflow() from any
// thread (the mark is atomic; the slot is fixed once claimed).
#ifndef JOURNALKV_WAL_READER_PINS_H_
#define JOURNALKV_WAL_READER_PINS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "shm/pin_scan.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "wal/wal_types.h"

namespace journalkv::wal {

// A snapshot's pins of log 0 and log 1 (shm/pins.h; log 1's is 0 in WAL mode).
using PinPair = std::pair<uint64_t, uint64_t>;
// Snapshot order (shm::PinBefore on log 0, then log 1), not numeric: after the 31-bit
// generation wraps, the older snapshot has the smaller generation only in serial order.
struct PinPairBefore {
  bool operator()(const PinPair& a, const PinPair& b) const {
    if (a.first != b.first) return shm::PinBefore(a.first, b.first);
    return shm::PinBefore(a.second, b.second);
  }
};

class ReaderPins {
 public:
  // `wal2`: pins name both logs (V5). `pin_mu`: the caller's mutex that serializes this
  // connection's pin changes; it outlives this object.
  ReaderPins(bool wal2, base::Mutex* pin_mu) : wal2_(wal2), pin_mu_(pin_mu) {}
  // Clears the slot's pins and lets go of the slot and of the mark, when claimed.
  ~ReaderPins();
  ReaderPins(const ReaderPins&) = delete;
  ReaderPins& operator=(const ReaderPins&) = delete;

  // The pin mutex, as the thread-safety analysis names it.
  base::Mutex* mu() const ABSL_LOCK_RETURNED(pin_mu_) { return pin_mu_; }

  // Claims the lowest free reader slot of `index` below `max_slots` (its old pins cleared,
  // a new owner id), or none: this connection then reads under the overflow marks (M1).
  // `index` (not owned) outlives this object. Internal (naming `what`) when a heap index, whose
  // one connection always finds a slot, has none free.
  absl::Status Claim(shm::WalIndex* index, int max_slots, const std::string& what);

  // The pins snapshot `s` needs: log 0's; in WAL2 log 1's too, naming its generation even where
  // the snapshot sees none of its frames (V5).
  PinPair PinsOf(const WalSnapshot& s) const { return {s.pin(0), wal2_ ? s.pin(1) : 0}; }

  // True when an open snapshot of this connection already holds every checkpoint below `pins`.
  bool Covered(const PinPair& pins) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  // W3's store: `pins` in the slot, or under a mark (M2, M3). False when no mark is at or below
  // them (M3: the caller takes a newer snapshot). REQUIRES: not Covered(pins).
  absl::StatusOr<bool> Pin(const PinPair& pins) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  // After Pin, when W3's re-check sends the reader to a newer snapshot: the slot back to the
  // open snapshots' oldest pins; the mark let go when none is open (M4).
  void Unpin() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  // The snapshot of `pins` is open (after Pin and W3's re-check, or Covered).
  void Open(const PinPair& pins) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  // The snapshot of `pins` ended: the slot moves to the oldest still open (W3), or the mark is
  // let go after the last (M4). A debug check fails for pins not open.
  void Close(const PinPair& pins) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);

  // This connection's pin holders, for the scans (M5).
  shm::OwnHolders Own() const { return {slot_, &mark_}; }
  // True once Claim found no slot: reads pin under the overflow marks.
  bool overflow() const { return index_ != nullptr && slot_ < 0; }
  int slot() const { return slot_; }

  // Debug builds: asserts the slot's pin, M1 and M4 (and V5's shape of the pins). A no-op
  // under NDEBUG.
  void CheckInvariants() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);

  // Test hook: the open snapshots' pins, oldest first.
  absl::InlinedVector<PinPair, 4> OpenPinsForTesting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_) {
    return open_pins_;
  }

 private:
  void SetPins(const PinPair& pins);
  // W3: at a read's end, `pins` no older than the slot's (or none).
  void ReleasePins(const PinPair& pins);
  // Overflow pins (M1..M5), for a connection with no slot: JoinMark pins `pins` under a mark
  // (the one this connection holds, a free one it sets, or the newest one in use at or below
  // them; false: none of those). LeaveMark lets go of it.
  absl::StatusOr<bool> JoinMark(const PinPair& pins) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  void LeaveMark();
  bool MarkProtects(int mark, const PinPair& pins) const;
  PinPair OldestOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_) {
    return open_pins_.empty() ? PinPair{0, 0} : open_pins_.front();
  }

  // Immutable after construction.
  const bool wal2_;
  base::Mutex* const pin_mu_;
  // Set once by Claim, before any read.
  shm::WalIndex* index_ = nullptr;
  int slot_ = -1;  // -1: every slot was taken (or not claimed); reads pin under an overflow mark
  // The overflow mark this connection holds shared while it has read transactions open (M1),
  // or -1. Changed under pin_mu_; atomic for Own() on other threads (M5).
  std::atomic<int> mark_{-1};
  // This connection's open snapshots (their pins of log 0 and log 1), oldest first (one entry
  // per snapshot, equal pins repeated); the slot holds the oldest (pins of either log only grow
  // with time, V1). A sorted inline vector, not a tree: a read transaction adds and removes one,
  // usually the only one, and a node allocation each time cost more than the rest of the pin.
  absl::InlinedVector<PinPair, 4> open_pins_ ABSL_GUARDED_BY(pin_mu_);
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_READER_PINS_H_
