// The memory map's zero-copy read path (pager/mapped_pages.h O5..O7) and its floor.
//
// BM_MapFloor: what a point read past the cache costs without the engine: three binary
// searches of 16-byte keys, in a root page, one of 32 interior pages and one of `leaves`
// random leaf pages of a file read in place through a read-only shared map (the pages of a
// 200,000-key tree, about 7,000 of 4 KiB). No locks, no checks, no snapshot: the bound an
// engine reading the same map approaches.
// BM_MappedPage: MappedPages::Page on a page whose check is trusted (a stamp of the key, O6)
// and on one checked at every call (key 0, an odd epoch's, O5): what "verified once" saves.
// BM_LogFrameRead: WalLog::ReadPage of a random frame of a 7,000-frame log (the kernel's cache
// holds it), with pread (map:0) and as a guarded copy out of the log's map (map:1;
// wal/wal_connection.h Q1): what the map saves a point read whose leaf is in the log, before
// the checksum and the cache insert both ways pay.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "pager/db_format.h"
#include "pager/mapped_pages.h"
#include "vfs/posix_fs.h"
#include "vfs/read_map.h"

namespace journalkv {
namespace {

constexpr uint32_t kPage = 4096;
constexpr int kKeysPerPage = 200;  // 16-byte keys, a 4 KiB page's worth with room to spare
constexpr int kKeySize = 16;

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, ".", ::getpid());
}

// A file of `pages` pages, each kKeysPerPage sorted keys, sealed as database pages.
int MakeFile(const std::string& path, uint32_t pages) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  std::vector<uint8_t> page(kPage);
  for (uint32_t p = 1; p <= pages; ++p) {
    std::memset(page.data(), 0, kPage);
    for (int k = 0; k < kKeysPerPage; ++k) {
      std::snprintf(reinterpret_cast<char*>(page.data()) + k * kKeySize, kKeySize, "k%06u%08d",
                    p, k * 2);
    }
    pager::SealPage(PageNo(p), absl::MakeSpan(page));
    if (::pwrite(fd, page.data(), kPage, uint64_t{p - 1} * kPage) != kPage) return -1;
  }
  return fd;
}

// The index of the first key >= `key` among a page's sorted keys.
int Search(const uint8_t* page, const char* key) {
  int lo = 0, hi = kKeysPerPage;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (std::memcmp(page + mid * kKeySize, key, kKeySize) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void BM_MapFloor(benchmark::State& state) {
  const uint32_t leaves = static_cast<uint32_t>(state.range(0));
  const uint32_t pages = 1 + 32 + leaves;
  const std::string path = TempPath("map_floor");
  const int fd = MakeFile(path, pages);
  if (fd < 0) {
    state.SkipWithError("cannot write the file");
    return;
  }
  void* p = ::mmap(nullptr, uint64_t{pages} * kPage, PROT_READ, MAP_SHARED, fd, 0);
  const auto* base = static_cast<const uint8_t*>(p);
  std::mt19937 rng(7);
  std::vector<uint32_t> picks(1 << 16);
  for (uint32_t& x : picks) x = 33 + rng() % leaves;
  char key[kKeySize] = {};
  std::snprintf(key, sizeof key, "k%06u%08d", 1u, 101);
  size_t i = 0;
  int sum = 0;
  for (auto _ : state) {
    const uint32_t leaf = picks[i++ & (picks.size() - 1)];
    sum += Search(base, key);                                       // the root
    sum += Search(base + uint64_t{1 + leaf % 32} * kPage, key);     // an interior page
    sum += Search(base + uint64_t{leaf - 1} * kPage, key);          // a leaf
    benchmark::DoNotOptimize(sum);
  }
  ::munmap(p, uint64_t{pages} * kPage);
  ::close(fd);
  ::unlink(path.c_str());
}
BENCHMARK(BM_MapFloor)->Arg(7000)->Arg(35000);

void BM_MappedPage(benchmark::State& state) {
  const bool trusted = state.range(0) != 0;
  const uint32_t pages = 64;
  const std::string path = TempPath("mapped_page");
  const int fd = MakeFile(path, pages);
  vfs::PosixFileSystem fs;
  auto file = fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase});
  if (fd < 0 || !file.ok() || !(*file)->EnableReadMap(1 << 20).ok()) {
    state.SkipWithError("cannot map the file");
    return;
  }
  pager::MappedPages mapped((*file)->read_map(), kPage, path);
  const uint64_t key = trusted ? mapped.BeginRead(/*db_epoch=*/2).key : 0;
  uint32_t n = 0;
  for (auto _ : state) {
    const uint8_t* bytes = mapped.Page(PageNo(2 + (n++ & 31)), key);
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["checks/op"] =
      benchmark::Counter(static_cast<double>(mapped.checks()), benchmark::Counter::kAvgIterations);
  ::close(fd);
  ::unlink(path.c_str());
}
BENCHMARK(BM_MappedPage)->Arg(1)->Arg(0);

void BM_LogFrameRead(benchmark::State& state) {
  const bool map = state.range(0) != 0;
  constexpr uint32_t kFrames = 7000;
  const std::string path = TempPath(map ? "log_frames_mapped" : "log_frames");
  vfs::PosixFileSystem fs;
  ::unlink(path.c_str());
  auto log = wal::WalLog::Open(&fs, path, /*read_only=*/false, wal::kGrowBytes,
                               map ? uint64_t{1} << 30 : 0);
  if (!log.ok()) {
    state.SkipWithError("cannot open the log");
    return;
  }
  wal::WalHeader header{kPage, 1, 0x11, 0x22};
  auto seed = (*log)->WriteHeader(header);
  if (!seed.ok()) {
    state.SkipWithError("cannot write the header");
    return;
  }
  uint64_t chain = *seed;
  std::vector<uint8_t> image(kPage);
  for (uint32_t f = 1; f <= kFrames; ++f) {
    std::memset(image.data(), static_cast<int>(f), kPage);
    base::EncodeFixed64(image.data() + kPage - 8, wal::ImageChecksum(2 + f, image));
    wal::FramePage page{PageNo(2 + f), image};
    auto next = (*log)->Append(header, f, chain, {&page, 1}, f == kFrames ? kFrames + 2 : 0);
    if (!next.ok()) {
      state.SkipWithError("cannot append");
      return;
    }
    chain = *next;
  }
  std::mt19937 rng(7);
  std::vector<uint32_t> picks(1 << 16);
  for (uint32_t& x : picks) x = 1 + rng() % kFrames;
  std::vector<uint8_t> out(kPage);
  size_t i = 0;
  for (auto _ : state) {
    if (!(*log)->ReadPage(picks[i++ & (picks.size() - 1)], kPage, absl::MakeSpan(out)).ok()) {
      state.SkipWithError("read failed");
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["mapped/op"] = benchmark::Counter(
      static_cast<double>((*log)->map_counters().copies), benchmark::Counter::kAvgIterations);
  log->reset();
  ::unlink(path.c_str());
}
BENCHMARK(BM_LogFrameRead)->ArgName("map")->Arg(0)->Arg(1);

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
