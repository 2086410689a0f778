// mem_fs.cc: MemFileSystem and its File (see mem_fs.h).
//
// A MemNode plays the part of an inode: the name table maps paths to nodes, every MemFile holds
// a shared_ptr to its node, and a node outlives its name for as long as a File uses it.
//
// Thread-safety: MemFileSystem::mu_ guards the name table; MemNode::mu guards everything in the
// node. A MemFile's own fields are immutable.
#include "vfs/mem_fs.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "vfs/batch_overlay.h"
#include "vfs/errno_status.h"
#include "vfs/range_lock_table.h"

namespace journalkv::vfs {

class MemNode {
 public:
  struct Region {
    size_t size;
    std::unique_ptr<uint8_t[]> memory;
  };

  base::Mutex mu;
  std::vector<uint8_t> data ABSL_GUARDED_BY(mu);
  RangeLockTable locks ABSL_GUARDED_BY(mu);
  std::map<uint32_t, Region> regions ABSL_GUARDED_BY(mu);
  uint64_t links ABSL_GUARDED_BY(mu) = 1;  // 0 once its path is deleted (open files keep it)
};

namespace {

constexpr uint64_t kMaxLockOffset = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// EFBIG unless [offset, offset + length) fits in a file of at most `max` bytes.
absl::Status CheckFileRange(const std::string& path, absl::string_view op, uint64_t offset,
                            uint64_t length, uint64_t max) {
  if (offset <= max && length <= max - offset) return absl::OkStatus();
  return ErrnoToStatus(EFBIG, absl::StrCat(path, ": ", op, " at offset ", offset));
}

// The end of the lock range (offset, length); length 0 reaches to the end of every file.
absl::StatusOr<uint64_t> LockEnd(const std::string& path, uint64_t offset, uint64_t length) {
  if (offset > kMaxLockOffset || length > kMaxLockOffset - offset) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": lock of ", length, " bytes at offset ",
                                                   offset, ": beyond the largest file offset"));
  }
  return length == 0 ? std::numeric_limits<uint64_t>::max() : offset + length;
}

class MemFile final : public File {
 public:
  MemFile(MemFileSystem* fs, std::string path, std::shared_ptr<MemNode> node,
          const OpenOptions& options, IoStats* stats, uint64_t max_bytes)
      : fs_(fs),
        path_(std::move(path)),
        node_(std::move(node)),
        kind_(options.kind),
        read_only_(options.mode == OpenMode::kReadOnly),
        stats_(stats),
        max_bytes_(max_bytes) {}
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() override {
    base::MutexLock lock(&node_->mu);
    node_->locks.ReleaseAll(this);
  }

  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override;
  absl::StatusOr<uint64_t> LinkCount() override {
    base::MutexLock lock(&node_->mu);
    return node_->links;
  }
  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override;
  absl::Status Sync(SyncKind) override {
    stats_->AddSync(kind_);
    return absl::OkStatus();
  }
  absl::Status Truncate(uint64_t size_bytes) override;
  absl::StatusOr<uint64_t> Size() override {
    base::MutexLock lock(&node_->mu);
    return node_->data.size();
  }
  absl::StatusOr<bool> TryLock(uint64_t offset, uint64_t length, LockMode mode) override;
  absl::Status Unlock(uint64_t offset, uint64_t length) override;
  absl::StatusOr<bool> CanLock(uint64_t offset, uint64_t length, LockMode mode) override;
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t region, size_t region_size) override;
  AtomicWriteKind atomic_write_kind() const override {
    return read_only_ ? AtomicWriteKind::kNone : AtomicWriteKind::kEmulated;
  }
  absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginAtomicBatch() override;
  // The prepared batch lives in a side file of this file system (batch_overlay.h).
  absl::StatusOr<std::optional<std::string>> PreparedBatch() override {
    if (read_only_) return std::nullopt;
    JKV_ASSIGN_OR_RETURN(std::optional<PreparedRecord> record, ReadPreparedRecord(*fs_, path_));
    if (!record.has_value()) return std::nullopt;
    return std::move(record->note);
  }
  absl::Status CommitPreparedBatch(BatchSync sync) override {
    if (read_only_) return ReadOnlyError(path_, "atomic batch commit");
    if (batch_open_.load(std::memory_order_acquire)) return BatchAlreadyOpenError(path_);
    return CommitEmulatedPrepared(
        *fs_, *this, [this](const BatchBuffer& batch, BatchSync) { return ApplyBatch(batch); },
        sync, stats_, kind_);
  }
  absl::Status DiscardPreparedBatch() override {
    if (read_only_) return ReadOnlyError(path_, "atomic batch discard");
    return ClearPreparedRecord(*fs_, path_);
  }
  const std::string& path() const override { return path_; }

 private:
  MemFileSystem* const fs_;
  // Applies every chunk of a committed batch under the node's lock: one step.
  absl::Status ApplyBatch(const BatchBuffer& batch);

  std::atomic<bool> batch_open_{false};
  // Immutable after construction.
  const std::string path_;
  const std::shared_ptr<MemNode> node_;
  const FileKind kind_;
  const bool read_only_;
  IoStats* const stats_;
  const uint64_t max_bytes_;
};

