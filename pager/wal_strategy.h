// WAL mode: how a pager's transactions reach the disk through the write-ahead log (wal/), the
// wal-index (shm/) and checkpoints (checkpoint/). The pager keeps transactions, dirty pages,
// the page cache, the header and the freelist; this class owns the log, the index and this
// connection's reader slot. DESIGN: docs/design-notes.md, "The journaling seam" and "WAL mode".
//
// States of one connection in WAL mode (the database file's SHARED lock is held for the whole
// life of the connection, so that no rollback-mode connection changes the file under it and
// the last one to close can tell it is the last):
//
//   +--------+ BeginRead           +---------+
//   |  OPEN  | ------------------> | READING |  pin = oldest open snapshot (one per process
//   | no pin | <------------------ | pinned  |  connection, kept in its reader slot)
//   +--------+ last EndRead        +---------+
//       | BeginWrite (WRITE lock)
//       v
//   +---------+ Spill: frames past mx_frame, not yet published
//   | WRITING | Commit: frames + commit frame, sync (FULL), index entries, publish
//   +---------+ Rollback: drop the unpublished frames' index entries
//
// Snapshots and pins. A read transaction's snapshot is (ckpt_seq, mx_frame) of the published
// index header: it reads page P from the newest frame <= mx_frame of that generation holding
// P, else from the database file. Its connection's reader slot pins the oldest open snapshot.
//
// Page versions (the page cache rule): a page read from frame F of generation G is cached as
// version (G, F); a page read from the database file under generation G as version (G, 0).
// Both are immutable: frames are never rewritten within a generation, and the database's copy
// of P cannot change within G for any snapshot that finds no frame of P (a checkpoint copying
// P's frame F waits for every snapshot below F, and a snapshot begun after that finds F). A
// reader of an older generation (the log restarted under it) reads the database file, which
// holds its snapshot (W7), and bypasses the cache.
//
// Invariants (cited at their call sites):
//   W1. FULL/EXTRA: a commit's frames are durable (one fdatasync of the preallocated log)
//       before the commit is published or acknowledged.
//   W2. Frames are published (index header) only after their index entries are in place, and
//       index entries past the published mx_frame are removed before frames are reused.
//   W3. A reader takes a snapshot without a system call: it stores its pin, then re-reads the
//       generation and the checkpoint target; when a checkpoint has announced a target past its
//       snapshot (it may not have seen the pin) it takes a newer snapshot.
//   W4. sync != OFF: the log header of a new generation is durable before its first frame is
//       written, so a power loss never brings back the old header over old frames that the
//       new generation partly overwrote (that would replay an old prefix over newer pages).
//   W5. sync != OFF: a log file's directory entry is durable once the connection that created
//       it has opened it, before any commit (W1) or checkpoint (C1) relies on its frames; a
//       log lost with its directory entry would take acknowledged commits (FULL) or the source
//       of a half-done checkpoint (NORMAL) with it. EXTRA also syncs the directory after the
//       last connection removes the log.
//   W6. The index is rebuilt from the log only under WRITE and RECOVER: at open by a
//       connection that is alone, or when the header stays torn (a process died publishing).
//       At FULL and EXTRA the log is synced before the frames found are published: a crashed
//       writer's unsynced frames become visible only once they are durable.
//   W7. The log restarts only when every frame is copied (backfill == mx_frame), under WRITE
//       and CKPT (a checkpoint must not pair one generation's header with the next one's
//       backfill). Every pinned reader's snapshot is then the database file's contents, and
//       pins of the old generation stop the new generation's checkpoints until they end. A
//       reader re-checks the generation after each lookup and frame read, and reads the
//       database file when it changed.
//   C1, C2 (checkpoint/checkpointer.h) order the checkpoint's syncs.
//
// Thread-safety: BeginRead/EndRead/Publish are called with the pager's mutex held (they change
// this connection's pin); Locate and ReadPage from any thread; the writer methods by the
// pager's one writer at a time.
#ifndef JOURNALKV_PAGER_WAL_STRATEGY_H_
#define JOURNALKV_PAGER_WAL_STRATEGY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/types.h"
#include "checkpoint/checkpointer.h"
#include "checkpoint/policy.h"
#include "pager/pager_options.h"
#include "shm/wal_index.h"
#include "vfs/vfs.h"
#include "wal/wal_log.h"

