// The journalkv adapter: one Db per case, shared by every Session (a Db is thread-safe, and
// sharing one handle is how an application uses it); each Session holds its own transaction.
// The log is `<db>-journal` in rollback modes, `<db>-wal` in WAL mode, `<db>-wal` and
// `<db>-wal2` in WAL2 mode; LogBytes is the total of the files that exist. Counters are the
// Db's own Stats: one handle, so all its Sessions (in WAL2 max_log_frames, like LogBytes,
// counts both logs).
//
// Across N databases (EngineInfo::open_across, the multidb workloads): N Dbs `bench<i>.jkv`
// in the case's directory, opened with the same options; a Session's write transaction is one
// journalkv::BeginWriteAcross over all of them (engine/across.h), committed by its one Commit.
// LogBytes and Counters add up the N databases' (marks and gauges: the largest).
#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"
#include "engine/across.h"
#include "engine/db.h"

namespace journalkv::bench {
namespace {

// Every journal mode name jkvbench knows of; the adapter offers those the engine parses, so a
// mode appears here as soon as journalkv implements it.
constexpr const char* kCandidateModes[] = {"delete", "truncate", "persist", "memory",
                                           "off",    "wal",      "wal2",    "atomic"};

bool IsWalMode(absl::string_view mode) { return mode == "wal" || mode == "wal2"; }

// "default" is the engine's default policy; anything else is a policy string
// (checkpoint/policy.h: threshold:N, async:N/B, manual).
absl::StatusOr<std::string> PolicyName(absl::string_view policy) {
  if (policy == "default") return std::string(checkpoint::kDefaultCheckpointPolicy);
  JKV_RETURN_IF_ERROR(ParseCheckpointPolicy(policy).status());
  return std::string(policy);
}

class JournalkvSession final : public Session {
 public:
  explicit JournalkvSession(Db* db) : db_(db) {}

  absl::Status BeginWrite() override {
    JKV_RETURN_IF_ERROR(CheckIdle());
    JKV_ASSIGN_OR_RETURN(write_, db_->BeginWrite());
    return absl::OkStatus();
  }
  absl::Status Put(absl::string_view key, absl::string_view value) override {
    if (write_ == nullptr) return absl::FailedPreconditionError("put outside a write txn");
    return write_->Put(key, value);
  }
  absl::Status Delete(absl::string_view key) override {
    if (write_ == nullptr) return absl::FailedPreconditionError("delete outside a write txn");
    return write_->Delete(key).status();
  }
  absl::Status Commit() override {
    if (write_ == nullptr) return absl::FailedPreconditionError("commit without a write txn");
    absl::Status s = write_->Commit();
    write_.reset();
    return s;
  }
  absl::Status CommitPipelined(int window) override {
    if (write_ == nullptr) return absl::FailedPreconditionError("commit without a write txn");
    in_flight_.push_back(write_->CommitAsync());
    write_.reset();
    absl::Status s;
    while (in_flight_.size() > static_cast<size_t>(window) ||
           (!in_flight_.empty() && in_flight_.front().Ready())) {
      absl::Status w = in_flight_.front().Wait();
      in_flight_.pop_front();
      if (s.ok()) s = w;
    }
    return s;
  }
  absl::Status WaitCommits() override {
    absl::Status s;
    for (; !in_flight_.empty(); in_flight_.pop_front()) {
      absl::Status w = in_flight_.front().Wait();
      if (s.ok()) s = w;
    }
    return s;
  }
  absl::Status Rollback() override {
    if (write_ == nullptr) return absl::OkStatus();
    absl::Status s = write_->Rollback();
    write_.reset();
    return s;
  }
  absl::Status BeginRead() override {
    JKV_RETURN_IF_ERROR(CheckIdle());
    JKV_ASSIGN_OR_RETURN(read_, db_->BeginRead());
    return absl::OkStatus();
  }
  absl::Status EndRead() override {
    read_.reset();
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key) override {
    if (write_ != nullptr) return write_->Get(key);
    if (read_ != nullptr) return read_->Get(key);
    return db_->Get(key);
  }
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor visit) override;
  absl::StatusOr<bool> Checkpoint(absl::string_view mode) override {
    JKV_RETURN_IF_ERROR(CheckIdle());
    JKV_ASSIGN_OR_RETURN(CheckpointMode m, ParseCheckpointMode(mode));
    if (!db_->Stats().wal_mode) return true;  // a rollback journal: nothing to copy
    JKV_ASSIGN_OR_RETURN(CheckpointResult r, db_->Checkpoint(m));
    return !r.blocked;
  }

 private:
  absl::Status CheckIdle() const {
    if (write_ != nullptr || read_ != nullptr) {
      return absl::FailedPreconditionError("a transaction is already open");
    }
    return absl::OkStatus();
  }

