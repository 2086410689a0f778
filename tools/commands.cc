#include "tools/commands.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "tools/help.h"
#include "tools/kv_ops.h"
#include "tools/shell.h"
#include "tools/tokens.h"
#include "vfs/posix_fs.h"

namespace journalkv::tools {
namespace {

void PrintError(std::ostream& err, const absl::Status& status) {
  err << "error: " << OneLine(status.message()) << '\n';
  err.flush();
}

absl::StatusOr<ExitCode> RunGet(Db& db, const std::string& key, bool raw, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(std::optional<std::string> value, db.Get(key));
  if (!value.has_value()) return ExitCode::kMissing;
  if (raw) {
    out.write(value->data(), static_cast<std::streamsize>(value->size()));  // as stored
  } else {
    out << EncodeToken(*value) << '\n';
  }
  return ExitCode::kOk;
}

// put K -: the value is every byte of stdin, as is (values too large for argv, binary files).
absl::StatusOr<ExitCode> RunPutFromStdin(Db& db, const std::string& key, const CommandIo& io) {
  std::string value((std::istreambuf_iterator<char>(*io.in)), std::istreambuf_iterator<char>());
  if (io.in->bad()) return absl::UnknownError("reading stdin failed (nothing was written)");
  JKV_RETURN_IF_ERROR(db.Put(key, value));
  return ExitCode::kOk;
}

absl::StatusOr<ExitCode> RunScan(Db& db, const ScanRange& range, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  std::unique_ptr<Iterator> it = txn->NewIterator();
  JKV_RETURN_IF_ERROR(ForEachInRange(*it, range, [&](absl::string_view k, absl::string_view v) {
    out << FormatPair(k, v) << '\n';
  }));
  return ExitCode::kOk;
}

absl::StatusOr<ExitCode> RunCount(Db& db, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  JKV_ASSIGN_OR_RETURN(uint64_t n, txn->Count());
  out << n << '\n';
  return ExitCode::kOk;
}

absl::StatusOr<ExitCode> RunCheck(Db& db, const CommandIo& io) {
  JKV_ASSIGN_OR_RETURN(CheckResult r, db.Check());
  *io.out << (r.ok() ? "ok" : "damaged") << ": " << r.keys << " keys, depth " << r.depth << ", "
          << r.pages << " pages (" << r.tree_pages << " tree, " << r.overflow_pages << " overflow, "
          << r.free_pages << " free)";
  if (!r.ok()) *io.out << ", " << r.problems.size() << " problems";
  *io.out << '\n';
  io.out->flush();
  for (const std::string& problem : r.problems) {
    *io.err << "error: " << OneLine(problem) << '\n';
  }
  return r.ok() ? ExitCode::kOk : ExitCode::kError;
}

absl::StatusOr<uint64_t> FileSize(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  return file->Size();
}

absl::StatusOr<ExitCode> RunInfo(Db& db, vfs::FileSystem& fs, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  JKV_ASSIGN_OR_RETURN(uint64_t keys, txn->Count());
  const DbStats stats = db.Stats();  // inside the transaction: the page count is current
  txn.reset();
  JKV_ASSIGN_OR_RETURN(uint64_t file_size, FileSize(fs, db.path()));
  const Options& o = db.options();
  out << "path " << OneLine(db.path()) << '\n'
      << "page_size " << stats.page_size << '\n'
      << "page_count " << stats.page_count << '\n'
      << "free_pages " << stats.freelist_pages << '\n'
      << "file_size " << file_size << '\n'
      // At least what `backup --compact` leaves out: the free pages and any file tail past the
      // last page (it may pack the B+tree tighter too).
      << "reclaimable_bytes "
      << file_size - std::min<uint64_t>(file_size, uint64_t{stats.page_count - stats.freelist_pages} *
                                                       stats.page_size)
      << '\n'
      << "keys " << keys << '\n'
      << "journal_mode " << JournalModeName(*o.journal_mode) << '\n'
      << "sync " << SyncLevelName(o.sync) << '\n'
      << "read_only " << (o.read_only ? "yes" : "no") << '\n'
      << "cache_pages " << o.cache_pages << '\n'
      << "busy_timeout_ms " << absl::ToInt64Milliseconds(o.busy_timeout) << '\n';
  if (stats.wal_mode) {
    out << "log_frames " << stats.log_frames << '\n'
        << "log_frames_not_checkpointed " << stats.log_unbackfilled << '\n'
        << "log_bytes " << stats.log_bytes << '\n';
    // WAL2: the log_ lines above are of both logs; these give the writer's log, -wal2's share,
    // this one short-lived handle's switches and this invocation's --wal2-switch-pages.
    if (stats.wal2) {
      out << "current_log " << stats.current_log << '\n'
          << "wal2_log_frames " << stats.wal2_log_frames << '\n'
          << "wal2_log_frames_not_checkpointed " << stats.wal2_log_unbackfilled << '\n'
          << "wal2_log_bytes " << stats.wal2_log_bytes << '\n'
          << "log_switches " << stats.log_switches << '\n'
          << "wal2_switch_pages " << o.wal2_switch_pages << '\n';
    }
    out << "checkpoints " << stats.checkpoints << '\n'
        << "frames_copied " << stats.frames_copied << '\n'
        << "oldest_pinned_frame " << stats.oldest_pinned_frame << '\n'
        << "pinned_connections " << stats.pinned_connections << '\n'
        << "checkpoint_policy " << stats.checkpoint_policy << '\n';
    // The other policy counters describe this one short-lived handle (nothing ran yet); a
    // background checkpoint that failed is worth saying, though no call reported it.
    if (stats.background_errors > 0) {
      out << "background_errors " << stats.background_errors << '\n'
          << "background_last_error " << OneLine(stats.background_last_error) << '\n';
    }
  }
  return ExitCode::kOk;
}

// One line of load's input: "K V", or an empty line (skipped). Adds the pairs put to *n.
absl::Status LoadLine(WriteTransaction& txn, absl::string_view line, uint64_t* n) {
  absl::ConsumeSuffix(&line, "\r");
  if (line.empty()) return absl::OkStatus();
  const std::vector<absl::string_view> fields = SplitFields(line);
  if (fields.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected \"K V\" (two tokens and one space), got ", fields.size(), " fields"));
  }
  JKV_ASSIGN_OR_RETURN(std::string key, DecodeArg("key", fields[0]));
  JKV_ASSIGN_OR_RETURN(std::string value, DecodeArg("value", fields[1]));
  JKV_RETURN_IF_ERROR(txn.Put(key, value));
  ++*n;
  return absl::OkStatus();
}

