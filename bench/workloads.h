// jkvbench's workloads and the harness that measures them. A case is one engine x mode x sync
// (x checkpoint policy, for WAL modes) x workload; RunCase opens the engine in a fresh
// directory, loads what the workload needs (not measured), then runs the measured phase and
// takes every measurement itself, the same way for every engine:
//
//   - the latency of each operation (steady clock around the adapter calls) in a Histogram;
//   - the phase's wall time, hence operations per second;
//   - the process's fsync/fdatasync/msync calls and bytes written (bench/syscall_counter.h),
//     a snapshot before and after the phase;
//   - the size of the engine's log files on disk (EngineAdapter::LogBytes), sampled between
//     transactions: after every commit in writelat, every 64 commits and at the end otherwise.
//     The time sampling takes is excluded from the phase's seconds;
//   - what the engine counts itself (EngineAdapter::Counters: checkpoints, time writers spent
//     blocked or waiting, database-file writes), a snapshot before and after the phase.
//
// Keys, values and the random choices come from one PRNG seeded with --seed, rebuilt for each
// case, so every engine sees the same sequence. Keys are 16 bytes (hex of a bijective mix of
// the key index), values --value-size bytes cut from a seeded random buffer (the YCSB
// workloads, ycsb.h: 1000 bytes unless --value-size is given).
//
// The workloads live in workloads.cc (the single-connection ones and the registry),
// contention.cc (contention, ckptlat), ycsb.cc (ycsb-a .. ycsb-f), multidb.cc (multidb2,
// multidb4, multidb8: transactions across several databases) and bursty.cc (bursts of commits
// between idle gaps), over harness.h.
//
// Thread-safety: RunCase runs one case at a time; contention starts its own threads.
#ifndef JOURNALKV_BENCH_WORKLOADS_H_
#define JOURNALKV_BENCH_WORKLOADS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/engine_adapter.h"
#include "bench/gaps.h"
#include "bench/histogram.h"
#include "bench/syscall_counter.h"
#include "bench/trace_replay.h"

