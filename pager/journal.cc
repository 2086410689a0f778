#include "pager/journal.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "pager/db_format.h"
#include "pager/across.h"
#include "pager/super_journal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::IsSyncFailure;
using vfs::SyncDir;
using vfs::SyncFile;
namespace {

uint64_t NewNonce() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng() ^ (counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ull);
}

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Reads a journal file: its header, the records that check and the seal if it checks.
// std::nullopt when the header is not valid.
absl::StatusOr<std::optional<ParsedJournal>> ParseJournal(vfs::File* file,
                                                          const std::string& path) {
  std::vector<uint8_t> header_bytes(kJournalHeaderSize);
  absl::Status s = file->Read(0, absl::MakeSpan(header_bytes));
  if (absl::IsOutOfRange(s)) return std::optional<ParsedJournal>();
  JKV_RETURN_IF_ERROR(s);
  std::optional<JournalHeader> header = DecodeJournalHeader(header_bytes);
  if (!header.has_value()) return std::optional<ParsedJournal>();
  if (!IsValidPageSize(header->page_size)) {
    return absl::DataLossError(
        absl::StrCat(path, ": journal header has invalid page size ", header->page_size));
  }
  ParsedJournal parsed;
  parsed.header = *header;
  const uint32_t page_size = header->page_size;
  std::vector<uint8_t> record(RecordSize(page_size));
  uint64_t offset = header->records_offset;
  while (true) {
    absl::Span<uint8_t> prefix(record.data(), kRecordPrefixSize);
    s = file->Read(offset, prefix);
    if (absl::IsOutOfRange(s)) break;
    JKV_RETURN_IF_ERROR(s);
    const uint32_t page_no = base::DecodeFixed32(record.data());
    const uint32_t kind = base::DecodeFixed32(record.data() + 4);
    if (kind == kRecordKindPage && page_no != 0) {
      s = file->Read(offset, absl::MakeSpan(record));
      if (absl::IsOutOfRange(s)) break;
      JKV_RETURN_IF_ERROR(s);
      const size_t body = kRecordPrefixSize + page_size;
      if (base::DecodeFixed64(record.data() + body) !=
          base::Xxh3(record.data(), body, header->nonce)) {
        break;
      }
      parsed.records.push_back({PageNo(page_no), offset + kRecordPrefixSize});
      offset += record.size();
      continue;
    }
    if (kind == kRecordKindSuper && page_no == 0) {
      uint8_t fixed[20];
      s = file->Read(offset, absl::MakeSpan(fixed));
      if (absl::IsOutOfRange(s)) break;
      JKV_RETURN_IF_ERROR(s);
      const uint32_t len = base::DecodeFixed32(fixed + 8);
      if (len == 0 || len > kMaxSuperPathSize) break;
      std::vector<uint8_t> rec(20 + len + 8);
      s = file->Read(offset, absl::MakeSpan(rec));
      if (absl::IsOutOfRange(s)) break;
      JKV_RETURN_IF_ERROR(s);
      const size_t body = 20 + len;
      if (base::DecodeFixed64(rec.data() + body) != base::Xxh3(rec.data(), body, header->nonce)) {
        break;
      }
      // Names the super-journal as the header's fields would (journal_format.h).
      parsed.header.super_path.assign(reinterpret_cast<const char*>(rec.data() + 20), len);
      parsed.header.super_nonce = base::DecodeFixed64(fixed + 12);
      offset += rec.size();
      continue;
    }
    if (kind == kRecordKindSeal && page_no == 0) {
      uint8_t count_bytes[8];
      s = file->Read(offset + 8, absl::MakeSpan(count_bytes));
      if (absl::IsOutOfRange(s)) break;
      JKV_RETURN_IF_ERROR(s);
      const uint32_t n = base::DecodeFixed32(count_bytes);
      // A seal longer than what the file holds past it is torn or damaged: known before a
      // buffer of up to 12 * 2^32 bytes is allocated for it (the journal fuzzer's 9 KB
      // journals made this allocate hundreds of megabytes).
      const uint64_t seal_size = 16 + uint64_t{kSealEntrySize} * n + 8;
      JKV_ASSIGN_OR_RETURN(const uint64_t file_size, file->Size());
      if (offset > file_size || seal_size > file_size - offset) break;
      std::vector<uint8_t> seal(seal_size);
      s = file->Read(offset, absl::MakeSpan(seal));
      if (absl::IsOutOfRange(s)) break;
      JKV_RETURN_IF_ERROR(s);
      const size_t body = seal.size() - 8;
      if (base::DecodeFixed64(seal.data() + body) != base::Xxh3(seal.data(), body, header->nonce)) {
        break;
      }
      Seal decoded;
      decoded.new_pages = base::DecodeFixed32(seal.data() + 12);
      for (uint32_t i = 0; i < n; ++i) {
        const uint8_t* e = seal.data() + 16 + kSealEntrySize * i;
        decoded.entries.push_back({PageNo(base::DecodeFixed32(e)), base::DecodeFixed64(e + 4)});
      }
      parsed.seal = std::move(decoded);
    }
    break;
  }
  return std::optional<ParsedJournal>(std::move(parsed));
}

