#include "tools/cli_args.h"

#include <cstdint>
#include <limits>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "tools/tokens.h"

namespace journalkv::tools {
namespace {

constexpr uint64_t kMaxUint32 = std::numeric_limits<uint32_t>::max();

// What the option loop has seen so far.
struct OptionState {
  std::set<std::string> seen;
};

absl::StatusOr<JournalMode> ParseJournalOption(absl::string_view value) {
  absl::StatusOr<JournalMode> mode = ParseJournalMode(value);
  if (!mode.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--journal: ", OneLine(mode.status().message())));
  }
  return mode;
}

absl::StatusOr<uint32_t> ParsePageSize(absl::string_view value) {
  absl::StatusOr<uint64_t> n = ParseNumber("--page-size", value, 65536, 512);
  if (!n.ok() || (*n & (*n - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--page-size: \"", OneLine(value), "\" is not a power of two from 512 to 65536"));
  }
  return static_cast<uint32_t>(*n);
}

// threshold:N | async:N/B | manual (checkpoint/policy.h), checked by the engine's own parser
// so that jkv accepts exactly what Db::Open does, and fails before opening anything.
absl::Status CheckCheckpointPolicy(absl::string_view text) {
  absl::Status s = ParseCheckpointPolicy(text).status();
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat("--checkpoint: ", OneLine(s.message())));
}

absl::Status ApplyValueOption(absl::string_view name, absl::string_view value, Options& options) {
  if (name == "--journal") {
    JKV_ASSIGN_OR_RETURN(options.journal_mode, ParseJournalOption(value));
  } else if (name == "--sync") {
    absl::StatusOr<SyncLevel> level = ParseSyncLevel(value);
    if (!level.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sync: ", OneLine(level.status().message())));
    }
    options.sync = *level;
  } else if (name == "--page-size") {
    JKV_ASSIGN_OR_RETURN(options.page_size, ParsePageSize(value));
  } else if (name == "--cache-pages") {
    JKV_ASSIGN_OR_RETURN(uint64_t n, ParseNumber("--cache-pages", value, kMaxUint32, 1));
    options.cache_pages = static_cast<uint32_t>(n);
  } else if (name == "--wal2-switch-pages") {
    JKV_ASSIGN_OR_RETURN(uint64_t n, ParseNumber("--wal2-switch-pages", value, kMaxUint32, 1));
    options.wal2_switch_pages = static_cast<uint32_t>(n);
  } else if (name == "--reader-slots") {
    JKV_ASSIGN_OR_RETURN(uint64_t n, ParseNumber("--reader-slots", value, 512));
    options.reader_slots = static_cast<int>(n);
  } else if (name == "--busy-timeout-ms") {
    JKV_ASSIGN_OR_RETURN(uint64_t ms, ParseNumber("--busy-timeout-ms", value, kMaxUint32));
    options.busy_timeout = absl::Milliseconds(ms);
  } else if (name == "--atomic-fallback") {
    absl::StatusOr<JournalMode> mode = ParseJournalMode(value);
    if (!mode.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--atomic-fallback: ", OneLine(mode.status().message())));
    }
    if (*mode == JournalMode::kAtomic) {
      return absl::InvalidArgumentError(
          "--atomic-fallback: the mode to run in where atomic cannot work cannot be atomic");
    }
    options.atomic_fallback = *mode;
  } else if (name == "--record") {
    if (value.empty()) return absl::InvalidArgumentError("--record needs a file: --record=FILE");
    options.record_path = std::string(value);
  } else if (name == "--record-values") {
    absl::StatusOr<TraceValues> v = ParseTraceValues(value);
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--record-values: want keep or synthetic, got \"", OneLine(value), "\""));
    }
    options.record_values = *v;
  } else if (name == "--checkpoint") {
    JKV_RETURN_IF_ERROR(CheckCheckpointPolicy(value));
    options.checkpoint_policy = std::string(value);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown option ", OneLine(name), " (see jkv --help)"));
  }
  return absl::OkStatus();
}

// One "--name=value" or "--read-only" argument.
absl::Status ApplyOption(absl::string_view arg, OptionState& state, Options& options) {
  const size_t eq = arg.find('=');
  const absl::string_view name = arg.substr(0, eq);
  if (!state.seen.insert(std::string(name)).second) {
    return absl::InvalidArgumentError(absl::StrCat("option ", OneLine(name), " given twice"));
  }
  if (name == "--read-only") {
    if (eq != absl::string_view::npos) {
      return absl::InvalidArgumentError("--read-only takes no value");
    }
    options.read_only = true;
    return absl::OkStatus();
  }
  if (name == "--auto-vacuum") {
    if (eq != absl::string_view::npos) {
      return absl::InvalidArgumentError("--auto-vacuum takes no value");
    }
    options.auto_vacuum = true;
    return absl::OkStatus();
  }
  if (eq == absl::string_view::npos) {
    const bool known = name == "--journal" || name == "--sync" || name == "--page-size" ||
                       name == "--cache-pages" || name == "--busy-timeout-ms" ||
                       name == "--checkpoint" || name == "--wal2-switch-pages" ||
                       name == "--reader-slots" || name == "--atomic-fallback" ||
                       name == "--record" || name == "--record-values";
    if (known) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs a value: ", name, "=VALUE"));
    }
  }
  return ApplyValueOption(name, arg.substr(eq == absl::string_view::npos ? arg.size() : eq + 1),
                          options);
}

