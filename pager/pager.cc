#include "pager/pager.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "pager/freelist.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::IsSyncFailure;
using vfs::SyncDir;
using vfs::SyncFile;

// ---------------------------------------------------------------------------------------------
// Opening

Pager::Pager(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
             std::unique_ptr<vfs::File> db_file)
    : fs_(fs),
      path_(std::move(path)),
      journal_path_(path_ + "-journal"),
      options_(options),
      db_file_(std::move(db_file)),
      lock_(db_file_.get()),
      cache_(std::max<uint32_t>(options.cache_pages, 16)) {}

Pager::~Pager() {
  // No checkpoint touches a closed database: a running background step stops at its next page.
  if (background_ != nullptr) background_->Stop();
  base::MutexLock lock(&mu_);
  if (wal_ != nullptr) {
    // The last connection (the only one that can take EXCLUSIVE: every WAL connection holds
    // SHARED) copies the log into the database file and removes -wal and -shm. A failure
    // leaves them for the next opener, which recovers from them.
    if (lock_.level() == LockLevel::kExclusive) {
      if (sticky_.ok()) wal_->CloseLast().IgnoreError();  // exclusive locking: alone by design
    } else if (sticky_.ok() && options_.access != AccessMode::kReadOnly) {
      absl::StatusOr<bool> reserved = lock_.TryReserved();
      if (reserved.ok() && *reserved) {
        absl::StatusOr<bool> exclusive = lock_.TryExclusive();
        if (exclusive.ok() && *exclusive) wal_->CloseLast().IgnoreError();
      }
    } else if (sticky_.ok()) {
      wal_->CloseReadOnly().IgnoreError();  // read-only: at most the -shm it created goes
    }
    wal_.reset();
  }
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
    pager->journal_ = std::make_unique<Journal>(fs, pager->journal_path_,
                                                wal ? JournalMode::kDelete : options.journal_mode,
                                                options.sync, pager->page_size_);
  }
  if (!wal && family != JournalFamily::kRollback) {
    JKV_RETURN_IF_ERROR(pager->SetFamily(JournalFamily::kRollback));
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
          return absl::ResourceExhaustedError(absl::StrCat(
              "busy: ", path, ": another connection keeps switching it to another journal "
              "mode"));
        }
      }
    }
    if (options.exclusive_locking) {
      base::MutexLock lock(&pager->mu_);
      const absl::Time deadline = pager->Deadline();
      JKV_RETURN_IF_ERROR(pager->Retry(deadline, false, "another connection has the database open",
                                       &DbLock::TryReserved));
      JKV_RETURN_IF_ERROR(pager->Retry(deadline, false, "another connection has the database open",
                                       &DbLock::TryExclusive));
    }
    JKV_ASSIGN_OR_RETURN(pager->wal_, wal::WalConnection::Open(fs, path, pager->db_file_.get(),
                                                        pager->page_size_, WalOptionsOf(options)));
    pager->StartPolicy();
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

absl::Status Pager::InitializeNewLocked(absl::Time deadline) {
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
      return absl::ResourceExhaustedError("busy: another connection is creating the database");
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

absl::StatusOr<DbHeader> Pager::ReadHeaderFromFile() {
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
  if (header.journal_family != JournalFamily::kRollback && !opening_) {
    // A database last used in a WAL mode may have committed transactions in its log that a
    // rollback-mode connection cannot see; reading or writing it here would lose them.
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database was last used in ",
        header.journal_family == JournalFamily::kWal ? "wal" : "wal2",
        " mode; reopen it to switch it back to a rollback journal mode"));
  }
  JKV_ASSIGN_OR_RETURN(uint64_t size, db_file_->Size());
  // In WAL mode the log may hold pages past the end of the file (and page 1 is copied first).
  if (header.journal_family == JournalFamily::kRollback &&
      size < uint64_t{header.page_count} * page_size) {
    return absl::DataLossError(absl::StrCat(path_, ": truncated: the header counts ",
                                            header.page_count, " pages of ", page_size,
                                            " bytes but the file holds ", size, " bytes"));
  }
  return header;
}

