// The rollback journal's protocol (rollback_strategy.h; pager.h has the state table and
// I1..I12): the SHARED / RESERVED / EXCLUSIVE locks of readers and writers, and a write
// transaction's spill and commit to the database file through the journal.
#include "pager/rollback_strategy.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "pager/txn.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::SyncFile;

class RollbackReadTxn final : public ReadTxn {
 public:
  RollbackReadTxn(RollbackStrategy* strategy, PagerCore* core, const DbHeader& header)
      : ReadTxn(core, header), strategy_(strategy) {}
  ~RollbackReadTxn() override { strategy_->EndRead(); }

  absl::StatusOr<PageRef> Get(PageNo page_no) override {
    JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer, strategy_->CleanPage(page_no));
    return PageRef(page_no, std::move(buffer), usable_size(), PageRef::Bytes::kFixed);
  }

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadUncached(PageNo page_no) override {
    return core_->LoadPage(page_no);
  }

  RollbackStrategy* const strategy_;
};

class RollbackWriteTxn final : public WriteTxn {
 public:
  RollbackWriteTxn(RollbackStrategy* strategy, PagerCore* core, const DbHeader& header)
      : WriteTxn(core, header), strategy_(strategy) {
    strategy_->journal_.Begin(header.page_count, header.change_counter);
  }
  ~RollbackWriteTxn() override { Rollback().IgnoreError(); }  // a failure is sticky

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) override {
    return strategy_->CleanPage(page_no);
  }
  bool KeepsOriginal(PageNo page_no) const override { return !journaled_.contains(page_no.value()); }
  bool HasWritten() const override { return spilled_; }
  absl::Status SpillPages() override;
  absl::Status CommitPages() override;
  absl::Status UndoWrites(bool* clear_cache) override;
  void EndWrite(bool clear_cache) override { strategy_->EndWrite(clear_cache); }
  void DropPagesPast(uint32_t page_count) override {
    // The seal lists only pages of the commit: a spilled page past its end, cut off by the
    // commit (I11), would make a complete journal look hot to recovery.
    absl::erase_if(spilled_trailers_, [&](const auto& e) { return e.first > page_count; });
  }

  absl::Status WritePages(std::vector<PageNo>& pages);
  // Page 1 with the header `header` as a dirty page, its original kept unless journaled.
  absl::Status DirtyPage1(const DbHeader& header);

  RollbackStrategy* const strategy_;
  bool spilled_ = false;    // some pages of this transaction are in the database file
  bool exclusive_ = false;  // holds the EXCLUSIVE lock
  bool page1_marked_ = false;  // a spill wrote page 1 with the new change counter (I5)
  // What this transaction did to the database file, for the debug checks of I2 and I5.
  enum class DbWrites { kNone, kUnsynced, kSynced };
  DbWrites db_writes_ = DbWrites::kNone;
  absl::flat_hash_set<uint32_t> journaled_;  // original already in the journal
  absl::flat_hash_map<uint32_t, uint64_t> spilled_trailers_;  // page -> trailer as spilled
};

template <typename F>
absl::Status RollbackStrategy::WaitFor(absl::Time deadline, absl::string_view what, F done) {
  while (!done()) {
    if (!core_->sticky_.ok()) return core_->sticky_;
    if (core_->cv_.WaitUntil(&core_->mu_, deadline) == std::cv_status::timeout && !done()) {
      return absl::UnavailableError(absl::StrCat("busy: ", what));
    }
  }
  return absl::OkStatus();
}

RollbackStrategy::RollbackStrategy(PagerCore* core, JournalMode mode)
    : JournalStrategy(core),
      journal_(core->fs_, core->journal_path_, mode, core->options_.sync, core->page_size_) {
  // Made under mu_ by Pager::Open, with the lock Open left: none, or SHARED for a WAL opener
  // whose strategy replaces this one at once.
  state_ = core->lock_.level() == LockLevel::kNone ? State::kIdle : State::kShared;
}

