// The C API (capi/journalkv.h) over the C++ one: each handle owns its C++ object, each status
// becomes a code and a malloc'd message.
#include "capi/journalkv.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "engine/across.h"
#include "engine/db.h"

struct jkv_db {
  std::unique_ptr<journalkv::Db> db;
};

struct jkv_txn {
  std::unique_ptr<journalkv::ReadTransaction> read;
  std::unique_ptr<journalkv::WriteTransaction> owned_write;
  // owned_write's, or one database's part of a jkv_across (which owns it: part is set).
  journalkv::WriteTransaction* write = nullptr;
  bool part = false;
};

struct jkv_across {
  std::unique_ptr<journalkv::WriteAcross> across;
  std::vector<jkv_txn> parts;  // one per database, in the order given
};

struct jkv_commit {
  journalkv::PendingCommit pending;
};

struct jkv_iter {
  std::unique_ptr<journalkv::Iterator> it;
  std::string value;  // the current value, for jkv_iter_value
};

namespace {

using journalkv::JournalMode;

char* CopyOut(absl::string_view bytes) {
  char* out = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (out == nullptr) std::abort();  // as operator new does
  std::memcpy(out, bytes.data(), bytes.size());
  out[bytes.size()] = '\0';
  return out;
}

jkv_code CodeOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return JKV_OK;
    case absl::StatusCode::kNotFound:
      return JKV_NOT_FOUND;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return JKV_INVALID_ARGUMENT;
    case absl::StatusCode::kUnavailable:
      return JKV_BUSY;
    case absl::StatusCode::kResourceExhausted:
      return JKV_FULL;
    case absl::StatusCode::kDataLoss:
      return JKV_CORRUPT;
    case absl::StatusCode::kFailedPrecondition:
      return JKV_FAILED_PRECONDITION;
    case absl::StatusCode::kPermissionDenied:
      return JKV_PERMISSION_DENIED;
    case absl::StatusCode::kAlreadyExists:
      return JKV_ALREADY_EXISTS;
    case absl::StatusCode::kUnimplemented:
      return JKV_UNIMPLEMENTED;
    default:
      return JKV_IO_ERROR;
  }
}

jkv_code Fail(const absl::Status& s, char** err) {
  if (err != nullptr) *err = s.ok() ? nullptr : CopyOut(s.message());
  return CodeOf(s);
}

jkv_code Invalid(absl::string_view what, char** err) {
  return Fail(absl::InvalidArgumentError(what), err);
}

absl::string_view Bytes(const char* p, size_t n) { return absl::string_view(p, p == nullptr ? 0 : n); }

// A found value is copied out; a missing one is JKV_NOT_FOUND with no message.
jkv_code ValueOut(const absl::StatusOr<std::optional<std::string>>& v, char** value,
                  size_t* value_len, char** err) {
  if (!v.ok()) return Fail(v.status(), err);
  if (!v->has_value()) return JKV_NOT_FOUND;
  if (value != nullptr) *value = CopyOut(**v);
  if (value_len != nullptr) *value_len = (*v)->size();
  return JKV_OK;
}

jkv_code ExistedOut(const absl::StatusOr<bool>& existed, int* out, char** err) {
  if (!existed.ok()) return Fail(existed.status(), err);
  if (out != nullptr) *out = *existed ? 1 : 0;
  return JKV_OK;
}

std::optional<JournalMode> ModeOf(jkv_journal_mode m) {
  switch (m) {
    case JKV_JOURNAL_DELETE:
      return JournalMode::kDelete;
    case JKV_JOURNAL_TRUNCATE:
      return JournalMode::kTruncate;
    case JKV_JOURNAL_PERSIST:
      return JournalMode::kPersist;
    case JKV_JOURNAL_MEMORY:
      return JournalMode::kMemory;
    case JKV_JOURNAL_OFF:
      return JournalMode::kOff;
    case JKV_JOURNAL_WAL:
      return JournalMode::kWal;
    case JKV_JOURNAL_WAL2:
      return JournalMode::kWal2;
    case JKV_JOURNAL_ATOMIC:
      return JournalMode::kAtomic;
    default:
      return std::nullopt;
  }
}

}  // namespace

