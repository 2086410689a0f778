// The rollback journal file format (`x.db-journal`).
//
// This comment is the specification of the journal; keep it exact. All integers little-endian.
//
// journal := header (kJournalHeaderSize bytes) gap record* seal? garbage?
//
// The records start at records_offset (>= 512), not always right after the header: a new
// transaction places its records where they cannot overwrite the records of an older journal
// whose header may still be the durable one (see "Placement" below).
//
// header (one 512-byte sector, so that zeroing it in PERSIST mode cannot tear a record):
//
//   offset | size | field          | meaning
//   -------+------+----------------+--------------------------------------------------------
//   0      | 8    | magic          | "jkvjrnl\x01" (kJournalMagic)
//   8      | 4    | format_version | 1
//   12     | 4    | page_size      | P, equal to the database's
//   16     | 8    | nonce          | random per transaction; seeds every record checksum, so
//          |      |                | records left over from an older transaction never check
//   24     | 4    | orig_pages     | the database's page_count before the transaction
//   28     | 4    | sector_size    | 512
//   32     | 8    | records_offset | file offset of the first record, >= 512
//   40     | 8    | checksum       | XXH3-64 of bytes [0, 40), seed 0
//   48     | 4    | super_len      | L: length of the super-journal's path; 0: none (a single
//          |      |                | database's transaction; every journal older than this
//          |      |                | field has zeros here). L <= kMaxSuperPathSize
//   52     | 8    | super_nonce    | the super-journal's nonce (super_journal.h)
//   60     | 8    | super_checksum | XXH3-64 of bytes [48, 60) and the L path bytes, seed 0;
//          |      |                | 0 when L = 0
//   68     | L    | super_path     | the super-journal's path (a transaction across databases,
//          |      |                | super_journal.h J3, J5)
//   68+L   | rest | zero           |
//
// A header whose super fields do not check (L too long, checksum wrong) is valid but damaged:
// recovery refuses it (DataLoss) rather than guess whether its transaction committed.
//
// record (an original page image, written before the database page is overwritten):
//
//   offset | size | field     | meaning
//   -------+------+-----------+-------------------------------------------------------------
//   0      | 4    | page_no   | page number, >= 1
//   4      | 4    | kind      | 1 (kRecordKindPage)
//   8      | P    | image     | the page as it was before the transaction, trailer included
//   8+P    | 8    | checksum  | XXH3-64 of bytes [0, 8+P) of the record, seeded with nonce
//
// super record (a transaction across databases whose journal already held records when its
// commit began, super_journal.h J3: the header is never rewritten in place, so the journal
// names the super-journal here instead, after the records spilled before the commit and
// before the commit's own records and seal):
//
//   offset | size | field       | meaning
//   -------+------+-------------+----------------------------------------------------------
//   0      | 4    | zero        | 0 (not a page number)
//   4      | 4    | kind        | 3 (kRecordKindSuper)
//   8      | 4    | L           | length of the super-journal's path, 1..kMaxSuperPathSize
//   12     | 8    | super_nonce | the super-journal's nonce
//   20     | L    | super_path  | the super-journal's path
//   20+L   | 8    | checksum    | XXH3-64 of bytes [0, 20+L) of the record, seeded with nonce
//
// seal (written with the last records, before the first database page of the final commit
// phase; it lists every page the transaction writes to the database file):
//
//   offset | size  | field       | meaning
//   -------+-------+-------------+----------------------------------------------------------
//   0      | 4     | zero        | 0 (not a page number)
//   4      | 4     | kind        | 2 (kRecordKindSeal)
//   8      | 4     | n           | number of entries
//   12     | 4     | new_pages   | the database's page_count after the transaction
//   16     | 12*n  | entries     | n x (page_no: 4, trailer: 8): the checksum trailer each
//          |       |             | page carries once the transaction's image is written
//   16+12n | 8     | checksum    | XXH3-64 of bytes [0, 16+12n) of the seal, seeded with nonce
//
// Placement. Ending a journal (truncate, zeroed header, unlink) is not synced below EXTRA, so
// after a power loss the previous transaction's journal may come back, complete with its seal.
// If the next transaction's unsynced records had overwritten part of it, its seal would be
// lost and a prefix of a committed transaction would be rolled back. So a transaction writes
// its records only into bytes that no journal which may still be durable occupies: at 512 when
// they fit before the previous journal's records, else after them. (Once a transaction's
// journal is synced, its header is the durable one and older journals are dead.)
//
// Reading: a reader takes the header (invalid header: no journal), then records while each
// checks; the first record that does not check, or the end of the file, ends the journal. A
// super record that checks names the super-journal as the header's fields would.
//
// A journal is *hot* (its transaction must be rolled back) when its header is valid and no live
// writer holds the RESERVED lock, unless it has a valid seal and every sealed page in the
// database already carries its sealed trailer (then the transaction completed and the journal is
// *stale*: it is discarded without touching the database). This is what lets a commit be durable
// without syncing the end of the journal.
//
// Unsealing. A writer whose commit failed, and whose undo then failed too, overwrites the first
// 8 bytes of its seal (zero and kind) with zeros (pager I12): a record of kind 0 ends the
// journal, so it has no seal and is hot, whatever the database file holds.
#ifndef JOURNALKV_PAGER_JOURNAL_FORMAT_H_
#define JOURNALKV_PAGER_JOURNAL_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"

