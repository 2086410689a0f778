// MemPages: an in-memory PageWriter for the tests of btree/ (and of layers above that do not
// need the real pager). Pages live in a vector of buffers; page 1 stands for the header and is
// never handed out; freed pages go to a LIFO freelist of its own and are reused by Allocate.
//
// Extra checks the real pager leaves to the structure check: freeing page 1, a page past the
// end or an already free page fails with Internal, so that a b-tree bug shows up where it
// happens. Freed pages are filled with 0xDB so that a read of a freed page finds garbage.
//
// Test-only. Thread-compatible.
#ifndef JOURNALKV_BTREE_MEM_PAGES_TESTING_H_
#define JOURNALKV_BTREE_MEM_PAGES_TESTING_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/page_access.h"

namespace journalkv::btree {

class MemPages : public pager::PageWriter {
 public:
  explicit MemPages(uint32_t page_size = pager::kDefaultPageSize);

  absl::StatusOr<pager::PageRef> Get(PageNo page_no) override;
  uint32_t page_count() const override { return static_cast<uint32_t>(pages_.size()); }
  uint32_t usable_size() const override { return pager::UsableSize(page_size_); }
  uint32_t meta(int slot) const override { return meta_[slot]; }

  absl::StatusOr<absl::Span<uint8_t>> GetMutable(PageNo page_no) override;
  absl::StatusOr<pager::MutablePage> Allocate() override;
  absl::Status Free(PageNo page_no) override;
  void set_meta(int slot, uint32_t value) override { meta_[slot] = value; }

  // The free pages, in increasing order.
  std::vector<PageNo> FreePages() const;
  uint32_t free_count() const { return static_cast<uint32_t>(free_.size()); }
  // Pages in use other than page 1: page_count() - 1 - free_count().
  uint32_t used_count() const { return page_count() - 1 - free_count(); }

  // Get and GetMutable of `page_no` fail with DataLoss from now on.
  void InjectDataLossForTesting(PageNo page_no) { damaged_.insert(page_no.value()); }
  // The bytes of a page (UsableSize of them), to damage it in tests.
  absl::Span<uint8_t> RawPageForTesting(PageNo page_no);

  uint64_t get_calls() const { return get_calls_; }

 private:
  absl::Status CheckPage(PageNo page_no) const;

  const uint32_t page_size_;
  std::vector<std::shared_ptr<pager::PageBuffer>> pages_;  // [i] is page i + 1
  std::vector<PageNo> free_;                               // LIFO
  std::vector<bool> is_free_;                              // [i] for page i
  std::array<uint32_t, pager::kNumMetaSlots> meta_{};
  absl::flat_hash_set<uint32_t> damaged_;
  uint64_t get_calls_ = 0;
};

// A read-only view of a MemPages, standing for a read transaction (a PageReader that is not a
// PageWriter).
class ReadOnlyPages : public pager::PageReader {
 public:
  explicit ReadOnlyPages(MemPages& pages) : pages_(pages) {}
  absl::StatusOr<pager::PageRef> Get(PageNo page_no) override { return pages_.Get(page_no); }
  uint32_t page_count() const override { return pages_.page_count(); }
  uint32_t usable_size() const override { return pages_.usable_size(); }
  uint32_t meta(int slot) const override { return pages_.meta(slot); }

 private:
  MemPages& pages_;
};

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_MEM_PAGES_TESTING_H_