bool IsHelp(absl::string_view arg) { return arg == "-h" || arg == "--help"; }

// How many arguments a command takes (scan's --limit=N not counted) and how it is written.
struct CommandSpec {
  absl::string_view name;
  size_t min_args;
  size_t max_args;
  absl::string_view usage;
};

constexpr CommandSpec kCommands[] = {
    {"put", 2, 2, "put K V|-"}, {"get", 1, 1, "get [--raw] K"},
    {"del", 1, 1, "del K"},   {"scan", 0, 2, "scan [FROM [TO]] [--limit=N]"},
    {"count", 0, 0, "count"}, {"check", 0, 0, "check"},
    {"info", 0, 0, "info [--json]"},   {"checkpoint", 0, 1, "checkpoint [passive|full|restart|truncate]"},
    {"dump", 0, 0, "dump"},   {"load", 0, 0, "load"},
    {"shell", 0, SIZE_MAX, "shell [OTHER_DBPATH ...]"}, {"backup", 1, 1, "backup [--compact] DEST"},
    {"stats", 0, 0, "stats [--json]"}, {"compact", 0, 0, "compact"},
    {"inspect", 1, 2, "inspect page N|journal|wal|wal2|shm"},
};

absl::StatusOr<const CommandSpec*> FindCommand(absl::string_view name) {
  std::vector<absl::string_view> names;
  for (const CommandSpec& spec : kCommands) {
    if (spec.name == name) return &spec;
    names.push_back(spec.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown command \"", OneLine(name), "\" (commands: ", absl::StrJoin(names, ", "), ")"));
}

// Takes scan's --limit=N out of `args`. Other arguments starting with "--" are refused rather
// than read as keys, so a misspelt option is not a silent scan from "--limt=5".
absl::StatusOr<std::optional<uint64_t>> TakeScanLimit(std::vector<std::string>& args) {
  std::optional<uint64_t> limit;
  std::vector<std::string> rest;
  for (std::string& arg : args) {
    absl::string_view a = arg;
    if (!absl::StartsWith(a, "--")) {
      rest.push_back(std::move(arg));
    } else if (absl::ConsumePrefix(&a, "--limit=") && !limit.has_value()) {
      JKV_ASSIGN_OR_RETURN(limit, ParseNumber("--limit", a, UINT64_MAX));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("scan: unknown or repeated option \"", OneLine(arg),
                       "\" (only --limit=N; write a key that starts with - as \\x2d...)"));
    }
  }
  args = std::move(rest);
  return limit;
}

// shell's OTHER_DBPATHs: databases 1.. of the shell, each a path named once.
absl::StatusOr<std::vector<std::string>> ParseShellPaths(const std::string& db_path,
                                                         std::vector<std::string> paths) {
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("shell: OTHER_DBPATH ", i + 1, " is empty"));
    }
    if (absl::StartsWith(paths[i], "-")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shell: \"", OneLine(paths[i]), "\" is not a database path: options go before DBPATH ",
          "(write a path that starts with - as ./-...)"));
    }
    for (size_t j = 0; j <= i; ++j) {
      const std::string& earlier = j == 0 ? db_path : paths[j - 1];
      if (earlier == paths[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shell: ", OneLine(paths[i]), " is given twice (databases ", j, " and ", i + 1,
            "); each database takes part once"));
      }
    }
  }
  return paths;
}

