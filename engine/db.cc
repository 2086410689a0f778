#include "engine/db.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/btree.h"
#include "btree/builder.h"
#include "log/wal_log.h"
#include "pager/commit_pipeline.h"
#include "pager/pager.h"
#include "pager/pager_options.h"
#include "shm/wal_index.h"
#include "vfs/posix_fs.h"

namespace journalkv {

namespace {

// Options::create_if_missing and error_if_exists, checked before anything is created.
absl::Status CheckExistence(vfs::FileSystem* fs, const std::string& path, const Options& options) {
  JKV_ASSIGN_OR_RETURN(const bool exists, fs->Exists(path));
  if (exists && options.error_if_exists) {
    return absl::AlreadyExistsError(absl::StrCat(path, ": already exists (error_if_exists)"));
  }
  if (options.create_if_missing) return absl::OkStatus();
  if (!exists) {
    return absl::NotFoundError(
        absl::StrCat(path, ": no such database (not created: create_if_missing is off)"));
  }
  JKV_ASSIGN_OR_RETURN(const bool is_dir, fs->IsDirectory(path));
  if (is_dir) return absl::OkStatus();  // Open names the problem
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs->Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase}));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": is an empty file, not a database (not created: create_if_missing is off)"));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t DefaultMmapSize() { return pager::DefaultMmapSize(); }

// ---------------------------------------------------------------------------------------------
// Db

Db::Db(std::string path, const Options& options, std::unique_ptr<vfs::FileSystem> owned_fs,
       std::unique_ptr<pager::Pager> pager)
    : path_(std::move(path)),
      options_(options),
      owned_fs_(std::move(owned_fs)),
      fs_(owned_fs_ != nullptr ? owned_fs_.get() : options.file_system),
      pager_(std::move(pager)) {}

