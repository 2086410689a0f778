#include "bench/flush_floor.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace journalkv::bench {
namespace {

constexpr size_t kSlotBytes = 4096;
constexpr size_t kChunk = size_t{1} << 20;  // preallocation writes

absl::Status Failed(const std::string& path, const char* what) {
  return absl::FailedPreconditionError(
      absl::StrCat("flush floor: ", what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

AlignedBytes AlignedBuffer(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 1)) != 0) return nullptr;
  std::memset(p, 0x5a, bytes);
  return AlignedBytes(static_cast<uint8_t*>(p));
}

int OpenPreallocated(const std::string& path, size_t bytes, int extra_flags) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  AlignedBytes chunk = AlignedBuffer(kChunk);
  bool ok = chunk != nullptr;
  if (!ok) errno = ENOMEM;
  for (size_t at = 0; ok && at < bytes; at += kChunk) {
    const size_t n = std::min(kChunk, bytes - at);
    ok = ::pwrite(fd, chunk.get(), n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    errno = saved;
    return -1;
  }
  // Reopened rather than kept: extra_flags may be O_DIRECT, which the buffered writes above
  // could not have used.
  return ::open(path.c_str(), O_RDWR | extra_flags);
}

bool OverwriteAndSync(int fd, const uint8_t* buf, size_t len, off_t at) {
  return ::pwrite(fd, buf, len, at) == static_cast<ssize_t>(len) && ::fdatasync(fd) == 0;
}

absl::StatusOr<FlushFloor> MeasureFlushFloor(const std::string& dir, double seconds) {
  const std::string path = absl::StrCat(dir, "/.jkvbench-flush-floor-", ::getpid());
  const int fd = OpenPreallocated(path, kSlotBytes * kFloorSlots, 0);
  if (fd < 0) {
    absl::Status s = Failed(path, "cannot preallocate");
    ::unlink(path.c_str());
    return s;
  }
  AlignedBytes page = AlignedBuffer(kSlotBytes);
  FlushFloor floor;
  floor.dir = dir;
  absl::Status status;
  if (page == nullptr) status = absl::ResourceExhaustedError("flush floor: no memory");
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto budget = std::chrono::duration<double>(seconds);
  while (status.ok()) {
    const off_t at = static_cast<off_t>(kSlotBytes * (floor.flushes % kFloorSlots));
    if (!OverwriteAndSync(fd, page.get(), kSlotBytes, at)) {
      status = Failed(path, "cannot overwrite and fdatasync");
      break;
    }
    ++floor.flushes;
    if (Clock::now() - start >= budget) break;
  }
  floor.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  ::unlink(path.c_str());
  if (!status.ok()) return status;
  floor.per_second = floor.seconds > 0 ? floor.flushes / floor.seconds : 0;
  return floor;
}

}  // namespace journalkv::bench
