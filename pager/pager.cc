// Opening a database, switching its journal family, and the dispatch of every transaction to
// the journaling strategy (journal_strategy.h).
#include "pager/pager.h"

#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/pager_internal.h"
#include "pager/rollback_strategy.h"
#include "pager/wal_strategy.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::SyncDir;
using vfs::SyncFile;

// ---------------------------------------------------------------------------------------------
// Opening

Pager::Pager(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
             std::unique_ptr<vfs::File> db_file)
    : PagerCore(fs, std::move(path), options, std::move(db_file)) {}

Pager::~Pager() {
  if (strategy_ != nullptr) strategy_->Close();
  strategy_.reset();
  base::MutexLock lock(&mu_);
  lock_.Release().IgnoreError();  // closing the file drops every lock anyway
}

absl::StatusOr<JournalMode> Pager::DefaultJournalMode(vfs::FileSystem* fs,
                                                     const std::string& given_path) {
  JKV_ASSIGN_OR_RETURN(const std::string path, fs->ResolveLinks(given_path));
  JKV_ASSIGN_OR_RETURN(bool exists, fs->Exists(path));
  if (!exists) return JournalMode::kWal;
  JKV_ASSIGN_OR_RETURN(bool has_log2, fs->Exists(path + "-wal2"));
  if (has_log2) return JournalMode::kWal2;
  JKV_ASSIGN_OR_RETURN(bool has_log, fs->Exists(path + "-wal"));
  JKV_ASSIGN_OR_RETURN(bool is_dir, fs->IsDirectory(path));
  if (is_dir) return JournalMode::kWal;  // Open names the problem
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs->Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase}));
  JKV_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  std::array<uint8_t, kJournalFamilyOffset + 1> prefix{};
  if (size < prefix.size()) return JournalMode::kWal;
  JKV_RETURN_IF_ERROR(file->Read(0, absl::MakeSpan(prefix)));
  if (std::memcmp(prefix.data(), kMagic, sizeof(kMagic)) != 0) return JournalMode::kWal;
  switch (static_cast<JournalFamily>(prefix[kJournalFamilyOffset])) {
    case JournalFamily::kRollback:
      return has_log ? JournalMode::kWal : JournalMode::kDelete;
    case JournalFamily::kWal2:
      return JournalMode::kWal2;
    default:
      return JournalMode::kWal;
  }
}

