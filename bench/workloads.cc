#include "bench/workloads.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace journalkv::bench {
namespace {

// Keys per write transaction when loading a table before a measured phase.
constexpr uint64_t kLoadBatch = 5000;
// Pairs read per scan operation, point reads per contention reader iteration.
constexpr uint64_t kScanLength = 100;
constexpr int kReadsPerReaderTxn = 10;
// Log-size samples outside writelat: one every this many commits (and one at the end).
constexpr uint64_t kLogSampleEvery = 64;
// writelat keeps at most this many points of its over-time series.
constexpr uint64_t kMaxSeriesPoints = 20000;
// The fixed sizes of the two scenarios named after published experiments.
constexpr uint64_t kSpeedtestInserts = 1000;
constexpr uint64_t kSuiteTransactions = 562;

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// splitmix64's finalizer: a bijection on 64-bit integers.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// splitmix64: small, fast and identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ULL); }
  uint64_t Uniform(uint64_t n) { return n == 0 ? 0 : Next() % n; }

 private:
  uint64_t state_;
};

// Values are slices of one seeded buffer of printable bytes (as db_bench does), so making a
// value costs nothing measurable and every engine stores the same bytes.
class ValueSource {
 public:
  ValueSource(uint64_t seed, uint32_t size) : size_(size) {
    Rng rng(seed ^ 0x76616c7565ULL);
    buffer_.resize(std::max<size_t>(size_t{1} << 20, size_t{size} * 4));
    for (char& c : buffer_) c = static_cast<char>('!' + rng.Uniform(94));
  }
  absl::string_view Next(Rng& rng) const {
    const size_t offset = rng.Uniform(buffer_.size() - size_ + 1);
    return absl::string_view(buffer_).substr(offset, size_);
  }

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
};

void StartPhase(Ctx& c, uint64_t total) {
  c.total = total;
  c.done = 0;
  c.excluded_ns = 0;
  c.counters_start = c.engine.Counters();
  c.io_start = SyscallSnapshot();
  c.phase_start_ns = NowNs();
}

void SampleLog(Ctx& c) {
  const uint64_t t0 = NowNs();
  c.result.log_max_bytes = std::max(c.result.log_max_bytes, c.engine.LogBytes());
  c.excluded_ns += NowNs() - t0;
}

void EndPhase(Ctx& c) {
  const uint64_t end = NowNs();
  c.result.io = SyscallSnapshot() - c.io_start;
  c.result.counters = c.engine.Counters().Since(c.counters_start);
  c.result.seconds = static_cast<double>(end - c.phase_start_ns - c.excluded_ns) / 1e9;
  SampleLog(c);
}

void RecordOp(Ctx& c, uint64_t ns) {
  c.result.latency.Record(ns);
  ++c.result.ops;
  if ((++c.done & 15) == 0 || c.done == c.total) c.progress(c.done, c.total);
}

void AfterCommit(Ctx& c) {
  if (++c.result.commits % kLogSampleEvery == 0) SampleLog(c);
}

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

absl::StatusOr<uint64_t> TimedPutCommit(Session& s, absl::string_view key,
                                        absl::string_view value) {
  return TimedWrite(s, [&](Session& t) { return t.Put(key, value); });
}

// Loads keys [0, n) in transactions of kLoadBatch, before the measured phase.
absl::Status Load(Ctx& c, uint64_t n) {
  Rng rng(c.params.seed ^ 0x6c6f6164ULL);
  for (uint64_t i = 0; i < n; i += kLoadBatch) {
    JKV_RETURN_IF_ERROR(TimedWrite(c.session, [&](Session& s) {
                          for (uint64_t j = i; j < std::min(n, i + kLoadBatch); ++j) {
                            JKV_RETURN_IF_ERROR(s.Put(c.Key(j), c.values.Next(rng)));
                          }
                          return absl::OkStatus();
                        }).status());
  }
  return absl::OkStatus();
}

// smalltxn: N single-put commits of new keys into an empty table.
absl::Status SmallTxn(Ctx& c) {
  StartPhase(c, c.params.num);
  for (uint64_t i = 0; i < c.params.num; ++i) {
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedPutCommit(c.session, c.Key(i), c.values.Next(c.rng)));
    RecordOp(c, ns);
    AfterCommit(c);
  }
  EndPhase(c);
  return absl::OkStatus();
}

// bulkload: N puts of new keys in one transaction; the commit counts in the last put's time.
absl::Status BulkLoad(Ctx& c) {
  StartPhase(c, c.params.num);
  uint64_t t0 = NowNs();
  JKV_RETURN_IF_ERROR(c.session.BeginWrite());
  for (uint64_t i = 0; i < c.params.num; ++i) {
    absl::Status s = c.session.Put(c.Key(i), c.values.Next(c.rng));
    if (s.ok() && i + 1 == c.params.num) s = c.session.Commit();
    if (!s.ok()) {
      c.session.Rollback().IgnoreError();  // `s` is the error to report
      return s;
    }
    const uint64_t t1 = NowNs();
    RecordOp(c, t1 - t0);
    t0 = t1;
  }
  if (c.params.num == 0) JKV_RETURN_IF_ERROR(c.session.Commit());
  ++c.result.commits;
  EndPhase(c);
  return absl::OkStatus();
}

