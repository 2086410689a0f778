#include "bench/run.h"

#include <lmdb.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"
#include "bench/report.h"
#include "bench/syscall_counter.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

namespace fs = std::filesystem;

// The progress display on stderr: one line rewritten in place on a terminal (at most ten
// times a second), otherwise one line per finished case.
class Progress {
 public:
  explicit Progress(size_t cases) : cases_(cases), tty_(isatty(STDERR_FILENO) == 1) {}

  void Begin(size_t index, const CaseSpec& spec) {
    index_ = index;
    name_ = absl::StrCat(spec.engine, "/", spec.mode, "/", spec.sync,
                         spec.checkpoint == "none" ? "" : absl::StrCat("/", spec.checkpoint), " ",
                         spec.workload);
    start_ = last_ = std::chrono::steady_clock::now();
    Show("starting");
  }
  void Update(uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty_ || now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    Show(absl::StrFormat("%d/%d", done, total));
  }
  void Finished(const CaseResult& r) {
    if (!tty_) std::fprintf(stderr, "[%zu/%zu] %s\n", index_ + 1, cases_, CaseSummary(r).c_str());
  }
  void Failed(const absl::Status& s) {
    Clear();
    std::fprintf(stderr, "[%zu/%zu] %s FAILED: %s\n", index_ + 1, cases_, name_.c_str(),
                 s.ToString().c_str());
  }
  void Clear() {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  void Show(const std::string& what) {
    if (!tty_) return;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  %s  %.1fs", index_ + 1, cases_, name_.c_str(),
                 what.c_str(), secs);
    std::fflush(stderr);
  }

  const size_t cases_;
  const bool tty_;
  size_t index_ = 0;
  std::string name_;
  std::chrono::steady_clock::time_point start_, last_;
};

absl::Status AppendLine(const std::string& path, const std::string& line) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return absl::FailedPreconditionError(absl::StrCat("cannot open ", path));
  const bool ok = std::fprintf(f, "%s\n", line.c_str()) > 0;
  if (std::fclose(f) != 0 || !ok) return absl::DataLossError(absl::StrCat("writing ", path));
  return absl::OkStatus();
}

std::string CaseDir(const std::string& root, size_t index, const CaseSpec& s) {
  return absl::StrFormat("%s/%03d-%s-%s-%s-%s", root, index, s.engine, s.mode, s.sync, s.workload);
}

// Runs one case in a fresh directory, removed afterwards.
absl::StatusOr<CaseResult> RunOne(const Places& places, size_t index, const CaseSpec& spec,
                                  const BenchConfig& config, Progress& progress) {
  const std::string dir = CaseDir(places.RootOf(spec), index, spec);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir));
  const EngineInfo* engine = FindEngine(spec.engine);
  absl::StatusOr<CaseResult> r =
      RunCase(*engine, spec, config.params, dir,
              [&](uint64_t done, uint64_t total) { progress.Update(done, total); });
  fs::remove_all(dir, ec);
  return r;
}

// Writes one case's result to the files (and its writelat series).
absl::Status Record(const BenchConfig& config, const ResultFiles& files, const CaseResult& r) {
  JKV_RETURN_IF_ERROR(files.Append(r));
  if (r.spec.workload == "writelat") return WriteSeries(config.out, r);
  return absl::OkStatus();
}

// One round's value of each ranged figure (report.h), for MedianRound to gather.
void SetOwnRound(CaseResult& r) {
  r.ops_per_sec_min = r.ops_per_sec_max = r.OpsPerSec();
  r.rounds.clear();
  for (const RangedFigure& f : RangedFigures()) r.rounds[f.name] = {f.get(r)};
}

}  // namespace

absl::StatusOr<ResultFiles> ResultFiles::Open(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec)
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", out, ": ", ec.message()));
  ResultFiles f(out);
  JKV_RETURN_IF_ERROR(WriteFile(f.jsonl_, ""));
  JKV_RETURN_IF_ERROR(WriteFile(f.csv_, CsvHeader() + "\n"));
  return f;
}

absl::Status ResultFiles::Append(const CaseResult& r) const {
  JKV_RETURN_IF_ERROR(AppendLine(jsonl_, JsonLine(r)));
  return AppendLine(csv_, CsvRow(r));
}

