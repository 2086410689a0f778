#include "bench/engine_adapter.h"

#include <sys/stat.h>

namespace journalkv::bench {

const ModeInfo* EngineInfo::FindMode(absl::string_view mode) const {
  for (const ModeInfo& m : modes) {
    if (m.name == mode) return &m;
  }
  return nullptr;
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
