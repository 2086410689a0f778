// MemFileSystem: a FileSystem held entirely in memory, for fast unit tests and as the base of
// FaultInjectingFileSystem. It reproduces PosixFileSystem's observable behaviour, with the same
// status codes and messages (errno_status.h):
//  - Files are keyed by path. Every File opened on a path shares that file's content. Delete
//    unlinks the name only: Files already open keep reading and writing the old content, as with
//    POSIX inodes, and a later create of the path starts a new, empty file.
//  - Open: NotFound for a missing file in kReadWrite/kReadOnly, AlreadyExists for
//    kCreateExclusive of a present one, InvalidArgument ("is a directory") for a directory.
//  - Read past the end: OutOfRange naming path, offset and bytes available. A read-only File
//    refuses Write, Truncate, exclusive locks and MapSharedRegion with FailedPrecondition.
//    Files are limited to 4 GiB (writes beyond fail as EFBIG would), or to SetMaxFileBytes.
//  - Atomic batches (vfs.h, AtomicBatch): every writable File has one, AtomicWriteKind::kEmulated,
//    any offset and size (block size 1): the batch is buffered in memory and applied at Commit
//    under the file's lock, so no reader sees part of it; BatchSync makes no difference (there
//    is no power loss here). A batch past the size limit is refused whole at Commit.
//  - Locks: open-file-description semantics (RangeLockTable): each File object is its own owner;
//    shared and exclusive byte ranges, conversion, sub-range unlock; a File's locks go away when
//    it is destroyed. As with fcntl, a length of 0 means "to the end of every possible file".
//  - MapSharedRegion: zero-filled heap memory per (file, region), shared by every File of the
//    file and stable until the file is deleted and its last File destroyed. A mapping starts with
//    the file's bytes at that place, and the file is grown to cover the region as on POSIX; after
//    that Read sees the mapping (as read() sees a shared mmap), but Write does not reach it nor
//    a mapping a later Write (no caller writes a file it maps). No page-alignment requirement.
//  - Sync does nothing but count: everything is as durable as memory is. Use
//    FaultInjectingFileSystem to model power loss.
//  - Directories: every path lives in an implicit directory. IsDirectory is true only for paths
//    given to MakeDirectoryForTesting; SyncDirectory is a counted no-op for any path.
//  - Counters: as PosixFileSystem, every operation that succeeds is added to stats().
//
// Thread-safety: MemFileSystem and its Files are thread-safe. Lock order: MemFileSystem::mu_,
// then a file's own mutex. A File must not outlive the MemFileSystem that opened it.
#ifndef JOURNALKV_VFS_MEM_FS_H_
#define JOURNALKV_VFS_MEM_FS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

class MemNode;  // the content, locks and shared regions of one file (mem_fs.cc)

class MemFileSystem : public FileSystem {
 public:
  MemFileSystem();
  ~MemFileSystem() override;
  MemFileSystem(const MemFileSystem&) = delete;
  MemFileSystem& operator=(const MemFileSystem&) = delete;

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Delete(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override;
  // True for files and for directories made with MakeDirectoryForTesting.
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir_path) override;

  // Registers path as a directory: IsDirectory and Exists return true for it, and Open and
  // Delete refuse it with InvalidArgument ("is a directory").
  void MakeDirectoryForTesting(const std::string& path);

  // The paths of all files (not directories), sorted.
  std::vector<std::string> ListFiles();

  // Files opened from now on hold at most `bytes` (default 4 GiB): a write, truncate or
  // mapping past it fails as EFBIG would (a process under RLIMIT_FSIZE). The fuzz targets set
  // it low, so that an input naming a page gigabytes out (legitimate in a valid log) ends in
  // that error instead of allocating the gigabytes.
  void SetMaxFileBytes(uint64_t bytes) { max_file_bytes_.store(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> max_file_bytes_{uint64_t{1} << 32};
  base::Mutex mu_;
  std::map<std::string, std::shared_ptr<MemNode>> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> directories_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_MEM_FS_H_