  Db* const db_;
  std::unique_ptr<WriteTransaction> write_;
  std::unique_ptr<ReadTransaction> read_;
  std::deque<PendingCommit> in_flight_;  // CommitPipelined's, oldest first
};

// Through the transactions' Scan, journalkv's fastest way to read a range, as LMDB's adapter
// uses its cursor.
absl::StatusOr<uint64_t> JournalkvSession::Scan(absl::string_view from, uint64_t limit,
                                                ScanVisitor visit) {
  const auto each = [&visit](absl::string_view key, absl::string_view value) {
    visit(key, value);
    return true;
  };
  if (write_ != nullptr) return write_->Scan(from, limit, each);
  if (read_ != nullptr) return read_->Scan(from, limit, each);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db_->BeginRead());
  return txn->Scan(from, limit, each);
}

class JournalkvAdapter final : public EngineAdapter {
 public:
  JournalkvAdapter(std::string path, std::unique_ptr<Db> db)
      : path_(std::move(path)), db_(std::move(db)) {}
  ~JournalkvAdapter() override { Close().IgnoreError(); }  // Close reports nothing new here

  absl::string_view name() const override { return "journalkv"; }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    if (db_ == nullptr) return absl::FailedPreconditionError("journalkv adapter is closed");
    return std::make_unique<JournalkvSession>(db_.get());
  }
  uint64_t LogBytes() override {
    return FileSizeOrZero(path_ + "-journal") + FileSizeOrZero(path_ + "-wal") +
           FileSizeOrZero(path_ + "-wal2");
  }
  EngineCounters Counters() override {
    if (db_ == nullptr) return {};
    const DbStats s = db_->Stats();
    return EngineCounters::FromTable(s, s.database_io.writes);
  }
  absl::Status Close() override {
    if (db_ == nullptr) return absl::OkStatus();
    absl::Status s = db_->Close();
    db_.reset();
    return s;
  }

 private:
  const std::string path_;
  std::unique_ptr<Db> db_;
};

absl::StatusOr<Options> JournalkvOptions(const CaseConfig& config) {
  Options options;
  JKV_ASSIGN_OR_RETURN(options.journal_mode, ParseJournalMode(config.mode));
  JKV_ASSIGN_OR_RETURN(options.sync, ParseSyncLevel(config.sync));
  options.busy_timeout = config.busy_timeout;
  options.cache_pages = static_cast<uint32_t>(
      std::max<uint64_t>(16, config.cache_bytes / options.page_size));
  options.mmap_size = config.mmap_bytes;
  JKV_ASSIGN_OR_RETURN(options.checkpoint_policy, PolicyName(config.checkpoint));
  return options;
}

absl::StatusOr<std::unique_ptr<EngineAdapter>> OpenJournalkv(const std::string& dir,
                                                             const CaseConfig& config) {
  JKV_ASSIGN_OR_RETURN(const Options options, JournalkvOptions(config));
  const std::string path = dir + "/bench.jkv";
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, options));
  return std::make_unique<JournalkvAdapter>(path, std::move(db));
}

// A session across the adapter's databases: one WriteAcross per write transaction.
class JournalkvAcrossSession final : public Session {
 public:
  explicit JournalkvAcrossSession(std::vector<Db*> dbs) : dbs_(std::move(dbs)) {}