// All of stdin in one write transaction: the first bad line rolls everything back.
absl::StatusOr<ExitCode> RunLoad(Db& db, const CommandIo& io) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, db.BeginWrite());
  std::string line;
  uint64_t line_no = 0;
  uint64_t n = 0;
  while (std::getline(*io.in, line)) {
    ++line_no;
    const absl::Status s = LoadLine(*txn, line, &n);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("stdin line ", line_no, ": ", s.message(),
                                                 " (nothing was loaded)"));
    }
  }
  if (io.in->bad()) return absl::UnknownError("reading stdin failed (nothing was loaded)");
  JKV_RETURN_IF_ERROR(txn->Commit());
  *io.out << "loaded " << n << '\n';
  return ExitCode::kOk;
}

absl::StatusOr<ExitCode> RunShell(Db& db, const CommandIo& io) {
  Shell shell(&db, io.out);
  JKV_RETURN_IF_ERROR(shell.Run(*io.in));
  return ExitCode::kOk;
}

// Opens the database, runs the command, closes the database.
absl::StatusOr<ExitCode> OpenAndRun(const CommandLine& cl, const CommandIo& io) {
  vfs::PosixFileSystem fs;
  Options options = cl.options;
  options.file_system = &fs;
  // Only the commands that write create a database: a read of a mistyped path is an error
  // naming it, not a new empty database.
  const std::string& name = cl.command.name;
  options.create_if_missing = name == "put" || name == "load" || name == "shell";
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(cl.db_path, options));
  const absl::StatusOr<ExitCode> code = RunCommand(*db, fs, cl.command, io);
  const absl::Status closed = db->Close();
  JKV_RETURN_IF_ERROR(code.status());
  JKV_RETURN_IF_ERROR(closed);
  return *code;
}

}  // namespace

absl::StatusOr<ExitCode> RunCommand(Db& db, vfs::FileSystem& fs, const Command& command,
                                    const CommandIo& io) {
  const std::string& name = command.name;
  if (name == "put" && command.value_from_stdin) return RunPutFromStdin(db, command.args[0], io);
  if (name == "put") {
    JKV_RETURN_IF_ERROR(db.Put(command.args[0], command.args[1]));
    return ExitCode::kOk;
  }
  if (name == "get") return RunGet(db, command.args[0], command.raw, *io.out);
  if (name == "del") {
    JKV_ASSIGN_OR_RETURN(bool existed, db.Delete(command.args[0]));
    return existed ? ExitCode::kOk : ExitCode::kMissing;
  }
  if (name == "scan" || name == "dump") return RunScan(db, command.range, *io.out);
  if (name == "count") return RunCount(db, *io.out);
  if (name == "check") return RunCheck(db, io);
  if (name == "info") return RunInfo(db, fs, *io.out);
  if (name == "load") return RunLoad(db, io);
  if (name == "shell") return RunShell(db, io);
  if (name == "backup") {
    BackupOptions options;
    options.compact = command.compact;
    JKV_ASSIGN_OR_RETURN(BackupResult r, db.Backup(command.dest, options));
    *io.out << "backup " << OneLine(command.dest) << ": " << r.pages << " pages, " << r.bytes
            << " bytes";
    if (command.compact) *io.out << " (from " << r.source_pages << "), " << r.keys << " keys";
    *io.out << '\n';
    return ExitCode::kOk;
  }
  if (name == "checkpoint") {
    JKV_ASSIGN_OR_RETURN(CheckpointResult r, Checkpoint(db, command.checkpoint_mode));
    *io.out << FormatCheckpoint(r) << '\n';
    return ExitCode::kOk;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command \"", OneLine(name), "\""));
}

ExitCode RunJkv(const std::vector<std::string>& args, const CommandIo& io) {
  if (args.empty()) {
    *io.err << UsageText();
    return ExitCode::kError;
  }
  const absl::StatusOr<CommandLine> cl = ParseCommandLine(args);
  if (!cl.ok()) {
    PrintError(*io.err, cl.status());
    return ExitCode::kError;
  }
  absl::StatusOr<ExitCode> code = ExitCode::kOk;
  if (cl->help) {
    *io.out << HelpText();
  } else {
    code = OpenAndRun(*cl, io);
  }
  io.out->flush();
  if (code.ok() && !io.out->good()) code = absl::UnknownError("writing stdout failed");
  if (!code.ok()) {
    PrintError(*io.err, code.status());
    return ExitCode::kError;
  }
  return *code;
}

}  // namespace journalkv::tools
