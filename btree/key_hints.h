// KeyHints: a search aid kept with a b-tree page's image (a pager::PageDecoration, K1-K3 in
// pager/page_access.h). It holds the key prefix that every key of the page shares and, for
// each cell in key order, the four bytes of its key that follow that prefix as one big-endian
// integer (its head). A binary search then compares integers in one small array and reads a
// cell only where two heads tie; the plain search reads the cell pointer and the cell at every
// probe, each probe a different cache line of the page and a branch the CPU cannot predict.
//
// Why heads order keys: every key k of the page starts with the prefix P (keys between the
// first and the last share their common prefix), so k's order against a search key that also
// starts with P is decided by the bytes after P. The head is those bytes' first four, zero-
// padded: a head strictly below another's belongs to a key strictly below the other's (the
// first byte that differs is a real byte of both, or the shorter key is a prefix of the
// other). Equal heads decide nothing, and the search compares the whole keys there.
//
// Where: interior pages only (btree.cc, HintsFor), whose searches, some eight probes over a
// page the CPU's caches hold, were mostly mispredicted branches; a leaf's search ends at a cell
// it must read anyway, and hints an allocation apart from it measured no faster there.
//
// Size: 16 bytes, 4 bytes per cell and the prefix: about 550 bytes for an interior page of 130
// cells (13% of a 4 KiB page); interior pages are about 1% of a tree's pages.
//
// Internal to btree/. Immutable once built; safe to search from any thread.
#ifndef JOURNALKV_BTREE_KEY_HINTS_H_
#define JOURNALKV_BTREE_KEY_HINTS_H_

#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"
#include "btree/btree_page.h"
#include "pager/page_access.h"

namespace journalkv::btree {

class KeyHints final : public pager::PageDecoration {
 public:
  // Pages with fewer cells search as fast without.
  static constexpr int kMinCells = 8;

  // The hints of the page `view` reads, or nullptr when it has fewer than kMinCells cells, a
  // damaged cell (marking `view` damaged) or keys that do not share the prefix of its first
  // and last (a damaged order: the plain search then answers as it always did).
  static std::unique_ptr<KeyHints> Build(const PageView& view);

  // PageView::LowerBound and UpperBound of the page the hints were built from, which `view`
  // must read. Cells read to break a tie may mark `view` damaged, as the plain search does.
  int LowerBound(const PageView& view, absl::string_view key, bool* exact) const;
  int UpperBound(const PageView& view, absl::string_view key) const;

  int cell_count() const { return cell_count_; }
  absl::string_view prefix() const { return absl::string_view(prefix_bytes(), prefix_size_); }
  size_t memory_bytes() const { return AllocationSize(prefix_size_, cell_count_); }

  // One allocation holds the object, its heads and its prefix (a search meets one or two
  // cache lines of them, not three separate objects).
  static void operator delete(void* p) { ::operator delete(p); }

 private:
  KeyHints(uint32_t prefix_size, int cell_count)
      : prefix_size_(prefix_size), cell_count_(cell_count) {}
  static size_t AllocationSize(uint32_t prefix_size, int cell_count) {
    return sizeof(KeyHints) + sizeof(uint32_t) * cell_count + prefix_size;
  }

  // The head of cell i is heads()[i]; the prefix follows the heads.
  uint32_t* heads() { return reinterpret_cast<uint32_t*>(this + 1); }
  const uint32_t* heads() const { return reinterpret_cast<const uint32_t*>(this + 1); }
  char* prefix_bytes() { return reinterpret_cast<char*>(heads() + cell_count_); }
  const char* prefix_bytes() const { return reinterpret_cast<const char*>(heads() + cell_count_); }

  // The first index whose key is >= `key` (upper: > `key`).
  int Search(const PageView& view, absl::string_view key, bool upper) const;

  const uint32_t prefix_size_;
  const int cell_count_;
};

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_KEY_HINTS_H_
