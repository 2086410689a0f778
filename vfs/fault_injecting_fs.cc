// fault_injecting_fs.cc: FaultInjectingFileSystem and its File (see fault_injecting_fs.h).
//
// Every operation that changes the model (the Inodes, names_, dir_ops_, counters) runs under
// FaultInjectingFileSystem::mu_, held across the base call, so the model sees the base's
// changes in the order the base applied them. FaultInjectingFile is a thin forwarder.
//
// A File belongs to the Epoch that was current when it was opened; SimulatePowerLoss and
// SimulateProcessCrash end that epoch, and the File checks its epoch (one atomic load, no mutex)
// on every call, so reads stay off mu_.
//
// Thread-safety: an Inode's fields are guarded by the file system's mu_; an Epoch's one field
// is atomic. FaultInjectingFile's fields are immutable; its base File is thread-safe itself.
#include "vfs/fault_injecting_fs.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/batch_overlay.h"
#include "vfs/errno_status.h"
#include "vfs/power_loss_model.h"

namespace journalkv::vfs {

struct FaultInjectingFileSystem::Inode {
  std::vector<uint8_t> durable;
  std::vector<PendingOp> pending;  // since the last Sync, oldest first
  uint64_t size = 0;               // the base file's size now (what it holds on the disk)
};

std::shared_ptr<FaultInjectingFileSystem::Inode> FaultInjectingFileSystem::InodeHolding(
    std::vector<uint8_t> content) {
  auto inode = std::make_shared<Inode>();
  inode->size = content.size();
  inode->durable = std::move(content);
  return inode;
}

struct FaultInjectingFileSystem::Epoch {
  static constexpr int kOpen = 0;
  static constexpr int kPowerLoss = 1;
  static constexpr int kProcessCrash = 2;
  std::atomic<int> ended_by{kOpen};  // set once, under mu_, when the epoch ends
};

class FaultInjectingFile final : public File {
 public:
  using Inode = FaultInjectingFileSystem::Inode;
  using Epoch = FaultInjectingFileSystem::Epoch;

