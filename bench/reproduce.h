// `jkvbench --reproduce=seeds` (or =NAME,...): the founding documents' experiments, each run
// as jkvbench cases, and one report that sets each published figure beside the measured one.
//
// An Experiment (the registry is experiments.cc) names the document it comes from, the
// jkvbench runs it makes (each a list of ordinary jkvbench flags, plus its sizes for --quick
// and for --full) and its published figures. A Figure says how its measured counterpart is
// computed from the results: the value of one case's figure (a record field kept with its
// rounds, report.h RangedFigures), or the ratio of two cases' (Selector). Rounds of --repeat
// are interleaved over all of an experiment's cases, so a ratio is taken round by round (round
// i of one case over round i of the other) and reported as the median of those, with their
// lowest and highest; a figure whose rounds spread more than kSpreadLimit is marked.
//
// Reproduce runs the selected experiments in turn in one databases' directory, with the
// scratch file systems they need (--fs) made once and each place's flush floor measured once,
// then writes:
//   OUT/report.md             run.json's metadata, then one section per experiment
//   OUT/run.json              run.h RunInfoJson (floors: every place's flush floor)
//   OUT/NAME[/RUN]/           each run's results.jsonl, results.csv, table.txt, series and
//                             PNG charts (plots.cc's WritePlots)
// An experiment that needs a file system the machine cannot make (root, mkfs.xfs, Linux
// 6.10+ for XFS's exchange-range) is reported as not run, with why; the others run.
//
// Adding an experiment: append an Experiment to the list in experiments.cc (its runs' flags,
// sizes and figures); nothing else changes. A run flag holding kShippedTraces gets the
// shipped traces (bench/traces/*.jkvtrace, ShippedTraces) in its place; where they cannot be
// found the experiment is reported as not run, with why.
//
// Thread-safety: plain functions.
#ifndef JOURNALKV_BENCH_REPRODUCE_H_
#define JOURNALKV_BENCH_REPRODUCE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "bench/flush_floor.h"
#include "bench/run.h"
#include "bench/workloads.h"

namespace journalkv::bench {

// One case of an experiment's results, and the figure read from it. Empty fields match any
// value (`fs` and `run` included), `sync` defaults to full.
struct Selector {
  std::string run;  // the ExperimentRun's label
  std::string engine;
  std::string mode;
  std::string workload;
  std::string checkpoint;
  std::string fs;
  std::string figure;  // a RangedFigures() name: commits_per_sec, mean_us, seconds, ...
  std::string sync = "full";
};

// A published figure and its measured counterpart: a's figure, divided by b's when b is set.
struct Figure {
  std::string what;       // what the document measured, in a few words
  std::string published;  // as the document gives it ("0.748 s / 0.132 s = 5.7x")
  double published_value = 0;  // in the measured figure's unit
  std::string unit;            // "x" (a ratio), "s", "/s"
  std::string how;             // how the measured figure is computed, in words
  Selector a;
  std::optional<Selector> b;
  std::string why;  // why measured and published differ, where they do
};

// One jkvbench invocation of an experiment: its flags (as on the command line, without the
// sizes), and a label telling its results apart ("" for an experiment's only run).
struct ExperimentRun {
  std::string label;
  std::vector<std::string> flags;
};

struct Experiment {
  std::string name;      // --reproduce=NAME, and OUT/NAME/
  std::string document;  // the founding document, named by what it is
  std::string about;     // what the experiment does, one or two sentences
  std::vector<ExperimentRun> runs;
  std::vector<std::string> quick_sizes;  // flags appended to every run with --quick
  std::vector<std::string> full_sizes;   // with --full
  std::vector<Figure> figures;
};

// In a run's flag, replaced by the shipped traces' paths joined by commas.
inline constexpr char kShippedTraces[] = "{shipped-traces}";
// The traces shipped in bench/traces/ (bench/make_traces.cc), comma-joined: looked for under
// $JKV_TRACES_DIR, then bench/traces under the working directory (the project root), then in
// the program's Bazel runfiles; NotFound saying where it looked.
absl::StatusOr<std::string> ShippedTraces();

// Every experiment, in report order (experiments.cc).
const std::vector<Experiment>& Experiments();

// The experiments `names` selects ("seeds": all); InvalidArgument naming an unknown one.
absl::StatusOr<std::vector<const Experiment*>> SelectExperiments(
    const std::vector<std::string>& names);

// The jkvbench flags of one run at the chosen sizes (what the report prints as its command).
std::vector<std::string> RunFlags(const Experiment& e, const ExperimentRun& run, bool quick);

// One case's result, with the label of the run that made it.
struct LabeledResult {
  std::string run;
  CaseResult result;
};

// What happened to one experiment.
struct ExperimentOutcome {
  const Experiment* experiment = nullptr;
  bool ran = false;
  std::string not_run;  // why it did not run (ran == false)
  std::vector<std::string> failures;  // cases or outputs that failed
  std::vector<LabeledResult> results;
  std::vector<std::string> commands;  // the jkvbench command of each run
  std::vector<std::string> charts;    // PNG paths relative to OUT
};

// A figure's measured value: the median over rounds, with their lowest and highest, and the
// medians of its parts (a and b) for the report's "from" column; missing says why not.
struct Measured {
  bool ok = false;
  std::string missing;
  double median = 0, min = 0, max = 0;
  bool spread = false;
  const CaseResult* a = nullptr;
  const CaseResult* b = nullptr;
};
Measured Measure(const Figure& f, const std::vector<LabeledResult>& results);

// The whole report.md (a pure function of its inputs, for tests).
struct ReportInput {
  RunInfo info;
  std::map<std::string, FlushFloor> floors;  // by place ("": the databases' directory)
  std::string command;                      // how the run was started
  bool quick = true;
  int repeat = 1;
  double wall_seconds = 0;
  std::vector<ExperimentOutcome> outcomes;
};
std::string FormatReport(const ReportInput& in);

// Runs config.reproduce's experiments and writes the report; returns the exit status (2 for an
// unknown name, 1 when a case or an output failed; an experiment not run for want of a file
// system is no failure).
int Reproduce(const BenchConfig& config, const std::vector<std::string>& args);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_REPRODUCE_H_
