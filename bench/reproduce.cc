// --reproduce's driver (reproduce.h): plans every selected experiment's runs, makes the places
// they need once, runs them in turn and writes the report.
#include "bench/reproduce.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/report.h"

namespace journalkv::bench {
namespace {

namespace fs = std::filesystem;

// One jkvbench invocation of an experiment, ready to run.
struct Planned {
  size_t outcome = 0;  // index into the outcomes
  const ExperimentRun* run = nullptr;
  BenchConfig config;
  std::vector<CaseSpec> cases;
};

// The PNG charts in `dir`, as paths relative to `out`.
std::vector<std::string> Charts(const std::string& out, const std::string& dir) {
  std::vector<std::string> charts;
  std::error_code ec;
  for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
    if (f.path().extension() == ".png") {
      charts.push_back(fs::relative(f.path(), out, ec).string());
    }
  }
  std::sort(charts.begin(), charts.end());
  return charts;
}

void Warn(const std::string& what) { std::fprintf(stderr, "jkvbench: %s\n", what.c_str()); }

// Puts the shipped traces in place of kShippedTraces in `flags`; false (the outcome not run,
// saying why) when they cannot be found.
bool ExpandShippedTraces(std::vector<std::string>& flags, ExperimentOutcome& outcome) {
  for (std::string& f : flags) {
    const size_t at = f.find(kShippedTraces);
    if (at == std::string::npos) continue;
    absl::StatusOr<std::string> traces = ShippedTraces();
    if (!traces.ok()) {
      outcome.not_run = std::string(traces.status().message());
      Warn(absl::StrCat("--reproduce=", outcome.experiment->name, ": ", outcome.not_run));
      return false;
    }
    f.replace(at, std::string(kShippedTraces).size(), *traces);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ShippedTraces() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("JKV_TRACES_DIR"); env != nullptr) dirs.push_back(env);
  dirs.push_back("bench/traces");
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(self.string() + ".runfiles/journalkv/bench/traces");
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* env = std::getenv(var); env != nullptr) {
      dirs.push_back(absl::StrCat(env, "/journalkv/bench/traces"));
    }
  }
  for (const std::string& dir : dirs) {
    std::vector<std::string> traces;
    for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
      if (f.path().extension() == ".jkvtrace") traces.push_back(f.path().string());
    }
    if (!traces.empty()) {
      std::sort(traces.begin(), traces.end());
      return absl::StrJoin(traces, ",");
    }
  }
  return absl::NotFoundError(absl::StrCat("no shipped traces (*.jkvtrace) in ",
                                          absl::StrJoin(dirs, ", "),
                                          ": run from the project root, or set JKV_TRACES_DIR"));
}

absl::StatusOr<std::vector<const Experiment*>> SelectExperiments(
    const std::vector<std::string>& names) {
  std::vector<const Experiment*> selected;
  std::vector<std::string> known = {"seeds"};
  for (const Experiment& e : Experiments()) known.push_back(e.name);
  for (const std::string& n : names) {
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--reproduce: unknown experiment \"", n,
                                                     "\" (known: ", absl::StrJoin(known, ", "),
                                                     ")"));
    }
  }
  const bool all = std::find(names.begin(), names.end(), "seeds") != names.end();
  for (const Experiment& e : Experiments()) {  // in report order, each once
    if (all || std::find(names.begin(), names.end(), e.name) != names.end()) {
      selected.push_back(&e);
    }
  }
  return selected;
}

std::vector<std::string> RunFlags(const Experiment& e, const ExperimentRun& run, bool quick) {
  std::vector<std::string> flags = run.flags;
  const std::vector<std::string>& sizes = quick ? e.quick_sizes : e.full_sizes;
  flags.insert(flags.end(), sizes.begin(), sizes.end());
  flags.push_back("--full");  // no preset: every size is the experiment's own
  return flags;
}

