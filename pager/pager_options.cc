#include "pager/pager_options.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "pager/db_lock.h"

namespace journalkv::pager {

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
                        JournalMode::kWal2}) {
    if (lower == JournalModeName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown journal mode \"", text, "\" (expected delete, truncate, persist, memory, off, wal or wal2)"));
}

absl::StatusOr<SyncLevel> ParseSyncLevel(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  for (SyncLevel l : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
    if (lower == SyncLevelName(l)) return l;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sync level \"", text, "\" (expected off, normal, full or extra)"));
}

wal::WalOptions WalOptionsOf(const PagerOptions& options) {
  wal::WalOptions w;
  w.wal2 = options.journal_mode == JournalMode::kWal2;
  w.sync = options.sync;
  w.read_only = options.access == AccessMode::kReadOnly;
  w.exclusive_locking = options.exclusive_locking;
  w.wal2_switch_pages = options.wal2_switch_pages;
  w.size_limit = options.wal_size_limit;
  w.grow_bytes = options.wal_grow_bytes;
  w.reader_slots = options.reader_slots;
  w.busy_timeout = options.busy_timeout;
  w.private_reader_byte = kPrivateReaderByte;
  return w;
}

}  // namespace journalkv::pager
