// The rollback journal's protocol (rollback_strategy.h; pager.h has the state table and
// I1..I12): a write transaction's spill and commit to the database file through the journal.
// The SHARED / RESERVED / EXCLUSIVE locks of readers and writers are InPlaceStrategy's
// (in_place_strategy.cc), which it shares with atomic batches.
#include "pager/rollback_strategy.h"
#include "pager/rollback_txn.h"

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

RollbackStrategy::RollbackStrategy(PagerCore* core, JournalMode mode)
    : InPlaceStrategy(core),
      journal_(core->fs_, core->journal_path_, mode, core->options_.sync, core->page_size_) {}

std::unique_ptr<WriteTxn> RollbackStrategy::NewWriteTxnLocked(const DbHeader& header) {
  return std::unique_ptr<WriteTxn>(new RollbackWriteTxn(this, core_, header));
}

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
  // One write per run of consecutive pages (at most kPagesPerWrite), page 1 on its own and
  // first (I5). The same bytes at the same offsets as a write per page, none synced before
  // I2's sync, so a crash within or between them leaves what it left before: pages of this
  // transaction, whole or torn, each with its original in the journal (I1). (A compaction of
  // 4,700 pages made 4,700 writes.)
  constexpr size_t kPagesPerWrite = 64;
  const uint32_t page_size = core_->page_size_;
  for (size_t i = 0; i < pages.size();) {
    size_t end = i + 1;
    if (pages[i] != PageNo(1)) {
      while (end < pages.size() && end - i < kPagesPerWrite &&
             pages[end].value() == pages[end - 1].value() + 1) {
        ++end;
      }
    }
    if (end == i + 1) {
      PageBuffer& buffer = *dirty_[pages[i].value()].buffer;
      JKV_RETURN_IF_ERROR(core_->db_file_->Write(Offset(pages[i], buffer.size), Whole(buffer)));
    } else {
      run_buffer_.resize((end - i) * page_size);
      for (size_t k = i; k < end; ++k) {
        std::memcpy(run_buffer_.data() + (k - i) * page_size,
                    dirty_[pages[k].value()].buffer->bytes.get(), page_size);
      }
      JKV_RETURN_IF_ERROR(core_->db_file_->Write(
          Offset(pages[i], page_size), absl::MakeConstSpan(run_buffer_.data(), run_buffer_.size())));
    }
    i = end;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> RollbackWriteTxn::StartImage(PageNo page_no) {
  if (!journaled_.contains(page_no.value())) return CleanPage(page_no);
  auto image = std::make_shared<PageBuffer>(core_->page_size_);
  JKV_RETURN_IF_ERROR(strategy_->journal_.ReadOriginal(page_no, Whole(*image)));
  return image;
}

void RollbackWriteTxn::ReadAheadOriginals(PageNo first, uint32_t count) {
  const uint32_t page_size = core_->page_size_;
  const uint32_t end = std::min(first.value() + count, start_header_.page_count + 1);
  // L11: only pages the file holds as the start had them (not journaled, so not written: I1;
  // not dirty, whose original is in memory), and only those the cache lacks.
  std::vector<uint32_t> wanted;
  for (uint32_t p = std::max<uint32_t>(first.value(), 2); p < end; ++p) {
    if (journaled_.contains(p) || dirty_.contains(p)) continue;
    if (core_->cache_.Lookup(PageNo(p)) != nullptr) continue;
    wanted.push_back(p);
  }
  if (wanted.size() < 2) return;  // CleanPage's own read does one page as well
  const uint32_t lo = wanted.front();
  read_ahead_.resize(size_t{wanted.back() - lo + 1} * page_size);
  // A failed or short read leaves every page to CleanPage's read, which reports it.
  if (!core_->db_file_->Read(Offset(PageNo(lo), page_size), absl::MakeSpan(read_ahead_)).ok()) {
    return;
  }
  for (uint32_t p : wanted) {
    const absl::Span<const uint8_t> bytes(read_ahead_.data() + size_t{p - lo} * page_size,
                                          page_size);
    if (!PageChecksumOk(PageNo(p), bytes)) continue;  // L11: CleanPage reports it
    auto buffer = std::make_shared<PageBuffer>(page_size);
    std::memcpy(buffer->bytes.get(), bytes.data(), page_size);
    core_->counters_.Add(base::Counter::kCacheMisses);  // a page read from the file
    core_->cache_.Insert(PageNo(p), std::move(buffer));
  }
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
  journal.ReserveOriginals(dirty_.size());
  std::vector<PageNo> pages;
  pages.reserve(dirty_.size());
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
  JKV_RETURN_IF_ERROR(LockForCommit());
  JKV_RETURN_IF_ERROR(FlushJournal());
  JKV_RETURN_IF_ERROR(WriteDatabase());
  Publish();
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::LockForCommit() {
  new_header_ = header_;
  ++new_header_.change_counter;
  JKV_RETURN_IF_ERROR(DirtyPage1(new_header_));
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
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::ReleaseExclusiveForRetry() {
  if (!exclusive_ || spilled_) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(strategy_->ReleaseExclusive());
  exclusive_ = false;
  return absl::OkStatus();
}

absl::Status RollbackWriteTxn::FlushJournal() {
  JKV_DCHECK(exclusive_);
  Journal& journal = strategy_->journal_;
  // OFF keeps no originals for a commit, so a commit that fails half-way cannot be undone.
  const bool keep_originals = core_->options_.journal_mode != JournalMode::kOff;
  seal_ = Seal{};
  seal_.new_pages = new_header_.page_count;
  commit_pages_.clear();
  if (keep_originals) journal.ReserveOriginals(dirty_.size());
  for (auto& [n, dirty] : dirty_) {
    if (keep_originals && dirty.original != nullptr) {
      journal.AddOriginal(PageNo(n), Whole(*dirty.original));
    }
    SealPage(PageNo(n), Whole(*dirty.buffer));
    seal_.entries.push_back({PageNo(n), StoredPageChecksum(Whole(*dirty.buffer))});
    spilled_trailers_.erase(n);
    commit_pages_.push_back(PageNo(n));
  }
  for (const auto& [n, trailer] : spilled_trailers_) seal_.entries.push_back({PageNo(n), trailer});
  return journal.Flush(&seal_);
}

absl::Status RollbackWriteTxn::WriteDatabase() {
  spilled_ = true;  // the database file is about to change
  JKV_RETURN_IF_ERROR(WritePages(commit_pages_));
  if (core_->options_.sync != SyncLevel::kOff) {
    // Every page of the transaction durable before its journal may end: I2 (and, across
    // databases, before the super-journal's removal: J4).
    JKV_RETURN_IF_ERROR(SyncFile(*core_->db_file_, vfs::SyncKind::kData, "I2 database"));
    db_writes_ = DbWrites::kSynced;
  }
  JKV_DCHECK(db_writes_ == DbWrites::kSynced || core_->options_.sync == SyncLevel::kOff);  // I2
  if (shrunk_) {
    // I11: a rewrite or a released free tail shrank the database; its pages are durable (I2), so the
    // pages past the new end are no longer any state's. A cut that fails, or that a power
    // loss undoes, leaves a tail past page_count, which nothing reads (`jkv info` counts it
    // as reclaimable): the commit stands either way.
    (void)core_->db_file_->Truncate(uint64_t{new_header_.page_count} * new_header_.page_size);
  }
  return absl::OkStatus();
}

void RollbackWriteTxn::Publish() {
  // The transaction is durable now (I4; across databases, J4): failing to end the journal
  // does not undo it. The journal is left complete and sealed, so the next opener discards
  // it, and the next transaction overwrites it.
  const int journal_end_failures =
      strategy_->journal_.Finish(Journal::Outcome::kCommitted).ok() ? 0 : 1;
  commit_record_.pages = static_cast<uint32_t>(seal_.entries.size());
  commit_record_.change_counter = new_header_.change_counter;
  {  // published: the cache holds the new pages, the header is the new one
    base::MutexLock lock(&core_->mu_);
    for (auto& [n, dirty] : dirty_) core_->cache_.Insert(PageNo(n), dirty.buffer);
    core_->header_ = new_header_;
    core_->counters_.AddOwned(base::Counter::kCommits);
    core_->counters_.AddOwned(base::Counter::kJournalEndFailures, journal_end_failures);
  }
  End(/*clear_cache=*/false);
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