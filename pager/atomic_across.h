// A commit across databases in journal mode atomic (MFAW: multi-file atomic writes), and its
// recovery. A transaction across databases (across.h; the engine's BeginWriteAcross) whose
// participants are all in the atomic family commits with no journal: each participant's pages
// go into its own atomic batch (atomic_strategy.h, A1..A6), the batches are *prepared*
// (vfs::AtomicBatch::Prepare: durable, and committable by a later process), one small super
// record is written and synced, and only then is each batch committed. The record's sync is
// the commit point; a crash after it is rolled forward by the recovery, a crash before it
// leaves every database as it was.
//
// The invariants (a commit, top to bottom: AcrossCommit::Atomic in atomic_across.cc):
//   Y1. Prepared first. Every participant's batch holds all its pages and page 1 with the
//       change counter advanced by one (A2: `base` -> `base + 1`), and is prepared with a note
//       {record path, nonce, base, base + 1} (one fdatasync of its shadow; the shadow's name
//       synced once, when it is created) before the super record is written. A prepared batch
//       a crash cut short is no prepared batch (the file layer checks it whole).
//   Y2. The commit point. The super record {nonce, each participant's path and new counter}
//       is written over the record file `<first participant>-super` (one reused file per
//       first participant: no directory entry per commit; its name synced once, when
//       created) and fdatasync'ed. Until that sync returns nothing of the transaction is
//       committed: a failure before it aborts every batch (each database as it was). A failed
//       sync of the record leaves it unknown whether the disk holds it: every participant's
//       pager enters its error state (I7) with its batch left prepared, and the recovery
//       decides by what the disk kept (all or none, Y5).
//   Y3. Then each batch is committed, durably (BatchSync::kDurable: an XFS exchange with
//       DSYNC), whatever the participants' sync levels: a batch that a power loss could still
//       undo must not outlive its record (Y4). A participant whose commit fails enters its
//       error state with its batch left prepared (its next opener rolls it forward); the
//       others still commit: the transaction is committed, and the error says so.
//   Y4. The record goes (its magic zeroed, unsynced) only after every participant's batch is durable
//       (Y3), so a record is never gone while a batch it committed can still be lost.
//   Y5. Recovery, per participant, when a connection takes the database from idle (at open,
//       and at every read or write transaction begun with no lock held: a writer of another
//       process may have died mid-commit while this connection stayed open), only when nobody
//       holds RESERVED (a live writer's batch is its own) and only when the database has a
//       prepared batch (one stat: the cheap common case). Under EXCLUSIVE: with note {R, n,
//       b, c}, when page 1's counter is b and R holds a whole record with nonce n, R (and its
//       folder) is synced first (a record the OS holds but the disk may not must not let this
//       participant roll forward and another, after a power loss, discard) and the batch is
//       committed durably; otherwise it is discarded (counter c: applied already; R gone or
//       of another nonce: the transaction never reached Y2, or completed; any other counter:
//       stale). Each participant decides alone from its own page 1 and the one record, so
//       all decide alike. The recovery clears R once every participant it names carries its
//       counter (page 1 counters only grow).
//   Y6. Locks. Each participant's EXCLUSIVE is taken in the canonical order (across.h) after
//       its batch is staged and before anything is durable, and held until it has published;
//       a busy participant gives the EXCLUSIVEs taken back (to RESERVED) and leaves every
//       transaction open and whole: retryable. No writer commits over an undecided prepared
//       batch: Y5 runs before any transaction from idle, and BeginAtomicBatch refuses while
//       one is left (a writer that finds one gets FailedPrecondition, never a commit that
//       Y5's counter check would later skip).
//   Y7. The record file is reused only once its last record is resolved: a commit that finds
//       a whole record some participant of which does not carry its counter yet (a writer
//       that failed after Y2 and a database nobody reopened) refuses with FailedPrecondition
//       before anything is durable, naming the database to reopen.
//
// Flushes per transaction across N databases: N prepares (one fdatasync each) + 1 record
// fdatasync + N durable commits (one log force each on XFS) = 2N + 1; nothing per commit
// touches a directory (the first prepare of a database and the first record of a first
// participant sync their folder once). The participants' sync levels do not lower it. On a
// real file system the N prepares run at once (a thread per participant), and so do the N
// commits, so the latency is about three flushes whatever N (the order Y1 < Y2 < Y3 < Y4 is
// kept: each step starts when every participant finished the one before); on the emulated
// batches they run in turn, so that a crash sweep replays.
//
// Names: a note names its record, and a record its participants, by the name alone when the
// two are in one folder (so databases kept in one folder can be moved or mounted elsewhere
// together: a power cut's image is checked mounted elsewhere), else by the path the pager was
// opened with (then open them by the same absolute paths in every process). A read-only
// connection cannot roll forward (it needs a read-write one first).
#ifndef JOURNALKV_PAGER_ATOMIC_ACROSS_H_
#define JOURNALKV_PAGER_ATOMIC_ACROSS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pager/pager_core.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

// Y5: decides this database's prepared batch, if any. REQUIRES: SHARED held (taken from idle),
// and held on return (more may be taken and given back meanwhile).
absl::Status RecoverPreparedLocked(PagerCore& core, absl::Time deadline)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_);

// The note of a prepared batch (Y1) and the super record (Y2), as stored (atomic_across.cc).
struct AcrossNote {
  std::string record_path;  // as stored: see "Names" above
  uint64_t nonce = 0;
  uint64_t base_counter = 0;
  uint64_t new_counter = 0;
};
std::string EncodeAcrossNote(const AcrossNote& note);
std::optional<AcrossNote> DecodeAcrossNote(const std::string& bytes);

struct SuperRecord {
  uint64_t nonce = 0;
  struct Participant {
    std::string path;
    uint64_t new_counter = 0;
  };
  std::vector<Participant> participants;
};
// `<path>-super`: the record file of a transaction whose first participant is `path`.
std::string SuperRecordPath(const std::string& first_participant);
// The whole record at `path`, or nullopt (missing, empty, torn).
absl::StatusOr<std::optional<SuperRecord>> ReadSuperRecord(vfs::FileSystem& fs,
                                                           const std::string& path);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ATOMIC_ACROSS_H_