// Where the databases live: --dir, or a fresh directory under the working directory (so that
// the benchmark measures the file system the user runs it on, not /tmp's).
absl::StatusOr<std::string> DatabaseRoot(const BenchConfig& config, bool* temporary) {
  std::error_code ec;
  *temporary = config.dir.empty();
  if (!*temporary) {
    fs::create_directories(config.dir, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("--dir: ", ec.message()));
    return config.dir;
  }
  std::string pattern = (fs::current_path(ec) / ".jkvbench-XXXXXX").string();
  if (ec || mkdtemp(pattern.data()) == nullptr) {
    return absl::FailedPreconditionError("cannot create a temporary directory here");
  }
  return pattern;
}

absl::Status MakeScratch(const std::string& name, Places& places) {
  JKV_ASSIGN_OR_RETURN(const vfs::ScratchFs::Kind kind, vfs::ScratchFs::ParseKind(name));
  absl::StatusOr<std::unique_ptr<vfs::ScratchFs>> made = vfs::ScratchFs::Make(kind, places.root);
  if (!made.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("--fs=", name, ": ", made.status().message()));
  }
  std::fprintf(stderr, "jkvbench: %s made on %s, mounted at %s\n", name.c_str(),
               (*made)->device().c_str(), (*made)->mount().c_str());
  places.scratch[name] = *std::move(made);
  return absl::OkStatus();
}

// Checks what can be checked before anything runs; returns the cases, or prints why not.
std::optional<std::vector<CaseSpec>> Prepare(const BenchConfig& config) {
  std::vector<SkippedCases> skipped;
  absl::StatusOr<std::vector<CaseSpec>> cases = ExpandCases(config, &skipped);
  if (!cases.ok()) {
    std::fprintf(stderr, "jkvbench: %s\n", std::string(cases.status().message()).c_str());
    return std::nullopt;
  }
  for (const SkippedCases& s : skipped) {
    if (!s.workload.empty()) {
      std::fprintf(stderr, "jkvbench: skipping %s/%s %s (every sync level): %s\n",
                   s.engine.c_str(), s.mode.c_str(), s.workload.c_str(), s.why.c_str());
      continue;
    }
    std::fprintf(stderr, "jkvbench: skipping %s/%s/*/%s (every workload and sync level): %s\n",
                 s.engine.c_str(), s.mode.c_str(), s.checkpoint.c_str(), s.why.c_str());
  }
  if (config.plot && !GnuplotAvailable()) {
    std::fprintf(stderr, "jkvbench: --plot needs gnuplot (./bazelw installs gnuplot-nox)\n");
    return std::nullopt;
  }
  if (!SyscallCountingWorks()) {
    std::fprintf(stderr,
                 "jkvbench: warning: system-call counting is not in effect; "
                 "fsyncs_per_op and bytes_written_per_op will read 0\n");
  }
  return *std::move(cases);
}

CaseResult MedianRound(std::vector<CaseResult> rounds) {
  std::map<std::string, std::vector<double>> values;  // in round order, before the sort
  for (const CaseResult& r : rounds) {
    for (const auto& [name, v] : r.rounds) values[name].insert(values[name].end(), v.begin(), v.end());
  }
  std::sort(rounds.begin(), rounds.end(), [](const CaseResult& a, const CaseResult& b) {
    return a.OpsPerSec() < b.OpsPerSec();
  });
  CaseResult median = std::move(rounds[(rounds.size() - 1) / 2]);
  median.repeats = static_cast<int>(rounds.size());
  median.ops_per_sec_min = rounds.front().OpsPerSec();
  median.ops_per_sec_max = rounds.back().OpsPerSec();
  median.rounds = std::move(values);
  if (rounds.size() > 1) {
    double mean = 0;
    for (const CaseResult& r : rounds) mean += r.OpsPerSec();
    mean /= static_cast<double>(rounds.size());
    double squares = 0;
    for (const CaseResult& r : rounds) squares += (r.OpsPerSec() - mean) * (r.OpsPerSec() - mean);
    median.ops_per_sec_stddev = std::sqrt(squares / static_cast<double>(rounds.size() - 1));
  }
  return median;
}

