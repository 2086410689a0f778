// Micro-benchmarks of the b-tree page and cell formats (btree/btree_format.h,
// btree/btree_page.h) without any pager: encoding and decoding leaf and interior cells, opening
// a page view, comparing keys and the binary searches a lookup makes on every page it visits.
//
// Keys are "user" + 12 decimal digits (16 bytes, as in tree_benchmark.cc and
// engine_benchmark.cc) and inline values 100 bytes, unless an argument says otherwise.
// Run: ./bazelw run //bench:micro -- --benchmark_filter='Cell|Bound|Compare|PageView'
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/compare.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "btree/btree_format.h"
#include "btree/btree_page.h"
#include "btree/key_hints.h"
#include "pager/db_format.h"

namespace journalkv::btree {
namespace {

constexpr uint32_t kValueSize = 100;
constexpr int kLookupKeys = 1 << 12;  // pre-made lookup keys, cycled through

std::string Key(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "user%012llu", static_cast<unsigned long long>(i));
  return buf;
}

// A b-tree page of UsableSize(page_size) bytes filled with as many cells as fit. Leaf: keys
// Key(0), Key(2), Key(4), ... with kValueSize-byte values. Interior: separators Key(0), Key(2),
// ... with children 2, 3, ... The even spacing lets lookups of odd keys miss.
struct FullPage {
  std::vector<uint8_t> bytes;
  int cells = 0;
  absl::Span<const uint8_t> span() const { return bytes; }
};

FullPage MakeFullPage(uint32_t page_size, PageType type) {
  const uint32_t usable = pager::UsableSize(page_size);
  FullPage page;
  page.bytes.assign(usable, 0);
  const absl::Span<uint8_t> span = absl::MakeSpan(page.bytes);
  InitNodePage(span, type, type == PageType::kLeaf ? PageNo(0) : PageNo(2));
  const std::string value(kValueSize, 'v');
  for (int i = 0;; ++i) {
    const std::string key = Key(2 * static_cast<uint64_t>(i));
    const uint32_t size = type == PageType::kLeaf ? LeafCellSize(usable, key.size(), kValueSize)
                                                  : InteriorCellSize(key.size());
    absl::StatusOr<uint8_t*> dst = ReserveCell(PageNo(2), span, i, size);
    if (!dst.ok() || *dst == nullptr) break;
    if (type == PageType::kLeaf) {
      EncodeLeafCell(usable, key, kValueSize, value, PageNo(0), *dst);
    } else {
      EncodeInteriorCell(key, PageNo(3 + i), *dst);
    }
    page.cells = i + 1;
  }
  return page;
}

// kLookupKeys random keys within the page's key range: even (present) and odd (absent) alike.
std::vector<std::string> LookupKeys(int cells) {
  std::mt19937_64 rng(42);
  std::vector<std::string> keys;
  for (int i = 0; i < kLookupKeys; ++i) keys.push_back(Key(rng() % (2 * cells)));
  return keys;
}

// --- Cells ---------------------------------------------------------------------------------

void BM_EncodeLeafCell(benchmark::State& state) {
  const uint32_t usable = pager::UsableSize(pager::kDefaultPageSize);
  const std::string key = Key(123456);
  const std::string value(kValueSize, 'v');
  std::vector<uint8_t> dst(LeafCellSize(usable, key.size(), kValueSize));
  for (auto _ : state) {
    EncodeLeafCell(usable, key, kValueSize, value, PageNo(0), dst.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EncodeLeafCell);

// MakeLeafCell: the same, into a new string (what Put does before it knows where the cell goes).
void BM_MakeLeafCell(benchmark::State& state) {
  const uint32_t usable = pager::UsableSize(pager::kDefaultPageSize);
  const std::string key = Key(123456);
  const std::string value(kValueSize, 'v');
  for (auto _ : state) {
    std::string cell = MakeLeafCell(usable, key, kValueSize, value, PageNo(0));
    benchmark::DoNotOptimize(cell);
  }
}
BENCHMARK(BM_MakeLeafCell);

// DecodeLeafCell, with its bounds checks, of one cell in a page. Arg: value size; 100 is inline,
// 10000 overflows at 4096-byte pages (the cell then holds a prefix and a page number).
void BM_DecodeLeafCell(benchmark::State& state) {
  const uint32_t usable = pager::UsableSize(pager::kDefaultPageSize);
  const uint32_t value_size = static_cast<uint32_t>(state.range(0));
  const uint32_t local = LocalValueSize(usable, 16, value_size);
  const std::string key = Key(123456);
  const std::string prefix(local, 'v');
  std::vector<uint8_t> page(usable, 0);
  const uint32_t offset = kPageHeaderSize;
  EncodeLeafCell(usable, key, value_size, prefix, PageNo(77), page.data() + offset);
  for (auto _ : state) {
    absl::StatusOr<LeafCell> cell = DecodeLeafCell(PageNo(2), page, offset);
    benchmark::DoNotOptimize(cell);
  }
}
BENCHMARK(BM_DecodeLeafCell)->Arg(kValueSize)->Arg(10000);

// ParseLeafCell: the unchecked decoder used on cells already held in memory (splits, merges).
void BM_ParseLeafCell(benchmark::State& state) {
  const uint32_t usable = pager::UsableSize(pager::kDefaultPageSize);
  const std::string cell =
      MakeLeafCell(usable, Key(123456), kValueSize, std::string(kValueSize, 'v'), PageNo(0));
  for (auto _ : state) {
    LeafCell parsed = ParseLeafCell(usable, cell);
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(BM_ParseLeafCell);

void BM_EncodeInteriorCell(benchmark::State& state) {
  const std::string key = Key(123456);
  std::vector<uint8_t> dst(InteriorCellSize(key.size()));
  uint32_t child = 2;
  for (auto _ : state) {
    EncodeInteriorCell(key, PageNo(child++), dst.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EncodeInteriorCell);

void BM_DecodeInteriorCell(benchmark::State& state) {
  const FullPage page = MakeFullPage(pager::kDefaultPageSize, PageType::kInterior);
  absl::StatusOr<PageView> view = PageView::Open(PageNo(2), page.span());
  if (!view.ok()) {
    state.SkipWithError(view.status().ToString().c_str());
    return;
  }
  int i = 0;
  for (auto _ : state) {
    absl::StatusOr<InteriorCell> cell = view->interior_cell(i);
    benchmark::DoNotOptimize(cell);
    if (++i == page.cells) i = 0;
  }
}
BENCHMARK(BM_DecodeInteriorCell);

// --- Keys and pages ------------------------------------------------------------------------

// Two keys of `size` bytes that differ only in the last byte: the whole key compared.
// BM_KeyCompare is the C library's memcmp (string_view::compare), BM_CompareBytes the order the
// B+tree's searches use (base/compare.h): inline words for short keys, memcmp for long ones.
template <typename Compare>
void KeyCompare(benchmark::State& state, Compare compare) {
  const size_t size = static_cast<size_t>(state.range(0));
  std::string a(size, 'k');
  std::string b(size, 'k');
  b.back() = 'l';
  absl::string_view va = a;
  absl::string_view vb = b;
  for (auto _ : state) {
    benchmark::DoNotOptimize(va);
    benchmark::DoNotOptimize(vb);
    int c = compare(va, vb);
    benchmark::DoNotOptimize(c);
  }
}
void BM_KeyCompare(benchmark::State& state) {
  KeyCompare(state, [](absl::string_view x, absl::string_view y) { return x.compare(y); });
}
void BM_CompareBytes(benchmark::State& state) {
  KeyCompare(state, [](absl::string_view x, absl::string_view y) {
    return base::CompareBytes(x, y);
  });
}
BENCHMARK(BM_KeyCompare)->Arg(8)->Arg(16)->Arg(24)->Arg(64)->Arg(256)->Arg(1024);
BENCHMARK(BM_CompareBytes)->Arg(8)->Arg(16)->Arg(24)->Arg(64)->Arg(256)->Arg(1024);

// PageView::Open: the header validation every visited page pays.
void BM_PageViewOpen(benchmark::State& state) {
  const FullPage page = MakeFullPage(pager::kDefaultPageSize, PageType::kLeaf);
  for (auto _ : state) {
    absl::StatusOr<PageView> view = PageView::Open(PageNo(2), page.span());
    benchmark::DoNotOptimize(view);
  }
}
BENCHMARK(BM_PageViewOpen);

// LowerBound on a full leaf (what a point lookup does at the bottom of the tree). Arg: page
// size; the cell count is in the "cells" counter.
void BM_LeafLowerBound(benchmark::State& state) {
  const FullPage page = MakeFullPage(static_cast<uint32_t>(state.range(0)), PageType::kLeaf);
  absl::StatusOr<PageView> view = PageView::Open(PageNo(2), page.span());
  if (!view.ok()) {
    state.SkipWithError(view.status().ToString().c_str());
    return;
  }
  const std::vector<std::string> keys = LookupKeys(page.cells);
  size_t k = 0;
  for (auto _ : state) {
    bool exact = false;
    int i = view->LowerBound(keys[k++ & (kLookupKeys - 1)], &exact);
    benchmark::DoNotOptimize(i);
    benchmark::DoNotOptimize(exact);
  }
  state.counters["cells"] = page.cells;
}
BENCHMARK(BM_LeafLowerBound)->Arg(4096)->Arg(65536);

// UpperBound on a full interior page (what each level of a descent does). Arg 0: page size;
// arg 1: 1 to search through the page's KeyHints (btree/key_hints.h), as every descent of a
// read transaction does, 0 for the plain binary search over the cells.
void BM_InteriorUpperBound(benchmark::State& state) {
  const FullPage page = MakeFullPage(static_cast<uint32_t>(state.range(0)), PageType::kInterior);
  absl::StatusOr<PageView> view = PageView::Open(PageNo(2), page.span());
  if (!view.ok()) {
    state.SkipWithError(view.status().ToString().c_str());
    return;
  }
  std::unique_ptr<KeyHints> hints;
  if (state.range(1) != 0) {
    hints = KeyHints::Build(*view);
    if (hints == nullptr) {
      state.SkipWithError("no hints for the page");
      return;
    }
    view->set_hints(hints.get());
  }
  const std::vector<std::string> keys = LookupKeys(page.cells);
  size_t k = 0;
  for (auto _ : state) {
    const int i = view->UpperBound(keys[k++ & (kLookupKeys - 1)]);
    PageNo child = view->child(i);
    benchmark::DoNotOptimize(child);
  }
  state.counters["cells"] = page.cells;
}
BENCHMARK(BM_InteriorUpperBound)->ArgsProduct({{4096, 65536}, {0, 1}});

// Inserting a cell in the middle of a half-full leaf and removing it again: the in-place write
// path of Put (pointer array shift, content area bookkeeping), without defragmentation.
void BM_ReserveAndRemoveCell(benchmark::State& state) {
  const uint32_t usable = pager::UsableSize(pager::kDefaultPageSize);
  std::vector<uint8_t> bytes(usable, 0);
  const absl::Span<uint8_t> span = absl::MakeSpan(bytes);
  InitNodePage(span, PageType::kLeaf, PageNo(0));
  const std::string value(kValueSize, 'v');
  const uint32_t size = LeafCellSize(usable, 16, kValueSize);
  int n = 0;
  for (; (n + 1) * (size + kCellPointerSize) < CellSpace(usable) / 2; ++n) {
    absl::StatusOr<uint8_t*> dst = ReserveCell(PageNo(2), span, n, size);
    if (!dst.ok() || *dst == nullptr) break;
    EncodeLeafCell(usable, Key(2 * static_cast<uint64_t>(n)), kValueSize, value, PageNo(0), *dst);
  }
  const int index = n / 2;
  const std::string key = Key(2 * static_cast<uint64_t>(index) - 1);  // sorts at `index`
  for (auto _ : state) {
    absl::StatusOr<uint8_t*> dst = ReserveCell(PageNo(2), span, index, size);
    if (!dst.ok() || *dst == nullptr) {
      state.SkipWithError("ReserveCell found no room in a half-full page");
      break;
    }
    EncodeLeafCell(usable, key, kValueSize, value, PageNo(0), *dst);
    RemoveCell(span, index, size);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ReserveAndRemoveCell);

}  // namespace
}  // namespace journalkv::btree

BENCHMARK_MAIN();
