#include "tools/report.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "base/status_macros.h"
#include "tools/tokens.h"

namespace journalkv::tools {
namespace {

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through; other bytes as they are
        }
    }
  }
  return out + "\"";
}

absl::StatusOr<uint64_t> FileSize(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  return file->Size();
}

// The log's state, for info and stats alike. WAL2: the log_ fields are of both logs; the wal2_
// ones give -wal2's share, current_log the writer's log, log_switches this handle's switches.
void AddLogState(Report& f, const DbStats& s) {
  f.AddInt("log_frames", s.log_frames);
  f.AddInt("log_frames_not_checkpointed", s.log_unbackfilled);
  f.Add("log_bytes", s.log_bytes);
  if (!s.wal2) return;
  f.AddInt("current_log", s.current_log);
  f.AddInt("wal2_log_frames", s.wal2_log_frames);
  f.AddInt("wal2_log_frames_not_checkpointed", s.wal2_log_unbackfilled);
  f.Add("wal2_log_bytes", s.wal2_log_bytes);
  f.Add("log_switches", s.log_switches);
}

}  // namespace

std::string Report::Text() const {
  std::string out;
  for (const auto& [name, value] : fields_) {
    absl::StrAppend(&out, name, " ");
    if (const auto* u = std::get_if<uint64_t>(&value)) {
      absl::StrAppend(&out, *u);
    } else if (const auto* d = std::get_if<double>(&value)) {
      absl::StrAppendFormat(&out, "%.3f", *d);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      out += *b ? "yes" : "no";
    } else {
      out += OneLine(std::get<std::string>(value));
    }
    out += '\n';
  }
  return out;
}

std::string Report::Json() const {
  std::string out = "{";
  for (const auto& [name, value] : fields_) {
    if (out.size() > 1) out += ',';
    absl::StrAppend(&out, JsonString(name), ":");
    if (const auto* u = std::get_if<uint64_t>(&value)) {
      absl::StrAppend(&out, *u);
    } else if (const auto* d = std::get_if<double>(&value)) {
      absl::StrAppendFormat(&out, "%.3f", *d);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      out += *b ? "true" : "false";
    } else {
      out += JsonString(std::get<std::string>(value));
    }
  }
  return out + "}";
}

absl::StatusOr<Report> InfoReport(Db& db, vfs::FileSystem& fs) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  JKV_ASSIGN_OR_RETURN(uint64_t keys, txn->Count());
  const DbStats stats = db.Stats();  // inside the transaction: the page count is current
  txn.reset();
  JKV_ASSIGN_OR_RETURN(uint64_t file_size, FileSize(fs, db.path()));
  const Options& o = db.options();
  Report f;
  f.Add("path", db.path());
  f.AddInt("page_size", stats.page_size);
  f.AddInt("page_count", stats.page_count);
  f.AddInt("free_pages", stats.freelist_pages);
  f.Add("file_size", file_size);
  // What `compact` (or `backup --compact`) would give back: the free pages, any file tail,
  // and the space the live cells would no longer take once packed (Db's estimate).
  JKV_ASSIGN_OR_RETURN(const uint64_t reclaimable, db.EstimateReclaimableBytes());
  f.Add("reclaimable_bytes", reclaimable);
  f.Add("keys", keys);
  f.Add("journal_mode", std::string(JournalModeName(*o.journal_mode)));
  f.Add("sync", std::string(SyncLevelName(o.sync)));
  f.Add("read_only", o.read_only);
  f.AddInt("cache_pages", o.cache_pages);
  f.AddInt("busy_timeout_ms", absl::ToInt64Milliseconds(o.busy_timeout));
  if (!stats.atomic_fallback.empty()) f.Add("atomic_fallback", stats.atomic_fallback);
  if (!stats.atomic_write_kind.empty()) f.Add("atomic_write_kind", stats.atomic_write_kind);
  if (stats.wal_mode) {
    AddLogState(f, stats);
    if (stats.wal2) f.AddInt("wal2_switch_pages", o.wal2_switch_pages);  // this invocation's
    f.Add("checkpoints", stats.checkpoints);
    f.Add("frames_copied", stats.frames_copied);
    f.AddInt("oldest_pinned_frame", stats.oldest_pinned_frame);
    f.AddInt("pinned_connections", stats.pinned_connections);
    f.Add("checkpoint_policy", stats.checkpoint_policy);
    // The other policy counters describe this one short-lived handle (nothing ran yet); a
    // background checkpoint that failed is worth saying, though no call reported it.
    if (stats.background_errors > 0) {
      f.Add("background_errors", stats.background_errors);
      f.Add("background_last_error", stats.background_last_error);
    }
  }
  return f;
}

// Adds one row of the counter table as its unit reads: a flag as yes/no, a time in
// milliseconds, the rest as integers.
void AddCounter(Report& f, const base::CounterInfo& row, double value) {
  switch (row.unit) {
    case base::CounterUnit::kFlag:
      f.Add(row.name, value != 0);
      return;
    case base::CounterUnit::kNanos:
      f.Add(row.name, value);
      return;
    default:
      f.AddInt(row.name, static_cast<uint64_t>(value));
  }
}

Report StatsReport(const DbStats& s) {
  // Every row of the counter table, in its order (base/counters.h), then the I/O per file
  // kind; the WAL's rows only in the WAL modes, the WAL2 ones only in WAL2.
  Report f;
  base::ForEachCounter(s, [&](const base::CounterInfo& row, double value) {
    if (row.scope == base::CounterScope::kAll) AddCounter(f, row, value);
  });
  s.ForEachIo([&](const std::string& name, uint64_t value) { f.Add(name, value); });
  if (!s.atomic_fallback.empty()) f.Add("atomic_fallback", s.atomic_fallback);
  if (!s.atomic_write_kind.empty()) {
    f.Add("atomic_write_kind", s.atomic_write_kind);
    base::ForEachCounter(s, [&](const base::CounterInfo& row, double value) {
      if (row.scope == base::CounterScope::kAtomic) AddCounter(f, row, value);
    });
  }
  if (!s.wal_mode) return f;
  base::ForEachCounter(s, [&](const base::CounterInfo& row, double value) {
    if (row.scope == base::CounterScope::kWal ||
        (row.scope == base::CounterScope::kWal2 && s.wal2)) {
      AddCounter(f, row, value);
    }
  });
  f.Add("checkpoint_policy", s.checkpoint_policy);
  f.Add("policy_last_error", s.policy_last_error);
  f.Add("background_last_error", s.background_last_error);
  return f;
}

}  // namespace journalkv::tools
