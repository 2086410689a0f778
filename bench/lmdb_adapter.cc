// The LMDB adapter: one environment per case (LMDB allows one per process and file), shared by
// every Session, opened with MDB_NOTLS so that a Session's read transaction is not tied to a
// thread's slot. LMDB has no journal: its copy-on-write B+tree and two meta pages make commits
// atomic, so LogBytes is always 0. Its durability choice is its mode, so each mode runs at the
// sync levels it matches:
//
//   mode     | env flag    | sync levels         | at commit
//   default  | (none)      | normal, full, extra | fdatasync of the data file, then the meta
//            |             |                     | page written through an O_DSYNC descriptor
//   nosync   | MDB_NOSYNC  | off                 | nothing synced; the OS writes back later
//
// At normal LMDB does more than the others must (MDB_NOMETASYNC would match normal exactly);
// the O_DSYNC meta write is a flush that no fsync counter sees.
//
// Read transactions are reset and renewed rather than freed (LMDB's intended reuse).
#include <lmdb.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"

namespace journalkv::bench {
namespace {

absl::Status LmdbError(int rc, absl::string_view what) {
  const std::string msg = absl::StrCat("lmdb ", what, ": ", mdb_strerror(rc));
  if (rc == MDB_MAP_FULL || rc == MDB_READERS_FULL) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::string_view ModeForSync(absl::string_view sync) {
  return sync == "off" ? "nosync" : "default";
}

MDB_val Val(absl::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
absl::string_view View(const MDB_val& v) {
  return absl::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

class LmdbSession final : public Session {
 public:
  LmdbSession(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {}
  ~LmdbSession() override {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    if (reader_ != nullptr) mdb_txn_abort(reader_);
  }

  absl::Status BeginWrite() override {
    JKV_RETURN_IF_ERROR(CheckIdle());
    const int rc = mdb_txn_begin(env_, nullptr, 0, &txn_);
    if (rc != 0) txn_ = nullptr;
    return rc == 0 ? absl::OkStatus() : LmdbError(rc, "begin write");
  }
  absl::Status Put(absl::string_view key, absl::string_view value) override {
    MDB_val k = Val(key), v = Val(value);
    const int rc = mdb_put(txn_, dbi_, &k, &v, 0);
    return rc == 0 ? absl::OkStatus() : LmdbError(rc, "put");
  }
  absl::Status Delete(absl::string_view key) override {
    MDB_val k = Val(key);
    const int rc = mdb_del(txn_, dbi_, &k, nullptr);
    return rc == 0 || rc == MDB_NOTFOUND ? absl::OkStatus() : LmdbError(rc, "delete");
  }
  absl::Status Commit() override {
    const int rc = mdb_txn_commit(txn_);  // frees the transaction, also on failure
    txn_ = nullptr;
    return rc == 0 ? absl::OkStatus() : LmdbError(rc, "commit");
  }
  absl::Status Rollback() override {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    txn_ = nullptr;
    return absl::OkStatus();
  }
  absl::Status BeginRead() override;
  // No log to copy: the settle step (--settle=checkpoint) flushes the map to the file, so that
  // the reads that follow find the same at-rest state as the engines that copy their log.
  absl::Status Settle() override {
    JKV_RETURN_IF_ERROR(CheckIdle());
    const int rc = mdb_env_sync(env_, 1);
    return rc == 0 ? absl::OkStatus() : LmdbError(rc, "settle: env sync");
  }
  absl::Status EndRead() override {
    if (reading_) mdb_txn_reset(reader_);
    reading_ = false;
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key) override;
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor visit) override;

 private:
  absl::Status CheckIdle() const {
    if (txn_ != nullptr || reading_) {
      return absl::FailedPreconditionError("a transaction is already open");
    }
    return absl::OkStatus();
  }
  // The open transaction, or nullptr (then the caller runs its own read transaction).
  MDB_txn* Current() const { return txn_ != nullptr ? txn_ : reading_ ? reader_ : nullptr; }
  absl::StatusOr<std::optional<std::string>> GetIn(MDB_txn* txn, absl::string_view key);
  absl::StatusOr<uint64_t> ScanIn(MDB_txn* txn, absl::string_view from, uint64_t limit,
                                  ScanVisitor visit);

  MDB_env* const env_;
  const MDB_dbi dbi_;
  MDB_txn* txn_ = nullptr;     // the write transaction
  MDB_txn* reader_ = nullptr;  // kept across read transactions (reset, then renewed)
  bool reading_ = false;
};

absl::Status LmdbSession::BeginRead() {
  JKV_RETURN_IF_ERROR(CheckIdle());
  const int rc = reader_ == nullptr ? mdb_txn_begin(env_, nullptr, MDB_RDONLY, &reader_)
                                    : mdb_txn_renew(reader_);
  if (rc != 0) {
    if (reader_ != nullptr) mdb_txn_abort(reader_);
    reader_ = nullptr;
    return LmdbError(rc, "begin read");
  }
  reading_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> LmdbSession::GetIn(MDB_txn* txn, absl::string_view key) {
  MDB_val k = Val(key), v;
  const int rc = mdb_get(txn, dbi_, &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  if (rc != 0) return LmdbError(rc, "get");
  return std::optional<std::string>(std::string(View(v)));
}

absl::StatusOr<std::optional<std::string>> LmdbSession::Get(absl::string_view key) {
  if (MDB_txn* txn = Current()) return GetIn(txn, key);
  JKV_RETURN_IF_ERROR(BeginRead());
  absl::StatusOr<std::optional<std::string>> value = GetIn(reader_, key);
  JKV_RETURN_IF_ERROR(EndRead());
  return value;
}

absl::StatusOr<uint64_t> LmdbSession::ScanIn(MDB_txn* txn, absl::string_view from, uint64_t limit,
                                             ScanVisitor visit) {
  MDB_cursor* cursor = nullptr;
  int rc = mdb_cursor_open(txn, dbi_, &cursor);
  if (rc != 0) return LmdbError(rc, "cursor open");
  MDB_val k = Val(from), v;
  uint64_t n = 0;
  // LMDB refuses an empty key, even as a lower bound: from "" means from the first key.
  const MDB_cursor_op first = from.empty() ? MDB_FIRST : MDB_SET_RANGE;
  for (rc = mdb_cursor_get(cursor, &k, &v, first); rc == 0 && n < limit;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    visit(View(k), View(v));
    ++n;
  }
  mdb_cursor_close(cursor);
  if (rc != 0 && rc != MDB_NOTFOUND) return LmdbError(rc, "cursor");
  return n;
}

absl::StatusOr<uint64_t> LmdbSession::Scan(absl::string_view from, uint64_t limit,
                                           ScanVisitor visit) {
  if (MDB_txn* txn = Current()) return ScanIn(txn, from, limit, visit);
  JKV_RETURN_IF_ERROR(BeginRead());
  absl::StatusOr<uint64_t> n = ScanIn(reader_, from, limit, visit);
  JKV_RETURN_IF_ERROR(EndRead());
  return n;
}

class LmdbAdapter final : public EngineAdapter {
 public:
  LmdbAdapter(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {}
  ~LmdbAdapter() override { Close().IgnoreError(); }  // Close cannot fail

  absl::string_view name() const override { return "lmdb"; }
  absl::StatusOr<std::unique_ptr<Session>> NewSession() override {
    if (env_ == nullptr) return absl::FailedPreconditionError("lmdb adapter is closed");
    return std::make_unique<LmdbSession>(env_, dbi_);
  }
  uint64_t LogBytes() override { return 0; }
  absl::Status Close() override {
    if (env_ != nullptr) mdb_env_close(env_);
    env_ = nullptr;
    return absl::OkStatus();
  }

 private:
  MDB_env* env_;
  const MDB_dbi dbi_;
};

unsigned int EnvFlags(absl::string_view mode) {
  unsigned int flags = MDB_NOTLS;
  if (mode == "nosync") flags |= MDB_NOSYNC;
  return flags;
}

absl::StatusOr<std::unique_ptr<EngineAdapter>> OpenLmdb(const std::string& dir,
                                                        const CaseConfig& config) {
  if (ModeForSync(config.sync) != config.mode) {
    return absl::InvalidArgumentError(
        absl::StrCat("lmdb mode ", config.mode, " does not run at sync level ", config.sync));
  }
  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc != 0) return LmdbError(rc, "env create");
  // Closes the environment on every early return.
  std::unique_ptr<MDB_env, void (*)(MDB_env*)> owner(env, mdb_env_close);
  // The map is only address space: size it well above the data, at least 1 GiB.
  const uint64_t map_bytes = std::max<uint64_t>(uint64_t{1} << 30, config.expected_bytes * 8);
  if ((rc = mdb_env_set_mapsize(env, map_bytes)) != 0) return LmdbError(rc, "set mapsize");
  if ((rc = mdb_env_set_maxreaders(env, 256)) != 0) return LmdbError(rc, "set maxreaders");
  if ((rc = mdb_env_open(env, dir.c_str(), EnvFlags(config.mode), 0644)) != 0) {
    return LmdbError(rc, absl::StrCat("open ", dir));
  }
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  if ((rc = mdb_txn_begin(env, nullptr, 0, &txn)) != 0) return LmdbError(rc, "begin");
  if ((rc = mdb_dbi_open(txn, nullptr, 0, &dbi)) != 0) {
    mdb_txn_abort(txn);
    return LmdbError(rc, "dbi open");
  }
  if ((rc = mdb_txn_commit(txn)) != 0) return LmdbError(rc, "commit");
  return std::make_unique<LmdbAdapter>(owner.release(), dbi);
}

}  // namespace

EngineInfo LmdbEngine() {
  EngineInfo info;
  info.name = "lmdb";
  info.modes = {{"default", false}, {"nosync", false}};
  info.runs_at = [](absl::string_view mode, absl::string_view sync) {
    return ModeForSync(sync) == mode;
  };
  info.check_checkpoint = [](absl::string_view) { return absl::OkStatus(); };
  info.open = OpenLmdb;
  return info;
}

}  // namespace journalkv::bench