// readrandom: N point reads of loaded keys, each its own read transaction.
absl::Status ReadRandom(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, c.params.num));
  StartPhase(c, c.params.num);
  for (uint64_t i = 0; i < c.params.num; ++i) {
    const std::string key = c.RandomExistingKey(c.params.num);
    const uint64_t t0 = NowNs();
    JKV_ASSIGN_OR_RETURN(std::optional<std::string> value, c.session.Get(key));
    RecordOp(c, NowNs() - t0);
    if (!value.has_value()) return absl::InternalError(absl::StrCat("key ", key, " missing"));
  }
  EndPhase(c);
  return absl::OkStatus();
}

// scan: N/10 scans of 100 pairs from a random loaded key, each its own read transaction.
absl::Status Scan(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, c.params.num));
  const uint64_t scans = std::max<uint64_t>(1, c.params.num / 10);
  StartPhase(c, scans);
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < scans; ++i) {
    const std::string from = c.RandomExistingKey(c.params.num);
    const uint64_t t0 = NowNs();
    JKV_ASSIGN_OR_RETURN(uint64_t n, c.session.Scan(from, kScanLength,
                                                    [&](absl::string_view k, absl::string_view v) {
                                                      bytes += k.size() + v.size();
                                                    }));
    RecordOp(c, NowNs() - t0);
    c.result.items += n;
  }
  EndPhase(c);
  if (bytes == 0 && c.params.num > 0) return absl::InternalError("scans returned nothing");
  return absl::OkStatus();
}

// overwrite: N single-put commits replacing random loaded keys with new values.
absl::Status Overwrite(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, c.params.num));
  StartPhase(c, c.params.num);
  for (uint64_t i = 0; i < c.params.num; ++i) {
    const std::string key = c.RandomExistingKey(c.params.num);
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedPutCommit(c.session, key, c.values.Next(c.rng)));
    RecordOp(c, ns);
    AfterCommit(c);
  }
  EndPhase(c);
  return absl::OkStatus();
}

// writelat: like smalltxn, but the log size is sampled after every commit and the slowest
// commit of each window is kept as a point of the over-time series.
absl::Status WriteLat(Ctx& c) {
  const uint64_t n = c.params.num;
  const uint64_t window = std::max<uint64_t>(1, (n + kMaxSeriesPoints - 1) / kMaxSeriesPoints);
  StartPhase(c, n);
  uint64_t window_max = 0;
  for (uint64_t i = 0; i < n; ++i) {
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedPutCommit(c.session, c.Key(i), c.values.Next(c.rng)));
    RecordOp(c, ns);
    ++c.result.commits;
    window_max = std::max(window_max, ns);
    const uint64_t t0 = NowNs();
    const uint64_t log_bytes = c.engine.LogBytes();
    c.result.log_max_bytes = std::max(c.result.log_max_bytes, log_bytes);
    if ((i + 1) % window == 0 || i + 1 == n) {
      c.result.series.push_back({i + 1, window_max / 1e3, log_bytes});
      window_max = 0;
    }
    c.excluded_ns += NowNs() - t0;
  }
  EndPhase(c);
  return absl::OkStatus();
}

// speedtest1-1000: 1000 single-row inserts, each its own transaction, with rows shaped like
// speedtest1's (a random integer, the row number, the integer's English name).
absl::Status Speedtest1(Ctx& c) {
  StartPhase(c, kSpeedtestInserts);
  for (uint64_t i = 0; i < kSpeedtestInserts; ++i) {
    const uint64_t x = c.rng.Uniform(1000000000);
    const std::string key = absl::StrFormat("%010d%06d", x, i);
    const std::string value = absl::StrCat(x, "|", i, "|", NumberName(x));
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedPutCommit(c.session, key, value));
    RecordOp(c, ns);
    AfterCommit(c);
  }
  EndPhase(c);
  return absl::OkStatus();
}

// One ~100-byte row of the test-results recorder.
std::string ResultRow(Rng& rng, uint64_t run, uint64_t test) {
  static constexpr const char* kStatus[] = {"pass", "pass", "pass", "pass", "fail", "skip"};
  std::string row =
      absl::StrFormat("{\"run\":%d,\"test\":\"test_case_%03d\",\"status\":\"%s\",\"ms\":%d}", run,
                      test, kStatus[rng.Uniform(6)], rng.Uniform(5000));
  row.resize(100, ' ');
  return row;
}

