#include "bench/engine_adapter.h"

#include <sys/stat.h>

#include <algorithm>

namespace journalkv::bench {

const ModeInfo* EngineInfo::FindMode(absl::string_view mode) const {
  for (const ModeInfo& m : modes) {
    if (m.name == mode) return &m;
  }
  return nullptr;
}

EngineCounters EngineCounters::Since(const EngineCounters& before) const {
  EngineCounters d;
  d.checkpoints = checkpoints - before.checkpoints;
  d.frames_copied = frames_copied - before.frames_copied;
  d.checkpoint_ms = checkpoint_ms - before.checkpoint_ms;
  d.checkpoint_lock_wait_ms = checkpoint_lock_wait_ms - before.checkpoint_lock_wait_ms;
  d.blocked_commits = blocked_commits - before.blocked_commits;
  d.blocked_timeouts = blocked_timeouts - before.blocked_timeouts;
  d.blocked_writer_ms = blocked_writer_ms - before.blocked_writer_ms;
  d.max_log_frames = max_log_frames;
  d.db_writes = db_writes - before.db_writes;
  d.write_lock_wait_ms = write_lock_wait_ms - before.write_lock_wait_ms;
  d.write_work_ms = write_work_ms - before.write_work_ms;
  d.log_zero_bytes = log_zero_bytes - before.log_zero_bytes;
  return d;
}

EngineCounters& EngineCounters::operator+=(const EngineCounters& o) {
  checkpoints += o.checkpoints;
  frames_copied += o.frames_copied;
  checkpoint_ms += o.checkpoint_ms;
  checkpoint_lock_wait_ms += o.checkpoint_lock_wait_ms;
  blocked_commits += o.blocked_commits;
  blocked_timeouts += o.blocked_timeouts;
  blocked_writer_ms += o.blocked_writer_ms;
  max_log_frames = std::max(max_log_frames, o.max_log_frames);
  db_writes += o.db_writes;
  write_lock_wait_ms += o.write_lock_wait_ms;
  write_work_ms += o.write_work_ms;
  log_zero_bytes += o.log_zero_bytes;
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

}  // namespace journalkv::bench
