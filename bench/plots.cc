// The gnuplot side of report.h: data files, writelat's series CSVs (written by WriteSeries) and
// plots.gp, which draws per workload
//   throughput_<workload>.png   ops/s per engine/mode/sync case, bars coloured by engine (log
//                               scale; bursty: commits per second of write time)
//   latency_<workload>.png      p50, p99, p99.9 and max per case, clustered bars (log scale)
//   fsyncs_<workload>.png       flush calls per commit (workloads that commit)
//   percentiles_<workload>.png  the latency percentile distribution, as HdrHistogram plots it:
//                               x = 1/(1-p) on a log scale labelled 0%, 90%, 99%, 99.9%, ...,
//                               y = microseconds (log), a line per case; more than 8 cases: a
//                               panel per engine (columns) and sync level (rows), a mode in
//                               the same colour in every panel (plot_panels.h)
//   write_time_bursty.png       bursty only: the write time (the sum of the commits'
//                               latencies, write_ms_total) per case, labelled in ms
// and per sync level, small multiples of writelat (a panel per case, shared axes):
//   writelat_latency_<sync>.png the slowest commit of each window over the stream of commits
//   writelat_logsize_<sync>.png the log size on disk over the stream of commits (cases that
//                               never had a log on disk are named in the title instead)
// Data files: plot_<workload>.dat (the bars' figures) and percentiles_<workload>.dat (one
// block per case: 1/(1-p), percentile, microseconds). In file names a trace's workload
// trace:<stem> is trace-<stem> (PlotStem).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "bench/plot_panels.h"
#include "bench/report.h"

