#include "bench/workloads.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bench/harness.h"
#include "bench/random.h"
#include "bench/ycsb.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

// Pairs read per scan operation.
constexpr uint64_t kScanLength = 100;
// writelat keeps at most this many points of its over-time series.
constexpr uint64_t kMaxSeriesPoints = 20000;
// The fixed sizes of the two scenarios named after published experiments.
constexpr uint64_t kSpeedtestInserts = 1000;
constexpr uint64_t kSuiteTransactions = 562;

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
// `sorted`: the keys in ascending order (bulkseq) instead of random order.
absl::Status BulkLoadKeys(Ctx& c, bool sorted) {
  StartPhase(c, c.params.num);
  uint64_t t0 = NowNs();
  JKV_RETURN_IF_ERROR(c.session.BeginWrite());
  for (uint64_t i = 0; i < c.params.num; ++i) {
    const std::string key = sorted ? absl::StrFormat("%016x", i) : c.Key(i);
    absl::Status s = c.session.Put(key, c.values.Next(c.rng));
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

absl::Status BulkLoad(Ctx& c) { return BulkLoadKeys(c, /*sorted=*/false); }
absl::Status BulkSeq(Ctx& c) { return BulkLoadKeys(c, /*sorted=*/true); }

// The read workloads' database at rest (--settle=checkpoint): the load's log copied into the
// database file and emptied, outside the measured phase (bench/README.md, "The read phase").
absl::Status SettleAfterLoad(Ctx& c) {
  if (!c.params.settle) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(c.session.Settle());
  c.result.settled = true;
  return absl::OkStatus();
}

// readrandom: N point reads of loaded keys, each its own read transaction.
absl::Status ReadRandom(Ctx& c) {
  JKV_RETURN_IF_ERROR(Load(c, c.params.num));
  JKV_RETURN_IF_ERROR(SettleAfterLoad(c));
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
  JKV_RETURN_IF_ERROR(SettleAfterLoad(c));
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

// A trace:<stem> workload: the trace replayed from an empty database, every recorded thread on
// a thread of its own (bench/trace_replay.h); an op is one record's call.
absl::Status ReplayTraceWorkload(Ctx& c, const LoadedTrace& t) {
  StartPhase(c, t.trace->records.size());
  ReplayOptions options;
  options.recorded_pace = c.params.pace_recorded;
  JKV_ASSIGN_OR_RETURN(ReplayStats s, ReplayTrace(c.engine, *t.trace, options));
  EndPhase(c);
  c.result.ops = s.total_ops;
  c.result.commits = s.commits;
  c.result.busy_errors = s.busy_errors;
  c.result.items = s.items;
  c.result.latency = std::move(s.latency);
  c.result.trace_ops = s.ops;
  c.result.trace_threads = t.trace->threads;
  c.result.pace = c.params.pace_recorded ? "recorded" : "fast";
  c.progress(c.total, c.total);
  return absl::OkStatus();
}

std::vector<WorkloadEntry> BuiltinEntries() {
  return {
      {{"smalltxn", "N single-put commits of new keys into an empty table"}, SmallTxn},
      {{"bulkload", "N puts of new keys in one transaction (op = one put)"}, BulkLoad},
      {{"bulkseq", "bulkload with the keys in ascending order (a sorted load)"}, BulkSeq},
      {{"readrandom", "N point reads of N loaded keys, each its own read transaction"}, ReadRandom},
      {{"scan", "N/10 scans of 100 pairs from a random loaded key, each its own read txn"}, Scan},
      {{"overwrite", "N single-put commits replacing random keys of N loaded keys"}, Overwrite},
      {{"contention",
        "--writers writers and --threads readers (10 point reads per read txn) on N loaded "
        "keys for --seconds, threads in one process (--processes: each its own process and "
        "connection); a lone writer makes single-put commits of random keys, each of several "
        "writers read-modify-write transactions (read a key, write it anew) on the first 256 "
        "keys, or with --writer-keys=own single-put commits of keys only it writes; "
        "iterations counted per worker, busy timeouts counted and retried; percentiles "
        "are the writers'; the table shows readers and writers apart"},
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
      {{"bursty",
        "N single-put commits of new keys in bursts of --burst, an idle gap drawn from --gap "
        "between bursts (the same gaps for every engine); seconds and ops/s count the write "
        "time only (the sum of the commits' latencies: write_ms_total), idle_ms_total and "
        "bursts beside them",
        /*by_default=*/false},
       Bursty},
  };
}

const std::vector<WorkloadEntry>& Entries() {
  static const auto* const entries = [] {
    auto* v = new std::vector<WorkloadEntry>(BuiltinEntries());
    for (WorkloadEntry& e : YcsbEntries()) v->push_back(std::move(e));
    for (WorkloadEntry& e : MultiDbEntries()) v->push_back(std::move(e));
    return v;
  }();
  return *entries;
}

const WorkloadEntry* FindEntry(absl::string_view name) {
  for (const WorkloadEntry& e : Entries()) {
    if (e.info.name == name) return &e;
  }
  return nullptr;
}

// The expected size of the data, for engines that reserve space up front.
uint64_t ExpectedBytes(const CaseSpec& spec, const WorkloadParams& p) {
  if (IsTraceWorkload(spec.workload)) {
    uint64_t bytes = 0;
    for (const LoadedTrace& t : p.traces) {
      if (t.workload != spec.workload) continue;
      for (const TraceRecord& r : t.trace->records) {
        if (r.kind == TraceKind::kPut) bytes += r.key.size() + r.value_size + 64;
      }
    }
    return std::max<uint64_t>(bytes, 10000 * (16 + 100 + 64));
  }
  const uint64_t pairs = IsYcsbWorkload(spec.workload) ? p.records + p.operations
                         : AcrossDatabases(spec.workload) > 0 ? p.num * p.puts_per_db
                                                              : p.num;
  return std::max<uint64_t>(pairs, 10000) * (16 + p.value_size + 64);
}

absl::Status RunWith(const WorkloadEntry& entry, EngineAdapter& engine, CaseResult& result,
                     const WorkloadParams& params, const ProgressFn& progress,
                     const OpenAnotherFn& open_another, const std::string& dir) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, engine.NewSession());
  Ctx ctx(engine, *session, params, result, progress, open_another);
  ctx.dir = dir;
  absl::StatusOr<std::string> device_stat = vfs::DeviceStatPath(dir);
  if (device_stat.ok()) ctx.device_stat = *device_stat;
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

bool IsTraceWorkload(absl::string_view name) { return absl::StartsWith(name, "trace:"); }

absl::StatusOr<CaseResult> RunCase(const EngineInfo& engine, const CaseSpec& spec,
                                   const WorkloadParams& params, const std::string& dir,
                                   const ProgressFn& progress) {
  WorkloadEntry trace_entry;  // a trace:<stem> workload's, made here (bench/trace_replay.h)
  const WorkloadEntry* entry = FindEntry(spec.workload);
  if (IsTraceWorkload(spec.workload)) {
    for (const LoadedTrace& t : params.traces) {
      if (t.workload != spec.workload) continue;
      trace_entry.info.name = t.workload;
      trace_entry.run = [&t](Ctx& c) { return ReplayTraceWorkload(c, t); };
      entry = &trace_entry;
    }
  }
  if (entry == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown workload ", spec.workload));
  }
  // A YCSB record is 1000 bytes unless --value-size said otherwise (which set both sizes).
  WorkloadParams effective = params;
  if (IsYcsbWorkload(spec.workload)) effective.value_size = params.ycsb_value_size;
  CaseConfig config;
  config.mode = spec.mode;
  config.sync = spec.sync;
  config.checkpoint = spec.checkpoint == "none" ? "default" : spec.checkpoint;
  config.cache_bytes = uint64_t{effective.cache_mib} << 20;
  config.mmap_bytes = effective.mmap_mib << 20;
  config.expected_bytes = ExpectedBytes(spec, effective);
  // A multidb workload opens its databases across (engine_adapter.h, open_across).
  const int across = AcrossDatabases(spec.workload);
  if (across > 0 && !engine.RunsAcross(spec.mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        spec.workload, ": ", engine.name, " has no transaction across databases in mode ",
        spec.mode));
  }
  const auto open = [&]() -> absl::StatusOr<std::unique_ptr<EngineAdapter>> {
    if (across > 0) return engine.open_across(dir, config, across);
    return engine.open(dir, config);
  };
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> adapter, open());
  CaseResult result;
  result.spec = spec;
  result.params = effective;
  const OpenAnotherFn open_another = open;
  absl::Status s = RunWith(*entry, *adapter, result, effective, progress, open_another, dir);
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
