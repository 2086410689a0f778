// --reproduce's report from canned results (reproduce.h): the measured figure and its ratio
// to the published one, round by round; the spread mark; an experiment not run; the metadata
// header. And the registry: every experiment's runs parse at both sizes and every figure names
// a case its runs make. And figures as data (report.h): MedianRound keeps each figure's rounds.
#include "bench/reproduce.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "bench/report.h"
#include "bench/run.h"
#include "gtest/gtest.h"

namespace journalkv::bench {
namespace {

CaseResult Case(const std::string& engine, const std::string& mode,
                std::vector<double> commits_per_sec) {
  CaseResult r;
  r.spec = {engine, mode, "full", mode == "wal" ? "default" : "none", "smalltxn", ""};
  r.seconds = 1;
  std::vector<double> sorted = commits_per_sec;
  std::sort(sorted.begin(), sorted.end());
  r.commits = r.ops = static_cast<uint64_t>(sorted[(sorted.size() - 1) / 2]);
  r.floor_per_s = 2000;
  r.repeats = static_cast<int>(commits_per_sec.size());
  r.rounds["commits_per_sec"] = std::move(commits_per_sec);
  return r;
}

Experiment Canned() {
  Experiment e;
  e.name = "canned";
  e.document = "a canned note";
  e.about = "Two cases.";
  Figure f;
  f.what = "wal over delete";
  f.published = "6x";
  f.published_value = 6;
  f.unit = "x";
  f.how = "wal commits/s / delete commits/s";
  f.a.engine = "sqlite";
  f.a.mode = "wal";
  f.a.figure = "commits_per_sec";
  f.b = f.a;
  f.b->mode = "delete";
  f.why = "a sentence on why";
  e.figures.push_back(f);
  return e;
}

TEST(ReproduceTest, MeasuresRatiosRoundByRound) {
  const Experiment e = Canned();
  // Round by round: 200/100, 900/300, 300/100 = 2, 3, 3 (the medians of each case alone,
  // 300/100, would give 3 too; the range is the rounds').
  const std::vector<LabeledResult> results = {{"", Case("sqlite", "wal", {200, 900, 300})},
                                              {"", Case("sqlite", "delete", {100, 300, 100})}};
  const Measured m = Measure(e.figures[0], results);
  ASSERT_TRUE(m.ok) << m.missing;
  EXPECT_DOUBLE_EQ(m.median, 3);
  EXPECT_DOUBLE_EQ(m.min, 2);
  EXPECT_DOUBLE_EQ(m.max, 3);
  EXPECT_FALSE(m.spread);  // 3 / 2 = 1.5 is not more than 1.5

  const std::vector<LabeledResult> wide = {{"", Case("sqlite", "wal", {200, 500, 300})},
                                           {"", Case("sqlite", "delete", {100, 100, 100})}};
  const Measured w = Measure(e.figures[0], wide);
  ASSERT_TRUE(w.ok);
  EXPECT_TRUE(w.spread);  // 5 / 2

  const Measured missing = Measure(e.figures[0], {results[0]});
  EXPECT_FALSE(missing.ok);
  EXPECT_TRUE(absl::StrContains(missing.missing, "no result for sqlite delete at sync full")) << missing.missing;
}

ReportInput CannedReport(const Experiment& ran, const Experiment& not_run) {
  ReportInput in;
  in.info.date_utc = "2026-12-07T06:00:00Z";
  in.info.host = "testhost";
  in.info.kernel = "6.18.0";
  in.info.cpu = "Test CPU";
  in.info.cpus = 2;
  in.info.db_fs = "ext4";
  in.info.sqlite_version = "3.40.1";
  in.info.lmdb_version = "LMDB 0.9.24";
  in.floors[""] = FlushFloor{2000, 2000, 1, "/db"};
  in.floors["xfs"] = FlushFloor{4000, 4000, 1, "/mnt"};
  in.command = "jkvbench --reproduce=seeds";
  in.repeat = 3;
  ExperimentOutcome o;
  o.experiment = &ran;
  o.ran = true;
  o.commands = {"jkvbench --engines=sqlite --repeat=3"};
  o.results = {{"", Case("sqlite", "wal", {2000, 5000, 3000})},
               {"", Case("sqlite", "delete", {1000, 1000, 1000})}};
  o.charts = {"canned/throughput_smalltxn.png"};
  in.outcomes.push_back(o);
  ExperimentOutcome n;
  n.experiment = &not_run;
  n.not_run = "it needs file systems made for the run (--fs=xfs), and --fs=xfs: needs root";
  in.outcomes.push_back(n);
  return in;
}

TEST(ReproduceTest, ReportHasHeaderTablesAndNotRun) {
  const Experiment ran = Canned();
  Experiment not_run = Canned();
  not_run.name = "needs-xfs";
  const std::string md = FormatReport(CannedReport(ran, not_run));
  for (const char* want : {"testhost", "6.18.0", "Test CPU", "3.40.1", "LMDB 0.9.24",
                           "the databases' directory 2000/s", "xfs 4000/s"}) {
    EXPECT_TRUE(absl::StrContains(md, want)) << want << " missing from\n" << md;
  }
  // The figure's row: published, measured median with its rounds' range and the spread mark
  // (5 / 2 > 1.5), measured / published = 3 / 6, the parts with the floor beside them.
  EXPECT_TRUE(absl::StrContains(
      md, "| wal over delete | 6x | 3.00x (2.00-5.00) † | 0.50 | commits per sec 3000 (1.50x "
          "floor) / commits per sec 1000 (0.50x floor) | wal commits/s / delete commits/s | a "
          "sentence on why |"))
      << md;
  EXPECT_TRUE(absl::StrContains(md, "## canned")) << md;
  EXPECT_TRUE(absl::StrContains(md, "jkvbench --engines=sqlite --repeat=3")) << md;
  EXPECT_TRUE(absl::StrContains(md, "![canned/throughput_smalltxn.png](canned/throughput_smalltxn.png)"))
      << md;
  // The case table: the spread case's rate with its range and mark.
  EXPECT_TRUE(absl::StrContains(md, "| 3000 (2000-5000) † |")) << md;
  // The experiment that did not run says so, and why, under its own heading.
  const size_t heading = md.find("## needs-xfs");
  ASSERT_NE(heading, std::string::npos) << md;
  EXPECT_TRUE(absl::StrContains(md.substr(heading),
                                "**Not run:** it needs file systems made for the run"))
      << md;
  EXPECT_FALSE(absl::StrContains(md.substr(heading), "| wal over delete |")) << md;
}

TEST(ReproduceTest, SelectsByName) {
  absl::StatusOr<std::vector<const Experiment*>> all = SelectExperiments({"seeds"});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), Experiments().size());
  absl::StatusOr<std::vector<const Experiment*>> two = SelectExperiments({"mfaw", "suite-562"});
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0]->name, "suite-562");  // report order
  absl::StatusOr<std::vector<const Experiment*>> bad = SelectExperiments({"nosuch"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "nosuch"));
}

