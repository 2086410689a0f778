// posix_fs.cc: PosixFileSystem and its File, on Linux system calls (see posix_fs.h).
//
// Thread-safety: a PosixFile's descriptor is immutable and pread/pwrite/fcntl need no lock; only
// the table of shared-memory mappings is guarded, by PosixFile::mu_.
#include "vfs/posix_fs.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc, _GNU_SOURCE)
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "vfs/batch_overlay.h"
#include "vfs/errno_status.h"
#include "vfs/f2fs_atomic.h"
#include "vfs/xfs_exchange.h"

namespace journalkv::vfs {
namespace {

constexpr uint64_t kMaxOffset = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

// InvalidArgument unless [offset, offset + length) is addressable with off_t.
absl::Status CheckRange(const std::string& path, absl::string_view op, uint64_t offset,
                        uint64_t length) {
  if (offset <= kMaxOffset && length <= kMaxOffset - offset) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", op, " of ", length,
                                                 " bytes at offset ", offset,
                                                 ": beyond the largest file offset"));
}

int OpenFlags(OpenMode mode) {
  switch (mode) {
    case OpenMode::kReadWrite:
      return O_RDWR | O_CLOEXEC;
    case OpenMode::kReadOnly:
      return O_RDONLY | O_CLOEXEC;
    case OpenMode::kCreate:
      return O_RDWR | O_CREAT | O_CLOEXEC;
    case OpenMode::kCreateExclusive:
      return O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
  }
  return O_RDONLY | O_CLOEXEC;
}

// stat(2) of path; nullopt when the path does not exist.
absl::StatusOr<std::optional<struct stat>> StatPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return st;
  const int err = errno;
  if (err == ENOENT || err == ENOTDIR) return std::nullopt;
  return ErrnoToStatus(err, absl::StrCat(path, ": stat"));
}

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd, const OpenOptions& options, IoStats* stats,
            AtomicWriteSupport atomic)
      : path_(std::move(path)),
        fd_(fd),
        kind_(options.kind),
        read_only_(options.mode == OpenMode::kReadOnly),
        stats_(stats),
        atomic_(std::move(atomic)) {}
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;
  ~PosixFile() override;

  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override;
  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override;
  absl::Status Sync(SyncKind kind) override;
  absl::Status Truncate(uint64_t size_bytes) override;
  absl::StatusOr<uint64_t> Size() override;
  absl::StatusOr<uint64_t> LinkCount() override;
  absl::StatusOr<std::string> Identity() override;
  absl::StatusOr<bool> TryLock(uint64_t offset, uint64_t length, LockMode mode) override;
  absl::Status Unlock(uint64_t offset, uint64_t length) override;
  absl::StatusOr<bool> CanLock(uint64_t offset, uint64_t length, LockMode mode) override;
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t region, size_t region_size) override;
  absl::Status EnableReadMap(uint64_t max_bytes) override;
  absl::Status EnableCopyMap(uint64_t max_bytes) override;
  ReadMapCounters read_map_counters() const override {
    return read_map_ == nullptr ? ReadMapCounters{} : read_map_->counters();
  }
  ReadMap* read_map() override { return read_map_.get(); }
  AtomicWriteKind atomic_write_kind() const override { return atomic_.kind; }
  uint64_t atomic_write_block_size() const override { return atomic_.block_size; }
  absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginAtomicBatch() override;
  // Prepared batches: XFS only (in the shadow, xfs_exchange.h); none elsewhere.
  absl::StatusOr<std::optional<std::string>> PreparedBatch() override {
    if (atomic_.kind != AtomicWriteKind::kXfsExchangeRange) return std::nullopt;
    return XfsPreparedNote(path_, atomic_.block_size);
  }
  absl::Status CommitPreparedBatch(BatchSync sync) override {
    if (atomic_.kind != AtomicWriteKind::kXfsExchangeRange) return File::CommitPreparedBatch(sync);
    if (batch_open_.load(std::memory_order_acquire)) return BatchAlreadyOpenError(path_);
    return CommitXfsPreparedBatch(this, fd_, atomic_.block_size, stats_, kind_, sync);
  }
  absl::Status DiscardPreparedBatch() override {
    if (atomic_.kind != AtomicWriteKind::kXfsExchangeRange) return absl::OkStatus();
    return DiscardXfsPreparedBatch(path_);
  }
  const std::string& path() const override { return path_; }

 private:
  struct Mapping {
    uint8_t* address;
    size_t size;
  };

  // One F_OFD_SETLK or F_OFD_GETLK call (see the definition).
  absl::StatusOr<bool> LockCall(int command, short type, uint64_t offset, uint64_t length);
  // Extends the file to at least size_bytes; never shrinks it.
  absl::Status GrowTo(uint64_t size_bytes);
  // Gives every page of [offset, offset + length) its disk block (see the definition).
  absl::Status Allocate(uint64_t offset, uint64_t length);

  // Immutable after construction.
  const std::string path_;
  const int fd_;
  const FileKind kind_;
  const bool read_only_;
  IoStats* const stats_;
  const AtomicWriteSupport atomic_;  // found at open (kNone when read-only)
  // Set once by EnableReadMap before the File is shared (vfs.h), then immutable.
  std::unique_ptr<ReadMap> read_map_;

  std::atomic<bool> batch_open_{false};
  base::Mutex mu_;
  std::map<uint32_t, Mapping> mappings_ ABSL_GUARDED_BY(mu_);
};