absl::StatusOr<std::unique_ptr<Pager>> Pager::Open(vfs::FileSystem* fs,
                                                   const std::string& given_path,
                                                   const PagerOptions& options) {
  if (!IsValidPageSize(options.page_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page size ", options.page_size, " is not a power of two in [512, 65536]"));
  }
  // The side files (-journal, -wal, -wal2, -shm) are named after the file itself, not after a
  // symbolic link to it: two names would otherwise mean two logs and two write locks for one
  // database, and commits through one name lost to the other's checkpoints.
  JKV_ASSIGN_OR_RETURN(const std::string path, fs->ResolveLinks(given_path));
  JKV_ASSIGN_OR_RETURN(bool is_dir, fs->IsDirectory(path));
  if (is_dir) return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  const bool read_only = options.access == AccessMode::kReadOnly;
  JKV_ASSIGN_OR_RETURN(
      std::unique_ptr<vfs::File> file,
      fs->Open(path, {read_only ? vfs::OpenMode::kReadOnly : vfs::OpenMode::kCreate,
                      vfs::FileKind::kDatabase}));
  // A hard link is a second name no path can be resolved from, and its side files would be
  // another database's: refused, in every mode, before anything is read or written.
  JKV_ASSIGN_OR_RETURN(const uint64_t links, file->LinkCount());
  if (links > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the database file has ", links,
        " names (hard links); its -wal, -shm and -journal are named after the name it is "
        "opened by, so every name but one must be removed before it is opened"));
  }
  std::unique_ptr<Pager> pager(new Pager(fs, path, options, std::move(file)));
  const bool wal = IsWalMode(options.journal_mode);
  const JournalFamily target = FamilyOf(options.journal_mode);
  JournalFamily family;
  {
    base::MutexLock lock(&pager->mu_);
    if (!wal) {
      // Before the header is read: a switch to a WAL mode that holds the byte is waited out,
      // and the header then says where the database went (kRollbackOpenByte).
      JKV_RETURN_IF_ERROR(pager->Retry(pager->Deadline(), false,
                                       "another connection is switching the database to a WAL "
                                       "mode",
                                       &DbLock::TryRollbackOpen));
    }
    pager->opening_ = true;
    absl::Status s = pager->OpenLocked();
    if (wal && (absl::IsDataLoss(s) || absl::IsInvalidArgument(s))) {
      s = pager->AdoptLogPageSizeLocked(s);
    }
    if (s.ok()) s = pager->EndForeignJournalDurably();
    if (s.ok() && pager->header_.journal_family != JournalFamily::kRollback &&
        pager->header_.journal_family != target) {
      s = pager->LeaveWalLocked();  // to a rollback mode, or between wal and wal2
    }
    pager->opening_ = false;
    family = pager->header_.journal_family;
    // A WAL-mode connection keeps SHARED for its whole life (wal/wal_connection.h).
    absl::Status released =
        wal && family == target ? absl::OkStatus() : pager->lock_.Release();
    JKV_RETURN_IF_ERROR(s);
    JKV_RETURN_IF_ERROR(released);
    // WAL-mode connections journal only the switch of the family byte, in DELETE mode.
    pager->strategy_ = std::make_unique<RollbackStrategy>(
        pager->core(), wal ? JournalMode::kDelete : options.journal_mode);
  }
  if (!wal && family != JournalFamily::kRollback) {
    JKV_RETURN_IF_ERROR(pager->SetFamily(JournalFamily::kRollback));
  }
  if (wal && family != target) {
    // No rollback-mode connection may be open through the switch (kRollbackOpenByte): it
    // would find its database in a WAL mode and fail every call.
    absl::StatusOr<bool> alone;
    {
      base::MutexLock lock(&pager->mu_);
      alone = pager->lock_.TrySwitchFromRollback();
    }
    JKV_RETURN_IF_ERROR(alone.status());
    if (!*alone) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": the database is in a rollback journal mode and other connections have it "
          "open; it can switch to ", JournalModeName(options.journal_mode),
          " mode only when no other connection is open"));
    }
  }
  if (wal) {
    const absl::Time switch_deadline = pager->Deadline();
    while (family != target) {
      absl::Status s = pager->SetFamily(target);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat(path, ": cannot switch to ",
                                                    JournalModeName(options.journal_mode),
                                                    " mode: ", s.message()));
      }
      wal::CallWalHook("open:family_switched");
      base::MutexLock lock(&pager->mu_);
      JKV_RETURN_IF_ERROR(pager->Retry(pager->Deadline(), false,
                                       "another connection is writing the database",
                                       &DbLock::TryShared));
      pager->opening_ = true;
      absl::Status recovered = pager->RecoverLocked(pager->Deadline());
      pager->opening_ = false;
      JKV_RETURN_IF_ERROR(recovered);
      // The switch commits without SHARED held after it: a rollback-mode opener that came in
      // between may have switched the family back. Only under SHARED does it stay put.
      family = pager->header_.journal_family;
      if (family != target) {
        JKV_RETURN_IF_ERROR(pager->lock_.Release());
        if (absl::Now() >= switch_deadline) {
          return absl::UnavailableError(absl::StrCat(
              "busy: ", path, ": another connection keeps switching it to another journal "
              "mode"));
        }
      }
    }
    {
      base::MutexLock lock(&pager->mu_);
      // Held only for the switch (a WAL connection holds SHARED instead); a no-op when this
      // connection did not switch.
      JKV_RETURN_IF_ERROR(pager->lock_.ReleaseRollbackOpen());
    }
    if (options.exclusive_locking) {
      base::MutexLock lock(&pager->mu_);
      const absl::Time deadline = pager->Deadline();
      JKV_RETURN_IF_ERROR(pager->Retry(deadline, false, "another connection has the database open",
                                       &DbLock::TryReserved));
      JKV_RETURN_IF_ERROR(pager->Retry(deadline, false, "another connection has the database open",
                                       &DbLock::TryExclusive));
    }
    JKV_ASSIGN_OR_RETURN(pager->strategy_, WalStrategy::Open(pager->core()));
  }
  return pager;
}

