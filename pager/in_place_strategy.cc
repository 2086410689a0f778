// The database file locks' protocol (pager.h: the state table, I5 and I7 of I1..I12), shared
// by the journaling strategies that write the database file in place: the rollback journal
// (rollback_strategy.h) and atomic batches (atomic_strategy.h). Readers and writers of every
// connection take turns on the database file's SHARED / RESERVED / PENDING / EXCLUSIVE locks;
// the strategies differ only in their write transactions.
#include "pager/in_place_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "pager/txn.h"
#include "pager/pager_internal.h"

namespace journalkv::pager {

class InPlaceReadTxn final : public ReadTxn {
 public:
  InPlaceReadTxn(InPlaceStrategy* strategy, PagerCore* core, const DbHeader& header)
      : ReadTxn(core, header), strategy_(strategy) {}
  ~InPlaceReadTxn() override { strategy_->EndRead(); }

  absl::StatusOr<PageRef> Get(PageNo page_no) override {
    JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer, strategy_->CleanPage(page_no));
    return PageRef(page_no, std::move(buffer), usable_size(), PageRef::Bytes::kFixed);
  }

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadUncached(PageNo page_no) override {
    return core_->LoadPage(page_no);
  }

  InPlaceStrategy* const strategy_;
};

template <typename F>
absl::Status InPlaceStrategy::WaitFor(absl::Time deadline, absl::string_view what, F done) {
  while (!done()) {
    if (!core_->sticky_.ok()) return core_->sticky_;
    if (core_->cv_.WaitUntil(&core_->mu_, deadline) == std::cv_status::timeout && !done()) {
      return absl::UnavailableError(absl::StrCat("busy: ", what));
    }
  }
  return absl::OkStatus();
}

InPlaceStrategy::InPlaceStrategy(PagerCore* core) : JournalStrategy(core) {
  // Made under mu_ by Pager::Open, with the lock Open left: none, or SHARED for a WAL opener
  // whose strategy replaces this one at once.
  state_ = core->lock_.level() == LockLevel::kNone ? State::kIdle : State::kShared;
}

void InPlaceStrategy::EnterLocked(State to) {
#if JKV_DCHECK_IS_ON
  const State from = state_;
  using S = State;
  // The edges of the state table (pager.h).
  const bool error = !core_->sticky_.ok();
  JKV_DCHECK((from == S::kIdle && to == S::kShared) ||
             ((from == S::kIdle || from == S::kShared) && to == S::kReserved) ||
             (from == S::kReserved && to == S::kExclusive) ||
             (from == S::kExclusive && to == S::kReserved) ||  // ReleaseExclusive (across)
             ((from == S::kReserved || from == S::kExclusive) &&
              (to == S::kShared || to == S::kIdle)) ||
             (from == S::kShared && to == S::kIdle) ||
             (error && to == S::kIdle));  // the error state gives every lock up (I7)
  // What each state promises of the lock and the counts. In the error state (I7) the locks
  // were given up whatever the readers: only the lock is checked, and only when not in error.
  static constexpr LockLevel kLevel[] = {LockLevel::kNone, LockLevel::kShared,
                                         LockLevel::kReserved, LockLevel::kExclusive};
  JKV_DCHECK(error || core_->lock_.level() == kLevel[static_cast<int>(to)]);
  switch (to) {
    case S::kIdle:  // a writer waiting for RESERVED may hold no lock meanwhile
      JKV_DCHECK(error || core_->readers_ == 0);
      break;
    case S::kShared:  // for readers, or for a writer waiting for RESERVED
      JKV_DCHECK((core_->readers_ > 0 || core_->writer_active_) && !writer_exclusive_);
      break;
    case S::kReserved:
      JKV_DCHECK(core_->writer_active_ && !writer_exclusive_);
      break;
    case S::kExclusive:
      JKV_DCHECK(core_->writer_active_ && writer_exclusive_ && core_->readers_ == 0);
      break;
  }
#endif
  state_ = to;
}

// ---------------------------------------------------------------------------------------------
// Read transactions