namespace journalkv::pager {

// One snapshot of a WAL database.
struct WalSnapshot {
  uint32_t seq = 0;     // log generation (ckpt_seq)
  uint32_t mx = 0;      // last committed frame visible
  uint32_t change = 0;  // the index header's change word (identifies the published state)
  uint32_t page_count = 0;
  uint64_t pin() const { return checkpoint::EncodePin(seq, mx); }
};

// Where a snapshot finds a page.
struct PageVersion {
  uint32_t frame = 0;     // 0: the database file
  uint64_t key = 0;       // the page cache version
  bool cacheable = true;  // false: an old-generation read (W7), not cached
};

struct WalStats {
  uint32_t log_frames = 0;       // committed frames in the log's current generation
  uint32_t backfilled = 0;       // of those, copied into the database file
  uint64_t checkpoints = 0;      // run by this connection
  uint64_t frames_copied = 0;    // by this connection's checkpoints
  uint64_t log_restarts = 0;     // by this connection
  uint64_t recoveries = 0;       // index rebuilds by this connection that found frames
  uint32_t oldest_pin_frame = 0;  // the oldest snapshot any connection pins (0: none pinned)
  int pinned_slots = 0;           // reader slots with a pin
  uint64_t log_bytes = 0;         // size of the log file
  absl::Duration checkpoint_lock_wait;  // this connection's checkpoints: waiting for CKPT, readers
  absl::Duration checkpoint_work;       // and copying, syncing, restarting
  uint64_t checkpoint_syncs = 0;        // their flushes (C1, C2)
};

// How far the log is copied (two loads from the shared index).
struct WalProgress {
  uint32_t seq = 0;  // the generation
  uint32_t log_frames = 0;
  uint32_t backfilled = 0;
  uint32_t live_frames = 0;  // log_frames, or 0 when every frame is copied (the log restarts)
};

// Test hook: called at named points of WAL transactions with the point's name ("begin_read:
// pinned" after a reader stored its pin and before it re-checks, "begin_read:done",
// "begin_write:locked" after the WRITE lock and any restart, "commit:appended" after a commit's
// frames are written and before they are synced and published); nullptr: none. Set it while
// no transaction runs.
// The pager's checkpoint policy adds "policy:blocked" when a commit starts waiting for the log
// to be copied and "policy:released" when it stops (pager_policy.cc), and a WAL opener of a
// rollback database "open:family_switched" after it committed the switch, before it takes
// SHARED again (pager.cc).
using WalHook = void (*)(const char* point);
void SetWalHookForTesting(WalHook hook);
void CallWalHook(const char* point);

class WalStrategy {
 public:
  // Opens `db_path`-wal and -shm next to the database (whose SHARED lock the caller holds for
  // the connection's life), joins or initialises the index (recovering it from the log when
  // this connection is alone) and claims a reader slot.
  static absl::StatusOr<std::unique_ptr<WalStrategy>> Open(vfs::FileSystem* fs,
                                                           const std::string& db_path,
                                                           vfs::File* db_file, uint32_t page_size,
                                                           const PagerOptions& options);
  ~WalStrategy();

  // --- reading. REQUIRES: the pager's mutex (serializes this connection's pin).
  absl::StatusOr<WalSnapshot> BeginRead(absl::Time deadline, bool writer_active);
  void EndRead(const WalSnapshot& snapshot);
  absl::StatusOr<PageVersion> Locate(const WalSnapshot& snapshot, PageNo page_no);
  // Reads the page `version` names into `out`; may clear version->cacheable (W7).
  absl::Status ReadPage(const WalSnapshot& snapshot, PageNo page_no, PageVersion* version,
                        absl::Span<uint8_t> out);

  // --- writing (the pager's one writer).
  // Takes the WRITE lock (waiting up to `deadline`), restarts the log when every frame is
  // copied (W7), removes unpublished index entries (W2) and returns the newest snapshot.
  absl::StatusOr<WalSnapshot> BeginWrite(absl::Time deadline);
  // Appends non-commit frames of a transaction too large for the cache; returns the frame of
  // each page, in order.
  absl::StatusOr<std::vector<uint32_t>> Spill(absl::Span<const wal::FramePage> pages);
  // Appends the transaction's last frames, the last a commit frame of `db_size` pages, syncs
  // (W1) and indexes them; returns the frame of each page. Not yet published: Publish.
  absl::StatusOr<std::vector<uint32_t>> Commit(absl::Span<const wal::FramePage> pages,
                                               uint32_t db_size);
  // Publishes the committed frames (W2). REQUIRES: the pager's mutex.
  WalSnapshot Publish();
  // Drops the transaction's unpublished frames from the index.
  absl::Status Rollback();
  // Releases the WRITE lock.
  void EndWrite();

