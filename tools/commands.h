// jkv's one-shot commands and its entry point (README, "CLI"). RunJkv is main() without the
// process: it takes the arguments and the three standard streams and returns the exit status,
// so tests can run it in-process; jkv_main.cc only wires it to the real streams.
//
// Thread-safety: one call at a time per set of streams.
#ifndef JOURNALKV_TOOLS_COMMANDS_H_
#define JOURNALKV_TOOLS_COMMANDS_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/db.h"
#include "tools/cli_args.h"
#include "vfs/vfs.h"

namespace journalkv::tools {

// jkv's exit status.
enum class ExitCode : int {
  kOk = 0,       // done
  kMissing = 1,  // get or del of a key that is not there (nothing printed)
  kError = 2,    // "error: MESSAGE" lines were printed on stderr
};

struct CommandIo {
  std::istream* in;   // load and shell read it
  std::ostream* out;  // results
  std::ostream* err;  // "error: ..." lines and usage
};

// Runs `command` on `db`. `fs` is the file system `db` was opened on (info reads the file size
// through it). Errors come back as a Status, except the problems check finds, which are
// printed as "error: ..." lines with kError returned.
absl::StatusOr<ExitCode> RunCommand(Db& db, vfs::FileSystem& fs, const Command& command,
                                    const CommandIo& io);

// The whole tool: `args` is argv without argv[0].
ExitCode RunJkv(const std::vector<std::string>& args, const CommandIo& io);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_COMMANDS_H_
