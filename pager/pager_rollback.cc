// The rollback journal's protocol, as the pager runs it (pager.h: the state table and
// I1..I10): recovery of a hot journal, the SHARED / RESERVED / EXCLUSIVE locks of readers and
// writers, and a write transaction's spill and commit to the database file through the journal.
// WAL mode's counterpart is wal/wal_connection.{h,cc} with pager/pager_wal.cc.
#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "pager/pager.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::IsSyncFailure;
using vfs::SyncDir;
using vfs::SyncFile;

// ---------------------------------------------------------------------------------------------
// Recovery

// REQUIRES: SHARED held. Rolls back a hot journal if there is one, then (re)reads the header
// and empties the cache.
absl::Status Pager::RecoverLocked(absl::Time deadline) {
  JKV_DCHECK(lock_.level() >= LockLevel::kShared);
  uint8_t prefix[kHeaderPrefixSize];
  absl::Status read = db_file_->Read(0, absl::MakeSpan(prefix));
  if (!read.ok() && !absl::IsOutOfRange(read)) return read;
  absl::StatusOr<uint32_t> decoded =
      read.ok() ? DecodeHeaderPrefix(prefix, path_) : absl::StatusOr<uint32_t>(read);
  JKV_ASSIGN_OR_RETURN(bool journal_valid, JournalHeaderValid(fs_, journal_path_));
  // A header that does not decode is refused (untouched by ReadHeaderFromFile) unless a valid
  // journal stands next to it: then a power loss tore page 1 mid-commit and the journal holds
  // its original.
  if (journal_valid) {
    std::optional<uint32_t> db_page_size;
    if (decoded.ok()) db_page_size = *decoded;
    JKV_RETURN_IF_ERROR(RollBackHotJournalLocked(deadline, db_page_size));
    // Rolling back the creation of the database empties the file: create it anew.
    JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
    if (size == 0 && options_.access != AccessMode::kReadOnly) {
      return InitializeNewLocked(deadline);
    }
  }
  JKV_ASSIGN_OR_RETURN(header_, ReadHeaderFromFile());
  page_size_ = header_.page_size;
  cache_.Clear();
  return absl::OkStatus();
}

