// The WAL protocol (WAL and WAL2): how a pager's transactions reach the disk through the
// write-ahead log (log/), the wal-index (shm/) and checkpoints (wal/checkpoint_copy.h). The pager keeps transactions, dirty pages,
// the page cache, the header and the freelist; this class owns the log, the index and this
// connection's reader slot. Design: docs/design-notes.md, "The journaling seam"; README,
// "WAL mode".
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
//   | WRITING | Commit: frames + commit frame, index entries; NORMAL/OFF: publish
//   +---------+ Rollback: drop the unpublished frames' index entries
//       | EndWrite (WRITE released)
//       v
//   AwaitDurable (FULL/EXTRA, or another writer's commits pending): the group flush, W12
//
// WRITING is the writer role's LOCKED, APPENDED and COMMITTED (wal::Writer, wal/writer.h, whose
// state table checks each edge in debug and sanitizer builds).
//
// Two headers. The published header (what readers snapshot) and the appended header (the
// newest commit appended, what the next writer builds on) are the same but while a group
// flush is pending at FULL and EXTRA: a writer appends its commit and gives WRITE up before
// the commit is durable, and it becomes visible once a flush covers it (W12).
//
// Snapshots and pins. A read transaction's snapshot is (ckpt_seq, mx_frame) of the published
// index header: it reads page P from the newest frame <= mx_frame of that generation holding
// P, else from the database file. Its connection's reader slot pins the oldest open snapshot.
//
// Page versions (the page cache rule): a page read from frame F of generation G is cached as
// version (G, F); a page read from the database file under generation G as version (G, 0).
// Both are immutable: published frames are never rewritten within a generation (a transaction
// rewrites only its own frames, before its commit, W11), and the database's copy
// of P cannot change within G for any snapshot that finds no frame of P (a checkpoint copying
// P's frame F waits for every snapshot below F, and a snapshot begun after that finds F). A
// reader of an older generation (the log restarted under it) reads the database file, which
// holds its snapshot (W7), and bypasses the cache.
//
// Invariants (cited at their call sites):
//   W1. FULL/EXTRA: a commit's frames are durable (one fdatasync of the preallocated log)
//       before the commit is published or acknowledged (W12: the sync may be another
//       writer's, covering this commit's frames too).
//   W2. Frames are published (index header) only after their index entries are in place, and
//       index entries past the appended header's mx_frame are removed before frames are
//       reused (past the published one only once nothing is pending, W12).
//   W3. A reader takes a snapshot without a system call: it stores its pin, then re-reads the
//       generation and the checkpoint target; when a checkpoint has announced a target past its
//       snapshot (it may not have seen the pin) it takes a newer snapshot. A read's end
//       only clears its pin or moves it to a later snapshot (a release store: its reads come
//       before it, and a checkpointer that misses it keeps honouring the older pin).
//   W4. sync != OFF: the log header of a new generation is durable before its first frame is
//       written, so a power loss never brings back the old header over old frames that the
//       new generation partly overwrote (that would replay an old prefix over newer pages).
//   W5. sync != OFF: a log file's directory entry is durable once the connection that created
//       it has opened it, before any commit (W1) or checkpoint (C1) relies on its frames; a
//       log lost with its directory entry would take acknowledged commits (FULL) or the source
//       of a half-done checkpoint (NORMAL) with it. EXTRA also syncs the directory after the
//       last connection removes the log.
//   W6. The index is rebuilt from the log only under WRITE and RECOVER: at open by a
//       connection that is alone, when the header stays torn (a process died publishing), or
//       when a writer finds the header contradicting the log (IndexDamage: a backfill past a
//       log's last frame, or a current log whose last frame is not the commit frame with the
//       header's salts and chain value; the -shm was overwritten by a buggy process).
//       At FULL and EXTRA the log is synced before the frames found are published: a crashed
//       writer's unsynced frames become visible only once they are durable.
//   W7. The log restarts only when every frame is copied (backfill == mx_frame), under WRITE
//       and CKPT (a checkpoint must not pair one generation's header with the next one's
//       backfill). Every pinned reader's snapshot is then the database file's contents, and
//       pins of the old generation stop the new generation's checkpoints until they end. A
//       reader re-checks the generation after each lookup and frame read, and reads the
//       database file when it changed.
//   W8. A restart moves the index from one whole state to the next at every store
//       (RestartLog): the target first names the old generation's last frame, then
//       the backfill is cleared, then the new generation is published, then its target and
//       copy frontier (C3) start empty. A reader that read the old header and pins in between
//       finds the target past its snapshot (W3) and takes a newer one; a process killed in
//       between leaves either the old generation with backfill 0 (copied again) or the new one
//       with nothing copied (killed inside the publish, between the appended and the published
//       header: the old generation too, W12 f). IndexRecovery::RecoverIndex sets its words before its header the same way. (The
//       old order, backfill and target cleared with the target of the next generation before
//       the publish, let a reader settle on a snapshot the database file had already moved
//       past: wal_interleaving_test, AReaderPinningWhileALogRestartsHalfwayTakesAWholeSnapshot,
//       hook "restart:midway"; publishing first instead left, for a writer killed in between,
//       the new generation with the old backfill, whose frames were then never copied:
//       wal_multiprocess_test's checkpointer that kills itself at that hook.)
//   W9. Holding WRITE is one role per connection, not per thread: byte-range locks belong to
//       the -shm File, which the connection's threads share, so a reader thread is granted
//       WRITE and RECOVER while the writer thread holds them. Only the writer thread repairs a
//       torn header while the connection writes; other threads take WRITE to repair only
//       under the writer role's mutex (Writer::role_mu, wal/writer.h) and only while the
//       connection holds none (IndexRecovery::ReadHeaderOrRepair).
//       A reader thread that repaired under the writer truncated the writer's appended,
//       unpublished index entries, and its commit's pages were then not found
//       (wal_interleaving_test, AReaderThreadOfTheWritersHandleNeverRepairsUnderItsWriter).
//   W10. The -shm is removed only by a connection no other has beside it: a read-write one
//       under the database file's EXCLUSIVE (CloseLast), a read-only one under DMS exclusive
//       and only while no log exists (CloseReadOnly); an opener whose locked -shm turns out
//       to be unlinked opens the path again (Join, hook "open:shm_removed").
//   W11 (a transaction writes a page it already wrote over its own frame, past the published
//       mx_frame, and rechains before its commit frame) is the writer role's: wal/writer.h.
//   W12. Group commit. At FULL and EXTRA a writer appends its commit (frames, index entries,
//       then the appended header; WalIndex::WriteAppendedHeader) under WRITE, releases WRITE,
//       and waits for a flush to cover it (AwaitDurable): whoever first holds FLUSH (the -shm
//       lock, and a mutex among a connection's threads: wal::GroupFlush, wal/group_flush.h)
//       syncs the log through the newest appended commit and publishes that header; every
//       commit it covers is acknowledged by it, and the next writer appends meanwhile. So:
//       (a) the appended header is written only under WRITE, after the commit's index entries
//           (W2), and only grows: published <= appended at every moment;
//       (b) the published header is written by a FLUSH holder (PublishHeader), or under WRITE
//           when nothing is pending (a NORMAL or OFF commit, a restart: WriteHeader), never
//           both at once: a flusher publishes only while something is pending, and its own
//           publish is what ends it; a writer that finds something pending publishes through
//           the flush (NORMAL and OFF then sync too, for the pending FULL commits);
//       (c) a log restarts (W7) only with nothing pending, and WAL2's writer flushes what is
//           pending before it switches logs (V6 at every level): frames of the log switched to
//           must never become durable before pending frames of the log switched from, which
//           no checksum chain ties together; checkpoints as the writer flush first too;
//       (d) header repair and recovery (W6) take FLUSH after WRITE and RECOVER, so they never
//           race a publish; a flusher that died holding FLUSH freed it, and the next one (or
//           the next writer's BeginWrite, whose base is the appended header) syncs again.
//       (e) a writer killed writing the appended header (D, then C) leaves it torn; the next
//           WRITE holder repairs it from its whole copy (RepairAppended: D, else C), which
//           keeps every pending commit, and never rebuilds the index for it (a rebuild empties
//           the hash tables that open read transactions look up).
//       (f) WriteHeader writes the appended header, then the published one: a process killed
//           between them (a restart or a WAL2 switch, W8; a NORMAL commit) leaves an appended
//           header that is not the published one plus pending commits. The next WRITE holder
//           takes the published header as the state (AppendedOrDamage): for a restart that is
//           W8's old generation with its backfill cleared, copied again; a NORMAL commit
//           stays pending, and the next flush publishes it. (Taken for damage, this too
//           rebuilt the index under open read transactions: wal_multiprocess_test, wal2;
//           wal_damaged_index_test, AHeaderWriteCutBetweenItsHalvesIsRepairedNotRebuilt.)
//       (g) A long WAL log (RestartThroughPendingFrames) copied up to a few frames of its
//           published end (kRestartCopyFrames) is restarted even when commits are pending
//           past it: the writer, holding WRITE, flushes them (c), copies them and the frames
//           left with a passive checkpoint, and restarts if that copy reached them (readers
//           begun before the flush may hold it back; then a later writer tries). Writers of
//           several processes nearly always find a commit pending, and the log, never
//           restarting, grew by every commit while the policy checkpointed after each
//           (wal_group_commit_test, PendingCommitsDoNotKeepACopiedLogFromRestarting and
//           AWriterCopiesTheLastFewFramesAndRestarts, hook
//           "begin_write:restart_through_pending").
//       A writer killed after its append and before the flush leaves a commit that the next
//       flush publishes: it was never acknowledged, and may be present (I7).
//       (h) A flusher publishes only a header it read whole and found older than the one it
//           made durable, read again after its sync: a NORMAL or OFF commit may have published
//           a newer one meanwhile (with nothing pending it publishes under WRITE alone, b), and
//           publishing the older one would move the published state back. A flusher that
//           cannot read the published header whole publishes nothing over it (the tear may be
//           a live publisher between its copies): it completes a publish whose copy B is whole
//           by copying B to A (WalIndex::CompletePublishFromB, which can never make an older
//           header whole), and leaves a torn B to a repair under WRITE (its caller, W6).
//           (Before, it took the tear for "pending" and published the appended header it had
//           read before its sync over a newer one: wal_mixed_connections_test,
//           AFlusherNeverPublishesOverANewerDirectPublish.)
//   W13 (a failed log sync: every commit it may have lost fails, in every connection, and the
//       next writer resets) is the durability role's: wal/log_durability.h.
//   W14. A wait for FLUSH or for a flush gives up after 30 s without a flush that published
//       (or the busy timeout, when longer; LockFlush, AwaitDurable): a process stopped, not
//       killed, while holding FLUSH (a debugger) would otherwise hold every committer of every
//       process. Not the busy timeout alone: one sync of a loaded disk can take seconds, and a
//       commit that gave up on it would be left in an unknown state for nothing.
//       A commit that gives up waiting returns Unavailable ("busy") and is in an unknown state:
//       it is appended, and the stopped flusher or the next one may still publish it.
//   D1 (the sync floor: the level of the syncs made for every connection's commits) and D2
//       (synced_through: how far each log is known durable) are the durability role's:
//       wal/log_durability.h.
//   M1-M5 (the overflow marks of a connection that found no free reader slot) are the reader
//       role's: wal/reader_pins.h.
//   C1, C2 (wal/checkpoint_copy.h) order the checkpoint's syncs; C3, C4 what the database
//       file holds past the backfill.
//
// WAL2 (two logs, x.db-wal = log 0 and x.db-wal2 = log 1; docs/design-notes.md, "WAL2"):
//   V1. Every new generation of either log gets a ckpt_seq one past the newest of both
//       (RestartLog), so the current log is the one with the later generation,
//       in the index and, once its header is written (W4), in the files: recovery orders the
//       logs by it alone.
//   V2. A snapshot is overlaid in this order: the current log up to its mx, then the other
//       log, then the database file. A page version key names the generation (unique across
//       both logs) and the frame.
//   V3. The writer switches (restarts the other log as the current one) only when the other
//       log is copied completely (backfill == mx) and only inside BeginWrite, under WRITE and
//       CKPT; it never waits for either: when they are not free it appends to the current log.
//       An empty current log restarts in place instead.
//   V4. Checkpoints copy only the non-current log, chosen under CKPT, and never as the writer.
//       FULL, RESTART and TRUNCATE (StartWal2Checkpoint) run in phases, which the caller
//       steps through, taking its writer role for 2 and 4 only (wal/checkpoints.h):
//         1. the non-current log completely (waiting for its readers, as FULL does);
//         2. as the writer (hook "checkpoint:switching"), a V3 switch: the current log, if it
//            still is the generation that was current at the call and has frames, becomes the
//            non-current one (waiting for CKPT, which only checkpoints with nothing left to
//            copy can hold now);
//         3. that log completely (hook "checkpoint:switched"): every commit made before the
//            call is now in the database file;
//         4. RESTART and TRUNCATE ("checkpoint:copied" before it takes the writer), as the
//            writer again ("checkpoint:restarting"): with no
//            commit since step 2 both logs restart in one publish (TRUNCATE cuts both files,
//            R2); with commits, which are in the current log, the writer switches to a new
//            generation of the copied log (TRUNCATE cuts its file: older than the current
//            log's, whose header W4 wrote first), so the next commit starts a log. A writer
//            that switched after step 3 did the same (its log began after step 3 ended).
//       The writer is held for the switches only (microseconds): commits made meanwhile go on
//       into the current log. Only CloseLast, alone, copies both logs as the writer.
//   V5. A reader pins both logs (a pin names the log's generation even with no frames of it
//       visible), so a checkpoint of a later generation of either log waits for it (W7).
//   V6. sync NORMAL: before the first frame of a log switched to is written, the log switched
//       from is synced (unless it is copied already, C1), so that no power loss keeps commits
//       of the newer log while losing the older log's unsynced tail.
//
// The logs read through a map (Options::mmap_size > 0, WalOptions::log_map_bytes; measured in
// bench/results-2026-12-07/mmap/NOTES.md, "Log frames through the map"). A page whose newest
// version is a frame used to be a pread of the log; with the map it is a copy out of a
// read-only shared map of the log file (vfs/read_map.h, the database file's mechanism, E1..E5):
//   Q1. Each log's File is mapped once, when WalLog::Open opens it (before it is shared), at
//       log_map_bytes bytes, as a map only copied from (File::EnableCopyMap: it hands no page
//       out and takes no slot of the SIGBUS handler's registry, which stays for the database
//       files' maps, O1); every read of the log through it (ReadPage, the scans, the
//       checkpoint's reads) is a guarded copy into the caller's buffer, the same buffer pread
//       would fill, and the page read is checked exactly as a pread page (the page checksum,
//       PagerCore::CheckLoaded, for every copy). No pointer into a log's map is handed out,
//       and no page of it is trusted past its copy: a restart may overwrite a frame while a
//       transaction reads it (the writer never waits for readers, W7), so the bytes must be
//       the reader's own before they are judged.
//   Q2. Who writes a frame, who reads it, in what order. Frame F of generation G is written
//       (pwrite) by the one WRITE holder, before its commit publishes it, and never again
//       within G (W11: a transaction rewrites only its unpublished frames). The next writer of
//       that place in the file is the next generation's: a restart (W8) publishes the new
//       generation in the index (WalIndex::WriteHeader, which ends with a release fence) before
//       any frame of it is written or the file is cut (the new log header first, W4; the size
//       limit's cut after it, Writer::LimitLogSize; a TRUNCATE checkpoint's cut after the
//       restart). A reader copies F (published in G, at or below its snapshot's mx), then
//       checks that the generation is still G (GenerationIs, whose acquire fence keeps the
//       copy's loads before the generation's): a copy that saw any byte the next generation
//       wrote, or faulted on a cut, finds the generation moved and reads the database file,
//       which holds its snapshot's pages (W7); a copy that finds G still current read F as G's
//       commit wrote it. This is the pread path's order; only the copy's source changed.
//   Q3. What a reader sees between a restart's writes: the old frame whole, or a mixture of
//       old and new bytes (a copy out of the map is not atomic, nor is a pread), or zeros past
//       a cut (a fault, Q4): any of them only while the new generation is already published,
//       so the check after the copy throws them away. Hook "read:frame_copied" runs between
//       the copy and that check (and "read:frame" before the copy): a test stops a reader
//       there while another connection restarts, overwrites or cuts the log.
//   Q4. The log grows and is cut under the map. Growth needs no remap: the map is made at
//       log_map_bytes whatever the file's size (E3), and frames appended later are read
//       through it once fstat has seen them (E4); frames past log_map_bytes are preads. A cut
//       by this connection (the size limit, TRUNCATE) lowers the size the map trusts (E4); a
//       cut by another connection faults inside the guarded copy (SIGBUS, E5), and the read is
//       a pread, whose short read is DataLoss "wal frame ... is missing" unless the generation
//       moved (Q2), as without the map. Reads past the size last seen go to pread too.
//   Q5. The map is optional: a file system without one (the in-memory one, the fault layer
//       over it) or no address space left leaves the log's reads preads (the same bytes, the
//       same checks), and Stats' log_map_reads / log_map_faults say which reads went where.
//
// Thread-safety: BeginRead and EndRead are called with the caller's pin mutex held (the
// pager's mutex, given at Open: they change this connection's pin; the annotations name it
// pin_mu()); Locate and ReadPage from any thread; the writer methods by the pager's one
// writer at a time.
#ifndef JOURNALKV_WAL_WAL_CONNECTION_H_
#define JOURNALKV_WAL_WAL_CONNECTION_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "base/mutex.h"
#include "base/types.h"
#include "shm/pin_scan.h"
#include "shm/wal_index.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"
#include "log/wal_log.h"
#include "wal/checkpoint_copy.h"
#include "wal/checkpoints.h"
#include "wal/group_flush.h"
#include "wal/index_recovery.h"
#include "wal/lock_byte.h"
#include "wal/log_durability.h"
#include "wal/private_index.h"
#include "wal/reader_pins.h"
#include "wal/wal_types.h"
#include "wal/writer.h"
#include "wal/writer_cursor.h"

