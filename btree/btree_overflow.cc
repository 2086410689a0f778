#include "btree/btree_overflow.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_macros.h"

namespace journalkv::btree {

namespace {

// Checks the header of overflow page `page` and returns its next pointer.
absl::StatusOr<PageNo> OverflowNext(const pager::PageRef& page) {
  const absl::Span<const uint8_t> data = page.data();
  if (data[kTypeOffset] != static_cast<uint8_t>(PageType::kOverflow)) {
    return absl::DataLossError(absl::StrCat("page ", page.page_no().value(),
                                            ": expected an overflow page, found type byte 0x",
                                            absl::Hex(data[kTypeOffset], absl::kZeroPad2)));
  }
  return PageNo(base::DecodeFixed32(data.data() + kOverflowNextOffset));
}

absl::Status ChainLengthError(PageNo leaf, const LeafCell& cell, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("page ", leaf.value(), ": overflow chain of the value of ", cell.value_size,
                   " bytes starting at page ", cell.overflow_page.value(), " is ", what));
}

}  // namespace

absl::StatusOr<pager::PageRef> GetReferencedPage(pager::PageReader& pages, PageNo page_no,
                                                 PageNo referrer) {
  if (page_no.value() < 2 || page_no.value() > pages.page_count()) {
    return absl::DataLossError(absl::StrCat("page ", referrer.value(), ": points to page ",
                                            page_no.value(), ", outside 2..", pages.page_count()));
  }
  return pages.Get(page_no);
}

absl::StatusOr<PageNo> WriteOverflowChain(pager::PageWriter& pages, absl::string_view data) {
  const uint32_t capacity = OverflowCapacity(pages.usable_size());
  PageNo first;
  uint8_t* prev_next = nullptr;  // the next_page field of the previous page
  while (!data.empty()) {
    JKV_ASSIGN_OR_RETURN(pager::MutablePage page, pages.Allocate());
    uint8_t* p = page.data.data();
    std::memset(p, 0, kOverflowHeaderSize);
    p[kTypeOffset] = static_cast<uint8_t>(PageType::kOverflow);
    const size_t n = std::min<size_t>(capacity, data.size());
    std::memcpy(p + kOverflowHeaderSize, data.data(), n);
    data.remove_prefix(n);
    if (prev_next == nullptr) {
      first = page.page_no;
    } else {
      base::EncodeFixed32(prev_next, page.page_no.value());
    }
    prev_next = p + kOverflowNextOffset;
  }
  return first;
}

absl::Status ReadValue(pager::PageReader& pages, PageNo leaf, const LeafCell& cell,
                       std::string* value) {
  const uint32_t capacity = OverflowCapacity(pages.usable_size());
  // A chain cannot have more pages than the database: a damaged value_size is refused here
  // instead of by the chain's end, after a buffer of up to 1 GiB was allocated for it (the
  // journal fuzzer's 20 KB databases allocated 50 MB per read).
  const uint64_t chain_pages =
      (uint64_t{cell.value_size} - cell.local_value.size() + capacity - 1) / capacity;
  if (chain_pages > pages.page_count()) return ChainLengthError(leaf, cell, "too short");
  value->resize(cell.value_size);
  char* dst = value->data();
  if (!cell.local_value.empty()) {
    std::memcpy(dst, cell.local_value.data(), cell.local_value.size());
  }
  size_t done = cell.local_value.size();
  PageNo page_no = cell.overflow_page;
  PageNo referrer = leaf;
  while (done < cell.value_size) {
    if (page_no.value() == 0) return ChainLengthError(leaf, cell, "too short");
    JKV_ASSIGN_OR_RETURN(pager::PageRef page, GetReferencedPage(pages, page_no, referrer));
    JKV_ASSIGN_OR_RETURN(PageNo next, OverflowNext(page));
    const size_t n = std::min<size_t>(capacity, cell.value_size - done);
    std::memcpy(dst + done, page.data().data() + kOverflowHeaderSize, n);
    done += n;
    referrer = page_no;
    page_no = next;
  }
  if (page_no.value() != 0) return ChainLengthError(leaf, cell, "too long");
  return absl::OkStatus();
}

absl::Status FreeOverflowChain(pager::PageWriter& pages, PageNo leaf, const LeafCell& cell) {
  const uint32_t count = OverflowPageCount(pages.usable_size(),
                                           static_cast<uint32_t>(cell.key.size()), cell.value_size);
  PageNo page_no = cell.overflow_page;
  PageNo referrer = leaf;
  for (uint32_t i = 0; i < count; ++i) {
    if (page_no.value() == 0) return ChainLengthError(leaf, cell, "too short");
    JKV_ASSIGN_OR_RETURN(pager::PageRef page, GetReferencedPage(pages, page_no, referrer));
    JKV_ASSIGN_OR_RETURN(PageNo next, OverflowNext(page));
    JKV_RETURN_IF_ERROR(pages.Free(page_no));
    referrer = page_no;
    page_no = next;
  }
  if (page_no.value() != 0) return ChainLengthError(leaf, cell, "too long");
  return absl::OkStatus();
}

}  // namespace journalkv::btree
