// The disk's flush floor: what one durable 4 KiB write costs here, with no engine at all. A
// durable commit can be no cheaper than its flush, so these figures bound every commit-rate
// claim of jkvbench on the same machine (bench/README.md, "WAL mode", uses them that way;
// jkvbench measures BM_FlushOverwrite/4096's loop itself at the start of a durable run,
// flush_floor.h, which holds the file handling these cases share).
//
//   BM_FlushOverwrite/4096   a page-aligned 4 KiB overwrite of a preallocated file, fdatasync
//   BM_FlushOverwrite/4128   a 4 KiB page with a 32-byte frame header (a WAL frame of journalkv;
//                            SQLite's header is 24 bytes): unaligned, so it dirties two file
//                            pages per write
//   BM_FlushAppend           a 4 KiB append, fdatasync (the file size must reach the disk too)
//   BM_FlushDirectDsync      an aligned 4 KiB O_DIRECT|O_DSYNC overwrite (no page cache; the
//                            flush is the write's own), when the file system allows it
//
// Every case cycles over 1,000 slots of its file (4 MiB), in $TEST_TMPDIR, $TMPDIR or /tmp:
// the disk under test is the one that directory is on.
//
// Run: ./bazelw run //bench:micro -- --benchmark_filter=BM_Flush
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/flush_floor.h"
#include "benchmark/benchmark.h"

namespace {

using journalkv::bench::AlignedBuffer;
using journalkv::bench::AlignedBytes;
using journalkv::bench::OpenPreallocated;
using journalkv::bench::OverwriteAndSync;

constexpr int kSlots = journalkv::bench::kFloorSlots;

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  if (dir == nullptr) dir = std::getenv("TMPDIR");
  if (dir == nullptr) dir = "/tmp";
  return absl::StrCat(dir, "/jkv_flush_benchmark_", name, "_", getpid());
}

void BM_FlushOverwrite(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  const std::string path = TempPath("overwrite");
  const int fd = OpenPreallocated(path, len * kSlots + 4096, 0);
  AlignedBytes buf = AlignedBuffer(len + 4096);
  if (fd < 0 || buf == nullptr) {
    state.SkipWithError(absl::StrCat(path, ": ", std::strerror(errno)).c_str());
    return;
  }
  int slot = 0;
  for (auto _ : state) {
    const off_t at = static_cast<off_t>(len) * slot;
    slot = (slot + 1) % kSlots;
    if (!OverwriteAndSync(fd, buf.get(), len, at)) {
      state.SkipWithError(std::strerror(errno));
      break;
    }
  }
  close(fd);
  unlink(path.c_str());
}
BENCHMARK(BM_FlushOverwrite)->Arg(4096)->Arg(4128)->UseRealTime();

void BM_FlushAppend(benchmark::State& state) {
  const std::string path = TempPath("append");
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  AlignedBytes buf = AlignedBuffer(4096);
  if (fd < 0 || buf == nullptr) {
    state.SkipWithError(absl::StrCat(path, ": ", std::strerror(errno)).c_str());
    return;
  }
  int slot = 0;
  for (auto _ : state) {
    if (slot == kSlots) {  // start over from an empty file, outside the timing
      state.PauseTiming();
      if (ftruncate(fd, 0) != 0 || fsync(fd) != 0) state.SkipWithError(std::strerror(errno));
      slot = 0;
      state.ResumeTiming();
    }
    const off_t at = off_t{4096} * slot++;
    if (pwrite(fd, buf.get(), 4096, at) != 4096 || fdatasync(fd) != 0) {
      state.SkipWithError(std::strerror(errno));
      break;
    }
  }
  close(fd);
  unlink(path.c_str());
}
BENCHMARK(BM_FlushAppend)->UseRealTime();

void BM_FlushDirectDsync(benchmark::State& state) {
  const std::string path = TempPath("direct");
  const int fd = OpenPreallocated(path, size_t{4096} * kSlots, O_DIRECT | O_DSYNC);
  AlignedBytes buf = AlignedBuffer(4096);
  if (fd < 0 || buf == nullptr) {
    state.SkipWithError(absl::StrCat(path, ": O_DIRECT: ", std::strerror(errno)).c_str());
    unlink(path.c_str());
    return;
  }
  int slot = 0;
  for (auto _ : state) {
    const off_t at = off_t{4096} * slot;
    slot = (slot + 1) % kSlots;
    if (pwrite(fd, buf.get(), 4096, at) != 4096) {
      state.SkipWithError(std::strerror(errno));
      break;
    }
  }
  close(fd);
  unlink(path.c_str());
}

// Whether the temporary directory's file system takes O_DIRECT (tmpfs does not).
bool DirectIoWorks() {
  const std::string path = TempPath("probe");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd >= 0) close(fd);
  unlink(path.c_str());
  return fd >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (DirectIoWorks()) {
    benchmark::RegisterBenchmark("BM_FlushDirectDsync", BM_FlushDirectDsync)->UseRealTime();
  } else {
    std::fprintf(stderr, "flush_benchmark: no O_DIRECT in %s: BM_FlushDirectDsync left out\n",
                 TempPath("").c_str());
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
