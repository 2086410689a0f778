// wal::LogDurability: the durability role of one WAL connection, that is what it promises about
// the log's frames across connections: the sync floor (D1: the level of the syncs it makes for
// every connection's commits), how far each log is known durable (D2: synced_through, advanced
// by MakeLogDurable, the one place a log is synced for a commit, C1, V6 or W6), and what a
// failed log sync does to every connection's commits (W13: the failure recorded, the commits
// it may have lost dropped, the reset of the next writer).
//
// WalConnection composes it: the group flush (wal/wal_flush.cc, FlushLocked and AwaitDurable)
// syncs through MakeLogDurable and asks CommitDropped; BeginWrite (wal/wal_writer.cc) resets
// through ResetAfterFailure; recovery and the header repair (wal/index_recovery.h) sync the frames
// found and drop the commits they lose (DropUnpublished); checkpoints (C1) and the writer (V6,
// W4) sync at MaintenanceSync through MakeLogDurableLocking.
//
// Invariants (cited at their call sites; CheckInvariants asserts D2 in debug builds at the end
// of DropUnpublished):
//   W13. A failed log sync. A sync that fails may have lost every write it covered, and a
//       later sync of the same file can then succeed without bringing them back (Linux reports
//       a writeback error once per open file; the fault-injecting file system's failed Sync
//       does the same). Whoever's sync of a log fails (a group flush, C1, V6, W6: all go
//       through MakeLogDurable under FLUSH), before it lets go of FLUSH:
//       (a) records the failure for the current append epoch E: what the published header
//           holds of each log then (WalIndex::RecordFailure; the first failure of E counts),
//           and marks the log's generation failed in synced_through (D2): frames past what it
//           vouches for are written again, each checked (WalLog::WriteAgain), before any later
//           sync vouches for them;
//       (b) while E's record stands nothing is published by a flush, and every commit of epoch
//           E that the recorded header does not cover fails: its waiter, in whichever thread
//           or connection, returns DataLoss (CommitDropped), and so does every commit appended
//           on top of it before (c), which builds on it;
//       (c) the next WRITE holder, under FLUSH too, resets: the appended header goes back to
//           the published one, the index entries past it go (W2), synced_through is lowered
//           to it (D2), and only then the epoch becomes E + 1 (a writer killed in between
//           leaves E failed, and the next one resets again). Commits from then on overwrite
//           the dropped frames; none builds on them;
//       (d) a commit is known to its waiter by (epoch, log, generation, frame): positions are
//           reused after (c), so a waiter asks the record of its own epoch whether it was
//           published before the failure, never only whether the published header reaches its
//           frame. The last kFailureRecords epochs' records are kept; a waiter that slept
//           through more failed syncs than that cannot tell and returns DataLoss saying so.
//       (e) the first frame past the recorded header is made invalid in the log (its header
//           zeroed, unsynced: BreakChainAfter), so a rebuild of the index from the log (the next
//           connection alone, once every one closed) does not find the failed commits either;
//           after a crash they may be whole (I7);
//       A header repair or index rebuild that drops commits appended but not yet published (an
//       appended header neither of whose copies is whole, a log whose valid prefix ends before
//       them) drops them the same way (DropUnpublished), so their waiters fail rather than
//       being acknowledged by a later commit that reached the same frame (before, they were).
//       The pager puts a connection whose commit failed so into its error state, as it does
//       the connection whose sync failed. (Before, only the flusher got the error; the next
//       waiter synced again, published the failed commit and acknowledged its own on top:
//       wal_group_commit_test, AFailedGroupFlushFailsEveryCommitItCovered.)
//   D1. The sync floor. The -shm records the strongest sync level of any connection that has
//       joined this life of it (WalIndex::sync_floor, only grows). The work a connection does
//       for every connection's commits (a group flush, C1, C2, W4, W6, V6, R2, the last close)
//       syncs at MaintenanceSync(): its own level or the floor, whichever is stronger. So a
//       connection at OFF or NORMAL never weakens a stronger one's promise: its flush of a
//       FULL commit syncs (finding 2 of the 2026-12-06 review: an OFF flush acknowledged FULL
//       commits with no sync at all), and its checkpoints sync the database before the log
//       can restart over the frames they copied. Its own commits keep its own level: a NORMAL
//       or OFF commit with nothing pending is published with no sync. The first connection
//       above OFF to join a -shm whose floor was OFF syncs the log's directory (W5), which an
//       OFF creator did not.
//   D2. synced_through (WalIndex): (G, F) for log L says every frame up to F of generation G
//       of L is durable. It is advanced only under FLUSH, after a sync that began after those
//       frames were written (a group flush: the appended mx it read; C1: the frames it copies;
//       V6 and W6: the frames found), and it never exceeds the appended header's frames: a
//       reset (W13 c), a repair or a rebuild that moves the appended header back lowers it
//       first. C1 and V6 sync a log only when it does not already cover the frames they rely
//       on, whoever published them: "at FULL every published frame is durable" is not true of
//       frames a NORMAL commit, an OFF flush or a recovery published (finding 3: a FULL
//       checkpointer copied a NORMAL connection's unsynced frames, and a power loss tore the
//       database).
//
// Locks: FLUSH is the group flush's (wal::GroupFlush, a capability) and WRITE the connection's
// (wal::LockByte, wal/lock_byte.h). The functions that need them take them as arguments and
// REQUIRE them, so that clang checks that the caller holds the very FLUSH or WRITE it passes
// (tools/check_thread_safety.sh).
//
// Thread-safety: MaintenanceSync and CommitDropped from any thread; JoinSyncFloor once, at
// join; the rest under the locks they name (MakeLogDurableLocking and ResetAfterFailure take
// FLUSH themselves).
#ifndef JOURNALKV_WAL_LOG_DURABILITY_H_
#define JOURNALKV_WAL_LOG_DURABILITY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"
#include "wal/group_flush.h"
#include "wal/lock_byte.h"
#include "wal/wal_types.h"
#include "wal/writer.h"

