// report.md of --reproduce (reproduce.h): Measure and FormatReport, pure functions of the
// results.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "bench/reproduce.h"
#include "bench/report.h"

namespace journalkv::bench {
namespace {

bool Matches(const Selector& s, const LabeledResult& r) {
  const CaseSpec& c = r.result.spec;
  auto ok = [](const std::string& want, const std::string& got) {
    return want.empty() || want == got;
  };
  return ok(s.run, r.run) && ok(s.engine, c.engine) && ok(s.mode, c.mode) &&
         ok(s.workload, c.workload) && ok(s.checkpoint, c.checkpoint) && ok(s.fs, c.fs) &&
         ok(s.sync, c.sync);
}

std::string Describe(const Selector& s) {
  std::string d = absl::StrCat(s.engine, " ", s.mode);
  if (!s.checkpoint.empty()) absl::StrAppend(&d, " ", s.checkpoint);
  if (!s.workload.empty()) absl::StrAppend(&d, " ", s.workload);
  absl::StrAppend(&d, " at sync ", s.sync);
  if (!s.fs.empty()) absl::StrAppend(&d, " on ", s.fs);
  if (!s.run.empty()) absl::StrAppend(&d, " (", s.run, ")");
  return d;
}

const LabeledResult* Find(const Selector& s, const std::vector<LabeledResult>& results) {
  for (const LabeledResult& r : results) {
    if (Matches(s, r)) return &r;
  }
  return nullptr;
}

// The figure's value in each round; the record's own value when it has no rounds.
std::vector<double> RoundsOf(const CaseResult& r, const std::string& figure) {
  auto it = r.rounds.find(figure);
  if (it != r.rounds.end() && !it->second.empty()) return it->second;
  for (const RangedFigure& f : RangedFigures()) {
    if (f.name == figure) return {f.get(r)};
  }
  return {};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string Number(double v) {
  const double a = std::fabs(v);
  if (a >= 10000) return absl::StrFormat("%.0f", v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  if (a >= 1) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3g", v);
}

std::string WithUnit(double v, const std::string& unit) {
  if (unit == "x") return Number(v) + "x";
  if (unit == "s") return Number(v) + " s";
  return absl::StrCat(Number(v), " ", unit);
}

// "Figure 1,234/s (0.45x floor)": a part of a measured figure, with the flush floor beside
// a sync-bound rate.
std::string Part(const CaseResult& r, const std::string& figure) {
  const std::vector<double> v = RoundsOf(r, figure);
  if (v.empty()) return "?";
  std::string s = absl::StrCat(absl::StrReplaceAll(figure, {{"_", " "}}), " ", Number(Median(v)));
  const bool rate = figure == "commits_per_sec" || figure == "writer_ops_per_sec";
  const bool durable = r.spec.sync == "full" || r.spec.sync == "extra";
  if (rate && durable && r.floor_per_s > 0) {
    absl::StrAppend(&s, absl::StrFormat(" (%.2fx floor)", Median(v) / r.floor_per_s));
  }
  return s;
}

std::string Cell(const std::string& s) { return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}}); }

// The case table of one experiment: figures as data, each with its rounds' range.
std::string Range(const CaseResult& r, const std::string& figure, bool latency) {
  const std::vector<double> v = RoundsOf(r, figure);
  if (v.empty()) return "-";
  auto fmt = [&](double x) { return latency ? absl::StrFormat("%.0f", x) : Number(x); };
  std::string s = fmt(Median(v));
  if (v.size() > 1) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    absl::StrAppend(&s, " (", fmt(*lo), "-", fmt(*hi), ")");
  }
  if (Spread(v)) s += " †";
  return s;
}

std::string CaseTable(const std::vector<LabeledResult>& results) {
  std::string t =
      "| run | engine | mode | checkpoint | workload | fs | sync | commits/s | x floor | "
      "readers/s | p50 us | p99 us | p99.9 us | max us | mean us | device B/commit |\n"
      "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const LabeledResult& lr : results) {
    const CaseResult& r = lr.result;
    const double floor = r.FloorRatio();
    absl::StrAppend(
        &t, "| ", absl::StrJoin({lr.run.empty() ? "-" : lr.run, r.spec.engine, r.spec.mode,
                           r.spec.checkpoint, r.spec.workload, r.spec.fs.empty() ? "-" : r.spec.fs,
                           r.spec.sync, Range(r, "commits_per_sec", false),
                           floor > 0 ? absl::StrFormat("%.2fx", floor) : std::string("-"),
                           r.reader_ops > 0 ? Range(r, "reader_ops_per_sec", false) : "-",
                           Range(r, "p50_us", true), Range(r, "p99_us", true),
                           Range(r, "p999_us", true), Range(r, "max_us", true),
                           Range(r, "mean_us", true),
                           r.device_bytes >= 0 ? Range(r, "device_bytes_per_commit", true) : "-"},
                          " | "),
        " |\n");
  }
  return t;
}

