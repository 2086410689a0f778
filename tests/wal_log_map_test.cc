// The WAL's log frames read through a map of the log (Options::mmap_size; wal/wal_connection.h
// Q1..Q5), on the real file system, in wal and wal2 mode:
//   - pages whose newest version is a frame read the same through the map as with pread, and
//     log_map_reads counts them;
//   - a reader stopped at "read:frame" (before its copy) while another connection checkpoints,
//     restarts the log and writes the next generation's frames over its frame reads its own
//     snapshot (the generation check after the copy sends it to the database file, Q2), never
//     the newer page;
//   - the same with the log cut to nothing by another connection's TRUNCATE checkpoint: the
//     copy faults (SIGBUS, caught), the read falls back to pread and then to the database file,
//     and the reader gets its snapshot, not a crash.
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "base/hook_gate.h"
#include "vfs/file_system_testing.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using Gate = ::journalkv::testing::HookGate;

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;  // the map looks the size up before each copy: no fault
#else
constexpr bool kTsan = false;
#endif

constexpr int kKeys = 400;

std::string Key(int i) { return absl::StrCat("k", 1000 + i); }
std::string Value(int i, int round) {
  return absl::StrCat("r", round, "-", i, "-", std::string(200, 'a' + round % 26));
}

void GateHook(const char* point) { Gate::Get().At(point); }

class WalLogMapTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override { wal::SetWalHookForTesting(&GateHook); }
  void TearDown() override {
    Gate::Get().Arm("");
    wal::SetWalHookForTesting(nullptr);
  }
  bool wal2() const { return GetParam() == JournalMode::kWal2; }
  Options Opts(uint64_t mmap_size) const {
    Options o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kOff;
    o.cache_pages = 16;  // most reads go to the files
    o.mmap_size = mmap_size;
    o.checkpoint_policy = "manual";
    o.wal2_switch_pages = 40;  // wal2: the rounds' frames land in both logs
    return o;
  }
  std::unique_ptr<Db> MustOpen(uint64_t mmap_size = 64 << 20) {
    auto db = Db::Open(path_, Opts(mmap_size));
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Every key at `round`, in a few transactions (several commits, so wal2 switches logs).
  static void Fill(Db& db, int round) {
    for (int part = 0; part < 4; ++part) {
      auto w = db.BeginWrite();
      ASSERT_TRUE(w.ok()) << w.status();
      for (int i = part; i < kKeys; i += 4) JKV_ASSERT_OK((*w)->Put(Key(i), Value(i, round)));
      JKV_ASSERT_OK((*w)->Commit());
    }
  }
  static std::string Read(ReadTransaction& t, int i) {
    auto v = t.Get(Key(i));
    if (!v.ok()) return std::string(v.status().message());
    return v->value_or("<missing>");
  }
  static void ExpectAll(ReadTransaction& t, int round) {
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(Read(t, i), Value(i, round)) << Key(i);
  }

  // A reader of round 1 (all in the log) is stopped at `point` in its first frame read; the
  // other connection then runs `act`; released, the reader must read round 1 everywhere.
  template <typename Act>
  void StopAReaderAndAct(const char* point, Act act) {
    std::unique_ptr<Db> writer = MustOpen();
    std::unique_ptr<Db> reader = MustOpen();
    ASSERT_NE(writer, nullptr);
    ASSERT_NE(reader, nullptr);
    Fill(*writer, 1);
    ASSERT_GT(writer->Stats().log_frames, 0u);
    auto t = reader->BeginRead();
    ASSERT_TRUE(t.ok()) << t.status();
    Gate::Get().Arm(point);
    std::string first;
    std::thread reading([&] { first = Read(**t, kKeys / 2); });
    if (!Gate::Get().WaitUntilReached()) {
      Gate::Get().Release();
      reading.join();
      FAIL() << "the reader never reached " << point;
    }
    act(*writer);
    Gate::Get().Release();
    reading.join();
    EXPECT_EQ(first, Value(kKeys / 2, 1));
    ExpectAll(**t, 1);
    t->reset();
    auto now = reader->BeginRead();
    ASSERT_TRUE(now.ok()) << now.status();
    const DbStats stats = reader->Stats();
    EXPECT_GT(stats.log_map_reads, 0u);
    last_faults_ = stats.log_map_faults;
  }

  vfs::ScopedTempDir dir_;
  std::string path_ = absl::StrCat(dir_.path(), "/x.db");
  uint64_t last_faults_ = 0;
};

// Q1: the same answers through the map as with pread, pages of both logs in wal2.
TEST_P(WalLogMapTest, FramesReadThroughTheMapGiveThePreadAnswers) {
  std::unique_ptr<Db> writer = MustOpen();
  ASSERT_NE(writer, nullptr);
  Fill(*writer, 1);
  Fill(*writer, 2);
  const DbStats w = writer->Stats();
  ASSERT_GT(w.log_frames, 0u);
  if (wal2()) {
    ASSERT_GT(w.wal2_log_frames, 0u);
    ASSERT_LT(w.wal2_log_frames, w.log_frames);  // frames in both logs
  }
  std::unique_ptr<Db> mapped = MustOpen();
  std::unique_ptr<Db> plain = MustOpen(0);
  ASSERT_NE(mapped, nullptr);
  ASSERT_NE(plain, nullptr);
  for (int i = 0; i < kKeys; ++i) {
    auto a = mapped->Get(Key(i));
    auto b = plain->Get(Key(i));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(a->value_or("<missing>"), Value(i, 2)) << Key(i);
    ASSERT_EQ(*a, *b) << Key(i);
  }
  EXPECT_GT(mapped->Stats().log_map_reads, 0u);
  EXPECT_EQ(mapped->Stats().log_map_faults, 0u);
  EXPECT_EQ(plain->Stats().log_map_reads, 0u);
  JKV_ASSERT_OK(mapped->Check().status());
}

// Q2, Q3: stopped before its copy, the reader's frame is overwritten by the next generation;
// the check after the copy sends it to the database file, which holds its snapshot.
TEST_P(WalLogMapTest, ARestartUnderAStoppedReaderIsThrownAwayAfterTheCopy) {
  StopAReaderAndAct("read:frame", [](Db& writer) {
    auto r = writer.Checkpoint(CheckpointMode::kRestart);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->restarted);
    Fill(writer, 2);  // the next generation's frames, over the reader's
    Fill(writer, 3);
    ASSERT_GT(writer.Stats().log_frames, 0u);
  });
}

// Q4: the log cut to nothing under the stopped reader by another connection: the copy faults
// into pread (DataLoss "missing"), the generation moved, and the database file answers.
TEST_P(WalLogMapTest, ALogCutUnderAStoppedReaderGivesItsSnapshotNotACrash) {
  StopAReaderAndAct("read:frame", [](Db& writer) {
    auto r = writer.Checkpoint(CheckpointMode::kTruncate);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->restarted);
    ASSERT_EQ(writer.Stats().log_bytes, 0u);
  });
  if (!kTsan) {
    EXPECT_GT(last_faults_, 0u) << "the cut never reached the map's copy";
  }
}

// Q3: stopped between its copy and its check, the reader's copy is of its own frame; a restart
// and a cut then change nothing it answers (the check sends it to the database file).
TEST_P(WalLogMapTest, ACutBetweenTheCopyAndTheCheckGivesItsSnapshot) {
  StopAReaderAndAct("read:frame_copied", [](Db& writer) {
    auto r = writer.Checkpoint(CheckpointMode::kTruncate);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->restarted);
    Fill(writer, 2);
  });
}

INSTANTIATE_TEST_SUITE_P(Modes, WalLogMapTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
