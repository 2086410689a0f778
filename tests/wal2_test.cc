// What WAL2 adds over WAL, through the public API: the writer switches between the two logs,
// keeps readers' snapshots across switches, recovers logs left by a crash in order, and (V6)
// flushes the old log's tail before the new log's frames can outlive it. The held-checkpoint
// and bounded-logs tests are in wal2_checkpoint_test.cc. The suites WAL2 shares with WAL
// (wal_test, the crash sweeps, the multi-process tests) run over both modes.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
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

TEST_F(Wal2Test, TheWriterSwitchesLogsAndEveryCommitSurvives) {
  Options o = ModeOptions(JournalMode::kWal2);
  o.wal2_switch_pages = 20;
  o.checkpoint_policy = "threshold:10";
  {
    std::unique_ptr<Db> db = Open(o);
    for (int i = 0; i < 300; ++i) ASSERT_THAT(db->Put(Wal2Key(i), absl::StrCat("v", i)), IsOk());
    const DbStats s = db->Stats();
    EXPECT_TRUE(s.wal2);
    EXPECT_GE(s.log_switches, 10u);  // 300 one-frame commits, a switch every ~20
    EXPECT_LE(s.log_frames, 2u * (20 + 2));
    EXPECT_TRUE(Exists(std::string(kWal2Path) + "-wal"));
    EXPECT_TRUE(Exists(std::string(kWal2Path) + "-wal2"));
    EXPECT_EQ(db->options().journal_mode, JournalMode::kWal2);
  }
  // The last close copies both logs back and removes them with the index.
  EXPECT_FALSE(Exists(std::string(kWal2Path) + "-wal"));
  EXPECT_FALSE(Exists(std::string(kWal2Path) + "-wal2"));
  EXPECT_FALSE(Exists(std::string(kWal2Path) + "-shm"));
  Options reopen;
  reopen.file_system = &fs_;  // no mode: the database's own family, wal2
  std::unique_ptr<Db> db = Open(reopen);
  EXPECT_EQ(db->options().journal_mode, JournalMode::kWal2);
  for (int i = 0; i < 300; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(i)));
    EXPECT_EQ(v, absl::StrCat("v", i));
  }
}

// A policy threshold above wal2_switch_pages still fires: it counts both logs (the
// non-current one alone never reaches it, so it would never be copied and the writer never
// switch again, and the current log would grow without bound).
TEST_F(Wal2Test, AThresholdAboveTheSwitchSizeStillKeepsTheLogsBounded) {
  for (const char* policy : {"threshold:40", "async:40/1000"}) {
    SCOPED_TRACE(policy);
    vfs::MemFileSystem fs;
    Options o;
    o.file_system = &fs;
    o.journal_mode = JournalMode::kWal2;
    o.wal2_switch_pages = 8;
    o.checkpoint_policy = policy;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
    for (int i = 0; i < 400; ++i) ASSERT_THAT(db->Put(Wal2Key(i % 50), absl::StrCat(i)), IsOk());
    const bool background = std::string(policy).rfind("async", 0) == 0;
    // The background checkpointer runs when it is scheduled: commit on (slowly) until it has
    // copied the non-current log often enough for the writer to switch, or 10 s pass.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (int i = 0; background && db->Stats().log_switches < 5 && absl::Now() < deadline; ++i) {
      ASSERT_THAT(db->Put(Wal2Key(i % 50), "again"), IsOk());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const DbStats s = db->Stats();
    EXPECT_GE(s.log_switches, 5u);
    // On the committing thread the bound is exact: both logs hold at most a switch's worth of
    // frames above the threshold. (The background one's depends on when it runs.)
    if (!background) {
      EXPECT_LE(s.max_log_frames, 40u + 2 * 8u + 2);
    }
  }
}

TEST_F(Wal2Test, AReaderKeepsItsSnapshotAcrossSwitches) {
  Options o = ModeOptions(JournalMode::kWal2);
  o.wal2_switch_pages = 5;
  o.checkpoint_policy = "threshold:1";
  std::unique_ptr<Db> writer = Open(o);
  std::unique_ptr<Db> reader_db = Open(o);
  for (int i = 0; i < 10; ++i) ASSERT_THAT(writer->Put(Wal2Key(i), "old"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> snapshot, reader_db->BeginRead());
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) ASSERT_THAT(writer->Put(Wal2Key(i), absl::StrCat("new", round)), IsOk());
  }
  // The pinned reader holds back the copy of the log it began in, so at most one switch after
  // it could happen; it still reads its own snapshot.
  for (int i = 0; i < 10; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, snapshot->Get(Wal2Key(i)));
    EXPECT_EQ(v, "old");
  }
  snapshot.reset();
  for (int i = 0; i < 10; ++i) ASSERT_THAT(writer->Put(Wal2Key(i), "last"), IsOk());
  EXPECT_GE(writer->Stats().log_switches, 2u);
  for (int i = 0; i < 10; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, reader_db->Get(Wal2Key(i)));
    EXPECT_EQ(v, "last");
  }
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, reader_db->Check());
  EXPECT_TRUE(check.ok());
}

