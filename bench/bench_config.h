// jkvbench's command line: a small argv parser (Debian's Abseil has no absl/flags library),
// the --quick preset, the --help text and the expansion of the flags into cases.
//
//   absl::StatusOr<BenchConfig> config = ParseFlags(args);   // InvalidArgument: exit 2
//   absl::StatusOr<std::vector<CaseSpec>> cases = ExpandCases(*config, &skipped);
//
// Thread-safety: plain functions.
#ifndef JOURNALKV_BENCH_BENCH_CONFIG_H_
#define JOURNALKV_BENCH_BENCH_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/workloads.h"

namespace journalkv::bench {

struct BenchConfig {
  std::vector<std::string> engines;           // empty: all
  std::vector<std::string> modes;             // empty: every mode of each engine
  std::vector<std::string> syncs = {"full"};  // defaults without the preset (--full)
  std::vector<std::string> checkpoints = {"default"};
  std::vector<std::string> workloads;  // empty: every workload run by default (not YCSB's)
  // --ycsb's workloads (ycsb-a ...), already added to `workloads`.
  std::vector<std::string> ycsb;
  // Seconds spent measuring the flush floor at the start of a run at sync full or extra; 0
  // skips it.
  double floor_seconds = 1;
  WorkloadParams params;
  std::string out = "jkvbench-results";
  std::string dir;  // empty: a fresh temporary directory under the working directory
  // --fs: each case runs once on each of these scratch file systems (vfs/scratch_fs.h names:
  // xfs, ext4, xfs-noexchange), made for the run under the databases' directory; empty: every
  // case runs in that directory itself.
  std::vector<std::string> filesystems;
  // --trace: trace files to replay, each a workload trace:<stem> (loaded into
  // params.traces by ParseFlags, which fails on a damaged one before any case runs).
  std::vector<std::string> trace_files;
  bool plot = false;
  int repeat = 1;  // rounds over every case; each case reports its median round
  bool quick = true;  // apply the --quick preset to flags not given (off with --full)
  bool help = false;
  // --reproduce: the experiments to run ("seeds": every one; reproduce.h), empty: none. With
  // it, `quick` picks the experiments' sizes.
  std::vector<std::string> reproduce;
};

// Parses the arguments after the program name. Unless --full is given, flags not given take
// the --quick preset's values.
absl::StatusOr<BenchConfig> ParseFlags(const std::vector<std::string>& args);

// The cases of one engine's WAL mode that a checkpoint policy drops: the engine does not
// support the policy (SQLite has no async:N/B), for the reason `why`; or, with `workload`
// set, the cases of that one workload (a multidb workload on an engine or mode without
// transactions across databases), every sync level.
struct SkippedCases {
  std::string engine;
  std::string mode;
  std::string checkpoint;
  std::string why;
  std::string workload;  // empty: every workload
};

// Every case the configuration asks for, workload by workload, each engine's modes in the
// engine's order, less the WAL cases of policies their engine does not support (listed in
// *skipped when given: every workload and sync level of that engine, mode and policy).
// InvalidArgument for a name no selected engine knows, a malformed policy, or a policy that no
// selected WAL mode supports.
absl::StatusOr<std::vector<CaseSpec>> ExpandCases(const BenchConfig& config,
                                                  std::vector<SkippedCases>* skipped = nullptr);

// The --help text.
std::string HelpText();

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_BENCH_CONFIG_H_