  // --- checkpoints. FULL, RESTART and TRUNCATE REQUIRE the caller to hold the writer role
  // (BeginWrite ... EndWrite around the call).
  // `stop` (may be null): see checkpoint::CheckpointFiles::stop. `defer` (PASSIVE at FULL or
  // EXTRA only; ignored otherwise): leave the copy unsynced and unpublished when it copied
  // something (CheckpointFiles::deferred); a later checkpoint of this connection publishes it.
  absl::StatusOr<checkpoint::CheckpointResult> Checkpoint(checkpoint::CheckpointMode mode,
                                                          const std::atomic<bool>* stop = nullptr,
                                                          bool defer = false);

  // The log's state for the checkpoint policy (scans the reader slots), any thread.
  checkpoint::LogSnapshot PolicyView();
  WalProgress Progress();

  // At close: true when this connection may remove the log and index (the caller holds the
  // database file EXCLUSIVE, so no other connection has them open).
  absl::Status CloseLast();

  WalStats Stats();

 private:
  WalStrategy(vfs::FileSystem* fs, std::string db_path, vfs::File* db_file, uint32_t page_size,
              const PagerOptions& options);
  absl::Status Join(absl::Time deadline);
  absl::Status JoinExclusive();
  // A read-only connection that may not write -shm: a private index on the heap, rebuilt from
  // the log up to the published header (read with pread), and kPrivateReaderByte held so that
  // no checkpoint or restart changes the database file or the log under it.
  absl::Status JoinPrivate(const absl::Status& why);
  // Private mode: indexes the frames published since the last look. REQUIRES: the pager's mutex.
  absl::Status RefreshPrivate();
  bool RestartAllowed();
  absl::Status ClaimSlot();
  // A read-only connection that joined with no log opens it. REQUIRES: the pager's mutex.
  absl::Status OpenLogForReading();
  // W6: rebuilds the index from the log. REQUIRES: WRITE and RECOVER held.
  absl::Status RecoverIndex();
  absl::Status RepairHeader();
  absl::Status MaybeRestart(shm::IndexHeader& header);
  absl::StatusOr<shm::IndexHeader> ReadHeaderOrRecover(absl::Time deadline, bool may_recover);
  checkpoint::CheckpointFiles Files();
  void SetPin(uint64_t pin);
  absl::Status WriteFrames(absl::Span<const wal::FramePage> pages, uint32_t commit_db_size,
                           std::vector<uint32_t>* frames);

  vfs::FileSystem* const fs_;
  const std::string db_path_;
  const std::string wal_path_;
  const std::string shm_path_;
  vfs::File* const db_file_;
  const uint32_t page_size_;
  const PagerOptions options_;
  std::unique_ptr<vfs::File> shm_file_;
  bool private_ = false;                         // see JoinPrivate
  std::unique_ptr<vfs::File> private_shm_;       // private mode: -shm opened read-only, if any
  uint32_t private_change_ = 0;                  // private mode: the header last indexed
  std::unique_ptr<shm::WalIndex> index_;
  // Null only in a read-only connection until a snapshot has frames (set once, under the
  // pager's mutex, before any read of a frame).
  std::unique_ptr<wal::WalLog> log_;
  int slot_ = -1;

  // This connection's open snapshots (pins), under the pager's mutex; the slot holds the
  // oldest.
  std::multimap<uint64_t, int> open_pins_;

  // Writer state (the pager's one writer).
  bool write_locked_ = false;
  shm::IndexHeader writer_header_;  // published state at BeginWrite, then as the writer appends
  uint32_t next_frame_ = 0;         // the frame the next append writes
  uint64_t chain_ = 0;              // checksum chain value before next_frame_

  base::Mutex ckpt_mu_;  // one checkpoint of this connection at a time (CKPT is per File)
  checkpoint::DeferredCopy deferred_ ABSL_GUARDED_BY(ckpt_mu_);
  base::Mutex stats_mu_;
  WalStats stats_ ABSL_GUARDED_BY(stats_mu_);
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_WAL_STRATEGY_H_
