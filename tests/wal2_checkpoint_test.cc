// WAL2's checkpoints, through the public API: a checkpoint held in the middle of copying
// blocks neither the writer nor readers (where WAL's FULL and RESTART checkpoints hold the
// writer), and under a continuous writer with readers always active the two logs stay
// bounded where WAL's one log grows. The switching tests are in wal2_test.cc.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "wal/checkpoint_copy.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "wal/wal_connection.h"
#include "gtest/gtest.h"
#include "tests/wal2_testing.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

// The checkpoint hook: a checkpoint that reaches "copy" waits there until released.
std::atomic<bool> g_in_copy{false};
std::atomic<bool> g_release{false};
void HoldCopy(const char* point) {
  if (std::string(point) != "copy") return;
  g_in_copy = true;
  while (!g_release.load()) std::this_thread::yield();
}

struct HeldCheckpoint {
  HeldCheckpoint() {
    g_in_copy = false;
    g_release = false;
    wal::SetCheckpointHookForTesting(HoldCopy);
  }
  ~HeldCheckpoint() {
    g_release = true;
    if (thread.joinable()) thread.join();
    wal::SetCheckpointHookForTesting(nullptr);
  }
  void Start(Db* db, CheckpointMode mode) {
    thread = std::thread([db, mode, this] { result = db->Checkpoint(mode); });
    while (!g_in_copy.load()) std::this_thread::yield();
  }
  std::thread thread;
  absl::StatusOr<CheckpointResult> result;
};

TEST_F(Wal2Test, AHeldCheckpointBlocksNeitherTheWriterNorReadersInWal2) {
  Options o = ModeOptions(JournalMode::kWal2);
  o.wal2_switch_pages = 10;
  o.checkpoint_policy = "manual";
  o.busy_timeout = absl::Milliseconds(300);
  std::unique_ptr<Db> checkpointer = Open(o);
  std::unique_ptr<Db> db = Open(o);
  for (int i = 0; i < 15; ++i) ASSERT_THAT(db->Put(Wal2Key(i), "a"), IsOk());
  ASSERT_GE(db->Stats().log_switches, 1u);  // the first ten frames are in the other log now

  HeldCheckpoint held;
  held.Start(checkpointer.get(), CheckpointMode::kPassive);  // copying the non-current log
  const absl::Time start = absl::Now();
  for (int i = 0; i < 50; ++i) ASSERT_THAT(db->Put(Wal2Key(i), "b"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(3)));
  EXPECT_EQ(v, "b");
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(250));  // nobody waited for a timeout
  EXPECT_TRUE(g_in_copy.load());
  g_release = true;
  held.thread.join();
  ASSERT_THAT(held.result, IsOk());
  EXPECT_FALSE(held.result->blocked);
  EXPECT_GE(held.result->copied, 10u);
}

// Holds every checkpoint copy ("copy", before its first page write) in turn: the n-th waits
// until g_released_copies reaches n.
std::atomic<int> g_copies_reached{0};
std::atomic<int> g_released_copies{0};
void HoldEachCopy(const char* point) {
  if (std::string(point) != "copy") return;
  const int n = ++g_copies_reached;
  while (g_released_copies.load() < n) std::this_thread::yield();
}

Options HeldCheckpointOptions(vfs::FileSystem* fs) {
  Options o;
  o.journal_mode = JournalMode::kWal2;
  o.file_system = fs;
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 10;
  o.busy_timeout = absl::Milliseconds(400);
  return o;
}

