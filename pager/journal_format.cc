#include "pager/journal_format.h"

#include <algorithm>
#include <cstring>

#include "base/endian.h"
#include "base/hash.h"

namespace journalkv::pager {

using base::DecodeFixed32;
using base::DecodeFixed64;
using base::EncodeFixed32;
using base::EncodeFixed64;

void EncodeJournalHeader(const JournalHeader& h, absl::Span<uint8_t> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kJournalHeaderSize);
  std::memcpy(p, kJournalMagic, sizeof(kJournalMagic));
  EncodeFixed32(p + 8, kJournalFormatVersion);
  EncodeFixed32(p + 12, h.page_size);
  EncodeFixed64(p + 16, h.nonce);
  EncodeFixed32(p + 24, h.orig_pages);
  EncodeFixed32(p + 28, kJournalSectorSize);
  EncodeFixed64(p + 32, h.records_offset);
  EncodeFixed64(p + 40, base::Xxh3(p, 40, 0));
  if (!h.super_path.empty()) {
    const size_t len = std::min<size_t>(h.super_path.size(), kMaxSuperPathSize);
    EncodeFixed32(p + 48, static_cast<uint32_t>(len));
    EncodeFixed64(p + 52, h.super_nonce);
    std::memcpy(p + 68, h.super_path.data(), len);
    EncodeFixed64(p + 60, base::Xxh3Pair(p + 48, 12, p + 68, len, 0));
  }
}

std::optional<JournalHeader> DecodeJournalHeader(absl::Span<const uint8_t> in) {
  if (in.size() < 48) return std::nullopt;
  const uint8_t* p = in.data();
  if (std::memcmp(p, kJournalMagic, sizeof(kJournalMagic)) != 0) return std::nullopt;
  if (DecodeFixed64(p + 40) != base::Xxh3(p, 40, 0)) return std::nullopt;
  if (DecodeFixed32(p + 8) != kJournalFormatVersion) return std::nullopt;
  JournalHeader h;
  h.page_size = DecodeFixed32(p + 12);
  h.nonce = DecodeFixed64(p + 16);
  h.orig_pages = DecodeFixed32(p + 24);
  h.records_offset = DecodeFixed64(p + 32);
  if (h.records_offset < kJournalHeaderSize) return std::nullopt;
  if (in.size() < kJournalHeaderSize) return h;
  const uint32_t len = DecodeFixed32(p + 48);
  const uint64_t nonce = DecodeFixed64(p + 52);
  const uint64_t sum = DecodeFixed64(p + 60);
  if (len == 0 && nonce == 0 && sum == 0) return h;  // no super-journal
  if (len == 0 || len > kMaxSuperPathSize ||
      sum != base::Xxh3Pair(p + 48, 12, p + 68, len, 0)) {
    h.super_damaged = true;
    return h;
  }
  h.super_path.assign(reinterpret_cast<const char*>(p + 68), len);
  h.super_nonce = nonce;
  return h;
}

void AppendRecord(uint64_t nonce, PageNo page_no, absl::Span<const uint8_t> image,
                  std::string* out) {
  const size_t start = out->size();
  out->resize(start + RecordSize(image.size()));
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  EncodeFixed32(p, page_no.value());
  EncodeFixed32(p + 4, kRecordKindPage);
  std::memcpy(p + kRecordPrefixSize, image.data(), image.size());
  const size_t body = kRecordPrefixSize + image.size();
  EncodeFixed64(p + body, base::Xxh3(p, body, nonce));
}

void AppendSuperRecord(uint64_t nonce, const std::string& super_path, uint64_t super_nonce,
                       std::string* out) {
  const size_t start = out->size();
  const size_t len = std::min<size_t>(super_path.size(), kMaxSuperPathSize);
  const size_t body = 20 + len;
  out->resize(start + body + 8);
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  EncodeFixed32(p, 0);
  EncodeFixed32(p + 4, kRecordKindSuper);
  EncodeFixed32(p + 8, static_cast<uint32_t>(len));
  EncodeFixed64(p + 12, super_nonce);
  std::memcpy(p + 20, super_path.data(), len);
  EncodeFixed64(p + body, base::Xxh3(p, body, nonce));
}

void AppendSeal(uint64_t nonce, const Seal& seal, std::string* out) {
  const size_t start = out->size();
  const size_t body = 16 + kSealEntrySize * seal.entries.size();
  out->resize(start + body + 8);
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data()) + start;
  EncodeFixed32(p, 0);
  EncodeFixed32(p + 4, kRecordKindSeal);
  EncodeFixed32(p + 8, static_cast<uint32_t>(seal.entries.size()));
  EncodeFixed32(p + 12, seal.new_pages);
  uint8_t* e = p + 16;
  for (const SealEntry& entry : seal.entries) {
    EncodeFixed32(e, entry.page_no.value());
    EncodeFixed64(e + 4, entry.trailer);
    e += kSealEntrySize;
  }
  EncodeFixed64(p + body, base::Xxh3(p, body, nonce));
}

}  // namespace journalkv::pager
