// jkvbench's output: the human table (stdout), results.jsonl and results.csv (one record per
// case, the same fields in both, named by ResultFields), writelat's over-time series files,
// and the gnuplot script and data files behind the PNG charts.
//
// Fields of every record (README, "Benchmarks", then extras):
//   engine mode sync checkpoint workload   the case ("none": the mode has no checkpoints)
//   ops seconds ops_per_sec                operations in the measured phase and its wall time
//   p50_us p99_us p999_us max_us mean_us   per-operation latency (contention: the writers')
//   fsyncs_per_op fsyncs_per_commit        fsync + fdatasync + msync calls, process-wide
//   bytes_written_per_op                   bytes written by write/pwrite/writev, process-wide
//   log_max_bytes                          largest log size on disk seen between transactions
//                                          (journalkv WAL2: -wal and -wal2 added)
//   reader_ops writer_ops                  contention's iterations, all readers, all writers
//                                          (writer_ops = commits; 0 elsewhere)
//   reader_p50_us reader_p99_us reader_max_us   contention's reader iterations
//   blocked_writer_ms                      committing threads' time held by the checkpoint
//                                          policy until the log shrank (journalkv async:N/B)
//   busy_errors commits items              busy timeouts retried, commits, pairs scanned
//   fsync_calls fdatasync_calls msync_calls write_calls bytes_written   raw phase counts
//   num value_size seed threads            the parameters
//   repeats ops_per_sec_min ops_per_sec_max   --repeat's rounds and their range of ops/s
//   ops_per_sec_stddev                     the rounds' sample standard deviation of ops/s
//   workers                                contention's workers: "threads" or "processes"
//   writers                                --writers (contention's writer count)
//   writer_ops_per_sec                     writer_ops / seconds: commits/s of all writers
//   writer_ops_each                        each writer's commits (JSON array; CSV "n;n;...";
//                                          [] outside contention)
//   writer_ops_min writer_ops_max          the fewest and most commits of one writer
//   writer_busy_errors                     the writers' share of busy_errors
//   writer_keys                            contention's --writer-keys: hot or own
//   reader_ops_per_sec                     reader_ops / seconds: contention's reader
//                                          transactions per second (writers apart: above)
//   commits_per_sec                        commits / seconds (contention: the writers')
//   floor_per_s                            the run's flush floor (flush_floor.h): 4 KiB
//                                          overwrites + fdatasync per second, measured once
//                                          at the start of a run at sync full or extra; 0
//                                          when not measured
//   floor_ratio                            commits_per_sec / floor_per_s for a case at sync
//                                          full or extra that committed, else 0
//   records operations                     the YCSB parameters (--records, --operations)
//   <figure>_min <figure>_max             the lowest and highest of the --repeat rounds (the
//                                          round's own value with one round) for each figure
//                                          of RangedFigures() but ops_per_sec (above):
//                                          commits_per_sec reader_ops_per_sec
//                                          writer_ops_per_sec seconds p50_us p99_us p999_us
//                                          max_us mean_us bytes_written_per_op
//                                          device_bytes_per_commit. The record's own value is
//                                          the median round's (by ops/s), so it lies between
//   spread                                 the ranged figures whose rounds spread more than
//                                          kSpreadLimit (max / min > 1.5), joined by ';'
//                                          (empty: none); the table and the --reproduce
//                                          report mark such figures
//   databases puts_per_db                  the multidb workloads: the databases each
//                                          transaction spans, keys inserted into each per
//                                          transaction (--puts-per-db); 0 elsewhere
//   burst gap                              bursty: --burst and --gap (0 and "" elsewhere)
//   bursts write_ms_total idle_ms_total    bursty: the bursts run, the sum of the commits'
//                                          latencies (the write time, WCDB's figure; bursty's
//                                          seconds too, so its ops/s is commits per second of
//                                          write time), the time slept in the gaps (0 elsewhere)
//   <op>_ops <op>_p50_us <op>_p99_us       YCSB: each operation kind's count and latency, for
//                                          op in read update insert scan rmw (0 where none)
//   pace trace_threads                     trace:<stem> replays (--trace): fast or recorded,
//                                          and the recorded threads (each replayed on its
//                                          own); "" and 0 for the other workloads
//   trace_<kind>                           trace replays: the records of each kind replayed
//                                          (a transaction run again after a busy error counts
//                                          once), kind in begin_read end_read begin_write
//                                          commit rollback get put delete scan checkpoint;
//                                          they add up to ops (0 for the other workloads)
// The engine's own counters over the measured phase (EngineAdapter::Counters). Only journalkv
// counts them (0 for SQLite and LMDB), and all but db_writes_per_commit only in WAL mode. With
// contention --processes they add up every worker process's connection (and the idle parent's):
//   checkpoints frames_copied              checkpoints run (by the policy on a committing
//                                          thread, by the background checkpointer, or asked
//                                          for) and the log frames they copied back
//   checkpoint_ms checkpoint_lock_wait_ms  their time copying, syncing and restarting the log;
//                                          their time waiting for the checkpoint lock and readers
//   blocked_commits blocked_timeouts       commits the policy held (blocked_writer_ms above);
//                                          of those, released by the busy timeout (10 s) with
//                                          the log still too long
//   max_log_frames                         the largest log, in frames, a commit left since the
//                                          database was opened (the load phase included): a
//                                          high-water mark, the value at the phase's end;
//                                          journalkv WAL2: both logs (journalkv_adapter.cc)
//   db_writes_per_commit                   write calls on the database file (not log or
//                                          journal) / commits; checkpoints' writes count. WCDB
//                                          found corruption rates rise with it
//   write_lock_wait_ms write_work_ms       write transactions' time waiting for the write lock,
//                                          and working to the end of commit or rollback
//   log_zero_bytes_per_op                  zeros written preallocating the log, per operation
//                                          (part of bytes_written_per_op; no frame's bytes)
//
// Thread-safety: plain functions.
#ifndef JOURNALKV_BENCH_REPORT_H_
#define JOURNALKV_BENCH_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/flush_floor.h"
#include "bench/workloads.h"

