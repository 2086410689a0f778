// The schedule explorer (tests/schedule_explorer.h) over WAL and WAL2: a writer, two readers on
// their own connections, a reader thread of the writer's own connection (at random times) and
// a checkpointer (PASSIVE, FULL, RESTART, TRUNCATE in turn, PASSIVE ones at random times
// between them), and in every other schedule the writer connection's background checkpointer
// (async:0/B, deferring its copies; the schedule adopts its thread), run over the in-memory
// file system, one at a time between two hook points, in an order drawn from a seed. Every
// connection here has the same sync level (full) and reader slots; the kinds that make them
// differ (overflow readers, writers at full and off or normal, a power loss) are
// tests/wal_schedule_mixed_test.cc's. The bank, its threads and the checks are
// tests/schedule_world.h's. Checked:
//   - every read transaction sees one committed state: the accounts sum to the bank's total,
//     and they are exactly what the writer committed at the version the transaction read (a
//     version map kept by the writer), read twice within the transaction;
//   - after every step, the published index is sane (the backfill is within the published
//     log, what a checkpoint copied is within what it may have written, a generation's
//     published end never moves back) and, in WAL, the database file keeps the backfill's
//     promise (World::FileCheck);
//   - at the end, after a final checkpoint and a reopen, the last acknowledged commit is there
//     and Check() passes; no schedule deadlocks (the controller aborts with the trace).
// A failing schedule prints its seed and its last steps; --test_env=JKV_SCHEDULE_SEED=N
// replays exactly that one. The default tier runs a few dozen schedules a mode, each from a
// seed drawn from the run seed (new each run, printed); the long tier runs thousands
// (JKV_SCHEDULES=N: N a mode). Four kinds of schedule (RunOne), 0 to 3; JKV_SCHEDULE_KINDS=012
// keeps those kinds only, JKV_SCHEDULE_DROPS=a,b>c,p/d>e gives every schedule those drops and
// holds, to look at one window (kKnownWindows lists the windows of the races found so far),
// and JKV_SCHEDULE_COUNT=a,b prints how often each schedule reached those points.
// docs/testing.md, "The schedule explorer", says what it finds with each fix undone.
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "absl/strings/str_split.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/schedule_explorer.h"
#include "tests/schedule_world.h"

namespace journalkv::testing {
namespace {

// The windows of the races the explorer has found (with their fixes undone), as drops and
// holds ("a>b": a thread at a sits out until another reaches b; ScheduleOptions::drop_names).
// Measured with each fix undone by hand (docs/testing.md, "The schedule explorer").
struct KnownWindow {
  const char* race;
  const char* drops;
  bool background;  // needs the writer connection's background checkpointer
  bool tearing;     // World::set_tearing
};
constexpr KnownWindow kKnownWindows[] = {
    // Race 1: a reader between its header read and its pin while a restart stops between its
    // clear and its publish.
    {"restart publishing late", "begin_read:header,restart:midway,read:frame", false, false},
    // Race 2: a reader that read the header before a commit pins after the writer
    // connection's background copy of it, which waits unpublished until another
    // connection's checkpoint has run (and the reader re-checks only after that publishes).
    {"deferred copy overwritten",
     "begin_read:header>background:stepped,background:stepped>copy,"
     "begin_read:pinned>shm:set_backfill",
     true, false},
    // Race 3: a reader thread of the writer's own handle meets the header torn while the
    // writer holds WRITE between its index appends and its publish (the handle's mutex keeps
    // it out of the publish itself), and must not repair it under the writer's lock.
    {"own handle's reader repairing under its writer", "commit:appended>begin_read:done", false,
     true},
};

Outcome RunOne(JournalMode mode, uint64_t seed, bool whole_trace) {
  World world(mode, seed);
  // Four kinds of schedule, by seed: PCT change points at any store or named step, PCT
  // change points at the named steps only, drops at three protocol steps drawn by name, and
  // the windows of the races found so far (kKnownWindows: their drops and holds, the rest of
  // the order drawn), so that a change that reopens one is found in the default tier.
  const int kind = static_cast<int>(seed % 4);
  const KnownWindow& window = kKnownWindows[(seed / 4) % std::size(kKnownWindows)];
  // Every other schedule of the first three kinds, and wherever a known window needs it, the
  // writer's connection checkpoints in the background after every commit (async:0/B at sync
  // FULL: its copies are deferred, unpublished, C3), a thread the schedule adopts: the
  // background checkpointer beside another connection's checkpoints (race 2).
  const bool background = kind == 3 ? window.background : (seed / 4) % 2 == 1;
  world.set_tearing(kind == 3 && window.tearing);  // before the opens: it sets their timeout
  // One reader with the smallest page cache (16 pages, one a shard; the pager keeps at least
  // that many): it reads most pages from the log or the database file, where a torn snapshot
  // shows (a cached page of its generation would not).
  std::vector<std::unique_ptr<Db>> dbs;
  dbs.push_back(world.Open({.policy = background ? "async:0/1000000" : "manual"}));
  dbs.push_back(world.Open({.cache_pages = 1}));
  dbs.push_back(world.Open());
  dbs.push_back(world.Open());
  Db *writer = dbs[0].get(), *reader = dbs[1].get(), *other = dbs[2].get(),
     *checkpointer = dbs[3].get();
  if (!world.failed() && !world.Create(*writer)) {
    Outcome out;
    out.failure = world.failed() ? world.failure() : "could not create the database";
    return out;
  }
  if (world.failed()) return {.failure = world.failure()};
  ScheduleOptions options;
  options.seed = seed;
  // The change points span a run's decision points (about 240 a run at every store, 80 at the
  // named steps; fixed, so that a seed alone replays its schedule).
  options.expected_decisions = kind == 0 ? 250 : 80;
  if (whole_trace) options.trace_size = 1 << 20;
  options.every_store_decides = kind == 0;
  if (kind == 2) {
    options.change_points = 0;
    options.drop_points = 3;
  } else if (kind == 3) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(window.drops, ',');
  }
  options.adopt_threads = background;
  return RunInWorld(world, options, background ? "background" : "", dbs,
                    {
                        [&] { world.Writer(*writer); },
                        [&] { world.Reader(*reader, kReads); },
                        [&] { world.Reader(*other, kReads); },
                        // A reader thread of the writer's handle, at random times.
                        [&] { world.Reader(*writer, kReads, /*polling=*/true); },
                        [&] { world.Checkpointer(*checkpointer); },
                    });
}

class WalScheduleTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(WalScheduleTest, EveryScheduleReadsWholeSnapshotsAndLosesNoCommit) {
  RunSchedules(GetParam(), {.salt = "schedule",
                            .label = "",
                            .first_kind = 0,
                            .kinds = 4,
                            .default_count = 40,
                            .sanitizer_count = 10,
                            .long_count = 2000,
                            .run_one = RunOne});
}

INSTANTIATE_TEST_SUITE_P(Modes, WalScheduleTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return info.param == JournalMode::kWal2 ? "Wal2" : "Wal";
                         });

}  // namespace
}  // namespace journalkv::testing
