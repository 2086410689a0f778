// Atomic batches' protocol (atomic_strategy.h, A1..A6): a write transaction's spill into the
// batch, its commit as one batch, its rollback, and entering and leaving the atomic family at
// open. The locks are InPlaceStrategy's (in_place_strategy.cc).
#include "pager/atomic_strategy.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/atomic_across.h"
#include "pager/atomic_txn.h"
#include "pager/pager_internal.h"
#include "pager/txn.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

void AtomicStrategy::Close() {
  // FULL and EXTRA commits are durable already; OFF never flushes.
  if (core_->options_.sync != SyncLevel::kNormal ||
      core_->options_.access == AccessMode::kReadOnly) {
    return;
  }
  // A failure loses nothing this connection acknowledged as durable (FULL and EXTRA commits
  // are; NORMAL promised no more): there is no one left to tell.
  (void)vfs::SyncFile(*core_->db_file_, vfs::SyncKind::kData, "A5 atomic close");
}

absl::Status AtomicStrategy::AfterSharedLocked(absl::Time deadline) {
  return RecoverPreparedLocked(*core_, deadline);
}

std::unique_ptr<WriteTxn> AtomicStrategy::NewWriteTxnLocked(const DbHeader& header) {
  return std::unique_ptr<WriteTxn>(new AtomicWriteTxn(this, core_, header));
}

// ---------------------------------------------------------------------------------------------
// A write transaction's batch