// suite-562: 562 transactions of a test-results recorder; each writes a summary row run/<n>
// and 5 to 20 rows run/<n>/test/<i> of ~100 bytes.
absl::Status Suite562(Ctx& c) {
  StartPhase(c, kSuiteTransactions);
  for (uint64_t run = 0; run < kSuiteTransactions; ++run) {
    const uint64_t tests = 5 + c.rng.Uniform(16);
    std::vector<std::pair<std::string, std::string>> rows;
    rows.emplace_back(absl::StrFormat("run/%04d", run), ResultRow(c.rng, run, tests));
    for (uint64_t t = 0; t < tests; ++t) {
      rows.emplace_back(absl::StrFormat("run/%04d/test/%03d", run, t), ResultRow(c.rng, run, t));
    }
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedWrite(c.session, [&](Session& s) {
                           for (const auto& [k, v] : rows) JKV_RETURN_IF_ERROR(s.Put(k, v));
                           return absl::OkStatus();
                         }));
    RecordOp(c, ns);
    AfterCommit(c);
  }
  EndPhase(c);
  return absl::OkStatus();
}

absl::Status Contention(Ctx& c);
absl::Status CkptLat(Ctx& c);

struct WorkloadEntry {
  WorkloadInfo info;
  absl::Status (*run)(Ctx&);
};

const std::vector<WorkloadEntry>& Entries() {
  static const auto* const entries = new std::vector<WorkloadEntry>{
      {{"smalltxn", "N single-put commits of new keys into an empty table"}, SmallTxn},
      {{"bulkload", "N puts of new keys in one transaction (op = one put)"}, BulkLoad},
      {{"readrandom", "N point reads of N loaded keys, each its own read transaction"}, ReadRandom},
      {{"scan", "N/10 scans of 100 pairs from a random loaded key, each its own read txn"}, Scan},
      {{"overwrite", "N single-put commits replacing random keys of N loaded keys"}, Overwrite},
      {{"contention",
        "--writers writers and --threads readers (10 point reads per read txn) on N loaded "
        "keys for --seconds, threads in one process (--processes: each its own process and "
        "connection); a lone writer makes single-put commits of random keys, each of several "
        "writers read-modify-write transactions (read a key, write it anew) on the first 256 "
        "keys; iterations counted per worker, busy timeouts counted and retried; percentiles "
        "are the writers'"},
       Contention},
      {{"writelat",
        "N single-put commits; the log size is sampled after each; writes "
        "writelat_<engine>_<mode>_<sync>.csv (latency and log size over time)"},
       WriteLat},
      {{"ckptlat",
        "N single-put commits while another connection checkpoints every 5 ms (restart and "
        "full in turn) and --threads readers each hold a read txn of 10 point reads for 10 ms, "
        "then pause 1 ms; percentiles are the commits'; checkpoint_calls, "
        "checkpoint_incomplete"},
       CkptLat},
      {{"speedtest1-1000",
        "1000 single-row inserts, each its own transaction, rows as in SQLite's speedtest1 "
        "(integer, row number, the integer's English name); ignores --num"},
       Speedtest1},
      {{"suite-562",
        "562 transactions of a test-results recorder (a summary row run/<n> and 5-20 rows "
        "run/<n>/test/<i> of 100 bytes each), as in the note where WAL cut a run from 53 s to "
        "8 s; ignores --num"},
       Suite562},
  };
  return *entries;
}

}  // namespace

namespace {

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

bool IsBusy(const absl::Status& s) {
  return absl::IsResourceExhausted(s) && absl::StartsWith(s.message(), "busy");
}

// Several writers share the first kHotKeys loaded keys (all of them when --num is smaller), so
// that their transactions read and write the same few pages.
constexpr uint64_t kHotKeys = 256;

int Writers(const WorkloadParams& p) { return std::max(0, p.writers); }

// A multi-writer transaction: reads a random hot key and writes it back with a new value.
absl::StatusOr<uint64_t> TimedReadModifyWrite(const Ctx& ctx, Session& s, Rng& rng) {
  const std::string key = ctx.Key(rng.Uniform(std::min(ctx.params.num, kHotKeys)));
  return TimedWrite(s, [&](Session& t) -> absl::Status {
    JKV_ASSIGN_OR_RETURN(std::optional<std::string> old, t.Get(key));
    if (!old.has_value()) return absl::InternalError("contention: loaded key missing");
    return t.Put(key, ctx.values.Next(rng));
  });
}

// Commits until told to stop: a lone writer makes single-put commits overwriting random loaded
// keys (contention as it was before --writers), each of several writers read-modify-write
// transactions on the hot keys. Writer `index` counts from 0.
void WriterLoop(ContentionShared& sh, Session& s, int index, WorkerStats& w) {
  const Ctx& c = sh.ctx;
  Rng rng(c.params.seed ^ (0x777269746572ULL + static_cast<uint64_t>(index)));
  while (!sh.stop.load(std::memory_order_relaxed)) {
    absl::StatusOr<uint64_t> ns;
    if (Writers(c.params) == 1) {
      const std::string key = c.Key(rng.Uniform(c.params.num));
      ns = TimedPutCommit(s, key, c.values.Next(rng));
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

absl::Status Contention(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, std::max<uint64_t>(1, c.params.num)));
  const int workers = Writers(c.params) + std::max(0, c.params.threads);
  if (c.params.processes) return ContentionInProcesses(c, workers);
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < workers; ++i) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, c.engine.NewSession());
    sessions.push_back(std::move(s));
  }
  std::vector<WorkerStats> stats(workers);
  ContentionShared sh{c};
  StartPhase(c, static_cast<uint64_t>(c.params.seconds * 1000));
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] { WorkerLoop(sh, *sessions[i], i, stats[i]); });
  }
  WaitOut(c, sh);
  for (std::thread& t : threads) t.join();
  EndPhase(c);
  for (const WorkerStats& w : stats) JKV_RETURN_IF_ERROR(w.status);
  Collect(c, stats);
  return absl::OkStatus();
}

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