extern "C" {

void jkv_options_init(jkv_options* o) {
  const journalkv::Options defaults;
  o->journal_mode = JKV_JOURNAL_DEFAULT;
  o->sync = JKV_SYNC_FULL;
  o->page_size = defaults.page_size;
  o->cache_pages = defaults.cache_pages;
  o->busy_timeout_ms = absl::ToInt64Milliseconds(defaults.busy_timeout);
  o->read_only = defaults.read_only ? 1 : 0;
  o->auto_vacuum = defaults.auto_vacuum ? 1 : 0;
  o->create_if_missing = defaults.create_if_missing ? 1 : 0;
  o->error_if_exists = defaults.error_if_exists ? 1 : 0;
  o->checkpoint_policy = nullptr;
  o->commit_hook = nullptr;
  o->commit_hook_arg = nullptr;
  o->wal_hook = nullptr;
  o->wal_hook_arg = nullptr;
  o->atomic_fallback = JKV_JOURNAL_DEFAULT;
  o->record_path = nullptr;
  o->record_keep_values = 0;
}

void jkv_free(void* p) { std::free(p); }

const char* jkv_code_name(jkv_code code) {
  switch (code) {
    case JKV_OK: return "JKV_OK";
    case JKV_NOT_FOUND: return "JKV_NOT_FOUND";
    case JKV_INVALID_ARGUMENT: return "JKV_INVALID_ARGUMENT";
    case JKV_BUSY: return "JKV_BUSY";
    case JKV_FULL: return "JKV_FULL";
    case JKV_CORRUPT: return "JKV_CORRUPT";
    case JKV_FAILED_PRECONDITION: return "JKV_FAILED_PRECONDITION";
    case JKV_PERMISSION_DENIED: return "JKV_PERMISSION_DENIED";
    case JKV_ALREADY_EXISTS: return "JKV_ALREADY_EXISTS";
    case JKV_UNIMPLEMENTED: return "JKV_UNIMPLEMENTED";
    case JKV_IO_ERROR: return "JKV_IO_ERROR";
  }
  return "JKV_UNKNOWN_CODE";
}

jkv_code jkv_open(const char* path, const jkv_options* options, jkv_db** db, char** err) {
  if (path == nullptr || db == nullptr) return Invalid("jkv_open: path and db must not be NULL", err);
  *db = nullptr;
  journalkv::Options o;
  if (options != nullptr) {
    if (options->journal_mode != JKV_JOURNAL_DEFAULT) {
      o.journal_mode = ModeOf(options->journal_mode);
      if (!o.journal_mode.has_value()) return Invalid("jkv_open: unknown journal_mode", err);
    }
    if (options->atomic_fallback != JKV_JOURNAL_DEFAULT) {
      o.atomic_fallback = ModeOf(options->atomic_fallback);
      if (!o.atomic_fallback.has_value() || *o.atomic_fallback == JournalMode::kAtomic) {
        return Invalid("jkv_open: atomic_fallback must be a journal mode other than atomic", err);
      }
    }
    switch (options->sync) {
      case JKV_SYNC_OFF: o.sync = journalkv::SyncLevel::kOff; break;
      case JKV_SYNC_NORMAL: o.sync = journalkv::SyncLevel::kNormal; break;
      case JKV_SYNC_FULL: o.sync = journalkv::SyncLevel::kFull; break;
      case JKV_SYNC_EXTRA: o.sync = journalkv::SyncLevel::kExtra; break;
      default: return Invalid("jkv_open: unknown sync level", err);
    }
    o.page_size = options->page_size;
    o.cache_pages = options->cache_pages;
    o.busy_timeout = absl::Milliseconds(options->busy_timeout_ms);
    o.read_only = options->read_only != 0;
    if (options->record_path != nullptr) {
      o.record_path = options->record_path;
      o.record_values = options->record_keep_values != 0 ? journalkv::TraceValues::kKeep
                                                          : journalkv::TraceValues::kSynthetic;
    }
    o.auto_vacuum = options->auto_vacuum != 0;
    o.create_if_missing = options->create_if_missing != 0;
    o.error_if_exists = options->error_if_exists != 0;
    if (options->checkpoint_policy != nullptr) o.checkpoint_policy = options->checkpoint_policy;
    if (options->commit_hook != nullptr) {
      o.commit_hook = [hook = options->commit_hook,
                       arg = options->commit_hook_arg](const journalkv::CommitInfo& info) {
        const jkv_commit_info c{info.sequence, info.pages, info.change_counter};
        hook(arg, &c);
      };
    }
    if (options->wal_hook != nullptr) {
      o.wal_hook = [hook = options->wal_hook,
                    arg = options->wal_hook_arg](const journalkv::WalCommitInfo& info) {
        const jkv_wal_commit_info w{info.log, info.generation, info.first_frame, info.last_frame,
                                    info.log_bytes};
        hook(arg, &w);
      };
    }
  }
  absl::StatusOr<std::unique_ptr<journalkv::Db>> opened = journalkv::Db::Open(path, o);
  if (!opened.ok()) return Fail(opened.status(), err);
  *db = new jkv_db{std::move(*opened)};
  return JKV_OK;
}

jkv_code jkv_close(jkv_db* db, char** err) {
  if (db == nullptr) return JKV_OK;
  const absl::Status s = db->db->Close();
  delete db;
  return Fail(s, err);
}

jkv_code jkv_get(jkv_db* db, const char* key, size_t key_len, char** value, size_t* value_len,
                 char** err) {
  return ValueOut(db->db->Get(Bytes(key, key_len)), value, value_len, err);
}

jkv_code jkv_put(jkv_db* db, const char* key, size_t key_len, const char* value,
                 size_t value_len, char** err) {
  return Fail(db->db->Put(Bytes(key, key_len), Bytes(value, value_len)), err);
}

jkv_code jkv_delete(jkv_db* db, const char* key, size_t key_len, int* existed, char** err) {
  return ExistedOut(db->db->Delete(Bytes(key, key_len)), existed, err);
}

jkv_code jkv_begin_read(jkv_db* db, jkv_txn** txn, char** err) {
  absl::StatusOr<std::unique_ptr<journalkv::ReadTransaction>> t = db->db->BeginRead();
  if (!t.ok()) return Fail(t.status(), err);
  *txn = new jkv_txn{std::move(*t), nullptr, nullptr, false};
  return JKV_OK;
}

jkv_code jkv_begin_write(jkv_db* db, jkv_txn** txn, char** err) {
  absl::StatusOr<std::unique_ptr<journalkv::WriteTransaction>> t = db->db->BeginWrite();
  if (!t.ok()) return Fail(t.status(), err);
  *txn = new jkv_txn{nullptr, std::move(*t), nullptr, false};
  (*txn)->write = (*txn)->owned_write.get();
  return JKV_OK;
}

jkv_code jkv_txn_get(jkv_txn* txn, const char* key, size_t key_len, char** value,
                     size_t* value_len, char** err) {
  const absl::string_view k = Bytes(key, key_len);
  return ValueOut(txn->write != nullptr ? txn->write->Get(k) : txn->read->Get(k), value,
                  value_len, err);
}

jkv_code jkv_txn_put(jkv_txn* txn, const char* key, size_t key_len, const char* value,
                     size_t value_len, char** err) {
  if (txn->write == nullptr) {
    return Fail(absl::FailedPreconditionError("jkv_txn_put: a read transaction cannot write"), err);
  }
  return Fail(txn->write->Put(Bytes(key, key_len), Bytes(value, value_len)), err);
}

jkv_code jkv_txn_delete(jkv_txn* txn, const char* key, size_t key_len, int* existed,
                        char** err) {
  if (txn->write == nullptr) {
    return Fail(absl::FailedPreconditionError("jkv_txn_delete: a read transaction cannot write"),
                err);
  }
  return ExistedOut(txn->write->Delete(Bytes(key, key_len)), existed, err);
}

jkv_code jkv_txn_commit(jkv_txn* txn, char** err) {
  if (txn->part) return Fail(txn->write->Commit(), err);  // refused: the jkv_across commits
  const absl::Status s = txn->write != nullptr ? txn->write->Commit() : absl::OkStatus();
  if (!s.ok() && txn->write != nullptr && txn->write->open()) {
    return Fail(s, err);  // busy, still open: the caller retries or ends it
  }
  delete txn;
  return Fail(s, err);
}

jkv_code jkv_txn_commit_async(jkv_txn* txn, jkv_commit** commit, char** err) {
  *commit = nullptr;
  if (txn->part) return Fail(txn->write->Commit(), err);  // refused: the jkv_across commits
  if (txn->write == nullptr) {  // a read transaction just ends
    delete txn;
    *commit = new jkv_commit{journalkv::PendingCommit()};
    return JKV_OK;
  }
  journalkv::PendingCommit pending = txn->write->CommitAsync();
  if (pending.Ready()) {
    const absl::Status s = pending.Wait();
    if (!s.ok()) {
      if (!txn->write->open()) delete txn;  // else busy, still open: retried or ended
      return Fail(s, err);
    }
  }
  delete txn;
  *commit = new jkv_commit{std::move(pending)};
  return JKV_OK;
}

jkv_code jkv_commit_wait(jkv_commit* commit, char** err) {
  return Fail(commit->pending.Wait(), err);
}

int jkv_commit_ready(const jkv_commit* commit) { return commit->pending.Ready() ? 1 : 0; }

void jkv_commit_free(jkv_commit* commit) { delete commit; }

void jkv_txn_end(jkv_txn* txn) {
  if (txn->part) return;  // its jkv_across ends it
  delete txn;  // a write transaction rolls back as it goes
}

jkv_code jkv_begin_write_across(jkv_db* const* dbs, size_t count, jkv_across** across,
                                char** err) {
  std::vector<journalkv::Db*> handles;
  for (size_t i = 0; i < count; ++i) handles.push_back(dbs[i] == nullptr ? nullptr : dbs[i]->db.get());
  absl::StatusOr<std::unique_ptr<journalkv::WriteAcross>> a =
      journalkv::BeginWriteAcross(handles);
  if (!a.ok()) return Fail(a.status(), err);
  auto* out = new jkv_across{std::move(*a), {}};
  out->parts.resize(count);
  for (size_t i = 0; i < count; ++i) {
    out->parts[i].write = &(*out->across)[i];
    out->parts[i].part = true;
  }
  *across = out;
  return JKV_OK;
}

jkv_txn* jkv_across_txn(jkv_across* across, size_t i) {
  return i < across->parts.size() ? &across->parts[i] : nullptr;
}

jkv_code jkv_across_commit(jkv_across* across, char** err) {
  const absl::Status s = across->across->Commit();
  if (!s.ok() && across->across->open()) return Fail(s, err);  // busy, still open
  delete across;
  return Fail(s, err);
}

void jkv_across_end(jkv_across* across) { delete across; }  // rolls back as it goes

jkv_code jkv_iter_new(jkv_txn* txn, jkv_iter** iter, char** err) {
  return jkv_iter_new_bounded(txn, nullptr, 0, nullptr, 0, iter, err);
}

jkv_code jkv_iter_new_bounded(jkv_txn* txn, const char* lower, size_t lower_len,
                              const char* upper, size_t upper_len, jkv_iter** iter, char** err) {
  if (txn == nullptr || iter == nullptr) {
    return Invalid("jkv_iter_new: txn and iter must not be NULL", err);
  }
  journalkv::IteratorOptions o;
  if (lower != nullptr) o.lower_bound = std::string(lower, lower_len);
  if (upper != nullptr) o.upper_bound = std::string(upper, upper_len);
  *iter = new jkv_iter{txn->write != nullptr ? txn->write->NewIterator(std::move(o))
                                             : txn->read->NewIterator(std::move(o)),
                       std::string()};
  return JKV_OK;
}

void jkv_iter_seek(jkv_iter* iter, const char* key, size_t key_len) {
  iter->it->Seek(Bytes(key, key_len));
}
void jkv_iter_seek_to_first(jkv_iter* iter) { iter->it->SeekToFirst(); }
void jkv_iter_seek_to_last(jkv_iter* iter) { iter->it->SeekToLast(); }
int jkv_iter_valid(jkv_iter* iter) { return iter->it->Valid() ? 1 : 0; }
void jkv_iter_next(jkv_iter* iter) { iter->it->Next(); }
void jkv_iter_prev(jkv_iter* iter) { iter->it->Prev(); }

const char* jkv_iter_key(jkv_iter* iter, size_t* key_len) {
  const absl::string_view k = iter->it->key();
  if (key_len != nullptr) *key_len = k.size();
  return k.data();
}

jkv_code jkv_iter_value(jkv_iter* iter, const char** value, size_t* value_len, char** err) {
  absl::StatusOr<std::string> v = iter->it->value();
  if (!v.ok()) return Fail(v.status(), err);
  iter->value = std::move(*v);
  if (value != nullptr) *value = iter->value.data();
  if (value_len != nullptr) *value_len = iter->value.size();
  return JKV_OK;
}

jkv_code jkv_iter_status(jkv_iter* iter, char** err) { return Fail(iter->it->status(), err); }

void jkv_iter_free(jkv_iter* iter) { delete iter; }

jkv_code jkv_checkpoint(jkv_db* db, jkv_checkpoint_mode mode, jkv_checkpoint_result* result,
                        char** err) {
  journalkv::CheckpointMode m;
  switch (mode) {
    case JKV_CHECKPOINT_PASSIVE: m = journalkv::CheckpointMode::kPassive; break;
    case JKV_CHECKPOINT_FULL: m = journalkv::CheckpointMode::kFull; break;
    case JKV_CHECKPOINT_RESTART: m = journalkv::CheckpointMode::kRestart; break;
    case JKV_CHECKPOINT_TRUNCATE: m = journalkv::CheckpointMode::kTruncate; break;
    default: return Invalid("jkv_checkpoint: unknown mode", err);
  }
  absl::StatusOr<journalkv::CheckpointResult> r = db->db->Checkpoint(m);
  if (!r.ok()) return Fail(r.status(), err);
  if (result != nullptr) {
    result->log_frames = r->log_frames;
    result->copied = r->copied;
    result->backfilled = r->backfilled;
    result->blocked = r->blocked ? 1 : 0;
    result->restarted = r->restarted ? 1 : 0;
  }
  return JKV_OK;
}

jkv_code jkv_stats_get(jkv_db* db, jkv_stats* out, char** err) {
  if (out == nullptr) return Invalid("jkv_stats_get: stats must not be NULL", err);
  const journalkv::DbStats s = db->db->Stats();
  out->page_size = s.page_size;
  out->page_count = s.page_count;
  out->freelist_pages = s.freelist_pages;
  out->commits = s.commits;
  out->rollbacks = s.rollbacks;
  out->cache_hits = s.cache_hits;
  out->cache_misses = s.cache_misses;
  out->syncs = s.database_io.syncs + s.journal_io.syncs + s.wal_io.syncs + s.dir_syncs;
  out->bytes_written = s.database_io.bytes_written + s.journal_io.bytes_written +
                       s.wal_io.bytes_written + s.shm_io.bytes_written;
  out->wal_mode = s.wal_mode ? 1 : 0;
  out->log_frames = s.log_frames;
  out->checkpoints = s.checkpoints;
  return JKV_OK;
}

jkv_code jkv_stat_get(jkv_db* db, const char* name, double* value, char** err) {
  if (db == nullptr || name == nullptr || value == nullptr) {
    return Invalid("jkv_stat_get: db, name and value must not be NULL", err);
  }
  const std::optional<double> v = db->db->Stats().Value(name);
  if (!v.has_value()) {
    return Invalid(absl::StrCat("jkv_stat_get: no counter named \"", name, "\""), err);
  }
  *value = *v;
  return JKV_OK;
}

const char* jkv_stat_name(int index) {
  const std::vector<std::string>& names = journalkv::DbStats::Names();  // static, never freed
  if (index < 0 || static_cast<size_t>(index) >= names.size()) return nullptr;
  return names[static_cast<size_t>(index)].c_str();
}

jkv_code jkv_backup(jkv_db* db, const char* dest, int compact, jkv_backup_result* result,
                    char** err) {
  if (db == nullptr || dest == nullptr) return Invalid("jkv_backup: db and dest must not be NULL", err);
  journalkv::BackupOptions options;
  options.compact = compact != 0;
  absl::StatusOr<journalkv::BackupResult> r = db->db->Backup(dest, options);
  if (!r.ok()) return Fail(r.status(), err);
  if (result != nullptr) {
    result->source_pages = r->source_pages;
    result->pages = r->pages;
    result->bytes = r->bytes;
    result->keys = r->keys;
  }
  return JKV_OK;
}

jkv_code jkv_compact(jkv_db* db, jkv_compact_result* result, char** err) {
  if (db == nullptr) return Invalid("jkv_compact: db must not be NULL", err);
  absl::StatusOr<journalkv::CompactResult> r = db->db->Compact();
  if (!r.ok()) return Fail(r.status(), err);
  if (result != nullptr) {
    result->pages_before = r->pages_before;
    result->free_pages_before = r->free_pages_before;
    result->pages = r->pages;
    result->keys = r->keys;
    result->bytes_before = r->bytes_before;
    result->bytes = r->bytes;
    result->checkpoint_blocked = r->checkpoint.blocked ? 1 : 0;
  }
  return JKV_OK;
}

}  // extern "C"
