// The rollback journal as a journaling strategy (journal_strategy.h): DELETE, TRUNCATE,
// PERSIST, MEMORY and OFF. A write transaction writes the database file in place, each page's
// original saved in the journal first; readers and writers of every connection take turns on
// the database file's SHARED / RESERVED / PENDING / EXCLUSIVE locks. The state table and the
// invariants I1..I12 it keeps are in pager.h; the journal file itself is journal.{h,cc}.
//
// A commit, top to bottom: RollbackWriteTxn::CommitPages in rollback_strategy.cc.
#ifndef JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_
#define JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_

#include <memory>

#include "pager/journal.h"
#include "pager/journal_strategy.h"
#include "pager/pager_core.h"
#include "pager/pager_options.h"

namespace journalkv::pager {

class RollbackStrategy final : public JournalStrategy {
 public:
  // `mode`: the connection's journal mode (DELETE for a WAL opener, whose only rollback-
  // journaled transaction is the switch of the family byte). REQUIRES: Open has read the
  // header (the page size).
  RollbackStrategy(PagerCore* core, JournalMode mode);

  JournalFamily family() const override { return JournalFamily::kRollback; }
  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() override ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite() override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode mode) override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  void AddStats(base::CounterArray& counters, PagerStats& stats) override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  void Close() override ABSL_LOCKS_EXCLUDED(core_->mu_) {}

 private:
  // Its own transactions (rollback_strategy.cc) run the protocol's steps below.
  friend class RollbackReadTxn;
  friend class RollbackWriteTxn;

  // Waits on the core's cv_ until `done()` or the deadline (Unavailable "busy:
  // <what>"); the sticky error ends the wait too. `done` is called with mu_ held (a lambda
  // annotated ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_)); mu_ is released while it waits.
  template <typename F>
  absl::Status WaitFor(absl::Time deadline, absl::string_view what, F done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // IDLE -> SHARED: SHARED, and the cache checked against the change counter (I5).
  absl::Status AcquireSharedLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  absl::Status ValidateCacheLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // SHARED -> RESERVED (mu_ released while it sleeps).
  absl::Status AcquireReservedLocked(absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // RESERVED -> EXCLUSIVE: waits for this pager's readers, then for every other connection's.
  absl::Status AcquireExclusive() ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  void EndRead() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // any -> SHARED or IDLE.
  void EndWrite(bool clear_cache) ABSL_LOCKS_EXCLUDED(core_->mu_);

  // The connection's state: the table in pager.h, one value per lock level. EnterLocked
  // moves it along one of the table's edges and checks, in debug builds (and in the sanitizer
  // builds, base/check.h), that the edge is in the table and that the lock held and the
  // counts agree with the state entered, as SQLite's assert_pager_state does. Transitions
  // happen where a step of the protocol completes; inside a step (a writer that drops SHARED
  // between tries while it waits for RESERVED) the lock may be briefly below the state.
  enum class State { kIdle, kShared, kReserved, kExclusive };
  void EnterLocked(State to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);

  Journal journal_;  // used by the writer only
  State state_ ABSL_GUARDED_BY(core_->mu_) = State::kIdle;
  bool writer_exclusive_ ABSL_GUARDED_BY(core_->mu_) = false;  // new readers wait
};

// The rollback family's steps of Pager::Open (journal_strategy.h, JournalFamilyOps).
const JournalFamilyOps& RollbackFamily();

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ROLLBACK_STRATEGY_H_
