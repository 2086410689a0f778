// contention and ckptlat: the workloads of several connections at once (workloads.h). Their
// workers are threads of this process, each with its own Session, or with --processes child
// processes, each opening the database itself and sending its counts back through a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "bench/harness.h"

namespace journalkv::bench {
namespace {

// Point reads per read transaction of contention's readers and ckptlat's.
constexpr int kReadsPerReaderTxn = 10;

// What one contention thread did.
struct WorkerStats {
  Histogram latency;
  uint64_t iterations = 0;
  uint64_t busy = 0;
  absl::Status status;
};

// Shared by the contention threads; immutable while they run except `stop`.
struct ContentionShared {
  const Ctx& ctx;
  std::atomic<bool> stop{false};
};

// Several writers share the first kHotKeys loaded keys (all of them when --num is smaller), so
// that their transactions read and write the same few pages.
constexpr uint64_t kHotKeys = 256;

int Writers(const WorkloadParams& p) { return std::max(0, p.writers); }

// The keys loaded before the phase: --num, and with own keys at least one per writer.
uint64_t Loaded(const WorkloadParams& p) {
  const uint64_t writers = static_cast<uint64_t>(Writers(p));
  return std::max<uint64_t>({1, p.num, p.writer_keys == WriterKeys::kOwn ? writers : 0});
}

// With --writer-keys=own, writer `index` of W owns the loaded keys whose index is `index`
// modulo W: disjoint sets spread over the whole table (keys are hashed), so writers never
// touch a key another writes, yet share its pages, as independent clients of one table do.
std::string OwnKey(const Ctx& c, int index, Rng& rng) {
  const uint64_t writers = static_cast<uint64_t>(Writers(c.params));
  const uint64_t i = static_cast<uint64_t>(index);
  const uint64_t owned = (Loaded(c.params) - i + writers - 1) / writers;  // >= 1
  return c.Key(i + writers * rng.Uniform(owned));
}

// --commit=async: how many commits a writer keeps in flight (0: commits wait, as sync).
int Window(const WorkloadParams& p) { return p.commit_async ? p.commit_window : 0; }

// One single-put commit, pipelined at --commit=async.
absl::StatusOr<uint64_t> TimedPut(const Ctx& c, Session& s, absl::string_view key,
                                  absl::string_view value) {
  return TimedWritePipelined(s, Window(c.params), [&](Session& t) { return t.Put(key, value); });
}

// A multi-writer transaction: reads a random hot key and writes it back with a new value.
absl::StatusOr<uint64_t> TimedReadModifyWrite(const Ctx& ctx, Session& s, Rng& rng) {
  const std::string key = ctx.Key(rng.Uniform(std::min(ctx.params.num, kHotKeys)));
  return TimedWritePipelined(s, Window(ctx.params), [&](Session& t) -> absl::Status {
    JKV_ASSIGN_OR_RETURN(std::optional<std::string> old, t.Get(key));
    if (!old.has_value()) return absl::InternalError("contention: loaded key missing");
    return t.Put(key, ctx.values.Next(rng));
  });
}

// Commits until told to stop: with own keys, single-put commits of the writer's own keys;
// otherwise a lone writer makes single-put commits overwriting random loaded keys (contention
// as it was before --writers, and the same as own keys for one writer), each of several
// writers read-modify-write transactions on the hot keys. Writer `index` counts from 0.
void WriterLoop(ContentionShared& sh, Session& s, int index, WorkerStats& w) {
  const Ctx& c = sh.ctx;
  Rng rng(c.params.seed ^ (0x777269746572ULL + static_cast<uint64_t>(index)));
  while (!sh.stop.load(std::memory_order_relaxed)) {
    absl::StatusOr<uint64_t> ns;
    if (c.params.writer_keys == WriterKeys::kOwn) {
      const std::string key = OwnKey(c, index, rng);
      ns = TimedPut(c, s, key, c.values.Next(rng));
    } else if (Writers(c.params) == 1) {
      const std::string key = c.Key(rng.Uniform(c.params.num));
      ns = TimedPut(c, s, key, c.values.Next(rng));
    } else {
      ns = TimedReadModifyWrite(c, s, rng);
    }
    if (IsBusy(ns.status())) {
      ++w.busy;
      continue;
    }
    if (!ns.ok()) {
      w.status = ns.status();
      sh.stop = true;
      return;
    }
    w.latency.Record(*ns);
    ++w.iterations;
  }
  // --commit=async: the commits still in flight are counted; their flushes end in the phase.
  if (absl::Status done = s.WaitCommits(); !done.ok() && w.status.ok()) w.status = done;
}

// One reader iteration: kReadsPerReaderTxn point reads in one read transaction.
absl::Status ReadIteration(const Ctx& ctx, Session& s, Rng& rng) {
  JKV_RETURN_IF_ERROR(s.BeginRead());
  absl::Status st;
  for (int i = 0; i < kReadsPerReaderTxn && st.ok(); ++i) {
    absl::StatusOr<std::optional<std::string>> v = s.Get(ctx.Key(rng.Uniform(ctx.params.num)));
    st = v.status();
    if (st.ok() && !v->has_value()) st = absl::InternalError("contention: loaded key missing");
  }
  absl::Status end = s.EndRead();
  return st.ok() ? end : st;
}

void ReaderLoop(ContentionShared& sh, Session& s, int index, WorkerStats& w) {
  Rng rng(sh.ctx.params.seed ^ (0x726561646572ULL + static_cast<uint64_t>(index)));
  while (!sh.stop.load(std::memory_order_relaxed)) {
    const uint64_t t0 = NowNs();
    absl::Status st = ReadIteration(sh.ctx, s, rng);
    if (IsBusy(st)) {
      ++w.busy;
      continue;
    }
    if (!st.ok()) {
      w.status = st;
      sh.stop = true;
      return;
    }
    w.latency.Record(NowNs() - t0);
    ++w.iterations;
  }
}

// Sleeps until `seconds` have passed or a worker stopped early, reporting progress in ms.
void WaitOut(Ctx& c, ContentionShared& sh) {
  const uint64_t total_ms = static_cast<uint64_t>(c.params.seconds * 1000);
  for (uint64_t elapsed = 0; elapsed < total_ms && !sh.stop.load();) {
    const uint64_t step = std::min<uint64_t>(100, total_ms - elapsed);
    std::this_thread::sleep_for(std::chrono::milliseconds(step));
    elapsed = (NowNs() - c.phase_start_ns) / 1000000;
    c.progress(std::min(elapsed, total_ms), total_ms);
  }
  sh.stop = true;
}

// Contention's worker `index`: the writers come first, then the readers, numbered from 1.
void WorkerLoop(ContentionShared& sh, Session& s, int index, WorkerStats& w) {
  const int writers = Writers(sh.ctx.params);
  if (index < writers) {
    WriterLoop(sh, s, index, w);
  } else {
    ReaderLoop(sh, s, index - writers + 1, w);
  }
}

// Adds what the workers did to the case's result (workers in WorkerLoop's order).
void Collect(Ctx& c, const std::vector<WorkerStats>& stats) {
  const size_t writers = static_cast<size_t>(Writers(c.params));
  for (size_t i = 0; i < stats.size(); ++i) {
    const WorkerStats& w = stats[i];
    c.result.busy_errors += w.busy;
    if (i < writers) {
      c.result.latency.Merge(w.latency);
      c.result.writer_ops += w.iterations;
      c.result.writer_ops_each.push_back(w.iterations);
      c.result.writer_busy_errors += w.busy;
    } else {
      c.result.reader_latency.Merge(w.latency);
      c.result.reader_ops += w.iterations;
    }
  }
  c.result.commits = c.result.writer_ops;
  c.result.ops = c.result.writer_ops + c.result.reader_ops;
}

// ---- contention in separate processes (--processes) ----

// Writes all of `bytes` to fd; false on an error.
bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads fd to its end.
std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// What a worker process sends its parent: `Counts` as raw bytes (same binary on both sides),
// then the error message and the encoded histogram.
struct ChildReport {
  struct Counts {
    uint64_t iterations = 0;
    uint64_t busy = 0;
    SyscallCounts io;
    EngineCounters counters;  // of the worker's own connection
    int32_t code = 0;  // absl::StatusCode of the first error
    uint64_t message_size = 0;
  };
  static_assert(std::is_trivially_copyable_v<Counts>);

