#include "tools/shell.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "tools/kv_ops.h"
#include "tools/report.h"
#include "tools/tokens.h"

namespace journalkv::tools {
namespace {

// The commands besides quit and exit, their number of arguments and how they are written.
struct ShellCommand {
  absl::string_view name;
  size_t min_args;
  size_t max_args;
  absl::string_view usage;
};

constexpr ShellCommand kShellCommands[] = {
    {"begin", 0, 1, "begin [read]"},
    {"commit", 0, 0, "commit"},
    {"rollback", 0, 0, "rollback"},
    {"put", 2, 2, "put K V"},
    {"del", 1, 1, "del K"},
    {"get", 1, 1, "get K"},
    {"scan", 0, 3, "scan [FROM [TO]] [LIMIT]"},
    {"count", 0, 0, "count"},
    {"checkpoint", 0, 1, "checkpoint [MODE]"},
    {"stats", 0, 0, "stats"},
    {"help", 0, 0, "help"},
};

std::string HelpAnswer(size_t n_dbs) {
  std::vector<absl::string_view> usages;
  for (const ShellCommand& c : kShellCommands) usages.push_back(c.usage);
  std::string answer = absl::StrCat("commands: ", absl::StrJoin(usages, ", "),
                                    ", quit, exit (jkv --help explains them)");
  if (n_dbs > 1) {
    absl::StrAppend(&answer, "; @N before a command names database N, @0 to @", n_dbs - 1,
                    " (without it @0); begin spans them all");
  }
  return answer;
}

// X2: the commands that work on every database.
bool OnEveryDatabase(absl::string_view name) {
  return name == "begin" || name == "commit" || name == "rollback" || name == "help" ||
         name == "quit" || name == "exit";
}

absl::Status CheckArity(absl::string_view name, size_t n_args) {
  for (const ShellCommand& c : kShellCommands) {
    if (c.name != name) continue;
    if (n_args >= c.min_args && n_args <= c.max_args) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": wrong number of arguments (", n_args, "); usage: ", c.usage));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command \"", OneLine(name), "\" (try help)"));
}

}  // namespace

Shell::Shell(Db* db, std::ostream* out) : Shell(std::vector<Db*>{db}, out) {}

Shell::Shell(std::vector<Db*> dbs, std::ostream* out) : dbs_(std::move(dbs)), out_(out) {}

Shell::~Shell() { EndTransactions(); }

void Shell::EndTransactions() {
  read_txns_.clear();
  write_txn_.reset();  // rolls back unless committed
  across_.reset();     // the same, in every database
  failed_begin_.reset();
}

absl::Status Shell::Run(std::istream& in) {
  std::string line;
  while (out_->good() && std::getline(in, line)) {
    if (!ExecuteLine(line)) break;
  }
  EndTransactions();
  if (!out_->good()) return absl::UnknownError("writing the shell's answers failed");
  return absl::OkStatus();
}

bool Shell::ExecuteLine(absl::string_view line) {
  absl::ConsumeSuffix(&line, "\r");
  if (line.empty()) return true;
  Fields args = SplitFields(line);
  Target target;
  if (absl::StartsWith(args.front(), "@")) {
    target = ParseTarget(args.front());
    args.erase(args.begin());
  }
  absl::StatusOr<std::string> answer = std::string("ok");
  absl::string_view name;
  if (args.empty()) {
    answer = absl::InvalidArgumentError(absl::StrCat(
        "\"", OneLine(line), "\" names a database but no command (write @N COMMAND ...)"));
  } else {
    name = args.front();
    args.erase(args.begin());
  }
  const bool quit =
      answer.ok() && (name == "quit" || name == "exit") && args.empty() && !target.has_value();
  if (quit) EndTransactions();
  if (!quit && answer.ok()) answer = Execute(name, args, target);
  if (answer.ok()) {
    *out_ << *answer << '\n';
  } else {
    *out_ << "error: " << OneLine(answer.status().message()) << '\n';
  }
  out_->flush();
  return !quit;
}

