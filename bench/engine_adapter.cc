#include "bench/engine_adapter.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace journalkv::bench {

const ModeInfo* EngineInfo::FindMode(absl::string_view mode) const {
  for (const ModeInfo& m : modes) {
    if (m.name == mode) return &m;
  }
  return nullptr;
}

bool EngineInfo::RunsAcross(absl::string_view mode) const {
  return open_across != nullptr &&
         std::find(across_modes.begin(), across_modes.end(), mode) != across_modes.end();
}

EngineCounters EngineCounters::FromTable(const base::CounterValues& values, uint64_t db_writes) {
  EngineCounters c;
  for (const base::CounterInfo& row : base::kCounterTable) c[row.id] = values.Value(row.id);
  c.db_writes = db_writes;
  return c;
}

EngineCounters EngineCounters::Since(const EngineCounters& before) const {
  EngineCounters d = *this;
  for (const base::CounterInfo& row : base::kCounterTable) {
    if (row.kind == base::CounterKind::kTicker) d[row.id] -= before[row.id];
  }
  d.db_writes -= before.db_writes;
  return d;
}

EngineCounters& EngineCounters::operator+=(const EngineCounters& o) {
  for (const base::CounterInfo& row : base::kCounterTable) {
    double& mine = (*this)[row.id];
    mine = row.kind == base::CounterKind::kTicker ? mine + o[row.id] : std::max(mine, o[row.id]);
  }
  db_writes += o.db_writes;
  return *this;
}

const std::vector<std::string>& SyncLevels() {
  static const auto* const levels = new std::vector<std::string>{"off", "normal", "full", "extra"};
  return *levels;
}

const std::vector<EngineInfo>& Engines() {
  static const auto* const engines =
      new std::vector<EngineInfo>{JournalkvEngine(), SqliteEngine(), LmdbEngine()};
  return *engines;
}

const EngineInfo* FindEngine(absl::string_view name) {
  for (const EngineInfo& e : Engines()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

uint64_t FileSizeOrZero(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

absl::Status Session::Settle() {
  JKV_ASSIGN_OR_RETURN(bool done, Checkpoint("truncate"));
  if (!done) {
    return absl::UnavailableError(
        "settle: the truncate checkpoint after the load did not finish (readers or the busy "
        "timeout stopped it)");
  }
  return absl::OkStatus();
}

}  // namespace journalkv::bench