const WorkloadEntry* FindEntry(absl::string_view name) {
  for (const WorkloadEntry& e : Entries()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

// The expected size of the data, for engines that reserve space up front.
uint64_t ExpectedBytes(const WorkloadParams& p) {
  return std::max<uint64_t>(p.num, 10000) * (16 + p.value_size + 64);
}

absl::Status RunWith(const WorkloadEntry& entry, EngineAdapter& engine, CaseResult& result,
                     const WorkloadParams& params, const ProgressFn& progress,
                     const OpenAnotherFn& open_another) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, engine.NewSession());
  Ctx ctx(engine, *session, params, result, progress, open_another);
  absl::Status s = entry.run(ctx);
  if (!s.ok()) session->Rollback().IgnoreError();  // `s` is the error to report
  return s;
}

}  // namespace

const std::vector<WorkloadInfo>& Workloads() {
  static const auto* const infos = [] {
    auto* v = new std::vector<WorkloadInfo>;
    for (const WorkloadEntry& e : Entries()) v->push_back(e.info);
    return v;
  }();
  return *infos;
}

bool IsWorkload(absl::string_view name) { return FindEntry(name) != nullptr; }

absl::StatusOr<CaseResult> RunCase(const EngineInfo& engine, const CaseSpec& spec,
                                   const WorkloadParams& params, const std::string& dir,
                                   const ProgressFn& progress) {
  const WorkloadEntry* entry = FindEntry(spec.workload);
  if (entry == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown workload ", spec.workload));
  }
  CaseConfig config;
  config.mode = spec.mode;
  config.sync = spec.sync;
  config.checkpoint = spec.checkpoint == "none" ? "default" : spec.checkpoint;
  config.cache_bytes = uint64_t{params.cache_mib} << 20;
  config.expected_bytes = ExpectedBytes(params);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> adapter, engine.open(dir, config));
  CaseResult result;
  result.spec = spec;
  result.params = params;
  const OpenAnotherFn open_another = [&] { return engine.open(dir, config); };
  absl::Status s = RunWith(*entry, *adapter, result, params, progress, open_another);
  absl::Status closed = adapter->Close();
  JKV_RETURN_IF_ERROR(s);
  JKV_RETURN_IF_ERROR(closed);
  return result;
}

std::string BenchKey(uint64_t seed, uint64_t i) {
  return absl::StrFormat("%016x", Mix(i + Mix(seed)));
}

std::string NumberName(uint64_t n) {
  static constexpr const char* kOnes[] = {
      "zero",     "one",     "two",     "three",     "four",     "five",    "six",
      "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",  "thirteen",
      "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
  static constexpr const char* kTens[] = {"",      "ten",   "twenty",  "thirty", "forty",
                                          "fifty", "sixty", "seventy", "eighty", "ninety"};
  static constexpr std::pair<uint64_t, const char*> kScales[] = {{1000000000000ULL, "trillion"},
                                                                 {1000000000, "billion"},
                                                                 {1000000, "million"},
                                                                 {1000, "thousand"},
                                                                 {100, "hundred"}};
  for (const auto& [scale, word] : kScales) {
    if (n >= scale) {
      std::string s = absl::StrCat(NumberName(n / scale), " ", word);
      if (n % scale != 0) absl::StrAppend(&s, " ", NumberName(n % scale));
      return s;
    }
  }
  if (n < 20) return kOnes[n];
  std::string s = kTens[n / 10];
  if (n % 10 != 0) absl::StrAppend(&s, " ", kOnes[n % 10]);
  return s;
}

}  // namespace journalkv::bench