  FaultInjectingFile(FaultInjectingFileSystem* fs, std::unique_ptr<File> base,
                     std::shared_ptr<Inode> inode, const OpenOptions& options,
                     std::shared_ptr<const Epoch> epoch)
      : fs_(fs),
        base_(std::move(base)),
        inode_(std::move(inode)),
        kind_(options.kind),
        read_only_(options.mode == OpenMode::kReadOnly),
        epoch_(std::move(epoch)) {}
  FaultInjectingFile(const FaultInjectingFile&) = delete;
  FaultInjectingFile& operator=(const FaultInjectingFile&) = delete;

  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override {
    return fs_->FileRead(*this, offset, out);
  }
  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override {
    return fs_->FileWrite(*this, offset, data);
  }
  absl::Status Sync(SyncKind kind) override { return fs_->FileSync(*this, kind); }
  absl::Status Truncate(uint64_t size_bytes) override {
    return fs_->FileTruncate(*this, size_bytes);
  }
  absl::StatusOr<uint64_t> Size() override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->Size();
  }
  absl::StatusOr<uint64_t> LinkCount() override { return base_->LinkCount(); }
  absl::StatusOr<std::string> Identity() override { return base_->Identity(); }
  absl::StatusOr<bool> TryLock(uint64_t offset, uint64_t length, LockMode mode) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->TryLock(offset, length, mode);
  }
  absl::Status Unlock(uint64_t offset, uint64_t length) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->Unlock(offset, length);
  }
  absl::StatusOr<bool> CanLock(uint64_t offset, uint64_t length, LockMode mode) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->CanLock(offset, length, mode);
  }
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t region, size_t region_size) override {
    return fs_->FileMap(*this, region, region_size);
  }
  // The read map is the base file's (vfs/read_map.h): on a base of real files (PosixFileSystem,
  // RootedFileSystem) reads go through it, the rest of this file's model unchanged; Read still
  // checks liveness and injected faults first. Unimplemented over the in-memory file system.
  absl::Status EnableReadMap(uint64_t max_bytes) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->EnableReadMap(max_bytes);
  }
  absl::Status EnableCopyMap(uint64_t max_bytes) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    return base_->EnableCopyMap(max_bytes);
  }
  ReadMapCounters read_map_counters() const override { return base_->read_map_counters(); }
  // The map itself, for the WAL's pages taken in place (pager/mapped_pages.h), unless the file
  // system was told not to lend it (SetLendReadMap): over real files the sweeps then read
  // those pages as a mapped database does. Such reads bypass this layer's liveness check and
  // injected read faults (a dead File's map still reads the inode it mapped); the model's
  // power losses and crash states are the base files', which the map sees (E1).
  ReadMap* read_map() override { return fs_->lends_read_map() ? base_->read_map() : nullptr; }
  AtomicWriteKind atomic_write_kind() const override {
    return read_only_ ? AtomicWriteKind::kNone : AtomicWriteKind::kEmulated;
  }
  absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginAtomicBatch() override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    if (read_only_) return ReadOnlyError(path(), "atomic batch");
    // The prepared batch is a side file of this file system, so the power-loss model decides
    // what of it survives (batch_overlay.h).
    JKV_RETURN_IF_ERROR(CheckNoPreparedRecord(*fs_, path()));
    if (batch_open_.exchange(true, std::memory_order_acq_rel)) {
      return BatchAlreadyOpenError(path());
    }
    return std::make_unique<EmulatedBatch>(
        this, &fs_->stats(), kind_, &batch_open_,
        [this](const BatchBuffer& batch, BatchSync sync) {
          return fs_->FileCommitBatch(*this, batch, sync);
        },
        fs_);
  }
  absl::StatusOr<std::optional<std::string>> PreparedBatch() override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    if (read_only_) return std::nullopt;
    JKV_ASSIGN_OR_RETURN(std::optional<PreparedRecord> record, ReadPreparedRecord(*fs_, path()));
    if (!record.has_value()) return std::nullopt;
    return std::move(record->note);
  }
  absl::Status CommitPreparedBatch(BatchSync sync) override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    if (read_only_) return ReadOnlyError(path(), "atomic batch commit");
    if (batch_open_.load(std::memory_order_acquire)) return BatchAlreadyOpenError(path());
    return CommitEmulatedPrepared(
        *fs_, *this,
        [this](const BatchBuffer& batch, BatchSync s) {
          return fs_->FileCommitBatch(*this, batch, s);
        },
        sync, &fs_->stats(), kind_);
  }
  absl::Status DiscardPreparedBatch() override {
    JKV_RETURN_IF_ERROR(fs_->CheckAlive(*this));
    if (read_only_) return ReadOnlyError(path(), "atomic batch discard");
    return ClearPreparedRecord(*fs_, path());
  }
  const std::string& path() const override { return base_->path(); }

  File& base() { return *base_; }
  Inode& inode() { return *inode_; }
  FileKind kind() const { return kind_; }
  bool read_only() const { return read_only_; }
  const Epoch& epoch() const { return *epoch_; }

 private:
  FaultInjectingFileSystem* const fs_;
  const std::unique_ptr<File> base_;
  const std::shared_ptr<Inode> inode_;
  const FileKind kind_;
  const bool read_only_;
  const std::shared_ptr<const Epoch> epoch_;
  std::atomic<bool> batch_open_{false};
};

namespace {

bool Creates(OpenMode mode) {
  return mode == OpenMode::kCreate || mode == OpenMode::kCreateExclusive;
}

// The directory name SyncDirectory(dir_path) makes durable, spelled as DirName spells it.
std::string NormalizeDir(const std::string& dir_path) {
  if (dir_path.empty()) return ".";
  const size_t last = dir_path.find_last_not_of('/');
  return last == std::string::npos ? "/" : dir_path.substr(0, last + 1);
}

// How much of a write of `size` bytes a short write applies.
size_t ShortWriteBytes(size_t size, uint64_t sector_size) {
  return size / 2 / sector_size * sector_size;
}

// Reads the whole content of file: the durable image of a file the wrapper starts tracking.
absl::StatusOr<std::vector<uint8_t>> ReadAll(File& file) {
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file.Size());
  std::vector<uint8_t> content(size);
  JKV_RETURN_IF_ERROR(file.Read(0, absl::MakeSpan(content)));
  return content;
}

}  // namespace

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem* base)
    : base_(base), epoch_(std::make_shared<Epoch>()) {}
