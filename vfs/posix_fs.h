// PosixFileSystem: the FileSystem of the machine, on Linux system calls. The engine uses it in
// production; the tests in posix_fs_test.cc pin down the behaviour MemFileSystem copies.
//
// What it does, call by call:
//  - Open: open(2) with O_CLOEXEC, new files mode 0644 (less the umask). A directory is refused
//    with InvalidArgument ("is a directory") in every mode, also kReadOnly where open(2) would
//    succeed.
//  - Read/Write: pread/pwrite loops that continue after short transfers and EINTR. A read that
//    meets the end of the file returns OutOfRange naming path, offset and the bytes available.
//  - Sync: fdatasync for SyncKind::kData, fsync for kAll. Never retried.
//  - Locks: open-file-description locks (fcntl F_OFD_SETLK, l_pid = 0), so each File is its own
//    lock owner even inside one process, and the locks go away with the File. As with fcntl, a
//    length of 0 locks from offset to the end of every possible file.
//  - MapSharedRegion: mmap(MAP_SHARED) of the file. region * region_size must be a multiple of
//    the page size (InvalidArgument otherwise). A file shorter than the region is grown with
//    ftruncate (never shrunk); growing is not atomic against another process growing the same
//    file, so callers serialize growth across processes (the shm layer does it under a lock).
//    Every page of the region is then given its disk block (fallocate), so that a store into
//    the mapping never meets a full disk (the kernel's SIGBUS): a full disk is
//    ResourceExhausted from this call instead. Mappings live until the File is destroyed. Refused (FailedPrecondition) on read-only files.
//  - Rename: rename(2). RenameNoReplace: renameat2(RENAME_NOREPLACE); where the file system
//    refuses the flag (EINVAL) or the kernel lacks the call (ENOSYS), link(2) to the new name
//    (EEXIST when it exists) and unlink(2) of the old one.
//  - SyncDirectory: open(O_RDONLY | O_DIRECTORY), fsync, close.
//  - Atomic batches (vfs.h, AtomicBatch): Open of a writable file asks its file system which it
//    has (DetectAtomicWrites: fstatfs, and on XFS its geometry flags; nothing is changed): on
//    XFS with exchange-range a shadow file and one exchange per commit (xfs_exchange.h), on
//    F2FS its atomic write ioctls (f2fs_atomic.h, untested on a real F2FS), elsewhere (ext4,
//    tmpfs, btrfs, ...) none: BeginAtomicBatch is Unimplemented, naming the file system and
//    what is needed.
//  - Errors: errno -> code and message as errno_status.h says; a read-only File refuses Write,
//    Truncate and exclusive locks with FailedPrecondition ("opened read-only").
//  - Counters: every operation that succeeds is added to stats() under the File's kind.
//
// Thread-safety: PosixFileSystem and its Files are thread-safe (see vfs.h for the caller's part:
// serialize Truncate against writers). A File must not outlive the PosixFileSystem that opened
// it (it counts into that file system's stats()).
#ifndef JOURNALKV_VFS_POSIX_FS_H_
#define JOURNALKV_VFS_POSIX_FS_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

class PosixFileSystem : public FileSystem {
 public:
  PosixFileSystem() = default;
  PosixFileSystem(const PosixFileSystem&) = delete;
  PosixFileSystem& operator=(const PosixFileSystem&) = delete;

  // Opens regular files only: a directory is refused with EISDIR's error and anything else (a
  // named pipe, a device, a socket) with FailedPrecondition naming what it is, before any read
  // or write (a named pipe is opened without blocking, so refusing it does not hang).
  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Delete(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override;
  // True for anything stat(2) finds, directories included.
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir_path) override;
  // Follows up to 40 links (ELOOP past that, as the kernel does).
  absl::StatusOr<std::string> ResolveLinks(const std::string& path) override;

  // From now on RenameNoReplace takes its link(2) and unlink(2) path, as on a file system that
  // refuses RENAME_NOREPLACE.
  void UseLinkForRenameNoReplaceForTesting() {
    link_for_no_replace_.store(true, std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> link_for_no_replace_{false};
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_POSIX_FS_H_
