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
#include "tools/inspect.h"
#include "tools/kv_ops.h"
#include "tools/report.h"
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
  JKV_RETURN_IF_ERROR(ForEachInRange(*txn, range, [&](absl::string_view k, absl::string_view v) {
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

absl::StatusOr<ExitCode> RunInfo(Db& db, vfs::FileSystem& fs, bool json, std::ostream& out) {
  JKV_ASSIGN_OR_RETURN(Report f, InfoReport(db, fs));
  out << (json ? f.Json() + "\n" : f.Text());
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
  JKV_RETURN_IF_ERROR(txn->CommitOrRollback());
  *io.out << "loaded " << n << '\n';
  return ExitCode::kOk;
}

absl::StatusOr<ExitCode> RunShell(std::vector<Db*> dbs, const CommandIo& io) {
  Shell shell(std::move(dbs), io.out);
  JKV_RETURN_IF_ERROR(shell.Run(*io.in));
  return ExitCode::kOk;
}

// `jkv DBPATH shell OTHER_DBPATH ...`: refuses two paths that name one file (ParseCommandLine
// refused the same spelling twice; this finds ./x.db beside x.db, or a hard link), before the
// shell reads a line.
absl::Status CheckDistinctFiles(vfs::FileSystem& fs, const std::vector<std::string>& paths) {
  std::vector<std::string> ids;
  for (const std::string& path : paths) {
    vfs::OpenOptions read_only;
    read_only.mode = vfs::OpenMode::kReadOnly;
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file, fs.Open(path, read_only));
    JKV_ASSIGN_OR_RETURN(std::string id, file->Identity());
    for (size_t j = 0; j < ids.size(); ++j) {
      if (ids[j] != id) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "shell: ", OneLine(paths[j]), " and ", OneLine(path), " are the same file (databases ",
          j, " and ", ids.size(), "); each database takes part once"));
    }
    ids.push_back(std::move(id));
  }
  return absl::OkStatus();
}

// The shell over DBPATH (`db`, open) and its OTHER_DBPATHs, opened with `options` as DBPATH was.
absl::StatusOr<ExitCode> OpenOthersAndRunShell(Db& db, const CommandLine& cl,
                                               const Options& options, vfs::FileSystem& fs,
                                               const CommandIo& io) {
  std::vector<std::unique_ptr<Db>> others;
  absl::Status s;
  Options other_options = options;
  other_options.record_path.clear();  // --record records DBPATH's handle only
  for (const std::string& path : cl.command.other_dbs) {
    absl::StatusOr<std::unique_ptr<Db>> other = Db::Open(path, other_options);
    if (!other.ok()) {
      s = other.status();
      break;
    }
    others.push_back(std::move(other).value());
    if (cl.page_size_given && others.back()->page_size() != options.page_size) {
      *io.err << "note: " << OneLine(path) << " has " << others.back()->page_size()
              << "-byte pages, fixed when it was made; --page-size=" << options.page_size
              << " is ignored\n";
    }
  }
  std::vector<std::string> paths = {cl.db_path};
  paths.insert(paths.end(), cl.command.other_dbs.begin(), cl.command.other_dbs.end());
  if (s.ok()) s = CheckDistinctFiles(fs, paths);
  absl::StatusOr<ExitCode> code = ExitCode::kOk;
  if (!s.ok()) {
    code = s;
  } else {
    std::vector<Db*> dbs = {&db};
    for (const auto& other : others) dbs.push_back(other.get());
    code = RunShell(std::move(dbs), io);
  }
  for (const auto& other : others) {
    const absl::Status closed = other->Close();
    if (code.ok() && !closed.ok()) code = closed;
  }
  return code;
}

// Opens the database, runs the command, closes the database.
absl::StatusOr<ExitCode> OpenAndRun(const CommandLine& cl, const CommandIo& io) {
  vfs::PosixFileSystem fs;
  if (cl.command.name == "inspect") {
    // The files as they are: a database too damaged to open can still be read.
    JKV_RETURN_IF_ERROR(Inspect(fs, cl.db_path, cl.command.inspect, cl.command.page_no, *io.out));
    return ExitCode::kOk;
  }
  Options options = cl.options;
  options.file_system = &fs;
  // Only the commands that write create a database: a read of a mistyped path is an error
  // naming it, not a new empty database.
  const std::string& name = cl.command.name;
  const bool writes = name == "put" || name == "del" || name == "load" || name == "shell";
  options.create_if_missing = name == "put" || name == "load" || name == "shell";
  // Only the commands that write switch a database's journal family: the others open it in
  // its own family, and say so when --journal named another.
  const std::optional<JournalMode> asked = options.journal_mode;
  options.switch_family = writes;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(cl.db_path, options));
  if (asked.has_value() && !writes) {
    const JournalMode used = *db->options().journal_mode;
    if (*asked != used) {
      *io.err << "note: " << OneLine(cl.db_path) << " stays in " << JournalModeName(used)
              << " mode (only put, del, load and shell switch it to --journal="
              << JournalModeName(*asked) << ")\n";
    }
  }
  if (cl.page_size_given && db->page_size() != options.page_size) {
    // The page size is fixed when the database is made; an existing one keeps its own.
    *io.err << "note: " << OneLine(cl.db_path) << " has " << db->page_size()
            << "-byte pages, fixed when it was made; --page-size=" << options.page_size
            << " is ignored\n";
  }
  const absl::StatusOr<ExitCode> code =
      cl.command.other_dbs.empty() ? RunCommand(*db, fs, cl.command, io)
                                   : OpenOthersAndRunShell(*db, cl, options, fs, io);
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
  if (name == "info") return RunInfo(db, fs, command.json, *io.out);
  if (name == "stats") {
    const Report f = StatsReport(db.Stats());
    *io.out << (command.json ? f.Json() + "\n" : f.Text());
    return ExitCode::kOk;
  }
  if (name == "load") return RunLoad(db, io);
  if (name == "shell") return RunShell({&db}, io);
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
  if (name == "compact") {
    JKV_ASSIGN_OR_RETURN(CompactResult r, db.Compact());
    *io.out << "compact: " << r.pages_before << " -> " << r.pages << " pages, " << r.bytes_before
            << " -> " << r.bytes << " bytes";
    if (r.checkpoint.blocked) *io.out << " (the file is cut once older snapshots end)";
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
