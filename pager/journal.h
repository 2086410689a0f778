// The rollback journal of one database: writing it during a write transaction, ending it at
// commit, rolling a transaction back from it, and recovering a hot journal left by a crash.
//
// The format is in journal_format.h. The commit protocol (I1, I2, I3 and I4 of pager.h):
//
//   1. Flush(): header, original images and the seal are written in one sequential write and
//      synced (sync >= NORMAL), with the directory synced when the journal file was just
//      created. Nothing in the database file has changed yet.
//   2. The pager writes the new pages and syncs the database file (sync >= NORMAL).
//   3. Finish(): the journal is ended by mode (DELETE unlinks, TRUNCATE truncates to 0, PERSIST
//      zeroes the header). Only EXTRA makes this durable: if a power loss undoes it, the seal
//      proves the transaction complete and the next opener discards the journal unapplied.
//
// A commit that fails after step 1 is undone by RollBack. If that undo fails before the
// database is restored durably, RollBack unseals the journal (pager I12), so that the next
// opener rolls it back instead of taking the failed commit as complete.
//
// A transaction across databases (super_journal.h) names its super-journal in the journal
// (NameSuper), and recovery then follows J5 and J7 instead of the seal.
//
// MEMORY and OFF keep original images in memory only (needed when a transaction that spilled is
// rolled back); they never create a file and are not crash-atomic.
//
// Thread-safety: used by the single write transaction of a pager; recovery is called with the
// pager's lock held.
#ifndef JOURNALKV_PAGER_JOURNAL_H_
#define JOURNALKV_PAGER_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/types.h"
#include "pager/journal_format.h"
#include "pager/pager_options.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

class Journal {
 public:
  Journal(vfs::FileSystem* fs, std::string journal_path, JournalMode mode, SyncLevel sync,
          uint32_t page_size);
  ~Journal();

  // Starts the journal of a new write transaction (nothing is written yet). `change_counter`
  // is the database's at the start: it tells whether another connection has committed (and
  // written the journal) since this one last did.
  void Begin(uint32_t orig_pages, uint64_t change_counter);

  // Names the super-journal of a transaction across databases (super_journal.h) in this
  // journal: in its header when the next Flush writes the header, else (the transaction
  // spilled, its header is in the file) in a super record that Flush writes before the other
  // queued records and the seal (J3). REQUIRES: the super-journal is durable (J2);
  // `super_path` fits (kMaxSuperPathSize); before the records of the commit are queued.
  void NameSuper(const std::string& super_path, uint64_t super_nonce);

  // Queues the original image (a whole page) of a page the transaction is about to write to the
  // database file for the first time.
  void AddOriginal(PageNo page_no, absl::Span<const uint8_t> image);
  // Room for `count` more originals, before they are queued (a spill knows how many): the
  // buffer then grows once, not by doubling, each step a fresh mapping faulted in and a copy.
  void ReserveOriginals(size_t count);

  // Writes everything queued (the header first, if this transaction has not written it yet),
  // followed by `seal` when given, and makes it durable as the sync level asks. When this
  // returns OK the database file may be written. On error the database file is untouched by
  // this call.
  absl::Status Flush(const Seal* seal);

  enum class Outcome { kCommitted, kRolledBack };
  // Ends the journal after the database file holds (and, at sync >= NORMAL, has synced) the
  // transaction, or after a rollback restored the database.
  absl::Status Finish(Outcome outcome);

  // Undoes the transaction's writes to `db`: restores every journaled original, cuts the file
  // back to orig_pages, syncs it (sync != OFF) and ends the journal. Used when a transaction
  // whose pages spilled into the database file is rolled back, and when a commit fails after
  // its journal was flushed. On error the journal is left for the next opener to roll back;
  // when the restore itself failed and this transaction wrote a seal, the seal's first 8 bytes
  // are overwritten with zeros first (pager I12). The error returned is the undo's.
  absl::Status RollBack(vfs::File* db);

  // The original image of `page_no` this transaction journaled (the in-memory journal's, or
  // the record's in the file, written by a Flush), into `image` (a whole page): a rebuild reads
  // the old tree's pages it has overwritten back from here (pager L8). NotFound when the
  // transaction journaled no original of it; DataLoss when the copy read back fails its
  // checksum.
  absl::Status ReadOriginal(PageNo page_no, absl::Span<uint8_t> image) const;

  // True once this transaction has written to the journal file or the in-memory journal.
  bool touched() const { return written_ || !memory_images_.empty(); }