// I10: a connection that writes no journal file (MEMORY, OFF, WAL) makes the end of any journal
// left by a connection of a journal-file mode durable before it commits, or that journal could
// come back after a power loss and be rolled back over this connection's commits.
absl::Status Pager::EndForeignJournalDurably() {
  if (options_.sync == SyncLevel::kOff || options_.access == AccessMode::kReadOnly ||
      (options_.journal_mode != JournalMode::kMemory &&
       options_.journal_mode != JournalMode::kOff && !IsWalMode(options_.journal_mode))) {
    return absl::OkStatus();
  }
  JKV_RETURN_IF_ERROR(SyncDir(*fs_, journal_path_, "I10 journal directory"));  // an unlink
  absl::StatusOr<std::unique_ptr<vfs::File>> journal =
      fs_->Open(journal_path_, {vfs::OpenMode::kReadWrite, vfs::FileKind::kJournal});
  if (absl::IsNotFound(journal.status())) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(journal.status());
  return SyncFile(**journal, vfs::SyncKind::kAll, "I10 journal");  // a truncate or a zeroed header
}

absl::Status Pager::OpenLocked() {
  const absl::Time deadline = Deadline();
  JKV_RETURN_IF_ERROR(Retry(deadline, false, "another connection is writing the database",
                            &DbLock::TryShared));
  JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
  if (size == 0) {
    if (options_.access == AccessMode::kReadOnly) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": empty file cannot be opened read-only"));
    }
    wal::CallWalHook("open:creating");
    return InitializeNewLocked(deadline);
  }
  return RecoverLocked(deadline);
}

absl::Status Pager::AdoptLogPageSizeLocked(const absl::Status& failure) {
  // Either log may be the one with a header: in WAL2 a TRUNCATE leaves -wal empty (or a power
  // loss leaves it so) while -wal2 holds the frames, page 1 among them. (Looking at -wal only
  // as long as it existed left a WAL2 database whose page 1 a power loss tore during a
  // checkpoint unopenable: wal_crash_sweep_test, a recovery cut and a second power loss.)
  absl::StatusOr<wal::WalHeader> header = failure;
  for (const char* suffix : {"-wal", "-wal2"}) {
    absl::StatusOr<std::unique_ptr<vfs::File>> log =
        fs_->Open(path_ + suffix, {vfs::OpenMode::kReadOnly, vfs::FileKind::kWal});
    if (!log.ok()) continue;
    uint8_t bytes[wal::kWalHeaderSize];
    if (!(*log)->Read(0, absl::MakeSpan(bytes)).ok()) continue;
    header = wal::DecodeWalHeader(absl::MakeConstSpan(bytes));
    if (header.ok()) break;
  }
  if (!header.ok()) return failure;
  DbHeader placeholder;  // replaced by page 1 as the log has it at the first snapshot
  placeholder.page_size = header->page_size;
  placeholder.journal_family = FamilyOf(options_.journal_mode);
  header_ = placeholder;
  page_size_ = header->page_size;
  cache_.Clear();
  return absl::OkStatus();
}

