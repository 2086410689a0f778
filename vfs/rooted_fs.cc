#include "vfs/rooted_fs.h"

#include <cerrno>
#include <atomic>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "vfs/errno_status.h"

namespace journalkv::vfs {
namespace {

// The status with `root` taken out of its message, so that errors name the caller's paths.
absl::Status Unrooted(absl::Status status, const std::string& root) {
  if (status.ok() || root.empty()) return status;
  std::string message(status.message());
  for (size_t at; (at = message.find(root)) != std::string::npos;) message.erase(at, root.size());
  return absl::Status(status.code(), message);
}
template <typename T>
absl::StatusOr<T> Unrooted(absl::StatusOr<T> result, const std::string& root) {
  if (result.ok()) return result;
  return Unrooted(result.status(), root);
}

// A POSIX File that answers path() with the caller's spelling and counts into the wrapper's
// stats; everything else is the POSIX File's.
class RootedFile final : public File {
 public:
  RootedFile(std::unique_ptr<File> base, std::string path, FileKind kind, IoStats* stats,
             const std::string* root, std::atomic<uint64_t>* map_reads)
      : base_(std::move(base)),
        path_(std::move(path)),
        kind_(kind),
        stats_(stats),
        root_(root),
        map_reads_(map_reads) {}
  ~RootedFile() override {
    map_reads_->fetch_add(base_->read_map_counters().copies, std::memory_order_relaxed);
  }

  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override {
    JKV_RETURN_IF_ERROR(Unrooted(base_->Read(offset, out), *root_));
    stats_->AddRead(kind_, out.size());
    return absl::OkStatus();
  }
  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override {
    JKV_RETURN_IF_ERROR(Unrooted(base_->Write(offset, data), *root_));
    stats_->AddWrite(kind_, data.size());
    return absl::OkStatus();
  }
  // Counted, not made (rooted_fs.h): the layer above models what a sync keeps.
  absl::Status Sync(SyncKind /*kind*/) override {
    stats_->AddSync(kind_);
    return absl::OkStatus();
  }
  absl::Status Truncate(uint64_t size_bytes) override {
    JKV_RETURN_IF_ERROR(Unrooted(base_->Truncate(size_bytes), *root_));
    stats_->AddTruncate(kind_);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Size() override { return Unrooted(base_->Size(), *root_); }
  absl::StatusOr<bool> TryLock(uint64_t offset, uint64_t length, LockMode mode) override {
    return Unrooted(base_->TryLock(offset, length, mode), *root_);
  }
  absl::Status Unlock(uint64_t offset, uint64_t length) override {
    return Unrooted(base_->Unlock(offset, length), *root_);
  }
  absl::StatusOr<bool> CanLock(uint64_t offset, uint64_t length, LockMode mode) override {
    return Unrooted(base_->CanLock(offset, length, mode), *root_);
  }
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t region, size_t region_size) override {
    return Unrooted(base_->MapSharedRegion(region, region_size), *root_);
  }
  absl::Status EnableReadMap(uint64_t max_bytes) override {
    return Unrooted(base_->EnableReadMap(max_bytes), *root_);
  }
  absl::Status EnableCopyMap(uint64_t max_bytes) override {
    return Unrooted(base_->EnableCopyMap(max_bytes), *root_);
  }
  ReadMapCounters read_map_counters() const override { return base_->read_map_counters(); }
  ReadMap* read_map() override { return base_->read_map(); }
  absl::StatusOr<uint64_t> LinkCount() override { return Unrooted(base_->LinkCount(), *root_); }
  absl::StatusOr<std::string> Identity() override { return Unrooted(base_->Identity(), *root_); }
  AtomicWriteKind atomic_write_kind() const override { return base_->atomic_write_kind(); }
  uint64_t atomic_write_block_size() const override { return base_->atomic_write_block_size(); }
  absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginAtomicBatch() override {
    return Unrooted(base_->BeginAtomicBatch(), *root_);
  }
  absl::StatusOr<std::optional<std::string>> PreparedBatch() override {
    return Unrooted(base_->PreparedBatch(), *root_);
  }
  absl::Status CommitPreparedBatch(BatchSync sync) override {
    return Unrooted(base_->CommitPreparedBatch(sync), *root_);
  }
  absl::Status DiscardPreparedBatch() override {
    return Unrooted(base_->DiscardPreparedBatch(), *root_);
  }
  const std::string& path() const override { return path_; }

 private:
  const std::unique_ptr<File> base_;
  const std::string path_;
  const FileKind kind_;
  IoStats* const stats_;
  const std::string* const root_;
  std::atomic<uint64_t>* const map_reads_;
};

bool Creates(OpenMode mode) {
  return mode == OpenMode::kCreate || mode == OpenMode::kCreateExclusive;
}

}  // namespace

RootedFileSystem::RootedFileSystem(std::string root) : root_(std::move(root)) {}

std::string RootedFileSystem::RealPath(const std::string& path) const {
  return absl::StrCat(root_, path.empty() || path[0] != '/' ? "/" : "", path);
}

absl::Status RootedFileSystem::MakeDirectory(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(RealPath(path), error);
  if (error) return ErrnoToStatus(error.value(), absl::StrCat(RealPath(path), ": mkdir"));
  return absl::OkStatus();
}

absl::Status RootedFileSystem::MakeParents(const std::string& path) {
  return MakeDirectory(DirName(path));
}

absl::StatusOr<std::unique_ptr<File>> RootedFileSystem::Open(const std::string& path,
                                                             const OpenOptions& options) {
  if (Creates(options.mode)) JKV_RETURN_IF_ERROR(MakeParents(path));
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> base,
                       Unrooted(posix_.Open(RealPath(path), options), root_));
  return std::unique_ptr<File>(new RootedFile(std::move(base), path, options.kind, &stats(), &root_,
                                                &map_reads_));
}

absl::Status RootedFileSystem::Delete(const std::string& path) {
  return Unrooted(posix_.Delete(RealPath(path)), root_);
}

absl::Status RootedFileSystem::Rename(const std::string& from, const std::string& to) {
  JKV_RETURN_IF_ERROR(MakeParents(to));
  return Unrooted(posix_.Rename(RealPath(from), RealPath(to)), root_);
}

absl::Status RootedFileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  JKV_RETURN_IF_ERROR(MakeParents(to));
  return Unrooted(posix_.RenameNoReplace(RealPath(from), RealPath(to)), root_);
}

absl::StatusOr<bool> RootedFileSystem::Exists(const std::string& path) {
  return Unrooted(posix_.Exists(RealPath(path)), root_);
}

absl::StatusOr<bool> RootedFileSystem::IsDirectory(const std::string& path) {
  return Unrooted(posix_.IsDirectory(RealPath(path)), root_);
}

absl::Status RootedFileSystem::SyncDirectory(const std::string& dir_path) {
  JKV_RETURN_IF_ERROR(MakeDirectory(dir_path));  // counted, not made (rooted_fs.h)
  stats().AddDirSync();
  return absl::OkStatus();
}

}  // namespace journalkv::vfs