  // True when every original queued so far is in the journal and, at sync != OFF, durable with
  // the journal's directory entry: the database file may be written (pager I1). MEMORY and OFF
  // hold their originals in memory from AddOriginal on. For debug checks.
  bool flushed() const {
    return in_memory() || (written_ && pending_.size() <= kJournalHeaderSize &&
                           (sync_ == SyncLevel::kOff || synced_since_last_write_));
  }

 private:
  bool in_memory() const { return mode_ == JournalMode::kMemory || mode_ == JournalMode::kOff; }
  absl::Status OpenForTransaction();
  absl::Status SyncIfNeeded();
  // pending_ back to its lead, nothing queued (its capacity kept).
  void ClearPending();
  // Writes back every original the journal file holds for this transaction and syncs `db`
  // (sync != OFF): the database restored durably, RollBack's part before the journal may end.
  absl::Status RestoreDatabase(vfs::File* db);
  // I12: after a failed restore, makes the seal this transaction wrote fail its check.
  void UnsealAfterFailedUndo();
  // Chooses records_offset for this transaction's records (journal_format.h, "Placement").
  uint64_t PlaceRecords(std::optional<uint64_t> size_bytes) const;

  vfs::FileSystem* const fs_;
  const std::string path_;
  const JournalMode mode_;
  const SyncLevel sync_;
  const uint32_t page_size_;

  std::unique_ptr<vfs::File> file_;  // open while a transaction uses it (file modes)
  bool created_ = false;             // file_ was created by this transaction
  bool dir_synced_once_ = false;     // TRUNCATE/PERSIST: the file's directory entry is durable
  JournalHeader header_;
  bool written_ = false;    // the header of this transaction is in the file
  bool synced_since_last_write_ = false;  // file and directory entry (flushed(), I1)
  uint64_t end_offset_ = 0;  // where the next record goes
  // Where this transaction's seal starts in the file, once Flush has tried to write it (the
  // write may have failed half-way); I12.
  std::optional<uint64_t> seal_offset_;
  // Byte ranges of the file holding records of journals whose header may still be the durable
  // one; this transaction's records must not overwrite them.
  std::vector<std::pair<uint64_t, uint64_t>> protected_;
  uint64_t start_counter_ = 0;
  // The change counter at which protected_ was last known to be complete; a different counter
  // at Begin means another connection has written the journal since.
  std::optional<uint64_t> known_counter_;
  // The encoded records not yet written, after kJournalHeaderSize bytes kept for the header
  // (Flush encodes it there when header and records go in one write). Emptied to that lead by
  // each Flush but never freed within a transaction: a rebuild spills thousands of originals
  // per flush, and a buffer grown afresh for each (by doubling, then copied once more behind
  // the header) cost a fifth of a compaction in page faults and copies. Finish frees a large one.
  std::string pending_;
  // Where each original queued in pending_ starts among its records (not counting the lead),
  // and, once written, in the file (ReadOriginal).
  std::vector<std::pair<uint32_t, uint64_t>> pending_images_;
  absl::flat_hash_map<uint32_t, uint64_t> image_offsets_;
  absl::flat_hash_map<uint32_t, std::string> memory_images_;  // MEMORY/OFF modes
};

// What recovery found.
enum class JournalRecovery {
  kNone,        // no journal, or one with no valid header
  kStale,       // a completed transaction's journal: discarded, database untouched
  kRolledBack,  // a hot journal: the database was restored to the state before it
};

// Inspects the journal of a database and, when it is hot, rolls the database back.
// REQUIRES: the caller holds the EXCLUSIVE lock on `db` (so no live writer owns the journal).
// `db_page_size` is the page size the database header gives, if it could be read.
// DataLoss when the journal's page size contradicts the database's. `read_only`: report a hot
// journal as FailedPrecondition instead of touching anything.
absl::StatusOr<JournalRecovery> RecoverJournal(vfs::FileSystem* fs,
                                               const std::string& journal_path, vfs::File* db,
                                               std::optional<uint32_t> db_page_size,
                                               JournalMode mode, SyncLevel sync,
                                               AccessMode access);

// Whether the journal at `journal_path` has a valid header naming the super-journal
// `super_path` with `super_nonce` (super_journal.h J7). False when there is no journal.
absl::StatusOr<bool> JournalNamesSuper(vfs::FileSystem* fs, const std::string& journal_path,
                                       const std::string& super_path, uint64_t super_nonce);

// True when a journal file with a valid header exists (cheap pre-check before locking).
absl::StatusOr<bool> JournalHeaderValid(vfs::FileSystem* fs, const std::string& journal_path);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_JOURNAL_H_