absl::StatusOr<std::shared_ptr<const PageBuffer>> AtomicWriteTxn::CleanPage(PageNo page_no) {
  if (!spilled_.contains(page_no.value())) return strategy_->CleanPage(page_no);
  // A1: a spilled page is read back from the batch, never from the cache (A3) or the file.
  auto page = std::make_shared<PageBuffer>(core_->page_size_);
  absl::Status read = batch_->Read(Offset(page_no, page->size), Whole(*page));
  JKV_RETURN_IF_ERROR(core_->CheckLoaded(page_no, read, *page));
  return page;
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> AtomicWriteTxn::StartImage(PageNo page_no) {
  return strategy_->CleanPage(page_no);
}

absl::Status AtomicWriteTxn::EnsureBatch() {
  if (batch_ != nullptr) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(batch_, core_->db_file_->BeginAtomicBatch());
  return absl::OkStatus();
}

absl::Status AtomicWriteTxn::WriteDirtyPages() {
  std::vector<uint32_t> pages;
  pages.reserve(dirty_.size());
  for (const auto& [n, dirty] : dirty_) pages.push_back(n);
  std::sort(pages.begin(), pages.end());
  for (uint32_t n : pages) {
    PageBuffer& buffer = *dirty_.at(n).buffer;
    SealPage(PageNo(n), Whole(buffer));
    JKV_RETURN_IF_ERROR(batch_->Write(Offset(PageNo(n), buffer.size), Whole(buffer)));
  }
  return absl::OkStatus();
}

// A1: the dirty pages go into the batch, not the file; nothing else changes, so readers of
// every connection read on, and no lock beyond RESERVED is needed.
absl::Status AtomicWriteTxn::SpillPages() {
  JKV_RETURN_IF_ERROR(EnsureBatch());
  JKV_RETURN_IF_ERROR(WriteDirtyPages());
  for (const auto& [n, dirty] : dirty_) spilled_.insert(n);
  dirty_.clear();
  return absl::OkStatus();
}

absl::Status AtomicWriteTxn::StageBatch() {
  // Page 1 with the new header, the change counter advanced (A2).
  new_header_ = header_;
  ++new_header_.change_counter;
  DirtyPage& page1 = dirty_[1];  // page 1 holds the header and nothing else (db_format.h)
  page1.buffer = std::make_shared<PageBuffer>(core_->page_size_);
  EncodeDbHeader(new_header_, Whole(*page1.buffer));
  // Every page of the transaction joins its batch (A1); until the batch commits, the file is
  // untouched and readers read on.
  JKV_RETURN_IF_ERROR(EnsureBatch());
  return WriteDirtyPages();
}

absl::Status AtomicWriteTxn::AcquireExclusive() {
  // EXCLUSIVE only around the batch's commit: no reader anywhere reads across it. Busy here
  // leaves the transaction whole (the batch open, RESERVED held): the commit can be retried.
  absl::Status s = strategy_->AcquireExclusive();
  if (!s.ok()) commit_retryable_ = absl::IsUnavailable(s);
  return s;
}

absl::Status AtomicWriteTxn::PrepareBatch(absl::string_view note) {
  return batch_->Prepare(note);
}

absl::Status AtomicWriteTxn::CommitBatch(bool durable, const char* site) {
  absl::Status committed = vfs::CommitAtomicBatch(
      *batch_, durable ? vfs::BatchSync::kDurable : vfs::BatchSync::kAtomicOnly, site);
  batch_.reset();  // ended, whatever the outcome (a prepared one stays prepared on failure)
  if (!committed.ok()) {
    // A4: the file holds the whole batch or none of it; this connection cannot tell which.
    batch_failed_ = true;
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(committed);
  }
  return committed;
}

void AtomicWriteTxn::LeavePrepared(const absl::Status& error) {
  batch_.reset();  // destroyed, not aborted: a prepared batch stays for the recovery (vfs.h)
  batch_failed_ = true;
  base::MutexLock lock(&core_->mu_);
  core_->SetStickyError(error);
}

void AtomicWriteTxn::Publish(bool durable) {
  if (shrunk_ && core_->options_.sync != SyncLevel::kOff) {
    // The pages past the new end are no longer any state's (I11's role): a cut that fails, or
    // that a power loss undoes, leaves a tail nothing reads. The commit stands either way.
    (void)core_->db_file_->Truncate(uint64_t{new_header_.page_count} * new_header_.page_size);
  }
  absl::flat_hash_set<uint32_t> written = spilled_;
  for (const auto& [n, dirty] : dirty_) written.insert(n);
  commit_record_.pages = static_cast<uint32_t>(written.size());
  commit_record_.change_counter = new_header_.change_counter;
  {  // published: the cache holds the new pages (A3: none of the spilled), the header is new
    base::MutexLock lock(&core_->mu_);
    for (uint32_t n : spilled_) core_->cache_.Erase(PageNo(n));
    for (auto& [n, dirty] : dirty_) core_->cache_.Insert(PageNo(n), dirty.buffer);
    core_->header_ = new_header_;
    core_->counters_.AddOwned(base::Counter::kCommits);
    core_->counters_.AddOwned(base::Counter::kAtomicCommits);
    if (durable) core_->counters_.AddOwned(base::Counter::kDurableAtomicCommits);
  }
  End(/*clear_cache=*/false);
}

absl::Status AtomicWriteTxn::CommitPages() {
  JKV_RETURN_IF_ERROR(StageBatch());
  JKV_RETURN_IF_ERROR(AcquireExclusive());
  // A5: durable when Commit returns at FULL and EXTRA, atomic only at NORMAL and OFF; a
  // commit that shrinks the file is durable before the cut (except at OFF, which does not cut).
  const SyncLevel sync = core_->options_.sync;
  const bool cut = shrunk_ && sync != SyncLevel::kOff;
  const bool durable = sync == SyncLevel::kFull || sync == SyncLevel::kExtra || cut;
  JKV_RETURN_IF_ERROR(CommitBatch(durable, "A5 atomic commit"));
  Publish(durable);
  return absl::OkStatus();
}

// A1: the file was never touched; the batch, if any, is dropped.
absl::Status AtomicWriteTxn::UndoWrites(bool* clear_cache) {
  *clear_cache = batch_failed_;  // A4: the file may hold the batch, the cache the old pages
  if (batch_ == nullptr) return absl::OkStatus();
  absl::Status s = batch_->Abort();
  batch_.reset();
  return s;
}

// ---------------------------------------------------------------------------------------------
// Entering and leaving the atomic family (Pager::Open, journal_strategy.h)

absl::Status CheckAtomicBatches(const vfs::File& file, uint32_t page_size) {
  if (file.atomic_write_kind() == vfs::AtomicWriteKind::kNone) {
    return absl::FailedPreconditionError(absl::StrCat(
        file.path(), ": journal mode atomic needs a file system with atomic batches (XFS "
        "with the exchange-range feature on Linux 6.10+, or F2FS); this file has none (choose "
        "another journal mode, or a fallback: atomic_fallback, jkv --atomic-fallback)"));
  }
  const uint64_t block = file.atomic_write_block_size();
  if (block > 1 && page_size % block != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path(), ": journal mode atomic needs the page size (", page_size,
        " bytes) to be a multiple of the file system's atomic write block size (", block,
        " bytes): a batch exchanges whole blocks, so a smaller page would carry its "
        "neighbours' bytes"));
  }
  return absl::OkStatus();
}