void RollbackStrategy::EnterLocked(State to) {
#if JKV_DCHECK_IS_ON
  const State from = state_;
  using S = State;
  // The edges of the state table (pager.h).
  const bool error = !core_->sticky_.ok();
  JKV_DCHECK((from == S::kIdle && to == S::kShared) ||
             ((from == S::kIdle || from == S::kShared) && to == S::kReserved) ||
             (from == S::kReserved && to == S::kExclusive) ||
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

absl::StatusOr<std::unique_ptr<ReadTxn>> RollbackStrategy::BeginRead() {
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
      return std::unique_ptr<ReadTxn>(new RollbackReadTxn(this, core_, core_->header_));
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
  return std::unique_ptr<ReadTxn>(new RollbackReadTxn(this, core_, core_->header_));
}

void RollbackStrategy::EndRead() {
  base::MutexLock lock(&core_->mu_);
  --core_->readers_;
  if (core_->readers_ == 0 && !core_->writer_active_) {
    absl::Status s = core_->lock_.Release();
    if (!s.ok()) core_->SetStickyError(s);
    EnterLocked(State::kIdle);
  }
  core_->cv_.NotifyAll();
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> RollbackStrategy::CleanPage(PageNo page_no) {
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

absl::Status RollbackStrategy::AcquireSharedLocked(absl::Time deadline) {
  JKV_RETURN_IF_ERROR(core_->Retry(deadline, false, "another connection is writing the database",
                            &DbLock::TryShared));
  absl::Status s = ValidateCacheLocked(deadline);
  if (!s.ok()) core_->lock_.Release().IgnoreError();  // the caller gives up; the error is s
  return s;
}

// REQUIRES: SHARED held. Another connection may have committed since this pager last held a
// lock: the change counter in page 1 (written first by every commit, I5) tells. Reading its 8
// bytes is enough: only power loss tears a write, and no connection with a cache outlives that.
absl::Status RollbackStrategy::ValidateCacheLocked(absl::Time deadline) {
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
absl::Status RollbackStrategy::AcquireReservedLocked(absl::Time deadline) {
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
          if (absl::Status s = ValidateCacheLocked(deadline); !s.ok()) {
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

absl::Status RollbackStrategy::AcquireExclusive() {
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

// ---------------------------------------------------------------------------------------------
// Write transactions

absl::StatusOr<std::unique_ptr<WriteTxn>> RollbackStrategy::BeginWrite() {
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
  return std::unique_ptr<WriteTxn>(new RollbackWriteTxn(this, core_, core_->header_));
}

void RollbackStrategy::EndWrite(bool clear_cache) {
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

absl::StatusOr<wal::CheckpointResult> RollbackStrategy::Checkpoint(
    wal::CheckpointMode) {
  return wal::CheckpointResult{};  // no log
}

void RollbackStrategy::AddStats(base::CounterArray&, PagerStats&) {}

// ---------------------------------------------------------------------------------------------
// A write transaction's spill, commit and undo in the database file

absl::Status RollbackWriteTxn::DirtyPage1(const DbHeader& header) {
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(PageNo(1)));
  DirtyPage& page1 = dirty_[1];
  page1.buffer = std::make_shared<PageBuffer>(clean->size);
  page1.original = journaled_.contains(1) ? nullptr : std::move(clean);
  EncodeDbHeader(header, Whole(*page1.buffer));
  return absl::OkStatus();
}

// Writes dirty pages in page order, page 1 first when present (I5), sealing each.
absl::Status RollbackWriteTxn::WritePages(std::vector<PageNo>& pages) {
  std::sort(pages.begin(), pages.end());
  JKV_DCHECK(core_->lock_level() == LockLevel::kExclusive);  // state table
  // I1: the originals of these pages are in the journal, durable at sync != OFF.
  JKV_DCHECK(strategy_->journal_.flushed());
  // I5: the transaction's first write to the file is page 1 with the change counter start+1.
  JKV_DCHECK(db_writes_ != DbWrites::kNone ||
             (!pages.empty() && pages.front() == PageNo(1) &&
              ChangeCounter(*dirty_.at(1).buffer) == start_header_.change_counter + 1));
  db_writes_ = DbWrites::kUnsynced;
  for (PageNo page_no : pages) {
    PageBuffer& buffer = *dirty_[page_no.value()].buffer;
    JKV_RETURN_IF_ERROR(core_->db_file_->Write(Offset(page_no, buffer.size), Whole(buffer)));
  }
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::SpillPages() {
  if (!exclusive_) {
    JKV_RETURN_IF_ERROR(strategy_->AcquireExclusive());
    exclusive_ = true;
  }
  if (!page1_marked_) {
    // I5: page 1 with a new change counter reaches the file before any other page of this
    // transaction, so a connection that stays open and validates its cache by the counter
    // notices the spilled pages (and, if this process dies, the hot journal) instead of mixing
    // them with its cached pages. The counter start+1 is the one the commit will write too.
    DbHeader marker = start_header_;
    ++marker.change_counter;
    JKV_RETURN_IF_ERROR(DirtyPage1(marker));
    page1_marked_ = true;
  }
  Journal& journal = strategy_->journal_;
  std::vector<PageNo> pages;
  for (auto& [n, dirty] : dirty_) {
    if (dirty.original != nullptr) {
      journal.AddOriginal(PageNo(n), Whole(*dirty.original));
      journaled_.insert(n);
    }
    SealPage(PageNo(n), Whole(*dirty.buffer));
    spilled_trailers_[n] = StoredPageChecksum(Whole(*dirty.buffer));
    pages.push_back(PageNo(n));
  }
  JKV_RETURN_IF_ERROR(journal.Flush(nullptr));
  spilled_ = true;  // from here on the database file may differ from the last commit
  absl::Status s = WritePages(pages);
  if (!s.ok()) {
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(s);
    return s;
  }
  {
    base::MutexLock lock(&core_->mu_);
    for (auto& [n, dirty] : dirty_) core_->cache_.Insert(PageNo(n), std::move(dirty.buffer));
  }
  dirty_.clear();
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::CommitPages() {
  DbHeader new_header = header_;
  ++new_header.change_counter;
  JKV_RETURN_IF_ERROR(DirtyPage1(new_header));
  if (!exclusive_) {
    // Busy here leaves everything as it was (RESERVED held, the pages in memory, page 1's new
    // counter computed again from header_ at the next try): the commit can be retried.
    absl::Status s = strategy_->AcquireExclusive();
    if (!s.ok()) {
      commit_retryable_ = absl::IsUnavailable(s);
      return s;
    }
    exclusive_ = true;
  }
  Journal& journal = strategy_->journal_;
  // OFF keeps no originals for a commit, so a commit that fails half-way cannot be undone.
  const bool keep_originals = core_->options_.journal_mode != JournalMode::kOff;
  Seal seal;
  seal.new_pages = new_header.page_count;
  std::vector<PageNo> pages;
  for (auto& [n, dirty] : dirty_) {
    if (keep_originals && dirty.original != nullptr) {
      journal.AddOriginal(PageNo(n), Whole(*dirty.original));
    }
    SealPage(PageNo(n), Whole(*dirty.buffer));
    seal.entries.push_back({PageNo(n), StoredPageChecksum(Whole(*dirty.buffer))});
    spilled_trailers_.erase(n);
    pages.push_back(PageNo(n));
  }
  for (const auto& [n, trailer] : spilled_trailers_) seal.entries.push_back({PageNo(n), trailer});
  JKV_RETURN_IF_ERROR(journal.Flush(&seal));
  spilled_ = true;  // the database file is about to change
  JKV_RETURN_IF_ERROR(WritePages(pages));
  if (core_->options_.sync != SyncLevel::kOff) {
    // Every page of the transaction durable before its journal may end: I2.
    JKV_RETURN_IF_ERROR(SyncFile(*core_->db_file_, vfs::SyncKind::kData, "I2 database"));
    db_writes_ = DbWrites::kSynced;
  }
  JKV_DCHECK(db_writes_ == DbWrites::kSynced || core_->options_.sync == SyncLevel::kOff);  // I2
  if (shrunk_) {
    // I11: a rewrite or a released free tail shrank the database; its pages are durable (I2), so the
    // pages past the new end are no longer any state's. A cut that fails, or that a power
    // loss undoes, leaves a tail past page_count, which nothing reads (`jkv info` counts it
    // as reclaimable): the commit stands either way.
    (void)core_->db_file_->Truncate(uint64_t{new_header.page_count} * new_header.page_size);
  }
  // The transaction is durable now (I4): failing to end the journal does not undo it. The
  // journal is left complete and sealed, so the next opener discards it, and the next
  // transaction overwrites it.
  const int journal_end_failures = journal.Finish(Journal::Outcome::kCommitted).ok() ? 0 : 1;
  commit_record_.pages = static_cast<uint32_t>(seal.entries.size());
  commit_record_.change_counter = new_header.change_counter;
  {  // published: the cache holds the new pages, the header is the new one
    base::MutexLock lock(&core_->mu_);
    for (auto& [n, dirty] : dirty_) core_->cache_.Insert(PageNo(n), dirty.buffer);
    core_->header_ = new_header;
    core_->counters_.AddOwned(base::Counter::kCommits);
    core_->counters_.AddOwned(base::Counter::kJournalEndFailures, journal_end_failures);
  }
  End(/*clear_cache=*/false);
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::UndoWrites(bool* clear_cache) {
  // State table: a transaction that touched the file holds EXCLUSIVE until it ends.
  JKV_DCHECK(!spilled_ || core_->lock_level() == LockLevel::kExclusive);
  *clear_cache = spilled_;  // the cache may hold spilled pages
  if (!spilled_) return absl::OkStatus();
  return strategy_->journal_.RollBack(core_->db_file_.get());
}

// ---------------------------------------------------------------------------------------------
// Entering the rollback family (Pager::Open, journal_strategy.h)

namespace {

class RollbackFamilyOps final : public JournalFamilyOps {
 public:
  absl::Status BeforeReadLocked(PagerCore& core) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) {
    // Before the header is read: a switch to a WAL mode that holds the byte is waited out,
    // and the header then says where the database went (kRollbackOpenByte).
    return core.Retry(core.Deadline(), false,
                      "another connection is switching the database to a WAL mode",
                      &DbLock::TryRollbackOpen);
  }
  absl::Status RepairHeaderLocked(PagerCore&, const absl::Status& failure) const override {
    return failure;
  }
  // A WAL opener finds nothing to move out: it records its family in page 1 through this
  // family's journal (its Enter).
  absl::Status LeaveLocked(PagerCore&) const override { return absl::OkStatus(); }
  bool KeepsShared() const override { return false; }
  absl::StatusOr<std::unique_ptr<JournalStrategy>> Enter(PagerCore&, JournalFamily family,
                                                         SetFamilyFn set_family) const override {
    if (family != JournalFamily::kRollback) {
      JKV_RETURN_IF_ERROR(set_family(JournalFamily::kRollback));
    }
    return nullptr;  // the strategy the pager opened with is this mode's
  }
};

}  // namespace

const JournalFamilyOps& RollbackFamily() {
  static const auto* const ops = new RollbackFamilyOps;
  return *ops;
}

}  // namespace journalkv::pager
