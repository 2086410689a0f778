// The schedule explorer (tests/schedule_explorer.h) over connections that differ (issue 43).
// tests/wal_schedule_test.cc gives every connection one sync level and the same reader slots;
// the bugs this test was written for appear only when they differ. Three kinds of schedule, by
// seed (kind 4 + seed % 3), in WAL and WAL2, each in the world of tests/schedule_world.h (a bank
// whose accounts sum to a constant, every read transaction checked against the writers'
// version map, the index and, in WAL, the database file checked after every step):
//   4. overflow readers. The writer's connection has reader_slots = 0, checkpoints in the
//      background after every commit (async:0/B) and reads on a second thread at random times;
//      two reader connections with no slot either (one also writes half the commits, which
//      need none of the writer handle's locks); a checkpointer that in every other schedule
//      runs Db::Checkpoint on the first reader's handle, whose reader thread also reads at
//      random times. Every read pins under an overflow mark (wal/reader_pins.h M1..M5), and
//      the values are 900 bytes, one account a page, so that the one-page caches read them
//      from the files again and again. Half the schedules are PCT's, half hold a checkpoint
//      just past the point where it noted its own pin holder until a header is published
//      (kOwnMarkWindow). Finds a checkpoint that skips a mark another thread of its own handle
//      joined after it began (the lock test from the same descriptor never sees the caller's
//      own lock; issue 43's bug 4) as a torn snapshot.
//   5. full and off; 6. full and normal. Two writers, one at `full` (its handle reading on a
//      second thread at random times and, every other schedule, checkpointing in the
//      background, async:0/B at full) and one at `off` (5) or `normal` (6); a reader; a
//      checkpointer at `normal` (5) or at `full` or `extra` (6). On the fault-injecting file
//      system over the in-memory one; the power goes at a step drawn from the seed (World::Cut:
//      at the end, right after a drawn version is acknowledged at `full`, right after the first
//      `full` commit another connection's flush published, or anywhere), and then the database
//      must hold a state the writers committed whole, at or after the last commit acknowledged
//      at `full` (World::Final). Half the schedules of kind 5 hold a `full` commit between its
//      append and its wait for a flush until a flush has published (kOffFlushWindow). Kind 5
//      finds an `off` connection's group flush publishing, so acknowledging, `full` commits
//      with no sync (bug 2) as a durable commit lost; kind 6 a `full` or `extra` checkpoint
//      copying frames a `normal` writer published unsynced without the C1 log sync (bug 3),
//      and in WAL2 a `full` writer that switches logs after `normal` commits without V6's sync
//      of the log it leaves, as a torn state.
// A power loss after an `off` writer began the log's generation unsynced is not checked
// (World::CutPower says why) and is counted. The default tier runs 36 schedules a mode (12 of
// each kind), the long tier 1,500; docs/testing.md, "The schedule explorer", says how many
// schedules each kind took to find its bug. JKV_SCHEDULE_SEED=N replays one schedule of this
// test (two-writer schedules replay most times, not every time: the group flush's wait for
// more writers, WalConnection::WaitForAppenders, is bounded by the clock), JKV_SCHEDULES=N sets
// the number a mode, JKV_SCHEDULE_KINDS=45 keeps those kinds, and JKV_SCHEDULE_DROPS and
// JKV_SCHEDULE_COUNT work as in wal_schedule_test.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/schedule_explorer.h"
#include "tests/schedule_world.h"

