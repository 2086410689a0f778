#include "pager/pager_core.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/journal.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::IsSyncFailure;
using vfs::SyncFile;

PagerCore::PagerCore(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
                     std::unique_ptr<vfs::File> db_file)
    : fs_(fs),
      path_(std::move(path)),
      journal_path_(path_ + "-journal"),
      options_(options),
      db_file_(std::move(db_file)),
      lock_(db_file_.get()),
      cache_(std::max<uint32_t>(options.cache_pages, 16)) {}

// ---------------------------------------------------------------------------------------------
// Locks, waits and the error state

absl::Status PagerCore::Retry(absl::Time deadline, bool unlock_while_sleeping,
                          absl::string_view what, absl::StatusOr<bool> (DbLock::*attempt)()) {
  base::Backoff wait(deadline, kMaxBusySleep);
  while (true) {
    absl::StatusOr<bool> ok = (lock_.*attempt)();
    JKV_RETURN_IF_ERROR(ok.status());
    if (*ok) return absl::OkStatus();
    if (wait.Expired()) return absl::UnavailableError(absl::StrCat("busy: ", what));
    if (unlock_while_sleeping) {
      SleepUnlocked(wait.Step());
    } else {
      wait.Sleep();
    }
  }
}

void PagerCore::SleepUnlocked(absl::Duration duration) {
  mu_.Unlock();
  std::this_thread::sleep_for(absl::ToChronoMicroseconds(duration));
  mu_.Lock();
}

void PagerCore::SetStickyError(const absl::Status& status) {
  if (sticky_.ok()) {
    sticky_ = absl::Status(status.code(),
                           absl::StrCat(status.message(),
                                        " (the database handle is now in its error state; "
                                        "reopen it to recover)"));
  }
}

absl::Status PagerCore::sticky_error() {
  base::MutexLock lock(&mu_);
  return sticky_;
}

LockLevel PagerCore::lock_level() {
  base::MutexLock lock(&mu_);
  return lock_.level();
}

// ---------------------------------------------------------------------------------------------
// Pages and the header from the database file

absl::StatusOr<std::shared_ptr<const PageBuffer>> PagerCore::LoadPage(PageNo page_no) {
  // State table: transactions read the file under SHARED or better (the error state may have
  // released the locks of a failed writer under open readers).
  JKV_DCHECK(lock_level() >= LockLevel::kShared || !sticky_error().ok());
  auto buffer = std::make_shared<PageBuffer>(page_size_);
  absl::Status s = db_file_->Read(Offset(page_no, page_size_), Whole(*buffer));
  JKV_RETURN_IF_ERROR(CheckLoaded(page_no, s, *buffer));
  return std::shared_ptr<const PageBuffer>(std::move(buffer));
}

