// The rollback journal as a journaling strategy (journal_strategy.h): DELETE, TRUNCATE,
// PERSIST, MEMORY and OFF. A write transaction writes the database file in place, each page's
// original saved in the journal first; readers and writers of every connection take turns on
// the database file's SHARED / RESERVED / PENDING / EXCLUSIVE locks (InPlaceStrategy,
// in_place_strategy.h). The state table and the invariants I1..I12 it keeps are in pager.h;
// the journal file itself is journal.{h,cc}.
//
// A commit, top to bottom: RollbackWriteTxn::CommitPages in rollback_strategy.cc.
#ifndef JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_
#define JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_

#include <memory>

#include "pager/in_place_strategy.h"
#include "pager/journal.h"
#include "pager/journal_strategy.h"
#include "pager/pager_core.h"
#include "pager/pager_options.h"

namespace journalkv::pager {

class RollbackStrategy final : public InPlaceStrategy {
 public:
  // `mode`: the connection's journal mode (DELETE for a WAL or ATOMIC opener, whose only
  // rollback-journaled transaction is the switch of the family byte). REQUIRES: Open has read
  // the header (the page size).
  RollbackStrategy(PagerCore* core, JournalMode mode);

  JournalFamily family() const override { return JournalFamily::kRollback; }
  absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode) override {
    return wal::CheckpointResult{};  // no log
  }
  void AddStats(base::CounterArray&, PagerStats&) override {}
  void Close() override {}

 private:
  friend class RollbackWriteTxn;  // uses journal_

  std::unique_ptr<WriteTxn> NewWriteTxnLocked(const DbHeader& header) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);

  Journal journal_;  // used by the writer only
};

// The rollback family's steps of Pager::Open (journal_strategy.h, JournalFamilyOps).
const JournalFamilyOps& RollbackFamily();

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_
