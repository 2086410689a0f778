// Checkpoints: copying committed frames of the write-ahead log back into the database file,
// and restarting the log once every frame is copied.
//
// A checkpoint of log L (WAL mode: L = 0; WAL2: CheckpointFiles::log_no, usually the
// non-current log, which no writer appends to):
//   1. takes the CKPT lock (PASSIVE gives up at once when another checkpointer holds it; the
//      other modes wait up to the busy timeout). For RESTART and TRUNCATE, and for WAL's FULL,
//      the caller holds the WRITE lock, so no new commit starts while it runs (locks are owned
//      per -shm File, so a caller serializes its own threads' checkpoints and writers itself);
//      WAL2's FULL of the non-current log needs none (wal/wal_connection.h V4);
//   2. announces its target, the newest commit mx_frame (ckpt_target, seq_cst), then reads
//      every reader slot's and overflow mark's pin: the frames it may copy are those <= the
//      oldest pin of the log's current generation (a pin of an older generation stops it at
//      the current backfill). A pin whose slot lock is free belongs to a dead connection, and
//      a mark whose lock nobody holds pins nothing: both are skipped. The caller's own slot
//      and the mark its threads read under are honoured without that test (a lock never
//      conflicts with its own owner's test, so its own mark would read as held by nobody), and
//      the own mark is read again for each holder scanned, after the holder's pin: another
//      thread of the caller may join a mark while the checkpoint runs (wal/reader_pins.h
//      M5; once sampled at the checkpoint's start, the mark a later read joined was skipped
//      and that read saw half of a later commit: wal_mixed_connections_test,
//      AnOverflowReadersOwnCheckpointHonoursTheMarkItJoinsMidway). The target is lowered
//      to that safe frame. A reader that pins after the scan sees the
//      announced target and, when it is past its snapshot, takes a newer one (readers never
//      wait; wal/wal_connection.h W3);
//   3. C1: makes the frames it is about to copy durable in the log before the first database
//      write, so that no page of a transaction reaches the database file while the log could
//      still lose that transaction to a power loss. Whether they are durable already is a
//      property of the frames, not of this checkpointer's sync level (CheckpointFiles::
//      make_log_durable; wal/wal_connection.h D2): frames a NORMAL commit published are not,
//      whichever connection copies them (a FULL checkpointer once skipped C1 for them, and a
//      power loss then tore the database: wal_sync_test's mixed configurations);
//   4. writes the newest version <= safe of each page, in page order, then
//   5. C2: syncs the database file (sync != OFF) before it publishes the new backfill, because
//      the log may restart (and overwrite those frames) as soon as backfill == mx_frame;
//   6. RESTART and TRUNCATE then restart the log (RestartLog) while still holding WRITE;
//      TRUNCATE also cuts the file to 0 bytes (unsynced: should a power loss undo the cut, the
//      old log comes back whole, and replaying all of it onto a database that already holds
//      all of it changes nothing). In WAL2 (run on the current log, after the other one was
//      copied completely) they restart both logs in one publish and cut both files, the older
//      one first and durably (R2: the older log must never come back without the newer one).
//   C3. The index records what the database file holds past the published backfill, from any
//       connection's unpublished (deferred) or stopped copy: copied_through F (every page of
//       the frames up to F is there in its newest version <= F) and written_through W >= F
//       (no page version of a frame past W is there), both of the log's current generation and
//       written under CKPT: W before the first page write, F once the copy is whole. A
//       checkpoint starts from F, and copies only when the readers allow every frame up to W:
//       copying the versions <= safe of pages over later versions another checkpoint wrote
//       would take those back, and once the backfill passed them the log's restart would lose
//       their commits. Otherwise it copies nothing and may only publish F (after C2).
//   C4. The checkpoint target a checkpoint leaves is never below W: a reader that pinned a
//       snapshot older than W after an earlier checkpoint's pin scan sees the target past its
//       snapshot and takes a newer one (W3). (Before C3 and C4 the deferred copy's frontier was
//       the copying connection's own: another connection's checkpoint copied older versions
//       over it and lowered the target to a reader pinned below it, who then read later pages
//       from the file: wal_interleaving_test, WalDeferredCopyTest.)
//   C5. A copy that fails for want of space (ResourceExhausted) cuts the database file back
//       to its size before the copy: the pages it appended are all in the log, and leaving
//       them would hand the disk's last free space to a copy that cannot finish instead of
//       to the commits the log could still take (full_disk_test, WAL2: the writer cannot
//       leave a log the checkpoint has not finished).
//   C6. The index is shared memory a buggy process can overwrite, and a damaged word must not
//       lose a frame or send a page to the wrong place: a backfill past mx_frame is forgotten
//       (ForgetCopies: everything is copied again, never taken as copied); each frame copied is
//       read whole and its own header (checksummed when it was indexed) must carry the
//       generation's salts and the page the index names, and its image must be the one the
//       header vouches for (image_sum: after a failed sync the kernel may have dropped the
//       frame, and an older image of the same page read back from the disk passes the page's
//       own trailer check), else DataLoss; and a log restarts
//       only when its backfill is exactly its mx_frame
//       (tests/wal_damaged_index_test.cc, the fuzz findings behind it).
//   C7. A checkpoint that leaves every log's backfill at its mx_frame cuts the database file
//       to the newest commit's page count (a compaction, WriteTxn::StartRewrite, lowered it),
//       after C2: every reader's snapshot is then at least that commit (the pins allowed the
//       backfill), and a page past its size in a later snapshot was written after it, so it
//       is in the log. Never on a deferred copy, and only when the newest commit frame's own
//       db_size agrees with the index header's page_count.
//   C8. A C2 that fails forgets every copy past the backfill (copied_through back to it; the
//       file may still hold their versions, which written_through keeps saying, C3): the
//       kernel may have dropped those pages while a later sync of the file succeeds, so the
//       next checkpoint copies them again before it syncs and publishes them.
// FULL, RESTART and TRUNCATE wait up to the busy timeout for readers pinned below mx_frame;
// when they give up, the result says blocked and what was copied stays copied.
//
// Thread-safety: one checkpoint per CKPT lock holder; the caller serializes its own use of
// `log` and `db` against its own writer (the pager runs checkpoints outside write
// transactions).
#ifndef JOURNALKV_WAL_CHECKPOINT_COPY_H_
#define JOURNALKV_WAL_CHECKPOINT_COPY_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shm/pin_scan.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "vfs/vfs.h"
#include "log/wal_log.h"
#include "wal/checkpoint_types.h"
#include "wal/lock_byte.h"

