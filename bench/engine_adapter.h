// The one small interface jkvbench drives every engine through: journalkv, SQLite (C API) and
// LMDB. Each engine is described by an EngineInfo (its name, its journaling modes by name, how
// to open it); the workloads see only EngineAdapter and Session, so every engine gets exactly
// the same operations, keys, values and transaction sizes.
//
//   EngineAdapter  one open database (a case's directory) and its log file(s)
//   Session        one connection, used by one thread: one transaction at a time
//
// A Session's Get and Scan run inside the open transaction (read or write) when there is one,
// otherwise each is its own read transaction (autocommit). Errors are absl::Status; every
// adapter reports lock waits that ran past the busy timeout as Unavailable("busy: ...")
// (as journalkv does), so the workloads can count them instead of failing.
//
// Adding a journaling mode (journalkv's WAL and WAL2 issues) is adding its name to the
// engine's mode list: the journalkv adapter lists every name ParseJournalMode accepts, so a new
// mode appears in jkvbench as soon as the engine parses its name (wal2 did so).
//
// Thread-safety: an EngineAdapter may create Sessions from any thread; each Session is used by
// one thread at a time. Sessions must be destroyed before their EngineAdapter is closed.
#ifndef JOURNALKV_BENCH_ENGINE_ADAPTER_H_
#define JOURNALKV_BENCH_ENGINE_ADAPTER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/counters.h"
#include "absl/time/time.h"

namespace journalkv::bench {

// What one case asks of an engine. Names are the engine's own (EngineInfo::modes) and the
// common sync levels off|normal|full|extra; the registry has validated both.
struct CaseConfig {
  std::string mode;
  std::string sync = "full";
  // "default" or a policy string (README, "Choosing a checkpoint policy": threshold:N,
  // async:N/B, manual); only used by modes whose ModeInfo::uses_checkpoint is set.
  std::string checkpoint = "default";
  absl::Duration busy_timeout = absl::Seconds(10);
  // Page cache size for engines that have one (journalkv, SQLite); LMDB maps the file.
  uint64_t cache_bytes = uint64_t{8} << 20;
  // journalkv: Options::mmap_size (--mmap-mib); 0: reads with pread.
  uint64_t mmap_bytes = 0;
  // Expected data volume, so an engine that must size a map up front (LMDB) can.
  uint64_t expected_bytes = 0;
};

// Called once per pair by Session::Scan; the views last for the call only.
using ScanVisitor = absl::FunctionRef<void(absl::string_view key, absl::string_view value)>;

class Session {
 public:
  virtual ~Session() = default;

  // A write transaction; it sees its own writes. REQUIRES: no transaction open.
  virtual absl::Status BeginWrite() = 0;
  virtual absl::Status Put(absl::string_view key, absl::string_view value) = 0;
  // Deleting a missing key is not an error.
  virtual absl::Status Delete(absl::string_view key) = 0;
  // On error nothing of the transaction is in the database and no transaction is open.
  virtual absl::Status Commit() = 0;
  virtual absl::Status Rollback() = 0;
  // --commit=async: Commit, pipelined where the engine can (journalkv's CommitAsync): ends the
  // write transaction and returns once at most `window` of this session's commits are still in
  // flight, having waited for the oldest ones first; an error is the first failed commit's.
  // Engines without pipelined commits commit here (the default).
  virtual absl::Status CommitPipelined(int window) {
    (void)window;
    return Commit();
  }
  // Waits for every commit CommitPipelined left in flight; the first error of them.
  virtual absl::Status WaitCommits() { return absl::OkStatus(); }

  // A read transaction: one snapshot until EndRead. REQUIRES: no transaction open.
  virtual absl::Status BeginRead() = 0;
  virtual absl::Status EndRead() = 0;

  virtual absl::StatusOr<std::optional<std::string>> Get(absl::string_view key) = 0;
  // Visits up to `limit` pairs with key >= `from` in key order; returns how many it visited.
  virtual absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit,
                                        ScanVisitor visit) = 0;
  // A checkpoint of the engine's log as this connection, in `mode` (full, restart, truncate;
  // journalkv and SQLite also passive): true when it did all the mode promises, false when
  // readers or the busy timeout stopped it (journalkv's `blocked`, SQLite's SQLITE_BUSY).
  // REQUIRES: no transaction open. True with nothing done where there is no log to copy (a
  // rollback journal, LMDB).
  virtual absl::StatusOr<bool> Checkpoint(absl::string_view mode) {
    (void)mode;
    return true;
  }
  // The read workloads' settle step (--settle=checkpoint, bench/README.md "The read phase"):
  // brings the database to rest after the load, before the measured reads, so that they read
  // the database file alone. Engines with a log copy all of it into the database file and
  // empty it (journalkv and SQLite in WAL modes: a TRUNCATE checkpoint); LMDB, which has no log,
  // flushes its map (mdb_env_sync); a rollback journal has nothing to do. An error when a
  // checkpoint could not finish. REQUIRES: no transaction open.
  virtual absl::Status Settle();