FaultInjectingFileSystem::~FaultInjectingFileSystem() = default;

// ---- File operations ----

absl::Status FaultInjectingFileSystem::CheckAlive(const FaultInjectingFile& file) const {
  switch (file.epoch().ended_by.load(std::memory_order_acquire)) {
    case Epoch::kOpen:
      return absl::OkStatus();
    case Epoch::kProcessCrash:
      return absl::FailedPreconditionError(
          absl::StrCat(file.path(), ": file handle invalidated by simulated process crash"));
    default:
      return absl::FailedPreconditionError(
          absl::StrCat(file.path(), ": file handle invalidated by simulated power loss"));
  }
}

absl::Status FaultInjectingFileSystem::FileRead(FaultInjectingFile& file, uint64_t offset,
                                                absl::Span<uint8_t> out) {
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  std::optional<FaultRule> fault;
  {
    base::MutexLock lock(&mu_);
    fault = CountOp(FaultOp::kRead);
  }
  if (fault) {
    return ErrnoToStatus(fault->err, absl::StrCat(file.path(), ": pread at offset ", offset));
  }
  JKV_RETURN_IF_ERROR(file.base().Read(offset, out));
  stats().AddRead(file.kind(), out.size());
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::FileWrite(FaultInjectingFile& file, uint64_t offset,
                                                 absl::Span<const uint8_t> data) {
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  if (file.read_only()) return ReadOnlyError(file.path(), "pwrite");
  const std::string context = absl::StrCat(file.path(), ": pwrite at offset ", offset);
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  const std::optional<FaultRule> fault = CountOp(FaultOp::kWrite);
  if (fault && !fault->short_write) return ErrnoToStatus(fault->err, context);
  absl::Span<const uint8_t> applied = fault ? data.first(ShortWriteBytes(data.size(), disk_model_.sector_size)) : data;
  // A full disk: as pwrite(2), the bytes that fit in the free blocks are written, and then
  // the write fails with ENOSPC.
  bool full = false;
  if (!applied.empty() && !HasRoomFor(file.inode(), offset + applied.size())) {
    full = true;
    const uint64_t room = RoomEnd(file.inode());
    applied = applied.first(room > offset ? std::min<uint64_t>(room - offset, applied.size()) : 0);
  }
  JKV_RETURN_IF_ERROR(file.base().Write(offset, applied));
  if (!applied.empty()) {
    file.inode().size = std::max<uint64_t>(file.inode().size, offset + applied.size());
  }
  if (full) {
    if (!applied.empty()) {
      file.inode().pending.push_back(PendingOp::Write(offset, applied));
      ++mutation_count_;
    }
    return ErrnoToStatus(ENOSPC, absl::StrCat(file.path(), ": pwrite at offset ",
                                              offset + applied.size()));
  }
  if (!applied.empty()) file.inode().pending.push_back(PendingOp::Write(offset, applied));
  if (fault) {
    // Reported as the pwrite(2) that failed after the first part went through would be.
    return ErrnoToStatus(fault->err,
                         absl::StrCat(file.path(), ": pwrite at offset ", offset + applied.size()));
  }
  ++mutation_count_;
  stats().AddWrite(file.kind(), data.size());
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::FileTruncate(FaultInjectingFile& file, uint64_t size_bytes) {
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  if (file.read_only()) return ReadOnlyError(file.path(), "ftruncate");
  const std::string context = absl::StrCat(file.path(), ": ftruncate to ", size_bytes);
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  if (auto fault = CountOp(FaultOp::kTruncate)) return ErrnoToStatus(fault->err, context);
  if (!HasRoomFor(file.inode(), size_bytes)) return ErrnoToStatus(ENOSPC, context);
  JKV_RETURN_IF_ERROR(file.base().Truncate(size_bytes));
  file.inode().size = size_bytes;
  file.inode().pending.push_back(PendingOp::Truncate(size_bytes));
  ++mutation_count_;
  stats().AddTruncate(file.kind());
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> FaultInjectingFileSystem::FileMap(FaultInjectingFile& file,
                                                          uint32_t region, size_t region_size) {
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  const uint64_t offset = uint64_t{region} * region_size;
  if (!HasRoomFor(file.inode(), offset + region_size)) {
    // As PosixFile allocates every page of a region before it maps it: a full disk is an
    // error here, never a fault at the first store.
    return MappingAllocationError(ENOSPC, file.path(), offset, region_size);
  }
  JKV_ASSIGN_OR_RETURN(uint8_t* address, file.base().MapSharedRegion(region, region_size));
  file.inode().size = std::max<uint64_t>(file.inode().size, offset + region_size);
  return address;
}

absl::Status FaultInjectingFileSystem::FileCommitBatch(FaultInjectingFile& file,
                                                       const BatchBuffer& batch, BatchSync sync) {
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  if (file.read_only()) return ReadOnlyError(file.path(), "atomic batch commit");
  const std::string context = absl::StrCat(file.path(), ": atomic batch commit");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  // All or nothing on a full disk too: refused before any of it is applied.
  if (!HasRoomFor(file.inode(), batch.ranges().end())) return ErrnoToStatus(ENOSPC, context);
  const bool durable = sync == BatchSync::kDurable;
  const uint64_t ordinal = durable ? CountSyncAttempt() : 0;
  const bool skipped = durable && skipped_syncs_.contains(ordinal);
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> writes;
  for (const auto& [offset, data] : batch.chunks()) {
    JKV_RETURN_IF_ERROR(file.base().Write(offset, data));
    writes.emplace_back(offset, data);
  }
  file.inode().size = std::max(file.inode().size, batch.ranges().end());
  file.inode().pending.push_back(PendingOp::Batch(std::move(writes), durable && !skipped));
  if (durable) {
    CountSync(ordinal, file.path(), /*directory=*/false, skipped);  // the one mutation
    sync_log_.back().atomic_commit = true;
  } else {
    ++mutation_count_;
  }
  return absl::OkStatus();
}

uint64_t FaultInjectingFileSystem::UsedBytesLocked() const {
  uint64_t used = 0;
  for (const auto& [path, inode] : names_) used += RoundUpToBlock(inode->size);
  return used;
}

uint64_t FaultInjectingFileSystem::RoomEnd(const Inode& inode) const {
  const uint64_t mine = RoundUpToBlock(inode.size);
  const uint64_t used = UsedBytesLocked();
  return *capacity_ > used ? mine + (*capacity_ - used) : mine;
}

bool FaultInjectingFileSystem::HasRoomFor(const Inode& inode, uint64_t end) const {
  if (!capacity_.has_value() || RoundUpToBlock(end) <= RoundUpToBlock(inode.size)) return true;
  return UsedBytesLocked() + RoundUpToBlock(end) - RoundUpToBlock(inode.size) <= *capacity_;
}

void FaultInjectingFileSystem::SetCapacity(std::optional<uint64_t> bytes) {
  base::MutexLock lock(&mu_);
  capacity_ = bytes;
}

uint64_t FaultInjectingFileSystem::used_bytes() const {
  base::MutexLock lock(&mu_);
  return UsedBytesLocked();
}

absl::Status FaultInjectingFileSystem::FileSync(FaultInjectingFile& file, SyncKind kind) {
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(CheckAlive(file));
  const std::string context =
      absl::StrCat(file.path(), kind == SyncKind::kData ? ": fdatasync" : ": fsync");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  const uint64_t ordinal = CountSyncAttempt();
  if (auto fault = CountOp(FaultOp::kSync)) {
    JKV_RETURN_IF_ERROR(ResolveFailedSync(file));
    return ErrnoToStatus(fault->err, context);
  }
  const bool skipped = skipped_syncs_.contains(ordinal);
  if (!skipped) {
    JKV_RETURN_IF_ERROR(file.base().Sync(kind));
    Inode& inode = file.inode();
    for (const PendingOp& op : inode.pending) ApplyPendingOp(op, inode.durable);
    inode.pending.clear();
  }
  CountSync(ordinal, file.path(), /*directory=*/false, skipped);
  stats().AddSync(file.kind());
  return absl::OkStatus();
}

// The base is rewritten before the model changes, so a base error leaves both as they were.
absl::Status FaultInjectingFileSystem::ResolveFailedSync(FaultInjectingFile& file) {
  Inode& inode = file.inode();
  if (inode.pending.empty()) return absl::OkStatus();
  std::vector<uint8_t> image =
      ImageAfterFailedSync(inode.durable, inode.pending, sync_failure_rng_);
  // The base file to rewrite: this File's own unless it is read-only. A read-only File of a
  // file whose name was deleted since has no writable way to its content; only old Files can
  // still read that content, and a power loss rebuilds the file from the model anyway.
  File* writer = &file.base();
  std::unique_ptr<File> opened;
  if (file.read_only()) {
    auto it = names_.find(file.path());
    if (it != names_.end() && it->second.get() == &inode) {
      JKV_ASSIGN_OR_RETURN(opened, base_->Open(file.path(), OpenOptions{OpenMode::kReadWrite,
                                                                        FileKind::kOther}));
    }
    writer = opened.get();
  }
  if (writer != nullptr) {
    JKV_RETURN_IF_ERROR(writer->Truncate(image.size()));
    if (!image.empty()) JKV_RETURN_IF_ERROR(writer->Write(0, image));
  }
  inode.durable = std::move(image);
  inode.pending.clear();
  return absl::OkStatus();
}

// ---- FileSystem operations ----

absl::StatusOr<std::unique_ptr<File>> FaultInjectingFileSystem::Open(const std::string& path,
                                                                     const OpenOptions& options) {
  base::MutexLock lock(&mu_);
  std::shared_ptr<Inode> inode;
  if (auto it = names_.find(path); it != names_.end()) {
    inode = it->second;
  } else {
    JKV_ASSIGN_OR_RETURN(const bool exists, base_->Exists(path));
    if (!exists && Creates(options.mode)) return CreateFile(path, options);
  }
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> base_file, base_->Open(path, options));
  if (inode == nullptr) {
    // First open of a file that existed before: what it holds now is taken to be durable.
    JKV_ASSIGN_OR_RETURN(std::vector<uint8_t> content, ReadAll(*base_file));
    inode = InodeHolding(std::move(content));
    names_[path] = inode;
  }
  return Wrap(std::move(base_file), std::move(inode), options);
}

absl::StatusOr<std::unique_ptr<File>> FaultInjectingFileSystem::CreateFile(
    const std::string& path, const OpenOptions& options) {
  const std::string context = absl::StrCat(path, ": open");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  if (auto fault = CountOp(FaultOp::kCreate)) return ErrnoToStatus(fault->err, context);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> base_file, base_->Open(path, options));
  auto inode = std::make_shared<Inode>();
  names_[path] = inode;
  dir_ops_[DirName(path)].push_back(EntryOp{EntryOp::Kind::kCreate, path, inode});
  ++mutation_count_;
  return Wrap(std::move(base_file), std::move(inode), options);
}

std::unique_ptr<File> FaultInjectingFileSystem::Wrap(std::unique_ptr<File> base_file,
                                                     std::shared_ptr<Inode> inode,
                                                     const OpenOptions& options) {
  return std::make_unique<FaultInjectingFile>(this, std::move(base_file), std::move(inode), options,
                                              epoch_);
}

absl::Status FaultInjectingFileSystem::Delete(const std::string& path) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(path, ": unlink");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  if (auto fault = CountOp(FaultOp::kDelete)) return ErrnoToStatus(fault->err, context);
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, InodeOf(path));
  JKV_RETURN_IF_ERROR(base_->Delete(path));  // reports a missing file or a directory
  // Only a file created in the base behind the wrapper's back gets here without an inode.
  if (inode == nullptr) inode = std::make_shared<Inode>();
  names_.erase(path);
  dir_ops_[DirName(path)].push_back(EntryOp{EntryOp::Kind::kDelete, path, std::move(inode)});
  ++mutation_count_;
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  base::MutexLock lock(&mu_);
  return RenameLocked(from, to, RenameMode::kReplace);
}

