// The disk's flush floor: what one durable 4 KiB write costs here, with no engine at all. A
// durable commit can be no cheaper than its flush, so these figures bound every commit-rate
// claim of jkvbench on the same machine (bench/README.md, "WAL mode", uses them that way).
//
//   BM_FlushOverwrite/4096   a page-aligned 4 KiB overwrite of a preallocated file, fdatasync
//   BM_FlushOverwrite/4120   a 4 KiB page with a 24-byte frame header (a WAL frame of journalkv
//                            or SQLite): unaligned, so it dirties two file pages per write
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
#include "benchmark/benchmark.h"

namespace {

constexpr int kSlots = 1000;

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  if (dir == nullptr) dir = std::getenv("TMPDIR");
  if (dir == nullptr) dir = "/tmp";
  return absl::StrCat(dir, "/jkv_flush_benchmark_", name, "_", getpid());
}

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, AlignedFree>;

Buffer AlignedBuffer(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return nullptr;
  std::memset(p, 0x5a, bytes);
  return Buffer(static_cast<uint8_t*>(p));
}

// A file of `bytes` written and synced once, so overwrites change neither size nor extents.
int Preallocated(const std::string& path, size_t bytes, int extra_flags) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  Buffer zeros = AlignedBuffer(1 << 20);
  for (size_t at = 0; at < bytes; at += 1 << 20) {
    const size_t n = bytes - at < (1 << 20) ? bytes - at : (1 << 20);
    if (pwrite(fd, zeros.get(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
      close(fd);
      return -1;
    }
  }
  fsync(fd);
  close(fd);
  return open(path.c_str(), O_RDWR | extra_flags);
}

void BM_FlushOverwrite(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  const std::string path = TempPath("overwrite");
  const int fd = Preallocated(path, len * kSlots + 4096, 0);
  Buffer buf = AlignedBuffer(len + 4096);
  if (fd < 0 || buf == nullptr) {
    state.SkipWithError(absl::StrCat(path, ": ", std::strerror(errno)).c_str());
    return;
  }
  int slot = 0;
  for (auto _ : state) {
    const off_t at = static_cast<off_t>(len) * slot;
    slot = (slot + 1) % kSlots;
    if (pwrite(fd, buf.get(), len, at) != static_cast<ssize_t>(len) || fdatasync(fd) != 0) {
      state.SkipWithError(std::strerror(errno));
      break;
    }
  }
  close(fd);
  unlink(path.c_str());
}
BENCHMARK(BM_FlushOverwrite)->Arg(4096)->Arg(4120)->UseRealTime();

void BM_FlushAppend(benchmark::State& state) {
  const std::string path = TempPath("append");
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  Buffer buf = AlignedBuffer(4096);
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
  const int fd = Preallocated(path, size_t{4096} * kSlots, O_DIRECT | O_DSYNC);
  Buffer buf = AlignedBuffer(4096);
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