// ---------------------------------------------------------------------------------------------
// Locking helpers

absl::Status Pager::Retry(absl::Time deadline, bool unlock_while_sleeping,
                          absl::string_view what, absl::StatusOr<bool> (DbLock::*attempt)()) {
  base::Backoff wait(deadline, kMaxBusySleep);
  while (true) {
    absl::StatusOr<bool> ok = (lock_.*attempt)();
    JKV_RETURN_IF_ERROR(ok.status());
    if (*ok) return absl::OkStatus();
    if (wait.Expired()) return absl::ResourceExhaustedError(absl::StrCat("busy: ", what));
    if (unlock_while_sleeping) {
      SleepUnlocked(wait.Step());
    } else {
      wait.Sleep();
    }
  }
}

void Pager::SleepUnlocked(absl::Duration duration) {
  mu_.Unlock();
  std::this_thread::sleep_for(absl::ToChronoMicroseconds(duration));
  mu_.Lock();
}


// ---------------------------------------------------------------------------------------------
// Read transactions

absl::StatusOr<std::unique_ptr<ReadTxn>> Pager::BeginRead() {
  if (wal_ != nullptr) return BeginWalRead();
  base::MutexLock lock(&mu_);
  const absl::Time deadline = Deadline();
  base::Backoff wait(deadline, kMaxBusySleep);
  while (true) {
    JKV_RETURN_IF_ERROR(sticky_);
    JKV_RETURN_IF_ERROR(WaitFor(deadline, "a write transaction is committing",
                                [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                  return !writer_exclusive_;
                                }));
    if (lock_.level() == LockLevel::kNone) {
      JKV_RETURN_IF_ERROR(AcquireSharedLocked(deadline));
      break;
    }
    if (lock_.level() >= LockLevel::kReserved) break;  // this pager is the writer: none pending
    // SHARED is already held for other readers. Let a writer elsewhere that waits for them
    // (it holds PENDING) go first rather than starve it.
    JKV_ASSIGN_OR_RETURN(bool pending, lock_.WriterPending());
    if (!pending) break;
    if (wait.Expired()) {
      return absl::ResourceExhaustedError("busy: another connection is committing");
    }
    SleepUnlocked(wait.Step());
  }
  ++readers_;
  return std::unique_ptr<ReadTxn>(new ReadTxn(this, header_, wal::WalSnapshot{}));
}

void Pager::EndRead(const wal::WalSnapshot& snapshot, std::thread::id thread) {
  base::MutexLock lock(&mu_);
  --readers_;
  if (wal_ != nullptr) {
    wal_->EndRead(snapshot);
    if (auto it = reading_threads_.find(thread); it != reading_threads_.end() && --it->second == 0) {
      reading_threads_.erase(it);
    }
    cv_.NotifyAll();
    return;
  }
  if (readers_ == 0 && !writer_active_) {
    absl::Status s = lock_.Release();
    if (!s.ok()) SetStickyError(s);
  }
  cv_.NotifyAll();
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> Pager::LoadPage(PageNo page_no) {
  // State table: transactions read the file under SHARED or better (the error state may have
  // released the locks of a failed writer under open readers).
  JKV_DCHECK(lock_level() >= LockLevel::kShared || !sticky_error().ok());
  auto buffer = std::make_shared<PageBuffer>(page_size_);
  absl::Status s = db_file_->Read(Offset(page_no, page_size_), Whole(*buffer));
  JKV_RETURN_IF_ERROR(CheckLoaded(page_no, s, *buffer));
  return std::shared_ptr<const PageBuffer>(std::move(buffer));
}

absl::Status Pager::CheckLoaded(PageNo page_no, const absl::Status& read,
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

absl::StatusOr<std::shared_ptr<const PageBuffer>> Pager::CleanPage(const wal::WalSnapshot& snapshot,
                                                                   PageNo page_no) {
  if (wal_ != nullptr) {
    JKV_ASSIGN_OR_RETURN(wal::PageVersion version, wal_->Locate(snapshot, page_no));
    if (version.cacheable) {
      if (std::shared_ptr<const PageBuffer> hit = cache_.Lookup(page_no, version.key)) {
        cache_hits_.fetch_add(1, std::memory_order_relaxed);
        return hit;
      }
    }
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> loaded,
                         LoadWalPage(snapshot, page_no, &version));
    cache_misses_.fetch_add(1, std::memory_order_relaxed);
    if (version.cacheable) cache_.Insert(page_no, loaded, version.key);
    return loaded;
  }
  if (std::shared_ptr<const PageBuffer> hit = cache_.Lookup(page_no)) {
    cache_hits_.fetch_add(1, std::memory_order_relaxed);
    return hit;
  }
  // The file cannot change under a transaction (its SHARED lock, or this pager's own writer),
  // so the page can be read without holding mu_.
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> loaded, LoadPage(page_no));
  cache_misses_.fetch_add(1, std::memory_order_relaxed);
  cache_.Insert(page_no, loaded);
  return loaded;
}