absl::Status FaultInjectingFileSystem::RenameNoReplace(const std::string& from,
                                                       const std::string& to) {
  base::MutexLock lock(&mu_);
  return RenameLocked(from, to, RenameMode::kNoReplace);
}

absl::Status FaultInjectingFileSystem::RenameLocked(const std::string& from, const std::string& to,
                                                    RenameMode mode) {
  const std::string context = absl::StrCat(
      from, ": rename to ", to, mode == RenameMode::kReplace ? "" : " without replacing it");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  if (DirName(from) != DirName(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": the power-loss model renames within one directory only"));
  }
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, InodeOf(from));
  std::shared_ptr<Inode> replaced;  // kNoReplace: none, or the base refuses
  if (mode == RenameMode::kReplace) {
    JKV_ASSIGN_OR_RETURN(replaced, InodeOf(to));
    JKV_RETURN_IF_ERROR(base_->Rename(from, to));  // reports a missing file or a directory
  } else {
    // Also refuses an existing `to`, atomically in the base: nothing to model then.
    JKV_RETURN_IF_ERROR(base_->RenameNoReplace(from, to));
  }
  if (inode == nullptr) inode = std::make_shared<Inode>();
  names_.erase(from);
  names_[to] = inode;
  EntryOp op{EntryOp::Kind::kRename, to, inode};
  op.from = from;
  op.replaced = std::move(replaced);
  dir_ops_[DirName(to)].push_back(std::move(op));
  ++mutation_count_;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<FaultInjectingFileSystem::Inode>> FaultInjectingFileSystem::InodeOf(
    const std::string& path) {
  if (auto it = names_.find(path); it != names_.end()) return it->second;
  JKV_ASSIGN_OR_RETURN(const bool exists, base_->Exists(path));
  JKV_ASSIGN_OR_RETURN(const bool is_directory, base_->IsDirectory(path));
  if (!exists || is_directory) return nullptr;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       base_->Open(path, OpenOptions{OpenMode::kReadOnly, FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(std::vector<uint8_t> content, ReadAll(*file));
  return InodeHolding(std::move(content));
}

absl::StatusOr<bool> FaultInjectingFileSystem::Exists(const std::string& path) {
  return base_->Exists(path);
}

absl::StatusOr<std::string> FaultInjectingFileSystem::ResolveLinks(const std::string& path) {
  return base_->ResolveLinks(path);
}

absl::StatusOr<bool> FaultInjectingFileSystem::IsDirectory(const std::string& path) {
  return base_->IsDirectory(path);
}

absl::Status FaultInjectingFileSystem::SyncDirectory(const std::string& dir_path) {
  base::MutexLock lock(&mu_);
  const std::string context = absl::StrCat(dir_path, ": fsync directory");
  JKV_RETURN_IF_ERROR(CheckNotCrashed(context));
  const uint64_t ordinal = CountSyncAttempt();
  if (auto fault = CountOp(FaultOp::kDirSync)) return ErrnoToStatus(fault->err, context);
  const bool skipped = skipped_syncs_.contains(ordinal);
  if (!skipped) {
    JKV_RETURN_IF_ERROR(base_->SyncDirectory(dir_path));
    dir_ops_.erase(NormalizeDir(dir_path));
  }
  CountSync(ordinal, dir_path, /*directory=*/true, skipped);
  stats().AddDirSync();
  return absl::OkStatus();
}

// ---- Power loss ----

absl::Status FaultInjectingFileSystem::SimulatePowerLoss(uint64_t seed) {
  base::MutexLock lock(&mu_);
  std::mt19937_64 rng(seed);
  const TearOptions tear{garbage_in_torn_sectors_, disk_model_.sector_size,
                         disk_model_.size_without_data};
  std::map<std::string, std::vector<uint8_t>> images;
  // The entry prefixes are drawn first, then the images in path order: with DiskModel{} there
  // are no entry draws, and the images draw exactly as before DiskModel existed.
  for (const auto& [path, inode] : NamesAfterPowerLoss(rng)) {
    images[path] = ImageAfterPowerLoss(inode->durable, inode->pending, tear, rng);
  }
  JKV_RETURN_IF_ERROR(RewriteBase(images));
  names_.clear();
  dir_ops_.clear();
  for (auto& [path, image] : images) {
    names_[path] = InodeHolding(std::move(image));
  }
  crash_at_mutation_.reset();
  EndEpoch(Epoch::kPowerLoss);
  return absl::OkStatus();
}

void FaultInjectingFileSystem::SimulateProcessCrash() {
  base::MutexLock lock(&mu_);
  // Nothing else changes: what the process wrote is in the base (the OS page cache) and still
  // unsynced in the model.
  crash_at_mutation_.reset();
  EndEpoch(Epoch::kProcessCrash);
}

void FaultInjectingFileSystem::EndEpoch(int ended_by) {
  epoch_->ended_by.store(ended_by, std::memory_order_release);
  epoch_ = std::make_shared<Epoch>();
}

std::map<std::string, std::shared_ptr<FaultInjectingFileSystem::Inode>>
FaultInjectingFileSystem::NamesAfterPowerLoss(std::mt19937_64& rng) const {
  std::map<std::string, std::shared_ptr<Inode>> names = names_;
  // Undoing a directory's changes newest first, down to the first one that survives, leads back
  // to the state after that prefix of them (all undone: its last synced state). Paths of
  // different directories never collide, so the order across directories does not matter; it
  // is dir_ops_'s order, which keeps the draws reproducible.
  for (const auto& [dir, ops] : dir_ops_) {
    const size_t surviving =
        disk_model_.unsynced_entries_may_survive ? rng() % (ops.size() + 1) : 0;
    for (size_t i = ops.size(); i > surviving; --i) {
      const EntryOp& op = ops[i - 1];
      if (op.kind == EntryOp::Kind::kCreate) {
        names.erase(op.path);
      } else if (op.kind == EntryOp::Kind::kRename) {
        names[op.from] = op.inode;
        if (op.replaced != nullptr) {
          names[op.path] = op.replaced;
        } else {
          names.erase(op.path);
        }
      } else {
        names[op.path] = op.inode;
      }
    }
  }
  return names;
}

// Deletes every tracked path from the base and creates the survivors afresh, so that no File
// opened before the power loss shares content, locks or mappings with the new files.
absl::Status FaultInjectingFileSystem::RewriteBase(
    const std::map<std::string, std::vector<uint8_t>>& images) {
  std::set<std::string> paths;
  for (const auto& [path, inode] : names_) paths.insert(path);
  for (const auto& [path, image] : images) paths.insert(path);
  for (const std::string& path : paths) {
    JKV_ASSIGN_OR_RETURN(const bool exists, base_->Exists(path));
    if (exists) JKV_RETURN_IF_ERROR(base_->Delete(path));
  }
  for (const auto& [path, image] : images) {
    JKV_ASSIGN_OR_RETURN(
        std::unique_ptr<File> file,
        base_->Open(path, OpenOptions{OpenMode::kCreateExclusive, FileKind::kOther}));
    JKV_RETURN_IF_ERROR(file->Write(0, image));
  }
  return absl::OkStatus();
}

void FaultInjectingFileSystem::SetTornSectorGarbage(bool enabled) {
  base::MutexLock lock(&mu_);
  garbage_in_torn_sectors_ = enabled;
}

void FaultInjectingFileSystem::SetDiskModel(const DiskModel& model) {
  // A power of two no smaller than the smallest real sector.
  JKV_CHECK(model.sector_size >= kSectorSize && (model.sector_size & (model.sector_size - 1)) == 0);
  base::MutexLock lock(&mu_);
  disk_model_ = model;
}

void FaultInjectingFileSystem::SetSyncFailureSeed(uint64_t seed) {
  base::MutexLock lock(&mu_);
  sync_failure_rng_.seed(seed);
}

void FaultInjectingFileSystem::SkipSyncs(std::set<uint64_t> ordinals) {
  base::MutexLock lock(&mu_);
  skipped_syncs_ = std::move(ordinals);
}

// ---- Counters, crash points and fault rules ----

uint64_t FaultInjectingFileSystem::mutation_count() const {
  base::MutexLock lock(&mu_);
  return mutation_count_;
}

uint64_t FaultInjectingFileSystem::sync_count() const {
  base::MutexLock lock(&mu_);
  return sync_log_.size();
}

std::vector<uint64_t> FaultInjectingFileSystem::sync_mutation_indexes() const {
  base::MutexLock lock(&mu_);
  std::vector<uint64_t> indexes;
  indexes.reserve(sync_log_.size());
  for (const SyncRecord& record : sync_log_) indexes.push_back(record.mutation_index);
  return indexes;
}

std::vector<FaultInjectingFileSystem::SyncRecord> FaultInjectingFileSystem::sync_log() const {
  base::MutexLock lock(&mu_);
  return sync_log_;
}

uint64_t FaultInjectingFileSystem::CountSyncAttempt() { return ++sync_attempts_; }

void FaultInjectingFileSystem::CountSync(uint64_t ordinal, const std::string& path,
                                         bool directory, bool skipped) {
  ++mutation_count_;
  sync_log_.push_back(SyncRecord{ordinal, mutation_count_, path, directory, skipped});
}

void FaultInjectingFileSystem::CrashAfterMutations(uint64_t n) {
  base::MutexLock lock(&mu_);
  crash_at_mutation_ = mutation_count_ + n;
}

absl::Status FaultInjectingFileSystem::CheckNotCrashed(absl::string_view context) const {
  if (!crash_at_mutation_.has_value() || mutation_count_ < *crash_at_mutation_) {
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("simulated power loss: ", context, ": not applied"));
}

void FaultInjectingFileSystem::FailNth(FaultOp op, uint64_t n, int err, bool persistent) {
  AddFaultRule(FaultRule{op, n, err, persistent, /*short_write=*/false});
}

void FaultInjectingFileSystem::ShortWriteNth(uint64_t n, int err) {
  AddFaultRule(FaultRule{FaultOp::kWrite, n, err, /*persistent=*/false, /*short_write=*/true});
}

// rule.nth arrives relative to now; it is stored as an absolute operation count.
void FaultInjectingFileSystem::AddFaultRule(const FaultRule& rule) {
  base::MutexLock lock(&mu_);
  FaultRule absolute = rule;
  absolute.nth = op_counts_[static_cast<int>(rule.op)] + std::max<uint64_t>(rule.nth, 1);
  fault_rules_.push_back(absolute);
}

void FaultInjectingFileSystem::ClearFaults() {
  base::MutexLock lock(&mu_);
  fault_rules_.clear();
}

uint64_t FaultInjectingFileSystem::op_count(FaultOp op) const {
  base::MutexLock lock(&mu_);
  return op_counts_[static_cast<int>(op)];
}

std::optional<FaultInjectingFileSystem::FaultRule> FaultInjectingFileSystem::CountOp(FaultOp op) {
  const uint64_t count = ++op_counts_[static_cast<int>(op)];
  for (const FaultRule& rule : fault_rules_) {
    if (rule.op != op) continue;
    if (count == rule.nth || (rule.persistent && count > rule.nth)) return rule;
  }
  return std::nullopt;
}

}  // namespace journalkv::vfs