absl::Status Pager::RollBackHotJournalLocked(absl::Time deadline,
                                             std::optional<uint32_t> db_page_size) {
  // A journal next to a live writer (one holding RESERVED) is that writer's: it has not
  // touched the database file, which it cannot do while this connection holds SHARED.
  JKV_ASSIGN_OR_RETURN(bool reserved_free,
                       db_file_->TryLock(kReservedByte, 1, vfs::LockMode::kShared));
  if (!reserved_free) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(db_file_->Unlock(kReservedByte, 1));
  absl::StatusOr<JournalRecovery> result;
  if (options_.access == AccessMode::kReadOnly) {
    result = RecoverJournal(fs_, journal_path_, db_file_.get(), db_page_size,
                            options_.journal_mode, options_.sync, options_.access);
  } else {
    JKV_RETURN_IF_ERROR(
        Retry(deadline, false, "another connection is writing", &DbLock::TryReserved));
    absl::Status locked = Retry(deadline, false, "readers hold the database during recovery",
                                &DbLock::TryExclusive);
    JKV_DCHECK(!locked.ok() || lock_.level() == LockLevel::kExclusive);  // recovery writes
    result = locked.ok() ? RecoverJournal(fs_, journal_path_, db_file_.get(), db_page_size,
                                          options_.journal_mode, options_.sync, options_.access)
                         : absl::StatusOr<JournalRecovery>(locked);
    JKV_RETURN_IF_ERROR(lock_.DowngradeToShared());
  }
  if (IsSyncFailure(result.status())) SetStickyError(result.status());  // I7
  JKV_RETURN_IF_ERROR(result.status());
  if (*result == JournalRecovery::kRolledBack) ++stats_.recoveries;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Locks

absl::Status Pager::AcquireSharedLocked(absl::Time deadline) {
  JKV_RETURN_IF_ERROR(Retry(deadline, false, "another connection is writing the database",
                            &DbLock::TryShared));
  absl::Status s = ValidateCacheLocked(deadline);
  if (!s.ok()) lock_.Release().IgnoreError();  // the caller gives up; the error is s
  return s;
}

// REQUIRES: SHARED held. Another connection may have committed since this pager last held a
// lock: the change counter in page 1 (written first by every commit, I5) tells. Reading its 8
// bytes is enough: only power loss tears a write, and no connection with a cache outlives that.
absl::Status Pager::ValidateCacheLocked(absl::Time deadline) {
  JKV_DCHECK(lock_.level() >= LockLevel::kShared);
  uint8_t counter[8];
  absl::Status s = db_file_->Read(kChangeCounterOffset, absl::MakeSpan(counter));
  if (s.ok() && base::DecodeFixed64(counter) == header_.change_counter) return absl::OkStatus();
  if (!s.ok() && !absl::IsOutOfRange(s)) return s;
  return RecoverLocked(deadline);
}

// Waiting writers queue without blocking the writer they wait for. The committing writer
// needs every other SHARED lock gone, so a connection that took SHARED only to start this
// transaction (none of its readers is open) drops it again before each sleep, as SQLite does
// for a connection with no transaction open; with readers open it keeps SHARED (the committing
// writer waits for those readers anyway). While it waits it holds the WAITING byte, and a
// writer that starts while another connection waits sleeps once before its first try, so
// writers of different connections take turns (db_lock.h).
absl::Status Pager::AcquireReservedLocked(absl::Time deadline) {
  base::Backoff wait(deadline, kMaxWriterSleep);
  JKV_ASSIGN_OR_RETURN(bool others_waiting, lock_.OtherWritersWaiting());
  if (others_waiting) {
    JKV_RETURN_IF_ERROR(lock_.SetWaiting(true));
    wait.SetNext(kWriterYield);
  }
  for (bool first = true;; first = false) {
    JKV_RETURN_IF_ERROR(sticky_);
    if (!first || !others_waiting) {
      // One try at SHARED (a writer elsewhere may be committing), then one at RESERVED.
      bool shared = lock_.level() != LockLevel::kNone;
      if (!shared) {
        JKV_ASSIGN_OR_RETURN(shared, lock_.TryShared());
        if (shared) {
          if (absl::Status s = ValidateCacheLocked(deadline); !s.ok()) {
            lock_.Release().IgnoreError();  // giving up; s is the error to report
            return s;
          }
        }
      }
      if (shared) {
        JKV_ASSIGN_OR_RETURN(bool reserved, lock_.TryReserved());
        if (reserved) return absl::OkStatus();
        if (readers_ == 0) JKV_RETURN_IF_ERROR(lock_.Release());
      }
      JKV_RETURN_IF_ERROR(lock_.SetWaiting(true));
    }
    if (wait.Expired()) {
      return absl::ResourceExhaustedError("busy: another connection is writing the database");
    }
    SleepUnlocked(wait.Step());
  }
}

absl::Status Pager::AcquireExclusive() {
  base::MutexLock lock(&mu_);
  JKV_DCHECK(lock_.level() == LockLevel::kReserved);
  const absl::Time deadline = Deadline();
  writer_exclusive_ = true;  // new readers of this pager wait from here on
  absl::Status s = WaitFor(deadline, "readers of this handle are still open",
                           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return readers_ == 0; });
  if (s.ok()) {
    s = Retry(deadline, true, "readers of another connection are still open",
              &DbLock::TryExclusive);
  }
  if (!s.ok()) {
    writer_exclusive_ = false;
    lock_.DropPending().IgnoreError();  // giving up; s is the error to report
    cv_.NotifyAll();
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Write transactions: spill and commit to the database file

// Writes dirty pages in page order, page 1 first when present (I5), sealing each.
absl::Status WriteTxn::WritePages(std::vector<PageNo>& pages) {
  std::sort(pages.begin(), pages.end());
  JKV_DCHECK(pager_->lock_level() == LockLevel::kExclusive);  // state table
  // I1: the originals of these pages are in the journal, durable at sync != OFF.
  JKV_DCHECK(pager_->journal_->flushed());
  // I5: the transaction's first write to the file is page 1 with the change counter start+1.
  JKV_DCHECK(db_writes_ != DbWrites::kNone ||
             (!pages.empty() && pages.front() == PageNo(1) &&
              ChangeCounter(*dirty_.at(1).buffer) == start_header_.change_counter + 1));
  db_writes_ = DbWrites::kUnsynced;
  for (PageNo page_no : pages) {
    PageBuffer& buffer = *dirty_[page_no.value()].buffer;
    JKV_RETURN_IF_ERROR(pager_->db_file_->Write(Offset(page_no, buffer.size), Whole(buffer)));
  }
  return absl::OkStatus();
}

absl::Status WriteTxn::Spill() {
  if (!exclusive_) {
    JKV_RETURN_IF_ERROR(pager_->AcquireExclusive());
    exclusive_ = true;
  }
  if (!page1_marked_) {
    // I5: page 1 with a new change counter reaches the file before any other page of this
    // transaction, so a connection that stays open and validates its cache by the counter
    // notices the spilled pages (and, if this process dies, the hot journal) instead of mixing
    // them with its cached pages. The counter start+1 is the one the commit will write too.
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(PageNo(1)));
    DirtyPage& page1 = dirty_[1];
    page1.buffer = std::make_shared<PageBuffer>(clean->size);
    page1.original = journaled_.contains(1) ? nullptr : std::move(clean);
    DbHeader marker = start_header_;
    ++marker.change_counter;
    EncodeDbHeader(marker, Whole(*page1.buffer));
    page1_marked_ = true;
  }
  Journal& journal = *pager_->journal_;
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
    base::MutexLock lock(&pager_->mu_);
    pager_->SetStickyError(s);
    return s;
  }
  for (auto& [n, dirty] : dirty_) pager_->CacheSpilled(PageNo(n), std::move(dirty.buffer));
  dirty_.clear();
  base::MutexLock lock(&pager_->mu_);
  ++pager_->stats_.spills;
  return absl::OkStatus();
}

