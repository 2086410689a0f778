#include "bench/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/counters.h"
#include "bench/ycsb.h"

namespace journalkv::bench {
namespace {

// A field's value: text (quoted in JSON), a number, or a list of counts (a JSON array; in CSV
// the counts joined by ';').
struct Value {
  bool is_text = false;
  std::string text;
  double number = 0;
  bool is_list = false;
  std::vector<uint64_t> list;
};

struct Field {
  std::string name;
  std::function<Value(const CaseResult&)> get;
};

Value Text(std::string s) { return Value{true, std::move(s), 0}; }
Value Num(double d) { return Value{false, "", d}; }
Value List(std::vector<uint64_t> counts) { return Value{false, "", 0, true, std::move(counts)}; }

uint64_t MinOf(const std::vector<uint64_t>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
uint64_t MaxOf(const std::vector<uint64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

std::string WriterKeysName(const WorkloadParams& p) {
  return p.writer_keys == WriterKeys::kOwn ? "own" : "hot";
}

// <figure>_min and <figure>_max of a ranged figure: from the rounds, else the value itself.
Value RoundsMin(const CaseResult& r, const RangedFigure& f) {
  auto it = r.rounds.find(f.name);
  if (it == r.rounds.end() || it->second.empty()) return Num(f.get(r));
  return Num(*std::min_element(it->second.begin(), it->second.end()));
}
Value RoundsMax(const CaseResult& r, const RangedFigure& f) {
  auto it = r.rounds.find(f.name);
  if (it == r.rounds.end() || it->second.empty()) return Num(f.get(r));
  return Num(*std::max_element(it->second.begin(), it->second.end()));
}

std::vector<Field>* MakeFields() {
  auto* fields = new std::vector<Field>{
      {"engine", [](const CaseResult& r) { return Text(r.spec.engine); }},
      {"mode", [](const CaseResult& r) { return Text(r.spec.mode); }},
      {"sync", [](const CaseResult& r) { return Text(r.spec.sync); }},
      {"checkpoint", [](const CaseResult& r) { return Text(r.spec.checkpoint); }},
      {"workload", [](const CaseResult& r) { return Text(r.spec.workload); }},
      {"ops", [](const CaseResult& r) { return Num(r.ops); }},
      {"seconds", [](const CaseResult& r) { return Num(r.seconds); }},
      {"ops_per_sec", [](const CaseResult& r) { return Num(r.OpsPerSec()); }},
      {"p50_us", [](const CaseResult& r) { return Num(r.latency.Percentile(0.5) / 1e3); }},
      {"p99_us", [](const CaseResult& r) { return Num(r.latency.Percentile(0.99) / 1e3); }},
      {"p999_us", [](const CaseResult& r) { return Num(r.latency.Percentile(0.999) / 1e3); }},
      {"max_us", [](const CaseResult& r) { return Num(r.latency.max() / 1e3); }},
      {"mean_us", [](const CaseResult& r) { return Num(r.latency.Mean() / 1e3); }},
      {"fsyncs_per_op", [](const CaseResult& r) { return Num(r.FsyncsPerOp()); }},
      {"fsyncs_per_commit", [](const CaseResult& r) { return Num(r.FsyncsPerCommit()); }},
      {"bytes_written_per_op", [](const CaseResult& r) { return Num(r.BytesWrittenPerOp()); }},
      {"log_max_bytes", [](const CaseResult& r) { return Num(r.log_max_bytes); }},
      {"reader_ops", [](const CaseResult& r) { return Num(r.reader_ops); }},
      {"writer_ops", [](const CaseResult& r) { return Num(r.writer_ops); }},
      {"reader_p50_us",
       [](const CaseResult& r) { return Num(r.reader_latency.Percentile(0.5) / 1e3); }},
      {"reader_p99_us",
       [](const CaseResult& r) { return Num(r.reader_latency.Percentile(0.99) / 1e3); }},
      {"reader_max_us", [](const CaseResult& r) { return Num(r.reader_latency.max() / 1e3); }},
      {"busy_errors", [](const CaseResult& r) { return Num(r.busy_errors); }},
      {"commits", [](const CaseResult& r) { return Num(r.commits); }},
      {"items", [](const CaseResult& r) { return Num(r.items); }},
      {"fsync_calls", [](const CaseResult& r) { return Num(r.io.fsync); }},
      {"fdatasync_calls", [](const CaseResult& r) { return Num(r.io.fdatasync); }},
      {"msync_calls", [](const CaseResult& r) { return Num(r.io.msync); }},
      {"write_calls", [](const CaseResult& r) { return Num(r.io.writes); }},
      {"bytes_written", [](const CaseResult& r) { return Num(r.io.bytes_written); }},
      {"num", [](const CaseResult& r) { return Num(r.params.num); }},
      {"value_size", [](const CaseResult& r) { return Num(r.params.value_size); }},
      {"seed", [](const CaseResult& r) { return Num(r.params.seed); }},
      {"threads", [](const CaseResult& r) { return Num(r.params.threads); }},
      {"repeats", [](const CaseResult& r) { return Num(r.repeats); }},
      {"ops_per_sec_min", [](const CaseResult& r) { return Num(r.ops_per_sec_min); }},
      {"ops_per_sec_max", [](const CaseResult& r) { return Num(r.ops_per_sec_max); }},
      {"ops_per_sec_stddev", [](const CaseResult& r) { return Num(r.ops_per_sec_stddev); }},
      {"workers", [](const CaseResult& r) { return Text(r.params.processes ? "processes" : "threads"); }},
      {"writers", [](const CaseResult& r) { return Num(r.params.writers); }},
      {"writer_ops_per_sec", [](const CaseResult& r) { return Num(r.WriterOpsPerSec()); }},
      {"writer_ops_each", [](const CaseResult& r) { return List(r.writer_ops_each); }},
      {"writer_ops_min", [](const CaseResult& r) { return Num(MinOf(r.writer_ops_each)); }},
      {"writer_ops_max", [](const CaseResult& r) { return Num(MaxOf(r.writer_ops_each)); }},
      {"writer_busy_errors", [](const CaseResult& r) { return Num(r.writer_busy_errors); }},
      {"db_writes_per_commit", [](const CaseResult& r) { return Num(r.DbWritesPerCommit()); }},
      {"log_zero_bytes_per_op", [](const CaseResult& r) {
         return Num(r.ops > 0 ? r.counters[base::Counter::kLogZeroBytes] / r.ops : 0);
       }},
      {"checkpoint_calls", [](const CaseResult& r) { return Num(r.checkpoint_calls); }},
      {"checkpoint_incomplete", [](const CaseResult& r) { return Num(r.checkpoint_incomplete); }},
      {"commits_per_sec", [](const CaseResult& r) { return Num(r.CommitsPerSec()); }},
      {"floor_per_s", [](const CaseResult& r) { return Num(r.floor_per_s); }},
      {"floor_ratio", [](const CaseResult& r) { return Num(r.FloorRatio()); }},
      {"reader_ops_per_sec", [](const CaseResult& r) { return Num(r.ReaderOpsPerSec()); }},
      {"writer_keys", [](const CaseResult& r) { return Text(WriterKeysName(r.params)); }},
      {"commit", [](const CaseResult& r) { return Text(r.params.commit_async ? "async" : "sync"); }},
      {"handles", [](const CaseResult& r) { return Text(r.params.own_handles ? "own" : "shared"); }},
      {"settle", [](const CaseResult& r) { return Text(r.settled ? "checkpoint" : "none"); }},
      {"commit_window", [](const CaseResult& r) {
         return Num(r.params.commit_async ? r.params.commit_window : 0);
       }},
      {"records", [](const CaseResult& r) { return Num(r.params.records); }},
      {"operations", [](const CaseResult& r) { return Num(r.params.operations); }},
      {"fs", [](const CaseResult& r) { return Text(r.spec.fs); }},
      {"device_bytes_per_op", [](const CaseResult& r) { return Num(r.DeviceBytesPerOp()); }},
      {"device_bytes_per_commit",
       [](const CaseResult& r) { return Num(r.DeviceBytesPerCommit()); }},
      {"databases", [](const CaseResult& r) { return Num(r.databases); }},
      {"puts_per_db", [](const CaseResult& r) {
         return Num(r.databases > 0 ? r.params.puts_per_db : 0);
       }},
      // bursty (bursty.cc); 0 and "" elsewhere.
      {"burst", [](const CaseResult& r) { return Num(r.bursts > 0 ? r.params.burst : 0); }},
      {"gap", [](const CaseResult& r) {
         return Text(r.bursts > 0 ? r.params.gap.Name() : "");
       }},
      {"bursts", [](const CaseResult& r) { return Num(r.bursts); }},
      {"write_ms_total", [](const CaseResult& r) { return Num(r.write_ns / 1e6); }},
      {"idle_ms_total", [](const CaseResult& r) { return Num(r.idle_ns / 1e6); }},
  };
  // Figures as data: each ranged figure's lowest and highest round (ops_per_sec's are above).
  for (const RangedFigure& f : RangedFigures()) {
    if (f.name == "ops_per_sec") continue;
    fields->push_back({f.name + "_min", [&f](const CaseResult& r) { return RoundsMin(r, f); }});
    fields->push_back({f.name + "_max", [&f](const CaseResult& r) { return RoundsMax(r, f); }});
  }
  fields->push_back({"spread", [](const CaseResult& r) { return Text(SpreadFigures(r)); }});
  // The engine's counters over the phase (EngineCounters): one column per ticker and mark of
  // the counter table, named by its row (time rows in milliseconds), unless the harness
  // measures the same name itself (commits: the workload's count).
  std::set<std::string> taken;
  for (const Field& f : *fields) taken.insert(f.name);
  for (const base::CounterInfo& row : base::kCounterTable) {
    if (row.kind == base::CounterKind::kGauge || taken.count(std::string(row.name)) > 0) continue;
    const base::Counter id = row.id;
    fields->push_back({std::string(row.name), [id](const CaseResult& r) {
                         return Num(r.counters[id]);
                       }});
  }
  // Each YCSB operation kind's count and percentiles (0 where the case has none).
  for (const std::string& op : YcsbOps()) {
    auto histogram = [op](const CaseResult& r) -> const Histogram* {
      auto it = r.op_latency.find(op);
      return it == r.op_latency.end() ? nullptr : &it->second;
    };
    fields->push_back({absl::StrCat(op, "_ops"), [histogram](const CaseResult& r) {
                         const Histogram* h = histogram(r);
                         return Num(h == nullptr ? 0 : h->count());
                       }});
    for (const auto& [suffix, q] : {std::pair{"_p50_us", 0.5}, std::pair{"_p99_us", 0.99}}) {
      fields->push_back({absl::StrCat(op, suffix), [histogram, q](const CaseResult& r) {
                           const Histogram* h = histogram(r);
                           return Num(h == nullptr ? 0 : h->Percentile(q) / 1e3);
                         }});
    }
  }
  // Trace replays (trace:<stem>): the pace, the recorded threads, each record kind's count.
  fields->push_back({"pace", [](const CaseResult& r) { return Text(r.pace); }});
  fields->push_back({"trace_threads", [](const CaseResult& r) { return Num(r.trace_threads); }});
  for (int k = 0; k < kNumTraceKinds; ++k) {
    fields->push_back({absl::StrCat("trace_", TraceKindName(static_cast<TraceKind>(k + 1))),
                       [k](const CaseResult& r) { return Num(r.trace_ops[k]); }});
  }
  return fields;
}

const std::vector<Field>& Fields() {
  static const auto* const fields = MakeFields();
  return *fields;
}

// Integers exactly (up to 2^53), everything else with 6 significant digits.
std::string FormatNumber(double d) {
  if (!std::isfinite(d)) return "0";
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
    return absl::StrFormat("%.0f", d);
  }
  return absl::StrFormat("%.6g", d);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The field as a JSON value.
std::string JsonValue(const Value& v) {
  if (v.is_text) return JsonString(v.text);
  if (v.is_list) return absl::StrCat("[", absl::StrJoin(v.list, ","), "]");
  return FormatNumber(v.number);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

// 950us, 1.25ms, 2.10s
std::string HumanMicros(double us) {
  if (us < 1000) return absl::StrFormat("%.0fus", us);
  if (us < 1e6) return absl::StrFormat("%.2fms", us / 1e3);
  return absl::StrFormat("%.2fs", us / 1e6);
}

// 950, 12.3k, 4.56M
std::string HumanCount(double n) {
  if (n < 10000) return absl::StrFormat("%.0f", n);
  if (n < 1e6) return absl::StrFormat("%.1fk", n / 1e3);
  return absl::StrFormat("%.2fM", n / 1e6);
}

std::string HumanBytes(double b) {
  if (b < 10000) return absl::StrFormat("%.0f", b);
  if (b < 1e7) return absl::StrFormat("%.1fK", b / 1024);
  return absl::StrFormat("%.1fM", b / (1024 * 1024));
}

std::string CaseLabel(const CaseSpec& s) {
  std::string label = absl::StrCat(s.engine, "/", s.mode, "/", s.sync);
  if (s.checkpoint != "none") absl::StrAppend(&label, "/", s.checkpoint);
  return label;
}

// "1.23x" of the flush floor, "-" where there is none (FloorRatio).
std::string FloorColumn(const CaseResult& r) {
  const double ratio = r.FloorRatio();
  return ratio > 0 ? absl::StrFormat("%.2fx", ratio) : "-";
}

// contention's readers and writers apart: the row's ops/s and fsync/op mix them.
std::string ContentionDetail(const CaseResult& r) {
  const std::string readers =
      absl::StrFormat("readers=%d (%s/s)", r.reader_ops, HumanCount(r.ReaderOpsPerSec()));
  const std::string per_commit =
      absl::StrFormat("%s/s, %.2f fsync/commit", HumanCount(r.WriterOpsPerSec()),
                      r.FsyncsPerCommit());
  const std::string keys =
      std::string(r.params.writer_keys == WriterKeys::kOwn ? " keys=own" : "") +
      (r.params.commit_async ? absl::StrCat(" commit=async/", r.params.commit_window) : "") +
      (r.params.own_handles && !r.params.processes ? " handles=own" : "");
  const char* processes = r.params.processes ? " (processes)" : "";
  if (r.writer_ops_each.size() > 1) {
    return absl::StrFormat("  %s writers=%d commits=%d (%s) %s%s busy=%d (writers' %d)%s",
                           readers, r.writer_ops_each.size(), r.writer_ops,
                           absl::StrJoin(r.writer_ops_each, "/"), per_commit, keys,
                           r.busy_errors, r.writer_busy_errors, processes);
  }
  return absl::StrFormat("  %s writer=%d (%s)%s busy=%d%s", readers, r.writer_ops, per_commit,
                         keys, r.busy_errors, processes);
}

// YCSB's operation kinds apart: "read 12us/45us update 1.20ms/3.40ms" (p50/p99).
std::string OpDetail(const CaseResult& r) {
  std::string out;
  for (const std::string& op : YcsbOps()) {
    auto it = r.op_latency.find(op);
    if (it == r.op_latency.end() || it->second.count() == 0) continue;
    absl::StrAppend(&out, " ", op, " ", HumanMicros(it->second.Percentile(0.5) / 1e3), "/",
                    HumanMicros(it->second.Percentile(0.99) / 1e3));
  }
  return out.empty() ? out : absl::StrCat("  p50/p99:", out);
}

// Fewer operations than this and a p99.9 is one of the few slowest, not a percentile.
constexpr uint64_t kP999MinOps = 1000;

// p99.9, marked `*` when the case had too few operations for one (FormatTable's footnote).
std::string P999Column(const CaseResult& r) {
  std::string p = HumanMicros(r.latency.Percentile(0.999) / 1e3);
  if (r.latency.count() < kP999MinOps) p += "*";
  return p;
}

std::string TableRow(const CaseResult& r) {
  const CaseSpec& s = r.spec;
  std::string row = absl::StrFormat(
      "%-16s %-10s %-11s %-6s %-10s %8d %9s %9s %9s %9s %9s %8.2f %8s %8s %7s", s.workload,
      s.engine, s.mode, s.sync, s.checkpoint, r.ops, HumanCount(r.OpsPerSec()),
      HumanMicros(r.latency.Percentile(0.5) / 1e3), HumanMicros(r.latency.Percentile(0.99) / 1e3),
      P999Column(r), HumanMicros(r.latency.max() / 1e3), r.FsyncsPerOp(),
      HumanBytes(r.BytesWrittenPerOp()), HumanBytes(r.log_max_bytes), FloorColumn(r));
  if (!s.fs.empty()) absl::StrAppend(&row, "  on ", s.fs);
  if (r.device_bytes >= 0) {
    absl::StrAppend(&row, "  device ", HumanBytes(r.DeviceBytesPerOp()), "/op");
  }
  if (s.workload == "contention") absl::StrAppend(&row, ContentionDetail(r));
  if (r.databases > 0) {
    absl::StrAppend(&row, absl::StrFormat("  across %d dbs, %d puts each", r.databases,
                                          r.params.puts_per_db));
  }
  absl::StrAppend(&row, OpDetail(r));
  if (r.bursts > 0) {
    absl::StrAppend(&row, absl::StrFormat("  %d bursts of %d, gap %s: write %.1f ms, idle %.0f ms",
                                          r.bursts, r.params.burst, r.params.gap.Name(),
                                          r.write_ns / 1e6, r.idle_ns / 1e6));
  }
  if (r.repeats > 1) {
    absl::StrAppend(&row, absl::StrFormat("  median of %d: %s..%s ops/s, sd %s", r.repeats,
                                          HumanCount(r.ops_per_sec_min),
                                          HumanCount(r.ops_per_sec_max),
                                          HumanCount(r.ops_per_sec_stddev)));
    const std::string spread = SpreadFigures(r);
    if (!spread.empty()) {
      absl::StrAppend(&row, "  ! rounds spread > ", absl::StrFormat("%.1f", kSpreadLimit),
                      "x: ", absl::StrReplaceAll(spread, {{";", ", "}}));
    }
  }
  return row;
}

}  // namespace

const std::vector<RangedFigure>& RangedFigures() {
  static const auto* const figures = new std::vector<RangedFigure>{
      {"ops_per_sec", [](const CaseResult& r) { return r.OpsPerSec(); }},
      {"commits_per_sec", [](const CaseResult& r) { return r.CommitsPerSec(); }},
      {"reader_ops_per_sec", [](const CaseResult& r) { return r.ReaderOpsPerSec(); }},
      {"writer_ops_per_sec", [](const CaseResult& r) { return r.WriterOpsPerSec(); }},
      {"seconds", [](const CaseResult& r) { return r.seconds; }},
      {"p50_us", [](const CaseResult& r) { return r.latency.Percentile(0.5) / 1e3; }},
      {"p99_us", [](const CaseResult& r) { return r.latency.Percentile(0.99) / 1e3; }},
      {"p999_us", [](const CaseResult& r) { return r.latency.Percentile(0.999) / 1e3; }},
      {"max_us", [](const CaseResult& r) { return r.latency.max() / 1e3; }},
      {"mean_us", [](const CaseResult& r) { return r.latency.Mean() / 1e3; }},
      {"bytes_written_per_op", [](const CaseResult& r) { return r.BytesWrittenPerOp(); }},
      {"device_bytes_per_commit", [](const CaseResult& r) { return r.DeviceBytesPerCommit(); }},
  };
  return *figures;
}

bool Spread(const std::vector<double>& rounds) {
  if (rounds.size() < 2) return false;
  const auto [lo, hi] = std::minmax_element(rounds.begin(), rounds.end());
  return *lo > 0 && *hi / *lo > kSpreadLimit;
}

std::string SpreadFigures(const CaseResult& r) {
  std::vector<std::string> names;
  for (const RangedFigure& f : RangedFigures()) {
    auto it = r.rounds.find(f.name);
    if (it != r.rounds.end() && Spread(it->second)) names.push_back(f.name);
  }
  return absl::StrJoin(names, ";");
}

std::vector<std::string> ResultFields() {
  std::vector<std::string> names;
  for (const Field& f : Fields()) names.push_back(f.name);
  return names;
}

std::string JsonLine(const CaseResult& r) {
  std::vector<std::string> parts;
  for (const Field& f : Fields()) {
    const Value v = f.get(r);
    parts.push_back(absl::StrCat("\"", f.name, "\":", JsonValue(v)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string CsvHeader() { return absl::StrJoin(ResultFields(), ","); }

std::string CsvRow(const CaseResult& r) {
  std::vector<std::string> parts;
  for (const Field& f : Fields()) {
    const Value v = f.get(r);
    if (v.is_list) {
      parts.push_back(absl::StrJoin(v.list, ";"));
    } else {
      parts.push_back(v.is_text ? CsvField(v.text) : FormatNumber(v.number));
    }
  }
  return absl::StrJoin(parts, ",");
}

std::string CaseSummary(const CaseResult& r) {
  std::string line = absl::StrFormat(
      "%s %s: %d ops in %.2fs, %s ops/s, p50 %s p99 %s max %s, %.2f fsyncs/op", CaseLabel(r.spec),
      r.spec.workload, r.ops, r.seconds, HumanCount(r.OpsPerSec()),
      HumanMicros(r.latency.Percentile(0.5) / 1e3), HumanMicros(r.latency.Percentile(0.99) / 1e3),
      HumanMicros(r.latency.max() / 1e3), r.FsyncsPerOp());
  if (r.FloorRatio() > 0) absl::StrAppend(&line, ", ", FloorColumn(r), " floor");
  return line;
}

std::string FormatTable(const std::vector<CaseResult>& results, const FlushFloor* floor) {
  std::string out;
  if (floor != nullptr && floor->per_second > 0) {
    out = absl::StrFormat(
        "flush floor: %s/s (%.0f us each: 4 KiB overwrite + fdatasync of a preallocated file, "
        "%d in %.2f s, in %s); x floor = a case's commits/s / the floor, at sync full and "
        "extra\n",
        HumanCount(floor->per_second), floor->MicrosEach(), floor->flushes, floor->seconds,
        floor->dir);
  }
  absl::StrAppend(
      &out, absl::StrFormat("%-16s %-10s %-11s %-6s %-10s %8s %9s %9s %9s %9s %9s %8s %8s %8s %7s\n",
                            "workload", "engine", "mode", "sync", "checkpoint", "ops", "ops/s",
                            "p50", "p99", "p99.9", "max", "fsync/op", "B/op", "log_max",
                            "x floor"));
  std::vector<std::string> order;  // workloads in the order first seen
  for (const CaseResult& r : results) {
    if (std::find(order.begin(), order.end(), r.spec.workload) == order.end()) {
      order.push_back(r.spec.workload);
    }
  }
  for (const std::string& w : order) {
    for (const CaseResult& r : results) {
      if (r.spec.workload == w) absl::StrAppend(&out, TableRow(r), "\n");
    }
  }
  if (std::any_of(results.begin(), results.end(), [](const CaseResult& r) {
        return r.latency.count() < kP999MinOps;
      })) {
    absl::StrAppend(&out, absl::StrFormat("* p99.9 of fewer than %d operations: one of the few "
                                          "slowest, not a percentile (raise --num)\n",
                                          kP999MinOps));
  }
  return out;
}

std::string SeriesFileName(const CaseSpec& s) {
  std::string name = absl::StrCat("writelat_", s.engine, "_", s.mode, "_", s.sync);
  if (s.checkpoint != "none" && s.checkpoint != "default") {
    absl::StrAppend(&name, "_", absl::StrReplaceAll(s.checkpoint, {{":", "-"}, {"/", "-"}}));
  }
  return name + ".csv";
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

absl::Status WriteSeries(const std::string& out_dir, const CaseResult& r) {
  std::string text = "op,latency_us,log_bytes\n";
  for (const SeriesPoint& p : r.series) {
    absl::StrAppend(&text, p.op, ",", FormatNumber(p.latency_us), ",", p.log_bytes, "\n");
  }
  return WriteFile(absl::StrCat(out_dir, "/", SeriesFileName(r.spec)), text);
}

}  // namespace journalkv::bench