  Counts counts;
  std::string message;
  Histogram latency;

  void Fail(const absl::Status& s) {
    counts.code = static_cast<int32_t>(s.code());
    message = std::string(s.message());
  }
  std::string Encode() {
    counts.message_size = message.size();
    return absl::StrCat(absl::string_view(reinterpret_cast<const char*>(&counts), sizeof counts),
                        message, latency.Encode());
  }
  bool Decode(const std::string& bytes) {
    if (bytes.size() < sizeof counts) return false;
    std::memcpy(&counts, bytes.data(), sizeof counts);
    if (counts.message_size > bytes.size() - sizeof counts) return false;
    message = bytes.substr(sizeof counts, counts.message_size);
    return latency.Decode(bytes.substr(sizeof counts + counts.message_size));
  }
};

// The body of one worker process: opens the database itself, says it is ready, waits for the
// start signal (EOF on `go_fd`), works for the case's seconds and reports.
ChildReport RunChild(const Ctx& c, int index, int ready_fd, int go_fd) {
  ChildReport report;
  absl::StatusOr<std::unique_ptr<EngineAdapter>> adapter = c.open_another();
  absl::StatusOr<std::unique_ptr<Session>> session =
      adapter.ok() ? (*adapter)->NewSession() : adapter.status();
  const bool ready = WriteAll(ready_fd, "r");
  ::close(ready_fd);
  char byte;
  while (::read(go_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  if (!session.ok() || !ready) {
    report.Fail(session.ok() ? absl::InternalError("contention: the ready pipe broke")
                             : session.status());
    return report;
  }
  WorkerStats w;
  ContentionShared sh{c};
  const EngineCounters counters_start = (*adapter)->Counters();
  const SyscallCounts io_start = SyscallSnapshot();
  std::thread timer([&] {
    const uint64_t end = NowNs() + static_cast<uint64_t>(c.params.seconds * 1e9);
    while (!sh.stop.load() && NowNs() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    sh.stop = true;
  });
  WorkerLoop(sh, **session, index, w);
  timer.join();
  report.counts.io = SyscallSnapshot() - io_start;
  report.counts.counters = (*adapter)->Counters().Since(counters_start);
  report.counts.iterations = w.iterations;
  report.counts.busy = w.busy;
  report.latency = std::move(w.latency);
  if (!w.status.ok()) report.Fail(w.status);
  session->reset();
  absl::Status closed = (*adapter)->Close();
  if (!closed.ok() && report.counts.code == 0) report.Fail(closed);
  return report;
}

// W writers and R readers, each a child process with its own connection: what journalkv's and
// SQLite's file locks and LMDB's reader table and writer mutex do between processes rather
// than threads.
absl::Status ContentionInProcesses(Ctx& c, int workers) {
  // The parent's own connection stays open (idle) so the database is never closed meanwhile.
  int go[2];
  if (::pipe(go) != 0) return absl::InternalError("contention: pipe failed");
  struct Child {
    pid_t pid = -1;
    int ready_fd = -1;
    int report_fd = -1;
  };
  std::vector<Child> children;
  absl::Status failure;
  for (int i = 0; i < workers && failure.ok(); ++i) {
    int ready[2] = {-1, -1}, report[2] = {-1, -1};
    const bool piped = ::pipe(ready) == 0 && ::pipe(report) == 0;
    std::fflush(nullptr);
    const pid_t pid = piped ? ::fork() : -1;
    if (pid < 0) {
      for (int fd : {ready[0], ready[1], report[0], report[1]}) {
        if (fd >= 0) ::close(fd);
      }
      failure = absl::InternalError(piped ? "contention: fork failed" : "contention: pipe failed");
      break;
    }
    if (pid == 0) {  // the child: never returns into the parent's code
      ::close(go[1]);
      ::close(ready[0]);
      ::close(report[0]);
      for (const Child& other : children) {
        ::close(other.ready_fd);
        ::close(other.report_fd);
      }
      ChildReport r = RunChild(c, i, ready[1], go[0]);
      const bool sent = WriteAll(report[1], r.Encode());
      ::_exit(sent ? 0 : 1);
    }
    ::close(ready[1]);
    ::close(report[1]);
    children.push_back(Child{pid, ready[0], report[0]});
  }
  // Every child has opened the database (or failed) before the clock starts.
  for (Child& ch : children) {
    char byte;
    while (::read(ch.ready_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(ch.ready_fd);
  }
  ::close(go[0]);
  StartPhase(c, static_cast<uint64_t>(c.params.seconds * 1000));
  ::close(go[1]);  // go
  ContentionShared sh{c};
  if (failure.ok()) WaitOut(c, sh);
  std::vector<ChildReport> reports(children.size());
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string bytes = ReadAll(children[i].report_fd);
    ::close(children[i].report_fd);
    int wstatus = 0;
    while (::waitpid(children[i].pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (!reports[i].Decode(bytes) && failure.ok()) {
      failure = absl::InternalError(absl::StrCat("contention: worker process ", i,
                                                 " exited without a report (status ", wstatus,
                                                 ")"));
    }
  }
  EndPhase(c);
  JKV_RETURN_IF_ERROR(failure);
  std::vector<WorkerStats> stats(reports.size());
  for (size_t i = 0; i < reports.size(); ++i) {
    ChildReport& r = reports[i];
    if (r.counts.code != 0) {
      return absl::Status(static_cast<absl::StatusCode>(r.counts.code),
                          absl::StrCat("contention worker process ", i, ": ", r.message));
    }
    stats[i].latency = std::move(r.latency);
    stats[i].iterations = r.counts.iterations;
    stats[i].busy = r.counts.busy;
    c.result.io += r.counts.io;  // the children's system calls, beside the parent's
    c.result.counters += r.counts.counters;  // and their connections' counters
  }
  Collect(c, stats);
  return absl::OkStatus();
}

}  // namespace

absl::Status Contention(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, Loaded(c.params)));
  const int workers = Writers(c.params) + std::max(0, c.params.threads);
  if (c.params.processes) return ContentionInProcesses(c, workers);
  // --handles=own: journalkv's workers each on a handle of their own (the first on the case's);
  // declared first, so that the sessions go before their handles.
  std::vector<std::unique_ptr<EngineAdapter>> handles;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < workers; ++i) {
    std::unique_ptr<Session> s;
    if (c.params.own_handles && i > 0 && c.engine.name() == "journalkv") {
      JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> handle, c.open_another());
      handles.push_back(std::move(handle));
      JKV_ASSIGN_OR_RETURN(s, handles.back()->NewSession());
    } else {
      JKV_ASSIGN_OR_RETURN(s, c.engine.NewSession());
    }
    sessions.push_back(std::move(s));
  }
  std::vector<WorkerStats> stats(workers);
  ContentionShared sh{c};
  StartPhase(c, static_cast<uint64_t>(c.params.seconds * 1000));
  std::vector<EngineCounters> handle_start;  // --handles=own: the other handles' counters
  for (const std::unique_ptr<EngineAdapter>& h : handles) handle_start.push_back(h->Counters());
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] { WorkerLoop(sh, *sessions[i], i, stats[i]); });
  }
  WaitOut(c, sh);
  for (std::thread& t : threads) t.join();
  EndPhase(c);
  // Every handle's counters, as --processes sums its children's connections'.
  for (size_t i = 0; i < handles.size(); ++i) {
    c.result.counters += handles[i]->Counters().Since(handle_start[i]);
  }
  for (const WorkerStats& w : stats) JKV_RETURN_IF_ERROR(w.status);
  Collect(c, stats);
  return absl::OkStatus();
}