  // A session of an adapter opened across N databases (EngineInfo::open_across): its write
  // transaction (BeginWrite .. Commit) is one transaction across all N, and these address
  // database `db` in [0, N); Put, Get and the rest address database 0. Unimplemented on a
  // session of one database; InvalidArgument for a `db` out of range.
  virtual absl::Status PutIn(size_t db, absl::string_view key, absl::string_view value) {
    (void)db, (void)key, (void)value;
    return absl::UnimplementedError("this session has one database");
  }
  virtual absl::StatusOr<std::optional<std::string>> GetIn(size_t db, absl::string_view key) {
    (void)db, (void)key;
    return absl::UnimplementedError("this session has one database");
  }
  // The pairs database `db` holds (its own read transaction). REQUIRES: no transaction open.
  virtual absl::StatusOr<uint64_t> CountIn(size_t db) {
    (void)db;
    return absl::UnimplementedError("this session has one database");
  }
};

// What an engine counts about itself, from when the database was opened: every row of
// journalkv's counter table (base/counters.h: where its checkpoints and writers spent their
// time, its flushes, its log, ...), and how often commits wrote the database file. Only
// journalkv reports these (Db::Stats); the other engines leave every counter 0. The workloads
// take the difference over the measured phase (Since), and the report has one column per
// ticker and mark of the table, named as the table names it, so a new row of the table is a
// new column with nothing else to change.
struct EngineCounters {
  // Each row's value as CounterValues::Value reads it (milliseconds for time rows), by id.
  std::array<double, base::kNumCounters> table{};
  uint64_t db_writes = 0;  // write calls on the database file (not the log or journal)

  double operator[](base::Counter id) const { return table[static_cast<int>(id)]; }
  double& operator[](base::Counter id) { return table[static_cast<int>(id)]; }
  // Every row of `values` (a Db::Stats snapshot).
  static EngineCounters FromTable(const base::CounterValues& values, uint64_t db_writes);

  // `this` minus `before` for tickers and db_writes; gauges and marks keep this one's value
  // (they are not counts).
  EngineCounters Since(const EngineCounters& before) const;
  // Adds another connection's counts (another process's): tickers add, marks and gauges take
  // the larger (a gauge names state the connections share, such as the log's length).
  EngineCounters& operator+=(const EngineCounters& other);
};

class EngineAdapter {
 public:
  virtual ~EngineAdapter() = default;

  virtual absl::string_view name() const = 0;
  // A new connection for one thread.
  virtual absl::StatusOr<std::unique_ptr<Session>> NewSession() = 0;
  // The bytes the engine's log files hold on disk right now (rollback journal, or -wal and
  // -wal2); 0 for an engine without a log (LMDB) or a mode that keeps none on disk.
  virtual uint64_t LogBytes() = 0;
  // The engine's own counters for this database handle (all of its Sessions) so far; all 0
  // for an engine that counts nothing (SQLite, LMDB).
  virtual EngineCounters Counters() { return {}; }
  // Releases the database. REQUIRES: every Session destroyed. Idempotent.
  virtual absl::Status Close() = 0;
};

// A journaling mode as jkvbench names it.
struct ModeInfo {
  std::string name;
  bool uses_checkpoint = false;  // a WAL mode: --checkpoint policies apply
  // Run when --modes names no mode. journalkv's atomic runs only when named: it needs a file
  // system with atomic batches (--fs=xfs), and is refused elsewhere.
  bool by_default = true;
  // With --fs: the file systems it runs on (empty: every one); on the others its cases are
  // skipped, saying why.
  std::vector<std::string> file_systems;
};

struct EngineInfo {
  std::string name;
  std::vector<ModeInfo> modes;
  // Whether `mode` can run at sync level `sync`. LMDB has no sync choice separate from its
  // mode (off = nosync), so only matching pairs run; everyone else runs every pair.
  std::function<bool(absl::string_view mode, absl::string_view sync)> runs_at;
  // OK when the engine supports the checkpoint policy in its WAL modes.
  std::function<absl::Status(absl::string_view policy)> check_checkpoint;
  // Opens (creating) the engine's database in the existing directory `dir`.
  std::function<absl::StatusOr<std::unique_ptr<EngineAdapter>>(const std::string& dir,
                                                               const CaseConfig& config)>
      open;
  // Transactions across several database files (the multidb workloads), where the engine has
  // them: opens (creating) `databases` databases in `dir`, as one adapter whose Sessions write
  // to all of them in one transaction (Session::PutIn): journalkv's BeginWriteAcross, SQLite's
  // ATTACH. Null for an engine without them (LMDB: one environment file, no transaction
  // across files). Runs only the modes in `across_modes` (journalkv's and SQLite's memory and
  // off have no transaction across files; SQLite's WAL is atomic per file only, as journalkv's
  // wal and wal2: they are measured, and the README says so).
  std::function<absl::StatusOr<std::unique_ptr<EngineAdapter>>(
      const std::string& dir, const CaseConfig& config, int databases)>
      open_across;
  std::vector<std::string> across_modes;

  const ModeInfo* FindMode(absl::string_view mode) const;
  // Whether open_across runs `mode`.
  bool RunsAcross(absl::string_view mode) const;
};

// The sync levels every engine accepts, in order of strength.
const std::vector<std::string>& SyncLevels();

// Every engine jkvbench knows, in the order it runs them.
const std::vector<EngineInfo>& Engines();
// nullptr when there is no such engine.
const EngineInfo* FindEngine(absl::string_view name);

// The engines, defined by their adapters.
EngineInfo JournalkvEngine();
EngineInfo SqliteEngine();
EngineInfo LmdbEngine();

// The size of a file, 0 when it does not exist (a log between transactions).
uint64_t FileSizeOrZero(const std::string& path);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_ENGINE_ADAPTER_H_
