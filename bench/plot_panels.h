// The line charts of jkvbench --plot (internal to plots.cc, which lists every chart): the
// latency percentile distribution of each workload, and writelat's latency and log size over
// the stream of commits, drawn as small multiples (a grid of panels with shared axes) where one
// chart would overlay too many series to read.
//
// Each function returns gnuplot commands (run in the --out directory, after plots.cc's own
// settings) and appends the data files they read to `files` as (path, contents).
//
// Thread-safety: plain functions.
#ifndef JOURNALKV_BENCH_PLOT_PANELS_H_
#define JOURNALKV_BENCH_PLOT_PANELS_H_

#include <string>
#include <utility>
#include <vector>

#include "bench/workloads.h"

namespace journalkv::bench {

// The settings plots.gp starts with, restored after each chart that changes them (`reset`).
inline constexpr char kPlotDefaults[] =
    "set style fill solid 0.85 border -1\nset grid ytics\nset xtics rotate by -40 nomirror\n";

using PlotFiles = std::vector<std::pair<std::string, std::string>>;

// "engine/mode/sync[/checkpoint]".
std::string PlotLabel(const CaseSpec& s);
// A workload's name as it appears in chart and data file names: ':' (trace:<stem>) as '-', so
// that the names are portable and link from Markdown as they are.
std::string PlotStem(const std::string& workload);
// Single-quoted for gnuplot and the shell.
std::string GpQuote(const std::string& s);

// A chart of the cases' latency percentiles, as HdrHistogram plots them: x is 1/(1-p) on a log
// scale, labelled 0%, 90%, 99%, 99.9%, ...; y the latency in microseconds, log scale; one line
// per case up to kMaxLinesPerPanel cases, else one panel per engine and sync level, a mode
// drawn in the same colour in every panel. Writes percentiles_<workload>.dat (one block per
// case: x, percentile, microseconds) and draws percentiles_<workload>.png.
inline constexpr size_t kMaxLinesPerPanel = 8;
std::string PercentileChart(const std::string& out_dir, const std::string& workload,
                            const std::vector<const CaseResult*>& rows, PlotFiles& files);

// writelat at one sync level, one panel per case with shared axes: the slowest commit of each
// window (writelat_latency_<sync>.png, log y) and the log size (writelat_logsize_<sync>.png,
// linear y; cases whose log was never on disk are named under the grid instead of drawn).
std::string WritelatPanels(const std::vector<const CaseResult*>& rows, const std::string& sync);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_PLOT_PANELS_H_
