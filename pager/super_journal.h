// The super-journal: how a write transaction across several databases in the rollback journal
// modes (DELETE, TRUNCATE, PERSIST) commits atomically (across.h; the coordinator is
// rollback_across.cc, recovery is RecoverJournal in journal.cc). This comment is the
// specification of the protocol and of the file; keep it exact.
//
// The file. A small file `<first participant's path>-super-<16 hex digits>` (random), in the
// directory of the first participant in the canonical order. All integers little-endian:
//
//   offset | size | field      | meaning
//   -------+------+------------+---------------------------------------------------------
//   0      | 8    | magic      | "jkvsupr\x01" (kSuperJournalMagic)
//   8      | 4    | version    | 1
//   12     | 4    | n          | number of participants, >= 2
//   16     | 8    | nonce      | random per transaction; every participant's journal names
//          |      |            | the super-journal by path and this nonce
//   24     | ...  | paths      | n x (length: 4, the database's path as its pager opened it)
//   ...    | 8    | checksum   | XXH3-64 of every byte before it, seed 0
//
// A file that is shorter, whose magic, version or checksum does not check, is not a
// super-journal; it is never torn under a journal that names it (J2), except after a power
// loss at sync OFF, which promises nothing: recovery then refuses it (DataLoss, naming it).
//
// Each participant's journal names the super-journal (journal_format.h: the header's bytes
// 48.., or a super record): its path and nonce. A journal naming none (zeros, as every
// journal before this protocol) is a single database's.
//
// The commit, in order (rollback_across.cc, AcrossCommit::Rollback):
//   1. EXCLUSIVE on every participant, in the canonical order, before anything is written.
//      Busy here leaves every transaction open and whole (retry or roll back); the ones
//      locked before give EXCLUSIVE back (RESERVED kept) unless they spilled, so their
//      readers go on meanwhile.
//   2. The super-journal is written, synced, and its directory synced (J2).
//   3. Each participant's journal names the super-journal, in one flush with the originals
//      and the seal, synced (pager I1): in the header it writes, or, for a journal that
//      already holds spilled records, in a super record written after them (J3).
//   4. Each participant's database pages written and synced (pager I2).
//   5. The commit point: the super-journal is removed and its directory synced (J4).
//   6. Each journal ends by its mode (unsynced below EXTRA, as a single database's: J5), and
//      each participant publishes its pages and ends.
// A failure in 2..5 undoes every participant in this process (Journal::RollBack: the
// originals restored and synced); the super-journal is removed once every participant is
// restored durably (J6), or left when an undo failed (the next opener rolls back). A failed
// sync in 2..5 puts every participant's handle in its error state (pager I7).
//
// Invariants (sync: every one at sync OFF for a process crash only; the super-journal and
// its directory are synced unless every participant is at sync OFF):
//   J1. A participant's database file is written by the commit only after the super-journal
//       and every participant's journal naming it are durable (2, 3 before 4). So while no
//       database holds a page of the transaction, any crash leaves at worst journals to roll
//       back of untouched databases.
//   J2. The super-journal, and its directory entry, are durable before any journal names it:
//       a journal that names a super-journal never outlives the super-journal's creation by
//       a power loss, so "the super-journal is gone" means only "it was removed" (J4, J6, J7).
//   J3. A journal names the super-journal before its seal, in the order a reader reads it:
//       in its header, or in a super record (journal_format.h) after the records spilled
//       before the commit and before the commit's records and seal. The header of a journal
//       that spilled is never rewritten in place: a power loss may leave an unsynced sector
//       as garbage, and with a garbage header the whole journal, and the rollback of the
//       spilled pages already in the database, would be lost (the crash sweep found this
//       when this protocol rewrote the header). A reader stops at the first record that does
//       not check, so a seal is read only past the super record: a power loss that keeps the
//       seal and drops the super record leaves a journal without seal, hot, rolled back. No
//       sync of its own: the flush's (pager I1) makes both durable before the database is
//       written.
//   J4. The commit point is the durable removal of the super-journal (its directory synced),
//       made only after every participant's database pages are durable (4 before 5). Before
//       it every participant rolls back after a crash; after it none does.
//   J5. Recovery of a journal that names a super-journal (RecoverJournal):
//         - gone, or of another nonce: the transaction committed (J4) or was undone durably
//           (J6, J7): the super-journal's directory is synced first (its removal may be in
//           the OS only: the committer died between the removal and its directory sync, and
//           a power loss after this discard would bring it back for the other participants,
//           which would roll back what this one keeps; the crash sweep found this), then the
//           database file is synced (pager I6) and the journal discarded without touching
//           the database, whatever its seal says (a directory that is gone as well needs no
//           sync: nothing there can come back);
//         - present with this nonce: the transaction did not commit: this database is rolled
//           back even if its seal checks (the stale rule does not apply while the
//           super-journal exists), then the journal is ended durably.
//       The nonce, not the list of paths, says that the journal belongs to the super-journal:
//       a participant reopened by another spelling of its path is still rolled back.
//   J6. The super-journal is removed (undone transaction) only when no listed participant's
//       journal may still roll back into it: after every participant's in-process undo has
//       restored its database durably (a journal that comes back after a power loss then
//       finds the super-journal gone and is discarded over an already restored database), or
//       by recovery (J7). The removal's directory sync (here and in J7) only keeps a garbage
//       file from coming back (J8): the crash sweep passes without it.
//   J7. A recoverer removes the super-journal, and syncs its directory, only after ending its
//       own journal durably and then finding that no listed participant's journal names it
//       (reading their journals: header and super record). Two recoverers of different participants at once: each ends
//       its own journal before reading the others', so at least the later of the two sees
//       both ended and removes it (a second removal finds nothing: fine). A recovery that
//       opens one database only leaves the super-journal for the others, whose journals
//       still name it and roll them back when they are opened. A crash during recovery
//       leaves the super-journal (removal is last), so the journals still naming it roll
//       back again (idempotent: the originals are written again).
//   J8. A super-journal that no journal names (a crash between 2 and 3, or between a
//       recoverer's end of its journal and the removal) is garbage: harmless, since nothing
//       consults it but a journal naming its path and nonce, and names are never reused.
//       It is left on disk (a leak of one small file).
// Names. A journal names its super-journal, and the super-journal its participants, by the
// file's name alone when both are in one folder (across.h, NameFrom), so a folder of databases
// caught mid-commit can be moved, restored or mounted elsewhere and still recover (the real
// power-cut test mounts each cut at another path); a file in another folder is named by its
// path as the pager opened it (a relative one is then resolved against the working
// directory, so recovery must run where the commit did).
// Limits: the super-journal's path must fit in the journal header (kMaxSuperPathSize bytes);
// a longer one refuses the commit before anything is written.
#ifndef JOURNALKV_PAGER_SUPER_JOURNAL_H_
#define JOURNALKV_PAGER_SUPER_JOURNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

inline constexpr char kSuperJournalMagic[8] = {'j', 'k', 'v', 's', 'u', 'p', 'r', 1};
inline constexpr uint32_t kSuperJournalVersion = 1;

struct SuperJournal {
  uint64_t nonce = 0;
  std::vector<std::string> paths;  // the participants' database paths
};

std::string EncodeSuperJournal(const SuperJournal& super);
// std::nullopt when `bytes` are not a whole super-journal.
std::optional<SuperJournal> DecodeSuperJournal(absl::Span<const uint8_t> bytes);

// The super-journal at `path`: std::nullopt when there is no file there. DataLoss (naming
// the file) when it is there but is not a whole super-journal.
absl::StatusOr<std::optional<SuperJournal>> ReadSuperJournal(vfs::FileSystem* fs,
                                                            const std::string& path);

// A new super-journal path for a transaction whose first participant is `first_db_path`.
std::string NewSuperJournalPath(const std::string& first_db_path);
// A random nonce.
uint64_t NewSuperNonce();

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_SUPER_JOURNAL_H_