// Fills both logs (15 commits of "before", ten in the non-current log), then runs `mode` on
// `checkpointer`, holding it at each of its two copies (the non-current log, then the log it
// switched from) while `db` commits five puts of "during" and reads. Returns the checkpoint's
// result; `during` counts the puts.
absl::StatusOr<CheckpointResult> CheckpointHeldAtEachCopy(Db* checkpointer, Db* db,
                                                          CheckpointMode mode, int* during) {
  for (int i = 0; i < 15; ++i) EXPECT_THAT(db->Put(Wal2Key(i), "before"), IsOk());
  EXPECT_GE(db->Stats().log_switches, 1u);
  EXPECT_GT(db->Stats().log_frames, 0u);
  EXPECT_GT(db->Stats().wal2_log_frames, 0u);
  g_copies_reached = 0;
  g_released_copies = 0;
  wal::SetCheckpointHookForTesting(HoldEachCopy);
  absl::StatusOr<CheckpointResult> result;
  std::thread t([&] { result = checkpointer->Checkpoint(mode); });
  *during = 0;
  for (int copy = 1; copy <= 2; ++copy) {
    SCOPED_TRACE(absl::StrCat("held at copy ", copy));
    const absl::Time wait_start = absl::Now();
    while (g_copies_reached.load() < copy && absl::Now() - wait_start < absl::Seconds(5)) {
      std::this_thread::yield();
    }
    EXPECT_EQ(g_copies_reached.load(), copy);
    const absl::Time start = absl::Now();
    for (int i = 0; i < 5; ++i, ++*during) {
      EXPECT_THAT(db->Put(Wal2Key(100 + *during), "during"), IsOk());
    }
    absl::StatusOr<std::optional<std::string>> v = db->Get(Wal2Key(3));
    EXPECT_THAT(v, IsOk());
    if (v.ok()) {
      EXPECT_EQ(*v, "before");
    }
    // A commit that waited for the writer role would wait for the copy: the busy timeout.
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
    g_released_copies = copy;
  }
  g_released_copies = 1000;
  t.join();
  wal::SetCheckpointHookForTesting(nullptr);
  return result;
}

// V4: WAL2's FULL, RESTART and TRUNCATE hold the writer only to switch logs. Held at each of
// its copies, the checkpoint lets the writer commit and readers read within a fraction of the
// busy timeout; once released it reports every commit made before it copied: the database
// file alone holds them. (Before V4 they held the writer for both copies: the first commit
// waited the busy timeout and failed "busy".)
TEST_F(Wal2Test, FullRestartAndTruncateBlockNeitherTheWriterNorReadersWhileTheyCopy) {
  for (CheckpointMode mode :
       {CheckpointMode::kFull, CheckpointMode::kRestart, CheckpointMode::kTruncate}) {
    SCOPED_TRACE(CheckpointModeName(mode));
    vfs::MemFileSystem fs;
    const Options o = HeldCheckpointOptions(&fs);
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> checkpointer, Db::Open(kWal2Path, o));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
    int during = 0;
    absl::StatusOr<CheckpointResult> result =
        CheckpointHeldAtEachCopy(checkpointer.get(), db.get(), mode, &during);
    ASSERT_THAT(result, IsOk());
    EXPECT_FALSE(result->blocked);
    EXPECT_GE(result->copied, 15u);
    EXPECT_EQ(result->restarted, mode != CheckpointMode::kFull);
    if (mode != CheckpointMode::kFull) {
      // The commits made during the checkpoint stay in the log the writer left; it goes on
      // from the start of the other (TRUNCATE: an empty file).
      const DbStats s = db->Stats();
      EXPECT_EQ(s.current_log == 0 ? s.log_frames : s.wal2_log_frames, 0u);
      if (mode == CheckpointMode::kTruncate) {
        JKV_ASSERT_OK_AND_ASSIGN(
            std::string log,
            vfs::ReadFileToString(fs, std::string(kWal2Path) + (s.current_log == 0 ? "-wal" : "-wal2")));
        EXPECT_EQ(log.size(), 0u);
      }
    }
    // The database file alone holds every commit made before the checkpoint.
    JKV_ASSERT_OK_AND_ASSIGN(std::string image, vfs::ReadFileToString(fs, kWal2Path));
    vfs::MemFileSystem copy;
    ASSERT_THAT(vfs::WriteStringToFile(copy, kWal2Path, image), IsOk());
    Options alone = o;
    alone.file_system = &copy;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> file_only, Db::Open(kWal2Path, alone));
    for (int i = 0; i < 15; ++i) {
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, file_only->Get(Wal2Key(i)));
      EXPECT_EQ(v, "before") << Wal2Key(i);
    }
    // And the database, with every commit.
    for (int i = 0; i < during; ++i) {
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(100 + i)));
      EXPECT_EQ(v, "during");
    }
    JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
    EXPECT_TRUE(check.ok());
  }
}