namespace journalkv::bench {

// A figure kept with its rounds' range: its name (a record field) and its value in a result.
struct RangedFigure {
  std::string name;
  double (*get)(const CaseResult&);
};
// ops_per_sec first, then the figures listed above under <figure>_min.
const std::vector<RangedFigure>& RangedFigures();
// Rounds whose highest value is more than this times their lowest are marked as spread.
inline constexpr double kSpreadLimit = 1.5;
// Whether the values spread more than kSpreadLimit (false for fewer than two, or a
// non-positive lowest).
bool Spread(const std::vector<double>& rounds);
// The names of r's ranged figures whose rounds spread, joined by ';'.
std::string SpreadFigures(const CaseResult& r);

// The record's field names, in column order.
std::vector<std::string> ResultFields();

std::string JsonLine(const CaseResult& r);  // one JSON object, no newline
std::string CsvHeader();                    // no newline
std::string CsvRow(const CaseResult& r);    // no newline
// A one-line summary of a finished case (the non-terminal progress output).
std::string CaseSummary(const CaseResult& r);
// The human table of all results, grouped by workload in the order given; with a floor, the
// floor first, on a line of its own (each row's "x floor" column is CaseResult::FloorRatio).
std::string FormatTable(const std::vector<CaseResult>& results,
                        const FlushFloor* floor = nullptr);

// "writelat_<engine>_<mode>_<sync>.csv", with "_<checkpoint policy>" appended for a WAL mode
// run with a policy other than the default.
std::string SeriesFileName(const CaseSpec& spec);
// Writes writelat's series (op,latency_us,log_bytes rows under a header) to out_dir.
absl::Status WriteSeries(const std::string& out_dir, const CaseResult& r);

// Writes plots.gp and its data files into out_dir; with `run_gnuplot`, runs gnuplot there to
// make the PNGs (FailedPrecondition when gnuplot is missing or fails).
absl::Status WritePlots(const std::string& out_dir, const std::vector<CaseResult>& results,
                        bool run_gnuplot);
// True when `gnuplot` can be run.
bool GnuplotAvailable();

// Writes `text` to `path`, replacing it.
absl::Status WriteFile(const std::string& path, const std::string& text);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_REPORT_H_
