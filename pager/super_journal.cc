// The super-journal file (super_journal.h).
#include "pager/super_journal.h"

#include <atomic>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"

namespace journalkv::pager {

using base::DecodeFixed32;
using base::DecodeFixed64;
using base::EncodeFixed32;
using base::EncodeFixed64;

namespace {

uint64_t Random64() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng() ^ (counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ull);
}

}  // namespace

std::string EncodeSuperJournal(const SuperJournal& super) {
  std::string out(24, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kSuperJournalMagic, sizeof(kSuperJournalMagic));
  EncodeFixed32(p + 8, kSuperJournalVersion);
  EncodeFixed32(p + 12, static_cast<uint32_t>(super.paths.size()));
  EncodeFixed64(p + 16, super.nonce);
  for (const std::string& path : super.paths) {
    uint8_t len[4];
    EncodeFixed32(len, static_cast<uint32_t>(path.size()));
    out.append(reinterpret_cast<const char*>(len), 4);
    out += path;
  }
  uint8_t sum[8];
  EncodeFixed64(sum, base::Xxh3(out.data(), out.size(), 0));
  out.append(reinterpret_cast<const char*>(sum), 8);
  return out;
}

std::optional<SuperJournal> DecodeSuperJournal(absl::Span<const uint8_t> in) {
  if (in.size() < 32) return std::nullopt;
  const uint8_t* p = in.data();
  if (std::memcmp(p, kSuperJournalMagic, sizeof(kSuperJournalMagic)) != 0) return std::nullopt;
  const size_t body = in.size() - 8;
  if (DecodeFixed64(p + body) != base::Xxh3(p, body, 0)) return std::nullopt;
  if (DecodeFixed32(p + 8) != kSuperJournalVersion) return std::nullopt;
  const uint32_t n = DecodeFixed32(p + 12);
  SuperJournal super;
  super.nonce = DecodeFixed64(p + 16);
  size_t at = 24;
  for (uint32_t i = 0; i < n; ++i) {
    if (body - at < 4) return std::nullopt;
    const uint32_t len = DecodeFixed32(p + at);
    at += 4;
    if (body - at < len) return std::nullopt;
    super.paths.emplace_back(reinterpret_cast<const char*>(p + at), len);
    at += len;
  }
  if (at != body) return std::nullopt;
  return super;
}

absl::StatusOr<std::optional<SuperJournal>> ReadSuperJournal(vfs::FileSystem* fs,
                                                            const std::string& path) {
  absl::StatusOr<std::unique_ptr<vfs::File>> file =
      fs->Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kJournal});
  if (absl::IsNotFound(file.status())) return std::optional<SuperJournal>();
  JKV_RETURN_IF_ERROR(file.status());
  JKV_ASSIGN_OR_RETURN(const uint64_t size, (*file)->Size());
  if (size > (uint64_t{1} << 24)) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a super-journal (", size, " bytes is too long for one)"));
  }
  std::vector<uint8_t> bytes(size);
  JKV_RETURN_IF_ERROR((*file)->Read(0, absl::MakeSpan(bytes)));
  std::optional<SuperJournal> super = DecodeSuperJournal(bytes);
  if (!super.has_value()) {
    return absl::DataLossError(absl::StrCat(
        path, ": a journal names this super-journal, but it is damaged (its magic, version or "
              "checksum does not check); move it away only if the databases it lists are known "
              "to be consistent"));
  }
  return super;
}

std::string NewSuperJournalPath(const std::string& first_db_path) {
  return absl::StrFormat("%s-super-%016x", first_db_path, Random64());
}

uint64_t NewSuperNonce() { return Random64(); }

}  // namespace journalkv::pager