Db::~Db() { Close().IgnoreError(); }  // open transactions at destruction are a caller bug

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path, const Options& options) {
  if (path.empty()) return absl::InvalidArgumentError("database path is empty");
  if (options.cache_pages == 0) return absl::InvalidArgumentError("cache_pages must be > 0");
  if (options.busy_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("busy_timeout must not be negative");
  }
  std::unique_ptr<vfs::FileSystem> owned;
  vfs::FileSystem* fs = options.file_system;
  if (fs == nullptr) {
    owned = std::make_unique<vfs::PosixFileSystem>();
    fs = owned.get();
  }
  if (!options.create_if_missing || options.error_if_exists) {
    JKV_RETURN_IF_ERROR(CheckExistence(fs, path, options));
  }
  Options resolved = options;
  if (resolved.journal_mode.has_value() && !options.switch_family) {
    JKV_ASSIGN_OR_RETURN(const bool exists, fs->Exists(path));
    if (exists) {
      JKV_ASSIGN_OR_RETURN(const JournalMode own, pager::Pager::DefaultJournalMode(fs, path));
      if (pager::FamilyOf(own) != pager::FamilyOf(*resolved.journal_mode)) {
        resolved.journal_mode = own;
      }
    }
  }
  if (!resolved.journal_mode.has_value()) {
    JKV_ASSIGN_OR_RETURN(resolved.journal_mode, pager::Pager::DefaultJournalMode(fs, path));
  }
  pager::PagerOptions po;
  po.journal_mode = *resolved.journal_mode;
  po.sync = options.sync;
  po.page_size = options.page_size;
  po.cache_pages = options.cache_pages;
  po.mmap_size = options.mmap_size;
  po.auto_vacuum = options.auto_vacuum;
  po.busy_timeout = options.busy_timeout;
  po.access = options.read_only ? pager::AccessMode::kReadOnly : pager::AccessMode::kReadWrite;
  if (options.custom_checkpoint_policy != nullptr) {
    po.checkpoint_policy = options.custom_checkpoint_policy;
  } else {
    JKV_ASSIGN_OR_RETURN(po.checkpoint_policy, ParseCheckpointPolicy(options.checkpoint_policy));
  }
  po.exclusive_locking = options.exclusive_locking;
  if (options.wal2_switch_pages == 0 || options.wal2_switch_pages > shm::kMaxLogFrames / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wal2_switch_pages must be in [1, ", shm::kMaxLogFrames / 2,
        "] (half the frames a log holds)"));
  }
  po.wal2_switch_pages = options.wal2_switch_pages;
  po.wal_size_limit = options.wal_size_limit;
  if (!wal::ValidGrowBytes(options.wal_grow_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wal_grow_bytes must be a power of two in [", wal::kMinGrowBytes, ", ",
        wal::kMaxGrowBytes, "]; got ", options.wal_grow_bytes));
  }
  po.wal_grow_bytes = options.wal_grow_bytes;
  if (options.reader_slots < 0 || options.reader_slots > shm::kMaxSlots) {
    return absl::InvalidArgumentError(absl::StrCat("reader_slots must be in [0, ",
                                                   shm::kMaxSlots, "]; got ",
                                                   options.reader_slots));
  }
  po.reader_slots = options.reader_slots;
  po.atomic_fallback = options.atomic_fallback;
  absl::StatusOr<std::unique_ptr<pager::Pager>> pager = pager::Pager::Open(fs, path, po);
  if (!pager.ok() && absl::IsPermissionDenied(pager.status()) && !options.read_only) {
    // Writing is not allowed (the file, its folder, the -wal or the -shm: EACCES, EPERM,
    // EROFS): an existing database is still read, as a read-only connection, which changes
    // nothing in the folder; its writes fail naming why. A missing one keeps the error.
    absl::StatusOr<bool> exists = fs->Exists(path);
    if (exists.ok() && *exists) {
      pager::PagerOptions read_only = po;
      read_only.access = pager::AccessMode::kReadOnly;
      read_only.read_only_reason = std::string(pager.status().message());
      absl::StatusOr<std::unique_ptr<pager::Pager>> reader =
          pager::Pager::Open(fs, path, read_only);
      if (!reader.ok()) {
        return absl::Status(reader.status().code(),
                            absl::StrCat(reader.status().message(), " (opened read-only after ",
                                         pager.status().message(), ")"));
      }
      pager = std::move(reader);
      resolved.read_only = true;
    }
  }
  if (!pager.ok() && !options.journal_mode.has_value() && po.journal_mode == JournalMode::kWal &&
      absl::IsUnimplemented(pager.status())) {
    // The caller did not ask for wal: say what to ask for where wal cannot work.
    return absl::UnimplementedError(absl::StrCat(
        pager.status().message(),
        "; wal is the default journal mode: name a rollback journal mode (journal_mode delete, "
        "jkv --journal=delete) or use exclusive_locking"));
  }
  if (!pager.ok()) return pager.status();
  resolved.journal_mode = (*pager)->options().journal_mode;  // the atomic fallback's, if taken
  std::unique_ptr<TraceWriter> trace;
  if (!options.record_path.empty()) {
    JKV_ASSIGN_OR_RETURN(trace, TraceWriter::Create(options.record_path, options.record_values,
                                                    options.record_seed));
  }
  std::unique_ptr<Db> db(new Db(path, resolved, std::move(owned), std::move(*pager)));
  db->trace_ = std::move(trace);
  return db;
}

absl::Status Db::Close() {
  if (pager_ == nullptr) return absl::OkStatus();
  const int open = open_transactions_.load();
  if (open != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": close with ", open, " transactions still open"));
  }
  pager_.reset();
  if (trace_ != nullptr) {
    const absl::Status traced = trace_->Close();
    if (!traced.ok()) {
      return absl::Status(traced.code(), absl::StrCat(path_, ": closed; the recording failed: ",
                                                      traced.message()));
    }
  }
  return absl::OkStatus();
}

uint32_t Db::page_size() const { return pager_ == nullptr ? 0 : pager_->page_size(); }

