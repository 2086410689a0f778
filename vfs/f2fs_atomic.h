// The atomic batch of PosixFileSystem on F2FS (AtomicWriteKind::kF2fs): F2FS's multi-block
// atomic write, the primitive of the MAW design (and of SQLite's F2FS support).
//
// UNTESTED ON A REAL F2FS: the machine it was written on has no F2FS in its kernel. Only its
// calling sequence is tested, against a fake ioctl layer (f2fs_atomic_test.cc).
//
// The calling sequence, on the database's own descriptor:
//  1. Begin: ioctl(F2FS_IOC_START_ATOMIC_WRITE). From now on F2FS holds the file's written
//     pages apart (in memory, or since Linux 5.19 in a copy-on-write inode) until the commit.
//     A refusal meaning "not here" (ENOTTY, EOPNOTSUPP, EINVAL) is Unimplemented with
//     AtomicBatchUnsupportedError's message; other errors as errno_status.h maps them.
//  2. Write: pwrite on the database file (any offset and size: block size 1). Read: pread on
//     it; F2FS gives this file's readers the atomic pages (so other connections must not read
//     during a batch: the database's locks see to that, as for every in-place write).
//  3. Commit: ioctl(F2FS_IOC_COMMIT_ATOMIC_WRITE). F2FS's commit ends by syncing the file
//     itself, so both BatchSync levels are durable when it returns and no fsync is added. A
//     failed commit is followed by an abort (the pages are dropped; the error is returned).
//  4. Abort (and destroying a batch not committed): ioctl(F2FS_IOC_ABORT_ATOMIC_WRITE).
// A process that dies mid-batch leaves nothing: F2FS drops an uncommitted atomic file's pages
// when its last descriptor closes. Limits: whatever F2FS sets (its atomic pages are bounded by
// memory or the copy-on-write inode's space: a batch too large fails with an error).
//
// Thread-safety: a batch is used by one thread at a time; RealF2fsIoctls is thread-safe.
#ifndef JOURNALKV_VFS_F2FS_ATOMIC_H_
#define JOURNALKV_VFS_F2FS_ATOMIC_H_

#include <sys/ioctl.h>

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// include/uapi/linux/f2fs.h (F2FS_IOCTL_MAGIC 0xf5). Number 5 was named
// F2FS_IOC_ABORT_VOLATILE_WRITE before Linux 5.19, with the same number and effect on an
// atomic file.
inline constexpr unsigned long kF2fsIocStartAtomicWrite = _IO(0xf5, 1);
inline constexpr unsigned long kF2fsIocCommitAtomicWrite = _IO(0xf5, 2);
inline constexpr unsigned long kF2fsIocAbortAtomicWrite = _IO(0xf5, 5);

// The seam the F2FS batch calls its ioctls through (a fake in tests).
class F2fsIoctls {
 public:
  virtual ~F2fsIoctls() = default;
  // ioctl(fd, request) with no argument: 0, or the errno it failed with.
  virtual int Ioctl(int fd, unsigned long request) = 0;
};
// The real one: ::ioctl.
F2fsIoctls& RealF2fsIoctls();

// Starts an F2FS batch of `db`, whose descriptor is `fd`: its writes and reads go through db.
// `open` is db's one-batch flag, already set; the batch clears it when it ends. Commits count
// into stats under `kind`.
absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginF2fsAtomicBatch(File* db, int fd,
                                                                  F2fsIoctls* ioctls,
                                                                  IoStats* stats, FileKind kind,
                                                                  std::atomic<bool>* open);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_F2FS_ATOMIC_H_
