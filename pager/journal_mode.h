// The journal modes and sync levels, with their names: the part of the pager's options that
// the public engine/options.h names (it includes this, not pager_options.h, so that an
// embedder's build sees none of the pager's internals).
#ifndef JOURNALKV_PAGER_JOURNAL_MODE_H_
#define JOURNALKV_PAGER_JOURNAL_MODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vfs/sync.h"

namespace journalkv::pager {

// How a write transaction protects the database file against a crash. See README.md for the
// exact guarantee of every mode and sync level.
enum class JournalMode {
  kDelete,    // journal file created per transaction, unlinked at commit
  kTruncate,  // journal file kept, truncated to 0 bytes at commit
  kPersist,   // journal file kept, its header zeroed at commit
  kMemory,    // original pages kept in memory only: not crash-atomic
  kOff,       // no journal file: not crash-atomic (in-process rollback still works)
  kWal,       // write-ahead log x.db-wal with the shared wal-index x.db-shm (wal/wal_connection.h)
  kWal2,      // two alternating logs x.db-wal and x.db-wal2, the same wal-index (wal/wal_connection.h)
  kAtomic,    // no journal, no log: each commit is one atomic batch of the file system
              // (pager/atomic_strategy.h, docs/atomic.md)
};
inline bool IsWalMode(JournalMode mode) {
  return mode == JournalMode::kWal || mode == JournalMode::kWal2;
}
// The five modes of the rollback journal (DELETE, TRUNCATE, PERSIST, MEMORY, OFF).
inline bool IsRollbackMode(JournalMode mode) {
  return !IsWalMode(mode) && mode != JournalMode::kAtomic;
}
using SyncLevel = vfs::SyncLevel;  // vfs/sync.h

absl::string_view JournalModeName(JournalMode mode);
absl::string_view SyncLevelName(SyncLevel level);
absl::StatusOr<JournalMode> ParseJournalMode(absl::string_view text);
absl::StatusOr<SyncLevel> ParseSyncLevel(absl::string_view text);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_JOURNAL_MODE_H_