absl::Status PagerCore::CheckLoaded(PageNo page_no, const absl::Status& read,
                                const PageBuffer& buffer) {
  if (absl::IsOutOfRange(read)) {
    return absl::DataLossError(absl::StrCat(path_, " page ", page_no.value(),
                                            ": past the end of the file (truncated database)"));
  }
  JKV_RETURN_IF_ERROR(read);
  if (!PageChecksumOk(page_no, Whole(buffer))) {
    return absl::DataLossError(
        absl::StrCat(path_, " page ", page_no.value(), ": checksum mismatch"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DbHeader> PagerCore::ReadHeaderFromFile() {
  uint8_t prefix[kHeaderPrefixSize];
  absl::Status s = db_file_->Read(0, absl::MakeSpan(prefix));
  if (absl::IsOutOfRange(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": not a journalkv database (file too short for a header)"));
  }
  JKV_RETURN_IF_ERROR(s);
  JKV_ASSIGN_OR_RETURN(uint32_t page_size, DecodeHeaderPrefix(prefix, path_));
  PageBuffer page(page_size);
  s = db_file_->Read(0, Whole(page));
  if (absl::IsOutOfRange(s)) {
    return absl::DataLossError(absl::StrCat(path_, ": truncated: shorter than one page of ",
                                            page_size, " bytes"));
  }
  JKV_RETURN_IF_ERROR(s);
  if (!PageChecksumOk(PageNo(1), Whole(page))) {
    return absl::DataLossError(absl::StrCat(path_, " page 1: checksum mismatch"));
  }
  JKV_ASSIGN_OR_RETURN(DbHeader header, DecodeDbHeader(Whole(page), path_));
  if (header.page_size != page_size) {
    return absl::DataLossError(absl::StrCat(path_, " page 1: inconsistent page size"));
  }
  // Only the rollback journal and atomic batches read page 1 here after the open, each of its
  // own family (a WAL opener's rollback-journaled switch runs while opening_).
  const JournalFamily own = options_.journal_mode == JournalMode::kAtomic
                                ? JournalFamily::kAtomic
                                : JournalFamily::kRollback;
  if (header.journal_family != own && !opening_) {
    // A database last used in a WAL mode may have committed transactions in its log that a
    // rollback-mode connection cannot see; reading or writing it here would lose them. One
    // that another connection switched between atomic and a rollback mode would be written
    // by two protocols at once.
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database was last used in ", JournalFamilyName(header.journal_family),
        " mode; reopen it to switch it back to ",
        own == JournalFamily::kAtomic ? "atomic mode" : "a rollback journal mode"));
  }
  JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
  // In WAL mode the log may hold pages past the end of the file (and page 1 is copied first).
  if ((header.journal_family == JournalFamily::kRollback ||
       header.journal_family == JournalFamily::kAtomic) &&
      size < uint64_t{header.page_count} * page_size) {
    return absl::DataLossError(absl::StrCat(path_, ": truncated: the header counts ",
                                            header.page_count, " pages of ", page_size,
                                            " bytes but the file holds ", size, " bytes"));
  }
  return header;
}

// ---------------------------------------------------------------------------------------------
// Creation and recovery of the database file

absl::Status PagerCore::InitializeNewLocked(absl::Time deadline) {
  // Two openers of an empty file both hold SHARED; the one that takes RESERVED first waits for
  // EXCLUSIVE, that is for the other's SHARED to go. So an opener that finds RESERVED taken lets
  // go of SHARED while it waits, then takes SHARED again and looks at the file anew: the other
  // opener has usually created the database by then. (Waiting for RESERVED while holding
  // SHARED deadlocked both until one's busy timeout ran out: "busy: another connection is
  // creating the database" from one-shot openers started together.)
  base::Backoff wait(deadline, kMaxBusySleep);
  while (true) {
    JKV_ASSIGN_OR_RETURN(bool reserved, lock_.TryReserved());
    if (reserved) break;
    if (wait.Expired()) {
      return absl::UnavailableError("busy: another connection is creating the database");
    }
    JKV_RETURN_IF_ERROR(lock_.Release());
    wait.Sleep();
    JKV_RETURN_IF_ERROR(Retry(deadline, false, "another connection is writing the database",
                              &DbLock::TryShared));
    JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
    if (size != 0) return RecoverLocked(deadline);  // the other opener created it
  }
  JKV_RETURN_IF_ERROR(Retry(deadline, false, "another connection is reading the database",
                            &DbLock::TryExclusive));
  JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
  if (size != 0) return RecoverLocked(deadline);  // another connection created it first
  DbHeader header;
  header.page_size = options_.page_size;
  header.journal_family = FamilyOf(options_.journal_mode);
  PageBuffer page(header.page_size);
  EncodeDbHeader(header, Whole(page));
  SealPage(PageNo(1), Whole(page));
  JKV_DCHECK(lock_.level() == LockLevel::kExclusive);  // state table: EXCLUSIVE to write
  // Creating is a transaction from an empty file to page 1, journaled like any other (in every
  // mode), so that a power loss that tears page 1 leaves a journal that empties the file again
  // rather than a file no opener accepts. The journal also replaces any journal left from an
  // earlier database of this name, which must never be applied to this one.
  Journal journal(fs_, journal_path_, JournalMode::kDelete, options_.sync, header.page_size);
  journal.Begin(/*orig_pages=*/0, /*change_counter=*/0);
  Seal seal;
  seal.new_pages = 1;
  seal.entries.push_back({PageNo(1), StoredPageChecksum(Whole(page))});
  // The journal and its directory entry, which holds the database's too, durable first: I1.
  JKV_RETURN_IF_ERROR(journal.Flush(&seal));
  JKV_RETURN_IF_ERROR(db_file_->Write(0, Whole(page)));
  if (options_.sync != SyncLevel::kOff) {
    // Page 1 durable before the journal ends: I2.
    JKV_RETURN_IF_ERROR(SyncFile(*db_file_, vfs::SyncKind::kAll, "I2 database (creation)"));
  }
  // Created. Unlike a commit's, this journal's seal stops proving it complete once a commit
  // rewrites page 1, so its end must be durable before then: the next commit's journal makes
  // it so in the journal-file modes (I1 syncs the directory before any database write), and
  // I10 at open in MEMORY, OFF and WAL mode.
  JKV_RETURN_IF_ERROR(journal.Finish(Journal::Outcome::kCommitted));
  header_ = header;
  page_size_ = header.page_size;
  return lock_.DowngradeToShared();
}

// REQUIRES: SHARED held. Rolls back a hot journal if there is one, then (re)reads the header
// and empties the cache.
absl::Status PagerCore::RecoverLocked(absl::Time deadline) {
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

absl::Status PagerCore::RollBackHotJournalLocked(absl::Time deadline,
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
  if (*result == JournalRecovery::kRolledBack) counters_.AddOwned(base::Counter::kRecoveries);
  return absl::OkStatus();
}

}  // namespace journalkv::pager
