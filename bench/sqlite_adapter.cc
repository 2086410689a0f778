// The SQLite adapter: a `WITHOUT ROWID` key-value table `kv(k BLOB PRIMARY KEY, v BLOB)` (BLOB
// keys compare with memcmp, then by length: journalkv's order), one connection per Session,
// every statement prepared once per connection and reused. Each connection is configured the
// same way: journal_mode, synchronous (off|normal|full|extra map one to one), a page cache of
// --cache-mib (8 MiB by default, journalkv's default 2000 pages of 4 KiB), the busy timeout, and for WAL the
// autocheckpoint threshold from --checkpoint (threshold:N, or manual = never).
//
// Write transactions begin with BEGIN IMMEDIATE (the write lock up front, like journalkv's
// BeginWrite), read transactions with BEGIN (a snapshot from the first read). SQLITE_BUSY and
// SQLITE_LOCKED become Unavailable("busy: ..."). The log is `<db>-journal` or `<db>-wal`.
#include <sqlite3.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"

namespace journalkv::bench {
namespace {

constexpr const char* kModes[] = {"delete", "truncate", "persist", "memory", "off", "wal"};

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  const std::string msg = absl::StrCat("sqlite ", what, ": ", sqlite3_errstr(rc), " (",
                                       db != nullptr ? sqlite3_errmsg(db) : "", ")");
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return absl::UnavailableError(absl::StrCat("busy: ", msg));
  }
  if (primary == SQLITE_FULL) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

// The wal_autocheckpoint value of a policy: -1 for SQLite's default.
absl::StatusOr<int> AutocheckpointPages(absl::string_view policy) {
  if (policy == "default") return -1;
  if (policy == "manual") return 0;
  int pages = 0;
  if (absl::ConsumePrefix(&policy, "threshold:") && absl::SimpleAtoi(policy, &pages) && pages > 0) {
    return pages;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "sqlite supports the checkpoint policies default, threshold:N and manual (got \"", policy,
      "\")"));
}

// A prepared statement, finalized on destruction.
struct Stmt {
  sqlite3_stmt* stmt = nullptr;
  ~Stmt() { sqlite3_finalize(stmt); }
};

class SqliteSession final : public Session {
 public:
  static absl::StatusOr<std::unique_ptr<SqliteSession>> Open(const std::string& path,
                                                             const CaseConfig& config);
  ~SqliteSession() override {
    for (Stmt* s :
         {&begin_write_, &begin_read_, &commit_, &rollback_, &put_, &del_, &get_, &scan_}) {
      sqlite3_finalize(s->stmt);
      s->stmt = nullptr;
    }
    sqlite3_close(db_);
  }

  absl::Status BeginWrite() override { return StepDone(begin_write_, "begin immediate"); }
  absl::Status Put(absl::string_view key, absl::string_view value) override;
  absl::Status Delete(absl::string_view key) override;
  absl::Status Commit() override;
  absl::Status Rollback() override {
    if (sqlite3_get_autocommit(db_)) return absl::OkStatus();
    return StepDone(rollback_, "rollback");
  }
  absl::Status BeginRead() override { return StepDone(begin_read_, "begin"); }
  absl::Status EndRead() override { return Rollback(); }
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key) override;
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor visit) override;
  absl::StatusOr<bool> Checkpoint(absl::string_view mode) override;

 private:
  explicit SqliteSession(sqlite3* db) : db_(db) {}
  absl::Status Configure(const CaseConfig& config);
  absl::Status Exec(const std::string& sql);
  absl::Status Prepare(Stmt& s, const char* sql);
  // Runs a statement that returns no rows, then resets it.
  absl::Status StepDone(Stmt& s, absl::string_view what);
  absl::Status Bind(Stmt& s, int index, absl::string_view bytes);

  sqlite3* const db_;
  Stmt begin_write_, begin_read_, commit_, rollback_, put_, del_, get_, scan_;
};