namespace journalkv::wal {

using vfs::SyncLevel;

// Test hook: called at named points of WAL transactions with the point's name
// ("begin_read:header" after a reader read the header and before it pins it, "begin_read:
// pinned" after a reader stored its pin and before it re-checks, "begin_read:done",
// "begin_write:locked" after the WRITE lock and any restart, "repair:appended" when a WRITE
// holder rewrites a torn appended header from its whole copy (W12 e), "commit:appended" after a commit's
// frames are written and before they are synced and published, "flush:synced" after a group
// flush synced the log and before it publishes (W12), "flush:releasing" when a FLUSH holder
// has marked the FLUSH word released and before it lets the locks go (Z1, wal/group_flush.h),
// "await:start" when a commit appended and
// WRITE let go begins to wait for its flush, "begin_write:restart_through_pending"
// before a writer flushes and copies pending commits to restart the log (W12 g), "read:frame"
// and "read:db" before a page is read from the log or from the database file,
// "read:frame_copied" after a frame's copy and before its generation check (Q3), "wait" before
// each sleep waiting for another connection); nullptr: none. Set it while no transaction runs.
// The pager's checkpoint policy adds "policy:blocked" when a commit starts waiting for the log
// to be copied and "policy:released" when it stops, "background:stepped" after a background
// checkpoint step that copied frames and left some unpublished (at FULL and EXTRA, a deferred
// copy; pager_policy.cc), and a WAL opener of a
// rollback database "open:family_switched" after it committed the switch, before it takes
// SHARED again, and an opener of an empty file "open:creating" once it holds SHARED, before it
// creates the database (pager.cc); "close:removing_shm" before a last read-only connection
// removes the -shm and "open:shm_removed" when an opener found the -shm it locked removed
// (W10); "sync:done" after a log sync MakeLogDurable made succeeded, "sync:failure_recorded"
// once a failed one is recorded (W13 a), "reset:start" and "reset:done" around a writer's
// reset after it (W13 c); the pager's "commit:published" after a commit's flush and before
// the handle notes its snapshot, and the engine's "backup:renaming" before a backup's rename.
using WalHook = void (*)(const char* point);
void SetWalHookForTesting(WalHook hook);
// The generation (ckpt_seq) a wal-index built with no log and no earlier index starts from
// (0 unless a test sets it: a test of the 31-bit wrap starts near it). Set it before opening.
void SetFirstGenerationForTesting(uint32_t seq);
// W12 g: how long (frames) a WAL log copied up to a few frames of its published end must be
// before a writer copies those, flushing and copying any pending commits too, in order to
// restart it (kRestartThroughPendingFrames unless a test sets it; 0: that again).
void SetRestartThroughPendingFramesForTesting(uint32_t frames);
// W14: how long, at the least, a wait for FLUSH or for a flush goes without a publish before
// it gives up (the busy timeout when longer): 30 s unless a test sets it.
void SetMinFlushWaitForTesting(absl::Duration wait);
void CallWalHook(const char* point);

class WalConnection {
 public:
  // Opens `db_path`-wal and -shm next to the database (whose SHARED lock the caller holds for
  // the connection's life), joins or initialises the index (recovering it from the log when
  // this connection is alone) and claims a reader slot. `pin_mu`: the caller's mutex that
  // serializes the changes of this connection's pin (held around BeginRead and EndRead); it
  // outlives the connection.
  static absl::StatusOr<std::unique_ptr<WalConnection>> Open(vfs::FileSystem* fs,
                                                           const std::string& db_path,
                                                           vfs::File* db_file, uint32_t page_size,
                                                           const WalOptions& options,
                                                           base::Mutex* pin_mu);
  ~WalConnection();

