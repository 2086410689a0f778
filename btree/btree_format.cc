#include "btree/btree_format.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"

namespace journalkv::btree {

using base::DecodeFixed16;
using base::DecodeFixed32;
using base::EncodeFixed16;
using base::EncodeFixed32;

namespace {

absl::Status CellError(PageNo page_no, uint32_t offset, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("page ", page_no.value(), ": cell at offset ", offset, ": ", what));
}

}  // namespace

void EncodeLeafCell(uint32_t usable_size, absl::string_view key, uint32_t value_size,
                    absl::string_view local_value, PageNo overflow_page, uint8_t* dst) {
  EncodeFixed16(dst, static_cast<uint16_t>(key.size()));
  EncodeFixed32(dst + 2, value_size);
  uint8_t* p = dst + kCellHeaderSize;
  if (!key.empty()) std::memcpy(p, key.data(), key.size());
  p += key.size();
  if (!local_value.empty()) std::memcpy(p, local_value.data(), local_value.size());
  p += local_value.size();
  if (ValueOverflows(usable_size, static_cast<uint32_t>(key.size()), value_size)) {
    EncodeFixed32(p, overflow_page.value());
  }
}

std::string MakeLeafCell(uint32_t usable_size, absl::string_view key, uint32_t value_size,
                         absl::string_view local_value, PageNo overflow_page) {
  std::string cell(LeafCellSize(usable_size, static_cast<uint32_t>(key.size()), value_size), '\0');
  EncodeLeafCell(usable_size, key, value_size, local_value, overflow_page,
                 reinterpret_cast<uint8_t*>(cell.data()));
  return cell;
}

void EncodeInteriorCell(absl::string_view key, PageNo child, uint8_t* dst) {
  EncodeFixed16(dst, static_cast<uint16_t>(key.size()));
  EncodeFixed32(dst + 2, child.value());
  if (!key.empty()) std::memcpy(dst + kCellHeaderSize, key.data(), key.size());
}

std::string MakeInteriorCell(absl::string_view key, PageNo child) {
  std::string cell(InteriorCellSize(static_cast<uint32_t>(key.size())), '\0');
  EncodeInteriorCell(key, child, reinterpret_cast<uint8_t*>(cell.data()));
  return cell;
}

absl::StatusOr<LeafCell> DecodeLeafCell(PageNo page_no, absl::Span<const uint8_t> page,
                                        uint32_t offset) {
  LeafCell cell;
  switch (DecodeLeafCellInto(page, offset, &cell)) {
    case LeafCellProblem::kNone:
      return cell;
    case LeafCellProblem::kHeaderOutOfBounds:
      return CellError(page_no, offset, "cell header out of bounds");
    case LeafCellProblem::kImpossibleSizes:
      return CellError(page_no, offset,
                       absl::StrCat("impossible sizes (key ", DecodeFixed16(page.data() + offset),
                                    ", value ", DecodeFixed32(page.data() + offset + 2), ")"));
    case LeafCellProblem::kPastThePage:
      break;
  }
  const uint32_t usable = static_cast<uint32_t>(page.size());
  const uint32_t size = LeafCellSize(usable, DecodeFixed16(page.data() + offset),
                                     DecodeFixed32(page.data() + offset + 2));
  return CellError(page_no, offset, absl::StrCat("cell of ", size, " bytes runs past the page"));
}

absl::StatusOr<InteriorCell> DecodeInteriorCell(PageNo page_no, absl::Span<const uint8_t> page,
                                                uint32_t offset) {
  const uint32_t usable = static_cast<uint32_t>(page.size());
  if (offset < kPageHeaderSize || uint64_t{offset} + kCellHeaderSize > usable) {
    return CellError(page_no, offset, "cell header out of bounds");
  }
  const uint8_t* p = page.data() + offset;
  const uint32_t key_size = DecodeFixed16(p);
  if (key_size > MaxKeySize(usable) || uint64_t{offset} + kCellHeaderSize + key_size > usable) {
    return CellError(page_no, offset, absl::StrCat("impossible key size ", key_size));
  }
  InteriorCell cell;
  cell.size = InteriorCellSize(key_size);
  cell.child = PageNo(DecodeFixed32(p + 2));
  cell.key = absl::string_view(reinterpret_cast<const char*>(p) + kCellHeaderSize, key_size);
  return cell;
}

LeafCell ParseLeafCell(uint32_t usable_size, absl::string_view cell) {
  const auto* p = reinterpret_cast<const uint8_t*>(cell.data());
  LeafCell out;
  const uint32_t key_size = DecodeFixed16(p);
  out.value_size = DecodeFixed32(p + 2);
  out.key = cell.substr(kCellHeaderSize, key_size);
  const uint32_t local = LocalValueSize(usable_size, key_size, out.value_size);
  out.local_value = cell.substr(kCellHeaderSize + key_size, local);
  if (local < out.value_size) {
    out.overflow_page = PageNo(DecodeFixed32(p + kCellHeaderSize + key_size + local));
  }
  out.size = static_cast<uint32_t>(cell.size());
  return out;
}

InteriorCell ParseInteriorCell(absl::string_view cell) {
  const auto* p = reinterpret_cast<const uint8_t*>(cell.data());
  InteriorCell out;
  out.child = PageNo(DecodeFixed32(p + 2));
  out.key = cell.substr(kCellHeaderSize, DecodeFixed16(p));
  out.size = static_cast<uint32_t>(cell.size());
  return out;
}

absl::string_view CellKey(absl::string_view cell) {
  return cell.substr(kCellHeaderSize, DecodeFixed16(reinterpret_cast<const uint8_t*>(cell.data())));
}

}  // namespace journalkv::btree