// A process dies with commits in both logs (the same keys overwritten in each, so their order
// matters); an opener in another mode, alone, copies them back in order and switches the
// family; and the same from wal into wal2.
TEST_F(Wal2Test, SwitchingModesCopiesLogsLeftByACrashInOrder) {
  struct Case {
    JournalMode from;
    JournalMode to;
  };
  for (Case c : {Case{JournalMode::kWal2, JournalMode::kDelete},
                 Case{JournalMode::kWal2, JournalMode::kWal},
                 Case{JournalMode::kWal2, JournalMode::kWal2},
                 Case{JournalMode::kWal, JournalMode::kWal2},
                 Case{JournalMode::kDelete, JournalMode::kWal2}}) {
    SCOPED_TRACE(absl::StrCat(JournalModeName(c.from), " -> ", JournalModeName(c.to)));
    vfs::MemFileSystem mem;
    vfs::FaultInjectingFileSystem fs(&mem);
    Options o;
    o.file_system = &fs;
    o.journal_mode = c.from;
    o.checkpoint_policy = "manual";
    o.wal2_switch_pages = 6;
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
      for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 4; ++i) {
          ASSERT_THAT(db->Put(Wal2Key(i), absl::StrCat("r", round)), IsOk());
        }
      }
      if (c.from == JournalMode::kWal2) {
        const DbStats s = db->Stats();
        EXPECT_GT(s.wal2_log_frames, 0u);
        EXPECT_GT(s.log_frames, s.wal2_log_frames);  // frames in both logs
      }
      fs.SimulateProcessCrash();  // the close that follows touches nothing
    }
    o.journal_mode = c.to;
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
      EXPECT_EQ(db->options().journal_mode, c.to);
      for (int i = 0; i < 4; ++i) {
        JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(i)));
        EXPECT_EQ(v, "r3");
      }
      ASSERT_THAT(db->Put("after", "switch"), IsOk());
      JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
      EXPECT_TRUE(check.ok());
    }
    JKV_ASSERT_OK_AND_ASSIGN(bool wal2_left, fs.Exists(std::string(kWal2Path) + "-wal2"));
    EXPECT_FALSE(wal2_left);
  }
}

// A WAL2 database whose page 1 a power loss tore in the database file (a checkpoint's first
// write, unsynced) opens from the logs, whichever of the two holds the frames: the opener takes
// the page size from a log header, and used to look at -wal alone whenever it existed, so with
// -wal empty (cut by a TRUNCATE) and the frames in -wal2 nothing could open the database
// (found by wal_crash_sweep_test once it crashed recoveries: a power loss, a recovery cut after
// its first page write, a second power loss).
TEST_F(Wal2Test, ATornPage1OpensFromWhicheverLogHoldsTheFrames) {
  vfs::MemFileSystem mem;
  vfs::FaultInjectingFileSystem fs(&mem);
  Options o;
  o.file_system = &fs;
  o.journal_mode = JournalMode::kWal2;
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 1000;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, o));
    for (int i = 0; i < 50; ++i) ASSERT_THAT(db->Put(Wal2Key(i), "v1"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, db->Checkpoint(CheckpointMode::kTruncate));
    ASSERT_TRUE(r.restarted);
    // Commits into the current log until it is -wal2 (the other stays cut to 0 bytes).
    if (db->Stats().current_log != 1) {
      ASSERT_THAT(db->Put("switch", "x"), IsOk());
      ASSERT_THAT(db->Checkpoint(CheckpointMode::kTruncate), IsOk());
    }
    ASSERT_EQ(db->Stats().current_log, 1);
    // New pages: the header changes, so page 1 is in -wal2 too (the file's copy is what tears).
    for (int i = 0; i < 50; ++i) ASSERT_THAT(db->Put(Wal2Key(i), std::string(1000, 'b')), IsOk());
    ASSERT_EQ(db->Stats().log_frames, db->Stats().wal2_log_frames);  // all in -wal2
    fs.SimulateProcessCrash();  // the close that follows touches nothing
  }
  JKV_ASSERT_OK_AND_ASSIGN(std::string wal, vfs::ReadFileToString(mem, std::string(kWal2Path) + "-wal"));
  ASSERT_EQ(wal.size(), 0u);
  // Tear page 1 of the database file: its second sector as garbage.
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> db_file,
                             mem.Open(kWal2Path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kDatabase}));
    ASSERT_THAT(vfs::WriteString(*db_file, 512, std::string(512, '\x5a')), IsOk());
  }
  Options reopen = o;
  reopen.file_system = &mem;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(kWal2Path, reopen));
  for (int i = 0; i < 50; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Wal2Key(i)));
    EXPECT_EQ(v, std::string(1000, 'b'));
  }
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
  EXPECT_TRUE(check.ok());
}

