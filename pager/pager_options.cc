#include "pager/pager_options.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace journalkv::pager {

uint64_t DefaultMmapSize() {
  static const uint64_t size = [] {
    const char* env = std::getenv("JOURNALKV_TEST_MMAP_SIZE");
    uint64_t bytes = 0;
    if (env == nullptr || !absl::SimpleAtoi(env, &bytes)) return uint64_t{0};
    return bytes;
  }();
  return size;
}

absl::string_view JournalModeName(JournalMode mode) {
  switch (mode) {
    case JournalMode::kDelete:
      return "delete";
    case JournalMode::kTruncate:
      return "truncate";
    case JournalMode::kPersist:
      return "persist";
    case JournalMode::kMemory:
      return "memory";
    case JournalMode::kOff:
      return "off";
    case JournalMode::kWal:
      return "wal";
    case JournalMode::kWal2:
      return "wal2";
    case JournalMode::kAtomic:
      return "atomic";
  }
  return "?";
}

absl::string_view SyncLevelName(SyncLevel level) {
  switch (level) {
    case SyncLevel::kOff:
      return "off";
    case SyncLevel::kNormal:
      return "normal";
    case SyncLevel::kFull:
      return "full";
    case SyncLevel::kExtra:
      return "extra";
  }
  return "?";
}

absl::StatusOr<JournalMode> ParseJournalMode(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (JournalMode m : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist,
                        JournalMode::kMemory, JournalMode::kOff, JournalMode::kWal,
                        JournalMode::kWal2, JournalMode::kAtomic}) {
    if (lower == JournalModeName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown journal mode \"", text, "\" (expected delete, truncate, persist, memory, off, wal, wal2 or atomic)"));
}

absl::StatusOr<SyncLevel> ParseSyncLevel(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (SyncLevel l : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
    if (lower == SyncLevelName(l)) return l;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sync level \"", text, "\" (expected off, normal, full or extra)"));
}

}  // namespace journalkv::pager