bool RunAll(const std::vector<CaseSpec>& cases, const BenchConfig& config, const Places& places,
            const ResultFiles& files, std::vector<CaseResult>& results) {
  const size_t rounds = static_cast<size_t>(config.repeat);
  Progress progress(cases.size() * rounds);
  std::vector<std::vector<CaseResult>> runs(cases.size());
  std::vector<bool> failed(cases.size(), false);
  bool all_ok = true;
  for (size_t round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (failed[i]) continue;
      progress.Begin(round * cases.size() + i, cases[i]);
      absl::StatusOr<CaseResult> r = RunOne(places, i, cases[i], config, progress);
      absl::Status s = r.status();
      if (s.ok()) {
        SetOwnRound(*r);
        r->floor_per_s = places.FloorOf(cases[i]);
      }
      if (s.ok() && rounds == 1) s = Record(config, files, *r);
      if (!s.ok()) {
        progress.Failed(s);
        failed[i] = true;
        all_ok = false;
        continue;
      }
      progress.Finished(*r);
      runs[i].push_back(*std::move(r));
    }
  }
  progress.Clear();
  for (size_t i = 0; i < cases.size(); ++i) {
    if (failed[i]) continue;
    CaseResult r = MedianRound(std::move(runs[i]));
    if (rounds > 1) {
      if (absl::Status s = Record(config, files, r); !s.ok()) {
        std::fprintf(stderr, "jkvbench: %s\n", s.ToString().c_str());
        all_ok = false;
        continue;
      }
    }
    results.push_back(std::move(r));
  }
  return all_ok;
}

