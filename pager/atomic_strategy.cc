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
#include "pager/pager_internal.h"
#include "pager/txn.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

class AtomicWriteTxn final : public WriteTxn {
 public:
  AtomicWriteTxn(AtomicStrategy* strategy, PagerCore* core, const DbHeader& header)
      : WriteTxn(core, header), strategy_(strategy) {}
  ~AtomicWriteTxn() override { Rollback().IgnoreError(); }  // a failure is sticky

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) override;
  bool KeepsOriginal(PageNo) const override { return false; }  // a rollback drops the batch
  bool HasWritten() const override { return !spilled_.empty(); }
  JournalFamily family() const override { return JournalFamily::kAtomic; }
  absl::Status SpillPages() override;
  absl::Status CommitPages() override;
  absl::Status UndoWrites(bool* clear_cache) override;
  void EndWrite(bool clear_cache) override { strategy_->EndWrite(clear_cache); }

  // The transaction's batch, begun at its first spill or at its commit.
  absl::Status EnsureBatch();
  // Seals every dirty page and writes it into the batch (page order).
  absl::Status WriteDirtyPages();

  AtomicStrategy* const strategy_;
  std::unique_ptr<vfs::AtomicBatch> batch_;
  absl::flat_hash_set<uint32_t> spilled_;  // pages whose image is in the batch, not in dirty_
  bool batch_failed_ = false;               // the batch's commit failed (A4)
};

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

absl::Status AtomicWriteTxn::CommitPages() {
  // Page 1 with the new header, the change counter advanced (A2).
  DbHeader new_header = header_;
  ++new_header.change_counter;
  DirtyPage& page1 = dirty_[1];  // page 1 holds the header and nothing else (db_format.h)
  page1.buffer = std::make_shared<PageBuffer>(core_->page_size_);
  EncodeDbHeader(new_header, Whole(*page1.buffer));
  // Every page of the transaction joins its batch (A1); until the batch commits, the file is
  // untouched and readers read on.
  JKV_RETURN_IF_ERROR(EnsureBatch());
  JKV_RETURN_IF_ERROR(WriteDirtyPages());
  // EXCLUSIVE only around the batch's commit: no reader anywhere reads across it. Busy here
  // leaves the transaction whole (the batch open, RESERVED held): the commit can be retried.
  if (absl::Status s = strategy_->AcquireExclusive(); !s.ok()) {
    commit_retryable_ = absl::IsUnavailable(s);
    return s;
  }
  // A5: durable when Commit returns at FULL and EXTRA, atomic only at NORMAL and OFF; a commit
  // that shrinks the file is durable before the cut (except at OFF, which does not cut).
  const SyncLevel sync = core_->options_.sync;
  const bool cut = shrunk_ && sync != SyncLevel::kOff;
  const bool durable = sync == SyncLevel::kFull || sync == SyncLevel::kExtra || cut;
  absl::flat_hash_set<uint32_t> written = spilled_;
  for (const auto& [n, dirty] : dirty_) written.insert(n);
  absl::Status committed = vfs::CommitAtomicBatch(
      *batch_, durable ? vfs::BatchSync::kDurable : vfs::BatchSync::kAtomicOnly,
      "A5 atomic commit");
  batch_.reset();  // ended, whatever the outcome
  if (!committed.ok()) {
    // A4: the file holds the whole batch or none of it; this connection cannot tell which.
    batch_failed_ = true;
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(committed);
    return committed;
  }
  if (cut) {
    // The pages past the new end are no longer any state's (I11's role): a cut that fails, or
    // that a power loss undoes, leaves a tail nothing reads. The commit stands either way.
    (void)core_->db_file_->Truncate(uint64_t{new_header.page_count} * new_header.page_size);
  }
  commit_record_.pages = static_cast<uint32_t>(written.size());
  commit_record_.change_counter = new_header.change_counter;
  {  // published: the cache holds the new pages (A3: none of the spilled), the header is new
    base::MutexLock lock(&core_->mu_);
    for (uint32_t n : spilled_) core_->cache_.Erase(PageNo(n));
    for (auto& [n, dirty] : dirty_) core_->cache_.Insert(PageNo(n), dirty.buffer);
    core_->header_ = new_header;
    core_->counters_.AddOwned(base::Counter::kCommits);
    core_->counters_.AddOwned(base::Counter::kAtomicCommits);
    if (durable) core_->counters_.AddOwned(base::Counter::kDurableAtomicCommits);
  }
  End(/*clear_cache=*/false);
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
    return std::unique_ptr<JournalStrategy>(new AtomicStrategy(&core));
  }
};

}  // namespace

const JournalFamilyOps& AtomicFamily() {
  static const auto* const ops = new AtomicFamilyOps;
  return *ops;
}

}  // namespace journalkv::pager