absl::Status MemFile::Read(uint64_t offset, absl::Span<uint8_t> out) {
  {
    base::MutexLock lock(&node_->mu);
    // node_->data by name, not through a const reference: clang 14's analysis loses the lock
    // behind one (-Wthread-safety-precise).
    const uint64_t size = node_->data.size();
    const uint64_t available = offset < size ? size - offset : 0;
    if (available < out.size()) return ShortReadError(path_, offset, out.size(), available);
    std::copy_n(node_->data.begin() + offset, out.size(), out.begin());
    // As a read() of a file that is mmapped shared: mapped bytes read as the mapping has them.
    // Word by word with atomic loads where aligned, since mappers store to it atomically.
    for (const auto& [region, r] : node_->regions) {
      const uint64_t start = uint64_t{region} * r.size;
      const uint64_t from = std::max(start, offset);
      const uint64_t to = std::min(start + r.size, offset + out.size());
      for (uint64_t at = from; at < to;) {
        uint8_t* src = r.memory.get() + (at - start);
        if ((reinterpret_cast<uintptr_t>(src) % 4) == 0 && at + 4 <= to) {
          const uint32_t w = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(src))
                                 .load(std::memory_order_acquire);
          std::memcpy(out.data() + (at - offset), &w, 4);
          at += 4;
        } else {
          out[at - offset] =
              std::atomic_ref<uint8_t>(*src).load(std::memory_order_acquire);
          ++at;
        }
      }
    }
  }
  stats_->AddRead(kind_, out.size());
  return absl::OkStatus();
}

absl::Status MemFile::Write(uint64_t offset, absl::Span<const uint8_t> data) {
  if (read_only_) return ReadOnlyError(path_, "pwrite");
  JKV_RETURN_IF_ERROR(CheckFileRange(path_, "pwrite", offset, data.size(), max_bytes_));
  if (!data.empty()) {  // like pwrite(2), an empty write never extends the file
    base::MutexLock lock(&node_->mu);
    std::vector<uint8_t>& bytes = node_->data;
    if (bytes.size() < offset + data.size()) bytes.resize(offset + data.size());
    std::copy(data.begin(), data.end(), bytes.begin() + offset);
  }
  stats_->AddWrite(kind_, data.size());
  return absl::OkStatus();
}

absl::Status MemFile::Truncate(uint64_t size_bytes) {
  if (read_only_) return ReadOnlyError(path_, "ftruncate");
  JKV_RETURN_IF_ERROR(CheckFileRange(path_, "ftruncate", size_bytes, 0, max_bytes_));
  {
    base::MutexLock lock(&node_->mu);
    node_->data.resize(size_bytes);
  }
  stats_->AddTruncate(kind_);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AtomicBatch>> MemFile::BeginAtomicBatch() {
  if (read_only_) return ReadOnlyError(path_, "atomic batch");
  JKV_RETURN_IF_ERROR(CheckNoPreparedRecord(*fs_, path_));
  if (batch_open_.exchange(true, std::memory_order_acq_rel)) return BatchAlreadyOpenError(path_);
  return std::make_unique<EmulatedBatch>(
      this, stats_, kind_, &batch_open_,
      [this](const BatchBuffer& batch, BatchSync) { return ApplyBatch(batch); }, fs_);
}

absl::Status MemFile::ApplyBatch(const BatchBuffer& batch) {
  // Checked before anything is applied, so that a refused batch changes nothing.
  for (const auto& [offset, data] : batch.chunks()) {
    JKV_RETURN_IF_ERROR(
        CheckFileRange(path_, "atomic batch write", offset, data.size(), max_bytes_));
  }
  base::MutexLock lock(&node_->mu);
  std::vector<uint8_t>& bytes = node_->data;
  const uint64_t end = batch.ranges().end();
  if (bytes.size() < end) bytes.resize(end);
  for (const auto& [offset, data] : batch.chunks()) {
    std::copy(data.begin(), data.end(), bytes.begin() + offset);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> MemFile::TryLock(uint64_t offset, uint64_t length, LockMode mode) {
  if (read_only_ && mode == LockMode::kExclusive) return ReadOnlyError(path_, "exclusive lock");
  JKV_ASSIGN_OR_RETURN(const uint64_t end, LockEnd(path_, offset, length));
  base::MutexLock lock(&node_->mu);
  return node_->locks.TryLock(this, offset, end, mode);
}

absl::StatusOr<bool> MemFile::CanLock(uint64_t offset, uint64_t length, LockMode mode) {
  JKV_ASSIGN_OR_RETURN(const uint64_t end, LockEnd(path_, offset, length));
  base::MutexLock lock(&node_->mu);
  return !node_->locks.Conflicts(this, offset, end, mode);
}

absl::Status MemFile::Unlock(uint64_t offset, uint64_t length) {
  JKV_ASSIGN_OR_RETURN(const uint64_t end, LockEnd(path_, offset, length));
  base::MutexLock lock(&node_->mu);
  node_->locks.Unlock(this, offset, end);
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> MemFile::MapSharedRegion(uint32_t region, size_t region_size) {
  if (read_only_) return ReadOnlyError(path_, "map shared region");
  const uint64_t offset = uint64_t{region} * region_size;
  if (region_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": shared region of 0 bytes"));
  }
  JKV_RETURN_IF_ERROR(
      CheckFileRange(path_, "map shared region", offset, region_size, max_bytes_));
  base::MutexLock lock(&node_->mu);
  if (auto it = node_->regions.find(region); it != node_->regions.end()) {
    if (it->second.size == region_size) return it->second.memory.get();
    return absl::InvalidArgumentError(absl::StrCat(path_, ": shared region ", region,
                                                   " already mapped with ", it->second.size,
                                                   " bytes, not ", region_size));
  }
  std::vector<uint8_t>& data = node_->data;
  if (data.size() < offset + region_size) data.resize(offset + region_size);
  auto memory = std::make_unique<uint8_t[]>(region_size);
  std::memcpy(memory.get(), data.data() + offset, region_size);
  uint8_t* address = memory.get();
  node_->regions[region] = MemNode::Region{region_size, std::move(memory)};
  return address;
}

bool Creates(OpenMode mode) {
  return mode == OpenMode::kCreate || mode == OpenMode::kCreateExclusive;
}

}  // namespace

MemFileSystem::MemFileSystem() = default;
MemFileSystem::~MemFileSystem() = default;

absl::StatusOr<std::unique_ptr<File>> MemFileSystem::Open(const std::string& path,
                                                          const OpenOptions& options) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(path, ": open");
  if (directories_.count(path) != 0) return ErrnoToStatus(EISDIR, context);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (!Creates(options.mode)) return ErrnoToStatus(ENOENT, context);
    it = files_.emplace(path, std::make_shared<MemNode>()).first;
  } else if (options.mode == OpenMode::kCreateExclusive) {
    return ErrnoToStatus(EEXIST, context);
  }
  return std::make_unique<MemFile>(this, path, it->second, options, &stats(),
                                   max_file_bytes_.load(std::memory_order_relaxed));
}