PosixFile::~PosixFile() {
  for (const auto& [region, mapping] : mappings_) ::munmap(mapping.address, mapping.size);
  // A close error cannot be reported from a destructor, and it cannot lose data that a Sync did
  // not already make durable: callers that care sync before dropping the File.
  ::close(fd_);
}

absl::Status PosixFile::EnableReadMap(uint64_t max_bytes) {
  if (read_map_ != nullptr) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(read_map_, ReadMap::Create(fd_, max_bytes, path_));
  return absl::OkStatus();
}

absl::Status PosixFile::EnableCopyMap(uint64_t max_bytes) {
  if (read_map_ != nullptr) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(read_map_, ReadMap::Create(fd_, max_bytes, path_, /*in_place=*/false));
  return absl::OkStatus();
}

absl::Status PosixFile::Read(uint64_t offset, absl::Span<uint8_t> out) {
  JKV_RETURN_IF_ERROR(CheckRange(path_, "pread", offset, out.size()));
  if (read_map_ != nullptr && read_map_->Copy(offset, out)) {  // E4, E5: else pread below
    stats_->AddRead(kind_, out.size());
    return absl::OkStatus();
  }
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return ErrnoToStatus(err, absl::StrCat(path_, ": pread at offset ", offset + done));
    }
    if (n == 0) return ShortReadError(path_, offset, out.size(), done);
    done += static_cast<size_t>(n);
  }
  stats_->AddRead(kind_, out.size());
  return absl::OkStatus();
}

absl::Status PosixFile::Write(uint64_t offset, absl::Span<const uint8_t> data) {
  if (read_only_) return ReadOnlyError(path_, "pwrite");
  JKV_RETURN_IF_ERROR(CheckRange(path_, "pwrite", offset, data.size()));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return ErrnoToStatus(err, absl::StrCat(path_, ": pwrite at offset ", offset + done));
    }
    if (n == 0) {
      return absl::InternalError(
          absl::StrCat(path_, ": pwrite at offset ", offset + done, ": wrote nothing"));
    }
    done += static_cast<size_t>(n);
  }
  stats_->AddWrite(kind_, data.size());
  return absl::OkStatus();
}

absl::Status PosixFile::Sync(SyncKind kind) {
  // Not retried on EINTR or anything else: after a failed fsync the kernel may already have
  // dropped the dirty pages, so a second call could succeed without the data (vfs.h).
  const bool data_only = kind == SyncKind::kData;
  if ((data_only ? ::fdatasync(fd_) : ::fsync(fd_)) != 0) {
    return ErrnoToStatus(errno, absl::StrCat(path_, data_only ? ": fdatasync" : ": fsync"));
  }
  stats_->AddSync(kind_);
  return absl::OkStatus();
}

absl::Status PosixFile::Truncate(uint64_t size_bytes) {
  if (read_only_) return ReadOnlyError(path_, "ftruncate");
  JKV_RETURN_IF_ERROR(CheckRange(path_, "ftruncate", size_bytes, 0));
  if (read_map_ != nullptr) read_map_->NoteTruncate(size_bytes);  // E4
  while (::ftruncate(fd_, static_cast<off_t>(size_bytes)) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    return ErrnoToStatus(err, absl::StrCat(path_, ": ftruncate to ", size_bytes));
  }
  stats_->AddTruncate(kind_);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PosixFile::Size() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, absl::StrCat(path_, ": fstat"));
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::string> PosixFile::Identity() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, absl::StrCat(path_, ": fstat"));
  return absl::StrCat(st.st_dev, ":", st.st_ino);
}

absl::StatusOr<uint64_t> PosixFile::LinkCount() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, absl::StrCat(path_, ": fstat"));
  return static_cast<uint64_t>(st.st_nlink);
}

