// The disk's flush floor: how many durable 4 KiB overwrites (pwrite + fdatasync of a
// preallocated file) the disk under a directory takes per second, with no engine at all. A
// durable commit costs at least one such flush, so the floor bounds every commit rate measured
// on the same disk: jkvbench measures it at the start of a run at sync full or extra and prints
// each durable case's commits per second as a multiple of it ("x floor"), and
// flush_benchmark.cc (BM_FlushOverwrite and friends) is built on the same pieces.
//
//   absl::StatusOr<FlushFloor> floor = MeasureFlushFloor(dir, /*seconds=*/1.0);
//   floor->per_second   // flushes per second; floor->MicrosEach() the time of one
//
// The measurement cycles over kFloorSlots 4 KiB slots of a 4 MiB file written and synced
// beforehand (so that no overwrite changes the file's size or extents), as an engine that
// overwrites its log in place does; the file is removed afterwards.
//
// Thread-safety: plain functions; the process's other threads should be idle while measuring.
#ifndef JOURNALKV_BENCH_FLUSH_FLOOR_H_
#define JOURNALKV_BENCH_FLUSH_FLOOR_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace journalkv::bench {

// The slots one floor measurement cycles over.
inline constexpr int kFloorSlots = 1000;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, FreeDeleter>;

// `bytes` bytes aligned to 4 KiB (good for O_DIRECT), filled with 0x5a; nullptr when memory ran
// out.
AlignedBytes AlignedBuffer(size_t bytes);

// Creates `path` with `bytes` bytes written and synced, then opens it again with O_RDWR |
// extra_flags. Returns the descriptor, or -1 with errno set (the file may be left behind).
int OpenPreallocated(const std::string& path, size_t bytes, int extra_flags);

// One durable overwrite: `len` bytes of `buf` at `at`, then fdatasync. False with errno set.
bool OverwriteAndSync(int fd, const uint8_t* buf, size_t len, off_t at);

struct FlushFloor {
  double per_second = 0;  // overwrites + fdatasync per second
  uint64_t flushes = 0;   // how many the measurement made
  double seconds = 0;     // in how long
  std::string dir;        // the directory whose disk it measured

  double MicrosEach() const { return per_second > 0 ? 1e6 / per_second : 0; }
};

// Measures the floor of the disk under the existing directory `dir` for about `seconds`
// (at least one flush). FailedPrecondition naming the file and the error when a write, a sync
// or the file's creation fails.
absl::StatusOr<FlushFloor> MeasureFlushFloor(const std::string& dir, double seconds);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_FLUSH_FLOOR_H_