  absl::Status BeginWrite() override {
    if (write_ != nullptr || read_ != nullptr) {
      return absl::FailedPreconditionError("a transaction is already open");
    }
    JKV_ASSIGN_OR_RETURN(write_, BeginWriteAcross(absl::MakeConstSpan(dbs_)));
    return absl::OkStatus();
  }
  absl::Status Put(absl::string_view key, absl::string_view value) override {
    return PutIn(0, key, value);
  }
  absl::Status PutIn(size_t db, absl::string_view key, absl::string_view value) override {
    JKV_ASSIGN_OR_RETURN(WriteTransaction * txn, Txn(db));
    return txn->Put(key, value);
  }
  absl::Status Delete(absl::string_view key) override {
    JKV_ASSIGN_OR_RETURN(WriteTransaction * txn, Txn(0));
    return txn->Delete(key).status();
  }
  // A busy error that leaves the transaction open (engine/across.h) is given back with the
  // transaction rolled back, as every adapter's failed commit leaves nothing behind.
  absl::Status Commit() override {
    if (write_ == nullptr) return absl::FailedPreconditionError("commit without a write txn");
    absl::Status s = write_->Commit();
    write_.reset();
    return s;
  }
  absl::Status Rollback() override {
    if (write_ == nullptr) return absl::OkStatus();
    absl::Status s = write_->Rollback();
    write_.reset();
    return s;
  }
  absl::Status BeginRead() override {
    if (write_ != nullptr || read_ != nullptr) {
      return absl::FailedPreconditionError("a transaction is already open");
    }
    JKV_ASSIGN_OR_RETURN(read_, dbs_[0]->BeginRead());
    return absl::OkStatus();
  }
  absl::Status EndRead() override {
    read_.reset();
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key) override {
    if (read_ != nullptr) return read_->Get(key);
    return GetIn(0, key);
  }
  absl::StatusOr<std::optional<std::string>> GetIn(size_t db, absl::string_view key) override {
    JKV_RETURN_IF_ERROR(CheckIndex(db));
    if (write_ != nullptr) return (*write_)[db].Get(key);
    return dbs_[db]->Get(key);
  }
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit,
                                ScanVisitor visit) override {
    const auto each = [&visit](absl::string_view key, absl::string_view value) {
      visit(key, value);
      return true;
    };
    if (write_ != nullptr) return (*write_)[0].Scan(from, limit, each);
    if (read_ != nullptr) return read_->Scan(from, limit, each);
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, dbs_[0]->BeginRead());
    return txn->Scan(from, limit, each);
  }
  absl::StatusOr<uint64_t> CountIn(size_t db) override {
    JKV_RETURN_IF_ERROR(CheckIndex(db));
    if (write_ != nullptr || read_ != nullptr) {
      return absl::FailedPreconditionError("CountIn with a transaction open");
    }
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, dbs_[db]->BeginRead());
    return txn->Count();
  }

 private:
  absl::Status CheckIndex(size_t db) const {
    if (db >= dbs_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("database ", db, " of ", dbs_.size(), " (journalkv across)"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<WriteTransaction*> Txn(size_t db) {
    JKV_RETURN_IF_ERROR(CheckIndex(db));
    if (write_ == nullptr) return absl::FailedPreconditionError("put outside a write txn");
    return &(*write_)[db];
  }

  const std::vector<Db*> dbs_;
  std::unique_ptr<WriteAcross> write_;
  std::unique_ptr<ReadTransaction> read_;  // database 0's
};

class JournalkvAcrossAdapter final : public EngineAdapter {
 public:
  JournalkvAcrossAdapter(std::vector<std::string> paths, std::vector<std::unique_ptr<Db>> dbs)
      : paths_(std::move(paths)), dbs_(std::move(dbs)) {}
  ~JournalkvAcrossAdapter() override { Close().IgnoreError(); }  // nothing new to report

  absl::string_view name() const override { return "journalkv"; }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    if (dbs_.empty()) return absl::FailedPreconditionError("journalkv adapter is closed");
    std::vector<Db*> dbs;
    for (const std::unique_ptr<Db>& db : dbs_) dbs.push_back(db.get());
    return std::make_unique<JournalkvAcrossSession>(std::move(dbs));
  }
  uint64_t LogBytes() override {
    uint64_t bytes = 0;
    for (const std::string& p : paths_) {
      bytes += FileSizeOrZero(p + "-journal") + FileSizeOrZero(p + "-wal") +
               FileSizeOrZero(p + "-wal2");
    }
    return bytes;
  }
  EngineCounters Counters() override {
    EngineCounters sum;
    for (const std::unique_ptr<Db>& db : dbs_) {
      const DbStats s = db->Stats();
      sum += EngineCounters::FromTable(s, s.database_io.writes);
    }
    return sum;
  }
  absl::Status Close() override {
    absl::Status first;
    for (std::unique_ptr<Db>& db : dbs_) first.Update(db->Close());
    dbs_.clear();
    return first;
  }

 private:
  const std::vector<std::string> paths_;
  std::vector<std::unique_ptr<Db>> dbs_;
};

absl::StatusOr<std::unique_ptr<EngineAdapter>> OpenJournalkvAcross(const std::string& dir,
                                                                   const CaseConfig& config,
                                                                   int databases) {
  JKV_ASSIGN_OR_RETURN(const Options options, JournalkvOptions(config));
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<Db>> dbs;
  for (int i = 0; i < databases; ++i) {
    paths.push_back(absl::StrCat(dir, "/bench", i, ".jkv"));
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(paths.back(), options);
    if (!db.ok()) {
      for (std::unique_ptr<Db>& open : dbs) open->Close().IgnoreError();  // the open error wins
      return db.status();
    }
    dbs.push_back(*std::move(db));
  }
  return std::make_unique<JournalkvAcrossAdapter>(std::move(paths), std::move(dbs));
}

}  // namespace

EngineInfo JournalkvEngine() {
  EngineInfo info;
  info.name = "journalkv";
  for (const char* mode : kCandidateModes) {
    if (ParseJournalMode(mode).ok()) {
      // atomic needs a file system with atomic batches (docs/atomic.md): only when named.
      const bool by_default = std::string_view(mode) != "atomic";
      info.modes.push_back({mode, IsWalMode(mode), by_default});
      if (!by_default) info.modes.back().file_systems = {"xfs"};
    }
  }
  info.runs_at = [](absl::string_view, absl::string_view) { return true; };
  info.check_checkpoint = [](absl::string_view policy) {
    return PolicyName(policy).status();
  };
  info.open = OpenJournalkv;
  // engine/across.h refuses memory and off: no journal to make a transaction across files.
  info.open_across = OpenJournalkvAcross;
  for (const ModeInfo& m : info.modes) {
    if (m.name != "memory" && m.name != "off") info.across_modes.push_back(m.name);
  }
  return info;
}

}  // namespace journalkv::bench