absl::StatusOr<size_t> Shell::ParseTarget(absl::string_view field) const {
  absl::string_view digits = field.substr(1);
  size_t n = 0;
  const bool number = !digits.empty() && digits.size() <= 9 &&
                      std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) &&
                      absl::SimpleAtoi(digits, &n);
  const std::string range =
      dbs_.size() == 1 ? std::string("this shell has one database, @0")
                       : absl::StrCat("this shell has ", dbs_.size(), " databases, @0 to @",
                                      dbs_.size() - 1);
  if (!number) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", OneLine(field), "\" is not a database: write @N with N a number (", range, ")"));
  }
  if (n >= dbs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("@", n, ": no database ", n, ": ", range));
  }
  return n;
}

absl::StatusOr<size_t> Shell::Database(const Target& target) const {
  if (!target.has_value()) return 0;
  return *target;
}

absl::StatusOr<std::string> Shell::Execute(absl::string_view name, const Fields& args,
                                           const Target& target) {
  if (name == "begin") return Begin(args, target);
  JKV_ASSIGN_OR_RETURN(const size_t n, Database(target));
  if (target.has_value() && OnEveryDatabase(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": @", n, " names a database, but ", name, " works on every database (write it ",
        "without @N)"));
  }
  if (name == "quit" || name == "exit") {
    return absl::InvalidArgumentError(absl::StrCat(name, " takes no arguments"));
  }
  JKV_RETURN_IF_ERROR(CheckArity(name, args.size()));
  if (name == "commit" || name == "rollback") return End(name);
  if (name == "put") return Put(n, args);
  if (name == "del") return Del(n, args);
  if (name == "get") return Get(n, args);
  if (name == "scan") return Scan(n, args);
  if (name == "count") return Count(n);
  if (name == "help") return HelpAnswer(dbs_.size());
  if (name == "stats") return absl::StrCat("stats ", StatsReport(dbs_[n]->Stats()).Json());
  return Checkpoint(n, args);
}

absl::StatusOr<std::string> Shell::Checkpoint(size_t n, const Fields& args) {
  std::optional<absl::string_view> mode;
  if (!args.empty()) mode = args[0];
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, tools::Checkpoint(*dbs_[n], mode));
  return FormatCheckpoint(r);
}

absl::StatusOr<std::string> Shell::Begin(const Fields& args, const Target& target) {
  if (!read_txns_.empty() || write_txn_ != nullptr || across_ != nullptr) {
    return absl::FailedPreconditionError(
        "begin: a transaction is already open (commit or rollback it first)");
  }
  // Any error, a malformed begin's included, leaves the shell in `failed`: the lines that
  // follow were meant for a transaction that is not open.
  absl::Status s = Database(target).status();
  if (s.ok() && target.has_value()) {
    s = absl::InvalidArgumentError(absl::StrCat(
        "begin: @", **target, " names a database, but begin opens the transaction on every ",
        "database (write it without @N)"));
  }
  if (s.ok()) s = OpenTransaction(args);
  if (!s.ok()) {
    failed_begin_ = s;
    return s;
  }
  failed_begin_.reset();
  return std::string("ok");
}

absl::Status Shell::OpenTransaction(const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckArity("begin", args.size()));
  if (args.empty() && dbs_.size() == 1) {
    JKV_ASSIGN_OR_RETURN(write_txn_, dbs_[0]->BeginWrite());
  } else if (args.empty()) {
    JKV_ASSIGN_OR_RETURN(across_, BeginWriteAcross(dbs_));  // X3
  } else if (args[0] == "read") {
    for (Db* db : dbs_) {  // X4
      absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = db->BeginRead();
      if (!txn.ok()) {
        read_txns_.clear();
        return txn.status();
      }
      read_txns_.push_back(std::move(txn).value());
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "begin: expected \"begin\" or \"begin read\", got \"begin ", OneLine(args[0]), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Shell::End(absl::string_view name) {
  if (!read_txns_.empty()) {
    read_txns_.clear();
    return std::string("ok");
  }
  if (across_ != nullptr) return EndAcross(name);
  if (write_txn_ == nullptr && failed_begin_.has_value()) {
    const absl::Status begin = *std::exchange(failed_begin_, std::nullopt);
    if (name == "rollback") return std::string("ok");
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": no transaction: the begin failed (", OneLine(begin.message()),
                     "); nothing was committed"));
  }
  if (write_txn_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(name, ": no transaction is open"));
  }
  if (name == "commit") {
    // A commit that gave up busy on other connections' readers keeps the transaction open:
    // `commit` again retries it, `rollback` drops it.
    const absl::Status s = write_txn_->Commit();
    if (!s.ok() && write_txn_->open()) return s;
    write_txn_.reset();
    JKV_RETURN_IF_ERROR(s);
    return std::string("ok");
  }
  std::unique_ptr<WriteTransaction> txn = std::move(write_txn_);
  JKV_RETURN_IF_ERROR(txn->Rollback());
  return std::string("ok");
}

