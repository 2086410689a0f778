// Opening a database, switching its journal family, and the dispatch of every transaction to
// the journaling strategy (journal_strategy.h).
#include "pager/pager.h"

#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/atomic_strategy.h"
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
    case JournalFamily::kAtomic:
      return JournalMode::kAtomic;
    default:
      return JournalMode::kWal;
  }
}

namespace {

// The database file at `given_path` (symbolic links resolved), opened for the pager: its
// checks before anything is read or written.
absl::StatusOr<std::pair<std::string, std::unique_ptr<vfs::File>>> OpenDatabaseFile(
    vfs::FileSystem* fs, const std::string& given_path, const PagerOptions& options) {
  if (!IsValidPageSize(options.page_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page size ", options.page_size, " is not a power of two in [512, 65536]"));
  }
  // The side files (-journal, -wal, -wal2, -shm) are named after the file itself, not after a
  // symbolic link to it: two names would otherwise mean two logs and two write locks for one
  // database, and commits through one name lost to the other's checkpoints.
  JKV_ASSIGN_OR_RETURN(std::string path, fs->ResolveLinks(given_path));
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
  // The read map (vfs/read_map.h): where the file system has none, or the address space is
  // short, reads stay preads (the same bytes, the same checks).
  if (options.mmap_size > 0) (void)file->EnableReadMap(options.mmap_size);
  return std::make_pair(std::move(path), std::move(file));
}

// The one place that knows every journal family (journal_strategy.h, JournalFamilyOps).
const JournalFamilyOps& FamilyOps(JournalFamily family) {
  switch (family) {
    case JournalFamily::kRollback:
      return RollbackFamily();
    case JournalFamily::kAtomic:
      return AtomicFamily();
    case JournalFamily::kWal:
    case JournalFamily::kWal2:
      break;
  }
  return WalFamily();
}

// Journal mode atomic on a file without atomic batches: the fallback mode when one was asked
// for (`options` then names it, with the reason), else the refusal. A new database's page
// size is checked here too, before anything is written; an existing one's at Enter (A6).
absl::Status ResolveAtomicMode(vfs::File& file, PagerOptions& options) {
  if (options.journal_mode != JournalMode::kAtomic || options.access == AccessMode::kReadOnly) {
    return absl::OkStatus();
  }
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file.Size());
  absl::Status s = CheckAtomicBatches(file, size == 0 ? options.page_size : 0);
  if (s.ok() || file.atomic_write_kind() != vfs::AtomicWriteKind::kNone ||
      !options.atomic_fallback.has_value()) {
    return s;
  }
  if (*options.atomic_fallback == JournalMode::kAtomic) {
    return absl::InvalidArgumentError("the fallback of journal mode atomic cannot be atomic");
  }
  options.journal_mode = *options.atomic_fallback;
  options.atomic_fallback_reason = absl::StrCat(
      "running in ", JournalModeName(options.journal_mode),
      " mode (the atomic fallback): ", s.message());
  return absl::OkStatus();
}

}  // namespace

// The steps that differ by family are the families' own (JournalFamilyOps, which lists the
// order); every opener first runs the rollback journal's recovery under its own opening
// strategy, which also journals a switch of the family byte (WAL openers: in DELETE mode).
absl::StatusOr<std::unique_ptr<Pager>> Pager::Open(vfs::FileSystem* fs,
                                                   const std::string& given_path,
                                                   const PagerOptions& options) {
  JKV_ASSIGN_OR_RETURN(auto opened, OpenDatabaseFile(fs, given_path, options));
  PagerOptions resolved = options;
  JKV_RETURN_IF_ERROR(ResolveAtomicMode(*opened.second, resolved));
  std::unique_ptr<Pager> pager(
      new Pager(fs, std::move(opened.first), resolved, std::move(opened.second)));
  const JournalFamily target = FamilyOf(resolved.journal_mode);
  const JournalFamilyOps& mine = FamilyOps(target);
  JournalFamily family;
  {
    base::MutexLock lock(&pager->mu_);
    JKV_RETURN_IF_ERROR(mine.BeforeReadLocked(*pager));
    pager->opening_ = true;
    absl::Status s = pager->OpenLocked();
    if (absl::IsDataLoss(s) || absl::IsInvalidArgument(s)) {
      s = mine.RepairHeaderLocked(*pager, s);
    }
    if (s.ok()) s = pager->EndForeignJournalDurably();
    if (s.ok() && pager->header_.journal_family != target) {
      s = FamilyOps(pager->header_.journal_family).LeaveLocked(*pager);
    }
    pager->opening_ = false;
    family = pager->header_.journal_family;
    absl::Status released =
        mine.KeepsShared() && family == target ? absl::OkStatus() : pager->lock_.Release();
    JKV_RETURN_IF_ERROR(s);
    JKV_RETURN_IF_ERROR(released);
    const JournalMode mode = resolved.journal_mode;
    pager->strategy_ = std::make_unique<RollbackStrategy>(
        pager->core(), IsRollbackMode(mode) ? mode : JournalMode::kDelete);
  }
  JKV_ASSIGN_OR_RETURN(
      std::unique_ptr<JournalStrategy> strategy,
      mine.Enter(*pager, family, [&](JournalFamily f) { return pager->SetFamily(f); }));
  if (strategy != nullptr) pager->strategy_ = std::move(strategy);
  if (target != JournalFamily::kAtomic) {
    // Held exclusively since AtomicFamily()'s LeaveLocked when this opener switched the
    // database out of atomic mode; a no-op otherwise.
    base::MutexLock lock(&pager->mu_);
    JKV_RETURN_IF_ERROR(pager->lock_.ReleaseAtomicOpen());
  }
  return pager;
}

// I10: a connection that writes no journal file (MEMORY, OFF, WAL) makes the end of any journal
// left by a connection of a journal-file mode durable before it commits, or that journal could
// come back after a power loss and be rolled back over this connection's commits.
absl::Status Pager::EndForeignJournalDurably() {
  if (options_.sync == SyncLevel::kOff || options_.access == AccessMode::kReadOnly ||
      (options_.journal_mode != JournalMode::kMemory &&
       options_.journal_mode != JournalMode::kOff && !IsWalMode(options_.journal_mode) &&
       options_.journal_mode != JournalMode::kAtomic)) {
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

absl::StatusOr<wal::CheckpointResult> Pager::Checkpoint(wal::CheckpointMode mode) {
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
  const vfs::ReadMapCounters map = db_file_->read_map_counters();
  c.Set(base::Counter::kMapReads, map.copies);
  c.Set(base::Counter::kMapFaults, map.faults);
  c.Set(base::Counter::kMapDamage, map.damage);
  PagerStats s;
  strategy_->AddStats(c, s);  // its own rows and strings, under its own locks
  s.atomic_fallback = options_.atomic_fallback_reason;
  static_cast<base::CounterValues&>(s) = base::CounterValues::From(c);
  return s;
}

}  // namespace journalkv::pager