namespace journalkv::wal {

// How the checkpointer reaches the files. Not owned.
// CheckpointFiles::log_no for "the log that is not current when the CKPT lock is held" (WAL2:
// a switch needs CKPT, so it cannot change under the checkpoint).
inline constexpr int kNonCurrentLog = -1;

struct CheckpointFiles {
  shm::WalIndex* index = nullptr;
  // The log to copy: 0 or 1, or kNonCurrentLog (WAL2). `logs[l]` may be null for a log this
  // connection has not opened (it then has no frames to copy).
  int log_no = 0;
  bool two_logs = false;  // WAL2: RESTART and TRUNCATE restart (and cut) both logs
  wal::WalLog* logs[2] = {nullptr, nullptr};
  vfs::File* db = nullptr;
  uint32_t page_size = 0;
  // C1: makes the frames of log `log` up to state.mx_frame (the header's, whose frames the
  // copy takes a prefix of) durable before any is copied: returns whether it synced. Null:
  // nothing is made durable (every connection at sync OFF, or a test).
  std::function<absl::StatusOr<bool>(int log, const shm::LogState& state)> make_log_durable;
  bool sync_db = true;                // C2: sync != OFF
  absl::Duration busy_timeout = absl::Seconds(5);
  // The caller's own pin holders (shm/pin_scan.h), whose pins are honoured without a lock test
  // and not waited for: its reader slot, and the overflow mark its threads read under now, read
  // again for each holder scanned (step 2).
  shm::OwnHolders own;
  // When set (the database is closing), the copy stops before its next page: the pages
  // written stay (they are the newest versions every snapshot allows, so no reader notices),
  // the backfill stays where it was, and a later checkpoint copies them again. Not owned.
  const std::atomic<bool>* stop = nullptr;
  // The byte of the database file that read-only connections with a private index (they may
  // not write -shm, so they cannot pin a snapshot there) hold shared for their life; 0: none.
  // While any holds it nothing is copied (PASSIVE: blocked at once; the other modes wait up to
  // the busy timeout) and the log is not restarted, so their snapshots stay whole.
  uint64_t private_reader_lock = 0;
  // The connection's WRITE byte when the caller holds it (as the writer: wal/lock_byte.h), else
  // null. RESTART and TRUNCATE restart the log only as the writer (W7); without it they copy
  // and then fail (FailedPrecondition) instead of restarting.
  const LockByte* write = nullptr;
  // A PASSIVE checkpoint that may leave its copy unpublished (a background checkpointer at
  // FULL or EXTRA, where every published frame is already durable, W1): with `publish` false,
  // when it copied something, it returns without C2 and without publishing the backfill. So a
  // checkpointer that runs after every commit flushes the database once per batch, not once
  // per commit. What it copied is recorded in the index (copied_through, written_through: C3),
  // so the next checkpoint of any connection starts past it, and one that copies nothing new
  // (or is called with `publish` true) syncs and publishes it all. A crash before the publish
  // leaves the backfill where it was and recovery copies the frames again from the log.
  // REQUIRES for `publish` false: a caller at sync FULL or EXTRA (at NORMAL the frames are
  // seldom durable yet, so C1 would sync the log for each deferred copy).
  bool publish = true;
};

// Forgets what checkpoints copied of generation `ckpt_seq` of log `log`, whose last frame is
// `mx_frame`: the database file may then hold any version up to mx_frame (written_through and
// the target cover them all, C3 and C4), none is known complete (copied_through), and the
// backfill starts again from 0, so the next checkpoint copies the log from frame 1. Copying
// again is harmless. Used where these words cannot be trusted: an index rebuilt from the log
// (W6) and a backfill past the log's last frame (a damaged index). The words are written
// before any header that follows (W8).
void ForgetCopies(shm::WalIndex& index, int log, uint32_t ckpt_seq, uint32_t mx_frame);

// Runs one checkpoint of log files.log_no (see above).
absl::StatusOr<CheckpointResult> CheckpointLog(const CheckpointFiles& files, CheckpointMode mode);

// Starts a new generation of log `log` in the index: publishes a header whose generation for it
// is one past the newest of both logs (so in WAL2 the newer log always has the higher ckpt_seq,
// which recovery orders them by), new salts and no frames, and makes it the current log when
// `make_current` (readers of the old generation notice and read the database file
// instead, which holds their snapshot) and clears the hash tables. The log file itself is
// rewritten from frame 1 by the next writer, which first writes the generation's log header
// and makes it durable (wal/wal_connection.h W4). REQUIRES: WRITE (`write`) and CKPT (`ckpt`) held,
// and backfill == mx_frame (every frame copied and synced, C2). `header` is the current published
// header; it is updated.
// `two_logs`: WAL2 (both logs' generations count; in WAL mode log 1's words are unused).
absl::Status RestartLog(const LockByte& write, const LockByte& ckpt, shm::WalIndex& index,
                        shm::IndexHeader& header, int log = 0, bool make_current = false,
                        bool two_logs = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, ckpt);

// WAL2: restarts both logs in one publish (`log` first, then the other one, which becomes the
// current log). REQUIRES: as RestartLog, for both logs.
absl::Status RestartBothLogs(const LockByte& write, const LockByte& ckpt, shm::WalIndex& index,
                             shm::IndexHeader& header, int log)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, ckpt);

// The log header of the generation `state` describes (its checksum is state.last_checksum
// once the generation has no frames).
wal::WalHeader LogHeaderFor(const shm::IndexHeader& header, int log);

// Test hook: called at named points of a checkpoint ("held_back" where readers pinned below
// what the database file may already hold keep it from copying (C3), "copy" before the first
// page write, "copy:page" before each, "copied" after the last, "synced", "restart", "wait"
// before each sleep waiting for the CKPT lock or for readers) and of a log restart
// ("restart:midway": the old generation's last frame named as the target and the backfill
// cleared, the new generation not yet published, W8), "idle" where a background
// checkpointer's thread is about to sleep until it is woken (background.h) and "wake" in the
// thread that has just woken it (or started it), with the point's name; nullptr: none. Set it
// while no checkpoint runs.
using CheckpointHook = void (*)(const char* point);
void SetCheckpointHookForTesting(CheckpointHook hook);
void CallCheckpointHook(const char* point);

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_CHECKPOINT_COPY_H_
