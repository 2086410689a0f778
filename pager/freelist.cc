#include "pager/freelist.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_macros.h"

namespace journalkv::pager {

absl::StatusOr<std::vector<PageNo>> WalkFreelist(PageReader& reader, const DbHeader& header) {
  std::vector<PageNo> pages;
  absl::flat_hash_set<uint32_t> seen;
  const uint32_t capacity = TrunkCapacity(reader.usable_size());
  auto add = [&](uint32_t page_no, uint32_t trunk) -> absl::Status {
    if (page_no < 2 || page_no > header.page_count || !seen.insert(page_no).second ||
        pages.size() >= header.freelist_count) {
      return absl::DataLossError(absl::StrCat("freelist trunk page ", trunk, ": bad entry ",
                                              page_no, " (page count ", header.page_count,
                                              ", freelist count ", header.freelist_count, ")"));
    }
    pages.push_back(PageNo(page_no));
    return absl::OkStatus();
  };
  uint32_t trunk = header.freelist_head.value();
  uint32_t previous = 0;
  while (trunk != 0) {
    JKV_RETURN_IF_ERROR(add(trunk, previous));
    JKV_ASSIGN_OR_RETURN(PageRef page, reader.Get(PageNo(trunk)));
    const uint8_t* p = page.data().data();
    const uint32_t n = base::DecodeFixed32(p + 4);
    if (n > capacity) {
      return absl::DataLossError(
          absl::StrCat("freelist trunk page ", trunk, ": ", n, " leaves exceed capacity"));
    }
    for (uint32_t i = 0; i < n; ++i) {
      JKV_RETURN_IF_ERROR(add(base::DecodeFixed32(p + kTrunkHeaderSize + 4 * i), trunk));
    }
    previous = trunk;
    trunk = base::DecodeFixed32(p);
  }
  if (pages.size() != header.freelist_count) {
    return absl::DataLossError(absl::StrCat("freelist holds ", pages.size(),
                                            " pages but the header counts ",
                                            header.freelist_count));
  }
  return pages;
}

}  // namespace journalkv::pager
