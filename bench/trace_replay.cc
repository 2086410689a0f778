#include "bench/trace_replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/harness.h"

namespace journalkv::bench {
namespace {

enum class TxnState { kNone, kRead, kWrite };

absl::Status NotReplayable(absl::string_view name, const TraceRecord& r, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("trace ", name, ": record at offset ", r.offset,
                                                 " (", TraceKindName(r.kind), ", thread ",
                                                 r.thread, ") cannot be replayed: ", why));
}

// What the replay threads share.
struct Shared {
  const Trace& trace;
  const ReplayOptions& options;
  std::vector<uint64_t> write_ordinal;  // by record index: its begin_write's rank in the file
  uint64_t start_ns = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t writes_done = 0;  // guarded by mu: write transactions ended so far
  bool failed = false;       // guarded by mu: a thread failed; the others stop waiting
};

// One recorded thread's replay.
class ThreadReplay {
 public:
  ThreadReplay(Shared& shared, Session& session, std::vector<size_t> records)
      : sh_(shared), s_(session), records_(std::move(records)) {}

  absl::Status Run() {
    absl::Status st = RunRecords();
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(sh_.mu);
      sh_.failed = true;
      sh_.cv.notify_all();
    }
    return st;
  }

  ReplayStats stats;

 private:
  absl::Status RunRecords() {
    size_t unit_start = 0;  // the first record of the transaction (or autocommit op) under way
    int retries = 0;
    bool retrying = false;
    std::array<uint64_t, kNumTraceKinds> pending{};  // counts of the unit under way
    for (size_t p = 0; p < records_.size();) {
      const size_t i = records_[p];
      const TraceRecord& r = sh_.trace.records[i];
      if (state_ == TxnState::kNone) unit_start = p;
      if (sh_.options.recorded_pace && !retrying) WaitUntil(r.time_us);
      if (r.kind == TraceKind::kBeginWrite) JKV_RETURN_IF_ERROR(WaitForTurn(i));
      const uint64_t t0 = NowNs();
      absl::Status st = Call(i, r);
      stats.latency.Record(NowNs() - t0);
      if (!st.ok()) {
        if (!IsBusy(st) || ++retries > kMaxRetries) {
          return absl::Status(st.code(), absl::StrCat("replaying the record at offset ",
                                                      r.offset, " (", TraceKindName(r.kind),
                                                      ", thread ", r.thread, "): ", st.message()));
        }
        ++stats.busy_errors;
        AbandonTransaction(/*last=*/false);
        pending = {};
        p = unit_start;
        retrying = true;
        continue;
      }
      ++pending[static_cast<int>(r.kind) - 1];
      if (r.kind == TraceKind::kCommit) ++pending_commits_;
      ++p;
      if (state_ == TxnState::kNone) {  // the unit ended: it counts
        for (int k = 0; k < kNumTraceKinds; ++k) stats.ops[k] += pending[k];
        stats.commits += pending_commits_;
        pending = {};
        pending_commits_ = 0;
        retries = 0;
        retrying = false;
      }
    }
    for (int k = 0; k < kNumTraceKinds; ++k) stats.ops[k] += pending[k];
    stats.commits += pending_commits_;
    if (state_ != TxnState::kNone) AbandonTransaction(/*last=*/true);  // left open when recorded
    return absl::OkStatus();
  }

  void WaitUntil(uint64_t time_us) {
    const uint64_t due = sh_.start_ns + time_us * 1000;
    const uint64_t now = NowNs();
    if (due > now) std::this_thread::sleep_for(std::chrono::nanoseconds(due - now));
  }

  absl::Status WaitForTurn(size_t i) {
    std::unique_lock<std::mutex> lock(sh_.mu);
    sh_.cv.wait(lock, [&] { return sh_.failed || sh_.writes_done == sh_.write_ordinal[i]; });
    if (sh_.failed) return absl::AbortedError("another replay thread failed");
    return absl::OkStatus();
  }

  void EndWriteTurn() {
    std::lock_guard<std::mutex> lock(sh_.mu);
    ++sh_.writes_done;
    sh_.cv.notify_all();
  }

  // Ends the open transaction: after a busy error (a write keeps its turn: it runs again
  // from its begin), or at the end of the records (`last`: a write's turn passes on).
  void AbandonTransaction(bool last) {
    if (state_ == TxnState::kWrite) {
      s_.Rollback().IgnoreError();  // a failed commit has already ended it
      if (last) EndWriteTurn();
    } else if (state_ == TxnState::kRead) {
      s_.EndRead().IgnoreError();
    }
    state_ = TxnState::kNone;
  }

