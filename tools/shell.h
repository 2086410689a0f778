// The `jkv DBPATH shell` line protocol (README, "CLI"): one command per input line, answered
// by exactly one output line (scan: "pairs N" and N more lines), flushed after every answer, so
// that another program can drive a database through a pipe. `jkv --help` lists the commands;
// tools/help.cc is the user-facing description and this class implements it.
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
// rolls back whatever is still open, so a Shell must be destroyed before its Db.
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
#include "engine/db.h"

namespace journalkv::tools {

class Shell {
 public:
  // `db` and `out` must outlive the Shell.
  Shell(Db* db, std::ostream* out);
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

  // The answer to a command, without the final newline.
  absl::StatusOr<std::string> Execute(absl::string_view name, const Fields& args);
  absl::StatusOr<std::string> Begin(const Fields& args);
  // Opens the transaction `begin` (args included) asks for.
  absl::Status OpenTransaction(const Fields& args);
  absl::StatusOr<std::string> End(absl::string_view name);
  absl::StatusOr<std::string> Put(const Fields& args);
  absl::StatusOr<std::string> Del(const Fields& args);
  absl::StatusOr<std::string> Get(const Fields& args);
  absl::StatusOr<std::string> Scan(const Fields& args);
  absl::StatusOr<std::string> Count();
  // Runs fn on the open transaction, or on a read transaction of its own when none is open.
  template <typename Fn>
  absl::StatusOr<std::string> Read(Fn fn);
  // FailedPrecondition when a read transaction is open or the last begin failed: writes are
  // refused then.
  absl::Status CheckWritable(absl::string_view name) const;
  void EndTransactions();

  Db* const db_;
  std::ostream* const out_;
  std::unique_ptr<ReadTransaction> read_txn_;    // set by "begin read"
  std::unique_ptr<WriteTransaction> write_txn_;  // set by "begin"
  // The error of the begin that put the shell in `failed`; cleared by commit, rollback, a
  // begin that succeeds, quit and the end of the input.
  std::optional<absl::Status> failed_begin_;
};

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_SHELL_H_
