// Replay fidelity (bench/trace_replay.h): a trace recorded from a journalkv run through the C++
// API (several threads, values kept) and one recorded from `jkv shell` replay on journalkv in
// every mode, SQLite and LMDB with the recorded run's final database content, and with
// replayed operation counts equal to the recorded ones. Also: --pace=recorded keeps the idle
// gaps, a damaged trace or one a Session cannot replay is refused before anything runs, and
// jkvbench's --trace makes one workload per file.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "bench/bench_config.h"
#include "bench/engine_adapter.h"
#include "bench/harness.h"
#include "bench/trace_replay.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::bench {
namespace {

using Content = std::map<std::string, std::string>;

std::string Tmp(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Content DbContent(Db& db) {
  Content c;
  auto r = db.BeginRead();
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE((*r)
                  ->Scan("", UINT64_MAX,
                         [&](absl::string_view k, absl::string_view v) {
                           c.emplace(std::string(k), std::string(v));
                           return true;
                         })
                  .ok());
  return c;
}

// A recorded run: 3 threads, each its own keys and a shared hot set (overwrites from
// several threads: the replay must keep their commit order), autocommit and transactions,
// deletes, rollbacks, read transactions, scans and a checkpoint.
struct Recorded {
  std::string trace;
  Content content;
};

Recorded RecordRun(TraceValues values) {
  const std::string dir = Tmp(absl::StrCat("record-", TraceValuesName(values)));
  Recorded rec;
  rec.trace = dir + "/run.jkvtrace";
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kOff;
  o.record_path = rec.trace;
  o.record_values = values;
  o.record_seed = 11;
  auto db = Db::Open(dir + "/run.db", o);
  EXPECT_TRUE(db.ok()) << db.status();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      Db& d = **db;
      for (int i = 0; i < 40; ++i) {
        const std::string own = absl::StrCat("t", t, "/", i);
        const std::string hot = absl::StrCat("hot/", i % 5);
        JKV_ASSERT_OK(d.Put(own, std::string(10 + i, 'a' + t)));
        if (i % 4 == 0) {
          auto w = d.BeginWrite();
          JKV_ASSERT_OK(w.status());
          JKV_ASSERT_OK((*w)->Put(hot, absl::StrCat("from ", t, " at ", i)));
          JKV_ASSERT_OK((*w)->Get(own).status());
          if (i % 8 == 0) {
            JKV_ASSERT_OK((*w)->Delete(absl::StrCat("t", t, "/", i / 2)).status());
          }
          JKV_ASSERT_OK((*w)->Scan("hot/", 3, [](auto, auto) { return true; }).status());
          JKV_ASSERT_OK(i % 12 == 0 ? (*w)->Rollback() : (*w)->Commit());
        }
        if (i % 5 == 0) {
          auto r = d.BeginRead();
          JKV_ASSERT_OK(r.status());
          JKV_ASSERT_OK((*r)->Get(hot).status());
          IteratorOptions bounds;
          bounds.lower_bound = absl::StrCat("t", t, "/");
          bounds.upper_bound = absl::StrCat("t", t, "0");
          JKV_ASSERT_OK((*r)->Scan("", 7, [](auto, auto) { return true; }, bounds).status());
        }
        if (i == 20 && t == 0) {
          JKV_ASSERT_OK(d.Checkpoint(CheckpointMode::kPassive).status());
        }
        JKV_ASSERT_OK(d.Delete(absl::StrCat("t", t, "/", i - 3)).status());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  rec.content = DbContent(**db);
  JKV_EXPECT_OK((*db)->Close());
  return rec;
}

std::array<uint64_t, kNumTraceKinds> RecordedCounts(const Trace& t) {
  std::array<uint64_t, kNumTraceKinds> counts{};
  for (const TraceRecord& r : t.records) ++counts[static_cast<int>(r.kind) - 1];
  return counts;
}

struct ModeCase {
  const EngineInfo* engine;
  std::string mode;
  std::string sync;
};

// journalkv in every mode (delete truncate persist memory off wal wal2; atomic needs a file
// system of its own), SQLite's and LMDB's, each at the first sync level it runs at of off, full.
std::vector<ModeCase> EveryMode() {
  std::vector<ModeCase> cases;
  for (const EngineInfo& e : Engines()) {
    for (const ModeInfo& m : e.modes) {
      if (!m.file_systems.empty()) continue;
      for (const char* sync : {"off", "full"}) {
        if (e.runs_at(m.name, sync)) {
          cases.push_back({&e, m.name, sync});
          break;
        }
      }
    }
  }
  return cases;
}

absl::StatusOr<Content> ReplayOn(const ModeCase& mc, const Trace& trace, ReplayStats* stats,
                                 bool recorded_pace = false) {
  const std::string dir = Tmp(absl::StrCat("replay-", mc.engine->name, "-", mc.mode));
  CaseConfig config;
  config.mode = mc.mode;
  config.sync = mc.sync;
  config.expected_bytes = 64 << 20;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<EngineAdapter> adapter, mc.engine->open(dir, config));
  ReplayOptions options;
  options.recorded_pace = recorded_pace;
  JKV_ASSIGN_OR_RETURN(*stats, ReplayTrace(*adapter, trace, options));
  Content content;
  {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, adapter->NewSession());
    JKV_RETURN_IF_ERROR(s->Scan("", UINT64_MAX, [&](absl::string_view k, absl::string_view v) {
                           content.emplace(std::string(k), std::string(v));
                         }).status());
  }
  JKV_RETURN_IF_ERROR(adapter->Close());
  return content;
}

TEST(TraceReplayTest, ApiRecordingReplaysWithTheSameContentOnEveryEngineAndMode) {
  const Recorded rec = RecordRun(TraceValues::kKeep);
  JKV_ASSERT_OK_AND_ASSIGN(LoadedTrace t, LoadTrace(rec.trace));
  EXPECT_EQ(t.workload, "trace:run");
  EXPECT_EQ(t.trace->threads, 4u);  // the 3 writers and the thread that read the content
  ASSERT_EQ(rec.content.size(), 14u);  // each thread's last 3 keys, the 5 hot ones
  const auto counts = RecordedCounts(*t.trace);
  for (TraceKind k : {TraceKind::kRollback, TraceKind::kScan, TraceKind::kCheckpoint,
                      TraceKind::kDelete, TraceKind::kBeginRead}) {
    ASSERT_GT(counts[static_cast<int>(k) - 1], 0u) << TraceKindName(k);
  }
  const std::vector<ModeCase> modes = EveryMode();
  ASSERT_GE(modes.size(), 9u);  // 7 journalkv modes, SQLite's, LMDB's
  for (const ModeCase& mc : modes) {
    SCOPED_TRACE(absl::StrCat(mc.engine->name, "/", mc.mode));
    ReplayStats stats;
    JKV_ASSERT_OK_AND_ASSIGN(Content content, ReplayOn(mc, *t.trace, &stats));
    EXPECT_EQ(content, rec.content);
    EXPECT_EQ(stats.ops, counts);
    EXPECT_EQ(stats.total_ops, t.trace->records.size());
    EXPECT_EQ(stats.commits, counts[static_cast<int>(TraceKind::kCommit) - 1]);
  }
}

TEST(TraceReplayTest, SyntheticRecordingReplaysTheSameShape) {
  const Recorded rec = RecordRun(TraceValues::kSynthetic);
  JKV_ASSERT_OK_AND_ASSIGN(LoadedTrace t, LoadTrace(rec.trace));
  // The same keys under the synthetic mapping, with values of the same lengths.
  Content expected;
  for (const auto& [k, v] : rec.content) expected[SyntheticKey(k, 11)] = v;
  ReplayStats stats;
  const ModeCase mc{FindEngine("journalkv"), "wal", "off"};
  JKV_ASSERT_OK_AND_ASSIGN(Content content, ReplayOn(mc, *t.trace, &stats));
  ASSERT_EQ(content.size(), expected.size());
  for (const auto& [k, v] : content) {
    auto it = expected.find(k);
    ASSERT_NE(it, expected.end());
    EXPECT_EQ(v.size(), it->second.size());
    EXPECT_NE(v, it->second);
  }
  EXPECT_EQ(stats.ops, RecordedCounts(*t.trace));
}

TEST(TraceReplayTest, ShellRecordingReplaysOnEveryEngineAndMode) {
  const std::string dir = Tmp("shell");
  const std::string script = dir + "/script";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("put a 1\nput b 2\nbegin\nput c 3\ndel a\nput d 4\ncommit\nbegin\nput e 5\n"
               "rollback\nbegin read\nget b\nscan a z 2\ncommit\ndel zz\nput b 22\ncount\n"
               "checkpoint\n",
               f);
    std::fclose(f);
  }
  const std::string trace = dir + "/shell.jkvtrace";
  const std::string cmd = absl::StrCat("tools/jkv --record=", trace, " --record-values=keep ",
                                       dir, "/x.db shell < ", script, " > ", dir, "/out");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  JKV_ASSERT_OK_AND_ASSIGN(LoadedTrace t, LoadTrace(trace));
  const Content recorded = {{"b", "22"}, {"c", "3"}, {"d", "4"}};
  for (const ModeCase& mc : EveryMode()) {
    SCOPED_TRACE(absl::StrCat(mc.engine->name, "/", mc.mode));
    ReplayStats stats;
    JKV_ASSERT_OK_AND_ASSIGN(Content content, ReplayOn(mc, *t.trace, &stats));
    EXPECT_EQ(content, recorded);
    EXPECT_EQ(stats.ops, RecordedCounts(*t.trace));
  }
}

