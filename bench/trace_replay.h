// Replaying a recorded trace (engine/trace.h, docs/trace.md) on any engine through its
// adapter (engine_adapter.h): jkvbench's trace:<stem> workloads (--trace=FILE) and the replay
// fidelity test.
//
//   JKV_ASSIGN_OR_RETURN(LoadedTrace t, LoadTrace("chat.jkvtrace"));   // every check first
//   JKV_ASSIGN_OR_RETURN(ReplayStats s, ReplayTrace(adapter, *t.trace, ReplayOptions{}));
//
// How a trace replays:
//   - onto the database as it is (jkvbench: empty): a trace holds operations, not a snapshot;
//   - each recorded thread on a thread of its own with its own Session, its records in order;
//     a record maps to the Session call of the same name (get and scan inside the thread's
//     open transaction, else each its own read transaction, as recorded); a scan reads
//     min(limit, visited) pairs from max(from, lower bound) (Session::Scan has no upper
//     bound: pairs at or past it are read but not counted apart);
//   - write transactions begin in the order their begin_write records have in the file: a
//     thread waits, holding no transaction, until every earlier-recorded write transaction
//     has ended. Recorded on journalkv (one writer at a time) that is the order they
//     committed in, so the replay ends with the same database content (with values kept)
//     whatever the threads' timing, and it cannot deadlock: the one writer allowed waits only
//     for readers, whose transactions never wait for a writer's turn;
//   - --pace=recorded: each record waits until its time offset from the replay's start (idle
//     gaps kept; a record that is late runs at once); fast: no waits;
//   - a busy error (the engine's busy timeout) ends the transaction, is counted, and the
//     transaction runs again from its begin (at most kMaxRetries times);
//   - a transaction a thread left open at the trace's end is rolled back (write) or ended.
//
// LoadTrace checks, before anything runs, that every thread's records make sense as Session
// calls (a begin inside an open transaction, a commit or a put outside one, a checkpoint
// inside one: an error naming the record's offset).
//
// Thread-safety: ReplayTrace starts and joins its own threads; the adapter must allow one
// Session per thread (every adapter does).
#ifndef JOURNALKV_BENCH_TRACE_REPLAY_H_
#define JOURNALKV_BENCH_TRACE_REPLAY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/engine_adapter.h"
#include "bench/histogram.h"
#include "engine/trace.h"

namespace journalkv::bench {

inline constexpr int kMaxRetries = 100;

struct LoadedTrace {
  std::string path;
  std::string workload;  // "trace:<the file's name without folder and extension>"
  std::shared_ptr<const Trace> trace;
};

// Reads and checks a trace (ReadTrace's errors name the offset; so do the replay checks).
absl::StatusOr<LoadedTrace> LoadTrace(const std::string& path);
// The replay checks alone (LoadTrace runs them); `name` is the file in messages.
absl::Status CheckReplayable(const Trace& trace, absl::string_view name);

struct ReplayOptions {
  bool recorded_pace = false;  // --pace=recorded
};

struct ReplayStats {
  std::array<uint64_t, kNumTraceKinds> ops{};  // by TraceKind - 1
  uint64_t total_ops = 0;    // records replayed (retries not counted again)
  uint64_t commits = 0;      // committed write transactions
  uint64_t busy_errors = 0;  // transactions begun again after a busy error
  uint64_t items = 0;        // pairs scans read
  Histogram latency;         // ns per record's call, every thread
  double seconds = 0;        // wall time of the replay
  uint64_t Ops(TraceKind kind) const { return ops[static_cast<int>(kind) - 1]; }
};

// Replays `trace` on `adapter` (a new Session per recorded thread).
absl::StatusOr<ReplayStats> ReplayTrace(EngineAdapter& adapter, const Trace& trace,
                                        const ReplayOptions& options);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_TRACE_REPLAY_H_
