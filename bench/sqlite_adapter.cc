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
//
// Across N databases (EngineInfo::open_across, the multidb workloads): `bench.sqlite` is the
// main database and `bench<i>.sqlite` (i = 1..N-1) are ATTACHed to every connection as `d<i>`,
// each configured as the main one (journal_mode, synchronous and cache_size per schema) with
// its own kv table; one BEGIN IMMEDIATE .. COMMIT writes them all. In delete, truncate and
// persist SQLite commits them through a super-journal (atomic across the files); in WAL it
// commits each file's log in turn (atomic per file only). SQLite attaches at most 10.
#include <sqlite3.h>

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
  // `attached`: the databases ATTACHed as d1, d2, ... (empty: one database).
  static absl::StatusOr<std::unique_ptr<SqliteSession>> Open(
      const std::string& path, const CaseConfig& config,
      const std::vector<std::string>& attached = {});
  ~SqliteSession() override {
    for (Stmt* s :
         {&begin_write_, &begin_read_, &commit_, &rollback_, &put_, &del_, &get_, &scan_}) {
      sqlite3_finalize(s->stmt);
      s->stmt = nullptr;
    }
    puts_in_.clear();  // finalized before the connection closes
    gets_in_.clear();
    counts_in_.clear();
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
  absl::Status PutIn(size_t db, absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::optional<std::string>> GetIn(size_t db, absl::string_view key) override;
  absl::StatusOr<uint64_t> CountIn(size_t db) override;

 private:
  explicit SqliteSession(sqlite3* db) : db_(db) {}
  absl::Status Configure(const CaseConfig& config);
  // Attaches `path` as d<index>, configured as the main database, with its own kv table, and
  // prepares its statements.
  absl::Status Attach(const std::string& path, size_t index, const CaseConfig& config);
  absl::Status CheckIndex(size_t db) const;
  absl::StatusOr<std::optional<std::string>> GetWith(Stmt& s, absl::string_view key);
  absl::Status Exec(const std::string& sql);
  absl::Status Prepare(Stmt& s, const char* sql);
  // Runs a statement that returns no rows, then resets it.
  absl::Status StepDone(Stmt& s, absl::string_view what);
  absl::Status Bind(Stmt& s, int index, absl::string_view bytes);

  sqlite3* const db_;
  Stmt begin_write_, begin_read_, commit_, rollback_, put_, del_, get_, scan_;
  // Per database across (index 0: main): insert, point read, count. Empty with one database.
  std::vector<std::unique_ptr<Stmt>> puts_in_, gets_in_, counts_in_;
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

absl::StatusOr<std::unique_ptr<SqliteSession>> SqliteSession::Open(
    const std::string& path, const CaseConfig& config, const std::vector<std::string>& attached) {
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
  if (!attached.empty()) {
    for (size_t i = 0; i <= attached.size(); ++i) {
      const std::string schema = i == 0 ? "main" : absl::StrCat("d", i);
      if (i > 0) JKV_RETURN_IF_ERROR(session->Attach(attached[i - 1], i, config));
      for (auto* v : {&session->puts_in_, &session->gets_in_, &session->counts_in_}) {
        v->push_back(std::make_unique<Stmt>());
      }
      JKV_RETURN_IF_ERROR(session->Prepare(
          *session->puts_in_.back(),
          absl::StrCat("INSERT OR REPLACE INTO ", schema, ".kv(k, v) VALUES(?1, ?2)").c_str()));
      JKV_RETURN_IF_ERROR(session->Prepare(
          *session->gets_in_.back(), absl::StrCat("SELECT v FROM ", schema, ".kv WHERE k = ?1").c_str()));
      JKV_RETURN_IF_ERROR(session->Prepare(*session->counts_in_.back(),
                                           absl::StrCat("SELECT count(*) FROM ", schema, ".kv").c_str()));
    }
  }
  return session;
}

absl::Status SqliteSession::Attach(const std::string& path, size_t index,
                                   const CaseConfig& config) {
  std::string quoted;  // an SQL string literal: quotes doubled
  for (const char c : path) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  const std::string schema = absl::StrCat("d", index);
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("ATTACH DATABASE '", quoted, "' AS ", schema)));
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA ", schema, ".journal_mode=", config.mode)));
  JKV_RETURN_IF_ERROR(Exec(absl::StrCat("PRAGMA ", schema, ".synchronous=", config.sync)));
  JKV_RETURN_IF_ERROR(
      Exec(absl::StrCat("PRAGMA ", schema, ".cache_size=-", config.cache_bytes >> 10)));
  return Exec(absl::StrCat("CREATE TABLE IF NOT EXISTS ", schema,
                           ".kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID"));
}

