#include "tools/shell.h"

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
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

std::string HelpAnswer() {
  std::vector<absl::string_view> usages;
  for (const ShellCommand& c : kShellCommands) usages.push_back(c.usage);
  return absl::StrCat("commands: ", absl::StrJoin(usages, ", "),
                      ", quit, exit (jkv --help explains them)");
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

Shell::Shell(Db* db, std::ostream* out) : db_(db), out_(out) {}

Shell::~Shell() { EndTransactions(); }

void Shell::EndTransactions() {
  read_txn_.reset();
  write_txn_.reset();  // rolls back unless committed
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
  const absl::string_view name = args.front();
  args.erase(args.begin());
  const bool quit = (name == "quit" || name == "exit") && args.empty();
  if (quit) EndTransactions();
  absl::StatusOr<std::string> answer = std::string("ok");
  if (!quit) answer = Execute(name, args);
  if (answer.ok()) {
    *out_ << *answer << '\n';
  } else {
    *out_ << "error: " << OneLine(answer.status().message()) << '\n';
  }
  out_->flush();
  return !quit;
}

absl::StatusOr<std::string> Shell::Execute(absl::string_view name, const Fields& args) {
  if (name == "quit" || name == "exit") {
    return absl::InvalidArgumentError(absl::StrCat(name, " takes no arguments"));
  }
  if (name == "begin") return Begin(args);
  JKV_RETURN_IF_ERROR(CheckArity(name, args.size()));
  if (name == "commit" || name == "rollback") return End(name);
  if (name == "put") return Put(args);
  if (name == "del") return Del(args);
  if (name == "get") return Get(args);
  if (name == "scan") return Scan(args);
  if (name == "count") return Count();
  if (name == "help") return HelpAnswer();
  if (name == "stats") return absl::StrCat("stats ", StatsReport(db_->Stats()).Json());
  std::optional<absl::string_view> mode;
  if (!args.empty()) mode = args[0];
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, Checkpoint(*db_, mode));
  return FormatCheckpoint(r);
}

absl::StatusOr<std::string> Shell::Begin(const Fields& args) {
  if (read_txn_ != nullptr || write_txn_ != nullptr) {
    return absl::FailedPreconditionError(
        "begin: a transaction is already open (commit or rollback it first)");
  }
  // Any error, a malformed begin's included, leaves the shell in `failed`: the lines that
  // follow were meant for a transaction that is not open.
  if (absl::Status s = OpenTransaction(args); !s.ok()) {
    failed_begin_ = s;
    return s;
  }
  failed_begin_.reset();
  return std::string("ok");
}

absl::Status Shell::OpenTransaction(const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckArity("begin", args.size()));
  if (args.empty()) {
    JKV_ASSIGN_OR_RETURN(write_txn_, db_->BeginWrite());
  } else if (args[0] == "read") {
    JKV_ASSIGN_OR_RETURN(read_txn_, db_->BeginRead());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "begin: expected \"begin\" or \"begin read\", got \"begin ", OneLine(args[0]), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Shell::End(absl::string_view name) {
  if (read_txn_ != nullptr) {
    read_txn_.reset();
    return std::string("ok");
  }
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

absl::Status Shell::CheckWritable(absl::string_view name) const {
  if (failed_begin_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": no transaction: the begin failed (",
                     OneLine(failed_begin_->message()), "); send rollback to go on"));
  }
  if (read_txn_ == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      name, ": the open transaction is read-only (begin read); commit or rollback it first"));
}

absl::StatusOr<std::string> Shell::Put(const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckWritable("put"));
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  JKV_ASSIGN_OR_RETURN(std::string value, DecodeArg("value", args[1]));
  if (write_txn_ != nullptr) {
    JKV_RETURN_IF_ERROR(write_txn_->Put(key, value));
  } else {
    JKV_RETURN_IF_ERROR(db_->Put(key, value));
  }
  return std::string("ok");
}

absl::StatusOr<std::string> Shell::Del(const Fields& args) {
  JKV_RETURN_IF_ERROR(CheckWritable("del"));
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  // A missing key is not an error: the answer says which it was.
  absl::StatusOr<bool> existed =
      write_txn_ != nullptr ? write_txn_->Delete(key) : db_->Delete(key);
  JKV_RETURN_IF_ERROR(existed.status());
  return std::string(*existed ? "ok" : "missing");
}

template <typename Fn>
absl::StatusOr<std::string> Shell::Read(Fn fn) {
  if (write_txn_ != nullptr) return fn(*write_txn_);
  if (read_txn_ != nullptr) return fn(*read_txn_);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db_->BeginRead());
  return fn(*txn);
}

absl::StatusOr<std::string> Shell::Get(const Fields& args) {
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", args[0]));
  return Read([&](auto& txn) -> absl::StatusOr<std::string> {
    JKV_ASSIGN_OR_RETURN(std::optional<std::string> value, txn.Get(key));
    if (!value.has_value()) return std::string("missing");
    return absl::StrCat("value ", EncodeToken(*value));
  });
}

absl::StatusOr<std::string> Shell::Scan(const Fields& args) {
  std::optional<absl::string_view> from, to;
  if (args.size() > 0) from = args[0];
  if (args.size() > 1) to = args[1];
  JKV_ASSIGN_OR_RETURN(ScanRange range, ParseScanRange(from, to));
  if (args.size() > 2) {
    JKV_ASSIGN_OR_RETURN(range.limit, ParseNumber("LIMIT", args[2], UINT64_MAX));
  }
  return Read([&](auto& txn) -> absl::StatusOr<std::string> {
    std::vector<std::string> lines;
    std::unique_ptr<Iterator> it = txn.NewIterator();
    JKV_RETURN_IF_ERROR(ForEachInRange(*it, range, [&](absl::string_view k, absl::string_view v) {
      lines.push_back(FormatPair(k, v));
    }));
    std::string answer = absl::StrCat("pairs ", lines.size());
    for (const std::string& line : lines) absl::StrAppend(&answer, "\n", line);
    return answer;
  });
}

absl::StatusOr<std::string> Shell::Count() {
  return Read([&](auto& txn) -> absl::StatusOr<std::string> {
    JKV_ASSIGN_OR_RETURN(uint64_t n, txn.Count());
    return absl::StrCat("count ", n);
  });
}

}  // namespace journalkv::tools