ReadTxn::~ReadTxn() { pager_->EndRead(snapshot_, thread_); }

absl::StatusOr<PageRef> ReadTxn::Get(PageNo page_no) {
  if (page_no.value() < 2 || page_no.value() > header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(),
                                                   " out of range [2, ", header_.page_count, "]"));
  }
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer,
                       pager_->CleanPage(snapshot_, page_no));
  return PageRef(page_no, std::move(buffer), usable_size());
}

absl::StatusOr<std::vector<PageNo>> ReadTxn::FreelistPages() {
  return WalkFreelist(*this, header_);
}

absl::StatusOr<std::vector<std::string>> ReadTxn::CheckPages() {
  std::vector<std::string> problems;
  absl::StatusOr<std::vector<PageNo>> free_pages = FreelistPages();
  absl::flat_hash_set<uint32_t> leaves;
  if (free_pages.ok()) {
    for (PageNo p : *free_pages) leaves.insert(p.value());
    // Trunks are read (and checked) like any page; only leaves are exempt (freelist.h).
    for (PageNo p = header_.freelist_head; p.value() != 0;) {
      leaves.erase(p.value());
      JKV_ASSIGN_OR_RETURN(PageRef trunk, Get(p));
      p = PageNo(base::DecodeFixed32(trunk.data().data()));
    }
  } else {
    problems.push_back(std::string(free_pages.status().message()));
  }
  for (uint32_t n = 1; n <= header_.page_count; ++n) {
    if (leaves.contains(n)) continue;
    absl::StatusOr<std::shared_ptr<const PageBuffer>> page;
    if (pager_->wal_ != nullptr) {
      absl::StatusOr<wal::PageVersion> version = pager_->wal_->Locate(snapshot_, PageNo(n));
      page = version.ok() ? pager_->LoadWalPage(snapshot_, PageNo(n), &*version)
                          : absl::StatusOr<std::shared_ptr<const PageBuffer>>(version.status());
    } else {
      page = pager_->LoadPage(PageNo(n));
    }
    if (!page.ok()) problems.push_back(std::string(page.status().message()));
    if (problems.size() == kMaxPageProblems && n < header_.page_count) {
      problems.push_back(absl::StrCat("stopped after ", kMaxPageProblems,
                                      " problems; pages ", n + 1, "..", header_.page_count,
                                      " not checked"));
      break;
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Write transactions: the pager's side

absl::StatusOr<std::unique_ptr<WriteTxn>> Pager::BeginWrite() {
  if (options_.access == AccessMode::kReadOnly) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": database opened read-only"));
  }
  if (wal_ != nullptr) return BeginWalWrite();
  base::MutexLock lock(&mu_);
  const absl::Time deadline = Deadline();
  JKV_RETURN_IF_ERROR(sticky_);
  JKV_RETURN_IF_ERROR(WaitFor(deadline, "another write transaction of this handle is open",
                              [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                                return !writer_active_;
                              }));
  writer_active_ = true;
  absl::Status s = AcquireReservedLocked(deadline);
  if (absl::Status unmark = lock_.SetWaiting(false); s.ok()) s = unmark;
  if (!s.ok()) {
    writer_active_ = false;
    if (readers_ == 0) lock_.Release().IgnoreError();  // giving up; s is the error to report
    cv_.NotifyAll();
    return s;
  }
  return std::unique_ptr<WriteTxn>(new WriteTxn(this, header_, wal::WalSnapshot{}));
}

