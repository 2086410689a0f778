// Options of the pager: journal mode, sync level, page size, cache size, busy timeout.
// The engine's public Options map onto these one to one.
#ifndef JOURNALKV_PAGER_PAGER_OPTIONS_H_
#define JOURNALKV_PAGER_PAGER_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pager/db_format.h"
#include "pager/journal_mode.h"
#include "vfs/sync.h"

namespace journalkv::checkpoint {
class CheckpointPolicy;  // checkpoint/policy.h: WAL's only, so not included here
}  // namespace journalkv::checkpoint

namespace journalkv::pager {

// The journal family page 1 records for a mode.
inline JournalFamily FamilyOf(JournalMode mode) {
  return mode == JournalMode::kWal      ? JournalFamily::kWal
         : mode == JournalMode::kWal2   ? JournalFamily::kWal2
         : mode == JournalMode::kAtomic ? JournalFamily::kAtomic
                                        : JournalFamily::kRollback;
}

enum class AccessMode { kReadWrite, kReadOnly };

// The default of PagerOptions::mmap_size: 0 (off), unless the environment variable
// JOURNALKV_TEST_MMAP_SIZE holds a number of bytes (read once; how the test suites are run with
// the map on, docs/testing.md).
uint64_t DefaultMmapSize();

struct PagerOptions {
  JournalMode journal_mode = JournalMode::kDelete;
  SyncLevel sync = SyncLevel::kFull;
  uint32_t page_size = kDefaultPageSize;  // used only when the database is created
  uint32_t cache_pages = 2000;            // clean pages kept; also the dirty-page spill limit
  // The most bytes of the database file read through a read-only memory map (vfs/read_map.h,
  // E1..E5) instead of pread; 0: none.
  uint64_t mmap_size = DefaultMmapSize();
  // At each commit that changed the freelist, the free pages at the end of the database leave
  // it and the database ends before them (WriteTxn::Commit, ReleaseFreeTail).
  bool auto_vacuum = false;
  absl::Duration busy_timeout = absl::Seconds(5);
  AccessMode access = AccessMode::kReadWrite;
  // Why the connection is read-only when the caller did not ask for it (the engine fell back
  // to reading because writing is not allowed); empty otherwise. Named by the writes' error.
  std::string read_only_reason;
  // WAL: decides after each commit when the log is copied back, and on which thread
  // (checkpoint/policy.h); nullptr: threshold:1000.
  std::shared_ptr<checkpoint::CheckpointPolicy> checkpoint_policy;
  // WAL: this connection is the database's only one for its whole life. The database file is
  // locked exclusively (other openers get busy errors) and the wal-index lives on the heap, so
  // no -shm file is made and no shared memory is needed.
  bool exclusive_locking = false;
  // WAL2: the writer switches to the other log once the current one holds this many frames
  // (and the other one is copied completely).
  uint32_t wal2_switch_pages = 1000;
  uint64_t wal_size_limit = 64ull << 20;  // WAL: a restarted log longer than this is cut back
  uint64_t wal_grow_bytes = uint64_t{1} << 20;  // WAL: the log's smallest preallocation step
  // WAL: the reader slots of the -shm this connection may claim (0..shm::kMaxSlots). A
  // connection that finds all of them taken still reads and writes: it pins its snapshots
  // under the shared overflow marks, at a few lock calls per read transaction
  // (wal/reader_pins.h M1..M5).
  int reader_slots = 512;
  // ATOMIC: the journal mode to run in instead when the database file has no atomic batches
  // (vfs::File::atomic_write_kind() kNone: ext4, tmpfs, ...). None (the default): such an open
  // is refused (FailedPrecondition, naming what atomic mode needs). Any mode but atomic.
  std::optional<JournalMode> atomic_fallback;
  // Set by Pager::Open, not by callers: why the connection runs in journal_mode although
  // atomic was asked for (the fallback was taken); empty when it was not.
  std::string atomic_fallback_reason;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGER_OPTIONS_H_