absl::Status SqliteSession::CheckIndex(size_t db) const {
  if (db >= puts_in_.size()) {
    return puts_in_.empty() ? absl::UnimplementedError("this session has one database")
                            : absl::InvalidArgumentError(absl::StrCat(
                                  "database ", db, " of ", puts_in_.size(), " (sqlite attach)"));
  }
  return absl::OkStatus();
}

absl::Status SqliteSession::PutIn(size_t db, absl::string_view key, absl::string_view value) {
  JKV_RETURN_IF_ERROR(CheckIndex(db));
  Stmt& s = *puts_in_[db];
  JKV_RETURN_IF_ERROR(Bind(s, 1, key));
  JKV_RETURN_IF_ERROR(Bind(s, 2, value));
  return StepDone(s, "put");
}

absl::StatusOr<std::optional<std::string>> SqliteSession::GetIn(size_t db,
                                                                 absl::string_view key) {
  JKV_RETURN_IF_ERROR(CheckIndex(db));
  return GetWith(*gets_in_[db], key);
}

absl::StatusOr<uint64_t> SqliteSession::CountIn(size_t db) {
  JKV_RETURN_IF_ERROR(CheckIndex(db));
  Stmt& s = *counts_in_[db];
  const int rc = sqlite3_step(s.stmt);
  const sqlite3_int64 n = rc == SQLITE_ROW ? sqlite3_column_int64(s.stmt, 0) : 0;
  sqlite3_reset(s.stmt);
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, "count");
  return static_cast<uint64_t>(n);
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
  return GetWith(get_, key);
}

absl::StatusOr<std::optional<std::string>> SqliteSession::GetWith(Stmt& s,
                                                                  absl::string_view key) {
  JKV_RETURN_IF_ERROR(Bind(s, 1, key));
  const int rc = sqlite3_step(s.stmt);
  std::optional<std::string> value;
  if (rc == SQLITE_ROW) {
    const void* data = sqlite3_column_blob(s.stmt, 0);
    const int size = sqlite3_column_bytes(s.stmt, 0);
    value.emplace(static_cast<const char*>(data), static_cast<size_t>(size));
  }
  sqlite3_reset(s.stmt);
  sqlite3_clear_bindings(s.stmt);
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
  SqliteAdapter(std::string path, std::vector<std::string> attached, CaseConfig config,
                std::unique_ptr<SqliteSession> keeper)
      : path_(std::move(path)),
        attached_(std::move(attached)),
        config_(std::move(config)),
        keeper_(std::move(keeper)) {}

  absl::string_view name() const override { return "sqlite"; }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    if (keeper_ == nullptr) return absl::FailedPreconditionError("sqlite adapter is closed");
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<SqliteSession> s,
                         SqliteSession::Open(path_, config_, attached_));
    return std::unique_ptr<Session>(std::move(s));
  }
  // Every database's journal or log (a super-journal lives only during a commit).
  uint64_t LogBytes() override {
    uint64_t bytes = FileSizeOrZero(path_ + "-journal") + FileSizeOrZero(path_ + "-wal");
    for (const std::string& p : attached_) {
      bytes += FileSizeOrZero(p + "-journal") + FileSizeOrZero(p + "-wal");
    }
    return bytes;
  }
  absl::Status Close() override {
    keeper_.reset();
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  const std::vector<std::string> attached_;  // ATTACHed as d1, d2, ... (empty: one database)
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
  return std::make_unique<SqliteAdapter>(path, std::vector<std::string>{}, config,
                                         std::move(keeper));
}

// SQLite attaches at most SQLITE_MAX_ATTACHED (10 unless compiled otherwise) databases.
constexpr int kMaxAttached = 10;

absl::StatusOr<std::unique_ptr<EngineAdapter>> OpenSqliteAcross(const std::string& dir,
                                                                const CaseConfig& config,
                                                                int databases) {
  if (databases < 1 || databases > kMaxAttached + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite: ", databases, " databases across; ATTACH allows 1 to ", kMaxAttached + 1));
  }
  const std::string path = dir + "/bench.sqlite";
  std::vector<std::string> attached;
  for (int i = 1; i < databases; ++i) attached.push_back(absl::StrCat(dir, "/bench", i, ".sqlite"));
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<SqliteSession> keeper,
                       SqliteSession::Open(path, config, attached));
  return std::make_unique<SqliteAdapter>(path, std::move(attached), config, std::move(keeper));
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
  // A super-journal needs a journal file: memory and off have no transaction across files.
  info.open_across = OpenSqliteAcross;
  info.across_modes = {"delete", "truncate", "persist", "wal"};
  return info;
}

}  // namespace journalkv::bench
