// The value types of the WAL protocol (wal_connection.h): a connection's options, a snapshot,
// where a snapshot finds a page, the statistics and the policy's view of the log's progress.
#ifndef JOURNALKV_WAL_WAL_TYPES_H_
#define JOURNALKV_WAL_WAL_TYPES_H_

#include <array>
#include <cstdint>

#include "absl/time/time.h"
#include "base/counters.h"
#include "log/wal_log.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "vfs/sync.h"

namespace journalkv::wal {

using vfs::SyncLevel;

// How one connection uses the WAL protocol (the pager fills it from its PagerOptions).
struct WalOptions {
  bool wal2 = false;  // WAL2: two logs (V1..V6)
  SyncLevel sync = SyncLevel::kFull;
  bool read_only = false;
  // This connection is the database's only one for its whole life: the wal-index lives on
  // the heap, no -shm is made (the caller holds the database file EXCLUSIVE).
  bool exclusive_locking = false;
  // WAL2: the writer switches to the other log once the current one holds this many frames.
  uint32_t wal2_switch_pages = 1000;
  // The -shm reader slots this connection may claim (0..shm::kMaxSlots; beyond them the overflow
  // marks, wal/reader_pins.h M1..M5).
  int reader_slots = 512;
  absl::Duration busy_timeout = absl::Seconds(5);
  // When a log restarts, a file longer than this many bytes is cut back to it (0: never), so
  // that one big transaction does not leave the log at its peak size for good.
  uint64_t size_limit = 64ull << 20;
  // The smallest step by which a log file is preallocated (log/wal_log.h).
  uint64_t grow_bytes = wal::kGrowBytes;
  // > 0: each log is read through a read map of this many bytes (Options::mmap_size;
  // wal_connection.h Q1..Q5); 0: with pread.
  uint64_t log_map_bytes = 0;
  // The byte of the database file that read-only connections with a private index hold
  // shared for their life (PrivateIndex::Join, wal/private_index.h); the database file's lock
  // table owns its place.
  uint64_t private_reader_byte = 0;
};

// One snapshot of a WAL or WAL2 database: each log's generation and last visible frame.
struct WalSnapshot {
  struct Log {
    uint32_t seq = 0;  // log generation (ckpt_seq)
    uint32_t mx = 0;   // last committed frame visible
  };
  std::array<Log, 2> logs;  // logs[1]: WAL2 only
  int current = 0;          // the log the writer appended to (WAL: 0)
  uint32_t change = 0;      // the index header's change word (identifies the published state)
  // A read snapshot whose every frame was in the database file when it was pinned (O9); set
  // by WalConnection::BeginRead only, never part of the snapshot's identity.
  //   O9. `copied` is true only for a WAL (one log) read snapshot of a shared index with
  //       mx > 0 whose pin was stored (or covered by an older open pin of the connection) and
  //       whose log's backfill, read after that, equalled mx, with the generation read equal
  //       to seq after the backfill. Then the database file holds, for every page, the newest
  //       version at or below mx (C3: a copy writes each page's newest version <= its safe
  //       frame, and backfill moves only once those writes are done), and it keeps holding it
  //       until the pin goes: no checkpoint copies a frame past mx of the generation (the pin,
  //       W3, C4), a later generation's checkpoints stop at a pin of an older one (W7), and a
  //       copy made again from a forgotten backfill (C6, W8) writes the same newest versions
  //       again. So a read of such a snapshot may take any page from the database file without
  //       looking it up in the wal-index (WalReadTxn::Get), as Locate would for a page with no
  //       frame. Not for the page cache: its key (seq, 0) names the file's page as a snapshot
  //       finding no frame of it reads it, which an older snapshot of the generation may have
  //       cached before the copy; only the map reads it so (pager/mapped_pages.h O8 holds for
  //       the leaves it enters in the hot-page table: the file's page does not change while
  //       the identity's snapshots are pinned). WAL2 is left out: its copies and switches would
  //       need the same argument across two logs.
  bool copied = false;
  const Log& cur() const { return logs[current]; }
  uint64_t pin(int log) const { return shm::EncodePin(logs[log].seq, logs[log].mx); }
};

// The log header `h` names current: in WAL2 (V1) bit 0 of current_log; in WAL always log 0.
inline int CurrentLog(const shm::IndexHeader& h, bool wal2) {
  return wal2 ? static_cast<int>(h.current_log & 1) : 0;
}

// The log checkpoints and the policy look at while writers run (V4): WAL2's non-current log;
// WAL's only log.
inline int PolicyLog(const shm::IndexHeader& h, bool wal2) {
  return wal2 ? 1 - CurrentLog(h, true) : 0;
}

// The snapshot of published header `h`.
inline WalSnapshot SnapshotOf(const shm::IndexHeader& h, bool wal2) {
  WalSnapshot s;
  for (int l = 0; l < (wal2 ? 2 : 1); ++l) s.logs[l] = {h.logs[l].ckpt_seq, h.logs[l].mx_frame};
  s.current = CurrentLog(h, wal2);
  s.change = h.change;
  return s;
}

// The page cache's version key of a page as frame `frame` of log generation `seq` holds it
// (frame 0: as the database file holds it while that generation is current). The one place
// the key's layout is written.
constexpr uint64_t PageVersionKey(uint32_t seq, uint32_t frame) {
  return (uint64_t{seq} << 32) | frame;
}

// Where a snapshot finds a page.
struct PageVersion {
  int log = 0;            // the log holding `frame`
  uint32_t frame = 0;     // 0: the database file
  uint64_t key = 0;       // the page cache version (PageVersionKey)
  bool cacheable = true;  // false: an old-generation read (W7), not cached
};

// How far the log the checkpoint policy looks at is copied (WAL: the log; WAL2: the log that is
// not current, the only one checkpoints copy while writers run).
struct WalProgress {
  uint32_t seq = 0;  // the generation
  uint32_t log_frames = 0;
  uint32_t backfilled = 0;
  // log_frames, or 0 when every frame is copied (the log restarts); WAL2: both logs' frames
  // while the non-current one has frames to copy, else 0 (Progress)
  uint32_t live_frames = 0;
  int log = 0;               // which log
  uint32_t total_frames = 0;    // committed frames in every log (WAL2: both)
  uint32_t total_uncopied = 0;  // of those, not yet copied
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_WAL_TYPES_H_