// An opener in another mode of a database of a WAL family (wal or wal2, `header_`'s): when no
// other connection has it open, copy the whole log(s) into the database file and remove them
// and -shm; the caller then records its own family in page 1. REQUIRES: SHARED held.
absl::Status Pager::LeaveWalLocked() {
  const JournalMode from =
      header_.journal_family == JournalFamily::kWal2 ? JournalMode::kWal2 : JournalMode::kWal;
  const absl::string_view from_name = JournalModeName(from);
  if (options_.access == AccessMode::kReadOnly) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database is in ", from_name, " mode; open it in ", from_name,
        " mode to read it read-only"));
  }
  JKV_ASSIGN_OR_RETURN(bool reserved, lock_.TryReserved());
  bool exclusive = false;
  if (reserved) {
    JKV_ASSIGN_OR_RETURN(exclusive, lock_.TryExclusive());
  }
  if (!exclusive) {
    lock_.DowngradeToShared().IgnoreError();  // the error below is the one to report
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database is in ", from_name, " mode and other connections have it open; "
        "it can switch to ", JournalModeName(options_.journal_mode),
        " mode only when no other connection is open"));
  }
  // Alone: every WAL connection holds SHARED for its whole life, so no process has the -shm
  // mapped. The log is copied back through a heap index (as with exclusive locking), which
  // also works where the file system has no shared memory (a database a WAL opener created
  // there before it failed is not stuck), and the -shm, if any, is removed after it.
  PagerOptions alone = options_;
  alone.exclusive_locking = true;
  alone.journal_mode = from;
  absl::StatusOr<std::unique_ptr<wal::WalConnection>> wal =
      wal::WalConnection::Open(fs_, path_, db_file_.get(), page_size_, WalOptionsOf(alone), &mu_);
  absl::Status s = wal.ok() ? (*wal)->CloseLast() : wal.status();
  if (wal.ok()) wal->reset();
  if (s.ok()) {
    absl::StatusOr<bool> shm_left = fs_->Exists(path_ + "-shm");
    s = shm_left.ok() ? (*shm_left ? fs_->Delete(path_ + "-shm") : absl::OkStatus())
                      : shm_left.status();
  }
  if (!s.ok()) {
    lock_.DowngradeToShared().IgnoreError();
    return s;
  }
  JKV_ASSIGN_OR_RETURN(bool wal_left, fs_->Exists(path_ + "-wal"));
  if (!wal_left && from == JournalMode::kWal2) {
    JKV_ASSIGN_OR_RETURN(wal_left, fs_->Exists(path_ + "-wal2"));
  }
  if (wal_left) {
    lock_.DowngradeToShared().IgnoreError();
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": could not copy the whole log back; the database stays in ", from_name,
        " mode"));
  }
  JKV_RETURN_IF_ERROR(lock_.DowngradeToShared());
  cache_.Clear();
  JKV_ASSIGN_OR_RETURN(header_, ReadHeaderFromFile());
  return absl::OkStatus();
}

absl::Status Pager::SetFamily(JournalFamily family) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTxn> txn, BeginWrite());
  txn->set_journal_family(family);
  return txn->Commit();
}

// ---------------------------------------------------------------------------------------------
// Transactions, checkpoints and stats: the strategy's

absl::StatusOr<std::unique_ptr<ReadTxn>> Pager::BeginRead() { return strategy_->BeginRead(); }

absl::StatusOr<std::unique_ptr<WriteTxn>> Pager::BeginWrite() {
  if (options_.access == AccessMode::kReadOnly) {
    if (!options_.read_only_reason.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path_, ": the database is open read-only because writing it is not allowed (",
          options_.read_only_reason, ")"));
    }
    return absl::FailedPreconditionError(absl::StrCat(path_, ": database opened read-only"));
  }
  return strategy_->BeginWrite();
}

absl::StatusOr<checkpoint::CheckpointResult> Pager::Checkpoint(checkpoint::CheckpointMode mode) {
  return strategy_->Checkpoint(mode);
}

PagerStats Pager::Stats() {
  base::CounterArray c = counters_.Snapshot();
  {
    base::MutexLock lock(&mu_);
    c.Set(base::Counter::kPageCount, header_.page_count);
    c.Set(base::Counter::kFreelistPages, header_.freelist_count);
  }
  c.Set(base::Counter::kCachedPages, cache_.size());
  c.Set(base::Counter::kPageSize, page_size_);
  PagerStats s;
  strategy_->AddStats(c, s);  // its own rows and strings, under its own locks
  static_cast<base::CounterValues&>(s) = base::CounterValues::From(c);
  return s;
}

}  // namespace journalkv::pager