TEST(TraceReplayTest, RecordedPaceKeepsTheIdleGaps) {
  const std::string dir = Tmp("pace");
  const std::string path = dir + "/gaps.jkvtrace";
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto w, TraceWriter::Create(path, TraceValues::kKeep, 1));
    for (int i = 0; i < 3; ++i) {
      w->BeginWrite();
      w->Put(absl::StrCat("k", i), "v");
      w->Commit();
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    w->Get("k0");
    JKV_ASSERT_OK(w->Close());
  }
  JKV_ASSERT_OK_AND_ASSIGN(LoadedTrace t, LoadTrace(path));
  const uint64_t recorded_us = t.trace->records.back().time_us;
  ASSERT_GE(recorded_us, 120000u);
  const ModeCase mc{FindEngine("journalkv"), "wal", "off"};
  ReplayStats stats;
  JKV_ASSERT_OK_AND_ASSIGN(Content content, ReplayOn(mc, *t.trace, &stats, true));
  EXPECT_GE(stats.seconds * 1e6, static_cast<double>(recorded_us));  // never earlier
  EXPECT_EQ(content.size(), 3u);
}

TEST(TraceReplayTest, RefusesDamagedOrUnreplayableTracesBeforeRunning) {
  const std::string dir = Tmp("refuse");
  const std::string path = dir + "/bad.jkvtrace";
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto w, TraceWriter::Create(path, TraceValues::kKeep, 1));
    w->BeginRead();
    w->Put("k", "v");  // a put in a read transaction
    w->EndRead();
    JKV_ASSERT_OK(w->Close());
  }
  JKV_ASSERT_OK_AND_ASSIGN(Trace raw, ReadTrace(path));  // the format is sound
  EXPECT_THAT(LoadTrace(path).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                absl::StrCat("trace ", path, ": record at offset ",
                                             raw.records[1].offset, " "
                                             "(put, thread 0) cannot be replayed: no "
                                             "write transaction is open")));
  // Damaged: jkvbench's flags fail naming the offset, before any case.
  const std::string damaged = dir + "/damaged.jkvtrace";
  std::filesystem::copy_file(path, damaged);
  std::FILE* f = std::fopen(damaged.c_str(), "r+");
  std::fseek(f, 30, SEEK_SET);
  std::fputc('X', f);
  std::fclose(f);
  absl::StatusOr<BenchConfig> config = ParseFlags({"--trace=" + damaged});
  EXPECT_THAT(config.status(),
              testing::StatusIs(absl::StatusCode::kDataLoss,
                                "damaged block (checksum mismatch) at offset 16"));
}