  // The pin mutex given at Open, as the thread-safety analysis names it.
  base::Mutex* pin_mu() const ABSL_LOCK_RETURNED(pins_.mu()) { return pins_.mu(); }

  // --- reading (the pin mutex serializes this connection's pin).
  // Waits up to `timeout` (Unavailable "busy: ...") counted from the first time it has to wait
  // (a torn header, every overflow mark taken, a checkpoint past the snapshot): a read that
  // finds the header whole and settles at once reads no clock.
  absl::StatusOr<WalSnapshot> BeginRead(absl::Duration timeout, bool writer_active)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pins_.mu());
  void EndRead(const WalSnapshot& snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pins_.mu());
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
  // A commit appended by Commit (wal/writer.h).
  using CommitTicket = Writer::CommitTicket;
  // Appends the transaction's last frames, the last a commit frame of `db_size` pages, and
  // indexes them (W2). At NORMAL and OFF with nothing pending it publishes them too; otherwise
  // it records them as the appended header and the caller, after EndWrite, waits for the
  // group flush that makes them durable and visible (AwaitDurable, W12).
  absl::StatusOr<CommitTicket> Commit(absl::Span<const wal::FramePage> pages, uint32_t db_size);
  // W12: returns once a published header covers the ticket's commit (at once when Commit
  // published it), syncing the log and publishing the appended header itself when it holds
  // FLUSH first; returns that published header's snapshot. Called without WRITE. Errors: this
  // flush's sync failed (the commit may be present after a crash: I7); DataLoss, a log sync
  // failed before the commit was durable, in this or another thread or connection, and the
  // commit is dropped (W13); Unavailable, FLUSH stayed held past the busy timeout (W14).
  absl::StatusOr<WalSnapshot> AwaitDurable(const CommitTicket& ticket);
  // Drops the transaction's unpublished frames from the index.
  absl::Status Rollback();
  // Releases the WRITE lock.
  void EndWrite();
  // The caller's threads that wait to become this connection's writer (+1 when one starts
  // waiting, -1 when it stops): a group flush waits for them to append and join it (W12).
  void AddWaitingWriters(int delta) { flush_.AddWaitingWriters(delta); }

