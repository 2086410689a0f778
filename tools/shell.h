// The `jkv DBPATH shell [OTHER_DBPATH ...]` line protocol (README, "CLI"; docs/cli.md, "The
// shell"): one command per input line, answered by exactly one output line (scan: "pairs N"
// and N more lines), flushed after every answer, so that another program can drive databases
// through a pipe. `jkv --help` lists the commands; tools/help.cc is the user-facing
// description and this class implements it.
//
// Several databases (`jkv DBPATH shell OTHER_DBPATH ...`): database 0 is DBPATH, 1.. the
// others in the order given. The rules, which leave the one-database shell as it was:
//   X1. An optional first field "@N" (N in decimal) names the database the line's command works
//       on; without it, database 0. "@N" past the last database, or anything else starting
//       with "@" ("@", "@x", "@-1", "@1x"), answers an error naming it and runs nothing.
//   X2. begin, commit, rollback, help, quit and exit work on every database: with "@N" they
//       answer an error and do nothing (a refused begin line leaves the shell in `failed`).
//   X3. With several databases, `begin` is one transaction across all of them
//       (journalkv::BeginWriteAcross: the family's guarantee, engine/across.h); put and del
//       write to the named database's part, get/scan/count read it; `commit` and `rollback`
//       end it as a whole. A refused BeginWriteAcross (mixed journal families, memory/off,
//       busy) is a failed begin. With one database `begin` is Db::BeginWrite, as before.
//   X4. `begin read` opens one read transaction on each database, in order (each its own
//       snapshot: a commit across them between two opens can be seen in one and not yet in
//       another); if one fails, those opened are closed and the begin failed.
//   X5. Outside a transaction each command runs on the named database alone (autocommit), and
//       stats and checkpoint always do.
// The caller opens the databases (each a different file: BeginWriteAcross refuses one file
// twice, and jkv refuses it at startup).
//
// Transaction state (at most one transaction is open):
//
//   none --begin--> write --commit/rollback--> none
//   none --begin read--> read --commit/rollback--> none
//   none --begin or begin read that answers an error--> failed --commit/rollback--> none
//   failed --begin, begin read--> as from none (a retry)
//
// In `none`, get/scan/count read in a short read transaction of their own and put/del commit
// on their own. A failed commit ends the transaction (it has rolled back). In `failed` no
// transaction is open, but the input meant the lines after its begin for one: put and del are
// refused (committing them one by one would break the transaction's atomicity), reads run as
// in `none`, rollback answers ok and commit an error (nothing was committed). The destructor
// rolls back whatever is still open, so a Shell must be destroyed before its Dbs. With several
// databases `write` holds a WriteAcross; a commit that gives up busy and says the transaction
// is still open (WriteAcross::Commit) keeps it open, as with one database.
//
// Thread-safety: one thread at a time.
#ifndef JOURNALKV_TOOLS_SHELL_H_
#define JOURNALKV_TOOLS_SHELL_H_

#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/across.h"
#include "engine/db.h"

namespace journalkv::tools {

class Shell {
 public:
  // `db` and `out` must outlive the Shell.
  Shell(Db* db, std::ostream* out);
  // A shell over `dbs` (database 0, 1, ...; at least one, none null), which, with `out`,
  // must outlive the Shell.
  Shell(std::vector<Db*> dbs, std::ostream* out);
  ~Shell();
  Shell(const Shell&) = delete;
  Shell& operator=(const Shell&) = delete;

  // Executes lines from `in` until quit, exit or the end of `in`, then rolls back an open
  // transaction. Errors of commands are answers, not failures: Run returns an error only when
  // writing to `out` fails (a full disk).
  absl::Status Run(std::istream& in);

  // Executes one line (without its '\n'; a final '\r' is ignored) and writes its answer, if any.
  // Returns false for quit and exit.
  bool ExecuteLine(absl::string_view line);

 private:
  using Fields = std::vector<absl::string_view>;  // the command's arguments, name excluded
  // The database a line names (X1): unset without "@N", an error for a bad one.
  using Target = std::optional<absl::StatusOr<size_t>>;

  absl::StatusOr<size_t> ParseTarget(absl::string_view field) const;
  // The answer to a command, without the final newline.
  absl::StatusOr<std::string> Execute(absl::string_view name, const Fields& args,
                                      const Target& target);
  // The database a per-database command works on (X1, X5).
  absl::StatusOr<size_t> Database(const Target& target) const;
  absl::StatusOr<std::string> Begin(const Fields& args, const Target& target);
  // Opens the transaction `begin` (args included) asks for.
  absl::Status OpenTransaction(const Fields& args);
  absl::StatusOr<std::string> End(absl::string_view name);
  absl::StatusOr<std::string> EndAcross(absl::string_view name);
  absl::StatusOr<std::string> Put(size_t n, const Fields& args);
  absl::StatusOr<std::string> Del(size_t n, const Fields& args);
  absl::StatusOr<std::string> Get(size_t n, const Fields& args);
  absl::StatusOr<std::string> Scan(size_t n, const Fields& args);
  absl::StatusOr<std::string> Count(size_t n);
  absl::StatusOr<std::string> Checkpoint(size_t n, const Fields& args);
  // The open write transaction's part for database n, or null when none is open.
  WriteTransaction* WriteTxn(size_t n);
  // Runs fn on database n's part of the open transaction, or on a read transaction of its own
  // when none is open.
  template <typename Fn>
  absl::StatusOr<std::string> Read(size_t n, Fn fn);
  // FailedPrecondition when a read transaction is open or the last begin failed: writes are
  // refused then.
  absl::Status CheckWritable(absl::string_view name) const;
  void EndTransactions();

  const std::vector<Db*> dbs_;
  std::ostream* const out_;
  std::vector<std::unique_ptr<ReadTransaction>> read_txns_;  // "begin read": one per database
  std::unique_ptr<WriteTransaction> write_txn_;  // "begin" with one database
  std::unique_ptr<WriteAcross> across_;          // "begin" with several (X3)
  // The error of the begin that put the shell in `failed`; cleared by commit, rollback, a
  // begin that succeeds, quit and the end of the input.
  std::optional<absl::Status> failed_begin_;
};

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_SHELL_H_
