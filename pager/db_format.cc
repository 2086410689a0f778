#include "pager/db_format.h"

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/hash.h"

namespace journalkv::pager {

using base::DecodeFixed32;
using base::DecodeFixed64;
using base::EncodeFixed32;
using base::EncodeFixed64;

uint64_t ComputePageChecksum(PageNo page_no, absl::Span<const uint8_t> page) {
  return base::Xxh3(page.data(), page.size() - kPageTrailerSize, page_no.value());
}

void SealPage(PageNo page_no, absl::Span<uint8_t> page) {
  EncodeFixed64(page.data() + page.size() - kPageTrailerSize,
                ComputePageChecksum(page_no, page));
}

uint64_t StoredPageChecksum(absl::Span<const uint8_t> page) {
  return DecodeFixed64(page.data() + page.size() - kPageTrailerSize);
}

bool PageChecksumOk(PageNo page_no, absl::Span<const uint8_t> page) {
  return StoredPageChecksum(page) == ComputePageChecksum(page_no, page);
}

void EncodeDbHeader(const DbHeader& h, absl::Span<uint8_t> page) {
  uint8_t* p = page.data();
  std::memset(p, 0, page.size() - kPageTrailerSize);
  std::memcpy(p, kMagic, sizeof(kMagic));
  EncodeFixed32(p + 16, kFormatVersion);
  EncodeFixed32(p + 20, h.page_size);
  EncodeFixed64(p + 24, h.change_counter);
  EncodeFixed32(p + 32, h.page_count);
  EncodeFixed32(p + 36, h.freelist_head.value());
  EncodeFixed32(p + 40, h.freelist_count);
  p[kJournalFamilyOffset] = static_cast<uint8_t>(h.journal_family);
  for (int i = 0; i < kNumMetaSlots; ++i) EncodeFixed32(p + 48 + 4 * i, h.meta[i]);
}

absl::StatusOr<uint32_t> DecodeHeaderPrefix(absl::Span<const uint8_t> prefix,
                                            const std::string& what) {
  if (prefix.size() < kHeaderPrefixSize || std::memcmp(prefix.data(), kMagic, 16) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a journalkv database (no journalkv header)"));
  }
  const uint32_t version = DecodeFixed32(prefix.data() + 16);
  if (version > kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": format version ", version,
                     " is newer than this build of journalkv supports (", kFormatVersion, ")"));
  }
  if (version == 0) {
    return absl::DataLossError(absl::StrCat(what, ": header has format version 0"));
  }
  const uint32_t page_size = DecodeFixed32(prefix.data() + 20);
  if (!IsValidPageSize(page_size)) {
    return absl::DataLossError(
        absl::StrCat(what, ": header has invalid page size ", page_size));
  }
  return page_size;
}

absl::StatusOr<DbHeader> DecodeDbHeader(absl::Span<const uint8_t> page, const std::string& what) {
  DbHeader h;
  const uint8_t* p = page.data();
  h.page_size = DecodeFixed32(p + 20);
  h.change_counter = DecodeFixed64(p + 24);
  h.page_count = DecodeFixed32(p + 32);
  h.freelist_head = PageNo(DecodeFixed32(p + 36));
  h.freelist_count = DecodeFixed32(p + 40);
  const uint8_t family = p[44];
  for (int i = 0; i < kNumMetaSlots; ++i) h.meta[i] = DecodeFixed32(p + 48 + 4 * i);
  if (h.page_count == 0 || h.freelist_count >= h.page_count ||
      h.freelist_head.value() > h.page_count ||
      family > static_cast<uint8_t>(JournalFamily::kAtomic) ||
      (h.freelist_count == 0) != (h.freelist_head.value() == 0)) {
    return absl::DataLossError(absl::StrCat(what, ": page 1: impossible header (page_count ",
                                            h.page_count, ", freelist_head ",
                                            h.freelist_head.value(), ", freelist_count ",
                                            h.freelist_count, ")"));
  }
  h.journal_family = static_cast<JournalFamily>(family);
  return h;
}

absl::string_view JournalFamilyName(JournalFamily family) {
  switch (family) {
    case JournalFamily::kRollback:
      return "rollback";
    case JournalFamily::kWal:
      return "wal";
    case JournalFamily::kWal2:
      return "wal2";
    case JournalFamily::kAtomic:
      return "atomic";
  }
  return "?";
}

}  // namespace journalkv::pager
