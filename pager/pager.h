// The pager: page-level transactions over one database file, with a page cache, the header
// and the freelist, carried to the disk by one journaling strategy (journal_strategy.h): the
// rollback journal or the write-ahead log.
//
// Users: the B+tree (through PageReader / PageWriter) and the engine (Open, transactions,
// stats). Thread-safety: a Pager is safe to use from many threads; each transaction object is
// used by one thread at a time. Any number of ReadTxn may be open at once, and at most one
// WriteTxn per database across all threads and processes (others wait up to the busy timeout,
// then get Unavailable("busy: ...")).
//
// The pager's source files: pager.cc (opening, switching the journal family, the dispatch to
// the strategy), pager_core.{h,cc} (what the strategies share of it, and the database file's
// creation and recovery), txn.h and pager_txn.cc (what every mode's transactions share: pages, the
// freelist, the checks of their callers), rollback_strategy.{h,cc} (the rollback journal's
// protocol, below) and wal_strategy.{h,cc} with wal_policy.cc (WAL and WAL2 over
// wal::WalConnection, wal/wal_connection.h: its own state table, W1..W14, V1..V6; M1..M5 in
// wal/reader_pins.h).
//
// States of a pager in the rollback-journal modes and in ATOMIC (`readers_` counts open ReadTxn;
// InPlaceStrategy::State, in_place_strategy.h, moved by EnterLocked, which checks each edge
// and the lock held in debug and sanitizer builds; ATOMIC takes EXCLUSIVE only at its commit,
// atomic_strategy.h):
//
//      +--------+  BeginRead / BeginWrite   +--------+  BeginWrite     +----------+
//      |  IDLE  | ------------------------> | SHARED | --------------> | RESERVED |
//      | no lock| <------------------------ |        | <-------------- | writer   |
//      +--------+  last txn ends            +--------+  Commit/Rollback+----------+
//                                                ^                         | Commit, spill
//                                                |  commit done            v
//                                                |                   +-----------+
//                                                +------------------ | EXCLUSIVE |
//                                                                    +-----------+
//   transition                    | method
//   IDLE -> SHARED                | AcquireSharedLocked (BeginRead, BeginWrite)
//   SHARED -> RESERVED            | BeginWrite (AcquireReservedLocked; a waiter with no open
//                                 |   reader drops to IDLE between tries, see "Writers take
//                                 |   turns" in docs/design-notes.md)
//   RESERVED -> EXCLUSIVE         | AcquireExclusive (WriteTxn::Commit, WriteTxn::Spill)
//   EXCLUSIVE -> RESERVED         | ReleaseExclusive: a commit across databases that found
//                                 |   another participant busy (atomic_across.h; in the
//                                 |   rollback modes unless the transaction spilled,
//                                 |   rollback_across.cc)
//   any -> SHARED or IDLE         | EndWrite, EndRead
//   any -> ERROR (sticky)         | SetStickyError: a failure after the database file was
//                                 |   touched, or any failed sync (I7)
//
// Guarantees per state: SHARED: the database file does not change and the cache is valid.
// RESERVED: this pager's WriteTxn is the only writer; nothing but the journal has been written.
// EXCLUSIVE: no reader anywhere; the database file may hold the writer's pages.
//
// Invariants of the commit protocol (cited at each Sync call site):
//   I1. Journal records (and, for a new journal file, its directory entry) are durable before
//       the first database page of their transaction is overwritten.
//   I2. All database writes of a transaction are synced before its journal ends.
//   I3. A rollback restores the database durably before the journal is ended.
//   I4. The seal lists every page the transaction writes with its final trailer, so a journal
//       whose end was lost to a power loss is recognised as complete and not applied.
//   I5. Page 1 with a new change counter is written before any other page of a transaction,
//       at its first spill or else at commit, so another connection that sees an unchanged
//       change counter knows no transaction, committed, spilling or killed mid-spill, has
//       touched the file since it last looked (a spill writes start+1, the value the commit
//       writes too; a rollback restores page 1 with the rest).
//   I6. Recovery ends a journal only once the database file is durable: after a rollback (I3)
//       and also when the journal is complete, because a writer killed before its database
//       sync (I2) leaves its pages only in the OS cache.
//   I7. A failed sync is never retried, and nothing it covered is trusted: the transaction is
//       undone in-process by rewriting every page it touched from the journal (so the undo
//       depends only on writes made, and synced, after the failure), and the handle enters its
//       error state whether or not the undo succeeds; reopening recovers from the disk. The
//       failed transaction is then in the database or not (the sync may have reached the disk
//       before it failed, and in WAL mode its commit frame is in the log): a commit that
//       returned an error "may be present" after a crash, never half present. Checks that
//       can refuse a commit run before its first write (WAL: the frame limit and the -shm's
//       room, WalIndex::Reserve).
//   I8. Recovery makes a hot journal durable before it rewrites any database page, so a power
//       loss during a rollback leaves the journal to roll back again (recovery is idempotent).
//   I9. Creating the database is journaled like a transaction from the empty file, so a torn
//       page 1 of a new database is rolled back to the empty file, never left unopenable.
//   I10. A connection in MEMORY, OFF, WAL or ATOMIC mode makes the end of any journal file
//       durable at open, so that no journal of an earlier journal-file-mode connection can come
//       back after a power loss and be rolled back over its commits.
//   I11. A commit that shrinks the database (WriteTxn::StartRewrite) cuts the file only after
//       its pages are synced (I2): a power loss then finds either the whole transaction or the
//       hot journal and every page past the new end untouched, so the journal never needs the
//       pages past it (cut first, a power loss could keep the cut and lose the pages that
//       replace them).
//   I12. A commit that fails leaves no seal that checks behind it unless its undo restored the
//       database durably (I3). The seal says the transaction completed, and a failed commit
//       whose sync failed after its writes reached the file may have every sealed page in it:
//       when the undo of a transaction whose journal was written with a seal fails (reading
//       the journal, rewriting a page or syncing the database), Journal::RollBack overwrites
//       the seal's first 8 bytes with zeros before the handle enters its error state and gives
//       up its locks, so the next opener rolls the journal back rather than discarding it.
//       The write is not synced: a commit that returned an error may be present after a power
//       loss anyway (I7). If it fails too, the next opener may find the commit whole.
#ifndef JOURNALKV_PAGER_PAGER_H_
#define JOURNALKV_PAGER_PAGER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/types.h"
#include "wal/checkpoint_types.h"
#include "pager/db_format.h"
#include "pager/journal_strategy.h"
#include "pager/page_access.h"
#include "pager/pager_core.h"
#include "pager/pager_options.h"
#include "pager/txn.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