void Pager::CacheSpilled(PageNo page_no, std::shared_ptr<const PageBuffer> buffer) {
  base::MutexLock lock(&mu_);
  cache_.Insert(page_no, std::move(buffer));
}

void Pager::Publish(WriteTxn& txn, const DbHeader& header) {
  base::MutexLock lock(&mu_);
  for (auto& [page_no, dirty] : txn.dirty_) cache_.Insert(PageNo(page_no), dirty.buffer);
  header_ = header;
  ++stats_.commits;
  stats_.journal_end_failures += txn.journal_end_failures_;
}

void Pager::EndWrite(bool clear_cache) {
  if (wal_ != nullptr) {
    ReleaseWalWriter();
    return;
  }
  base::MutexLock lock(&mu_);
  if (clear_cache) cache_.Clear();
  writer_active_ = false;
  writer_exclusive_ = false;
  absl::Status s =
      (readers_ == 0 || !sticky_.ok()) ? lock_.Release() : lock_.DowngradeToShared();
  if (!s.ok()) SetStickyError(s);
  cv_.NotifyAll();
}

void Pager::SetStickyError(const absl::Status& status) {
  if (sticky_.ok()) {
    sticky_ = absl::Status(status.code(),
                           absl::StrCat(status.message(),
                                        " (the database handle is now in its error state; "
                                        "reopen it to recover)"));
  }
}

absl::Status Pager::sticky_error() {
  base::MutexLock lock(&mu_);
  return sticky_;
}

LockLevel Pager::lock_level() {
  base::MutexLock lock(&mu_);
  return lock_.level();
}

