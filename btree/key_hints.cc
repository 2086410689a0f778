#include "btree/key_hints.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "base/compare.h"

namespace journalkv::btree {
namespace {

// The four bytes of `key` after its first `p`, big-endian, zero-padded. REQUIRES: size >= p.
uint32_t HeadAfter(absl::string_view key, size_t p) {
  const size_t n = key.size() - p;
  const auto* b = reinterpret_cast<const uint8_t*>(key.data() + p);
  if (n >= 4) {
    uint32_t word;
    std::memcpy(&word, b, 4);
    return __builtin_bswap32(word);
  }
  uint32_t head = 0;
  for (size_t i = 0; i < n; ++i) head |= uint32_t{b[i]} << (24 - 8 * i);
  return head;
}

// The first i in [0, n) with heads[i] >= head, or n. Each step halves the range with a
// conditional move, not a branch.
int FirstAtLeast(const uint32_t* heads, int n, uint32_t head) {
  if (n == 0) return 0;
  const uint32_t* base = heads;
  int len = n;
  while (len > 1) {
    const int half = len / 2;
    // Arithmetic, not `?:`: GCC turned the conditional into a branch (BM_InteriorUpperBound).
    base += static_cast<int>(base[half - 1] < head) * half;
    len -= half;
  }
  return static_cast<int>(base - heads) + (*base < head ? 1 : 0);
}

}  // namespace

std::unique_ptr<KeyHints> KeyHints::Build(const PageView& view) {
  const int n = view.cell_count();
  if (n < kMinCells) return nullptr;
  const absl::string_view first = view.key(0);
  const absl::string_view last = view.key(n - 1);
  if (view.damaged()) return nullptr;
  const size_t shorter = std::min(first.size(), last.size());
  size_t p = 0;
  while (p < shorter && first[p] == last[p]) ++p;
  static_assert(sizeof(KeyHints) % alignof(uint32_t) == 0);
  void* memory = ::operator new(AllocationSize(static_cast<uint32_t>(p), n));
  std::unique_ptr<KeyHints> hints(new (memory) KeyHints(static_cast<uint32_t>(p), n));
  std::memcpy(hints->prefix_bytes(), first.data(), p);
  for (int i = 0; i < n; ++i) {
    const absl::string_view key = view.key(i);
    if (view.damaged() || key.size() < p || std::memcmp(key.data(), first.data(), p) != 0) {
      return nullptr;
    }
    hints->heads()[i] = HeadAfter(key, p);
  }
  return hints;
}

int KeyHints::Search(const PageView& view, absl::string_view key, bool upper) const {
  const size_t p = prefix_size_;
  if (p > 0) {
    // A key shorter than the prefix that begins like it sorts first, as CompareBytes says.
    const int c = base::CompareBytes(key.substr(0, p), prefix());
    if (c < 0) return 0;             // below every key of the page
    if (c > 0) return cell_count_;   // above every key of the page
  }
  const uint32_t head = HeadAfter(key, p);
  // [lo, hi): the cells whose heads tie with the key's, found without a branch per probe (the
  // plain search's branches go either way at random).
  int lo = FirstAtLeast(heads(), cell_count_, head);
  if (lo == cell_count_ || heads()[lo] != head) return lo;  // no tie: the heads decide
  int hi = lo + 1;
  if (hi < cell_count_ && heads()[hi] == head) {
    hi = head == UINT32_MAX ? cell_count_
                            : hi + FirstAtLeast(heads() + hi, cell_count_ - hi, head + 1);
  }
  while (lo < hi) {  // only the whole keys tell
    const int mid = lo + (hi - lo) / 2;
    const int c = base::CompareBytes(view.key(mid), key);
    if (upper ? c <= 0 : c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

int KeyHints::LowerBound(const PageView& view, absl::string_view key, bool* exact) const {
  const int i = Search(view, key, /*upper=*/false);
  // A different head is a different key: the cell is read only when it may be the key.
  *exact = i < cell_count_ && prefix_size_ <= key.size() &&
           heads()[i] == HeadAfter(key, prefix_size_) && view.key(i) == key;
  return i;
}

int KeyHints::UpperBound(const PageView& view, absl::string_view key) const {
  return Search(view, key, /*upper=*/true);
}

}  // namespace journalkv::btree