absl::StatusOr<std::unique_ptr<ReadTransaction>> Db::BeginRead() {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::ReadTxn> txn, pager_->BeginRead());
  if (trace_ != nullptr) trace_->BeginRead();
  return std::unique_ptr<ReadTransaction>(new ReadTransaction(this, std::move(txn)));
}

absl::StatusOr<std::unique_ptr<WriteTransaction>> Db::BeginWrite() {
  return BeginWriteImpl(/*record=*/true);
}

absl::StatusOr<std::unique_ptr<WriteTransaction>> Db::BeginWriteImpl(bool record) {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::WriteTxn> txn, pager_->BeginWrite());
  std::unique_ptr<WriteTransaction> w(new WriteTransaction(this, std::move(txn)));
  if (record && trace_ != nullptr) {
    trace_->BeginWrite();
    w->traced_ = true;
  }
  return w;
}

absl::StatusOr<std::optional<std::string>> Db::Get(absl::string_view key) {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  // The pager's read transaction alone: a ReadTransaction around it would cost an allocation
  // and two atomic adds to open_transactions_, which counts the transactions a caller holds
  // for Close; this one ends before Get returns.
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::ReadTxn> txn, pager_->BeginRead());
  absl::StatusOr<std::optional<std::string>> value = btree::BTree::Get(*txn, key);
  // O2 (vfs/read_map.h): a page read in place in the memory map read zeros for a fault.
  JKV_RETURN_IF_ERROR(txn->CheckReads());
  if (trace_ != nullptr && value.ok()) trace_->Get(key);
  return value;
}

absl::Status Db::Put(absl::string_view key, absl::string_view value) {
  // Refuse oversized input before taking the write lock.
  JKV_RETURN_IF_ERROR(btree::BTree::CheckSizes(pager::UsableSize(page_size()), key.size(),
                                                value.size()));
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, BeginWrite());
  JKV_RETURN_IF_ERROR(txn->Put(key, value));
  return txn->CommitOrRollback();
}

absl::Status Db::Write(const WriteBatch& batch) {
  if (batch.Count() == 0) return absl::OkStatus();
  const uint32_t usable = pager::UsableSize(page_size());
  for (size_t i = 0; i < batch.ops().size(); ++i) {
    const WriteBatch::Op& op = batch.ops()[i];
    const absl::Status s = btree::BTree::CheckSizes(usable, op.key.size(), op.value.size());
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("write batch operation ", i, " (",
                                                 op.is_delete ? "delete" : "put",
                                                 "): ", s.message(), "; nothing was written"));
    }
  }
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, BeginWrite());
  for (const WriteBatch::Op& op : batch.ops()) {
    if (op.is_delete) {
      JKV_RETURN_IF_ERROR(txn->Delete(op.key).status());
    } else {
      JKV_RETURN_IF_ERROR(txn->Put(op.key, op.value));
    }
  }
  return txn->CommitOrRollback();
}

absl::StatusOr<bool> Db::Delete(absl::string_view key) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, BeginWrite());
  JKV_ASSIGN_OR_RETURN(bool existed, txn->Delete(key));
  if (!existed) {
    JKV_RETURN_IF_ERROR(txn->Rollback());
    return false;
  }
  JKV_RETURN_IF_ERROR(txn->CommitOrRollback());
  return true;
}

