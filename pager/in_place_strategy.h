// The database file locks' protocol as a base of journaling strategies (journal_strategy.h):
// the part the strategies that write the database file in place share. Readers and writers of
// every connection take turns on the database file's SHARED / RESERVED / PENDING / EXCLUSIVE
// locks (db_lock.h); the state table and the invariants it keeps (I5, I7) are in pager.h. Its
// subclasses:
//   - RollbackStrategy (rollback_strategy.h): DELETE, TRUNCATE, PERSIST, MEMORY, OFF; pages
//     reach the file at a spill or the commit, their originals journaled first.
//   - AtomicStrategy (atomic_strategy.h): ATOMIC; pages reach the file only in the commit's
//     one atomic batch.
// A subclass makes its write transactions (NewWriteTxnLocked); the read transactions, the
// locks and the cache's validation are this class's.
#ifndef JOURNALKV_PAGER_IN_PLACE_STRATEGY_H_
#define JOURNALKV_PAGER_IN_PLACE_STRATEGY_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pager/journal_strategy.h"
#include "pager/pager_core.h"
#include "pager/txn.h"

namespace journalkv::pager {

class InPlaceStrategy : public JournalStrategy {
 public:
  // A read transaction under SHARED (this pager's, or taken now): the file does not change
  // under it. Waits while this pager's writer commits, and while another connection's does.
  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() final ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The write transaction under RESERVED: SHARED -> RESERVED, then NewWriteTxnLocked.
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite() final ABSL_LOCKS_EXCLUDED(core_->mu_);

  // --- The steps the subclasses' transactions call.
  // RESERVED -> EXCLUSIVE: waits for this pager's readers, then for every other connection's.
  // Unavailable ("busy: ...") after the busy timeout, with RESERVED kept.
  absl::Status AcquireExclusive() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // EXCLUSIVE -> RESERVED, the transaction kept: a commit across databases that found another
  // participant busy gives this one's EXCLUSIVE back before it reports busy (atomic_across.h).
  absl::Status ReleaseExclusive() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The committed image of a page, through the cache. REQUIRES: SHARED or more held.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // A read transaction ended: the last one of an idle pager gives SHARED up.
  void EndRead() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The write transaction ended: any -> SHARED (readers open) or IDLE; the cache is emptied
  // first when `clear_cache`.
  void EndWrite(bool clear_cache) ABSL_LOCKS_EXCLUDED(core_->mu_);

 protected:
  // REQUIRES: Open has read the header; made under mu_ with the lock Open left.
  explicit InPlaceStrategy(PagerCore* core);

  // The subclass's write transaction, begun with `header` (RESERVED is held, the writer role
  // taken).
  virtual std::unique_ptr<WriteTxn> NewWriteTxnLocked(const DbHeader& header)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) = 0;
  // Called each time this connection has just taken SHARED from no lock (a read or write
  // transaction from idle), before the cache is checked: the atomic family's recovery of a
  // prepared batch (atomic_across.h, Y5). REQUIRES: SHARED held; may take and give back more.
  virtual absl::Status AfterSharedLocked(absl::Time /*deadline*/)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) {
    return absl::OkStatus();
  }

 private:
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

  // The connection's state: the table in pager.h, one value per lock level. EnterLocked
  // moves it along one of the table's edges and checks, in debug builds (and in the sanitizer
  // builds, base/check.h), that the edge is in the table and that the lock held and the
  // counts agree with the state entered, as SQLite's assert_pager_state does. Transitions
  // happen where a step of the protocol completes; inside a step (a writer that drops SHARED
  // between tries while it waits for RESERVED) the lock may be briefly below the state.
  enum class State { kIdle, kShared, kReserved, kExclusive };
  void EnterLocked(State to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);

  State state_ ABSL_GUARDED_BY(core_->mu_) = State::kIdle;
  bool writer_exclusive_ ABSL_GUARDED_BY(core_->mu_) = false;  // new readers wait
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_IN_PLACE_STRATEGY_H_