// True when every page the seal lists already carries its sealed trailer in `db`.
absl::StatusOr<bool> SealedPagesPresent(const Seal& seal, uint32_t page_size, vfs::File* db) {
  std::vector<uint8_t> page(page_size);
  for (const SealEntry& entry : seal.entries) {
    absl::Status s = db->Read(uint64_t{entry.page_no.value() - 1} * page_size, absl::MakeSpan(page));
    if (absl::IsOutOfRange(s)) return false;
    JKV_RETURN_IF_ERROR(s);
    if (StoredPageChecksum(page) != entry.trailer || !PageChecksumOk(entry.page_no, page)) {
      return false;
    }
  }
  return true;
}

// Writes the journaled originals back (the earliest image of a page wins) and cuts the file
// back to the original page count.
absl::Status ApplyRollback(const ParsedJournal& journal, vfs::File* journal_file, vfs::File* db) {
  const uint32_t page_size = journal.header.page_size;
  std::vector<uint8_t> image(page_size);
  for (auto it = journal.records.rbegin(); it != journal.records.rend(); ++it) {
    // A transaction journals only pages that existed before it (<= orig_pages), and the
    // truncate below cuts off everything past them anyway. A record beyond them comes from a
    // damaged journal, and writing it first would grow the file to wherever its page number
    // points (the journal fuzzer made a 1.5 GB file of a 20 KB database).
    if (it->page_no.value() > journal.header.orig_pages) continue;
    JKV_RETURN_IF_ERROR(journal_file->Read(it->image_offset, absl::MakeSpan(image)));
    JKV_RETURN_IF_ERROR(db->Write(uint64_t{it->page_no.value() - 1} * page_size, image));
  }
  JKV_ASSIGN_OR_RETURN(uint64_t size, db->Size());
  const uint64_t orig_size = uint64_t{journal.header.orig_pages} * page_size;
  if (size > orig_size) JKV_RETURN_IF_ERROR(db->Truncate(orig_size));
  return absl::OkStatus();
}

// Ends a journal found on disk and makes that durable, so that it cannot reappear after a
// power loss and be applied a second time.
absl::Status DiscardJournalDurably(vfs::FileSystem* fs, const std::string& path,
                                   std::unique_ptr<vfs::File> file, JournalMode mode,
                                   SyncLevel sync) {
  const bool do_sync = sync != SyncLevel::kOff;
  // Each sync below: the journal's end durable, or a power loss brings back a journal that was
  // already applied (a rolled-back one would then be applied over later commits).
  if (mode == JournalMode::kTruncate) {
    JKV_RETURN_IF_ERROR(file->Truncate(0));
    return do_sync ? SyncFile(*file, vfs::SyncKind::kAll, "recovery: journal end") : absl::OkStatus();
  }
  if (mode == JournalMode::kPersist) {
    std::vector<uint8_t> zeros(kJournalHeaderSize, 0);
    JKV_RETURN_IF_ERROR(file->Write(0, zeros));
    return do_sync ? SyncFile(*file, vfs::SyncKind::kData, "recovery: journal end") : absl::OkStatus();
  }
  file.reset();
  JKV_RETURN_IF_ERROR(fs->Delete(path));
  return do_sync ? SyncDir(*fs, path, "recovery: journal end") : absl::OkStatus();
}