namespace journalkv::bench {

// Which keys contention's writers write (--writer-keys).
enum class WriterKeys {
  // A lone writer: single-put commits of random loaded keys; each of several writers:
  // read-modify-write transactions on the same 256 hot keys.
  kHot,
  // Writer i: single-put commits of loaded keys only it writes (those whose index is i modulo
  // the writer count), no reads: the case group commit is for.
  kOwn,
};

struct WorkloadParams {
  uint64_t num = 10000;  // operations (or keys loaded), per workload as documented
  uint32_t value_size = 100;
  double seconds = 5;  // contention's duration
  int threads = 2;     // contention's reader threads
  int writers = 1;     // contention's writers
  bool processes = false;  // contention: workers are processes, not threads
  WriterKeys writer_keys = WriterKeys::kHot;
  // contention's writers (--commit, --commit-window): commit pipelined (journalkv's
  // WriteTransaction::CommitAsync), each writer keeping up to commit_window commits in flight;
  // engines without pipelined commits commit as usual.
  bool commit_async = false;
  int commit_window = 8;
  // contention as threads (--handles=own): journalkv's workers each on a Db handle of their
  // own (a connection per thread, as SQLite's adapter has), not sessions of the case's one.
  bool own_handles = false;
  // The YCSB workloads (ycsb.h): records loaded, operations measured, and their value size
  // (RunCase makes it the case's value_size).
  uint64_t records = 100000;
  uint64_t operations = 100000;
  uint32_t ycsb_value_size = 1000;
  // The multidb workloads (multidb.cc): keys inserted into each database per transaction.
  uint64_t puts_per_db = 10;
  // bursty (bursty.cc): commits per burst (--burst) and the idle gaps between bursts (--gap).
  uint64_t burst = 10;
  GapDistribution gap;
  uint32_t cache_mib = 8;  // page cache of journalkv and SQLite (LMDB maps the file)
  uint64_t mmap_mib = 0;   // journalkv's Options::mmap_size in MiB (--mmap-mib; 0: pread)
  // The read workloads (readrandom, scan) bring the database to rest after their load, before
  // the measured reads (--settle=checkpoint, the default; Session::Settle): every engine's log
  // copied into its database file and emptied. false (--settle=none): the reads start right
  // after the load, with whatever the checkpoint policy left in the log (bench/README.md, "The
  // read phase").
  bool settle = true;
  uint64_t seed = 301;
  // --trace: the traces loaded (and checked) before any case runs, each the workload named
  // by its LoadedTrace::workload (trace:<stem>, bench/trace_replay.h); --pace=recorded.
  std::vector<LoadedTrace> traces;
  bool pace_recorded = false;
};

struct CaseSpec {
  std::string engine;
  std::string mode;
  std::string sync;
  std::string checkpoint;  // "none" for modes without checkpoints
  std::string workload;
  // The scratch file system the case runs on (--fs: "xfs", "ext4", vfs/scratch_fs.h); empty:
  // the run's own directory (--dir).
  std::string fs;
};

// One point of writelat's over-time series: the slowest commit of a window of commits ending
// at `op`, and the log size after it.
struct SeriesPoint {
  uint64_t op = 0;
  double latency_us = 0;
  uint64_t log_bytes = 0;
};

struct CaseResult {
  CaseSpec spec;
  WorkloadParams params;
  uint64_t ops = 0;          // the workload's operations (contention: reader + writer iterations)
  uint64_t commits = 0;      // write transactions committed in the measured phase
  uint64_t items = 0;        // pairs read (scan)
  double seconds = 0;        // the measured phase's wall time
  Histogram latency;         // ns per operation (contention: every writer's commits)
  Histogram reader_latency;  // contention only: ns per reader iteration
  uint64_t reader_ops = 0;
  uint64_t writer_ops = 0;  // contention: the commits of all writers
  // contention: each writer's commits, writer 0 first (--writers entries).
  std::vector<uint64_t> writer_ops_each;
  uint64_t busy_errors = 0;         // operations that hit the busy timeout and were retried
  uint64_t writer_busy_errors = 0;  // contention: the writers' share of busy_errors
  // ckptlat: the checkpointer connection's calls, and those that did not do all their mode
  // promises (readers or the busy timeout stopped them).
  uint64_t checkpoint_calls = 0;
  uint64_t checkpoint_incomplete = 0;
  bool settled = false;  // the read workloads: Session::Settle ran after the load (--settle)
  SyscallCounts io;              // during the measured phase
  // The engine's own counters over the measured phase (EngineAdapter::Counters; all 0 but
  // for journalkv). contention --processes adds up the worker processes' connections.
  EngineCounters counters;
  uint64_t log_max_bytes = 0;
  // The bytes the databases' block device wrote over the measured phase (its sectors written,
  // vfs/scratch_fs.h DeviceBytesWritten), the file system's own journal and metadata included:
  // the file system is flushed (syncfs) before the phase and after it, outside the clock, so
  // that writeback the phase caused is counted in it. -1 where the directory is not on a block
  // device. On a shared disk other processes' writes count too: --fs gives each case a device
  // of its own.
  int64_t device_bytes = -1;
  std::vector<SeriesPoint> series;  // writelat only
  int databases = 0;  // multidb: the databases each transaction spans (0 elsewhere)
  // bursty (0 elsewhere): the bursts run, the sum of the commits' latencies (the write time,
  // which is also `seconds` there) and the idle time slept between bursts, as measured.
  uint64_t bursts = 0;
  uint64_t write_ns = 0;
  uint64_t idle_ns = 0;
  // With --repeat: how many rounds ran and their lowest and highest ops/s (this result is the
  // median round's); 1 and this round's own ops/s otherwise.
  int repeats = 1;
  double ops_per_sec_min = 0;
  double ops_per_sec_max = 0;
  double ops_per_sec_stddev = 0;  // the rounds' sample standard deviation (0: one round)
  // Each ranged figure's value (report.h RangedFigures: commits_per_sec, p99_us, ...) in each
  // round, in round order (one value with one round; empty for a result not made by
  // run.h's RunAll). The record's <figure>_min and <figure>_max come from here.
  std::map<std::string, std::vector<double>> rounds;
  // YCSB: the latency of each operation kind (ycsb.h's names: read, update, ...), beside
  // `latency`, which holds them all.
  std::map<std::string, Histogram> op_latency;
  // The run's flush floor (flush_floor.h): 4 KiB overwrites + fdatasync per second measured at
  // the start of the run, 0 when it was not measured (no sync level full or extra selected).
  double floor_per_s = 0;
  // trace:<stem> workloads: the records replayed of each kind (TraceKind - 1; retries after a
  // busy error not counted again), the recorded threads, and the pace ("fast", "recorded").
  std::array<uint64_t, kNumTraceKinds> trace_ops{};
  uint32_t trace_threads = 0;
  std::string pace;

