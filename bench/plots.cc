// The gnuplot side of report.h: one data file per workload (plot_<workload>.dat), writelat's
// series CSVs (written by WriteSeries), and plots.gp, which draws per workload
//   throughput_<workload>.png  ops/s per engine/mode/sync (log scale, coloured by engine)
//   latency_<workload>.png     p50, p99, p99.9 and max (log scale)
//   fsyncs_<workload>.png      flush calls per commit (workloads that commit)
// and per sync level writelat_latency_<sync>.png and writelat_logsize_<sync>.png (the slowest
// commit of each window and the log size over the stream of commits).
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
#include "bench/report.h"

namespace journalkv::bench {
namespace {

std::string Label(const CaseSpec& s) {
  std::string label = absl::StrCat(s.engine, "/", s.mode, "/", s.sync);
  if (s.checkpoint != "none") absl::StrAppend(&label, "/", s.checkpoint);
  if (!s.fs.empty()) absl::StrAppend(&label, " on ", s.fs);  // --fs: the same case per fs
  return label;
}

// Single-quoted for gnuplot and the shell (names here never hold a single quote, but a
// directory given on the command line might).
std::string Quote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

std::vector<std::string> WorkloadOrder(const std::vector<CaseResult>& results) {
  std::vector<std::string> order;
  for (const CaseResult& r : results) {
    if (std::find(order.begin(), order.end(), r.spec.workload) == order.end()) {
      order.push_back(r.spec.workload);
    }
  }
  return order;
}

// Columns: label engine_colour ops_per_sec p50 p99 p999 max fsyncs_per_commit.
std::string DataFile(const std::vector<const CaseResult*>& rows,
                     const std::map<std::string, int>& colour) {
  std::string text = "# label colour ops_per_sec p50_us p99_us p999_us max_us fsyncs_per_commit\n";
  for (const CaseResult* r : rows) {
    const Histogram& h = r->latency;
    absl::StrAppend(
        &text, absl::StrFormat("\"%s\" %d %.6g %.6g %.6g %.6g %.6g %.6g\n", Label(r->spec),
                               colour.at(r->spec.engine), r->OpsPerSec(), h.Percentile(0.5) / 1e3,
                               h.Percentile(0.99) / 1e3, h.Percentile(0.999) / 1e3, h.max() / 1e3,
                               r->FsyncsPerCommit()));
  }
  return text;
}

std::string WorkloadCharts(const std::string& w, size_t bars, bool commits) {
  const std::string dat = Quote(absl::StrCat("plot_", w, ".dat"));
  const int width = static_cast<int>(std::max<size_t>(900, 60 * bars + 250));
  std::string gp = absl::StrFormat(
      "set terminal pngcairo size %d,560 noenhanced font ',9'\n"
      "set output 'throughput_%s.png'\n"
      "set title '%s: operations per second (higher is better)'\n"
      "set key off\nset logscale y\nset ylabel 'ops/s'\nset xrange [-0.6:%d]\nset yrange [*:*]\n"
      "plot %s using 0:3:(0.8):2:xtic(1) with boxes lc variable\n"
      "set output 'latency_%s.png'\n"
      "set title '%s: latency per operation in microseconds (lower is better)'\n"
      "set key top left\nset ylabel 'microseconds'\nset style data histograms\n"
      "set style histogram clustered gap 1\nset xrange [*:*]\n"
      "plot %s using 4:xtic(1) title 'p50', '' using 5 title 'p99', "
      "'' using 6 title 'p99.9', '' using 7 title 'max'\n"
      "set style data points\nunset logscale y\n",
      width, w, w, static_cast<int>(bars), dat, w, w, dat);
  if (commits) {
    absl::StrAppend(
        &gp, absl::StrFormat("set output 'fsyncs_%s.png'\n"
                             "set title '%s: fsync + fdatasync + msync calls per commit'\n"
                             "set key off\nset ylabel 'flushes per commit'\nset xrange [-0.6:%d]\n"
                             "set yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n"
                             "plot %s using 0:8:(0.8):2:xtic(1) with boxes lc variable\n"
                             "set yrange [*:*]\nset xrange [*:*]\nset offsets 0, 0, 0, 0\n",
                             w, w, static_cast<int>(bars), dat));
  }
  return gp;
}

std::string WritelatCharts(const std::vector<const CaseResult*>& rows, const std::string& sync) {
  // A dash pattern per engine, a colour per mode within it: up to 8 modes stay distinct.
  std::map<std::string, int> dash, colour;
  std::vector<std::string> latency, log_size;
  for (const CaseResult* r : rows) {
    dash.emplace(r->spec.engine, dash.size() + 1);
    const int lc = ++colour[r->spec.engine];
    const std::string style = absl::StrFormat(" with lines lw 1.5 dt %d lc %d title %s",
                                              dash[r->spec.engine], lc, Quote(Label(r->spec)));
    const std::string file = Quote(SeriesFileName(r->spec));
    latency.push_back(absl::StrCat(file, " every ::1 using 1:2", style));
    log_size.push_back(absl::StrCat(file, " every ::1 using 1:($3/1024)", style));
  }
  return absl::StrFormat(
      "set terminal pngcairo size 1200,600 noenhanced font ',9'\n"
      "set datafile separator ','\nset key outside right\nset xlabel 'commit'\n"
      "set xtics norotate\nset xrange [*:*]\nset yrange [*:*]\n"
      "set output 'writelat_latency_%s.png'\n"
      "set title 'writelat, sync %s: slowest commit per window (microseconds, log scale)'\n"
      "set ylabel 'microseconds'\nset logscale y\nplot %s\n"
      "set output 'writelat_logsize_%s.png'\n"
      "set title 'writelat, sync %s: log size on disk between commits'\n"
      "set ylabel 'KiB'\nunset logscale y\nset yrange [0:*]\nplot %s\n"
      "set datafile separator whitespace\nunset xlabel\nset xtics rotate by -40 nomirror\n",
      sync, sync, absl::StrJoin(latency, ", \\\n     "), sync, sync,
      absl::StrJoin(log_size, ", \\\n     "));
}

std::string Script(const std::string& out_dir, const std::vector<CaseResult>& results,
                   std::vector<std::pair<std::string, std::string>>& files) {
  std::map<std::string, int> colour;
  for (const CaseResult& r : results) colour.emplace(r.spec.engine, colour.size() + 1);
  std::string gp =
      "# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.\n"
      "set style fill solid 0.85 border -1\nset grid ytics\nset xtics rotate by -40 nomirror\n";
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
    files.emplace_back(absl::StrCat(out_dir, "/plot_", w, ".dat"), DataFile(rows, colour));
    absl::StrAppend(&gp, WorkloadCharts(w, rows.size(), commits));
  }
  for (const auto& [sync, rows] : writelat_by_sync)
    absl::StrAppend(&gp, WritelatCharts(rows, sync));
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
      absl::StrCat("cd ", Quote(out_dir), " && gnuplot plots.gp 2> gnuplot.log");
  if (std::system(command.c_str()) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("gnuplot failed; see ", out_dir, "/gnuplot.log"));
  }
  return absl::OkStatus();
}

}  // namespace journalkv::bench