// J7: after this recoverer ended its own journal durably, removes the super-journal when no
// listed participant's journal names it any more (and syncs its directory).
absl::Status RemoveSuperIfUnnamed(vfs::FileSystem* fs, const std::string& super_path,
                                  const SuperJournal& super, SyncLevel sync) {
  for (const std::string& db_ref : super.paths) {
    const std::string db_path = PathFrom(super_path, db_ref);
    JKV_ASSIGN_OR_RETURN(
        const bool named, JournalNamesSuper(fs, db_path + "-journal", super_path, super.nonce));
    if (named) return absl::OkStatus();  // that participant's recovery rolls back and removes it
  }
  absl::Status s = fs->Delete(super_path);
  if (absl::IsNotFound(s)) return absl::OkStatus();  // another recoverer removed it (J7)
  JKV_RETURN_IF_ERROR(s);
  // J7/J8: the removal durable, or a power loss brings back a super-journal no journal names
  // (garbage, J8); synced so that recovery leaves nothing behind when it can.
  return sync != SyncLevel::kOff ? SyncDir(*fs, super_path, "J7 super-journal removal (recovery)")
                                 : absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> JournalNamesSuper(vfs::FileSystem* fs, const std::string& journal_path,
                                       const std::string& super_path, uint64_t super_nonce) {
  absl::StatusOr<std::unique_ptr<vfs::File>> file =
      fs->Open(journal_path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kJournal});
  if (absl::IsNotFound(file.status())) return false;
  JKV_RETURN_IF_ERROR(file.status());
  // The header or a super record (a journal that spilled) may name it.
  absl::StatusOr<std::optional<ParsedJournal>> parsed = ParseJournal(file->get(), journal_path);
  // A journal that cannot be read may be this super-journal's: keep it (J8 at worst).
  if (!parsed.ok()) return true;
  if (!parsed->has_value()) return false;
  const JournalHeader& h = (*parsed)->header;
  if (h.super_damaged) return true;
  return PathFrom(journal_path, h.super_path) == super_path &&
         h.super_nonce == super_nonce;
}

Journal::Journal(vfs::FileSystem* fs, std::string journal_path, JournalMode mode, SyncLevel sync,
                 uint32_t page_size)
    : fs_(fs), path_(std::move(journal_path)), mode_(mode), sync_(sync), page_size_(page_size) {}

Journal::~Journal() = default;

void Journal::Begin(uint32_t orig_pages, uint64_t change_counter) {
  header_ = JournalHeader{page_size_, NewNonce(), orig_pages, kJournalHeaderSize};
  start_counter_ = change_counter;
  written_ = false;
  synced_since_last_write_ = false;
  end_offset_ = 0;
  seal_offset_.reset();
  ClearPending();
  image_offsets_.clear();
  memory_images_.clear();
}

void Journal::ClearPending() {
  pending_.resize(kJournalHeaderSize);  // the lead kept for the header; the capacity stays
  pending_images_.clear();
}

void Journal::NameSuper(const std::string& super_path_given, uint64_t super_nonce) {
  // By its name alone when it is in the journal's folder (super_journal.h, "Names").
  const std::string super_path = NameFrom(path_, super_path_given);
  if (!written_) {
    header_.super_path = super_path;
    header_.super_nonce = super_nonce;
    return;
  }
  // J3: never the header rewritten in place (a power loss may leave its sector garbage, and
  // the whole journal of a database holding spilled pages with it): a record after the
  // spilled ones, before the commit's records and seal, so the seal is read only past it.
  std::string record;
  AppendSuperRecord(header_.nonce, super_path, super_nonce, &record);
  if (pending_.size() < kJournalHeaderSize) pending_.resize(kJournalHeaderSize);
  pending_.insert(kJournalHeaderSize, record);  // first of the records, after the lead
  for (auto& [page, offset] : pending_images_) offset += record.size();
}

void Journal::AddOriginal(PageNo page_no, absl::Span<const uint8_t> image) {
  if (in_memory()) {
    memory_images_.try_emplace(page_no.value(),
                               std::string(reinterpret_cast<const char*>(image.data()),
                                           image.size()));
    return;
  }
  if (pending_.size() < kJournalHeaderSize) pending_.resize(kJournalHeaderSize);
  pending_images_.push_back(
      {page_no.value(), pending_.size() - kJournalHeaderSize + kRecordPrefixSize});
  AppendRecord(header_.nonce, page_no, image, &pending_);
}

void Journal::ReserveOriginals(size_t count) {
  if (in_memory()) return;
  const size_t wanted = std::max<size_t>(pending_.size(), kJournalHeaderSize) +
                        count * RecordSize(page_size_);
  if (wanted > pending_.capacity()) pending_.reserve(wanted);
}