namespace journalkv::testing {
namespace {

constexpr const char* kBackground = "async:0/1000000";  // a background step after every commit
// A power loss after up to this many polls of 1 to 64 steps lands anywhere in a schedule.
constexpr int kCutPolls = 80;

// Bug 4's window: a checkpoint held from its first lock attempt after its thread woke (the
// background checkpointer) or polled (the checkpointer's PASSIVE ones), just past the point
// where it noted its own pin holder, until a header is published (a commit, or a restart),
// while the rest of the order is drawn: a read of the same handle may begin meanwhile.
constexpr const char* kOwnMarkWindow =
    "idle/shm:lock>shm:write_header:b_written,wait:poll/shm:lock>shm:write_header:b_written";

// Bug 2's window: a full commit held between its append and its wait for a flush until a
// flush (the `off` writer's, when its commit comes first) has published.
constexpr const char* kOffFlushWindow = "await:start>flush:synced";

// Kind 4: overflow readers, the writer's own background checkpointer among them.
Outcome RunOverflow(JournalMode mode, uint64_t seed, bool whole_trace) {
  World world(mode, seed);
  // Every other schedule the checkpointer uses the first reader's handle, so that Db::Checkpoint
  // meets its own reader thread's mark too; else a connection of its own (with a slot).
  const bool shared_checkpointer = (seed / 3) % 2 == 1;
  world.set_pad(900);
  std::vector<std::unique_ptr<Db>> dbs;
  // The writer's handle with the smallest cache too: its reader thread reads the pages of the
  // database file that a checkpoint copied past its snapshot, not the versions it cached.
  dbs.push_back(world.Open({.cache_pages = 1, .policy = kBackground, .reader_slots = 0}));
  dbs.push_back(world.Open({.cache_pages = 1, .reader_slots = 0}));
  dbs.push_back(world.Open({.reader_slots = 0}));
  if (!shared_checkpointer) dbs.push_back(world.Open());
  if (world.failed() || !world.Create(*dbs[0])) return {.failure = world.failure()};
  Db *writer = dbs[0].get(), *reader = dbs[1].get(), *other = dbs[2].get();
  Db* checkpointer = shared_checkpointer ? reader : dbs[3].get();
  ScheduleOptions options;
  options.seed = seed;
  options.expected_decisions = 650;  // about 670 decision points a schedule
  if (whole_trace) options.trace_size = 1 << 20;
  options.adopt_threads = true;
  if ((seed / 6) % 2 == 1) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(kOwnMarkWindow, ',');
  }
  // Half the commits come from the second reader's connection: they need none of the writer
  // handle's locks, so they land while its background checkpoint is between its start and its
  // scan of the pins (the writer's own would wait for that checkpoint to restart the log).
  world.set_writers(2);
  return RunInWorld(world, options, shared_checkpointer ? "shared checkpointer" : "", dbs,
                    {
                        [&] { world.Writer(*writer, kCommits / 2); },
                        [&] { world.Writer(*other, kCommits / 2); },
                        // At random times, as the writer's reader thread: a read that
                        // begins while its own handle's checkpoint is under way.
                        [&] { world.Reader(*reader, kReads, /*polling=*/true); },
                        [&] { world.Reader(*other, kReads); },
                        [&] { world.Reader(*writer, kReads, /*polling=*/true); },
                        [&] { world.Checkpointer(*checkpointer); },
                    });
}

// Kinds 5 and 6: two writers at different sync levels, a checkpointer at a third, a power loss.
Outcome RunMixedSync(JournalMode mode, uint64_t seed, bool whole_trace) {
  World world(mode, seed, /*power_loss=*/true);
  const bool with_off = seed % 3 == 1;  // kind 5; else kind 6 (with normal)
  const SyncLevel second = with_off ? SyncLevel::kOff : SyncLevel::kNormal;
  const SyncLevel checkpointer_level = with_off              ? SyncLevel::kNormal
                                       : (seed / 3) % 2 == 1 ? SyncLevel::kExtra
                                                             : SyncLevel::kFull;
  const bool background = (seed / 6) % 2 == 1;
  std::vector<std::unique_ptr<Db>> dbs;
  // The full writer opens first: it creates the database (and syncs its directory).
  dbs.push_back(world.Open({.policy = background ? kBackground : "manual"}));
  dbs.push_back(world.Open({.sync = second}));
  dbs.push_back(world.Open({.cache_pages = 1}));
  dbs.push_back(world.Open({.sync = checkpointer_level}));
  if (world.failed() || !world.Create(*dbs[0])) return {.failure = world.failure()};
  Db *full = dbs[0].get(), *other = dbs[1].get(), *reader = dbs[2].get(),
     *checkpointer = dbs[3].get();
  ScheduleOptions options;
  options.seed = seed;
  options.expected_decisions = 400;  // about 390 decision points a schedule
  if (whole_trace) options.trace_size = 1 << 20;
  options.adopt_threads = background;
  if (with_off && (seed / 384) % 2 == 1) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(kOffFlushWindow, ',');
  }
  world.set_writers(2);
  // The power goes at a time drawn from the seed (World::Cut): once every body has ended;
  // right after a version drawn from 1 to kCommits is acknowledged at full; right after the
  // first commit at full that the other writer's flush published; or after up to kCutPolls
  // polls, anywhere in the schedule.
  World::Cut cut{.seed = seed};
  switch ((seed / 12) % 4) {
    case 0:
      break;
    case 1:
      cut.after_durable = 1 + static_cast<int>((seed / 48) % kCommits);
      break;
    case 2:
      cut.after_borrowed_flush = true;
      break;
    default:
      cut.polls = 1 + static_cast<int>((seed / 48) % kCutPolls);
  }
  world.set_cut(cut);
  return RunInWorld(
      world, options,
      absl::StrCat("second writer ", SyncLevelName(second), ", checkpointer ",
                   SyncLevelName(checkpointer_level), background ? ", background" : ""),
      dbs,
      {
          [&] { world.Writer(*full, kCommits / 2, SyncLevel::kFull); },
          [&] { world.Writer(*other, kCommits / 2, second); },
          [&] { world.Reader(*reader, kReads); },
          [&] { world.Reader(*full, kReads, /*polling=*/true); },
          [&] { world.Checkpointer(*checkpointer); },
      });
}

Outcome RunOne(JournalMode mode, uint64_t seed, bool whole_trace) {
  return seed % 3 == 0 ? RunOverflow(mode, seed, whole_trace)
                       : RunMixedSync(mode, seed, whole_trace);
}

class WalScheduleMixedTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(WalScheduleMixedTest, ConnectionsThatDifferReadWholeSnapshotsAndLoseNoDurableCommit) {
  RunSchedules(GetParam(), {.salt = "schedule-mixed",
                            .label = "mixed, ",
                            .first_kind = 4,
                            .kinds = 3,
                            .default_count = 36,
                            .sanitizer_count = 6,
                            .long_count = 1500,
                            .run_one = RunOne});
}

INSTANTIATE_TEST_SUITE_P(Modes, WalScheduleMixedTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return info.param == JournalMode::kWal2 ? "Wal2" : "Wal";
                         });

}  // namespace
}  // namespace journalkv::testing