absl::StatusOr<CheckResult> Db::Check() {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::ReadTxn> txn, pager_->BeginRead());
  CheckResult result;
  result.pages = txn->page_count();
  JKV_ASSIGN_OR_RETURN(std::vector<std::string> page_problems, txn->CheckPages());
  result.problems = std::move(page_problems);
  // The tree check keeps a byte per page: after CheckPages gave up on a page count that the
  // files do not back (the WAL fuzzer found commit frames claiming 2^32 pages), skip it.
  if (result.problems.size() > pager::ReadTxn::kMaxPageProblems) return result;
  std::vector<PageNo> free_pages;
  absl::StatusOr<std::vector<PageNo>> freelist = txn->FreelistPages();
  if (freelist.ok()) free_pages = *std::move(freelist);
  JKV_ASSIGN_OR_RETURN(btree::CheckReport report, btree::BTree::Check(*txn, free_pages));
  for (const btree::CheckProblem& p : report.problems) {
    // A damaged page is found by both checks; report it once, and name the page once.
    if (std::find(result.problems.begin(), result.problems.end(), p.message) !=
        result.problems.end()) {
      continue;
    }
    const std::string page = absl::StrCat("page ", p.page.value());
    result.problems.push_back(absl::StrContains(p.message, page)
                                  ? p.message
                                  : absl::StrCat(page, ": ", p.message));
  }
  if (report.problem_count > report.problems.size()) {
    result.problems.push_back(absl::StrCat(report.problem_count - report.problems.size(),
                                           " more problems not listed"));
  }
  result.keys = report.keys;
  result.depth = report.depth;
  result.tree_pages = report.leaf_pages + report.interior_pages;
  result.overflow_pages = report.overflow_pages;
  result.free_pages = static_cast<uint32_t>(free_pages.size());
  return result;
}

absl::StatusOr<CheckpointResult> Db::Checkpoint(CheckpointMode mode) {
  if (pager_ == nullptr) return absl::FailedPreconditionError(absl::StrCat(path_, ": closed"));
  if (!pager_->wal_mode()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint needs journal mode wal or wal2; this database is in ",
        JournalModeName(*options_.journal_mode),
        " mode, which writes straight to the database file (nothing to checkpoint)"));
  }
  absl::StatusOr<CheckpointResult> result = pager_->Checkpoint(mode);
  if (trace_ != nullptr && result.ok()) trace_->Checkpoint(mode);
  return result;
}

std::optional<double> DbStats::Value(absl::string_view name) const {
  if (std::optional<double> row = base::CounterValues::Value(name); row.has_value()) return row;
  std::optional<double> found;
  ForEachIo([&](const std::string& io_name, uint64_t value) {
    if (io_name == name) found = static_cast<double>(value);
  });
  return found;
}

const std::vector<std::string>& DbStats::Names() {
  static const auto* const names = [] {
    auto* v = new std::vector<std::string>;
    for (const base::CounterInfo& row : base::kCounterTable) v->emplace_back(row.name);
    DbStats{}.ForEachIo([&](const std::string& name, uint64_t) { v->push_back(name); });
    return v;
  }();
  return *names;
}

DbStats Db::Stats() {
  DbStats s;
  if (pager_ != nullptr) {
    pager::PagerStats p = pager_->Stats();
    static_cast<base::CounterValues&>(s) = p;
    s.checkpoint_policy = std::move(p.checkpoint_policy);
    s.policy_last_error = std::move(p.policy_last_error);
    s.background_last_error = std::move(p.background_last_error);
    s.atomic_write_kind = std::move(p.atomic_write_kind);
    s.atomic_fallback = std::move(p.atomic_fallback);
  }
  s.built_pairs = built_pairs_.load(std::memory_order_relaxed);
  if (trace_ != nullptr) s.trace_error = std::string(trace_->status().message());
  s.database_io = fs_->stats().Snapshot(vfs::FileKind::kDatabase);
  s.journal_io = fs_->stats().Snapshot(vfs::FileKind::kJournal);
  s.wal_io = fs_->stats().Snapshot(vfs::FileKind::kWal);
  s.shm_io = fs_->stats().Snapshot(vfs::FileKind::kShm);
  s.dir_syncs = fs_->stats().Snapshot(vfs::FileKind::kOther).dir_syncs;
  return s;
}

// ---------------------------------------------------------------------------------------------
// ReadTransaction

ReadTransaction::ReadTransaction(Db* db, std::unique_ptr<pager::ReadTxn> txn)
    : db_(db), txn_(std::move(txn)) {
  db_->open_transactions_.fetch_add(1);
}