absl::StatusOr<std::string> Shell::EndAcross(absl::string_view name) {
  if (name == "commit") {
    // As with one database: a busy commit keeps the transaction open (the message says so).
    // In wal and wal2 a commit that failed part-way names the databases that committed.
    const absl::Status s = across_->Commit();
    if (!s.ok() && across_->open()) return s;
    across_.reset();
    JKV_RETURN_IF_ERROR(s);
    return std::string("ok");
  }
  std::unique_ptr<WriteAcross> across = std::move(across_);
  JKV_RETURN_IF_ERROR(across->Rollback());
  return std::string("ok");
}

WriteTransaction* Shell::WriteTxn(size_t n) {
  if (across_ != nullptr) return &(*across_)[n];
  return write_txn_.get();  // one database: n is 0
}

absl::Status Shell::CheckWritable(absl::string_view name) const {
  if (failed_begin_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": no transaction: the begin failed (",
                     OneLine(failed_begin_->message()), "); send rollback to go on"));
  }
  if (read_txns_.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      name, ": the open transaction is read-only (begin read); commit or rollback it first"));
}

absl::StatusOr<std::string> Shell::Put(size_t n, const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckWritable("put"));
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  JKV_ASSIGN_OR_RETURN(std::string value, DecodeArg("value", args[1]));
  if (WriteTransaction* txn = WriteTxn(n); txn != nullptr) {
    JKV_RETURN_IF_ERROR(txn->Put(key, value));
  } else {
    JKV_RETURN_IF_ERROR(dbs_[n]->Put(key, value));
  }
  return std::string("ok");
}

absl::StatusOr<std::string> Shell::Del(size_t n, const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckWritable("del"));
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  // A missing key is not an error: the answer says which it was.
  WriteTransaction* txn = WriteTxn(n);
  absl::StatusOr<bool> existed = txn != nullptr ? txn->Delete(key) : dbs_[n]->Delete(key);
  JKV_RETURN_IF_ERROR(existed.status());
  return std::string(*existed ? "ok" : "missing");
}

template <typename Fn>
absl::StatusOr<std::string> Shell::Read(size_t n, Fn fn) {
  if (WriteTransaction* txn = WriteTxn(n); txn != nullptr) return fn(*txn);
  if (!read_txns_.empty()) return fn(*read_txns_[n]);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, dbs_[n]->BeginRead());
  return fn(*txn);
}

absl::StatusOr<std::string> Shell::Get(size_t n, const Fields& args) {
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  return Read(n, [&](auto& txn) -> absl::StatusOr<std::string> {
    JKV_ASSIGN_OR_RETURN(std::optional<std::string> value, txn.Get(key));
    if (!value.has_value()) return std::string("missing");
    return absl::StrCat("value ", EncodeToken(*value));
  });
}

absl::StatusOr<std::string> Shell::Scan(size_t n, const Fields& args) {
  std::optional<absl::string_view> from, to;
  if (args.size() > 0) from = args[0];
  if (args.size() > 1) to = args[1];
  JKV_ASSIGN_OR_RETURN(ScanRange range, ParseScanRange(from, to));
  if (args.size() > 2) {
    JKV_ASSIGN_OR_RETURN(range.limit, ParseNumber("LIMIT", args[2], UINT64_MAX));
  }
  return Read(n, [&](auto& txn) -> absl::StatusOr<std::string> {
    std::vector<std::string> lines;
    JKV_RETURN_IF_ERROR(ForEachInRange(txn, range, [&](absl::string_view k, absl::string_view v) {
      lines.push_back(FormatPair(k, v));
    }));
    std::string answer = absl::StrCat("pairs ", lines.size());
    for (const std::string& line : lines) absl::StrAppend(&answer, "\n", line);
    return answer;
  });
}

absl::StatusOr<std::string> Shell::Count(size_t n) {
  return Read(n, [&](auto& txn) -> absl::StatusOr<std::string> {
    JKV_ASSIGN_OR_RETURN(uint64_t n, txn.Count());
    return absl::StrCat("count ", n);
  });
}

}  // namespace journalkv::tools