  // --- checkpoints. FULL, RESTART and TRUNCATE REQUIRE the caller to hold the writer role
  // (BeginWrite ... EndWrite around the call); in WAL2 they then copy both logs as the writer
  // (CloseLast does so), which StartWal2Checkpoint's phases avoid.
  // `stop` (may be null): see CheckpointFiles::stop. `defer` (PASSIVE at FULL or
  // EXTRA only; ignored otherwise): leave the copy unsynced and unpublished when it copied
  // something (CheckpointFiles::publish); a later checkpoint of any connection publishes it.
  absl::StatusOr<CheckpointResult> Checkpoint(CheckpointMode mode,
                                                          const std::atomic<bool>* stop = nullptr,
                                                          bool defer = false);
  bool wal2() const { return wal2_; }
  // The append epoch (W13): it moves when a writer drops commits a failed sync left, after
  // which later commits reuse their frames. One load.
  uint32_t append_epoch() const { return index_->append_epoch(); }
  // The database file's write epoch (shm/wal_index.h O4): odd while a checkpoint writes it.
  uint32_t db_epoch() const { return index_->db_epoch(); }
  // WAL2's FULL, RESTART and TRUNCATE, in the phases of V4 (wal/checkpoints.h), which the
  // caller runs one step at a time until c.done(), holding its writer role (BeginWrite ...
  // EndWrite) around a step exactly when c.needs_writer(): the switches, never a copy.
  // REQUIRES for Start: the caller does not hold the writer role.
  absl::StatusOr<Wal2Checkpoint> StartWal2Checkpoint(CheckpointMode mode);
  absl::Status Wal2CheckpointStep(Wal2Checkpoint& c);