namespace {

class AtomicFamilyOps final : public JournalFamilyOps {
 public:
  absl::Status BeforeReadLocked(PagerCore& core) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) {
    // As the rollback modes (the same locks, so a switch to a WAL mode finds this connection),
    // and the ATOMIC-OPEN byte, so a switch to another family finds it too (db_lock.h).
    JKV_RETURN_IF_ERROR(core.Retry(core.Deadline(), false,
                                   "another connection is switching the database to a WAL mode",
                                   &DbLock::TryRollbackOpen));
    return core.Retry(core.Deadline(), false,
                      "another connection is switching the database out of atomic mode",
                      &DbLock::TryAtomicOpen);
  }
  absl::Status RepairHeaderLocked(PagerCore&, const absl::Status& failure) const override {
    return failure;
  }
  // An opener of another family: atomic leaves nothing to move out (no journal, no log), but
  // no atomic connection may be open through the switch. The ATOMIC-OPEN byte stays exclusive
  // until the opener's Enter has switched (Pager::Open releases it).
  absl::Status LeaveLocked(PagerCore& core) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_) {
    const absl::string_view to = JournalModeName(core.options_.journal_mode);
    if (core.options_.access == AccessMode::kReadOnly) {
      return absl::FailedPreconditionError(absl::StrCat(
          core.path_, ": the database is in atomic mode; open it in atomic mode to read it "
          "read-only (", to, " mode would have to switch it)"));
    }
    JKV_ASSIGN_OR_RETURN(bool alone, core.lock_.TrySwitchFromAtomic());
    if (!alone) {
      return absl::FailedPreconditionError(absl::StrCat(
          core.path_, ": the database is in atomic mode and other connections have it open; it "
          "can switch to ", to, " mode only when no other connection is open"));
    }
    return absl::OkStatus();
  }
  bool KeepsShared() const override { return false; }
  absl::StatusOr<std::unique_ptr<JournalStrategy>> Enter(PagerCore& core, JournalFamily family,
                                                         SetFamilyFn set_family) const override
      ABSL_LOCKS_EXCLUDED(core.mu_) {
    if (core.options_.access != AccessMode::kReadOnly) {
      JKV_RETURN_IF_ERROR(CheckAtomicBatches(*core.db_file_, core.page_size_));  // A6
    }
    if (family != JournalFamily::kAtomic) {
      {
        // No connection of another family may be open through the switch: every rollback-
        // mode connection holds ROLLBACK-OPEN shared, as this one does (a WAL database has
        // none open: WalFamily's LeaveLocked found it alone).
        base::MutexLock lock(&core.mu_);
        JKV_ASSIGN_OR_RETURN(bool alone, core.lock_.TrySwitchFromRollback());
        if (!alone) {
          return absl::FailedPreconditionError(absl::StrCat(
              core.path_, ": the database is in ", JournalFamilyName(family),
              " mode and other connections have it open; it can switch to atomic mode only "
              "when no other connection is open"));
        }
        core.opening_ = true;  // page 1 names the old family until the switch commits
      }
      absl::Status s = set_family(JournalFamily::kAtomic);
      base::MutexLock lock(&core.mu_);
      core.opening_ = false;
      // Back to shared: rollback-mode openers now find the database atomic, and this
      // connection by its ATOMIC-OPEN byte.
      absl::StatusOr<bool> shared = core.lock_.TryRollbackOpen();
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat(core.path_, ": cannot switch to atomic mode: ",
                                                   s.message()));
      }
      JKV_RETURN_IF_ERROR(shared.status());
      if (!*shared) return absl::InternalError("converting the ROLLBACK-OPEN lock failed");
    }
    base::MutexLock lock(&core.mu_);
    // Y5 at open (atomic_across.h): decide a prepared batch a commit across databases left,
    // under SHARED taken for it, before the strategy starts from the lock Open left.
    if (core.lock_.level() == LockLevel::kNone) {
      const absl::Time deadline = core.Deadline();
      JKV_RETURN_IF_ERROR(core.Retry(deadline, false, "another connection is writing the database",
                                     &DbLock::TryShared));
      absl::Status recovered = RecoverPreparedLocked(core, deadline);
      absl::Status released = core.lock_.Release();
      JKV_RETURN_IF_ERROR(recovered);
      JKV_RETURN_IF_ERROR(released);
    }
    return std::unique_ptr<JournalStrategy>(new AtomicStrategy(&core));
  }
};

}  // namespace

const JournalFamilyOps& AtomicFamily() {
  static const auto* const ops = new AtomicFamilyOps;
  return *ops;
}

}  // namespace journalkv::pager