  double OpsPerSec() const { return seconds > 0 ? ops / seconds : 0; }
  double CommitsPerSec() const { return seconds > 0 ? commits / seconds : 0; }
  double WriterOpsPerSec() const { return seconds > 0 ? writer_ops / seconds : 0; }
  double ReaderOpsPerSec() const { return seconds > 0 ? reader_ops / seconds : 0; }
  // Commits per second as a multiple of the flush floor, for a case at sync full or extra
  // that committed; 0 otherwise.
  double FloorRatio() const {
    const bool durable = spec.sync == "full" || spec.sync == "extra";
    return durable && commits > 0 && floor_per_s > 0 ? CommitsPerSec() / floor_per_s : 0;
  }
  double FsyncsPerOp() const { return ops > 0 ? double(io.flushes()) / ops : 0; }
  double FsyncsPerCommit() const { return commits > 0 ? double(io.flushes()) / commits : 0; }
  double BytesWrittenPerOp() const { return ops > 0 ? double(io.bytes_written) / ops : 0; }
  // -1 when the device's bytes were not measured.
  double DeviceBytesPerOp() const {
    return device_bytes < 0 ? -1 : ops > 0 ? double(device_bytes) / ops : 0;
  }
  double DeviceBytesPerCommit() const {
    return device_bytes < 0 ? -1 : commits > 0 ? double(device_bytes) / commits : 0;
  }
  double DbWritesPerCommit() const {
    return commits > 0 ? double(counters.db_writes) / commits : 0;
  }
};

// Told how far the measured phase has got (in operations, or in milliseconds for timed runs).
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

struct WorkloadInfo {
  std::string name;
  std::string help;  // one line for --help
  // Run when no workload is named (--full); the YCSB workloads run only when asked for.
  bool by_default = true;
};

// Every workload, in the order jkvbench runs them.
const std::vector<WorkloadInfo>& Workloads();
bool IsWorkload(absl::string_view name);
// The databases a multidb workload's transactions span (multidb4: 4); 0 for the other
// workloads, which open one database. Its cases run only on engines with open_across, in
// their across_modes (engine_adapter.h).
int AcrossDatabases(absl::string_view workload);

// Whether `name` is a trace replay (trace:<stem>, from --trace).
bool IsTraceWorkload(absl::string_view name);

// Runs one case in `dir` (created empty beforehand by the caller, who removes it afterwards).
absl::StatusOr<CaseResult> RunCase(const EngineInfo& engine, const CaseSpec& spec,
                                   const WorkloadParams& params, const std::string& dir,
                                   const ProgressFn& progress);

// The key of index i for `seed`: 16 lower-case hex digits, distinct for distinct i.
std::string BenchKey(uint64_t seed, uint64_t i);
// speedtest1's number names ("one thousand two hundred three").
std::string NumberName(uint64_t n);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_WORKLOADS_H_
