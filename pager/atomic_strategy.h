// Atomic batches as a journaling strategy (journal_strategy.h): journal mode ATOMIC. No journal
// and no log: a commit writes every page of the transaction, page 1 with the new header among
// them, into the database file in one atomic batch of the file system (vfs/vfs.h,
// AtomicBatch; docs/atomic.md), which reaches the file all or nothing, across a process crash
// and a power loss. So an open after a crash has nothing to recover (a shadow a dead writer
// left is emptied by the next batch, never applied: the file layer's business).
//
// Readers and writers take turns on the database file's locks exactly as in the rollback modes
// (InPlaceStrategy, in_place_strategy.h; the state table in pager.h): the file is written in
// place at the commit, so a reader must not read across it. The writer holds RESERVED for the
// transaction and EXCLUSIVE only around the batch's commit. The invariants:
//   A1. Nothing of a transaction reaches the database file outside its commit's batch: a
//       transaction larger than the cache spills into the batch (AtomicBatch::Write) and reads
//       its spilled pages back through it (AtomicBatch::Read), so any transaction is all or
//       nothing. A rollback aborts the batch.
//   A2. Page 1, with the change counter incremented, is in every commit's batch, so another
//       connection that sees an unchanged counter knows no commit touched the file (I5's role);
//       the committed pages and the counter reach the file together.
//   A3. The page cache never holds a page of an uncommitted batch (the pager's readers share
//       it); a commit that spilled drops the cached images of the pages it spilled.
//   A4. A commit whose batch fails is treated like a failed sync (I7): the file may hold the
//       whole batch or none of it, so the pager enters its error state and reopening decides.
//   A5. Sync levels: FULL and EXTRA commit with BatchSync::kDurable (durable when Commit
//       returns); NORMAL and OFF with kAtomicOnly (atomic, but a power loss before the file
//       system's next flush may lose the newest commits, never part of one: the file system
//       keeps batches in their order). At NORMAL a connection's close flushes the file, so
//       what a connection saw (or committed) before it closed survives a later power loss, as
//       a WAL connection's closing checkpoint does. A commit that shrinks the file is durable
//       before the file is cut (I11's role), except at OFF, which never flushes and so never
//       cuts: the tail past page_count stays (reclaimable).
//   A6. The database's page size is a multiple of the file's atomic_write_block_size() (an
//       exchange moves whole blocks): checked at open (AtomicFamily's Enter).
//
// A commit, top to bottom: AtomicWriteTxn::CommitPages in atomic_strategy.cc. A commit across
// databases in this family: atomic_across.h (Y1..Y7), which also has the one recovery this
// family has: a prepared batch that such a commit left, rolled forward or discarded at open
// and when a connection takes the database from idle (AfterSharedLocked).
#ifndef JOURNALKV_PAGER_ATOMIC_STRATEGY_H_
#define JOURNALKV_PAGER_ATOMIC_STRATEGY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "pager/in_place_strategy.h"
#include "pager/journal_strategy.h"
#include "pager/pager_core.h"

namespace journalkv::pager {

class AtomicStrategy final : public InPlaceStrategy {
 public:
  // REQUIRES: the database file has atomic batches (the pager checked it at open), and mu_
  // held (as for every InPlaceStrategy).
  explicit AtomicStrategy(PagerCore* core) : InPlaceStrategy(core) {}

  JournalFamily family() const override { return JournalFamily::kAtomic; }
  absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode) override {
    return wal::CheckpointResult{};  // no log
  }
  // The mechanism the commits use (vfs::AtomicWriteKindName) into stats.atomic_write_kind.
  void AddStats(base::CounterArray&, PagerStats& stats) override {
    stats.atomic_write_kind =
        std::string(vfs::AtomicWriteKindName(core_->db_file_->atomic_write_kind()));
  }
  // A5: at NORMAL (and not read-only) flushes the database file.
  void Close() override;

 private:
  std::unique_ptr<WriteTxn> NewWriteTxnLocked(const DbHeader& header) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // Y5 (atomic_across.h): a prepared batch a commit across databases left is decided before
  // any transaction from idle.
  absl::Status AfterSharedLocked(absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
};

// The atomic family's steps of Pager::Open (journal_strategy.h, JournalFamilyOps).
const JournalFamilyOps& AtomicFamily();

// Why `file` cannot carry this database's commits as atomic batches (A6, and a file with
// none), or OK. `page_size`: the database's. FailedPrecondition for a file without batches
// (naming what is needed), InvalidArgument for a page size that is not a multiple of the
// file's atomic write block size (naming both). `page_size` 0: not known yet (only the file's
// kind is checked).
absl::Status CheckAtomicBatches(const vfs::File& file, uint32_t page_size);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ATOMIC_STRATEGY_H_
