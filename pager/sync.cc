#include "pager/sync.h"

#include "absl/strings/cord.h"

namespace journalkv::pager {
namespace {

constexpr char kSyncFailureUrl[] = "journalkv/sync-failed";

absl::Status Tag(absl::Status s) {
  if (!s.ok()) s.SetPayload(kSyncFailureUrl, absl::Cord("1"));
  return s;
}

}  // namespace

absl::Status SyncFile(vfs::File& file, vfs::SyncKind kind) { return Tag(file.Sync(kind)); }

absl::Status SyncDir(vfs::FileSystem& fs, const std::string& file_path) {
  return Tag(fs.SyncDirectory(vfs::DirName(file_path)));
}

bool IsSyncFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kSyncFailureUrl).has_value();
}

}  // namespace journalkv::pager