// sqlite3_wal_checkpoint_v2 on the main database; outside WAL mode it does nothing and says
// SQLITE_OK. SQLITE_BUSY (readers or the busy timeout stopped it, or another checkpoint ran) is
// "not all done".
absl::StatusOr<bool> SqliteSession::Checkpoint(absl::string_view mode) {
  int m;
  if (mode == "passive") {
    m = SQLITE_CHECKPOINT_PASSIVE;
  } else if (mode == "full") {
    m = SQLITE_CHECKPOINT_FULL;
  } else if (mode == "restart") {
    m = SQLITE_CHECKPOINT_RESTART;
  } else if (mode == "truncate") {
    m = SQLITE_CHECKPOINT_TRUNCATE;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("sqlite: unknown checkpoint mode '", mode,
                                                   "' (expected passive, full, restart or "
                                                   "truncate)"));
  }
  int log_frames = 0, copied = 0;
  const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, m, &log_frames, &copied);
  if (rc == SQLITE_OK) return true;
  if ((rc & 0xff) == SQLITE_BUSY) return false;
  return SqliteError(db_, rc, "wal_checkpoint");
}

absl::StatusOr<std::unique_ptr<SqliteSession>> SqliteSession::Open(const std::string& path,
                                                                   const CaseConfig& config) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(db, rc, absl::StrCat("open ", path));
    sqlite3_close(db);
    return s;
  }
  auto session = std::unique_ptr<SqliteSession>(new SqliteSession(db));
  JKV_RETURN_IF_ERROR(session->Configure(config));
  return session;
}

absl::Status SqliteSession::Configure(const CaseConfig& config) {
  sqlite3_busy_timeout(db_, static_cast<int>(absl::ToInt64Milliseconds(config.busy_timeout)));
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA journal_mode=", config.mode)));
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA synchronous=", config.sync)));
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA cache_size=-", config.cache_bytes >> 10)));
  if (config.mode == "wal") {
    JKV_ASSIGN_OR_RETURN(const int pages, AutocheckpointPages(config.checkpoint));
    if (pages >= 0) JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA wal_autocheckpoint=", pages)));
  }
  JKV_RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"));
  JKV_RETURN_IF_ERROR(Prepare(begin_write_, "BEGIN IMMEDIATE"));
  JKV_RETURN_IF_ERROR(Prepare(begin_read_, "BEGIN"));
  JKV_RETURN_IF_ERROR(Prepare(commit_, "COMMIT"));
  JKV_RETURN_IF_ERROR(Prepare(rollback_, "ROLLBACK"));
  JKV_RETURN_IF_ERROR(Prepare(put_, "INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)"));
  JKV_RETURN_IF_ERROR(Prepare(del_, "DELETE FROM kv WHERE k = ?1"));
  JKV_RETURN_IF_ERROR(Prepare(get_, "SELECT v FROM kv WHERE k = ?1"));
  return Prepare(scan_, "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2");
}

absl::Status SqliteSession::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, rc, sql);
}

absl::Status SqliteSession::Prepare(Stmt& s, const char* sql) {
  const int rc = sqlite3_prepare_v2(db_, sql, -1, &s.stmt, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, rc, sql);
}

absl::Status SqliteSession::StepDone(Stmt& s, absl::string_view what) {
  const int rc = sqlite3_step(s.stmt);
  sqlite3_reset(s.stmt);
  sqlite3_clear_bindings(s.stmt);
  return rc == SQLITE_DONE ? absl::OkStatus() : SqliteError(db_, rc, what);
}

absl::Status SqliteSession::Bind(Stmt& s, int index, absl::string_view bytes) {
  // Zero-length blobs bind as empty blobs, not NULL (sqlite3_bind_zeroblob).
  const int rc = bytes.empty() ? sqlite3_bind_zeroblob(s.stmt, index, 0)
                               : sqlite3_bind_blob(s.stmt, index, bytes.data(),
                                                   static_cast<int>(bytes.size()), SQLITE_STATIC);
  return rc == SQLITE_OK ? absl::OkStatus() : SqliteError(db_, rc, "bind");
}

absl::Status SqliteSession::Put(absl::string_view key, absl::string_view value) {
  JKV_RETURN_IF_ERROR(Bind(put_, 1, key));
  JKV_RETURN_IF_ERROR(Bind(put_, 2, value));
  return StepDone(put_, "put");
}