namespace {

// ckptlat: what a checkpoint that holds the writer costs its commits. This connection makes
// N single-put commits of new keys while another connection checkpoints every kCkptLatInterval,
// RESTART and FULL in turn (both wait for readers of older snapshots), and --threads readers
// each hold a read transaction of kReadsPerReaderTxn point reads for kCkptLatReaderHold, then
// pause kCkptLatReaderPause. The latency percentiles are the commits'. WAL's FULL and RESTART
// hold the writer while they copy and wait for readers, as SQLite's do; WAL2's hold it only to
// switch logs.
constexpr absl::Duration kCkptLatInterval = absl::Milliseconds(5);
constexpr absl::Duration kCkptLatReaderHold = absl::Milliseconds(10);
constexpr absl::Duration kCkptLatReaderPause = absl::Milliseconds(1);
constexpr uint64_t kCkptLatLoaded = 1000;

}  // namespace

absl::Status CkptLat(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, kCkptLatLoaded));
  const int readers = std::max(0, c.params.threads);
  // The checkpointer and each reader on connections of their own, as other processes would
  // be: journalkv's sessions share one handle (and its reader slot, which a checkpoint cannot
  // wait for), so they get a handle each; SQLite's sessions are connections already, and LMDB
  // may not open one environment twice in a process (and has nothing to checkpoint).
  std::vector<std::unique_ptr<EngineAdapter>> handles;
  auto own_connection = [&]() -> absl::StatusOr<std::unique_ptr<Session>> {
    if (c.engine.name() != "journalkv") return c.engine.NewSession();
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> handle, c.open_another());
    handles.push_back(std::move(handle));
    return handles.back()->NewSession();
  };
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> checkpointer, own_connection());
  std::vector<std::unique_ptr<Session>> reader_sessions;
  for (int i = 0; i < readers; ++i) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, own_connection());
    reader_sessions.push_back(std::move(s));
  }
  std::atomic<bool> stop{false};
  absl::Status ckpt_status;
  std::vector<absl::Status> reader_status(readers);
  std::vector<uint64_t> reader_txns(readers, 0);
  std::atomic<int> started{0};  // the checkpointer's first call ended, each reader's first began
  std::thread ckpt([&] {
    for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      absl::StatusOr<bool> done = checkpointer->Checkpoint(i % 2 == 0 ? "restart" : "full");
      if (!done.ok() && !IsBusy(done.status())) {
        ckpt_status = done.status();
        if (i == 0) ++started;  // read only after the join
        return;
      }
      ++c.result.checkpoint_calls;
      if (!done.ok() || !*done) ++c.result.checkpoint_incomplete;
      if (i == 0) ++started;
      std::this_thread::sleep_for(absl::ToChronoMicroseconds(kCkptLatInterval));
    }
  });
  std::vector<std::thread> reader_threads;
  for (int r = 0; r < readers; ++r) {
    reader_threads.emplace_back([&, r] {
      Session& s = *reader_sessions[r];
      Rng rng(c.params.seed ^ (0x726561646572ULL + static_cast<uint64_t>(r)));
      for (bool first = true; !stop.load(std::memory_order_relaxed); first = false) {
        absl::Status st = s.BeginRead();
        if (first) ++started;
        for (int i = 0; i < kReadsPerReaderTxn && st.ok(); ++i) {
          st = s.Get(c.Key(rng.Uniform(kCkptLatLoaded))).status();
        }
        std::this_thread::sleep_for(absl::ToChronoMicroseconds(kCkptLatReaderHold));
        absl::Status end = s.EndRead();
        if (st.ok()) st = end;
        if (!st.ok() && !IsBusy(st)) {
          reader_status[r] = st;
          return;
        }
        ++reader_txns[r];
        std::this_thread::sleep_for(absl::ToChronoMicroseconds(kCkptLatReaderPause));
      }
    });
  }
  // The measured phase starts once every other thread is at work (or one failed).
  while (started.load() < 1 + readers) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  StartPhase(c, c.params.num);
  absl::Status writer_status;
  for (uint64_t i = 0; i < c.params.num && writer_status.ok();) {
    absl::StatusOr<uint64_t> ns =
        TimedPutCommit(c.session, c.Key(kCkptLatLoaded + i), c.values.Next(c.rng));
    if (IsBusy(ns.status())) {
      ++c.result.busy_errors;
      continue;
    }
    writer_status = ns.status();
    if (!ns.ok()) break;
    RecordOp(c, *ns);
    AfterCommit(c);
    ++i;
  }
  stop = true;
  ckpt.join();
  for (std::thread& t : reader_threads) t.join();
  EndPhase(c);
  for (int r = 0; r < readers; ++r) c.result.reader_ops += reader_txns[r];
  for (std::unique_ptr<EngineAdapter>& handle : handles) {
    c.result.counters += handle->Counters();  // the checkpointer's work is on its own handle
  }
  checkpointer.reset();
  reader_sessions.clear();
  for (std::unique_ptr<EngineAdapter>& handle : handles) JKV_RETURN_IF_ERROR(handle->Close());
  JKV_RETURN_IF_ERROR(writer_status);
  JKV_RETURN_IF_ERROR(ckpt_status);
  for (const absl::Status& st : reader_status) JKV_RETURN_IF_ERROR(st);
  return absl::OkStatus();
}


}  // namespace journalkv::bench