  absl::Status Call(size_t i, const TraceRecord& r) {
    switch (r.kind) {
      case TraceKind::kBeginRead:
        JKV_RETURN_IF_ERROR(s_.BeginRead());
        state_ = TxnState::kRead;
        return absl::OkStatus();
      case TraceKind::kEndRead:
        state_ = TxnState::kNone;
        return s_.EndRead();
      case TraceKind::kBeginWrite:
        JKV_RETURN_IF_ERROR(s_.BeginWrite());
        state_ = TxnState::kWrite;
        return absl::OkStatus();
      case TraceKind::kCommit:
      case TraceKind::kRollback: {
        const absl::Status st = r.kind == TraceKind::kCommit ? s_.Commit() : s_.Rollback();
        if (st.ok()) {
          state_ = TxnState::kNone;
          EndWriteTurn();
        }
        return st;
      }
      case TraceKind::kGet:
        return s_.Get(r.key).status();
      case TraceKind::kPut:
        return s_.Put(r.key, ReplayValue(sh_.trace, i));
      case TraceKind::kDelete:
        return s_.Delete(r.key);
      case TraceKind::kScan: {
        const std::string& from =
            r.lower_bound.has_value() && *r.lower_bound > r.key ? *r.lower_bound : r.key;
        JKV_ASSIGN_OR_RETURN(const uint64_t n,
                             s_.Scan(from, std::min(r.limit, r.visited),
                                     [](absl::string_view, absl::string_view) {}));
        stats.items += n;
        return absl::OkStatus();
      }
      case TraceKind::kCheckpoint:
        return s_.Checkpoint(CheckpointModeName(r.checkpoint_mode)).status();
      case TraceKind::kEnd:
        break;
    }
    return absl::InternalError("unexpected record kind");
  }

  Shared& sh_;
  Session& s_;
  const std::vector<size_t> records_;
  TxnState state_ = TxnState::kNone;
  uint64_t pending_commits_ = 0;
};

}  // namespace

absl::Status CheckReplayable(const Trace& trace, absl::string_view name) {
  std::vector<TxnState> state(trace.threads, TxnState::kNone);
  for (const TraceRecord& r : trace.records) {
    TxnState& s = state[r.thread];
    switch (r.kind) {
      case TraceKind::kBeginRead:
      case TraceKind::kBeginWrite:
        if (s != TxnState::kNone) {
          return NotReplayable(name, r, "the thread has a transaction open already (a replay "
                                        "thread holds one at a time, as a Session does)");
        }
        s = r.kind == TraceKind::kBeginRead ? TxnState::kRead : TxnState::kWrite;
        break;
      case TraceKind::kEndRead:
        if (s != TxnState::kRead) return NotReplayable(name, r, "no read transaction is open");
        s = TxnState::kNone;
        break;
      case TraceKind::kCommit:
      case TraceKind::kRollback:
        if (s != TxnState::kWrite) return NotReplayable(name, r, "no write transaction is open");
        s = TxnState::kNone;
        break;
      case TraceKind::kPut:
      case TraceKind::kDelete:
        if (s != TxnState::kWrite) return NotReplayable(name, r, "no write transaction is open");
        break;
      case TraceKind::kCheckpoint:
        if (s != TxnState::kNone) {
          return NotReplayable(name, r, "a checkpoint inside a transaction");
        }
        break;
      case TraceKind::kGet:
      case TraceKind::kScan:
      case TraceKind::kEnd:
        break;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedTrace> LoadTrace(const std::string& path) {
  LoadedTrace t;
  t.path = path;
  JKV_ASSIGN_OR_RETURN(Trace trace, ReadTrace(path));
  JKV_RETURN_IF_ERROR(CheckReplayable(trace, path));
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (const size_t dot = stem.find('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  t.workload = absl::StrCat("trace:", stem);
  t.trace = std::make_shared<const Trace>(std::move(trace));
  return t;
}

absl::StatusOr<ReplayStats> ReplayTrace(EngineAdapter& adapter, const Trace& trace,
                                        const ReplayOptions& options) {
  Shared sh{trace, options};
  sh.write_ordinal.assign(trace.records.size(), 0);
  std::vector<std::vector<size_t>> by_thread(trace.threads);
  uint64_t writes = 0;
  for (size_t i = 0; i < trace.records.size(); ++i) {
    if (trace.records[i].kind == TraceKind::kBeginWrite) sh.write_ordinal[i] = writes++;
    by_thread[trace.records[i].thread].push_back(i);
  }
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<ThreadReplay>> replays;
  for (auto& records : by_thread) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, adapter.NewSession());
    replays.push_back(std::make_unique<ThreadReplay>(sh, *s, std::move(records)));
    sessions.push_back(std::move(s));
  }
  std::vector<absl::Status> results(replays.size());
  sh.start_ns = NowNs();
  if (replays.size() == 1) {
    results[0] = replays[0]->Run();
  } else {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < replays.size(); ++t) {
      threads.emplace_back([&, t] { results[t] = replays[t]->Run(); });
    }
    for (std::thread& t : threads) t.join();
  }
  ReplayStats stats;
  stats.seconds = static_cast<double>(NowNs() - sh.start_ns) / 1e9;
  for (size_t t = 0; t < replays.size(); ++t) {
    // The first real error: an Aborted one only says another thread failed.
    if (!results[t].ok() && !absl::IsAborted(results[t])) return results[t];
  }
  for (const absl::Status& r : results) JKV_RETURN_IF_ERROR(r);
  for (const auto& r : replays) {
    for (int k = 0; k < kNumTraceKinds; ++k) stats.ops[k] += r->stats.ops[k];
    stats.commits += r->stats.commits;
    stats.busy_errors += r->stats.busy_errors;
    stats.items += r->stats.items;
    stats.latency.Merge(r->stats.latency);
  }
  for (uint64_t n : stats.ops) stats.total_ops += n;
  return stats;
}

}  // namespace journalkv::bench
