#include "bench/plot_panels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "bench/report.h"

namespace journalkv::bench {
namespace {

// Colours that stay apart on white and from one another (no yellow), then dash patterns.
constexpr const char* kColours[] = {"#9400d3", "#009e73", "#0072b2", "#e69f00", "#e51e10",
                                    "#56b4e9", "#000000", "#a0522d", "#ff69b4", "#808000"};
constexpr int kNumColours = sizeof(kColours) / sizeof(kColours[0]);

std::string LineStyle(int i, double width = 1.5) {
  return absl::StrFormat("with lines lw %.1f lc rgb '%s' dt %d", width, kColours[i % kNumColours],
                         1 + i / kNumColours);
}

struct Grid {
  int cols = 1;
  int rows = 1;
};

Grid GridFor(size_t panels, int max_cols) {
  Grid g;
  g.cols = std::min<int>(max_cols, static_cast<int>(std::ceil(std::sqrt(double(panels)))));
  g.cols = std::max(1, g.cols);
  g.rows = static_cast<int>((panels + g.cols - 1) / g.cols);
  return g;
}

// The quantiles a percentile chart samples: 1/(1-p) = 10^(k/10) while it stays within the
// count, so every decade (90%, 99%, ...) has ten points; then the maximum at 1/(1-p) = count.
std::string PercentileBlock(const CaseResult& r) {
  const Histogram& h = r.latency;
  const double n = static_cast<double>(h.count());
  std::string text = absl::StrCat("# ", PlotLabel(r.spec), ": x = 1/(1-p), percentile, us\n");
  for (int k = 0;; ++k) {
    const double x = std::pow(10.0, k / 10.0);
    if (x > n) break;
    const double p = 1 - 1 / x;
    absl::StrAppend(&text, absl::StrFormat("%.6g %.6g %.6g\n", x, 100 * p, h.Percentile(p) / 1e3));
  }
  absl::StrAppend(&text, absl::StrFormat("%.6g %.6g %.6g\n", n, 100 * (1 - 1 / n), h.max() / 1e3));
  return text;
}

// A panel's cases: its title and the rows drawn in it.
struct Panel {
  std::string title;
  std::vector<const CaseResult*> rows;
};

std::string ModeKey(const CaseSpec& s) {
  std::string key = s.checkpoint == "none" ? s.mode : absl::StrCat(s.mode, "/", s.checkpoint);
  if (!s.fs.empty()) absl::StrAppend(&key, " on ", s.fs);
  return key;
}

// Explicit tic labels are formats to gnuplot: %% prints a percent sign.
constexpr char kPercentileTics[] =
    "set xtics norotate (\"0%%\" 1, \"90%%\" 10, \"99%%\" 100, \"99.9%%\" 1000, "
    "\"99.99%%\" 10000, \"99.999%%\" 100000, \"99.9999%%\" 1000000)\n";

}  // namespace

std::string PlotLabel(const CaseSpec& s) {
  std::string label = absl::StrCat(s.engine, "/", s.mode, "/", s.sync);
  if (s.checkpoint != "none") absl::StrAppend(&label, "/", s.checkpoint);
  if (!s.fs.empty()) absl::StrAppend(&label, " on ", s.fs);  // --fs: the same case per fs
  return label;
}

std::string PlotStem(const std::string& workload) {
  return absl::StrReplaceAll(workload, {{":", "-"}});
}

std::string GpQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

std::string PercentileChart(const std::string& out_dir, const std::string& workload,
                            const std::vector<const CaseResult*>& all_rows, PlotFiles& files) {
  std::vector<const CaseResult*> rows;
  for (const CaseResult* r : all_rows) {
    if (r->latency.count() > 0) rows.push_back(r);
  }
  if (rows.empty()) return "";
  const std::string dat_name = absl::StrCat("percentiles_", PlotStem(workload), ".dat");
  std::vector<std::string> blocks;
  double lo = std::numeric_limits<double>::max(), hi = 0, xmax = 10;
  for (const CaseResult* r : rows) {
    blocks.push_back(PercentileBlock(*r));
    lo = std::min(lo, std::max(0.01, r->latency.min() / 1e3));
    hi = std::max(hi, r->latency.max() / 1e3);
    xmax = std::max(xmax, static_cast<double>(r->latency.count()));
  }
  files.emplace_back(absl::StrCat(out_dir, "/", dat_name), absl::StrJoin(blocks, "\n\n"));
  std::map<const CaseResult*, int> index;
  for (size_t i = 0; i < rows.size(); ++i) index[rows[i]] = static_cast<int>(i);

  // One panel of every case, or one per engine and sync level with a colour per mode.
  std::vector<Panel> panels;
  std::map<std::string, int> colour;  // by label, or by mode in panels
  const bool split = rows.size() > kMaxLinesPerPanel;
  if (!split) {
    panels.push_back({"", rows});
    for (const CaseResult* r : rows) colour.emplace(PlotLabel(r->spec), colour.size());
  } else {
    for (const CaseResult* r : rows) {
      const std::string title = absl::StrCat(r->spec.engine, ", sync ", r->spec.sync);
      auto it = std::find_if(panels.begin(), panels.end(),
                             [&](const Panel& p) { return p.title == title; });
      if (it == panels.end()) it = panels.insert(panels.end(), Panel{title, {}});
      it->rows.push_back(r);
      colour.emplace(ModeKey(r->spec), colour.size());
    }
  }
  // Split: a row per sync level, a column per engine (in the order the cases came), so a
  // column compares sync levels and a row engines.
  std::vector<std::string> engines, syncs;
  if (split) {
    for (const CaseResult* r : rows) {
      if (std::find(engines.begin(), engines.end(), r->spec.engine) == engines.end()) {
        engines.push_back(r->spec.engine);
      }
      if (std::find(syncs.begin(), syncs.end(), r->spec.sync) == syncs.end()) {
        syncs.push_back(r->spec.sync);
      }
    }
  }
  Grid grid = GridFor(panels.size(), 3);
  if (split && engines.size() <= 4) {
    std::vector<Panel> ordered;
    for (const std::string& sync : syncs) {
      for (const std::string& engine : engines) {
        const std::string title = absl::StrCat(engine, ", sync ", sync);
        auto it = std::find_if(panels.begin(), panels.end(),
                               [&](const Panel& p) { return p.title == title; });
        // An engine without this sync level (LMDB has no "normal") leaves its cell empty.
        ordered.push_back(it == panels.end() ? Panel{"", {}} : *it);
      }
    }
    panels = std::move(ordered);
    grid = {static_cast<int>(engines.size()), static_cast<int>(syncs.size())};
  }
  const int panel_w = split ? 560 : 1000, panel_h = split ? 400 : 600;
  std::string gp = absl::StrFormat(
      "set terminal pngcairo size %d,%d noenhanced font ',9'\n"
      "set output 'percentiles_%s.png'\n"
      "set multiplot layout %d,%d title \"%s: latency by percentile (log scales; lower is "
      "better)\" font ',11'\n"
      "set logscale xy\nset xrange [1:%.6g]\nset yrange [%.6g:%.6g]\n%s"
      "set grid xtics ytics\nset key top left opaque box\nset ylabel 'microseconds'\n"
      "set xlabel 'percentile'\nset style data lines\n",
      panel_w * grid.cols, panel_h * grid.rows + 40, PlotStem(workload), grid.rows, grid.cols,
      workload,
      xmax * 1.5, lo / 1.5, hi * 8, kPercentileTics);  // room above for the key
  for (const Panel& p : panels) {
    if (p.rows.empty()) {
      absl::StrAppend(&gp, "set multiplot next\n");
      continue;
    }
    std::vector<std::string> lines;
    for (const CaseResult* r : p.rows) {
      const std::string title = split ? ModeKey(r->spec) : PlotLabel(r->spec);
      const int c = colour.at(split ? ModeKey(r->spec) : PlotLabel(r->spec));
      lines.push_back(absl::StrFormat("%s index %d using 1:3 %s title %s", GpQuote(dat_name),
                                      index.at(r), LineStyle(c), GpQuote(title)));
    }
    absl::StrAppend(&gp, "set title ", GpQuote(p.title), "\nplot ",
                    absl::StrJoin(lines, ", \\\n     "), "\n");
  }
  absl::StrAppend(&gp, "unset multiplot\nreset\n", kPlotDefaults);
  return gp;
}

std::string WritelatPanels(const std::vector<const CaseResult*>& rows, const std::string& sync) {
  double lo = std::numeric_limits<double>::max(), hi = 0, log_kib = 0;
  uint64_t last_op = 1;
  std::vector<const CaseResult*> with_log;
  std::vector<std::string> without_log;
  for (const CaseResult* r : rows) {
    uint64_t most = 0;
    for (const SeriesPoint& p : r->series) {
      lo = std::min(lo, std::max(0.1, p.latency_us));
      hi = std::max(hi, p.latency_us);
      most = std::max(most, p.log_bytes);
      last_op = std::max(last_op, p.op);
    }
    log_kib = std::max(log_kib, most / 1024.0);
    if (most > 0) {
      with_log.push_back(r);
    } else {
      without_log.push_back(absl::StrCat(r->spec.engine, "/", ModeKey(r->spec)));
    }
  }
  if (hi == 0) return "";
  std::map<std::string, int> engine_colour;  // journalkv blue, the others after it
  for (const CaseResult* r : rows) {
    engine_colour.emplace(r->spec.engine, 2 + static_cast<int>(engine_colour.size()) * 2);
  }
  // The panels' shared settings: one series each, the label as the panel's title.
  const auto panels = [&](const std::vector<const CaseResult*>& drawn, const char* column,
                          std::string& gp) {
    for (const CaseResult* r : drawn) {
      absl::StrAppend(&gp, "set title ",
                      GpQuote(absl::StrCat(r->spec.engine, "/", ModeKey(r->spec))), "\nplot ",
                      GpQuote(SeriesFileName(r->spec)), " every ::1 using 1:", column, " ",
                      LineStyle(engine_colour.at(r->spec.engine)), " notitle\n");
    }
  };
  const Grid grid = GridFor(rows.size(), 4);
  std::string gp = absl::StrFormat(
      "set terminal pngcairo size %d,%d noenhanced font ',9'\n"
      "set datafile separator ','\nset xtics norotate\nset key off\n"
      "set xrange [0:%d]\nset lmargin 9\nset rmargin 2\nset xlabel 'commit' offset 0,0.5\n"
      "set output 'writelat_latency_%s.png'\n"
      "set multiplot layout %d,%d title \"writelat, sync %s: the slowest commit of each window "
      "of commits, in microseconds (log scale, the same in every panel)\" font ',11'\n"
      "set logscale y\nset yrange [%.6g:%.6g]\nset ylabel 'us'\n",
      420 * grid.cols, 260 * grid.rows + 40, last_op, sync, grid.rows, grid.cols, sync,
      lo / 1.3, hi * 1.3);
  panels(rows, "2", gp);
  absl::StrAppend(&gp, "unset multiplot\n");
  if (!with_log.empty()) {
    const Grid lg = GridFor(with_log.size(), 4);
    std::string note;
    if (!without_log.empty()) {
      note = "\\nno log file on disk between commits:";
      size_t line = note.size();
      for (const std::string& name : without_log) {
        if (line + name.size() > 110) {
          absl::StrAppend(&note, "\\n");
          line = 0;
        }
        absl::StrAppend(&note, " ", name);
        line += name.size() + 1;
      }
    }
    absl::StrAppend(
        &gp,
        absl::StrFormat(
            "set terminal pngcairo size %d,%d noenhanced font ',9'\n"
            "set output 'writelat_logsize_%s.png'\n"
            "set multiplot layout %d,%d title \"writelat, sync %s: log size on disk between "
            "commits, in KiB (the same scale in every panel)%s\" font ',11'\n"
            "unset logscale y\nset yrange [0:%.6g]\nset ylabel 'KiB'\n",
            std::max(900, 420 * lg.cols), 260 * lg.rows + 40 + 16 * static_cast<int>(note.size() / 100),
            sync, lg.rows, lg.cols, sync, note,
            std::max(1.0, log_kib * 1.1)));
    panels(with_log, "($3/1024)", gp);
    absl::StrAppend(&gp, "unset multiplot\n");
  }
  absl::StrAppend(&gp, "reset\nset datafile separator whitespace\n", kPlotDefaults);
  return gp;
}

}  // namespace journalkv::bench