absl::Status Journal::ReadOriginal(PageNo page_no, absl::Span<uint8_t> image) const {
  if (image.size() != page_size_) {
    return absl::InvalidArgumentError(absl::StrCat("journal read of ", image.size(),
                                                   " bytes, want a page of ", page_size_));
  }
  if (in_memory()) {
    auto it = memory_images_.find(page_no.value());
    if (it == memory_images_.end()) {
      return absl::NotFoundError(absl::StrCat(path_, ": no original of page ", page_no.value(),
                                              " in the in-memory journal"));
    }
    std::memcpy(image.data(), it->second.data(), page_size_);
  } else {
    auto it = image_offsets_.find(page_no.value());
    if (it == image_offsets_.end() || file_ == nullptr) {
      return absl::NotFoundError(absl::StrCat(path_, ": no original of page ", page_no.value(),
                                              " written by this transaction"));
    }
    JKV_RETURN_IF_ERROR(file_->Read(it->second, image));
  }
  if (!PageChecksumOk(page_no, image)) {
    return absl::DataLossError(absl::StrCat(path_, ": the original of page ", page_no.value(),
                                            " read back fails its checksum"));
  }
  return absl::OkStatus();
}

absl::Status Journal::OpenForTransaction() {
  if (file_ == nullptr) {
    absl::StatusOr<std::unique_ptr<vfs::File>> file =
        fs_->Open(path_, {vfs::OpenMode::kCreateExclusive, vfs::FileKind::kJournal});
    created_ = file.ok();
    if (absl::IsAlreadyExists(file.status())) {
      file = fs_->Open(path_, {vfs::OpenMode::kReadWrite, vfs::FileKind::kJournal});
    }
    JKV_RETURN_IF_ERROR(file.status());
    file_ = std::move(file).value();
    if (created_) {
      protected_.clear();
      known_counter_ = start_counter_;
    }
  }
  if (known_counter_ == start_counter_) return absl::OkStatus();
  // Another connection committed since this one last wrote the journal (or this is the first
  // use): where its journal lies is unknown. Make the file's present state durable; then at
  // most a journal whose header is valid now can come back after a power loss.
  if (sync_ != SyncLevel::kOff) JKV_RETURN_IF_ERROR(SyncFile(*file_, vfs::SyncKind::kAll, "placement: journal of another connection"));
  protected_.clear();
  std::vector<uint8_t> header(kJournalHeaderSize);
  absl::Status s = file_->Read(0, absl::MakeSpan(header));
  if (!absl::IsOutOfRange(s)) JKV_RETURN_IF_ERROR(s);
  if (s.ok() && DecodeJournalHeader(header).has_value()) {
    JKV_ASSIGN_OR_RETURN(uint64_t size, file_->Size());
    protected_.push_back({kJournalHeaderSize, size});
  }
  known_counter_ = start_counter_;
  return absl::OkStatus();
}

uint64_t Journal::PlaceRecords(std::optional<uint64_t> size_bytes) const {
  uint64_t after_all = kJournalHeaderSize;
  bool fits_at_start = size_bytes.has_value();
  for (const auto& [start, end] : protected_) {
    after_all = std::max(after_all, end);
    if (size_bytes.has_value() && start < kJournalHeaderSize + *size_bytes) fits_at_start = false;
  }
  if (fits_at_start) return kJournalHeaderSize;
  // Round up to a sector so that no sector holds bytes of two journals.
  return (after_all + kJournalSectorSize - 1) / kJournalSectorSize * kJournalSectorSize;
}

absl::Status Journal::SyncIfNeeded() {
  if (sync_ == SyncLevel::kOff) return absl::OkStatus();
  // Journal records durable before the first database page is overwritten: pager I1.
  JKV_RETURN_IF_ERROR(SyncFile(*file_, vfs::SyncKind::kData, "I1 journal"));
  if (created_ || !dir_synced_once_) {
    // The journal's directory entry durable too, or a power loss could remove the journal
    // while the database holds half a transaction: pager I1.
    JKV_RETURN_IF_ERROR(SyncDir(*fs_, path_, "I1 journal directory"));
    dir_synced_once_ = true;
    created_ = false;
  }
  synced_since_last_write_ = true;
  return absl::OkStatus();
}