namespace journalkv::bench {
namespace {

std::vector<std::string> WorkloadOrder(const std::vector<CaseResult>& results) {
  std::vector<std::string> order;
  for (const CaseResult& r : results) {
    if (std::find(order.begin(), order.end(), r.spec.workload) == order.end()) {
      order.push_back(r.spec.workload);
    }
  }
  return order;
}

// Columns: label engine_colour ops_per_sec p50 p99 p999 max fsyncs_per_commit write_ms_total.
std::string DataFile(const std::vector<const CaseResult*>& rows,
                     const std::map<std::string, int>& colour) {
  std::string text = "# label colour ops_per_sec p50_us p99_us p999_us max_us fsyncs_per_commit "
      "write_ms_total\n";
  for (const CaseResult* r : rows) {
    const Histogram& h = r->latency;
    absl::StrAppend(
        &text, absl::StrFormat("\"%s\" %d %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n", PlotLabel(r->spec),
                               colour.at(r->spec.engine), r->OpsPerSec(), h.Percentile(0.5) / 1e3,
                               h.Percentile(0.99) / 1e3, h.Percentile(0.999) / 1e3, h.max() / 1e3,
                               r->FsyncsPerCommit(), r->write_ns / 1e6));
  }
  return text;
}

std::string WorkloadCharts(const std::string& w, size_t bars, bool commits) {
  const std::string f = PlotStem(w);  // in file names
  const std::string dat = GpQuote(absl::StrCat("plot_", f, ".dat"));
  const int width = static_cast<int>(std::max<size_t>(900, 60 * bars + 250));
  // bursty's seconds are its write time (bursty.cc).
  const std::string per_second = w == "bursty" ? "commits per second of write time, idle gaps "
                                                 "left out (higher is better)"
                                               : "operations per second (higher is better)";
  std::string gp = absl::StrFormat(
      "set terminal pngcairo size %d,560 noenhanced font ',9'\nset rmargin 12\n"
      "set output 'throughput_%s.png'\n"
      "set title '%s: %s'\n"
      "set key off\nset logscale y\nset ylabel 'ops/s'\nset xrange [-0.6:%d]\nset yrange [*:*]\n"
      "plot %s using 0:3:(0.8):2:xtic(1) with boxes lc variable\n"
      "set output 'latency_%s.png'\n"
      "set title '%s: latency per operation in microseconds (lower is better)'\n"
      "set key top left\nset ylabel 'microseconds'\nset style data histograms\n"
      "set style histogram clustered gap 1\nset xrange [*:*]\n"
      "plot %s using 4:xtic(1) title 'p50', '' using 5 title 'p99', "
      "'' using 6 title 'p99.9', '' using 7 title 'max'\n"
      "set style data points\nunset logscale y\n",
      width, f, w, per_second, static_cast<int>(bars), dat, f, w, dat);
  if (commits) {
    absl::StrAppend(
        &gp, absl::StrFormat("set output 'fsyncs_%s.png'\n"
                             "set title '%s: fsync + fdatasync + msync calls per commit'\n"
                             "set key off\nset ylabel 'flushes per commit'\nset xrange [-0.6:%d]\n"
                             "set yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n"
                             "plot %s using 0:8:(0.8):2:xtic(1) with boxes lc variable\n"
                             "set yrange [*:*]\nset xrange [*:*]\nset offsets 0, 0, 0, 0\n",
                             f, w, static_cast<int>(bars), dat));
  }
  if (w == "bursty") {  // WCDB's figure: the time spent in write operations
    absl::StrAppend(
        &gp, absl::StrFormat("set output 'write_time_%s.png'\n"
                             "set title '%s: write time, the sum of the commits'' latencies, in "
                             "ms (lower is better; idle gaps not included)'\n"
                             "set key off\nset logscale y\nset ylabel 'ms'\n"
                             "set xrange [-0.6:%d]\nset yrange [*:*]\n"
                             "plot %s using 0:9:(0.8):2:xtic(1) with boxes lc variable, '' using "
                             "0:9:(sprintf('%%.1f', $9)) with labels offset 0,0.7 notitle\n"
                             "unset logscale y\nset xrange [*:*]\n",
                             f, w, static_cast<int>(bars), dat));
  }
  return gp;
}

std::string Script(const std::string& out_dir, const std::vector<CaseResult>& results,
                   std::vector<std::pair<std::string, std::string>>& files) {
  std::map<std::string, int> colour;
  for (const CaseResult& r : results) colour.emplace(r.spec.engine, colour.size() + 1);
  std::string gp =
      absl::StrCat("# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.\n",
                   kPlotDefaults);
  std::map<std::string, std::vector<const CaseResult*>> writelat_by_sync;
  for (const std::string& w : WorkloadOrder(results)) {
    std::vector<const CaseResult*> rows;
    bool commits = false;
    for (const CaseResult& r : results) {
      if (r.spec.workload != w) continue;
      rows.push_back(&r);
      commits |= r.commits > 0;
      if (w == "writelat") writelat_by_sync[r.spec.sync].push_back(&r);
    }
    files.emplace_back(absl::StrCat(out_dir, "/plot_", PlotStem(w), ".dat"),
                       DataFile(rows, colour));
    absl::StrAppend(&gp, WorkloadCharts(w, rows.size(), commits));
    absl::StrAppend(&gp, PercentileChart(out_dir, w, rows, files));
  }
  for (const auto& [sync, rows] : writelat_by_sync) {
    absl::StrAppend(&gp, WritelatPanels(rows, sync));
  }
  return gp;
}

}  // namespace

bool GnuplotAvailable() { return std::system("gnuplot --version >/dev/null 2>&1") == 0; }

absl::Status WritePlots(const std::string& out_dir, const std::vector<CaseResult>& results,
                        bool run_gnuplot) {
  std::vector<std::pair<std::string, std::string>> files;
  const std::string gp = Script(out_dir, results, files);
  for (const auto& [path, text] : files) JKV_RETURN_IF_ERROR(WriteFile(path, text));
  JKV_RETURN_IF_ERROR(WriteFile(out_dir + "/plots.gp", gp));
  if (!run_gnuplot) return absl::OkStatus();
  if (!GnuplotAvailable()) {
    return absl::FailedPreconditionError("--plot needs gnuplot (./bazelw installs gnuplot-nox)");
  }
  const std::string command =
      absl::StrCat("cd ", GpQuote(out_dir), " && gnuplot plots.gp 2> gnuplot.log");
  if (std::system(command.c_str()) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("gnuplot failed; see ", out_dir, "/gnuplot.log"));
  }
  return absl::OkStatus();
}

}  // namespace journalkv::bench
