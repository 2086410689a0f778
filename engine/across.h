// A write transaction across several databases: one Commit for writes to several open Db
// handles (docs/across.md).
//
//   JKV_ASSIGN_OR_RETURN(auto txn, journalkv::BeginWriteAcross({messages.get(), index.get()}));
//   JKV_RETURN_IF_ERROR(txn->For(messages.get())->Put("m:1", "hello"));
//   JKV_RETURN_IF_ERROR(txn->For(index.get())->Put("word:hello", "m:1"));
//   JKV_RETURN_IF_ERROR(txn->Commit());                 // both, or neither
//
// The guarantee depends on the databases' journal family, which must be the same for all:
//   - delete, truncate, persist: atomic across the databases after any crash or power loss (a
//     super-journal, as SQLite's);
//   - atomic: atomic across the databases after any crash or power loss (a super record, then
//     each database's atomic batch; recovery rolls the rest forward);
//   - wal, wal2 (they mix): atomic per database only, as SQLite's ATTACH in WAL mode: a crash
//     during the commit can leave one database with the transaction and another without it;
//   - memory, off, and databases of different families: refused (FailedPrecondition).
//
// BeginWriteAcross begins each database's write transaction in one canonical order, by the
// files' identity (device and inode), not the order of its argument, so two transactions
// across overlapping databases cannot deadlock; each waits up to its database's busy timeout.
// Thread-safety: as a WriteTransaction, used by one thread at a time; destroyed before its Dbs.
#ifndef JOURNALKV_ENGINE_ACROSS_H_
#define JOURNALKV_ENGINE_ACROSS_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/db.h"

namespace journalkv {

class WriteAcross {
 public:
  // Rolls back unless committed.
  ~WriteAcross();
  WriteAcross(const WriteAcross&) = delete;
  WriteAcross& operator=(const WriteAcross&) = delete;

  // The number of databases, and the write transaction of each: in the order given to
  // BeginWriteAcross (i), or by its Db (null for a Db that is not one of them). Their Commit,
  // CommitOrRollback and Rollback are refused (FailedPrecondition): the transaction commits
  // and rolls back as a whole, here.
  size_t size() const { return txns_.size(); }
  WriteTransaction& operator[](size_t i) { return *txns_[i]; }
  WriteTransaction* For(const Db* db);

  // Makes every database's writes durable (as each one's sync level promises) and visible, as
  // one transaction (the guarantee of the family, above). On error nothing of the transaction
  // is in any database, and it has ended, except: after a busy error (Unavailable) that says
  // "the transaction is still open" (a database's readers outlasted its busy timeout before
  // anything was written: Commit again to retry, or Rollback); and in wal and wal2, where
  // the databases before the one that failed have committed (the message names them).
  // FailedPrecondition once ended.
  absl::Status Commit();
  // Discards every write in every database. Idempotent.
  absl::Status Rollback();
  // False once committed or rolled back.
  bool open() const;

 private:
  friend absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(
      absl::Span<Db* const> dbs);
  WriteAcross() = default;

  std::vector<Db*> dbs_;                                   // as given
  std::vector<std::unique_ptr<WriteTransaction>> txns_;    // as given
  std::vector<size_t> order_;                              // canonical: indexes into txns_
  bool ended_ = false;
};

// Begins a write transaction across `dbs` (at least one, each a different database file,
// none read-only, all of one journal family: InvalidArgument or FailedPrecondition naming the
// problem otherwise). Waits for each database's write lock up to its busy timeout
// (Unavailable "busy: ..."; the locks taken are given back).
absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(absl::Span<Db* const> dbs);
inline absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(
    std::initializer_list<Db*> dbs) {
  return BeginWriteAcross(absl::MakeConstSpan(dbs.begin(), dbs.size()));
}

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_ACROSS_H_
