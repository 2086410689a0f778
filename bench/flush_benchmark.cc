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
//   BM_FlushOverwrite/16512, /33024   4 and 8 such frames in one write and one fdatasync: what
//                            a flush shared by 4 or 8 commits costs the disk
//   BM_FlushAppend           a 4 KiB append, fdatasync (the file size must reach the disk too)
//   BM_FlushDirectDsync      an aligned 4 KiB O_DIRECT|O_DSYNC overwrite (no page cache; the
//                            flush is the write's own), when the file system allows it
//   BM_FlushGroup/threads:N  N threads, each making durable 4,128-byte overwrites of its own
//                            slots and sharing flushes in the plainest way: the writes take
//                            turns under a mutex; a writer whose write no flush covers yet
//                            either runs the next fdatasync at once (covering every write made
//                            before it began) or sleeps until one covers it. No engine: what
//                            N writers reach on this machine with nothing to do but write and
//                            wait, beside which jkvbench's `contention --writer-keys=own` is
//                            read (items/s are the N threads' together)
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
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
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
BENCHMARK(BM_FlushOverwrite)->Arg(4096)->Arg(4128)->Arg(4 * 4128)->Arg(8 * 4128)->UseRealTime();

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

// The state the threads of BM_FlushGroup share: one file, the count of writes made and the
// count a finished flush covers.
struct FlushGroup {
  std::mutex mu;
  std::condition_variable flushed;
  int fd = -1;
  uint64_t written = 0;   // writes made (each numbered by this count after it)
  uint64_t durable = 0;   // writes 1..durable are covered by a finished fdatasync
  uint64_t flushes = 0;   // fdatasync calls made
  bool flushing = false;  // a thread is in fdatasync
  bool failed = false;
};
FlushGroup* group = nullptr;  // set up and torn down by thread 0, outside the timed loop

// One durable write of `len` bytes at `at`; false when a call failed.
bool GroupCommit(FlushGroup& g, const uint8_t* buf, size_t len, off_t at) {
  std::unique_lock<std::mutex> lock(g.mu);
  if (pwrite(g.fd, buf, len, at) != static_cast<ssize_t>(len)) g.failed = true;
  const uint64_t mine = ++g.written;
  while (g.durable < mine && !g.failed) {
    if (g.flushing) {
      g.flushed.wait(lock);
      continue;
    }
    g.flushing = true;
    const uint64_t covers = g.written;  // every write made before the sync begins
    lock.unlock();
    const bool ok = fdatasync(g.fd) == 0;
    lock.lock();
    g.flushing = false;
    ++g.flushes;
    if (!ok) g.failed = true;
    if (covers > g.durable) g.durable = covers;
    g.flushed.notify_all();
  }
  return !g.failed;
}

void BM_FlushGroup(benchmark::State& state) {
  constexpr size_t kLen = 4128;  // a 4 KiB page and its 32-byte frame header
  const std::string path = TempPath("group");
  if (state.thread_index() == 0) {
    group = new FlushGroup;
    group->fd = OpenPreallocated(path, kLen * kSlots + 4096, 0);
  }
  AlignedBytes buf = AlignedBuffer(kLen + 4096);
  // The threads take slots apart, so no two write one slot (the loop starts on all threads
  // together, after thread 0's setup).
  const int threads = state.threads();
  int slot = state.thread_index();
  for (auto _ : state) {
    if (group->fd < 0 || buf == nullptr) {
      state.SkipWithError(absl::StrCat(path, ": ", std::strerror(errno)).c_str());
      break;
    }
    const off_t at = static_cast<off_t>(kLen) * slot;
    slot = (slot + threads) % (kSlots - kSlots % threads);
    if (!GroupCommit(*group, buf.get(), kLen, at)) {
      state.SkipWithError(std::strerror(errno));
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  if (state.thread_index() == 0) {  // every thread has left the loop (it ends on all together)
    // Thread 0's counter, not summed over the threads.
    state.counters["writes_per_flush"] = benchmark::Counter(
        group->flushes == 0 ? 0.0 : static_cast<double>(group->written) / group->flushes);
    if (group->fd >= 0) close(group->fd);
    unlink(path.c_str());
    delete group;
    group = nullptr;
  }
}
BENCHMARK(BM_FlushGroup)->Threads(1)->Threads(4)->Threads(8)->UseRealTime();

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