absl::Status WriteTxn::CommitToFile() {
  DbHeader new_header = header_;
  ++new_header.change_counter;
  {
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(PageNo(1)));
    DirtyPage& page1 = dirty_[1];
    page1.buffer = std::make_shared<PageBuffer>(clean->size);
    page1.original = journaled_.contains(1) ? nullptr : std::move(clean);
    EncodeDbHeader(new_header, Whole(*page1.buffer));
  }
  if (!exclusive_) {
    JKV_RETURN_IF_ERROR(pager_->AcquireExclusive());
    exclusive_ = true;
  }
  Journal& journal = *pager_->journal_;
  // OFF keeps no originals for a commit, so a commit that fails half-way cannot be undone.
  const bool keep_originals = pager_->options_.journal_mode != JournalMode::kOff;
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
  if (pager_->options_.sync != SyncLevel::kOff) {
    // Every page of the transaction durable before its journal may end: I2.
    JKV_RETURN_IF_ERROR(SyncFile(*pager_->db_file_, vfs::SyncKind::kData, "I2 database"));
    db_writes_ = DbWrites::kSynced;
  }
  JKV_DCHECK(db_writes_ == DbWrites::kSynced || pager_->options_.sync == SyncLevel::kOff);  // I2
  // The transaction is durable now (I4): failing to end the journal does not undo it. The
  // journal is left complete and sealed, so the next opener discards it, and the next
  // transaction overwrites it.
  if (!journal.Finish(Journal::Outcome::kCommitted).ok()) ++journal_end_failures_;
  pager_->Publish(*this, new_header);
  End(/*clear_cache=*/false);
  return absl::OkStatus();
}

}  // namespace journalkv::pager