absl::StatusOr<std::unique_ptr<ReadTxn>> InPlaceStrategy::BeginRead() {
  base::MutexLock lock(&core_->mu_);
  const absl::Time deadline = core_->Deadline();
  base::Backoff wait(deadline, kMaxBusySleep);
  while (true) {
    JKV_RETURN_IF_ERROR(core_->sticky_);
    JKV_RETURN_IF_ERROR(WaitFor(deadline, "a write transaction is committing",
                                [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) {
                                  return !writer_exclusive_;
                                }));
    if (core_->lock_.level() == LockLevel::kNone) {
      JKV_RETURN_IF_ERROR(AcquireSharedLocked(deadline));
      ++core_->readers_;
      EnterLocked(State::kShared);
      return std::unique_ptr<ReadTxn>(new InPlaceReadTxn(this, core_, core_->header_));
    }
    if (core_->lock_.level() >= LockLevel::kReserved) break;  // this pager is the writer: none pending
    // SHARED is already held for other readers. Let a writer elsewhere that waits for them
    // (it holds PENDING) go first rather than starve it.
    JKV_ASSIGN_OR_RETURN(bool pending, core_->lock_.WriterPending());
    if (!pending) break;
    if (wait.Expired()) {
      return absl::UnavailableError("busy: another connection is committing");
    }
    core_->SleepUnlocked(wait.Step());
  }
  ++core_->readers_;
  return std::unique_ptr<ReadTxn>(new InPlaceReadTxn(this, core_, core_->header_));
}

void InPlaceStrategy::EndRead() {
  base::MutexLock lock(&core_->mu_);
  --core_->readers_;
  if (core_->readers_ == 0 && !core_->writer_active_) {
    absl::Status s = core_->lock_.Release();
    if (!s.ok()) core_->SetStickyError(s);
    EnterLocked(State::kIdle);
  }
  core_->cv_.NotifyAll();
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> InPlaceStrategy::CleanPage(PageNo page_no) {
  if (std::shared_ptr<const PageBuffer> hit = core_->cache_.Lookup(page_no)) {
    core_->counters_.Add(base::Counter::kCacheHits);
    return hit;
  }
  // The file cannot change under a transaction (its SHARED lock, or this pager's own writer),
  // so the page can be read without holding core_->mu_.
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> loaded, core_->LoadPage(page_no));
  core_->counters_.Add(base::Counter::kCacheMisses);
  core_->cache_.Insert(page_no, loaded);
  return loaded;
}

// ---------------------------------------------------------------------------------------------
// Locks

absl::Status InPlaceStrategy::AcquireSharedLocked(absl::Time deadline) {
  JKV_RETURN_IF_ERROR(core_->Retry(deadline, false, "another connection is writing the database",
                            &DbLock::TryShared));
  absl::Status s = AfterSharedLocked(deadline);
  if (s.ok()) s = ValidateCacheLocked(deadline);
  if (!s.ok()) core_->lock_.Release().IgnoreError();  // the caller gives up; the error is s
  return s;
}

// REQUIRES: SHARED held. Another connection may have committed since this pager last held a
// lock: the change counter in page 1 (written first by every commit, I5) tells. Reading its 8
// bytes is enough: only power loss tears a write, and no connection with a cache outlives that.
absl::Status InPlaceStrategy::ValidateCacheLocked(absl::Time deadline) {
  JKV_DCHECK(core_->lock_.level() >= LockLevel::kShared);
  uint8_t counter[8];
  absl::Status s = core_->db_file_->Read(kChangeCounterOffset, absl::MakeSpan(counter));
  if (s.ok() && base::DecodeFixed64(counter) == core_->header_.change_counter) return absl::OkStatus();
  if (!s.ok() && !absl::IsOutOfRange(s)) return s;
  return core_->RecoverLocked(deadline);
}