int Reproduce(const BenchConfig& config, const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<const Experiment*>> selected = SelectExperiments(config.reproduce);
  if (!selected.ok()) {
    Warn(std::string(selected.status().message()));
    return kExitUsage;
  }
  ReportInput report;
  report.quick = config.quick;
  report.repeat = config.repeat;
  report.command = absl::StrCat("jkvbench ", absl::StrJoin(args, " "));
  std::vector<Planned> plan;
  std::vector<std::string> filesystems;  // every --fs the runs need, in order
  for (const Experiment* e : *selected) {
    report.outcomes.push_back({e});
    for (const ExperimentRun& run : e->runs) {
      std::vector<std::string> flags = RunFlags(*e, run, config.quick);
      if (!ExpandShippedTraces(flags, report.outcomes.back())) continue;
      absl::StatusOr<BenchConfig> parsed = ParseFlags(flags);
      std::optional<std::vector<CaseSpec>> cases;
      if (parsed.ok()) {
        parsed->repeat = config.repeat;
        parsed->floor_seconds = config.floor_seconds;
        parsed->out = absl::StrCat(config.out, "/", e->name,
                                   run.label.empty() ? "" : absl::StrCat("/", run.label));
        cases = Prepare(*parsed);
      }
      if (!cases) {  // the registry's mistake: say which
        Warn(absl::StrCat("--reproduce=", e->name, ": bad run ", absl::StrJoin(flags, " "), ": ",
                          parsed.ok() ? "no cases" : parsed.status().message()));
        return kExitFailed;
      }
      flags.push_back(absl::StrCat("--repeat=", config.repeat));
      report.outcomes.back().commands.push_back(
          absl::StrCat("jkvbench ", absl::StrJoin(flags, " ")));
      for (const std::string& f : parsed->filesystems) {
        if (std::find(filesystems.begin(), filesystems.end(), f) == filesystems.end()) {
          filesystems.push_back(f);
        }
      }
      plan.push_back({report.outcomes.size() - 1, &run, *std::move(parsed), *std::move(cases)});
    }
  }
  bool temporary = false;
  absl::StatusOr<std::string> root = DatabaseRoot(config, &temporary);
  if (!root.ok()) {
    Warn(std::string(root.status().message()));
    return kExitFailed;
  }
  Places places;
  places.root = *root;
  std::map<std::string, std::string> cannot;  // --fs name -> why it could not be made
  for (const std::string& f : filesystems) {
    if (absl::Status s = MakeScratch(f, places); !s.ok()) {
      cannot[f] = std::string(s.message());
      Warn(absl::StrCat(s.message(), ": the experiments that need it are not run"));
    }
  }
  // Which runs can go, then every place's floor before any case runs (a quiet disk).
  for (Planned& p : plan) {
    ExperimentOutcome& o = report.outcomes[p.outcome];
    for (const std::string& f : p.config.filesystems) {
      if (cannot.contains(f) && o.not_run.empty()) {
        o.not_run = absl::StrCat("it needs file systems made for the run (--fs=",
                                 absl::StrJoin(p.config.filesystems, ","), "), and ", cannot[f],
                                 ". Run as root on Linux 6.10+ with xfsprogs installed.");
      }
    }
  }
  for (Planned& p : plan) {
    if (report.outcomes[p.outcome].not_run.empty()) MeasureFloors(p.config, p.cases, places);
  }
  report.floors = places.floor;
  report.info = CollectRunInfo(*root);
  const double first_floor = places.floor.empty() ? 0 : places.floor.begin()->second.per_second;
  bool ok = true;
  std::error_code made;
  fs::create_directories(config.out, made);
  if (absl::Status s = WriteFile(absl::StrCat(config.out, "/run.json"),
                                 RunInfoJson(report.info, args, places.floor, first_floor));
      !s.ok()) {
    Warn(std::string(s.message()));
    return kExitFailed;
  }
  const bool gnuplot = GnuplotAvailable();
  if (!gnuplot) Warn("gnuplot is not installed: the report will have no charts");
  for (Planned& p : plan) {
    ExperimentOutcome& o = report.outcomes[p.outcome];
    if (!o.not_run.empty()) continue;
    std::fprintf(stderr, "jkvbench: --reproduce %s%s: %zu cases x %d rounds\n",
                 o.experiment->name.c_str(),
                 p.run->label.empty() ? "" : absl::StrCat(" (", p.run->label, ")").c_str(),
                 p.cases.size(), p.config.repeat);
    absl::StatusOr<ResultFiles> files = ResultFiles::Open(p.config.out);
    if (!files.ok()) {
      o.failures.push_back(std::string(files.status().message()));
      ok = false;
      continue;
    }
    // The run's own run.json (its flags, the floor of its first case's place), so that its
    // folder reads as any jkvbench output.
    std::vector<std::string> flags = RunFlags(*o.experiment, *p.run, config.quick);
    ExpandShippedTraces(flags, o);
    flags.push_back(absl::StrCat("--repeat=", config.repeat));
    if (absl::Status s = WriteFile(p.config.out + "/run.json",
                                   RunInfoJson(report.info, flags, places.floor,
                                               places.FloorOf(p.cases.front())));
        !s.ok()) {
      o.failures.push_back(std::string(s.message()));
      ok = false;
    }
    std::vector<CaseResult> results;
    if (!RunAll(p.cases, p.config, places, *files, results)) {
      o.failures.push_back(absl::StrCat(
          "a case or its output failed in ", p.config.out, " (", p.cases.size() - results.size(),
          " of ", p.cases.size(), " cases missing; stderr says which)"));
      ok = false;
    }
    const std::string table = FormatTable(results);
    std::fputs(table.c_str(), stdout);
    if (absl::Status s = WriteFile(p.config.out + "/table.txt", table); !s.ok()) {
      o.failures.push_back(std::string(s.message()));
      ok = false;
    }
    if (gnuplot && !results.empty()) {
      if (absl::Status s = WritePlots(p.config.out, results, true); !s.ok()) {
        o.failures.push_back(std::string(s.message()));
        ok = false;
      }
      for (std::string& c : Charts(config.out, p.config.out)) o.charts.push_back(std::move(c));
    }
    for (CaseResult& r : results) o.results.push_back({p.run->label, std::move(r)});
    o.ran = true;
  }
  places.scratch.clear();  // unmounted, detached and removed before the folder goes
  std::error_code ec;
  if (temporary) fs::remove_all(*root, ec);
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string path = absl::StrCat(config.out, "/report.md");
  if (absl::Status s = WriteFile(path, FormatReport(report)); !s.ok()) {
    Warn(std::string(s.message()));
    return kExitFailed;
  }
  size_t ran = 0;
  for (const ExperimentOutcome& o : report.outcomes) ran += o.ran ? 1 : 0;
  std::fprintf(stderr, "jkvbench: %zu of %zu experiments ran in %.0f s; report in %s\n", ran,
               report.outcomes.size(), report.wall_seconds, path.c_str());
  return ok ? 0 : kExitFailed;
}

}  // namespace journalkv::bench
