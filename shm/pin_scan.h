// The one scan of the readers' pins: which pins of the wal-index still hold a log back, and how
// far. Its users: a checkpoint's safe frame (wal/checkpoint_copy.h step 2), the checkpoint
// policy's view of the log and the connection's Stats (wal/wal_connection.h). It lives in shm/
// because it reads nothing but the wal-index's words and lock bytes, in the order the layout
// fixes (S1, shm/wal_index.h), and its users, the copy (wal/checkpoint_copy.h) and the
// connection, sit above shm/.
//
// A pin holds nothing back when its holder is gone (HolderLive): a slot whose owner died, a
// mark nobody reads under (wal/reader_pins.h M1, M4). The caller's own holders are live without
// a lock test: a lock never conflicts with its own owner's test, so the caller's own mark would
// read as held by nobody (M5).
//
// Thread-safety: any thread; the scan reads shared words only.
#ifndef JOURNALKV_SHM_PIN_SCAN_H_
#define JOURNALKV_SHM_PIN_SCAN_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "shm/wal_index.h"

namespace journalkv::shm {

// The pin holders (kPinHolders numbering) the scanning connection counts as its own: its reader
// slot (-1: none) and the overflow mark its threads read under now (kMaxSlots + *mark; *mark -1:
// none; null: none). The mark is loaded (seq_cst) at each test, after the holder's pin: another
// thread of the connection may join a mark while a scan runs (M5).
struct OwnHolders {
  int slot = -1;
  const std::atomic<int>* mark = nullptr;
  bool Is(int holder) const {
    if (holder == slot && slot >= 0) return true;
    return mark != nullptr && holder == kMaxSlots + mark->load(std::memory_order_seq_cst);
  }
};

// The liveness predicate: whether holder `holder`'s pin holds anything back. The caller's own
// holders always; another's unless its lock byte is free (WalIndex::HolderGone: one lock test).
absl::StatusOr<bool> HolderLive(WalIndex& index, int holder, const OwnHolders& own);

// What a scan is for, which decides which pins it lock-tests and what a failed test means.
enum class PinScanUse {
  // A checkpoint's safe frame: only a pin that would lower the limit found so far is tested
  // (a lock test is a system call on a shared index), a failed test fails the scan, and the
  // limit is never below `backfill` (what is copied stays copied).
  kCheckpoint,
  // The policy's and Stats' views: every pin is tested (each live one is counted), a failed
  // test counts the pin live, and `limit` is the plain minimum.
  kView,
};

struct PinScanResult {
  // The newest frame of generation `seq` every live pin allows, at most `ceiling`: a pin of
  // generation `seq` allows its frame; a pin of an older generation (its reader reads the
  // database file, W7) allows only `backfill`.
  uint32_t limit = 0;
  // The live pins found (kCheckpoint: only those tested, that is those that lowered the limit).
  int live = 0;
  // The oldest live pin (PinBefore order, any generation), 0 when none.
  uint64_t oldest = 0;
  // kCheckpoint: the pin that set `limit` is the caller's own (it will not move while the caller
  // waits for it).
  bool own_limits = false;
};

// Visits every pin holder once in S1 order (the slots below slots_used, then every mark) and
// reads its pin of log `log`. Errors: kCheckpoint only, a lock test that failed.
absl::StatusOr<PinScanResult> OldestLivePin(WalIndex& index, int log, uint32_t seq,
                                            uint32_t backfill, uint32_t ceiling,
                                            const OwnHolders& own, PinScanUse use);

}  // namespace journalkv::shm

#endif  // JOURNALKV_SHM_PIN_SCAN_H_