absl::Status Journal::Flush(const Seal* seal) {
  if (in_memory()) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(OpenForTransaction());
  synced_since_last_write_ = false;
  if (pending_.size() < kJournalHeaderSize) pending_.resize(kJournalHeaderSize);
  // pending_ is [lead for the header][records], the seal appended after them; `from` is where
  // in it this flush's write starts (0 when the header goes with the records).
  const uint64_t seal_in_body = pending_.size() - kJournalHeaderSize;
  if (seal != nullptr) AppendSeal(header_.nonce, *seal, &pending_);
  const uint64_t body_size = pending_.size() - kJournalHeaderSize;
  size_t from = kJournalHeaderSize;
  if (!written_) {
    // The whole size is known only when this is the transaction's one and only flush.
    header_.records_offset =
        PlaceRecords(seal != nullptr ? std::optional<uint64_t>(body_size) : std::nullopt);
    end_offset_ = header_.records_offset;
    const absl::Span<uint8_t> lead(reinterpret_cast<uint8_t*>(pending_.data()),
                                   kJournalHeaderSize);
    EncodeJournalHeader(header_, lead);
    if (end_offset_ != kJournalHeaderSize) {
      absl::Status s = file_->Write(0, lead);
      if (!s.ok()) {
        ClearPending();
        return s;
      }
    } else {
      from = 0;
    }
    written_ = true;
  }
  const uint64_t write_at = end_offset_ - (kJournalHeaderSize - from);
  // Recorded before the write: a write that fails may still have put the seal in the file.
  if (seal != nullptr) seal_offset_ = end_offset_ + seal_in_body;
  const uint64_t body_at = end_offset_;
  for (const auto& [page, offset] : pending_images_) image_offsets_[page] = body_at + offset;
  const absl::Span<const uint8_t> bytes =
      AsBytes(pending_).subspan(from, pending_.size() - from);
  absl::Status written = file_->Write(write_at, bytes);
  ClearPending();
  JKV_RETURN_IF_ERROR(written);
  end_offset_ = write_at + bytes.size();
  const std::pair<uint64_t, uint64_t> region{header_.records_offset, end_offset_};
  absl::Status synced = SyncIfNeeded();
  if (synced.ok()) {
    // Synced: this header is the durable one and older journals are dead. Sync OFF promises
    // nothing across a power loss, so there is nothing older to protect either.
    protected_ = {region};
  } else {
    protected_.push_back(region);
  }
  return synced;
}

absl::Status Journal::Finish(Outcome committed) {
  ClearPending();
  // A buffer a big transaction grew is not kept for the connection's life.
  constexpr size_t kKeepPendingBytes = size_t{1} << 20;
  if (pending_.capacity() > kKeepPendingBytes) std::string().swap(pending_);
  image_offsets_.clear();
  memory_images_.clear();
  if (in_memory() || !written_) return absl::OkStatus();
  written_ = false;
  seal_offset_.reset();
  const bool extra = sync_ == SyncLevel::kExtra;
  if (committed == Outcome::kCommitted) known_counter_ = start_counter_ + 1;
  switch (mode_) {
    case JournalMode::kDelete: {
      file_.reset();
      JKV_RETURN_IF_ERROR(fs_->Delete(path_));
      // The unlink durable: only EXTRA pays for it, the seal makes it unnecessary (I4).
      return extra ? SyncDir(*fs_, path_, "EXTRA journal end") : absl::OkStatus();
    }
    case JournalMode::kTruncate:
      JKV_RETURN_IF_ERROR(file_->Truncate(0));
      // The truncate durable (EXTRA's promise; the seal makes it unnecessary, I4).
      return extra ? SyncFile(*file_, vfs::SyncKind::kAll, "EXTRA journal end") : absl::OkStatus();
    case JournalMode::kPersist: {
      std::vector<uint8_t> zeros(kJournalHeaderSize, 0);
      JKV_RETURN_IF_ERROR(file_->Write(0, zeros));
      // The zeroed header durable (EXTRA's promise; the seal makes it unnecessary, I4).
      return extra ? SyncFile(*file_, vfs::SyncKind::kData, "EXTRA journal end") : absl::OkStatus();
    }
    case JournalMode::kMemory:
    case JournalMode::kOff:
    case JournalMode::kWal:  // never: WAL and ATOMIC connections journal only a family switch
    case JournalMode::kAtomic:
    case JournalMode::kWal2:
      break;
  }
  return absl::OkStatus();
}