// Holds a WAL2 checkpoint between its last copy and its restart (hook "checkpoint:copied").
std::atomic<bool> g_at_copied{false};
std::atomic<bool> g_copied_release{false};
void HoldAtCopied(const char* point) {
  if (std::string(point) != "checkpoint:copied") return;
  g_at_copied = true;
  while (!g_copied_release.load()) std::this_thread::yield();
}

// A writer that switches logs by itself between the checkpoint's last copy and its restart
// has already started a log after every earlier commit was copied: RESTART reports it
// restarted, as its own switch would. (It reported `restarted` false, so under a busy writer
// wal_multiprocess_test saw no RESTART get through, under ASan.)
TEST_F(Wal2Test, AWritersOwnSwitchBeforeTheRestartCountsAsTheRestart) {
  Options o = ModeOptions(JournalMode::kWal2);
  o.wal2_switch_pages = 10;
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> checkpointer = Open(o);
  std::unique_ptr<Db> db = Open(o);
  for (int i = 0; i < 15; ++i) ASSERT_THAT(db->Put(Wal2Key(i), "a"), IsOk());
  g_at_copied = false;
  g_copied_release = false;
  wal::SetWalHookForTesting(HoldAtCopied);
  absl::StatusOr<CheckpointResult> r;
  std::thread t([&] { r = checkpointer->Checkpoint(CheckpointMode::kRestart); });
  while (!g_at_copied.load()) std::this_thread::yield();
  const uint64_t switches = db->Stats().log_switches;
  // Both logs are copied: ten commits fill the current log, and the next one switches.
  for (int i = 0; i < 12; ++i) ASSERT_THAT(db->Put(Wal2Key(100 + i), "b"), IsOk());
  EXPECT_GT(db->Stats().log_switches, switches) << "the writer did not switch by itself";
  g_copied_release = true;
  t.join();
  wal::SetWalHookForTesting(nullptr);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  EXPECT_TRUE(r->restarted);
  for (int i = 0; i < 12; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(100 + i)));
    EXPECT_EQ(v, "b");
  }
}

// The same, then a power loss: at FULL every commit survives, at NORMAL every commit made
// before the checkpoint (it synced them into the database file, C1 and C2) and a prefix of the
// ones made during it. The last phase's switch and TRUNCATE's unsynced cut of the log left
// behind (V4) among them.
TEST_F(Wal2Test, FullRestartAndTruncateWithCommitsDuringThemSurviveAPowerLoss) {
  for (SyncLevel sync : {SyncLevel::kFull, SyncLevel::kNormal}) {
    for (CheckpointMode mode :
         {CheckpointMode::kFull, CheckpointMode::kRestart, CheckpointMode::kTruncate}) {
      for (uint64_t seed = 0; seed < 8; ++seed) {
        SCOPED_TRACE(absl::StrCat(SyncLevelName(sync), " ", CheckpointModeName(mode), " seed ",
                                  seed));
        vfs::MemFileSystem mem;
        vfs::FaultInjectingFileSystem fs(&mem);
        Options o = HeldCheckpointOptions(&fs);
        o.sync = sync;
        int during = 0;
        {
          JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> checkpointer, Db::Open(kWal2Path, o));
          JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
          absl::StatusOr<CheckpointResult> result =
              CheckpointHeldAtEachCopy(checkpointer.get(), db.get(), mode, &during);
          ASSERT_THAT(result, IsOk());
          ASSERT_FALSE(result->blocked);
          fs.SimulateProcessCrash();  // the closes that follow touch nothing
        }
        ASSERT_THAT(fs.SimulatePowerLoss(seed), IsOk());
        Options reopen = o;
        reopen.file_system = &mem;
        JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, reopen));
        for (int i = 0; i < 15; ++i) {
          JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(i)));
          EXPECT_EQ(v, "before") << Wal2Key(i);
        }
        int survived = 0;
        while (survived < during) {
          JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(100 + survived)));
          if (!v.has_value()) break;
          EXPECT_EQ(v, "during");
          ++survived;
        }
        if (sync == SyncLevel::kFull) {
          EXPECT_EQ(survived, during);
        }
        for (int i = survived; i < during; ++i) {  // a prefix: nothing after a lost commit
          JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(100 + i)));
          EXPECT_EQ(v, std::nullopt) << Wal2Key(100 + i);
        }
        JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
        EXPECT_TRUE(check.ok());
      }
    }
  }
}

