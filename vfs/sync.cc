#include "vfs/sync.h"

#include <atomic>

#include "absl/strings/cord.h"

namespace journalkv::vfs {
namespace {

constexpr char kSyncFailureUrl[] = "journalkv/sync-failed";

absl::Status Tag(absl::Status s) {
  if (!s.ok()) s.SetPayload(kSyncFailureUrl, absl::Cord("1"));
  return s;
}

std::atomic<SyncObserver> observer{nullptr};

void Observe(const char* site) {
  if (SyncObserver o = observer.load(std::memory_order_relaxed)) o(site);
}

}  // namespace

absl::Status SyncFile(File& file, SyncKind kind, const char* site) {
  Observe(site);
  return Tag(file.Sync(kind));
}

absl::Status SyncDir(FileSystem& fs, const std::string& file_path, const char* site) {
  Observe(site);
  return Tag(fs.SyncDirectory(DirName(file_path)));
}

absl::Status CommitAtomicBatch(AtomicBatch& batch, BatchSync sync, const char* site) {
  if (sync == BatchSync::kDurable) Observe(site);
  return Tag(batch.Commit(sync));
}

void SetSyncObserverForTesting(SyncObserver o) { observer.store(o, std::memory_order_relaxed); }

bool IsSyncFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kSyncFailureUrl).has_value();
}

}  // namespace journalkv::vfs
