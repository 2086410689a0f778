// CompareBytes: the order of keys. Byte strings compare as unsigned bytes, a proper prefix
// first, exactly as memcmp followed by the lengths (std::string_view::compare).
//
// The B+tree's binary searches call it a dozen times per point read on keys that are mostly a
// few dozen bytes, where a call into the C library's memcmp costs more than the comparison.
// This compares 8 bytes at a time inline: two unaligned loads, and on the first word that
// differs, the byte-swapped words compare as the bytes do (the first differing byte is the
// most significant one after the swap). Long keys still go to memcmp.
#ifndef JOURNALKV_BASE_COMPARE_H_
#define JOURNALKV_BASE_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace journalkv::base {

namespace internal {
// A word of 4 or 8 bytes read as big-endian: the first byte the most significant.
template <typename Word>
inline Word LoadBigEndian(const char* p) {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8);
  Word v;
  std::memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if constexpr (sizeof(Word) == 8) {
    v = __builtin_bswap64(v);
  } else {
    v = __builtin_bswap32(v);
  }
#endif
  return v;
}
// The order of two keys equal over the shorter one's length: the shorter first.
inline int CompareSizes(size_t a, size_t b) { return a < b ? -1 : (a > b ? 1 : 0); }
}  // namespace internal

// Up to this many bytes compared inline; longer keys go to memcmp (BM_CompareBytes against
// BM_KeyCompare in bench/cell_benchmark.cc).
inline constexpr size_t kCompareInlineBytes = 32;

// <0, 0 or >0 as `a` sorts before, equal to or after `b`.
inline int CompareBytes(absl::string_view a, absl::string_view b) {
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  const char* pa = a.data();
  const char* pb = b.data();
  if (n > kCompareInlineBytes) {  // the library's vector loop wins on long keys
    const int c = std::memcmp(pa, pb, n);
    return c != 0 ? c : internal::CompareSizes(a.size(), b.size());
  }
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = internal::LoadBigEndian<uint64_t>(pa + i);
    const uint64_t y = internal::LoadBigEndian<uint64_t>(pb + i);
    if (x != y) return x < y ? -1 : 1;
  }
  if (i + 4 <= n) {
    const uint32_t x = internal::LoadBigEndian<uint32_t>(pa + i);
    const uint32_t y = internal::LoadBigEndian<uint32_t>(pb + i);
    if (x != y) return x < y ? -1 : 1;
    i += 4;
  }
  for (; i < n; ++i) {
    const uint8_t x = static_cast<uint8_t>(pa[i]);
    const uint8_t y = static_cast<uint8_t>(pb[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return internal::CompareSizes(a.size(), b.size());
}

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_COMPARE_H_
