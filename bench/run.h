// Running the cases of one BenchConfig: jkvbench's ordinary run (Run), and the pieces that
// `--reproduce` (reproduce.h) runs each experiment's configurations with, sharing one
// directory, one set of scratch file systems and one flush floor per place.
//
//   Places places;  places.root = ...;  MakeScratch({"xfs"}, places);
//   MeasureFloors(config, cases, places);
//   std::optional<std::vector<CaseSpec>> cases = Prepare(config);     // prints why not
//   ResultFiles files = *ResultFiles::Open(out);
//   bool ok = RunAll(*cases, config, places, files, results);         // --repeat interleaved
//
// RunAll runs every case --repeat times, round after round (each round visits every case in
// turn, so a disk's slow minute falls on all of them alike), and keeps each case's median
// round by ops/s, with every ranged figure's value in each round (CaseResult::rounds; report.h
// RangedFigures) for the records' <figure>_min and <figure>_max.
//
// Thread-safety: plain functions, one run at a time.
#ifndef JOURNALKV_BENCH_RUN_H_
#define JOURNALKV_BENCH_RUN_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/bench_config.h"
#include "bench/flush_floor.h"
#include "bench/workloads.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {

inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// results.jsonl and results.csv in one folder (created), appended to as cases finish.
class ResultFiles {
 public:
  static absl::StatusOr<ResultFiles> Open(const std::string& out);
  absl::Status Append(const CaseResult& r) const;

 private:
  explicit ResultFiles(const std::string& out)
      : jsonl_(out + "/results.jsonl"), csv_(out + "/results.csv") {}
  std::string jsonl_;
  std::string csv_;
};

// Where the cases run: the databases' directory, or with --fs the scratch file systems made
// for the run in it (vfs/scratch_fs.h), each with its flush floor.
struct Places {
  std::string root;
  std::map<std::string, std::unique_ptr<vfs::ScratchFs>> scratch;  // by --fs name
  std::map<std::string, FlushFloor> floor;                          // by fs name ("": root)

  const std::string& RootOf(const CaseSpec& spec) const {
    return spec.fs.empty() ? root : scratch.at(spec.fs)->mount();
  }
  double FloorOf(const CaseSpec& spec) const {
    auto it = floor.find(spec.fs);
    return it == floor.end() ? 0 : it->second.per_second;
  }
};

// Where the databases live: --dir, or a fresh directory under the working directory
// (*temporary: the caller removes it at the end).
absl::StatusOr<std::string> DatabaseRoot(const BenchConfig& config, bool* temporary);

// Makes and mounts the file system `name` (vfs/scratch_fs.h) under places.root, or says why
// not (FailedPrecondition naming --fs=NAME).
absl::Status MakeScratch(const std::string& name, Places& places);

// Checks what can be checked before anything runs; returns the cases, or prints why not.
std::optional<std::vector<CaseSpec>> Prepare(const BenchConfig& config);

// Measures the flush floor of each place the cases run in that has none yet, when a case runs
// at sync full or extra there (a failed measurement is a warning: no "x floor").
void MeasureFloors(const BenchConfig& config, const std::vector<CaseSpec>& cases,
                   Places& places);

// The round with the median ops/s (the lower middle for an even count), carrying the range of
// ops/s, its standard deviation and every ranged figure's rounds (in round order).
CaseResult MedianRound(std::vector<CaseResult> rounds);

// Runs every case config.repeat times, interleaved, and records each case's median round in
// `files` (and writelat's series in config.out). False when a case or its output failed (the
// others still run; a case that failed in any round is not reported).
bool RunAll(const std::vector<CaseSpec>& cases, const BenchConfig& config, const Places& places,
            const ResultFiles& files, std::vector<CaseResult>& results);

// What a run measured on (run.json).
struct RunInfo {
  std::string date_utc, host, kernel, machine, cpu, db_dir, db_fs, sqlite_version,
      lmdb_version;
  long cpus = 0;
};
RunInfo CollectRunInfo(const std::string& db_dir);
// run.json's text: the info, the arguments, the floor the table shows (floor_per_s: the
// databases' directory's, else the first --fs's) and each place's (floors: {"": the
// databases' directory, "xfs": ...}).
std::string RunInfoJson(const RunInfo& info, const std::vector<std::string>& args,
                        const std::map<std::string, FlushFloor>& floors, double floor_per_s);

// jkvbench's ordinary run: every case of `config`, the table on stdout, the files in
// config.out. Returns the exit status.
int Run(const BenchConfig& config, const std::vector<std::string>& args);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_RUN_H_