ReadTransaction::~ReadTransaction() {
  txn_.reset();
  if (db_->trace_ != nullptr) db_->trace_->EndRead();
  db_->open_transactions_.fetch_sub(1);
}

absl::StatusOr<std::optional<std::string>> ReadTransaction::Get(absl::string_view key) {
  absl::StatusOr<std::optional<std::string>> value = btree::BTree::Get(*txn_, key);
  JKV_RETURN_IF_ERROR(txn_->CheckReads());  // O2 (vfs/read_map.h)
  if (db_->trace_ != nullptr && value.ok()) db_->trace_->Get(key);
  return value;
}

std::unique_ptr<Iterator> ReadTransaction::NewIterator(IteratorOptions options) {
  return std::unique_ptr<Iterator>(new Iterator(*txn_, std::move(options)));
}

absl::StatusOr<uint64_t> ReadTransaction::Scan(absl::string_view from, uint64_t limit,
                                               ScanVisitor visit, const IteratorOptions& options) {
  absl::StatusOr<uint64_t> visited = internal::ScanPages(*txn_, from, limit, options, visit);
  if (db_->trace_ != nullptr && visited.ok()) {
    db_->trace_->Scan(from, limit, *visited, options.lower_bound, options.upper_bound);
  }
  return visited;
}

absl::StatusOr<uint64_t> ReadTransaction::Count() {
  absl::StatusOr<uint64_t> count = btree::BTree::Count(*txn_);
  JKV_RETURN_IF_ERROR(txn_->CheckReads());  // O2 (vfs/read_map.h)
  return count;
}

// ---------------------------------------------------------------------------------------------
// WriteTransaction

WriteTransaction::WriteTransaction(Db* db, std::unique_ptr<pager::WriteTxn> txn)
    : db_(db), txn_(std::move(txn)), build_fill_(btree::TreeBuilder::kDefaultFill) {
  db_->open_transactions_.fetch_add(1);
}

WriteTransaction::~WriteTransaction() {
  builder_.reset();  // holds the transaction's pages by reference; writes nothing
  if (traced_ && db_->trace_ != nullptr) db_->trace_->Rollback();  // ends without Commit
  txn_.reset();  // rolls back unless committed
  db_->open_transactions_.fetch_sub(1);
}

absl::Status WriteTransaction::CheckOpen() const {
  if (!failed_.ok()) {
    return absl::Status(failed_.code(),
                        absl::StrCat("transaction failed earlier: ", failed_.message()));
  }
  return absl::OkStatus();
}

// A failed write may leave the tree half-changed: only a rollback is possible after it. A
// successful one may let the pager spill dirty pages (no page spans are held between calls).
absl::Status WriteTransaction::AfterWrite(absl::Status s) {
  if (s.ok()) s = txn_->SpillIfNeeded();
  if (!s.ok() && failed_.ok()) failed_ = s;
  return s;
}

absl::Status WriteTransaction::EndBuild() {
  may_build_ = false;
  if (builder_ == nullptr) return absl::OkStatus();
  std::unique_ptr<btree::TreeBuilder> builder = std::move(builder_);
  absl::Status s = builder->Finish().status();
  if (s.ok()) db_->built_pairs_.fetch_add(builder->pairs(), std::memory_order_relaxed);
  if (append_hint_ != nullptr) append_hint_->Reset();  // the tree changed under it
  return AfterWrite(s);
}

absl::StatusOr<std::optional<std::string>> WriteTransaction::Get(absl::string_view key) {
  JKV_RETURN_IF_ERROR(CheckOpen());
  JKV_RETURN_IF_ERROR(EndBuild());
  absl::StatusOr<std::optional<std::string>> value = btree::BTree::Get(*txn_, key);
  if (traced_ && value.ok()) db_->trace_->Get(key);
  return value;
}