namespace {

// The disk's flush floor, measured in the databases' directory (the disk their commits flush
// to) nullopt when --floor-seconds=0, or (with a warning) when the measurement failed: the run goes on without the "x floor" column.
std::optional<FlushFloor> Floor(const BenchConfig& config, const std::string& root,
                                absl::string_view where) {
  if (config.floor_seconds <= 0) return std::nullopt;
  absl::StatusOr<FlushFloor> floor = MeasureFlushFloor(root, config.floor_seconds);
  if (!floor.ok()) {
    std::fprintf(stderr, "jkvbench: warning: no flush floor: %s\n",
                 std::string(floor.status().message()).c_str());
    return std::nullopt;
  }
  std::fprintf(stderr,
               "jkvbench: flush floor%s %.0f/s (%.0f us per 4 KiB overwrite + fdatasync)\n",
               std::string(where).c_str(), floor->per_second, floor->MicrosEach());
  return *floor;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, absl::StrFormat("\\u%04x", static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The file system type of `dir`, by statfs's magic number.
std::string FileSystemType(const std::string& dir) {
  struct statfs st;
  if (statfs(dir.c_str(), &st) != 0) return "unknown";
  switch (static_cast<uint64_t>(st.f_type)) {
    case 0xEF53: return "ext4";  // also ext2/ext3
    case 0x58465342: return "xfs";
    case 0x01021994: return "tmpfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    default: return absl::StrFormat("0x%x", static_cast<uint64_t>(st.f_type));
  }
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

}  // namespace

void MeasureFloors(const BenchConfig& config, const std::vector<CaseSpec>& cases,
                   Places& places) {
  for (const CaseSpec& c : cases) {
    if ((c.sync != "full" && c.sync != "extra") || places.floor.contains(c.fs)) continue;
    const std::string where = c.fs.empty() ? "" : absl::StrCat(" on ", c.fs);
    std::optional<FlushFloor> f = Floor(config, places.RootOf(c), where);
    if (f) places.floor[c.fs] = *f;
  }
}

RunInfo CollectRunInfo(const std::string& db_dir) {
  struct utsname u;
  if (uname(&u) != 0) std::memset(&u, 0, sizeof u);
  RunInfo info;
  info.date_utc = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  info.host = u.nodename;
  info.kernel = u.release;
  info.machine = u.machine;
  info.cpu = CpuModel();
  info.cpus = sysconf(_SC_NPROCESSORS_ONLN);
  info.db_dir = db_dir;
  info.db_fs = FileSystemType(db_dir);
  info.sqlite_version = sqlite3_libversion();
  info.lmdb_version = mdb_version(nullptr, nullptr, nullptr);
  return info;
}

// run.json: what the figures were measured on and with, so that results from different
// machines, disks and versions are not compared unknowingly.
std::string RunInfoJson(const RunInfo& info, const std::vector<std::string>& args,
                        const std::map<std::string, FlushFloor>& floors, double floor_per_s) {
  std::string args_json, floors_json;
  for (const std::string& a : args) {
    absl::StrAppend(&args_json, args_json.empty() ? "" : ",", JsonString(a));
  }
  for (const auto& [where, f] : floors) {
    absl::StrAppend(&floors_json, floors_json.empty() ? "" : ",", JsonString(where), ":",
                    absl::StrFormat("%.0f", f.per_second));
  }
  return absl::StrCat(
      "{\"date_utc\":", JsonString(info.date_utc), ",\"host\":", JsonString(info.host),
      ",\"kernel\":", JsonString(info.kernel), ",\"machine\":", JsonString(info.machine),
      ",\"cpu\":", JsonString(info.cpu), ",\"cpus\":", info.cpus,
      ",\"db_dir\":", JsonString(info.db_dir), ",\"db_fs\":", JsonString(info.db_fs),
      ",\"args\":[", args_json, "]", ",\"sqlite_version\":", JsonString(info.sqlite_version),
      ",\"lmdb_version\":", JsonString(info.lmdb_version),
      ",\"floor_per_s\":", absl::StrFormat("%.0f", floor_per_s), ",\"floors\":{", floors_json, "}}\n");
}

int Run(const BenchConfig& config, const std::vector<std::string>& args) {
  std::optional<std::vector<CaseSpec>> cases = Prepare(config);
  if (!cases.has_value()) return kExitUsage;
  absl::StatusOr<ResultFiles> files = ResultFiles::Open(config.out);
  bool temporary = false;
  absl::StatusOr<std::string> root = DatabaseRoot(config, &temporary);
  if (!files.ok() || !root.ok()) {
    const absl::Status& s = !files.ok() ? files.status() : root.status();
    std::fprintf(stderr, "jkvbench: %s\n", std::string(s.message()).c_str());
    return kExitFailed;
  }
  Places places;
  places.root = *root;
  for (const std::string& name : config.filesystems) {
    if (absl::Status s = MakeScratch(name, places); !s.ok()) {
      std::fprintf(stderr, "jkvbench: %s\n", std::string(s.message()).c_str());
      places.scratch.clear();  // unmounted and removed before the folder goes
      std::error_code ec;
      if (temporary) fs::remove_all(*root, ec);
      return kExitFailed;
    }
  }
  // The flush floor of each place a case runs in (the table shows the databases' directory's,
  // or the first --fs's).
  MeasureFloors(config, *cases, places);
  std::optional<FlushFloor> floor;
  if (!places.floor.empty()) {
    auto it = config.filesystems.empty() ? places.floor.find("")
                                         : places.floor.find(config.filesystems.front());
    floor = it != places.floor.end() ? it->second : places.floor.begin()->second;
  }
  if (absl::Status s = WriteFile(config.out + "/run.json",
                                 RunInfoJson(CollectRunInfo(*root), args, places.floor,
                                             floor ? floor->per_second : 0));
      !s.ok()) {
    std::fprintf(stderr, "jkvbench: %s\n", std::string(s.message()).c_str());
    return kExitFailed;
  }
  std::vector<CaseResult> results;
  bool ok = RunAll(*cases, config, places, *files, results);
  places.scratch.clear();  // unmounted, detached and removed before the folder goes
  std::error_code ec;
  if (temporary) fs::remove_all(*root, ec);
  std::fputs(FormatTable(results, floor ? &*floor : nullptr).c_str(), stdout);
  std::fflush(stdout);
  if (config.plot) {
    if (absl::Status s = WritePlots(config.out, results, true); !s.ok()) {
      std::fprintf(stderr, "jkvbench: %s\n", std::string(s.message()).c_str());
      ok = false;
    }
  }
  std::fprintf(stderr, "jkvbench: %zu of %zu cases ran; results in %s/\n", results.size(),
               cases->size(), config.out.c_str());
  return ok ? 0 : kExitFailed;
}

}  // namespace journalkv::bench
