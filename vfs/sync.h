// Every sync the pager and its journal make goes through these functions (a durable atomic
// batch's commit too). A failed sync is
// tagged so that the caller can tell it from other I/O errors: after a failed fsync the kernel
// may already have dropped the unsynced data while still reporting a later fsync as successful,
// so the pager never retries or trusts one (pager.h, I7) and enters its error state instead.
//
// Each call site states the invariant its sync keeps (pager.h I1..I12, wal/wal_connection.h,
// wal/checkpoint_copy.h).
#ifndef JOURNALKV_VFS_SYNC_H_
#define JOURNALKV_VFS_SYNC_H_

#include <string>

#include "absl/status/status.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// How hard commits push data to stable storage (every layer that syncs reads it; README,
// "Journal modes and sync levels", gives the guarantee of each in each journaling mode).
enum class SyncLevel {
  kOff,     // never syncs
  kNormal,  // syncs where atomicity needs it
  kFull,    // every acknowledged commit survives power loss
  kExtra,   // FULL, and the end of every journal is made durable too
};

// `site` names the call site by the invariant it keeps ("I2 database"); tests see it.
absl::Status SyncFile(File& file, SyncKind kind, const char* site);
// Syncs the directory of `file_path`.
absl::Status SyncDir(FileSystem& fs, const std::string& file_path, const char* site);

// Commits `batch` (AtomicBatch::Commit) with `sync`. A durable commit is also a flush: tests
// see it at `site` as they see a sync. A failure is tagged as a failed sync: the file may hold
// the whole batch or none of it (vfs.h), so the caller trusts neither (pager.h, I7).
absl::Status CommitAtomicBatch(AtomicBatch& batch, BatchSync sync, const char* site);

// True for a status returned by a failed SyncFile, SyncDir or CommitAtomicBatch (and anything
// that passed it on).
bool IsSyncFailure(const absl::Status& status);

// Test-only: `observer` is called with the site of every sync just before it is made (nullptr:
// none), so a test can tell which invariant each sync of a run serves. Set it while no sync
// runs.
using SyncObserver = void (*)(const char* site);
void SetSyncObserverForTesting(SyncObserver observer);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_SYNC_H_