std::string FloorLine(const std::map<std::string, FlushFloor>& floors) {
  if (floors.empty()) return "not measured";
  std::vector<std::string> parts;
  for (const auto& [where, f] : floors) {
    parts.push_back(absl::StrFormat("%s %.0f/s (%.0f us per 4 KiB overwrite + fdatasync)",
                                    where.empty() ? "the databases' directory" : where,
                                    f.per_second, f.MicrosEach()));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

Measured Measure(const Figure& f, const std::vector<LabeledResult>& results) {
  Measured m;
  const LabeledResult* a = Find(f.a, results);
  const LabeledResult* b = f.b ? Find(*f.b, results) : nullptr;
  if (a == nullptr || (f.b && b == nullptr)) {
    m.missing = absl::StrCat("no result for ", Describe(a == nullptr ? f.a : *f.b));
    return m;
  }
  m.a = &a->result;
  m.b = b != nullptr ? &b->result : nullptr;
  const std::vector<double> av = RoundsOf(a->result, f.a.figure);
  std::vector<double> values;
  if (b == nullptr) {
    values = av;
  } else {
    // Round i over round i: the rounds were interleaved, so they ran close in time.
    const std::vector<double> bv = RoundsOf(b->result, f.b->figure);
    for (size_t i = 0; i < std::min(av.size(), bv.size()); ++i) {
      if (bv[i] > 0) values.push_back(av[i] / bv[i]);
    }
  }
  if (values.empty()) {
    m.missing = "no round with a non-zero denominator";
    return m;
  }
  m.ok = true;
  m.median = Median(values);
  m.min = *std::min_element(values.begin(), values.end());
  m.max = *std::max_element(values.begin(), values.end());
  m.spread = Spread(values);
  return m;
}

std::string FormatReport(const ReportInput& in) {
  const RunInfo& i = in.info;
  std::string out = absl::StrCat(
      "# The founding experiments, reproduced\n\n"
      "Made by `", in.command, "` (", in.quick ? "--quick: tiny sizes, a smoke test, not figures to quote" : "--full sizes",
      "; ", in.repeat, in.repeat == 1 ? " round" : " rounds, interleaved",
      absl::StrFormat("; %.0f s in all).\n\n", in.wall_seconds));
  absl::StrAppend(&out, "| run | |\n|---|---|\n", "| date (UTC) | ", i.date_utc, " |\n",
                  "| host | ", i.host, " |\n| kernel | ", i.kernel, " (", i.machine, ") |\n",
                  "| CPU | ", i.cpu, " (", i.cpus, " online) |\n",
                  "| databases' directory | ", i.db_dir, " (", i.db_fs, ") |\n",
                  "| SQLite | ", i.sqlite_version, " |\n| LMDB | ", i.lmdb_version, " |\n",
                  "| flush floor | ", FloorLine(in.floors), " |\n\n");
  absl::StrAppend(
      &out,
      "Each table sets a published figure beside the one measured here: the median over the "
      "rounds (a ratio is taken round by round, round i of one case over round i of the "
      "other), the lowest and highest round in brackets, and measured / published. `†` marks "
      "rounds that spread more than ",
      absl::StrFormat("%.1f", kSpreadLimit),
      "x (highest / lowest): read such a figure as rough. A commit rate at sync full is "
      "followed by its multiple of the flush floor of its file system (`x floor`): a durable "
      "commit costs at least one flush. Each experiment's records (results.jsonl, results.csv: "
      "every figure with its `_min` and `_max` over the rounds) and charts are in its folder.\n\n");
  for (const ExperimentOutcome& o : in.outcomes) {
    const Experiment& e = *o.experiment;
    absl::StrAppend(&out, "## ", e.name, "\n\nFrom ", e.document, ". ", e.about, "\n\n");
    if (!o.ran) {
      absl::StrAppend(&out, "**Not run:** ", o.not_run, "\n\n");
      continue;
    }
    absl::StrAppend(&out, "```sh\n");
    for (const std::string& c : o.commands) absl::StrAppend(&out, c, "\n");
    absl::StrAppend(&out, "```\n\n");
    for (const std::string& f : o.failures) absl::StrAppend(&out, "**Failed:** ", f, "\n\n");
    if (!e.figures.empty()) {
      absl::StrAppend(&out,
                      "| figure | published | measured (rounds' range) | measured / published | "
                      "from | how | why they differ |\n|---|---|---|---|---|---|---|\n");
    }
    for (const Figure& f : e.figures) {
      const Measured m = Measure(f, o.results);
      std::string measured = "not measured: " + m.missing, ratio = "-", from = "-";
      if (m.ok) {
        measured = WithUnit(m.median, f.unit);
        if (m.min != m.max) {
          absl::StrAppend(&measured, " (", Number(m.min), "-", Number(m.max), ")");
        }
        if (m.spread) measured += " †";
        if (f.published_value > 0) ratio = absl::StrFormat("%.2f", m.median / f.published_value);
        from = Part(*m.a, f.a.figure);
        if (m.b != nullptr) from = absl::StrCat(from, " / ", Part(*m.b, f.b->figure));
      }
      absl::StrAppend(&out, "| ", Cell(f.what), " | ", Cell(f.published), " | ", Cell(measured),
                      " | ", ratio, " | ", Cell(from), " | ", Cell(f.how), " | ", Cell(f.why),
                      " |\n");
    }
    absl::StrAppend(&out, "\nThe cases (median round by ops/s; rounds' lowest-highest in "
                          "brackets):\n\n",
                    CaseTable(o.results), "\n");
    // The throughput and writelat latency charts shown, every chart linked.
    for (const std::string& c : o.charts) {
      const std::string file = c.substr(c.rfind('/') + 1);
      if (absl::StartsWith(file, "throughput_") || absl::StartsWith(file, "writelat_latency_")) {
        absl::StrAppend(&out, "![", c, "](", c, ")\n\n");
      }
    }
    if (!o.charts.empty()) {
      absl::StrAppend(&out, "Charts:");
      for (const std::string& c : o.charts) absl::StrAppend(&out, " [", c, "](", c, ")");
      absl::StrAppend(&out, "\n\n");
    }
  }
  return out;
}

}  // namespace journalkv::bench