  // The log's state for the checkpoint policy (scans the reader slots), any thread; and, when
  // `total_frames` is set, the committed frames of every log (WAL2: both).
  LogSnapshot PolicyView(uint32_t* total_frames = nullptr);
  WalProgress Progress();

  // At close: true when this connection may remove the log and index (the caller holds the
  // database file EXCLUSIVE, so no other connection has them open).
  absl::Status CloseLast();
  // At the close of a read-only connection: removes the -shm when no other connection has it
  // open and no log exists (W10).
  absl::Status CloseReadOnly();

  // This connection's tickers and the WAL's gauges (the log's frames, bytes and readers), as
  // rows of the counter table (base/counters.h).
  base::CounterArray Stats();

 private:
  // O9 (wal_types.h): `snap` with `copied` set when every frame of it is in the database file.
  WalSnapshot MarkCopied(WalSnapshot snap);
  WalConnection(vfs::FileSystem* fs, std::string db_path, vfs::File* db_file, uint32_t page_size,
              const WalOptions& options, base::Mutex* pin_mu);
  absl::Status Join(absl::Time deadline);
  absl::Status JoinExclusive();
  // W12 g: flushes the commits pending past the published state (`header` is the appended
  // one), copies them and the published frames left, and restarts the log when the copy
  // reached them. REQUIRES: WRITE, WAL.
  absl::Status RestartThroughPending(shm::IndexHeader& header)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_lock_);
  // Restarts log `log` (W7, V3) when every frame of it is copied and CKPT is free (or, given
  // `ckpt_deadline`, once it is, waiting for it until then).
  absl::Status MaybeRestart(shm::IndexHeader& header, int log, bool make_current,
                            absl::Time ckpt_deadline = absl::InfinitePast())
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_lock_);
  // Checkpoint without counting it in the stats; in WAL2 with `non_current`, of the non-current
  // log only, without the writer role whatever the mode (V4).
  absl::StatusOr<CheckpointResult> RunCheckpoint(CheckpointMode mode,
                                                             const std::atomic<bool>* stop,
                                                             bool defer = false,
                                                             bool non_current = false);
  // WAL2, as the writer (V4): the other log, copied completely, becomes the current one (a V3
  // switch, waiting up to `deadline` for CKPT). False when the other log is not all copied, a
  // private reader forbids restarts or CKPT stayed busy.
  absl::StatusOr<bool> SwitchLogs(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_lock_);
  // WAL2, as the writer, the last phase of RESTART and TRUNCATE (V4): restarts the logs that
  // hold nothing left to copy; `switched` tells whether that was a switch (SwitchLogs).
  absl::StatusOr<CheckpointResult> RestartCopiedLogs(CheckpointMode mode,
                                                                 absl::Time deadline,
                                                                 bool* switched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_lock_);
  CheckpointFiles Files();
  // One phase of a WAL2 checkpoint (Wal2CheckpointStep, which checks V4 around it).
  absl::Status Wal2Phase(Wal2Checkpoint& c);
  // Holding FLUSH: unless the published header covers `target` (appended in `epoch`) already,
  // makes the log durable through the newest appended commit (target when the appended header
  // cannot be read) and publishes it (W12 h); *published gets the published header. False
  // when the published header stays torn (nothing published: the caller repairs it, W6).
  // Unless `as_writer` (the caller holds WRITE), it first lets the writers appending now join
  // (WaitForAppenders). Errors: target was dropped (W13), or this flush's sync failed.
  absl::StatusOr<bool> FlushLocked(const shm::IndexHeader& target, uint32_t epoch,
                                   shm::IndexHeader* published, bool as_writer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush_);
  // FLUSH (wal/group_flush.h): waits for it until `deadline` (W14: Unavailable "busy" then).
  absl::Status LockFlush(absl::Time deadline);
  // As the writer with something appended but not published (W12 c): flushes it now.
  absl::Status FlushPendingAsWriter();


  vfs::FileSystem* const fs_;
  const std::string db_path_;
  const bool wal2_;
  const int nlogs_;  // 1 (WAL) or 2 (WAL2)
  const std::array<std::string, 2> log_paths_;
  const std::string& wal_path_;  // log_paths_[0]
  const std::string shm_path_;
  vfs::File* const db_file_;
  const uint32_t page_size_;
  const WalOptions options_;
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
  // Null only in a read-only connection until a snapshot has frames in it (set once, under
  // the pin mutex, before any read of a frame); logs_[1] is null in WAL mode.
  std::array<std::unique_ptr<wal::WalLog>, 2> logs_;
  // The reader role: slot, overflow mark, open snapshots' pins (M1-M5). Declared after index_,
  // so that it lets go of its slot and mark before the index goes.
  ReaderPins pins_;

  // The writer role (wal/writer.h): WRITE as this connection's one role (W9), the writer's
  // state, header and cursor, the transaction's frames (W11). Declared after the logs and the
  // index it appends to.
  Writer writer_;
  // Index recovery (wal/index_recovery.h): the scans, the rebuilt entries, the appended
  // header's repairs and the damage checks (W6, W12 e, f). After writer_, whose checked-change
  // cache IndexDamage keeps.
  IndexRecovery recovery_;
  // The private-mode reader (wal/private_index.h): a read-only connection that may not write
  // the -shm, or a read-write one whose -shm the disk cannot hold, reads through a heap index
  // of its own (U1, U2). After recovery_, whose HeaderFromScans it uses.
  PrivateIndex private_;

  // The checkpoint role (wal/checkpoints.h): this connection's one checkpoint at a time,
  // CKPT, the restarts of copied logs, the counting.
  Checkpoints checkpoints_{wal2_, &counters_};
  // The group flush (W12, W14): FLUSH, taken after the writer role's mutex (Writer::role_mu),
  // never before it, and what this connection's last flush measured.
  GroupFlush flush_;
  // The durability role (wal/log_durability.h): the sync floor (D1), synced_through (D2) and
  // what a failed log sync does to every connection's commits (W13). After writer_, whose
  // state DropUnpublished reads.
  LogDurability durability_;
  // WRITE and RECOVER to the thread-safety analysis (wal/lock_byte.h): the functions whose
  // REQUIRES name them are reached only where the byte was just taken or the writer state says
  // it is held.
  LockByte write_lock_;
  LockByte recover_lock_;

  base::Counters counters_;  // this connection's tickers (base/counters.h), relaxed atomics
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_WAL_CONNECTION_H_