// Every experiment's runs parse at both sizes, and every figure's cases are among those its
// runs make: with every figure present in one round, each figure measures.
TEST(ReproduceTest, EveryFigureNamesACaseItsRunsMake) {
  for (const Experiment& e : Experiments()) {
    for (const bool quick : {true, false}) {
      std::vector<LabeledResult> results;
      for (const ExperimentRun& run : e.runs) {
        std::vector<std::string> flags = RunFlags(e, run, quick);
        for (std::string& flag : flags) {  // the shipped traces (this test's data)
          if (const size_t at = flag.find(kShippedTraces); at != std::string::npos) {
            absl::StatusOr<std::string> traces = ShippedTraces();
            ASSERT_TRUE(traces.ok()) << traces.status();
            flag.replace(at, std::string(kShippedTraces).size(), *traces);
          }
        }
        absl::StatusOr<BenchConfig> config = ParseFlags(flags);
        ASSERT_TRUE(config.ok()) << e.name << ": " << config.status();
        absl::StatusOr<std::vector<CaseSpec>> cases = ExpandCases(*config);
        ASSERT_TRUE(cases.ok()) << e.name << ": " << cases.status();
        for (const CaseSpec& spec : *cases) {
          CaseResult r;
          r.spec = spec;
          for (const RangedFigure& f : RangedFigures()) r.rounds[f.name] = {1.0};
          results.push_back({run.label, r});
        }
      }
      for (const Figure& f : e.figures) {
        const Measured m = Measure(f, results);
        EXPECT_TRUE(m.ok) << e.name << ": " << f.what << ": " << m.missing;
        EXPECT_GT(f.published_value, 0) << e.name << ": " << f.what;
        EXPECT_FALSE(f.why.empty()) << e.name << ": " << f.what;
      }
    }
  }
}

TEST(FiguresAsDataTest, MedianRoundKeepsEachFiguresRounds) {
  std::vector<CaseResult> rounds;
  for (const double rate : {300.0, 100.0, 200.0}) {
    CaseResult r = Case("journalkv", "wal", {rate});
    r.ops = r.commits = static_cast<uint64_t>(rate);
    r.rounds["p99_us"] = {rate / 10};
    rounds.push_back(r);
  }
  const CaseResult median = MedianRound(rounds);
  EXPECT_EQ(median.commits, 200u);
  EXPECT_EQ(median.repeats, 3);
  EXPECT_EQ(median.rounds.at("commits_per_sec"), (std::vector<double>{300, 100, 200}));
  const std::string json = JsonLine(median);
  EXPECT_TRUE(absl::StrContains(json, "\"commits_per_sec_min\":100,\"commits_per_sec_max\":300"))
      << json;
  EXPECT_TRUE(absl::StrContains(json, "\"p99_us_min\":10,\"p99_us_max\":30")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"spread\":\"commits_per_sec;p99_us\"")) << json;
}

}  // namespace
}  // namespace journalkv::bench