absl::StatusOr<std::unique_ptr<AtomicBatch>> PosixFile::BeginAtomicBatch() {
  if (read_only_) return ReadOnlyError(path_, "atomic batch");
  if (atomic_.kind == AtomicWriteKind::kNone) {
    return AtomicBatchUnsupportedError(path_, atomic_.detail);
  }
  if (batch_open_.exchange(true, std::memory_order_acq_rel)) return BatchAlreadyOpenError(path_);
  if (atomic_.kind == AtomicWriteKind::kF2fs) {
    return BeginF2fsAtomicBatch(this, fd_, &RealF2fsIoctls(), stats_, kind_, &batch_open_);
  }
  return BeginXfsExchangeBatch(this, fd_, atomic_.block_size, stats_, kind_, &batch_open_);
}

absl::StatusOr<bool> PosixFile::TryLock(uint64_t offset, uint64_t length, LockMode mode) {
  // fcntl would fail with EBADF: a write lock needs a descriptor open for writing.
  if (read_only_ && mode == LockMode::kExclusive) return ReadOnlyError(path_, "exclusive lock");
  return LockCall(F_OFD_SETLK, mode == LockMode::kShared ? F_RDLCK : F_WRLCK, offset, length);
}

absl::Status PosixFile::Unlock(uint64_t offset, uint64_t length) {
  return LockCall(F_OFD_SETLK, F_UNLCK, offset, length).status();
}

// One fcntl call on an open-file-description lock over [offset, offset + length): F_OFD_SETLK
// (false when another owner holds a conflicting lock) or F_OFD_GETLK (false when one would
// conflict; `lock` then describes it).
absl::StatusOr<bool> PosixFile::LockCall(int command, short type, uint64_t offset,
                                         uint64_t length) {
  JKV_RETURN_IF_ERROR(CheckRange(path_, "lock", offset, length));
  struct flock lock = {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(offset);
  lock.l_len = static_cast<off_t>(length);
  lock.l_pid = 0;  // required by the F_OFD_ commands
  while (::fcntl(fd_, command, &lock) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (command == F_OFD_SETLK && (err == EAGAIN || err == EACCES)) return false;
    return ErrnoToStatus(err, absl::StrCat(path_, ": fcntl(",
                                           command == F_OFD_SETLK ? "F_OFD_SETLK" : "F_OFD_GETLK",
                                           ") of ", length, " bytes at offset ", offset));
  }
  return command == F_OFD_SETLK || lock.l_type == F_UNLCK;
}

absl::StatusOr<bool> PosixFile::CanLock(uint64_t offset, uint64_t length, LockMode mode) {
  return LockCall(F_OFD_GETLK, mode == LockMode::kShared ? F_RDLCK : F_WRLCK, offset, length);
}

absl::StatusOr<uint8_t*> PosixFile::MapSharedRegion(uint32_t region, size_t region_size) {
  if (read_only_) return ReadOnlyError(path_, "map shared region");
  const uint64_t offset = uint64_t{region} * region_size;
  const uint64_t page_size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (region_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": shared region of 0 bytes"));
  }
  if (offset % page_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": shared region ", region, " of ", region_size,
                     " bytes does not start on a page boundary (page size ", page_size, ")"));
  }
  base::MutexLock lock(&mu_);
  if (auto it = mappings_.find(region); it != mappings_.end()) {
    if (it->second.size == region_size) return it->second.address;
    return absl::InvalidArgumentError(absl::StrCat(path_, ": shared region ", region,
                                                   " already mapped with ", it->second.size,
                                                   " bytes, not ", region_size));
  }
  JKV_RETURN_IF_ERROR(GrowTo(offset + region_size));
  JKV_RETURN_IF_ERROR(Allocate(offset, region_size));
  void* address = ::mmap(nullptr, region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                         static_cast<off_t>(offset));
  if (address == MAP_FAILED) {
    return ErrnoToStatus(errno, absl::StrCat(path_, ": mmap of shared region ", region));
  }
  mappings_[region] = Mapping{static_cast<uint8_t*>(address), region_size};
  return static_cast<uint8_t*>(address);
}

// A file grown with ftruncate is sparse: the first store into a page of a shared mapping of a
// hole needs a block, and when the file system has none the kernel answers with SIGBUS, in
// whichever process stores next (a reader taking a lock, a close). fallocate gives every page
// its block now, where a full disk is an error (ENOSPC: ResourceExhausted naming the file). It
// changes no byte (mode 0 keeps the data and the size), so running it over a region other
// processes have mapped and use is harmless; on blocks already allocated it allocates nothing.
// fallocate(2), not posix_fallocate(3): where the file system lacks it, glibc's emulation
// writes a zero byte into each block it reads as zero, which could overwrite a store another
// process makes between its read and its write. Such a file system (EOPNOTSUPP) keeps the
// sparse file, as before.
absl::Status PosixFile::Allocate(uint64_t offset, uint64_t length) {
  while (::fallocate(fd_, 0, static_cast<off_t>(offset), static_cast<off_t>(length)) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EOPNOTSUPP) return absl::OkStatus();
    return MappingAllocationError(err, path_, offset, length);
  }
  return absl::OkStatus();
}