absl::Status WriteTransaction::Put(absl::string_view key, absl::string_view value) {
  JKV_RETURN_IF_ERROR(CheckOpen());
  JKV_RETURN_IF_ERROR(
      btree::BTree::CheckSizes(txn_->usable_size(), key.size(), value.size()));
  // A transaction that starts with ascending Puts into an empty tree builds it bottom-up.
  if (builder_ == nullptr && may_build_ && !across_ &&
      txn_->meta(btree::kRootMetaSlot) == 0) {
    absl::StatusOr<std::unique_ptr<btree::TreeBuilder>> b =
        btree::TreeBuilder::Create(*txn_, build_fill_);
    if (b.ok()) builder_ = *std::move(b);
  }
  may_build_ = false;
  if (builder_ != nullptr) {
    if (builder_->pairs() == 0 || builder_->last_key() < key) {
      absl::Status s = AfterWrite(builder_->Add(key, value));
      if (traced_ && s.ok()) db_->trace_->Put(key, value);
      return s;
    }
    JKV_RETURN_IF_ERROR(EndBuild());  // out of order: the rest goes through the tree
  }
  // Keys put in ascending order past the tree's greatest (a sorted load, backup --compact) go
  // straight to the right-most leaf (btree::AppendHint).
  if (append_hint_ == nullptr) append_hint_ = std::make_unique<btree::AppendHint>();
  absl::Status s = AfterWrite(btree::BTree::Put(*txn_, key, value, append_hint_.get()));
  if (traced_ && s.ok()) db_->trace_->Put(key, value);
  return s;
}

absl::StatusOr<bool> WriteTransaction::Delete(absl::string_view key) {
  JKV_RETURN_IF_ERROR(CheckOpen());
  JKV_RETURN_IF_ERROR(EndBuild());
  if (append_hint_ != nullptr) append_hint_->Reset();  // a delete may merge that leaf away
  absl::StatusOr<bool> existed = btree::BTree::Delete(*txn_, key);
  JKV_RETURN_IF_ERROR(AfterWrite(existed.status()));
  if (traced_) db_->trace_->Delete(key);
  return existed;
}

std::unique_ptr<Iterator> WriteTransaction::NewIterator(IteratorOptions options) {
  // A failure fails the transaction (its Commit says so); the iterator sees what was built.
  EndBuild().IgnoreError();
  return std::unique_ptr<Iterator>(new Iterator(*txn_, std::move(options)));
}

absl::StatusOr<uint64_t> WriteTransaction::Scan(absl::string_view from, uint64_t limit,
                                                ScanVisitor visit, const IteratorOptions& options) {
  JKV_RETURN_IF_ERROR(CheckOpen());
  JKV_RETURN_IF_ERROR(EndBuild());
  absl::StatusOr<uint64_t> visited = internal::ScanPages(*txn_, from, limit, options, visit);
  if (traced_ && visited.ok()) {
    db_->trace_->Scan(from, limit, *visited, options.lower_bound, options.upper_bound);
  }
  return visited;
}

absl::StatusOr<uint64_t> WriteTransaction::Count() {
  JKV_RETURN_IF_ERROR(CheckOpen());
  JKV_RETURN_IF_ERROR(EndBuild());
  return btree::BTree::Count(*txn_);
}

// After a commit: a commit that ended the transaction is recorded as what it did (commit, or
// rollback when it failed); one left open by a busy error is not, its retry will be.
void WriteTransaction::TraceEnd(const absl::Status& s) {
  if (!traced_ || !txn_->finished()) return;
  if (s.ok()) {
    db_->trace_->Commit();
  } else {
    db_->trace_->Rollback();
  }
  traced_ = false;
}

bool WriteTransaction::open() const { return !txn_->finished(); }

absl::Status WriteTransaction::CommitPages() {
  if (failed_.ok()) EndBuild().IgnoreError();  // a failure is in failed_, handled below
  if (!failed_.ok()) {
    const absl::Status failure = CheckOpen();
    txn_->Rollback().IgnoreError();  // the failure that forced it is what the caller needs
    return failure;
  }
  JKV_RETURN_IF_ERROR(txn_->Commit());
  db_->CallHooks(txn_->commit_record());
  return absl::OkStatus();
}