namespace journalkv::wal {

class LogDurability {
 public:
  // What it shares with its connection (not owned; each outlives this object).
  struct Env {
    vfs::FileSystem* fs = nullptr;
    // The connection's index, created when it joins, after this object: read through the
    // owning pointer.
    const std::unique_ptr<shm::WalIndex>* index = nullptr;
    const std::array<std::unique_ptr<WalLog>, 2>* logs = nullptr;  // logs[1] null in WAL
    bool wal2 = false;
    uint32_t page_size = 0;
    const WalOptions* options = nullptr;  // sync, read_only, busy_timeout
    // The logs' paths: log 0's directory is W5's; both name the log in messages.
    const std::array<std::string, 2>* log_paths = nullptr;
    const std::string* shm_path = nullptr;  // for the messages and FLUSH's
    // DropUnpublished: whether this connection's own transaction has frames past what it keeps.
    const Writer* writer = nullptr;
  };

  explicit LogDurability(Env env) : env_(env), nlogs_(env.wal2 ? 2 : 1) {}
  LogDurability(const LogDurability&) = delete;
  LogDurability& operator=(const LogDurability&) = delete;

  // D1: the level of the syncs this connection makes for every connection's commits.
  vfs::SyncLevel MaintenanceSync() const;
  // Raises the -shm's sync floor to this connection's level; W5 for a log whose directory
  // entry this connection has not synced (`dir_synced`) when it is the first above OFF.
  // REQUIRES: the index open.
  absl::Status JoinSyncFloor(bool dir_synced);
  // D2, W13: makes the frames of log `log` up to state.mx_frame (the generation, salts and
  // chain value `state` names, a header's) durable, unless synced_through says they are:
  // syncs the log (writing its frames past synced_through again first, each checked and the
  // chain's end against state.last_checksum, when a sync of the generation failed); a failed
  // sync or rewrite is recorded (W13 a) and returned. True when it synced. REQUIRES: FLUSH
  // held (or no other connection: at open, alone, GroupFlush::AssumeAlone).
  absl::StatusOr<bool> MakeLogDurable(GroupFlush& flush, int log, const shm::LogState& state,
                                      const char* reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush);
  // The same, taking FLUSH (until `deadline`) unless the frames are durable already: C1 (the
  // checkpointer's make_log_durable) and V6.
  absl::StatusOr<bool> MakeLogDurableLocking(GroupFlush& flush, int log,
                                             const shm::LogState& state, const char* reason,
                                             absl::Time deadline);
  // W13 a. REQUIRES: FLUSH held.
  void RecordSyncFailure(GroupFlush& flush, int log, const shm::LogState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush);
  // W13 b, d: OK unless a failed sync, a repair or a rebuild dropped the commit `header`
  // appended in `epoch` (DataLoss), or cannot tell (DataLoss too).
  absl::Status CommitDropped(const shm::IndexHeader& header, uint32_t epoch) const;
  // W13 c: as the WRITE holder, when the current epoch holds a failure, resets the appended
  // header to the published one (taking FLUSH until `deadline`).
  absl::Status ResetAfterFailure(const LockByte& write, GroupFlush& flush, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write);
  // W13: drops every commit appended past `kept` (the header that stays published; `appended`,
  // the appended header that named them, when it could be read): breaks the log's chain past
  // `kept` (e), records a failure of the current epoch that `kept` covers (unless one is
  // recorded), lowers synced_through to `kept`, and moves to the next epoch. REQUIRES: WRITE
  // and FLUSH held, the appended header and index entries already moved back to `kept`.
  void DropUnpublished(const LockByte& write, GroupFlush& flush, const shm::IndexHeader& kept,
                       const std::optional<shm::IndexHeader>& appended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, flush);
  // W13 e: makes the first frame past `kept` in the current log invalid, when `appended` has
  // frames past it in the same generation.
  void BreakChainAfter(const shm::IndexHeader& kept, const shm::IndexHeader& appended);

  // Debug builds, holding FLUSH: asserts D2 (synced_through never past the appended header's
  // frames of the same generation, when that header reads whole). A no-op under NDEBUG.
  void CheckInvariants(const GroupFlush& flush) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush);

 private:
  shm::WalIndex& index() const { return **env_.index; }
  // FLUSH until `deadline` (W14: Unavailable "busy" then).
  absl::Status LockFlush(GroupFlush& flush, absl::Time deadline);

  const Env env_;
  const int nlogs_;
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_LOG_DURABILITY_H_