TEST_F(Wal2Test, TheSameHeldCheckpointBlocksTheWriterInWalFullAndRestart) {
  for (CheckpointMode mode : {CheckpointMode::kFull, CheckpointMode::kRestart}) {
    SCOPED_TRACE(CheckpointModeName(mode));
    vfs::MemFileSystem fs;
    Options o;
    o.journal_mode = JournalMode::kWal;
    o.file_system = &fs;
    o.checkpoint_policy = "manual";
    o.busy_timeout = absl::Milliseconds(200);
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> checkpointer, Db::Open(kWal2Path, o));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
    for (int i = 0; i < 15; ++i) ASSERT_THAT(db->Put(Wal2Key(i), "a"), IsOk());
    HeldCheckpoint held;
    held.Start(checkpointer.get(), mode);
    EXPECT_THAT(db->Put(Wal2Key(1), "b"), StatusIs(absl::StatusCode::kUnavailable, "busy"));
    // Readers still read (the committed state before the checkpoint).
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(1)));
    EXPECT_EQ(v, "a");
    g_release = true;
    held.thread.join();
    ASSERT_THAT(held.result, IsOk());
    ASSERT_THAT(db->Put(Wal2Key(1), "b"), IsOk());
  }
}

// One writer commits at a steady 2,000 commits a second while readers are always active: a
// new reader begins every 10 ms and each lives 20 ms, so one always began before the previous
// one ended. (A steady rate makes the run the same optimized and under sanitizers: WAL's log
// can restart only after a pause of the writer longer than a reader's life.) Returns the
// largest total log size (both files) seen, and its frames. Ends early once the log has held
// `until_frames` frames (0: never).
uint64_t LargestLogUnderReaders(Db* writer, Db* reader_db, absl::Duration length,
                                uint64_t* commits, uint32_t* largest_frames,
                                uint32_t until_frames = 0) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> committed{0};  // the writer's commits so far
  uint64_t largest = 0;
  *largest_frames = 0;
  struct Pinned {
    absl::Time began;
    uint64_t commits_after;  // the writer's commits once the snapshot had been read
    std::unique_ptr<ReadTransaction> txn;
  };
  std::thread readers([&] {
    std::vector<Pinned> open;
    while (!stop.load()) {
      absl::StatusOr<std::unique_ptr<ReadTransaction>> next = reader_db->BeginRead();
      ASSERT_THAT(next, IsOk());
      ASSERT_THAT((*next)->Get(Wal2Key(7)), IsOk());
      const uint64_t after = committed.load();
      open.push_back({absl::Now(), after, std::move(*next)});
      // A reader 20 ms old goes only once the next one is behind the log's end (a commit has
      // come after its snapshot, which holds at most commits_after + 1 commits: the writer
      // counts one just after it is visible), so the oldest open snapshot always lacks a
      // frame: the log is never copied to its end, so it never restarts. A loaded machine
      // that descheduled the writer for 20 ms used to let every reader catch up with the end
      // and the log restarted (CI under TSan: 2,965 frames in 96,748 commits). The newest one
      // stays open even when already 20 ms old (CI once emptied the vector here).
      while (open.size() > 1 && absl::Now() - open.front().began >= absl::Milliseconds(20) &&
             open[1].commits_after + 1 < committed.load()) {
        open.erase(open.begin());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const absl::Time start = absl::Now();
  uint64_t n = 0;
  while (absl::Now() < start + length && (until_frames == 0 || *largest_frames < until_frames)) {
    EXPECT_THAT(writer->Put(Wal2Key(static_cast<int>(n % 500)), std::string(200, 'v')), IsOk());
    ++n;
    committed.store(n);
    const DbStats s = writer->Stats();
    largest = std::max<uint64_t>(largest, s.log_bytes);
    *largest_frames = std::max(*largest_frames, s.log_frames);
    const absl::Time next = start + absl::Microseconds(500) * static_cast<int64_t>(n);
    if (next > absl::Now()) absl::SleepFor(next - absl::Now());
  }
  stop = true;
  readers.join();
  *commits = n;
  return largest;
}

TEST_F(Wal2Test, UnderAContinuousWriterAndReadersTheTwoLogsStayBoundedWhereWalGrows) {
  const absl::Duration length = absl::Seconds(10);
  constexpr uint32_t kSwitch = 200;
  // The current log grows past kSwitch while the other one waits for the readers that began
  // before the switch (20 ms: about 40 commits) and for its copy: 1,000 frames is five times
  // kSwitch. A log file is preallocated in doubling steps from 1 MiB (wal_log.h): 1,000 frames
  // of 4 KiB pages fit in 8 MiB, so the two files stay within 16 MiB together.
  constexpr uint32_t kFrameBound = 1000;
  constexpr uint64_t kBound = uint64_t{16} << 20;
  uint64_t wal2_commits = 0;
  uint32_t wal2_frames = 0;
  uint64_t wal2_largest = 0;
  {
    Options o = ModeOptions(JournalMode::kWal2);
    o.wal2_switch_pages = kSwitch;
    o.checkpoint_policy = "threshold:100";
    o.sync = SyncLevel::kNormal;
    std::unique_ptr<Db> writer = Open(o);
    std::unique_ptr<Db> reader_db = Open(o);
    wal2_largest = LargestLogUnderReaders(writer.get(), reader_db.get(), length, &wal2_commits,
                                          &wal2_frames);
    EXPECT_GT(writer->Stats().log_switches, 10u);
  }
  ASSERT_THAT(fs_.Delete(kWal2Path), IsOk());
  uint64_t wal_commits = 0;
  uint32_t wal_frames = 0;
  uint64_t wal_largest = 0;
  {
    Options o = ModeOptions(JournalMode::kWal);
    o.checkpoint_policy = "threshold:100";
    o.sync = SyncLevel::kNormal;
    std::unique_ptr<Db> writer = Open(o);
    std::unique_ptr<Db> reader_db = Open(o);
    // Until the log has grown well past WAL2's bound, for up to 60 s: on a loaded machine the
    // reader thread may miss its turn, and a log with no reader pinned restarts, so a fixed
    // 10 s may not get there (TSan beside another build: 3,044 frames in 4,507 commits).
    wal_largest = LargestLogUnderReaders(writer.get(), reader_db.get(), absl::Seconds(60),
                                         &wal_commits, &wal_frames, 10 * kFrameBound + 1);
  }
  std::printf("wal2: %llu commits, largest logs %u frames, %llu bytes; wal: %llu commits, "
              "largest log %u frames, %llu bytes\n",
              static_cast<unsigned long long>(wal2_commits), wal2_frames,
              static_cast<unsigned long long>(wal2_largest),
              static_cast<unsigned long long>(wal_commits), wal_frames,
              static_cast<unsigned long long>(wal_largest));
  EXPECT_GT(wal2_commits, 10u * kSwitch);  // enough commits to fill many logs
  EXPECT_LE(wal2_frames, kFrameBound);
  EXPECT_LE(wal2_largest, kBound);
  // WAL's one log never restarts while readers pin it: it holds (nearly) every commit.
  EXPECT_GT(wal_frames, 10 * kFrameBound);
  EXPECT_GT(wal_largest, kBound);
}


// async:N/B bounds both logs in WAL2 even when the background checkpointer does not get to run
// (a loaded machine may not schedule it for a whole burst of commits): once the two logs hold B
// frames and the non-current one has frames to copy, a commit waits for that copy (up to the
// busy timeout), since only the copy lets the writer switch. Blocking used to count the
// non-current log alone, which never holds much more than wal2_switch_pages frames: with B
// above that, no commit ever waited and the current log grew without bound (seen in
// wal_policy_crash_test: 950 frames under async:4/24 at wal2_switch_pages 16).
std::mutex copy_gate_mu;
std::condition_variable copy_gate_cv;
bool copy_gate_closed = false;
int copies_held = 0;
void HoldCopies(const char* point) {
  if (std::string(point) != "copy") return;
  std::unique_lock<std::mutex> lock(copy_gate_mu);
  if (copy_gate_closed) ++copies_held;
  copy_gate_cv.wait(lock, [] { return !copy_gate_closed; });
}

TEST_F(Wal2Test, AsyncBlocksTheWriterAtBFramesOfBothLogsWhenTheCheckpointerCannotRun) {
  Options o = ModeOptions(JournalMode::kWal2);
  o.wal2_switch_pages = 16;
  o.checkpoint_policy = "async:4/24";
  o.busy_timeout = absl::Milliseconds(20);
  std::unique_ptr<Db> db = Open(o);
  {
    std::lock_guard<std::mutex> lock(copy_gate_mu);
    copy_gate_closed = true;
    copies_held = 0;
  }
  wal::SetCheckpointHookForTesting(&HoldCopies);
  for (int i = 0; i < 60; ++i) ASSERT_THAT(db->Put(Wal2Key(i % 50), absl::StrCat(i)), IsOk());
  const DbStats held = db->Stats();
  {
    std::lock_guard<std::mutex> lock(copy_gate_mu);
    copy_gate_closed = false;
    EXPECT_GE(copies_held, 1) << "the background checkpointer never reached its copy";
  }
  copy_gate_cv.notify_all();
  // The checkpointer is held: every commit past B frames waits out the busy timeout.
  std::printf("checkpointer held: %llu commits blocked (%llu timed out), logs %u + %u frames\n",
              static_cast<unsigned long long>(held.blocked_commits),
              static_cast<unsigned long long>(held.blocked_timeouts), held.log_frames,
              held.wal2_log_frames);
  EXPECT_GT(held.blocked_commits, 20u);
  EXPECT_EQ(held.blocked_timeouts, held.blocked_commits);
  // Released, the checkpointer copies while the writer waits, the writer switches, and the
  // logs come back under B plus a switch's worth. Eventually, not within a fixed count of
  // commits: a switch takes the CKPT lock without waiting (V3), and on a loaded machine the
  // background thread may be descheduled holding it through many commits of the in-memory
  // files (CI saw 200 commits and no switch); the writer then appends to the current log, as
  // it should, and switches at a later commit.
  DbStats after;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  for (int i = 0;; ++i) {
    ASSERT_THAT(db->Put(Wal2Key(i % 50), absl::StrCat("r", i)), IsOk());
    after = db->Stats();
    if (i >= 200 && after.log_switches > held.log_switches + 5 &&
        after.log_frames + after.wal2_log_frames <= 24u + 16u + 4u) {
      break;
    }
    if (absl::Now() > deadline) break;
    if (i % 50 == 49) absl::SleepFor(absl::Milliseconds(1));  // let the checkpointer run
  }
  wal::SetCheckpointHookForTesting(nullptr);
  EXPECT_GT(after.log_switches, held.log_switches + 5);
  EXPECT_LE(after.log_frames + after.wal2_log_frames, 24u + 16u + 4u);
}

}  // namespace
}  // namespace journalkv