PendingCommit WriteTransaction::CommitAsync() {
  absl::Status s = CheckNotAcross("CommitAsync");
  std::shared_ptr<pager::CommitPromise> promise;
  if (s.ok() && failed_.ok()) EndBuild().IgnoreError();  // a failure is in failed_, below
  if (s.ok() && !failed_.ok()) {
    s = CheckOpen();
    txn_->Rollback().IgnoreError();  // the failure that forced it is what the caller needs
  }
  if (s.ok()) {
    Db* db = db_;
    // N2 (pager/commit_pipeline.h): the hooks run once the commit is durable and visible.
    absl::StatusOr<std::shared_ptr<pager::CommitPromise>> p =
        txn_->CommitAsync([db](const pager::CommitRecord& record) { db->CallHooks(record); });
    s = p.status();
    if (p.ok()) promise = *std::move(p);
  }
  if (!across_) TraceEnd(s);
  if (!s.ok() && !across_ && !txn_->finished()) {
    s = absl::Status(s.code(), absl::StrCat(s.message(), "; the transaction is still open: "
                                                        "Commit again to retry, or Rollback"));
  }
  if (promise == nullptr) promise = pager::CommitPromise::Settled(s);
  return PendingCommit(std::move(promise));
}

absl::Status PendingCommit::Wait() const {
  return promise_ == nullptr ? absl::OkStatus() : promise_->Wait();
}

bool PendingCommit::Ready() const { return promise_ == nullptr || promise_->Ready(); }

absl::Status WriteTransaction::CheckNotAcross(absl::string_view op) const {
  if (!across_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      op, " of one database's part of a transaction across databases: it commits and rolls "
      "back as a whole (WriteAcross::Commit, WriteAcross::Rollback)"));
}

absl::Status WriteTransaction::Commit() {
  JKV_RETURN_IF_ERROR(CheckNotAcross("Commit"));
  absl::Status s = CommitPages();
  TraceEnd(s);
  if (!s.ok() && !txn_->finished()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "; the transaction is still open: "
                                                            "Commit again to retry, or Rollback"));
  }
  return s;
}

absl::Status WriteTransaction::CommitOrRollback() {
  JKV_RETURN_IF_ERROR(CheckNotAcross("CommitOrRollback"));
  absl::Status s = CommitPages();
  if (!s.ok() && !txn_->finished()) {
    txn_->Rollback().IgnoreError();  // the commit's error is the caller's
    TraceEnd(s);
    return absl::Status(s.code(), absl::StrCat(s.message(), "; nothing was written"));
  }
  TraceEnd(s);
  return s;
}

void Db::CallHooks(const pager::CommitRecord& record) {
  if (record.pages == 0) return;  // nothing was written
  if (options_.commit_hook) {
    CommitInfo info;
    info.sequence = commit_sequence_.fetch_add(1, std::memory_order_relaxed) + 1;
    info.pages = record.pages;
    info.change_counter = record.change_counter;
    options_.commit_hook(info);
  }
  if (options_.wal_hook && record.log.has_value()) {
    WalCommitInfo info;
    info.log = record.log->log;
    info.generation = record.log->generation;
    info.first_frame = record.log->first_frame;
    info.last_frame = record.log->last_frame;
    info.log_bytes = record.log->log_bytes;
    options_.wal_hook(info);
  }
}

absl::Status WriteTransaction::Rollback() {
  JKV_RETURN_IF_ERROR(CheckNotAcross("Rollback"));
  builder_.reset();  // its pages go with the rollback
  may_build_ = false;
  if (traced_) {
    db_->trace_->Rollback();
    traced_ = false;
  }
  return txn_->Rollback();
}

}  // namespace journalkv