absl::Status MemFileSystem::Delete(const std::string& path) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(path, ": unlink");
  if (directories_.count(path) != 0) return ErrnoToStatus(EISDIR, context);
  auto it = files_.find(path);
  if (it == files_.end()) return ErrnoToStatus(ENOENT, context);
  {
    base::MutexLock node_lock(&it->second->mu);
    it->second->links = 0;
  }
  files_.erase(it);
  return absl::OkStatus();
}

absl::Status MemFileSystem::Rename(const std::string& from, const std::string& to) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(from, ": rename to ", to);
  if (directories_.count(from) != 0 || directories_.count(to) != 0) {
    return ErrnoToStatus(EISDIR, context);
  }
  auto it = files_.find(from);
  if (it == files_.end()) return ErrnoToStatus(ENOENT, context);
  if (from == to) return absl::OkStatus();
  std::shared_ptr<MemNode> node = std::move(it->second);
  files_.erase(it);
  if (auto old = files_.find(to); old != files_.end()) {
    base::MutexLock node_lock(&old->second->mu);
    old->second->links = 0;
  }
  files_[to] = std::move(node);
  return absl::OkStatus();
}

absl::Status MemFileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(from, ": rename to ", to, " without replacing it");
  if (directories_.count(from) != 0) return ErrnoToStatus(EISDIR, context);
  auto it = files_.find(from);
  if (it == files_.end()) return ErrnoToStatus(ENOENT, context);
  // Checked and renamed under mu_: one step, as renameat2 is.
  if (files_.count(to) != 0 || directories_.count(to) != 0) {
    return ErrnoToStatus(EEXIST, context);
  }
  std::shared_ptr<MemNode> node = std::move(it->second);
  files_.erase(it);
  files_[to] = std::move(node);
  return absl::OkStatus();
}

absl::StatusOr<bool> MemFileSystem::Exists(const std::string& path) {
  base::MutexLock lock(&mu_);
  return files_.count(path) != 0 || directories_.count(path) != 0;
}

absl::StatusOr<bool> MemFileSystem::IsDirectory(const std::string& path) {
  base::MutexLock lock(&mu_);
  return directories_.count(path) != 0;
}

absl::Status MemFileSystem::SyncDirectory(const std::string&) {
  stats().AddDirSync();
  return absl::OkStatus();
}

void MemFileSystem::MakeDirectoryForTesting(const std::string& path) {
  base::MutexLock lock(&mu_);
  directories_.insert(path);
}

std::vector<std::string> MemFileSystem::ListFiles() {
  base::MutexLock lock(&mu_);
  std::vector<std::string> paths;
  paths.reserve(files_.size());
  for (const auto& [path, node] : files_) paths.push_back(path);
  return paths;
}

}  // namespace journalkv::vfs