absl::Status Journal::RollBack(vfs::File* db) {
  if (in_memory()) {
    for (const auto& [page_no, image] : memory_images_) {
      JKV_RETURN_IF_ERROR(db->Write(uint64_t{page_no - 1} * page_size_, AsBytes(image)));
    }
    memory_images_.clear();
    JKV_ASSIGN_OR_RETURN(uint64_t size, db->Size());
    const uint64_t orig_size = uint64_t{header_.orig_pages} * page_size_;
    if (size > orig_size) JKV_RETURN_IF_ERROR(db->Truncate(orig_size));
    // The restored pages durable (I3): the spilled pages may already be on the disk, and a
    // power loss after an unsynced restore leaves pages torn between the two (README: MEMORY
    // and OFF are durable). The crash sweep found this one.
    if (sync_ != SyncLevel::kOff) JKV_RETURN_IF_ERROR(SyncFile(*db, vfs::SyncKind::kData, "I3 database (rollback)"));
    return absl::OkStatus();
  }
  ClearPending();
  if (!written_) return absl::OkStatus();
  if (absl::Status s = RestoreDatabase(db); !s.ok()) {
    UnsealAfterFailedUndo();  // I12
    return s;
  }
  return Finish(Outcome::kRolledBack);
}

absl::Status Journal::RestoreDatabase(vfs::File* db) {
  JKV_ASSIGN_OR_RETURN(std::optional<ParsedJournal> parsed, ParseJournal(file_.get(), path_));
  if (!parsed.has_value() || parsed->header.nonce != header_.nonce) {
    return absl::DataLossError(absl::StrCat(path_, ": journal unreadable during rollback"));
  }
  JKV_RETURN_IF_ERROR(ApplyRollback(*parsed, file_.get(), db));
  // Database restored durably before the journal may end: I3.
  bool db_synced = false;
  if (sync_ != SyncLevel::kOff) {
    JKV_RETURN_IF_ERROR(SyncFile(*db, vfs::SyncKind::kData, "I3 database (rollback)"));
    db_synced = true;
  }
  JKV_DCHECK(db_synced || sync_ == SyncLevel::kOff);  // I3
  return absl::OkStatus();
}

// I12: the undo of a commit failed, so the database file may still hold every page the seal
// lists with its sealed trailer (the commit's sync failed, yet its writes reached the file),
// and the next opener (RecoverJournal, here or in another process as soon as this handle
// gives up its locks) would take the journal as complete and keep the failed commit. Zeros
// over the seal's first 8 bytes (its zero word and kind) end the journal before the seal, so
// the journal is hot and is rolled back. Not synced: until a power loss the file's bytes are
// what the next opener reads, and after one a commit that returned an error may be present
// anyway (I7).
void Journal::UnsealAfterFailedUndo() {
  if (!seal_offset_.has_value() || file_ == nullptr) return;
  const uint8_t zeros[8] = {};
  // The undo's error is the one to report. If this write fails too, the next opener may find
  // the failed commit whole (README, "Failures"); it finds no part of it otherwise.
  file_->Write(*seal_offset_, zeros).IgnoreError();
}

absl::StatusOr<bool> JournalHeaderValid(vfs::FileSystem* fs, const std::string& journal_path) {
  absl::StatusOr<std::unique_ptr<vfs::File>> file =
      fs->Open(journal_path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kJournal});
  if (absl::IsNotFound(file.status())) return false;
  JKV_RETURN_IF_ERROR(file.status());
  std::vector<uint8_t> header(kJournalHeaderSize);
  absl::Status s = (*file)->Read(0, absl::MakeSpan(header));
  if (absl::IsOutOfRange(s)) return false;
  JKV_RETURN_IF_ERROR(s);
  return DecodeJournalHeader(header).has_value();
}

