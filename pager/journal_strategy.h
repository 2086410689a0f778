// The journaling seam: how a pager's transactions reach the disk. One implementation per
// family of journal modes:
//   - RollbackStrategy (rollback_strategy.{h,cc}): DELETE, TRUNCATE, PERSIST, MEMORY, OFF. The
//     database file is written in place, the originals of its pages kept in the journal first
//     (pager.h, I1..I12, the state table of its locks).
//   - WalStrategy (wal_strategy.{h,cc}, wal_policy.cc): WAL and WAL2. Pages are appended to the
//     log; the protocol of the log, the wal-index and the checkpoints is wal::WalConnection's
//     (wal/wal_connection.h, W1..W10, V1..V6, M1..M4).
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_mode.h"
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
  virtual absl::StatusOr<checkpoint::CheckpointResult> Checkpoint(checkpoint::CheckpointMode mode)
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

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_JOURNAL_STRATEGY_H_
