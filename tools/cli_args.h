// The command line of jkv (README, "CLI"): `jkv [options] DBPATH COMMAND [ARGS]`, and
// `jkv [options] DBPATH shell [OTHER_DBPATH ...]` for a shell over several databases.
//
// ParseCommandLine checks everything that can be checked without the database: options and
// their values, the command name, the number of its arguments and their tokens. So a typo
// never creates or opens a database file.
//
// Thread-safety: pure functions.
#ifndef JOURNALKV_TOOLS_CLI_ARGS_H_
#define JOURNALKV_TOOLS_CLI_ARGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/options.h"
#include "tools/kv_ops.h"

namespace journalkv::tools {

// A command and its decoded arguments.
struct Command {
  std::string name;                            // "put", "get", "scan", ...
  std::vector<std::string> args;               // decoded tokens (put: key, value; get/del: key)
  ScanRange range;                             // scan only
  std::optional<std::string> checkpoint_mode;  // checkpoint only, as given
  bool value_from_stdin = false;               // put K -: the value is all of stdin, raw
  bool raw = false;                            // get --raw: the value's bytes, unescaped
  bool compact = false;                        // backup --compact
  bool json = false;                           // info --json, stats --json
  std::string dest;                            // backup: the destination path, as given
  std::vector<std::string> other_dbs;          // shell: databases 1.. (paths, as given)
  std::string inspect;                         // inspect: page, journal, wal, wal2 or shm
  uint64_t page_no = 0;                        // inspect page N
};

struct CommandLine {
  bool help = false;  // -h or --help: nothing else is set
  Options options;
  bool page_size_given = false;  // --page-size was on the command line
  std::string db_path;
  Command command;
};

// `args` is argv without argv[0]. InvalidArgument for anything malformed: an unknown or
// repeated option, a bad option value, a missing DBPATH or COMMAND, an unknown command, a
// wrong number of arguments, a bad token, a --checkpoint policy the engine does not parse, a
// --wal2-switch-pages of 0, a shell's OTHER_DBPATH that is empty, starts with "-" or repeats
// DBPATH or another one (the same file under two spellings is found when they are opened).
absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_CLI_ARGS_H_