absl::StatusOr<JournalRecovery> RecoverJournal(vfs::FileSystem* fs,
                                               const std::string& journal_path, vfs::File* db,
                                               std::optional<uint32_t> db_page_size,
                                               JournalMode mode, SyncLevel sync,
                                               AccessMode access) {
  const bool read_only = access == AccessMode::kReadOnly;
  absl::StatusOr<std::unique_ptr<vfs::File>> file = fs->Open(
      journal_path, {read_only ? vfs::OpenMode::kReadOnly : vfs::OpenMode::kReadWrite,
                     vfs::FileKind::kJournal});
  if (absl::IsNotFound(file.status())) return JournalRecovery::kNone;
  JKV_RETURN_IF_ERROR(file.status());
  JKV_ASSIGN_OR_RETURN(std::optional<ParsedJournal> parsed,
                       ParseJournal(file->get(), journal_path));
  if (!parsed.has_value()) return JournalRecovery::kNone;
  const uint32_t page_size = parsed->header.page_size;
  if (db_page_size.has_value() && *db_page_size != page_size) {
    return absl::DataLossError(absl::StrCat(journal_path, ": journal page size ", page_size,
                                            " differs from the database's ", *db_page_size));
  }
  if (parsed->header.super_damaged) {
    return absl::DataLossError(absl::StrCat(
        journal_path, ": the journal's super-journal fields (a transaction across databases) "
                      "are damaged, so whether its transaction committed is unknown"));
  }
  bool complete = false;
  std::optional<SuperJournal> super;  // J5: set when the super-journal is there, this nonce's
  // The super-journal's path, from the name the journal holds (super_journal.h, "Names").
  const std::string super_path = parsed->header.super_path.empty()
                                     ? std::string()
                                     : PathFrom(journal_path, parsed->header.super_path);
  if (!super_path.empty()) {
    JKV_ASSIGN_OR_RETURN(super, ReadSuperJournal(fs, super_path));
    if (super.has_value() && super->nonce != parsed->header.super_nonce) super.reset();
    // J5: gone (or another transaction's): committed, or undone durably (J6, J7); present:
    // not committed, whatever the seal says.
    complete = !super.has_value();
    if (complete && !read_only && sync != SyncLevel::kOff) {
      // J5: the super-journal's absence durable before this journal is discarded: its
      // removal (the commit point) may be in the OS only (its writer died before the
      // directory sync), and a power loss after this discard would bring it back to roll
      // the other participants back while this database keeps the transaction.
      absl::Status synced =
          SyncDir(*fs, super_path, "J5 super-journal absence (recovery)");
      // No directory at all: nothing there to come back either.
      if (!absl::IsNotFound(synced)) JKV_RETURN_IF_ERROR(synced);
    }
  } else if (parsed->seal.has_value()) {
    JKV_ASSIGN_OR_RETURN(complete, SealedPagesPresent(*parsed->seal, page_size, db));
  }
  if (read_only) {
    if (complete) return JournalRecovery::kStale;
    return absl::FailedPreconditionError(
        absl::StrCat(journal_path, ": hot journal must be rolled back first; "
                                   "open the database read-write once"));
  }
  if (!complete && sync != SyncLevel::kOff) {
    // I8: the hot journal durable before recovery overwrites any database page. Its writer
    // may have died before syncing it (then the database holds none of its pages, but the
    // rollback rewrites them all the same), and a power loss that tears a page the rollback
    // is rewriting must find the journal again to finish the job.
    JKV_RETURN_IF_ERROR(SyncFile(**file, vfs::SyncKind::kAll, "I8 hot journal"));
    JKV_RETURN_IF_ERROR(SyncDir(*fs, journal_path, "I8 hot journal directory"));
  }
  if (!complete) JKV_RETURN_IF_ERROR(ApplyRollback(*parsed, file->get(), db));
  // The database durable before the journal may go: after a rollback, pager I3; for a complete
  // journal, I6: its writer may have died before its own database sync (I2), leaving the pages
  // only in the OS cache, and without the journal a power loss would leave half a transaction.
  bool db_synced = false;
  if (sync != SyncLevel::kOff) {
    JKV_RETURN_IF_ERROR(SyncFile(*db, vfs::SyncKind::kData, "I3/I6 database (recovery)"));
    db_synced = true;
  }
  JKV_DCHECK(db_synced || sync == SyncLevel::kOff);  // I3 after a rollback, I6 either way
  JKV_RETURN_IF_ERROR(DiscardJournalDurably(fs, journal_path, std::move(file).value(), mode, sync));
  if (super.has_value()) {
    JKV_RETURN_IF_ERROR(RemoveSuperIfUnnamed(fs, super_path, *super, sync));
  }
  return complete ? JournalRecovery::kStale : JournalRecovery::kRolledBack;
}

}  // namespace journalkv::pager
