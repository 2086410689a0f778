// The absl::Status values every vfs/ file system returns for a failed operation, so that
// PosixFileSystem, MemFileSystem and FaultInjectingFileSystem report the same failure with the
// same code and message, and a test written against one holds for the others.
//
// errno -> code, chosen by what the caller should do next:
//   ENOSPC, EDQUOT        -> ResourceExhausted  (disk full: free space, then retry)
//   ENOENT                -> NotFound           (a file that must exist does not)
//   EEXIST                -> AlreadyExists      (exclusive create of a present file)
//   EACCES, EPERM, EROFS  -> PermissionDenied
//   EISDIR                -> InvalidArgument    (a directory where a file was expected)
//   everything else, EIO included -> Internal   (DataLoss is reserved for checksum damage,
//                                                which only the format layers can detect)
// Messages read "<context>: <strerror text>", e.g. "x.db: pwrite at offset 4096: No space left
// on device"; the context names the file and the operation. EISDIR reads "<context>: is a
// directory".
//
// Thread-safety: all functions are thread-safe.
#ifndef JOURNALKV_VFS_ERRNO_STATUS_H_
#define JOURNALKV_VFS_ERRNO_STATUS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace journalkv::vfs {

// The status code for errno value err (table above).
absl::StatusCode ErrnoToStatusCode(int err);

// A status with code ErrnoToStatusCode(err) and message "<context>: <strerror(err)>".
absl::Status ErrnoToStatus(int err, absl::string_view context);

// OutOfRange for a read of `wanted` bytes at `offset` that found only `available` bytes before
// the end of the file: "x.db: read of 4096 bytes at offset 8192: only 100 bytes available".
absl::Status ShortReadError(absl::string_view path, uint64_t offset, size_t wanted,
                            uint64_t available);

// What a file system that allocates a shared region before mapping it (vfs.h,
// MapSharedRegion) returns when it cannot: ErrnoToStatus(err, "<path>: fallocate of <length>
// bytes at offset <offset>"), and for ENOSPC ResourceExhausted that says the disk is full.
absl::Status MappingAllocationError(int err, absl::string_view path, uint64_t offset,
                                    uint64_t length);

// FailedPrecondition for operation `op` (e.g. "pwrite") on a file opened read-only:
// "x.db: pwrite: opened read-only".
absl::Status ReadOnlyError(absl::string_view path, absl::string_view op);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_ERRNO_STATUS_H_