absl::Status SqliteSession::Delete(absl::string_view key) {
  JKV_RETURN_IF_ERROR(Bind(del_, 1, key));
  return StepDone(del_, "delete");
}

absl::Status SqliteSession::Commit() {
  absl::Status s = StepDone(commit_, "commit");
  // A COMMIT that failed (busy past the timeout) leaves the transaction open: end it, so that
  // as with every engine a failed commit leaves nothing behind.
  if (!s.ok()) Rollback().IgnoreError();  // `s` is the error the caller needs
  return s;
}

absl::StatusOr<std::optional<std::string>> SqliteSession::Get(absl::string_view key) {
  JKV_RETURN_IF_ERROR(Bind(get_, 1, key));
  const int rc = sqlite3_step(get_.stmt);
  std::optional<std::string> value;
  if (rc == SQLITE_ROW) {
    const void* data = sqlite3_column_blob(get_.stmt, 0);
    const int size = sqlite3_column_bytes(get_.stmt, 0);
    value.emplace(static_cast<const char*>(data), static_cast<size_t>(size));
  }
  sqlite3_reset(get_.stmt);
  sqlite3_clear_bindings(get_.stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(db_, rc, "get");
  return value;
}

absl::StatusOr<uint64_t> SqliteSession::Scan(absl::string_view from, uint64_t limit,
                                             ScanVisitor visit) {
  JKV_RETURN_IF_ERROR(Bind(scan_, 1, from));
  sqlite3_bind_int64(scan_.stmt, 2, static_cast<sqlite3_int64>(limit));
  uint64_t n = 0;
  int rc;
  while ((rc = sqlite3_step(scan_.stmt)) == SQLITE_ROW) {
    auto column = [&](int i) {
      const void* data = sqlite3_column_blob(scan_.stmt, i);
      return absl::string_view(static_cast<const char*>(data),
                               static_cast<size_t>(sqlite3_column_bytes(scan_.stmt, i)));
    };
    visit(column(0), column(1));
    ++n;
  }
  sqlite3_reset(scan_.stmt);
  sqlite3_clear_bindings(scan_.stmt);
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, "scan");
  return n;
}

class SqliteAdapter final : public EngineAdapter {
 public:
  SqliteAdapter(std::string path, CaseConfig config, std::unique_ptr<SqliteSession> keeper)
      : path_(std::move(path)), config_(std::move(config)), keeper_(std::move(keeper)) {}

  absl::string_view name() const override { return "sqlite"; }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    if (keeper_ == nullptr) return absl::FailedPreconditionError("sqlite adapter is closed");
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<SqliteSession> s, SqliteSession::Open(path_, config_));
    return std::unique_ptr<Session>(std::move(s));
  }
  uint64_t LogBytes() override {
    return FileSizeOrZero(path_ + "-journal") + FileSizeOrZero(path_ + "-wal");
  }
  absl::Status Close() override {
    keeper_.reset();
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  const CaseConfig config_;
  // The connection that created the table, held open for the adapter's life so the database
  // stays configured (and in WAL mode the -wal file is not checkpointed away between
  // sessions). It runs no statements while sessions work.
  std::unique_ptr<SqliteSession> keeper_;
};

absl::StatusOr<std::unique_ptr<EngineAdapter>> OpenSqlite(const std::string& dir,
                                                          const CaseConfig& config) {
  const std::string path = dir + "/bench.sqlite";
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<SqliteSession> keeper, SqliteSession::Open(path, config));
  return std::make_unique<SqliteAdapter>(path, config, std::move(keeper));
}

}  // namespace

EngineInfo SqliteEngine() {
  EngineInfo info;
  info.name = "sqlite";
  for (const char* mode : kModes) info.modes.push_back({mode, absl::string_view(mode) == "wal"});
  info.runs_at = [](absl::string_view, absl::string_view) { return true; };
  info.check_checkpoint = [](absl::string_view policy) {
    return AutocheckpointPages(policy).status();
  };
  info.open = OpenSqlite;
  return info;
}

}  // namespace journalkv::bench