PagerStats Pager::Stats() {
  base::MutexLock lock(&mu_);
  PagerStats s = stats_;
  s.page_count = header_.page_count;
  s.freelist_count = header_.freelist_count;
  s.cached_pages = cache_.size();
  s.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  s.cache_misses = cache_misses_.load(std::memory_order_relaxed);
  s.page_size = page_size_;
  if (wal_ != nullptr) {
    s.wal_mode = true;
    s.wal = wal_->Stats();
    s.recoveries += s.wal.recoveries;
    const checkpoint::BackgroundCheckpointer::Stats b = background_->GetStats();
    s.policy.background_checkpoints = b.steps;
    s.policy.background_errors = b.errors;
    s.policy.background_last_error = b.last_error;
    s.policy.background_time = b.busy;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Write transactions: pages

WriteTxn::WriteTxn(Pager* pager, const DbHeader& header, const wal::WalSnapshot& snapshot)
    : pager_(pager), start_header_(header), header_(header), snapshot_(snapshot) {
  if (pager_->wal_ == nullptr) pager_->journal_->Begin(header.page_count, header.change_counter);
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> WriteTxn::CleanPage(PageNo page_no) {
  if (auto it = log_frames_.find(page_no.value()); it != log_frames_.end()) {
    wal::PageVersion version{snapshot_.current, it->second, 0, false};  // unpublished: never cached
    return pager_->LoadWalPage(snapshot_, page_no, &version);
  }
  return pager_->CleanPage(snapshot_, page_no);
}

WriteTxn::~WriteTxn() { Rollback().IgnoreError(); }  // a failure here is sticky in the pager

absl::Status WriteTxn::CheckUsable() const {
  if (finished_) return absl::FailedPreconditionError("write transaction already ended");
  if (!failed_.ok()) {
    return absl::Status(failed_.code(), absl::StrCat("write transaction failed earlier and "
                                                     "must be rolled back: ",
                                                     failed_.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteTxn::CheckPageNo(PageNo page_no) const {
  if (page_no.value() < 2 || page_no.value() > header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(),
                                                   " out of range [2, ", header_.page_count, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PageRef> WriteTxn::Get(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) {
    return PageRef(page_no, it->second.buffer, usable_size());
  }
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer, CleanPage(page_no));
  return PageRef(page_no, std::move(buffer), usable_size());
}

absl::StatusOr<WriteTxn::DirtyPage*> WriteTxn::MakeDirty(PageNo page_no) {
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) return &it->second;
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(page_no));
  auto copy = std::make_shared<PageBuffer>(clean->size);
  std::memcpy(copy->bytes.get(), clean->bytes.get(), clean->size);
  DirtyPage& dirty = dirty_[page_no.value()];
  dirty.buffer = std::move(copy);
  if (page_no.value() <= start_header_.page_count && !journaled_.contains(page_no.value())) {
    dirty.original = std::move(clean);
  }
  return &dirty;
}

// A dirty page whose bytes the caller fills (Allocate zero-fills it).
WriteTxn::DirtyPage* WriteTxn::AddBlankPage(PageNo page_no) {
  DirtyPage& dirty = dirty_[page_no.value()];
  dirty.buffer = std::make_shared<PageBuffer>(header_.page_size);
  dirty.original = nullptr;
  return &dirty;
}

absl::StatusOr<absl::Span<uint8_t>> WriteTxn::GetMutable(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  JKV_ASSIGN_OR_RETURN(DirtyPage * dirty, MakeDirty(page_no));
  return absl::Span<uint8_t>(dirty->buffer->bytes.get(), usable_size());
}

absl::StatusOr<MutablePage> WriteTxn::Allocate() {
  JKV_RETURN_IF_ERROR(CheckUsable());
  DirtyPage* page = nullptr;
  PageNo page_no;
  if (header_.freelist_head.value() != 0) {
    const PageNo trunk_no = header_.freelist_head;
    JKV_ASSIGN_OR_RETURN(DirtyPage * trunk, MakeDirty(trunk_no));
    uint8_t* t = trunk->buffer->bytes.get();
    const uint32_t n = base::DecodeFixed32(t + 4);
    if (n > TrunkCapacity(usable_size())) {
      return absl::DataLossError(absl::StrCat("freelist trunk page ", trunk_no.value(),
                                              ": impossible leaf count ", n));
    }
    if (n > 0) {
      page_no = PageNo(base::DecodeFixed32(t + kTrunkHeaderSize + 4 * (n - 1)));
      JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
      base::EncodeFixed32(t + 4, n - 1);
      if (freed_.erase(page_no.value()) > 0) {
        // Freed by this transaction: it was in use when the transaction began, so a rollback
        // must restore it and it is journaled like any other page.
        JKV_ASSIGN_OR_RETURN(page, MakeDirty(page_no));
      } else {
        page = AddBlankPage(page_no);  // free at the start: nothing to journal (freelist.h)
      }
    } else {
      page_no = trunk_no;
      header_.freelist_head = PageNo(base::DecodeFixed32(t));
      freed_.erase(page_no.value());
      page = trunk;
    }
    --header_.freelist_count;
  } else {
    page_no = PageNo(++header_.page_count);
    page = AddBlankPage(page_no);
  }
  std::memset(page->buffer->bytes.get(), 0, page->buffer->size);
  return MutablePage{page_no, absl::Span<uint8_t>(page->buffer->bytes.get(), usable_size())};
}

absl::Status WriteTxn::Free(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  const PageNo head = header_.freelist_head;
  if (head.value() != 0) {
    JKV_ASSIGN_OR_RETURN(DirtyPage * trunk, MakeDirty(head));
    uint8_t* t = trunk->buffer->bytes.get();
    const uint32_t n = base::DecodeFixed32(t + 4);
    if (n < TrunkCapacity(usable_size())) {
      base::EncodeFixed32(t + kTrunkHeaderSize + 4 * n, page_no.value());
      base::EncodeFixed32(t + 4, n + 1);
      ++header_.freelist_count;
      freed_.insert(page_no.value());
      return absl::OkStatus();
    }
  }
  JKV_ASSIGN_OR_RETURN(DirtyPage * page, MakeDirty(page_no));
  uint8_t* p = page->buffer->bytes.get();
  std::memset(p, 0, page->buffer->size);
  base::EncodeFixed32(p, head.value());
  header_.freelist_head = page_no;
  ++header_.freelist_count;
  freed_.insert(page_no.value());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PageNo>> WriteTxn::FreelistPages() {
  return WalkFreelist(*this, header_);
}

// ---------------------------------------------------------------------------------------------
// Write transactions: spill, commit, rollback

absl::Status WriteTxn::SpillIfNeeded() {
  JKV_RETURN_IF_ERROR(CheckUsable());
  if (dirty_.size() <= pager_->options_.cache_pages) return absl::OkStatus();
  absl::Status s = pager_->wal_ != nullptr ? SpillToLog() : Spill();
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

absl::Status WriteTxn::Commit() {
  JKV_RETURN_IF_ERROR(finished_ ? CheckUsable() : absl::OkStatus());
  if (!failed_.ok()) {
    const absl::Status failure = CheckUsable();
    Rollback().IgnoreError();  // the failure that forced it is what the caller needs
    return failure;
  }
  if (dirty_.empty() && !spilled_ && log_frames_.empty() && header_ == start_header_) {
    End(/*clear_cache=*/false);
    return absl::OkStatus();
  }
  absl::Status s = pager_->wal_ != nullptr ? CommitToLog() : CommitToFile();
  if (s.ok()) return s;
  // Undo in this process. When the database file was touched this restores the originals from
  // the journal; if that fails too, the pager enters its error state and the next opener rolls
  // the hot journal back. Either way the caller's error is the commit's.
  Rollback().IgnoreError();
  if (IsSyncFailure(s)) {
    base::MutexLock lock(&pager_->mu_);
    pager_->SetStickyError(s);  // I7
  }
  return s;
}

absl::Status WriteTxn::Rollback() {
  if (finished_) return absl::OkStatus();
  absl::Status s;
  // State table: a transaction that touched the file holds EXCLUSIVE until it ends.
  JKV_DCHECK(!spilled_ || pager_->lock_level() == LockLevel::kExclusive);
  if (spilled_) s = pager_->journal_->RollBack(pager_->db_file_.get());
  if (pager_->wal_ != nullptr) s = pager_->wal_->Rollback();  // unpublished frames only
  {
    base::MutexLock lock(&pager_->mu_);
    if (!s.ok()) pager_->SetStickyError(s);
    if (IsSyncFailure(failed_)) pager_->SetStickyError(failed_);  // a spill's sync failed: I7
    ++pager_->stats_.rollbacks;
  }
  End(/*clear_cache=*/spilled_);
  return s;
}

void WriteTxn::End(bool clear_cache) {
  finished_ = true;
  dirty_.clear();
  if (pager_->wal_ != nullptr) {
    base::MutexLock lock(&pager_->mu_);
    PolicyStats& p = pager_->stats_.policy;
    ++p.write_txns;
    p.write_lock_wait += lock_wait_;
    p.write_work += absl::Now() - locked_at_;
  }
  pager_->EndWrite(clear_cache);
}

}  // namespace journalkv::pager
