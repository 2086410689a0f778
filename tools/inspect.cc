#include "tools/inspect.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "btree/btree_format.h"
#include "log/wal_format.h"
#include "pager/db_format.h"
#include "pager/freelist.h"
#include "pager/journal_format.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "tools/tokens.h"

namespace journalkv::tools {
namespace {

using base::DecodeFixed32;
using base::DecodeFixed64;

// A whole file, read once: the files inspected are a database's own, and a page or a log is
// read piecewise from this.
struct Bytes {
  std::string path;
  std::vector<uint8_t> data;
  size_t size() const { return data.size(); }
  bool Has(uint64_t offset, uint64_t n) const { return offset + n <= data.size(); }
  const uint8_t* at(uint64_t offset) const { return data.data() + offset; }
};

absl::StatusOr<Bytes> ReadWhole(vfs::FileSystem& fs, const std::string& path, uint64_t limit) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  Bytes b;
  b.path = path;
  b.data.resize(std::min(size, limit));
  if (!b.data.empty()) JKV_RETURN_IF_ERROR(file->Read(0, absl::MakeSpan(b.data)));
  return b;
}

std::string Hex(uint64_t v) { return absl::StrFormat("0x%016x", v); }

// A key or value for a line of output: its token (tools/tokens.h), cut at 48 bytes.
std::string Shown(absl::string_view bytes) {
  constexpr size_t kShown = 48;
  if (bytes.size() <= kShown) return EncodeToken(bytes);
  return absl::StrCat(EncodeToken(bytes.substr(0, kShown)), "... (", bytes.size(), " bytes)");
}

// ---- Database pages ----

// The page size from page 1's prefix, or the default with a note when page 1 is not readable.
uint32_t PageSizeOf(const Bytes& db, std::ostream& out) {
  if (db.Has(0, pager::kHeaderPrefixSize)) {
    absl::StatusOr<uint32_t> p = pager::DecodeHeaderPrefix(
        absl::MakeConstSpan(db.at(0), pager::kHeaderPrefixSize), db.path);
    if (p.ok()) return *p;
    out << "BAD: page 1: " << OneLine(p.status().message()) << "; assuming page size "
        << pager::kDefaultPageSize << '\n';
  } else {
    out << "BAD: the file is shorter than page 1's header; assuming page size "
        << pager::kDefaultPageSize << '\n';
  }
  return pager::kDefaultPageSize;
}

void PrintHeaderPage(absl::Span<const uint8_t> page, std::ostream& out) {
  absl::StatusOr<pager::DbHeader> h = pager::DecodeDbHeader(page, "page 1");
  const uint8_t* p = page.data();
  out << "magic " << (std::memcmp(p, pager::kMagic, sizeof(pager::kMagic)) == 0 ? "ok" : "BAD")
      << "\nformat_version " << DecodeFixed32(p + 16) << "\npage_size " << DecodeFixed32(p + 20)
      << "\nchange_counter " << DecodeFixed64(p + 24) << "\npage_count " << DecodeFixed32(p + 32)
      << "\nfreelist_head " << DecodeFixed32(p + 36) << "\nfreelist_count "
      << DecodeFixed32(p + 40) << "\njournal_family " << int{p[pager::kJournalFamilyOffset]}
      << " (0 rollback, 1 wal, 2 wal2)\nmeta";
  for (int i = 0; i < pager::kNumMetaSlots; ++i) out << ' ' << DecodeFixed32(p + 48 + 4 * i);
  out << "  (slot 0: the B+tree's root page)\n";
  if (!h.ok()) out << "BAD: " << OneLine(h.status().message()) << '\n';
}

void PrintTreePage(absl::Span<const uint8_t> page, uint32_t usable, std::ostream& out) {
  const uint8_t* p = page.data();
  const auto type = static_cast<btree::PageType>(p[btree::kTypeOffset]);
  const bool leaf = type == btree::PageType::kLeaf;
  const uint32_t n = base::DecodeFixed16(p + btree::kCellCountOffset);
  const uint32_t content = base::DecodeFixed16(p + btree::kContentStartOffset);
  out << "type " << (leaf ? "leaf" : "interior") << "\ncell_count " << n << "\ncontent_start "
      << content << "\ngarbage_bytes " << base::DecodeFixed16(p + btree::kGarbageBytesOffset)
      << "\nright_child " << DecodeFixed32(p + btree::kRightChildOffset) << '\n';
  if (btree::kPageHeaderSize + uint64_t{n} * btree::kCellPointerSize > usable) {
    out << "BAD: " << n << " cell pointers do not fit in the page\n";
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t off =
        base::DecodeFixed16(p + btree::kPageHeaderSize + i * btree::kCellPointerSize);
    out << "cell " << i << " at " << off << ": ";
    if (off < content || off + btree::kCellHeaderSize > usable) {
      out << "BAD: offset outside the content area [" << content << ", " << usable << ")\n";
      continue;
    }
    const uint32_t key_size = base::DecodeFixed16(p + off);
    const uint32_t second = DecodeFixed32(p + off + 2);
    if (off + btree::kCellHeaderSize + uint64_t{key_size} > usable) {
      out << "BAD: a key of " << key_size << " bytes runs past the page\n";
      continue;
    }
    const absl::string_view key(reinterpret_cast<const char*>(p + off + btree::kCellHeaderSize),
                                key_size);
    if (!leaf) {
      out << "child " << second << " key " << Shown(key) << '\n';
      continue;
    }
    const uint32_t local = btree::LocalValueSize(usable, key_size, second);
    const uint64_t value_at = uint64_t{off} + btree::kCellHeaderSize + key_size;
    out << "key " << Shown(key) << " value_size " << second;
    if (value_at + local > usable) {
      out << " BAD: the value runs past the page\n";
      continue;
    }
    out << " value "
        << Shown(absl::string_view(reinterpret_cast<const char*>(p + value_at), local));
    if (local < second) {
      if (value_at + local + btree::kOverflowPointerSize > usable) {
        out << " BAD: the overflow pointer runs past the page\n";
        continue;
      }
      out << " (" << local << " here, overflow_page " << DecodeFixed32(p + value_at + local)
          << ')';
    }
    out << '\n';
  }
}

absl::Status InspectPage(vfs::FileSystem& fs, const std::string& db_path, uint64_t page_no,
                         std::ostream& out) {
  // Page 1's prefix for the page size, then the one page: a large database is not read whole.
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(db_path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(const uint64_t file_size, file->Size());
  Bytes prefix;
  prefix.path = db_path;
  prefix.data.resize(std::min<uint64_t>(file_size, pager::kHeaderPrefixSize));
  if (!prefix.data.empty()) JKV_RETURN_IF_ERROR(file->Read(0, absl::MakeSpan(prefix.data)));
  const uint32_t page_size = PageSizeOf(prefix, out);
  const uint64_t pages = file_size / page_size;
  out << db_path << ": " << file_size << " bytes, " << pages << " whole pages of " << page_size
      << '\n';
  if (page_no == 0 || page_no > pages) {
    out << "page " << page_no << ": not in the file (pages are 1.." << pages << ")\n";
    return absl::OkStatus();
  }
  std::vector<uint8_t> bytes(page_size);
  JKV_RETURN_IF_ERROR(file->Read((page_no - 1) * page_size, absl::MakeSpan(bytes)));
  const uint64_t offset = (page_no - 1) * page_size;
  absl::Span<const uint8_t> page(bytes);
  const uint64_t stored = pager::StoredPageChecksum(page);
  const uint64_t computed = pager::ComputePageChecksum(PageNo(static_cast<uint32_t>(page_no)), page);
  out << "page " << page_no << " at offset " << offset << "\nchecksum " << Hex(stored)
      << (stored == computed ? " ok" : absl::StrCat(" BAD: the content hashes to ", Hex(computed),
                                                    " (torn, stale, or a free leaf)"))
      << '\n';
  if (page_no == 1) {
    PrintHeaderPage(page, out);
    return absl::OkStatus();
  }
  const uint32_t usable = pager::UsableSize(page_size);
  const uint8_t type = page[0];
  if (type == static_cast<uint8_t>(btree::PageType::kLeaf) ||
      type == static_cast<uint8_t>(btree::PageType::kInterior)) {
    PrintTreePage(page, usable, out);
  } else if (type == static_cast<uint8_t>(btree::PageType::kOverflow)) {
    out << "type overflow\nnext_page " << DecodeFixed32(page.data() + btree::kOverflowNextOffset)
        << '\n';
  } else {
    // Not a B+tree page: a freelist trunk (or a free leaf, whose content is meaningless).
    const uint32_t next = DecodeFixed32(page.data());
    const uint32_t n = DecodeFixed32(page.data() + 4);
    out << "type none of the B+tree's (byte 0 is " << absl::StrFormat("0x%02x", type)
        << "): as a freelist trunk, next " << next << ", " << n << " leaves";
    if (n > pager::TrunkCapacity(usable)) {
      out << " (BAD for a trunk: at most " << pager::TrunkCapacity(usable)
          << "; a free leaf's content is meaningless)\n";
      return absl::OkStatus();
    }
    out << ':';
    for (uint32_t i = 0; i < n; ++i) {
      out << ' ' << DecodeFixed32(page.data() + pager::kTrunkHeaderSize + 4 * i);
    }
    out << '\n';
  }
  return absl::OkStatus();
}

// ---- The rollback journal ----

absl::Status InspectJournal(vfs::FileSystem& fs, const std::string& path, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(Bytes j, ReadWhole(fs, path, uint64_t{1} << 40));
  out << path << ": " << j.size() << " bytes\n";
  if (!j.Has(0, pager::kJournalHeaderSize)) {
    out << "BAD: shorter than the " << pager::kJournalHeaderSize
        << "-byte header: no journal (an empty or truncated file ends a transaction)\n";
    return absl::OkStatus();
  }
  const uint8_t* h = j.at(0);
  const bool magic = std::memcmp(h, pager::kJournalMagic, sizeof(pager::kJournalMagic)) == 0;
  const uint64_t checksum = DecodeFixed64(h + 40);
  const bool sum_ok = base::Xxh3(h, 40, 0) == checksum;
  const uint32_t page_size = DecodeFixed32(h + 12);
  const uint64_t nonce = DecodeFixed64(h + 16);
  const uint64_t records = DecodeFixed64(h + 32);
  out << "magic " << (magic ? "ok" : "BAD") << "\nformat_version " << DecodeFixed32(h + 8)
      << "\npage_size " << page_size << "\nnonce " << Hex(nonce) << "\norig_pages "
      << DecodeFixed32(h + 24) << "\nsector_size " << DecodeFixed32(h + 28)
      << "\nrecords_offset " << records << "\nchecksum " << Hex(checksum)
      << (sum_ok ? " ok" : " BAD") << '\n';
  if (!pager::DecodeJournalHeader(absl::MakeConstSpan(h, pager::kJournalHeaderSize))) {
    out << "the header is not valid (zeroed, torn or foreign): no transaction to roll back\n";
    return absl::OkStatus();
  }
  uint64_t offset = records;
  int n = 0;
  bool sealed = false;
  while (!sealed) {
    if (!j.Has(offset, pager::kRecordPrefixSize)) break;
    const uint32_t page_no = DecodeFixed32(j.at(offset));
    const uint32_t kind = DecodeFixed32(j.at(offset + 4));
    if (kind == pager::kRecordKindPage) {
      const uint64_t size = pager::RecordSize(page_size);
      if (!j.Has(offset, size)) {
        out << "record at " << offset << ": cut short by the end of the file\n";
        break;
      }
      const uint64_t stored = DecodeFixed64(j.at(offset + 8 + page_size));
      if (base::Xxh3(j.at(offset), 8 + page_size, nonce) != stored || page_no == 0) {
        out << "record at " << offset << " (page " << page_no
            << "): does not check: the journal ends here\n";
        break;
      }
      out << "record " << ++n << " at " << offset << ": original of page " << page_no << '\n';
      offset += size;
    } else if (kind == pager::kRecordKindSeal && page_no == 0 && j.Has(offset, 16)) {
      const uint32_t entries = DecodeFixed32(j.at(offset + 8));
      const uint64_t size = 16 + uint64_t{entries} * pager::kSealEntrySize;
      if (!j.Has(offset, size + 8) ||
          base::Xxh3(j.at(offset), size, nonce) != DecodeFixed64(j.at(offset + size))) {
        out << "seal at " << offset << ": does not check: the journal ends here\n";
        break;
      }
      out << "seal at " << offset << ": new_pages " << DecodeFixed32(j.at(offset + 12)) << ", "
          << entries << " pages:";
      for (uint32_t e = 0; e < entries; ++e) {
        const uint8_t* entry = j.at(offset + 16 + uint64_t{e} * pager::kSealEntrySize);
        out << ' ' << DecodeFixed32(entry) << '=' << Hex(DecodeFixed64(entry + 4));
      }
      out << '\n';
      sealed = true;
      offset += size + 8;
    } else {
      out << "at " << offset << ": neither a record nor a seal (page_no " << page_no
          << ", kind " << kind << "): the journal ends here\n";
      break;
    }
  }
  out << n << " records, " << (sealed ? "sealed" : "not sealed") << ", " << j.size() - std::min<uint64_t>(offset, j.size())
      << " bytes after\n";
  return absl::OkStatus();
}

// ---- The log ----

absl::Status InspectWal(vfs::FileSystem& fs, const std::string& path, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(Bytes w, ReadWhole(fs, path, uint64_t{1} << 40));
  out << path << ": " << w.size() << " bytes\n";
  if (!w.Has(0, wal::kWalHeaderSize)) {
    out << "BAD: shorter than the " << wal::kWalHeaderSize << "-byte header: an empty log\n";
    return absl::OkStatus();
  }
  const uint8_t* h = w.at(0);
  out << "magic " << (DecodeFixed32(h) == wal::kWalMagic ? "ok" : "BAD") << "\nversion "
      << DecodeFixed32(h + 4) << "\npage_size " << DecodeFixed32(h + 8) << "\nckpt_seq "
      << DecodeFixed32(h + 12) << "\nsalts " << absl::StrFormat("%08x %08x", DecodeFixed32(h + 16), DecodeFixed32(h + 20))
      << "\nchecksum " << Hex(DecodeFixed64(h + 24)) << '\n';
  absl::StatusOr<wal::WalHeader> header =
      wal::DecodeWalHeader(absl::MakeConstSpan(h, wal::kWalHeaderSize));
  if (!header.ok()) {
    out << "BAD: " << OneLine(header.status().message()) << ": the log counts as empty\n";
    return absl::OkStatus();
  }
  if (header->version == 1) {
    out << "version 1: the layout of an earlier journalkv build, not walked; this build "
           "recovers no frame from it (a log that holds a commit is refused at open)\n";
    return absl::OkStatus();
  }
  const uint32_t page_size = header->page_size;
  uint64_t prev = header->checksum;
  uint32_t valid = 0, last_commit = 0, commits = 0;
  for (uint32_t f = 1;; ++f) {
    const uint64_t offset = wal::FrameHeaderOffset(f, page_size);
    const uint64_t image_at = wal::FrameImageOffset(f, page_size);
    if (!w.Has(offset, wal::kFrameHeaderSize) || !w.Has(image_at, page_size)) {
      if (w.Has(offset, 1)) out << "frame " << f << " at " << offset << ": cut short\n";
      break;
    }
    const wal::FrameHeader frame =
        wal::DecodeFrameHeader(absl::MakeConstSpan(w.at(offset), wal::kFrameHeaderSize));
    absl::Span<const uint8_t> image(w.at(image_at), page_size);
    const bool salts = frame.salt1 == header->salt1 && frame.salt2 == header->salt2;
    if (frame == wal::FrameHeader{}) {
      out << "frame " << f << " at " << offset
          << ": zeros (space the log keeps for later frames): the valid frames end here\n";
      break;
    }
    if (!wal::FrameValid(frame, *header, prev, image)) {
      const char* what = !salts ? "salts of another generation"
                         : wal::FrameHeaderValid(frame, *header, prev)
                             ? "image BAD (torn, or not the image its header names)"
                             : "checksum BAD (torn, or not of this chain)";
      out << "frame " << f << " at " << offset << ": page " << frame.page_no << ", " << what
          << ": the valid frames end here\n";
      break;
    }
    prev = frame.checksum;
    valid = f;
    out << "frame " << f << " at " << offset << ": page " << frame.page_no;
    if (frame.db_size != 0) {
      out << ", commit, db_size " << frame.db_size;
      last_commit = f;
      ++commits;
    }
    out << '\n';
  }
  out << valid << " valid frames, " << commits << " commits, the last commit frame "
      << last_commit;
  if (valid > last_commit) out << "; frames " << last_commit + 1 << ".." << valid << " are an uncommitted tail (ignored)";
  out << '\n';
  return absl::OkStatus();
}

// ---- The wal-index ----

struct ShmHeader {
  uint32_t words[18] = {};
  uint64_t checksum = 0;
  bool sum_ok = false;
};

ShmHeader ReadShmHeader(const Bytes& s, size_t offset) {
  ShmHeader h;
  std::memcpy(h.words, s.at(offset), sizeof(h.words));  // native-endian (shm/wal_index.h)
  std::memcpy(&h.checksum, s.at(offset + sizeof(h.words)), 8);
  h.sum_ok = base::Xxh3(h.words, sizeof(h.words), 0) == h.checksum;
  return h;
}

void PrintShmHeader(const char* name, const ShmHeader& h, std::ostream& out) {
  out << name << ": change " << h.words[0] << ", page_size " << h.words[1] << ", page_count "
      << h.words[2] << ", current_log " << h.words[3];
  for (int l = 0; l < 2; ++l) {
    const uint32_t* w = h.words + 4 + 7 * l;
    out << "; log " << l << ": ckpt_seq " << w[0] << ", salts "
        << absl::StrFormat("%08x %08x", w[1], w[2]) << ", mx_frame " << w[3];
  }
  out << "; checksum " << (h.sum_ok ? "ok" : "BAD") << '\n';
}

std::string Pin(uint64_t pin) {
  if (pin == 0) return "none";
  return absl::StrCat("seq ", shm::PinSeq(pin), " frame ", shm::PinFrame(pin));
}

absl::Status InspectShm(vfs::FileSystem& fs, const std::string& path, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(Bytes s, ReadWhole(fs, path, uint64_t{1} << 40));
  out << path << ": " << s.size() << " bytes, " << s.size() / shm::kRegionSize
      << " whole regions of " << shm::kRegionSize << '\n';
  if (!s.Has(0, shm::kRegionSize)) {
    out << "BAD: shorter than region 0: an index no connection has set up (it is rebuilt "
           "from the log at open)\n";
    return absl::OkStatus();
  }
  uint32_t version = 0;
  std::memcpy(&version, s.at(shm::kLayoutVersionOffset), 4);
  out << "layout_version " << absl::StrFormat("0x%08x", version)
      << (version == shm::kShmLayoutVersion ? " ok"
          : version == 0                   ? " (not initialised)"
                                           : " BAD (another layout: reinitialised at open)")
      << '\n';
  const ShmHeader a = ReadShmHeader(s, shm::kHeaderAOffset);
  const ShmHeader b = ReadShmHeader(s, shm::kHeaderBOffset);
  const ShmHeader c = ReadShmHeader(s, shm::kAppendedCOffset);
  const ShmHeader d = ReadShmHeader(s, shm::kAppendedDOffset);
  PrintShmHeader("published A", a, out);
  PrintShmHeader("published B", b, out);
  out << "published copies "
      << (std::memcmp(a.words, b.words, sizeof(a.words)) == 0 && a.sum_ok && b.sum_ok
              ? "agree"
              : "DISAGREE (a writer publishing, or one that died there: recovered at open)")
      << '\n';
  PrintShmHeader("appended C", c, out);
  PrintShmHeader("appended D", d, out);
  out << "appended copies "
      << (std::memcmp(c.words, d.words, sizeof(c.words)) == 0 && c.sum_ok && d.sum_ok ? "agree"
                                                                                         : "DISAGREE")
      << '\n';
  for (int l = 0; l < 2; ++l) {
    const size_t at = shm::kCkptInfoOffset + shm::kCkptInfoStride * l;
    uint32_t backfill = 0;
    uint64_t target = 0, copied = 0, written = 0;
    std::memcpy(&backfill, s.at(at), 4);
    std::memcpy(&target, s.at(at + 8), 8);
    std::memcpy(&copied, s.at(at + 16), 8);
    std::memcpy(&written, s.at(at + 24), 8);
    out << "log " << l << " checkpoint: backfill " << backfill << ", target seq "
        << (target >> 32) << " frame " << static_cast<uint32_t>(target) << ", copied_through seq "
        << (copied >> 32) << " frame " << static_cast<uint32_t>(copied)
        << ", written_through seq " << (written >> 32) << " frame "
        << static_cast<uint32_t>(written) << '\n';
  }
  // The durability words (wal/log_durability.h D1, D2, W13).
  {
    uint32_t floor = 0, epoch = 0;
    std::memcpy(&floor, s.at(shm::kSyncFloorOffset), 4);
    std::memcpy(&epoch, s.at(shm::kAppendEpochOffset), 4);
    const char* levels[] = {"off", "normal", "full", "extra"};
    out << "sync floor " << (floor < 4 ? levels[floor] : "BAD") << ", append epoch " << epoch
        << '\n';
    // The database file's write epoch (shm/wal_index.h O4): odd while a checkpoint writes the
    // file, when readers of the memory map trust no page.
    uint32_t db_epoch = 0;
    std::memcpy(&db_epoch, s.at(shm::kDbEpochOffset), 4);
    out << "db_epoch " << db_epoch
        << (db_epoch % 2 == 1 ? " (odd: a checkpoint is writing the database file, or died doing it)"
                              : "")
        << '\n';
    for (int l = 0; l < 2; ++l) {
      uint64_t synced = 0;
      std::memcpy(&synced, s.at(shm::kSyncedThroughOffset + 8 * l), 8);
      out << "log " << l << " synced through seq " << shm::SyncedSeq(synced) << " frame "
          << shm::SyncedFrame(synced) << (shm::SyncFailed(synced) ? ", a sync FAILED" : "")
          << '\n';
    }
    for (int r = 0; r < shm::kFailureRecords; ++r) {
      uint32_t w[5];
      std::memcpy(w, s.at(shm::kFailuresOffset + shm::kFailureStride * r), sizeof(w));
      if (w[0] == 0) continue;
      out << "sync failure of epoch " << w[0] - 1 << ": published then log 0 seq " << w[1]
          << " frame " << w[2] << ", log 1 seq " << w[3] << " frame " << w[4] << '\n';
    }
  }
  const char* wake_names[] = {"WRITE", "FLUSH"};
  for (int k = 0; k < 2; ++k) {
    uint32_t seq = 0, waiters = 0;
    std::memcpy(&seq, s.at(shm::kWakeOffset + 8 * k), 4);
    std::memcpy(&waiters, s.at(shm::kWakeOffset + 8 * k + 4), 4);
    out << "wake " << wake_names[k] << ": seq " << seq << ", waiters " << waiters << '\n';
  }
  int marks = 0;
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    uint64_t pins[2];
    std::memcpy(pins, s.at(shm::kMarksOffset + shm::kMarkStride * m), 16);
    if (pins[0] == 0 && pins[1] == 0) continue;
    ++marks;
    out << "overflow mark " << m << ": log 0 " << Pin(pins[0]) << ", log 1 " << Pin(pins[1])
        << '\n';
  }
  int slots = 0;
  for (int i = 0; i < shm::kMaxSlots; ++i) {
    uint64_t words[3];
    std::memcpy(words, s.at(shm::kSlotsOffset + shm::kSlotStride * i), 24);
    if (words[0] == 0 && words[1] == 0 && words[2] == 0) continue;
    ++slots;
    out << "slot " << i << ": owner " << Hex(words[2]) << ", log 0 " << Pin(words[0])
        << ", log 1 " << Pin(words[1]) << '\n';
  }
  uint32_t slots_used = 0;
  std::memcpy(&slots_used, s.at(shm::kSlotsUsedOffset), 4);
  out << slots << " of " << shm::kMaxSlots << " reader slots and " << marks << " of "
      << shm::kOverflowMarks
      << " overflow marks hold something (whose owners are alive only the lock bytes say); "
      << "slots claimed in this life: below " << slots_used << '\n';
  for (uint64_t r = 1; s.Has(r * shm::kRegionSize, shm::kRegionSize); ++r) {
    const uint8_t* region = s.at(r * shm::kRegionSize);
    uint32_t pages = 0, slots_used = 0;
    for (uint32_t j = 0; j < shm::kFramesPerBlock; ++j) {
      uint32_t page = 0;
      std::memcpy(&page, region + 4 * j, 4);
      pages += page != 0;
    }
    for (uint32_t j = 0; j < shm::kHashSlots; ++j) {
      uint16_t slot = 0;
      std::memcpy(&slot, region + 4 * shm::kFramesPerBlock + 2 * j, 2);
      slots_used += slot != 0;
    }
    const uint64_t k = (r - 1) / 2;
    out << "hash block " << k << " of log " << (r - 1) % 2 << " (frames "
        << k * shm::kFramesPerBlock + 1 << ".." << (k + 1) * shm::kFramesPerBlock << "): "
        << pages << " frames indexed, " << slots_used << " of " << shm::kHashSlots
        << " hash slots used" << (pages != slots_used ? " (BAD: they should match)" : "") << '\n';
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Inspect(vfs::FileSystem& fs, const std::string& db_path, const std::string& what,
                     uint64_t page_no, std::ostream& out) {
  if (what == "page") return InspectPage(fs, db_path, page_no, out);
  if (what == "journal") return InspectJournal(fs, db_path + "-journal", out);
  if (what == "wal") return InspectWal(fs, db_path + "-wal", out);
  if (what == "wal2") return InspectWal(fs, db_path + "-wal2", out);
  if (what == "shm") return InspectShm(fs, db_path + "-shm", out);
  return absl::InvalidArgumentError(absl::StrCat(
      "inspect: unknown structure \"", OneLine(what), "\" (page N, journal, wal, wal2, shm)"));
}

}  // namespace journalkv::tools
