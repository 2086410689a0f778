// A write transaction across several databases: one commit for the write transactions of
// several pagers, each a different database file (the engine's BeginWriteAcross, engine/across.h;
// docs/across.md has the protocols and their crash states). What the commit guarantees depends on
// the participants' journal family, which must be the same for all of them:
//   - rollback (DELETE, TRUNCATE, PERSIST): atomic across the databases after any crash. A
//     super-journal lists the participants and each journal names it; its removal is the
//     commit point (pager/super_journal.h, J1..J8; rollback_across.cc).
//   - atomic: atomic across the databases after any crash. Every participant's batch is
//     prepared durably, then one super record naming each participant is written and synced
//     (the commit point), then each batch is committed; recovery rolls the batches of a
//     surviving record forward (atomic_across.h, Y1..Y7).
//   - WAL and WAL2: atomic per database only (as SQLite's ATTACH in WAL mode): each participant
//     commits in turn; a crash between two of them can leave one database changed and another
//     not. A commit that fails part-way says which databases committed.
//   - MEMORY and OFF keep no journal on disk: refused (CheckAcross).
// Mixed families are refused (CheckAcross): no protocol spans a journal and a log.
//
// The caller (the engine) began the transactions in one canonical order, by the files'
// identity (vfs::File::Identity), so that two transactions across overlapping databases take
// the locks in the same order and cannot deadlock; CommitAcross takes the commit's locks
// (EXCLUSIVE) in the order of `txns` too.
#ifndef JOURNALKV_PAGER_ACROSS_H_
#define JOURNALKV_PAGER_ACROSS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "pager/txn.h"

namespace journalkv::pager {

// Why `txns` cannot commit as one, or OK: FailedPrecondition for participants of different
// journal families (naming two of them and their modes), and for a participant in MEMORY or
// OFF mode (no journal on disk). InvalidArgument for fewer than one transaction.
absl::Status CheckAcross(absl::Span<WriteTxn* const> txns);

// Commits `txns` as one (the guarantee of their family, above). On success every one has
// committed. On error, as WriteTxn::Commit: every participant has rolled back (or, where a
// database file was touched and the undo failed, its pager is in its error state and the next
// opener recovers it, with the same outcome for every participant), except: a busy error
// (Unavailable) while taking the commit's locks, before anything was written, leaves every
// transaction open and whole (commit again to retry, or roll back); and in WAL and WAL2 the
// participants before the one that failed have committed (the message names them).
// REQUIRES: CheckAcross(txns) is OK; each transaction open, of a different database, in the
// canonical order.
absl::Status CommitAcross(absl::Span<WriteTxn* const> txns);

// How one file of a transaction across databases names another (a journal its super-journal,
// a super-journal or a super record its participants, a prepared batch its record): by the
// name alone when both are in one folder, so that databases kept together can be moved,
// restored or mounted elsewhere mid-commit and still recover; by the path as given otherwise
// (a relative one is then resolved against the working directory). PathFrom(from, name) is
// the path a name NameFrom gave means to the file at `from`.
std::string NameFrom(const std::string& from, const std::string& to);
std::string PathFrom(const std::string& from, const std::string& name);

// The families' commits (each family's across file). REQUIRES: as CommitAcross, every
// transaction of that family, each one's StartCommit said to go on.
class AcrossCommit {
 public:
  static absl::Status Rollback(absl::Span<WriteTxn* const> txns);  // rollback_across.cc
  static absl::Status Atomic(absl::Span<WriteTxn* const> txns);    // atomic_across.cc
  static absl::Status EachInTurn(absl::Span<WriteTxn* const> txns);  // across.cc (WAL)

  // WriteTxn's protected steps, for the families' commits.
  static absl::Status CommitPages(WriteTxn& txn) { return txn.CommitPages(); }
  static absl::Status FinishCommit(WriteTxn& txn, absl::Status s) {
    return txn.FinishCommit(std::move(s));
  }
  static bool Retryable(const WriteTxn& txn) { return txn.commit_retryable_; }
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ACROSS_H_