// How many generations apart those a WAL connection's page cache holds pages of may be before
// it is cleared (the span of G1, pager/wal_strategy.h, which defines it): 2^29, or what a test
// sets (0: 2^29 again; 1 clears it at every new generation).
void SetCacheGenerationSpanForTesting(uint32_t span);

class Pager : private PagerCore {
 public:
  // Opens (creating when missing, unless read-only) the database at `path`. Rolls back a hot
  // journal. InvalidArgument for a directory or a file that is not a journalkv database,
  // FailedPrecondition for a newer format, for a file that is not a regular file (a named
  // pipe, a device) and for one with a second name (a hard link), DataLoss for a truncated or
  // damaged header. A file that is refused is left untouched. A symbolic link is followed
  // (vfs::FileSystem::ResolveLinks), and the side files and messages name its target.
  // The journal mode of an opener that names none: wal for a database that does not exist yet
  // (or is empty), and for one whose header or log says it was last used in a WAL mode;
  // delete for one of the rollback family. A file that is not a journalkv database gets wal,
  // and Open then says what is wrong with it. Reads the header without locks: a family switch
  // racing it only means the opener switches the family back, under the usual locks.
  static absl::StatusOr<JournalMode> DefaultJournalMode(vfs::FileSystem* fs,
                                                        const std::string& path);
  static absl::StatusOr<std::unique_ptr<Pager>> Open(vfs::FileSystem* fs, const std::string& path,
                                                     const PagerOptions& options);
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() ABSL_LOCKS_EXCLUDED(mu_);
  // FailedPrecondition on a read-only pager.
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite() ABSL_LOCKS_EXCLUDED(mu_);

  // WAL mode: runs a checkpoint (wal/checkpoint_copy.h). Rollback modes have no log:
  // OK with nothing to report.
  absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode mode)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool wal_mode() const {
    const JournalFamily family = strategy_->family();
    return family == JournalFamily::kWal || family == JournalFamily::kWal2;
  }

  // The journal family the connection commits in (its strategy's).
  JournalFamily family() const { return strategy_->family(); }
  // The database file's identity (vfs::File::Identity): the order in which a transaction
  // across databases takes their locks (across.h).
  absl::StatusOr<std::string> file_identity() { return db_file_->Identity(); }

  uint32_t page_size() const { return page_size_; }
  const PagerOptions& options() const { return options_; }
  const std::string& path() const { return path_; }
  const std::string& journal_path() const { return journal_path_; }
  vfs::FileSystem* fs() const { return fs_; }
  PagerStats Stats() ABSL_LOCKS_EXCLUDED(mu_);
  // The first error that put the pager in its error state (OK when none).
  using PagerCore::sticky_error;

 private:
  Pager(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
        std::unique_ptr<vfs::File> db_file);
  PagerCore* core() { return this; }  // what the strategies see of this pager
  absl::Status OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the journal family in page 1 through a rollback-journaled write transaction.
  absl::Status SetFamily(JournalFamily family) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status EndForeignJournalDurably() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // How transactions reach the disk: the rollback journal while Open runs (every opener rolls
  // back a hot journal and may switch the family byte through it), then the mode's own. Set
  // during Open, then immutable.
  std::unique_ptr<JournalStrategy> strategy_;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGER_H_