// While another connection has a wal2 database open, openers in other modes are refused and
// nothing changes.
TEST_F(Wal2Test, SwitchingIsRefusedWhileAnotherConnectionIsOpen) {
  std::unique_ptr<Db> db = Open(ModeOptions(JournalMode::kWal2));
  ASSERT_THAT(db->Put("k", "v"), IsOk());
  for (JournalMode other : {JournalMode::kWal, JournalMode::kDelete}) {
    EXPECT_THAT(Db::Open(kWal2Path, ModeOptions(other)),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "in wal2 mode and other connections have it open"));
  }
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("k"));
  EXPECT_EQ(v, "v");
}

// V6, proven on a state built for it. At NORMAL no commit syncs the log: after a switch, the
// first frame of the new log could reach the disk while the old log's newest commits do not,
// and recovery would pair a later commit with an earlier state of another page. Here k_a (one
// leaf page) is overwritten three times in one log, the writer switches, and k_b (another leaf
// page) is written in the other: after a power loss, k_b's new value must come with k_a's last.
std::vector<std::string>& Sites() {
  static std::vector<std::string> sites;
  return sites;
}
void RecordSite(const char* site) { Sites().push_back(site); }

// After the scenario and a power loss drawn from `seed`, with V6 skipped when `skip_v6`:
// "ok", or what is wrong.
std::string AfterSwitchAndPowerLoss(uint64_t seed, bool skip_v6) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  Options o;
  o.journal_mode = JournalMode::kWal2;
  o.sync = SyncLevel::kNormal;
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 5;  // each commit below is two frames (a leaf and an overflow page)
  o.file_system = &fs;
  const std::string big(3000, 'v');
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kWal2Path, o);
    if (!db.ok()) return std::string(db.status().message());
    if (!(*db)->Put("k_a", "a0" + big).ok() || !(*db)->Put("k_b", "b0" + big).ok()) {
      return "setup failed";
    }
    absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kRestart);
    if (!r.ok() || !r->restarted) return "the restart failed";
    for (const char* v : {"x1", "x2", "x3"}) {
      if (!(*db)->Put("k_a", v + big).ok()) return "a commit failed";
    }
    Sites().clear();
    vfs::SetSyncObserverForTesting(&RecordSite);
    if (skip_v6) fs.SkipSyncs({fs.sync_log().size() + 2});  // W4 of the new log, then V6
    const bool put = (*db)->Put("k_b", "y" + big).ok();
    vfs::SetSyncObserverForTesting(nullptr);
    if (!put) return "the commit after the switch failed";
    if (Sites().size() < 2 || Sites()[0] != "W4 log header" || Sites()[1] != "V6 previous log") {
      std::string all;
      for (const std::string& site : Sites()) all += site + "; ";
      return "the writer did not switch logs: " + all;
    }
    fs.SimulateProcessCrash();
  }
  if (!fs.SimulatePowerLoss(seed).ok()) return "power loss failed";
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kWal2Path, o);
  if (!db.ok()) return std::string(db.status().message());
  absl::StatusOr<std::optional<std::string>> a = (*db)->Get("k_a");
  absl::StatusOr<std::optional<std::string>> b = (*db)->Get("k_b");
  if (!a.ok() || !b.ok() || !a->has_value() || !b->has_value()) return "a key is unreadable";
  absl::StatusOr<CheckResult> check = (*db)->Check();
  if (!check.ok() || !check->ok()) return "check failed";
  if (b->value().substr(0, 1) == "y" && a->value().substr(0, 2) != "x3") {
    return absl::StrCat("k_b is the newest but k_a is ", a->value().substr(0, 2));
  }
  return "ok";
}

TEST(Wal2SyncTest, V6KeepsTheNewLogFromOutlivingTheOldLogsTail) {
  // 40 of the 100 fail without V6 (seed 0 among them); a sanitizer build tries the first 25.
  const int seeds = testing::ScaledForSanitizer(100, 25);
  int broken_with_skip = 0;
  std::string example;
  for (int seed = 0; seed < seeds; ++seed) {
    EXPECT_EQ(AfterSwitchAndPowerLoss(seed, /*skip_v6=*/false), "ok") << "seed " << seed;
    const std::string without = AfterSwitchAndPowerLoss(seed, /*skip_v6=*/true);
    if (without != "ok") {
      ++broken_with_skip;
      if (example.empty()) example = absl::StrCat("seed ", seed, ": ", without);
    }
  }
  std::printf("V6 skipped: %d of %d power losses break the order (%s)\n", broken_with_skip,
              seeds, example.c_str());
  EXPECT_GT(broken_with_skip, 0) << "no state needs V6";
}

}  // namespace
}  // namespace journalkv
