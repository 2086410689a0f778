// errno_status.cc: errno values and vfs/ failures as absl::Status (see errno_status.h).
//
// Thread-safety: thread-safe (strerror_r, no shared state).
#include "vfs/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace journalkv::vfs {
namespace {

// The text strerror(3) gives for err. Uses the GNU strerror_r, which returns a pointer to either
// a static string or buf, and is thread-safe unlike strerror.
std::string ErrnoText(int err) {
  char buf[128];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

}  // namespace

absl::StatusCode ErrnoToStatusCode(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return absl::StatusCode::kResourceExhausted;
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case EISDIR:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoToStatus(int err, absl::string_view context) {
  // EISDIR is the caller's mistake (a directory where a file belongs), so it reads like our
  // other InvalidArgument messages rather than like strerror's "Is a directory".
  const std::string text = err == EISDIR ? "is a directory" : ErrnoText(err);
  return absl::Status(ErrnoToStatusCode(err), absl::StrCat(context, ": ", text));
}

absl::Status ShortReadError(absl::string_view path, uint64_t offset, size_t wanted,
                            uint64_t available) {
  return absl::OutOfRangeError(absl::StrCat(path, ": read of ", wanted, " bytes at offset ", offset,
                                            ": only ", available, " bytes available"));
}

absl::Status MappingAllocationError(int err, absl::string_view path, uint64_t offset,
                                    uint64_t length) {
  absl::Status s = ErrnoToStatus(
      err, absl::StrCat(path, ": fallocate of ", length, " bytes at offset ", offset));
  if (err != ENOSPC) return s;
  return absl::ResourceExhaustedError(absl::StrCat(
      s.message(),
      " (the disk is full: the shared memory file needs its pages on disk before it is mapped)"));
}

absl::Status ReadOnlyError(absl::string_view path, absl::string_view op) {
  return absl::FailedPreconditionError(absl::StrCat(path, ": ", op, ": opened read-only"));
}

}  // namespace journalkv::vfs
