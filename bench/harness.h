// The measuring harness that jkvbench's workload files share (internal to //bench:jkvbench_lib;
// workloads.h says what is measured, this header is how a workload measures it):
//
//   Ctx            one case: the engine, its main session, the seeded generators, the result
//   StartPhase     starts the measured phase (clock, system-call and engine-counter snapshots);
//   EndPhase       ends it; time spent sampling the log size in between is left out
//   RecordOp       one measured operation's latency; AfterCommit counts a commit
//   TimedWrite     one write transaction, timed from BeginWrite to the end of Commit
//   Load           the unmeasured load of keys [0, n) before a phase
//   WorkloadEntry  a workload's name, --help line and body, as workloads.cc registers them
//
// A workload body runs on the case's thread; the ones that start threads or processes of their
// own (contention.cc) give each its own Session and Rng.
#ifndef JOURNALKV_BENCH_HARNESS_H_
#define JOURNALKV_BENCH_HARNESS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"
#include "bench/random.h"
#include "bench/syscall_counter.h"
#include "bench/workloads.h"

namespace journalkv::bench {

// Keys per write transaction when loading a table before a measured phase.
inline constexpr uint64_t kLoadBatch = 5000;

uint64_t NowNs();

// True for the busy timeout's error, which every adapter reports alike (engine_adapter.h).
bool IsBusy(const absl::Status& s);

// Values are slices of one seeded buffer of printable bytes (as db_bench does), so making a
// value costs nothing measurable and every engine stores the same bytes.
class ValueSource {
 public:
  ValueSource(uint64_t seed, uint32_t size);
  absl::string_view Next(Rng& rng) const;

 private:
  const uint32_t size_;
  std::string buffer_;
};

using OpenAnotherFn = std::function<absl::StatusOr<std::unique_ptr<EngineAdapter>>()>;

// The state of one case: the engine, its main session, the generators and the measurements.
struct Ctx {
  Ctx(EngineAdapter& e, Session& s, const WorkloadParams& p, CaseResult& r, const ProgressFn& f,
      const OpenAnotherFn& open)
      : engine(e),
        open_another(open),
        session(s),
        params(p),
        result(r),
        progress(f),
        rng(p.seed),
        values(p.seed, p.value_size) {}

  EngineAdapter& engine;
  // Opens the case's database once more (for workers in other processes).
  const OpenAnotherFn& open_another;
  Session& session;
  const WorkloadParams& params;
  CaseResult& result;
  const ProgressFn& progress;
  Rng rng;
  const ValueSource values;

  std::string Key(uint64_t i) const { return BenchKey(params.seed, i); }
  std::string RandomExistingKey(uint64_t n) { return Key(rng.Uniform(n)); }

  // Measured phase bookkeeping.
  uint64_t phase_start_ns = 0;
  uint64_t excluded_ns = 0;  // time spent sampling the log size
  uint64_t total = 0;
  uint64_t done = 0;
  SyscallCounts io_start;
  EngineCounters counters_start;
  // The case's directory and its block device's stat file (empty: not on a block device), for
  // CaseResult::device_bytes.
  std::string dir;
  std::string device_stat;
  uint64_t device_start = 0;
};

void StartPhase(Ctx& c, uint64_t total);
void SampleLog(Ctx& c);
void EndPhase(Ctx& c);
void RecordOp(Ctx& c, uint64_t ns);
void AfterCommit(Ctx& c);

// One write transaction of the given puts; returns its latency in ns.
template <typename Puts>
absl::StatusOr<uint64_t> TimedWrite(Session& s, Puts puts) {
  const uint64_t t0 = NowNs();
  JKV_RETURN_IF_ERROR(s.BeginWrite());
  absl::Status st = puts(s);
  if (!st.ok()) {
    s.Rollback().IgnoreError();  // the put's error is the one to report
    return st;
  }
  JKV_RETURN_IF_ERROR(s.Commit());
  return NowNs() - t0;
}

// TimedWrite with the commit pipelined (Session::CommitPipelined) when `window` > 0: the time
// is to the return of the commit call, which waits only for commits `window` behind.
template <typename Puts>
absl::StatusOr<uint64_t> TimedWritePipelined(Session& s, int window, Puts puts) {
  if (window <= 0) return TimedWrite(s, puts);
  const uint64_t t0 = NowNs();
  JKV_RETURN_IF_ERROR(s.BeginWrite());
  absl::Status st = puts(s);
  if (!st.ok()) {
    s.Rollback().IgnoreError();
    return st;
  }
  JKV_RETURN_IF_ERROR(s.CommitPipelined(window));
  return NowNs() - t0;
}

absl::StatusOr<uint64_t> TimedPutCommit(Session& s, absl::string_view key,
                                        absl::string_view value);

// Loads keys [0, n) in transactions of kLoadBatch, before the measured phase.
absl::Status Load(Ctx& c, uint64_t n);

struct WorkloadEntry {
  WorkloadInfo info;
  std::function<absl::Status(Ctx&)> run;
};

// Workload bodies defined outside workloads.cc, which registers them.
absl::Status Contention(Ctx& c);  // contention.cc
absl::Status CkptLat(Ctx& c);     // contention.cc
absl::Status Bursty(Ctx& c);      // bursty.cc
std::vector<WorkloadEntry> YcsbEntries();  // ycsb.cc: ycsb-a .. ycsb-f
std::vector<WorkloadEntry> MultiDbEntries();  // multidb.cc: multidb2, multidb4, multidb8

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_HARNESS_H_
