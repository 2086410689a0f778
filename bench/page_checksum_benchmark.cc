// Micro-benchmarks of the page trailer checksum (pager/db_format.h): XXH3-64 over the first
// P - 8 bytes of a page, seeded with the page number. Every page read from the database file
// is checked once (Pager::LoadPage) and every page written is sealed once (WriteTxn commit and
// spill), so this bounds the CPU cost per page of I/O.
//
// Bytes per second count the whole page (P bytes), as the I/O that carries it does.
// Run: ./bazelw run //bench:micro -- --benchmark_filter=Checksum
#include <cstdint>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "base/hash.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "pager/db_format.h"

namespace journalkv {
namespace {

// One page of random bytes (random, so that no hash shortcut for zeroes can flatter it).
std::vector<uint8_t> RandomPage(uint32_t page_size) {
  std::vector<uint8_t> page(page_size);
  std::mt19937_64 rng(page_size);
  for (uint8_t& b : page) b = static_cast<uint8_t>(rng());
  return page;
}

// Page sizes the format allows: every power of two from 512 to 65536.
void PageSizes(benchmark::internal::Benchmark* b) {
  for (uint32_t p = pager::kMinPageSize; p <= pager::kMaxPageSize; p *= 2) b->Arg(p);
}

void BM_ComputePageChecksum(benchmark::State& state) {
  const uint32_t page_size = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> page = RandomPage(page_size);
  uint32_t n = 2;
  for (auto _ : state) {
    uint64_t sum = pager::ComputePageChecksum(PageNo(n++), page);
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * page_size);
}
BENCHMARK(BM_ComputePageChecksum)->Apply(PageSizes);

// The read-side check: compute and compare with the stored trailer.
void BM_PageChecksumOk(benchmark::State& state) {
  const uint32_t page_size = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> page = RandomPage(page_size);
  const PageNo page_no(7);
  pager::SealPage(page_no, absl::MakeSpan(page));
  for (auto _ : state) {
    bool ok = pager::PageChecksumOk(page_no, page);
    benchmark::DoNotOptimize(ok);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * page_size);
}
BENCHMARK(BM_PageChecksumOk)->Apply(PageSizes);

// The write-side step: compute and store the trailer.
void BM_SealPage(benchmark::State& state) {
  const uint32_t page_size = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> page = RandomPage(page_size);
  uint32_t n = 2;
  for (auto _ : state) {
    pager::SealPage(PageNo(n++), absl::MakeSpan(page));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * page_size);
}
BENCHMARK(BM_SealPage)->Arg(4096)->Arg(65536);

// The raw hash over the same bytes, to show what the page wrapper adds (nothing, ideally).
void BM_Xxh3(benchmark::State& state) {
  const uint32_t size = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> data = RandomPage(size);
  uint64_t seed = 2;
  for (auto _ : state) {
    uint64_t sum = base::Xxh3(data.data(), size - pager::kPageTrailerSize, seed++);
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size);
}
BENCHMARK(BM_Xxh3)->Arg(4096)->Arg(65536);

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