// The traces shipped in bench/traces/ (bench/make_traces.cc): sound, small, replayable.
TEST(TraceReplayTest, ShippedTracesLoadAndReplay) {
  for (const char* name : {"test-results", "chat", "kv-cache"}) {
    SCOPED_TRACE(name);
    const std::string path = absl::StrCat("bench/traces/", name, ".jkvtrace");
    EXPECT_LT(std::filesystem::file_size(path), 1u << 20);
    JKV_ASSERT_OK_AND_ASSIGN(LoadedTrace t, LoadTrace(path));
    EXPECT_EQ(t.workload, absl::StrCat("trace:", name));
    EXPECT_EQ(t.trace->values, TraceValues::kSynthetic);
    ReplayStats stats;
    const ModeCase mc{FindEngine("journalkv"), "wal", "off"};
    JKV_ASSERT_OK_AND_ASSIGN(Content content, ReplayOn(mc, *t.trace, &stats));
    EXPECT_EQ(stats.ops, RecordedCounts(*t.trace));
    EXPECT_FALSE(content.empty());
  }
}

TEST(TraceReplayTest, TraceFlagAddsOneWorkloadPerFile) {
  const Recorded rec = RecordRun(TraceValues::kKeep);
  JKV_ASSERT_OK_AND_ASSIGN(BenchConfig c, ParseFlags({"--trace=" + rec.trace, "--pace=recorded"}));
  EXPECT_EQ(c.workloads, std::vector<std::string>{"trace:run"});
  EXPECT_TRUE(c.params.pace_recorded);
  JKV_ASSERT_OK_AND_ASSIGN(c, ParseFlags({"--trace=" + rec.trace, "--workloads=smalltxn"}));
  EXPECT_EQ(c.workloads, (std::vector<std::string>{"smalltxn", "trace:run"}));
  JKV_ASSERT_OK_AND_ASSIGN(std::vector<CaseSpec> cases, ExpandCases(c));
  int traced = 0;
  for (const CaseSpec& s : cases) traced += s.workload == "trace:run";
  EXPECT_GE(traced, 9);
  EXPECT_THAT(ParseFlags({"--pace=slow"}).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, "--pace"));
}

}  // namespace
}  // namespace journalkv::bench
