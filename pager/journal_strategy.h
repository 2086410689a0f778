// The journaling seam: how a pager's transactions reach the disk. One implementation per
// family of journal modes:
//   - RollbackStrategy (rollback_strategy.{h,cc}): DELETE, TRUNCATE, PERSIST, MEMORY, OFF. The
//     database file is written in place, the originals of its pages kept in the journal first
//     (pager.h, I1..I12, the state table of its locks).
//   - WalStrategy (wal_strategy.{h,cc}, wal_policy.cc): WAL and WAL2. Pages are appended to the
//     log; the protocol of the log, the wal-index and the checkpoints is wal::WalConnection's
//     (wal/wal_connection.h W1..W14, V1..V6; wal/reader_pins.h M1..M5).
//
// The seam has two halves. Per connection, this interface: beginning a read or write
// transaction, checkpoints, stats and the close. Per transaction, the transaction objects the
// strategy makes: ReadTxn and WriteTxn (txn.h) keep what every mode shares (the header, the
// dirty pages, the freelist, the checks of their callers) and each strategy's subclass keeps
// its own per-transaction state (the journal's list of saved originals and spilled pages; the
// WAL's snapshot and spilled frames) and implements the hooks: where a clean page comes from,
// the spill, the commit, the undo and the end. A mode's commit is read top to bottom in its
// strategy's file: RollbackWriteTxn::CommitPages, WalWriteTxn::CommitPages.
//
// What the strategies may use of the pager is PagerCore (pager_core.h), not Pager.
#ifndef JOURNALKV_PAGER_JOURNAL_STRATEGY_H_
#define JOURNALKV_PAGER_JOURNAL_STRATEGY_H_

#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/checkpoint_types.h"
#include "pager/pager_core.h"

namespace journalkv::pager {

class ReadTxn;
class WriteTxn;

class JournalStrategy {
 public:
  virtual ~JournalStrategy() = default;

  // The journal family this strategy writes (page 1 records it).
  virtual JournalFamily family() const = 0;

  // A read transaction: one snapshot of the database for its whole life.
  virtual absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() ABSL_LOCKS_EXCLUDED(core_->mu_) = 0;
  // The write transaction (the pager checked that it is not read-only).
  virtual absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite()
      ABSL_LOCKS_EXCLUDED(core_->mu_) = 0;

  // Copies the log into the database file (WAL modes; the rollback modes have no log: OK
  // with nothing to report).
  virtual absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode mode)
      ABSL_LOCKS_EXCLUDED(core_->mu_) = 0;

  // Adds this strategy's rows to `counters` (base/counters.h: the counts of the layers below
  // it, and its gauges, such as the log's frames) and its strings to `stats`; the pager then
  // fills stats' counter fields from `counters`.
  virtual void AddStats(base::CounterArray& counters, PagerStats& stats)
      ABSL_LOCKS_EXCLUDED(core_->mu_) = 0;

  // The pager is closing: stop any background work and leave the files as the next opener
  // expects them (WAL: the last connection copies the log back and removes -wal and -shm).
  // Called once, with no transaction open.
  virtual void Close() ABSL_LOCKS_EXCLUDED(core_->mu_) = 0;

 protected:
  explicit JournalStrategy(PagerCore* core) : core_(core) {}
  PagerCore* const core_;
};

// How Pager::Open enters a journal family and leaves one: the steps of an open that differ by
// family, one implementation per family (RollbackFamily() in rollback_strategy.h, WalFamily()
// in wal_strategy.h). Pager::Open runs them in order, with the opener's family (`mine`, from
// its journal mode) and the database's (from page 1):
//
//   mine.BeforeReadLocked        before page 1 is read
//   mine.RepairHeaderLocked      page 1 did not decode (DataLoss or InvalidArgument)
//   database's.LeaveLocked       the database is in another family: move its state out
//   (the lock is released unless mine.KeepsShared() and the families match)
//   mine.Enter                   record the family in page 1, take the mode's locks and make
//                                the connection's strategy
//
// A new family is a new implementation and one line in Pager::Open's choice of it.
class JournalFamilyOps {
 public:
  // Records a family in page 1 through a rollback-journaled write transaction (the pager's).
  using SetFamilyFn = absl::FunctionRef<absl::Status(JournalFamily)>;

  virtual ~JournalFamilyOps() = default;

  virtual absl::Status BeforeReadLocked(PagerCore& core) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) = 0;
  // Returns OK when it could make sense of the database anyway, else `failure`.
  virtual absl::Status RepairHeaderLocked(PagerCore& core, const absl::Status& failure) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) = 0;
  // An opener of another family found the database in this one (core.header_'s): hands it
  // over, or says why not. REQUIRES: SHARED held (and held on return).
  virtual absl::Status LeaveLocked(PagerCore& core) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) = 0;
  // Whether a connection of this family keeps the SHARED lock of its open for its life.
  virtual bool KeepsShared() const = 0;
  // Finishes the open of a database whose page 1 says `family`. Returns the connection's
  // strategy, or null to keep the one the pager opened with (the rollback journal in the
  // opener's own mode).
  virtual absl::StatusOr<std::unique_ptr<JournalStrategy>> Enter(PagerCore& core,
                                                                 JournalFamily family,
                                                                 SetFamilyFn set_family) const
      ABSL_LOCKS_EXCLUDED(core.mu_) = 0;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_JOURNAL_STRATEGY_H_
