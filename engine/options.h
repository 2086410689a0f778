// The options of a journalkv database (public API).
//
// Thread-safety: a plain value type.
#ifndef JOURNALKV_ENGINE_OPTIONS_H_
#define JOURNALKV_ENGINE_OPTIONS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "pager/pager_options.h"

namespace journalkv {

namespace vfs {
class FileSystem;
}  // namespace vfs

// How commits protect the database against a crash. README.md gives the exact guarantee of
// every mode and sync level; ParseJournalMode / ParseSyncLevel read their lower-case names.
using JournalMode = pager::JournalMode;
using SyncLevel = pager::SyncLevel;
using pager::JournalModeName;
using pager::ParseJournalMode;
using pager::ParseSyncLevel;
using pager::SyncLevelName;

struct Options {
  JournalMode journal_mode = JournalMode::kDelete;
  SyncLevel sync = SyncLevel::kFull;
  // Used when the database is created; an existing database keeps its own page size.
  uint32_t page_size = 4096;
  // Clean pages kept in memory; also how many dirty pages a write transaction holds before it
  // spills them to the database file.
  uint32_t cache_pages = 2000;
  // How long a call waits for a lock held by another transaction before it fails with
  // ResourceExhausted("busy: ...").
  absl::Duration busy_timeout = absl::Seconds(5);
  // WAL: a PASSIVE checkpoint runs on the committing thread after a commit that leaves this
  // many frames or more in the log (SQLite's default); 0 checkpoints only when asked.
  uint32_t wal_autocheckpoint = 1000;
  // WAL: keep the database to this one handle for its whole life: its wal-index lives on the
  // heap (no -shm file, no shared memory needed) and other openers fail with busy errors.
  bool exclusive_locking = false;
  // Open without write access; write transactions fail with FailedPrecondition.
  bool read_only = false;
  // The file system to use; nullptr means the operating system's (POSIX). Not owned.
  vfs::FileSystem* file_system = nullptr;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_OPTIONS_H_