namespace journalkv::pager {

inline constexpr char kJournalMagic[8] = {'j', 'k', 'v', 'j', 'r', 'n', 'l', 1};
inline constexpr uint32_t kJournalFormatVersion = 1;
inline constexpr uint32_t kJournalHeaderSize = 512;
inline constexpr uint32_t kJournalSectorSize = 512;
// On disk: never renumber.
inline constexpr uint32_t kRecordKindPage = 1;
inline constexpr uint32_t kRecordKindSeal = 2;
inline constexpr uint32_t kRecordKindSuper = 3;
inline constexpr uint32_t kRecordPrefixSize = 8;
inline constexpr uint32_t kRecordChecksumSize = 8;
inline constexpr uint32_t kSealEntrySize = 12;

inline constexpr uint64_t RecordSize(uint32_t page_size) {
  return kRecordPrefixSize + page_size + kRecordChecksumSize;
}

inline constexpr uint32_t kSuperFieldsOffset = 48;
inline constexpr uint32_t kMaxSuperPathSize = kJournalHeaderSize - 68;

struct JournalHeader {
  uint32_t page_size = 0;
  uint64_t nonce = 0;
  uint32_t orig_pages = 0;
  uint64_t records_offset = kJournalHeaderSize;
  // The super-journal this transaction belongs to (empty: none), and its nonce.
  std::string super_path;
  uint64_t super_nonce = 0;
  // Decoding only: the super fields were not zeros yet did not check.
  bool super_damaged = false;
};

struct SealEntry {
  PageNo page_no;
  uint64_t trailer = 0;
};

struct Seal {
  uint32_t new_pages = 0;
  std::vector<SealEntry> entries;
};

// Fills `out` (kJournalHeaderSize bytes).
void EncodeJournalHeader(const JournalHeader& header, absl::Span<uint8_t> out);
// std::nullopt when the bytes are not a valid header (zeroed, torn, foreign).
std::optional<JournalHeader> DecodeJournalHeader(absl::Span<const uint8_t> in);

// Appends one record to `out`. `image` is a whole page (P bytes).
void AppendRecord(uint64_t nonce, PageNo page_no, absl::Span<const uint8_t> image,
                  std::string* out);
// Appends a super record naming `super_path` (at most kMaxSuperPathSize bytes) to `out`.
void AppendSuperRecord(uint64_t nonce, const std::string& super_path, uint64_t super_nonce,
                       std::string* out);
// Appends the seal to `out`.
void AppendSeal(uint64_t nonce, const Seal& seal, std::string* out);

// A journal as read back: the header, the records that check, and the seal if one checks.
struct ParsedJournal {
  JournalHeader header;
  struct Record {
    PageNo page_no;
    uint64_t image_offset = 0;  // file offset of the P-byte image
  };
  std::vector<Record> records;
  std::optional<Seal> seal;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_JOURNAL_FORMAT_H_