// Waiting writers queue without blocking the writer they wait for. The committing writer
// needs every other SHARED lock gone, so a connection that took SHARED only to start this
// transaction (none of its readers is open) drops it again before each sleep, as SQLite does
// for a connection with no transaction open; with readers open it keeps SHARED (the committing
// writer waits for those readers anyway). While it waits it holds the WAITING byte, and a
// writer that starts while another connection waits sleeps once before its first try, so
// writers of different connections take turns (db_lock.h).
absl::Status InPlaceStrategy::AcquireReservedLocked(absl::Time deadline) {
  base::Backoff wait(deadline, kMaxWriterSleep);
  JKV_ASSIGN_OR_RETURN(bool others_waiting, core_->lock_.OtherWritersWaiting());
  if (others_waiting) {
    JKV_RETURN_IF_ERROR(core_->lock_.SetWaiting(true));
    wait.SetNext(kWriterYield);
  }
  for (bool first = true;; first = false) {
    JKV_RETURN_IF_ERROR(core_->sticky_);
    if (!first || !others_waiting) {
      // One try at SHARED (a writer elsewhere may be committing), then one at RESERVED.
      bool shared = core_->lock_.level() != LockLevel::kNone;
      if (!shared) {
        JKV_ASSIGN_OR_RETURN(shared, core_->lock_.TryShared());
        if (shared) {
          absl::Status s = AfterSharedLocked(deadline);
          if (s.ok()) s = ValidateCacheLocked(deadline);
          if (!s.ok()) {
            core_->lock_.Release().IgnoreError();  // giving up; s is the error to report
            return s;
          }
        }
      }
      if (shared) {
        JKV_ASSIGN_OR_RETURN(bool reserved, core_->lock_.TryReserved());
        if (reserved) return absl::OkStatus();
        if (core_->readers_ == 0) {
          JKV_RETURN_IF_ERROR(core_->lock_.Release());
          if (state_ == State::kShared) EnterLocked(State::kIdle);  // its readers came and went
        }
      }
      JKV_RETURN_IF_ERROR(core_->lock_.SetWaiting(true));
    }
    if (wait.Expired()) {
      return absl::UnavailableError("busy: another connection is writing the database");
    }
    core_->SleepUnlocked(wait.Step());
  }
}

absl::Status InPlaceStrategy::AcquireExclusive() {
  base::MutexLock lock(&core_->mu_);
  JKV_DCHECK(core_->lock_.level() == LockLevel::kReserved);
  const absl::Time deadline = core_->Deadline();
  writer_exclusive_ = true;  // new readers of this pager wait from here on
  absl::Status s = WaitFor(deadline, "readers of this handle are still open",
                           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) { return core_->readers_ == 0; });
  if (s.ok()) {
    s = core_->Retry(deadline, true, "readers of another connection are still open",
              &DbLock::TryExclusive);
  }
  if (s.ok()) EnterLocked(State::kExclusive);
  if (!s.ok()) {
    writer_exclusive_ = false;
    core_->lock_.DropPending().IgnoreError();  // giving up; s is the error to report
    core_->cv_.NotifyAll();
  }
  return s;
}

absl::Status InPlaceStrategy::ReleaseExclusive() {
  base::MutexLock lock(&core_->mu_);
  if (state_ != State::kExclusive) return absl::OkStatus();
  absl::Status s = core_->lock_.DowngradeToReserved();
  if (!s.ok()) {
    core_->SetStickyError(s);
    return s;
  }
  writer_exclusive_ = false;
  EnterLocked(State::kReserved);
  core_->cv_.NotifyAll();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Write transactions

absl::StatusOr<std::unique_ptr<WriteTxn>> InPlaceStrategy::BeginWrite() {
  base::MutexLock lock(&core_->mu_);
  const absl::Time deadline = core_->Deadline();
  JKV_RETURN_IF_ERROR(core_->sticky_);
  JKV_RETURN_IF_ERROR(WaitFor(deadline, "another write transaction of this handle is open",
                              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) {
                                return !core_->writer_active_;
                              }));
  core_->writer_active_ = true;
  absl::Status s = AcquireReservedLocked(deadline);
  if (absl::Status unmark = core_->lock_.SetWaiting(false); s.ok()) s = unmark;
  if (!s.ok()) {
    core_->writer_active_ = false;
    if (core_->readers_ == 0) {
      core_->lock_.Release().IgnoreError();  // giving up; s is the error to report
      if (state_ != State::kIdle) EnterLocked(State::kIdle);
    }
    core_->cv_.NotifyAll();
    return s;
  }
  EnterLocked(State::kReserved);
  return NewWriteTxnLocked(core_->header_);
}

void InPlaceStrategy::EndWrite(bool clear_cache) {
  base::MutexLock lock(&core_->mu_);
  if (clear_cache) core_->cache_.Clear();
  core_->writer_active_ = false;
  writer_exclusive_ = false;
  const bool release = core_->readers_ == 0 || !core_->sticky_.ok();
  absl::Status s = release ? core_->lock_.Release() : core_->lock_.DowngradeToShared();
  if (!s.ok()) core_->SetStickyError(s);
  EnterLocked(release ? State::kIdle : State::kShared);
  core_->cv_.NotifyAll();
}

}  // namespace journalkv::pager