absl::StatusOr<Command> ParseCommand(absl::string_view name, std::vector<std::string> args) {
  JKV_ASSIGN_OR_RETURN(const CommandSpec* spec, FindCommand(name));
  Command command;
  command.name = std::string(name);
  if (name == "scan") {
    JKV_ASSIGN_OR_RETURN(command.range.limit, TakeScanLimit(args));
  }
  if (name == "get") {
    std::vector<std::string> rest;
    for (std::string& arg : args) {
      if (arg == "--raw" && !command.raw) {
        command.raw = true;
      } else if (absl::StartsWith(arg, "--")) {
        return absl::InvalidArgumentError(
            absl::StrCat("get: unknown or repeated option \"", OneLine(arg),
                         "\" (only --raw; write a key that starts with - as \\x2d...)"));
      } else {
        rest.push_back(std::move(arg));
      }
    }
    args = std::move(rest);
  }
  if (name == "info" || name == "stats") {
    for (const std::string& arg : args) {
      if (arg != "--json" || command.json) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": unknown or repeated argument \"",
                                                       OneLine(arg), "\" (only --json)"));
      }
      command.json = true;
    }
    args.clear();
  }
  if (name == "backup") {
    std::vector<std::string> rest;
    for (std::string& arg : args) {
      if (arg == "--compact" && !command.compact) {
        command.compact = true;
      } else if (absl::StartsWith(arg, "--")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "backup: unknown or repeated option \"", OneLine(arg), "\" (only --compact)"));
      } else {
        rest.push_back(std::move(arg));
      }
    }
    args = std::move(rest);
  }
  if (name == "put" && args.size() == 2 && args[1] == "-") {
    command.value_from_stdin = true;  // a value of one "-" is written \x2d
  }
  if (args.size() < spec->min_args || args.size() > spec->max_args) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": wrong number of arguments (",
                                                   args.size(), "); usage: ", spec->usage));
  }
  if (name == "scan") {
    const std::optional<uint64_t> limit = command.range.limit;
    std::optional<absl::string_view> from, to;
    if (!args.empty()) from = args[0];
    if (args.size() > 1) to = args[1];
    JKV_ASSIGN_OR_RETURN(command.range, ParseScanRange(from, to));
    command.range.limit = limit;
  } else if (name == "checkpoint") {
    if (!args.empty()) command.checkpoint_mode = args[0];
  } else if (name == "inspect") {
    command.inspect = args[0];
    const bool page = args[0] == "page";
    if (args[0] != "page" && args[0] != "journal" && args[0] != "wal" && args[0] != "wal2" &&
        args[0] != "shm") {
      return absl::InvalidArgumentError(absl::StrCat(
          "inspect: unknown structure \"", OneLine(args[0]), "\" (page N, journal, wal, wal2, shm)"));
    }
    if (page != (args.size() == 2)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inspect: ", page ? "page needs a page number N" : "only page takes an argument",
          "; usage: ", spec->usage));
    }
    if (page) {
      JKV_ASSIGN_OR_RETURN(command.page_no, ParseNumber("N", args[1], UINT32_MAX, 1));
    }
  } else if (name == "shell") {
    command.other_dbs = std::move(args);  // paths, not tokens: checked by ParseCommandLine
  } else if (name == "backup") {
    if (args[0].empty()) return absl::InvalidArgumentError("backup: DEST is empty");
    command.dest = args[0];  // a path, not a token
  } else {
    const absl::string_view what[] = {"key", "value"};
    if (command.value_from_stdin) args.pop_back();  // read by the command
    for (size_t i = 0; i < args.size(); ++i) {
      JKV_ASSIGN_OR_RETURN(std::string bytes, DecodeArg(what[i], args[i]));
      command.args.push_back(std::move(bytes));
    }
  }
  return command;
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  size_t i = 0;
  while (i < args.size() && args[i] != "--" && absl::StartsWith(args[i], "-")) {
    if (IsHelp(args[i++])) {
      cl.help = true;
      return cl;
    }
  }
  OptionState state;
  for (i = 0; i < args.size() && absl::StartsWith(args[i], "-"); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    JKV_RETURN_IF_ERROR(ApplyOption(args[i], state, cl.options));
  }
  cl.page_size_given = state.seen.contains("--page-size");
  if (state.seen.contains("--record-values") && !state.seen.contains("--record")) {
    return absl::InvalidArgumentError("--record-values needs --record=FILE");
  }
  if (i >= args.size()) return absl::InvalidArgumentError("missing DBPATH and COMMAND");
  if (args[i].empty()) return absl::InvalidArgumentError("DBPATH is empty");
  cl.db_path = args[i++];
  if (i >= args.size()) return absl::InvalidArgumentError("missing COMMAND after DBPATH");
  if (absl::StartsWith(args[i], "--")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", OneLine(args[i]), "\" after DBPATH: options go before DBPATH (jkv [OPTIONS] DBPATH ",
        "COMMAND [ARGS])"));
  }
  JKV_ASSIGN_OR_RETURN(cl.command, ParseCommand(args[i], std::vector<std::string>(
                                                             args.begin() + i + 1, args.end())));
  if (cl.command.name == "shell") {
    JKV_ASSIGN_OR_RETURN(cl.command.other_dbs,
                         ParseShellPaths(cl.db_path, std::move(cl.command.other_dbs)));
  }
  return cl;
}

}  // namespace journalkv::tools
