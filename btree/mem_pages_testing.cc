#include "btree/mem_pages_testing.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace journalkv::btree {

MemPages::MemPages(uint32_t page_size) : page_size_(page_size) {
  JKV_CHECK(pager::IsValidPageSize(page_size));
  pages_.push_back(std::make_shared<pager::PageBuffer>(page_size_));  // page 1: the header
  is_free_.assign(2, false);
}

absl::Status MemPages::CheckPage(PageNo page_no) const {
  if (page_no.value() < 2 || page_no.value() > page_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mem page ", page_no.value(), " is not a page of 2..", page_count()));
  }
  if (damaged_.contains(page_no.value())) {
    return absl::DataLossError(absl::StrCat("mem page ", page_no.value(), ": checksum mismatch"));
  }
  return absl::OkStatus();
}

absl::StatusOr<pager::PageRef> MemPages::Get(PageNo page_no) {
  ++get_calls_;
  JKV_RETURN_IF_ERROR(CheckPage(page_no));
  return pager::PageRef(page_no, pages_[page_no.value() - 1], usable_size(),
                        pager::PageRef::Bytes::kChanging);  // GetMutable writes in place
}

absl::StatusOr<absl::Span<uint8_t>> MemPages::GetMutable(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckPage(page_no));
  return absl::Span<uint8_t>(pages_[page_no.value() - 1]->bytes.get(), usable_size());
}

absl::StatusOr<pager::MutablePage> MemPages::Allocate() {
  PageNo page_no;
  if (!free_.empty()) {
    page_no = free_.back();
    free_.pop_back();
    is_free_[page_no.value()] = false;
    std::memset(pages_[page_no.value() - 1]->bytes.get(), 0, page_size_);
  } else {
    pages_.push_back(std::make_shared<pager::PageBuffer>(page_size_));
    is_free_.push_back(false);
    page_no = PageNo(page_count());
  }
  return pager::MutablePage{
      page_no, absl::Span<uint8_t>(pages_[page_no.value() - 1]->bytes.get(), usable_size())};
}

absl::Status MemPages::Free(PageNo page_no) {
  if (page_no.value() < 2 || page_no.value() > page_count() || is_free_[page_no.value()]) {
    return absl::InternalError(
        absl::StrCat("mem page ", page_no.value(), ": freed but not in use"));
  }
  is_free_[page_no.value()] = true;
  free_.push_back(page_no);
  std::memset(pages_[page_no.value() - 1]->bytes.get(), 0xDB, page_size_);
  return absl::OkStatus();
}

std::vector<PageNo> MemPages::FreePages() const {
  std::vector<PageNo> out = free_;
  std::sort(out.begin(), out.end());
  return out;
}

absl::Span<uint8_t> MemPages::RawPageForTesting(PageNo page_no) {
  JKV_CHECK(page_no.value() >= 1 && page_no.value() <= page_count());
  return absl::Span<uint8_t>(pages_[page_no.value() - 1]->bytes.get(), usable_size());
}

}  // namespace journalkv::btree