absl::Status PosixFile::GrowTo(uint64_t size_bytes) {
  JKV_RETURN_IF_ERROR(CheckRange(path_, "ftruncate", size_bytes, 0));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, Size());
  if (size >= size_bytes) return absl::OkStatus();
  while (::ftruncate(fd_, static_cast<off_t>(size_bytes)) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    return ErrnoToStatus(err, absl::StrCat(path_, ": ftruncate to ", size_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<File>> PosixFileSystem::Open(const std::string& path,
                                                            const OpenOptions& options) {
  int fd;
  do {
    // O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer forever.
    // It changes nothing for a regular file, and is cleared below.
    fd = ::open(path.c_str(), OpenFlags(options.mode) | O_NONBLOCK, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat(path, ": open"));
  struct stat st;
  int err = 0;
  const char* not_regular = nullptr;
  if (::fstat(fd, &st) != 0) {
    err = errno;
  } else if (S_ISDIR(st.st_mode)) {
    err = EISDIR;  // open(2) lets O_RDONLY through; a database path must never be a directory
  } else if (!S_ISREG(st.st_mode)) {
    not_regular = S_ISFIFO(st.st_mode)  ? "a named pipe"
                  : S_ISCHR(st.st_mode) ? "a character device"
                  : S_ISBLK(st.st_mode) ? "a block device"
                  : S_ISSOCK(st.st_mode) ? "a socket"
                                         : "of an unknown type";
  } else {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) err = errno;
  }
  if (err != 0 || not_regular != nullptr) {
    ::close(fd);
    if (not_regular != nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, ": not a regular file (", not_regular, ")"));
    }
    return ErrnoToStatus(err, absl::StrCat(path, ": open"));
  }
  // Which atomic batch the file has: one fstatfs (and on XFS one geometry ioctl), no change.
  AtomicWriteSupport atomic;
  if (options.mode == OpenMode::kReadOnly) {
    atomic.detail = "opened read-only";
  } else {
    atomic = DetectAtomicWrites(fd);
  }
  return std::make_unique<PosixFile>(path, fd, options, &stats(), std::move(atomic));
}

absl::StatusOr<std::string> PosixFileSystem::ResolveLinks(const std::string& path) {
  constexpr int kMaxLinks = 40;  // Linux's own limit for one lookup
  std::string current = path;
  for (int hops = 0; hops <= kMaxLinks; ++hops) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) return current;  // a file still to be created
      return ErrnoToStatus(err, absl::StrCat(current, ": lstat"));
    }
    if (!S_ISLNK(st.st_mode)) return current;
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(current.c_str(), target.data(), target.size());
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat(current, ": readlink"));
    target.resize(static_cast<size_t>(n));
    // A relative target is relative to the directory holding the link.
    current = target.starts_with('/') || current.find('/') == std::string::npos
                  ? target
                  : absl::StrCat(DirName(current), "/", target);
  }
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": more than ", kMaxLinks, " symbolic links to follow (a loop?)"));
}

absl::Status PosixFileSystem::Delete(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoToStatus(errno, absl::StrCat(path, ": unlink"));
  return absl::OkStatus();
}

absl::Status PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat(from, ": rename to ", to));
  }
  return absl::OkStatus();
}

absl::Status PosixFileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  const std::string context = absl::StrCat(from, ": rename to ", to, " without replacing it");
  if (!link_for_no_replace_.load(std::memory_order_relaxed)) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
      return absl::OkStatus();
    }
    const int err = errno;
    if (err != EINVAL && err != ENOSYS) return ErrnoToStatus(err, context);
  }
  // The file system (or the kernel) cannot: a new name that must be free, then the old name
  // goes. In between (a crash there) both name the file.
  if (::link(from.c_str(), to.c_str()) != 0) return ErrnoToStatus(errno, context);
  if (::unlink(from.c_str()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat(context, ": unlink after link"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> PosixFileSystem::Exists(const std::string& path) {
  JKV_ASSIGN_OR_RETURN(const std::optional<struct stat> st, StatPath(path));
  return st.has_value();
}

absl::StatusOr<bool> PosixFileSystem::IsDirectory(const std::string& path) {
  JKV_ASSIGN_OR_RETURN(const std::optional<struct stat> st, StatPath(path));
  return st.has_value() && S_ISDIR(st->st_mode);
}

absl::Status PosixFileSystem::SyncDirectory(const std::string& dir_path) {
  const int fd = ::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat(dir_path, ": open directory"));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoToStatus(err, absl::StrCat(dir_path, ": fsync directory"));
  stats().AddDirSync();
  return absl::OkStatus();
}

}  // namespace journalkv::vfs
