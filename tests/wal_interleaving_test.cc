// Scripted interleavings of WAL mode: test hooks (wal/wal_connection.h wal::SetWalHookForTesting,
// wal/checkpoint_copy.h SetCheckpointHookForTesting) pause one thread at a named point
// while the others act, so the races between a writer, readers and checkpoints run in an
// exact order every time. The first two are the shape of the WAL-reset race SQLite carried
// from 3.7.0 to 3.51.3: the log restarts while a reader begins.
//
// Every test runs in wal and in wal2 mode. In wal2 the writer switches logs every 8 frames
// (kWal2SwitchPages, and the other log must be copied), so one Fill (about 20 frames) is
// enough for the next write to switch: a restart is then a switch that restarts the other log,
// and PASSIVE checkpoints copy only the log that is not current.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "wal/checkpoint_copy.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "base/hook_gate.h"
#include "wal/wal_connection.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

using Gate = ::journalkv::testing::HookGate;

// Several points at once, each pausing the first thread that reaches it, until released.
class Gates {
 public:
  static Gates& Get() {
    static Gates gates;
    return gates;
  }
  void Arm(const std::string& point) {
    std::lock_guard<std::mutex> lock(mu_);
    points_[point] = State{};
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    points_.clear();
    cv_.notify_all();
  }
  void At(const char* point) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = points_.find(point);
    if (it == points_.end() || it->second.reached) return;
    it->second.reached = true;
    cv_.notify_all();
    cv_.wait(lock, [&] {
      auto i = points_.find(point);
      return i == points_.end() || i->second.released;
    });
  }
  // False when no thread reached `point` within `timeout`.
  [[nodiscard]] bool WaitUntilReached(const std::string& point,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto i = points_.find(point);
      return i != points_.end() && i->second.reached;
    });
  }
  void Release(const std::string& point) {
    std::lock_guard<std::mutex> lock(mu_);
    points_[point].released = true;
    cv_.notify_all();
  }

 private:
  struct State {
    bool reached = false;
    bool released = false;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, State> points_;
};

void GateHook(const char* point) {
  Gate::Get().At(point);
  Gates::Get().At(point);
}

constexpr uint32_t kWal2SwitchPages = 8;

// A mode, and the reader slots each connection may claim: 0 runs every interleaving with the
// readers pinning under overflow marks (wal/reader_pins.h M1..M5) instead of slots.
struct Interleaving {
  JournalMode mode;
  int reader_slots;
};

std::string InterleavingName(const ::testing::TestParamInfo<Interleaving>& info) {
  return absl::StrCat(JournalModeName(info.param.mode),
                      info.param.reader_slots == 0 ? "_overflow" : "");
}

class WalInterleavingTest : public ::testing::TestWithParam<Interleaving> {
 protected:
  bool wal2() const { return GetParam().mode == JournalMode::kWal2; }
  void SetUp() override {
    wal::SetWalHookForTesting(&GateHook);
    wal::SetCheckpointHookForTesting(&GateHook);
  }
  void TearDown() override {
    Gate::Get().Arm("");
    Gates::Get().Clear();
    wal::SetWalHookForTesting(nullptr);
    wal::SetCheckpointHookForTesting(nullptr);
  }
  std::unique_ptr<Db> Open() {
    Options o;
    o.journal_mode = GetParam().mode;
    o.reader_slots = GetParam().reader_slots;
    o.wal2_switch_pages = kWal2SwitchPages;
    o.file_system = &fs_;
    o.checkpoint_policy = "manual";
    o.busy_timeout = absl::Milliseconds(200);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Fills keys k000..k199 with `value` in one transaction (many frames).
  void Fill(Db& db, const std::string& value) {
    std::unique_ptr<WriteTransaction> w = *db.BeginWrite();
    for (int i = 0; i < 200; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("k", 100 + i), value + std::string(300, 'x')), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  static std::string Value(ReadTransaction& t, int i) {
    absl::StatusOr<std::optional<std::string>> v = t.Get(absl::StrCat("k", 100 + i));
    if (!v.ok()) return std::string(v.status().message());
    return v->has_value() ? (*v)->substr(0, (*v)->size() - 300) : "<missing>";
  }
  // Every key of `t` must hold `value`.
  static void ExpectAll(ReadTransaction& t, const std::string& value) {
    for (int i = 0; i < 200; ++i) ASSERT_EQ(Value(t, i), value) << "key " << i;
  }

  vfs::MemFileSystem fs_;
};

// A reader stores its pin, then (paused) the log is checkpointed, restarted and overwritten by
// another connection: the reader's re-check sees the new generation and takes a newer
// snapshot, never a mix of old index entries and new frames.
TEST_P(WalInterleavingTest, LogRestartsWhileAReaderBegins) {
  std::unique_ptr<Db> reader_db = Open();
  std::unique_ptr<Db> writer_db = Open();
  Fill(*writer_db, "v1");
  ASSERT_FALSE(writer_db->Checkpoint(CheckpointMode::kFull)->blocked);
  std::string seen;
  Gate::Get().Arm("begin_read:pinned");
  std::thread reader([&] {
    std::unique_ptr<ReadTransaction> t = *reader_db->BeginRead();
    seen = Value(*t, 0);
    for (int i = 1; i < 200; ++i) {
      if (Value(*t, i) != seen) seen = absl::StrCat("mixed at key ", i, ": ", Value(*t, i));
    }
  });
  if (!Gate::Get().WaitUntilReached()) {
    Gate::Get().Release();
    reader.join();
    FAIL() << "the reader never reached \"begin_read:pinned\"";
  }
  // Restarts the log: every frame was copied. wal2: switches to -wal2 (restarting it), and the
  // next Fill switches back, restarting -wal, whose frames the reader's snapshot names.
  Fill(*writer_db, "v2");
  Fill(*writer_db, "v3");
  EXPECT_GT(writer_db->Stats().log_restarts, 0u);
  if (wal2()) {
    EXPECT_EQ(writer_db->Stats().log_switches, 2u);
  }
  Gate::Get().Release();
  reader.join();
  EXPECT_TRUE(seen == "v1" || seen == "v3") << seen;
}

// Race 1 of the WAL-races issue: a log restart publishes the new generation before it clears
// the backfill and the checkpoint target. A reader that read the header (G, m) before a
// checkpoint copied past m, and stores its pin while a restart is half done, must not accept
// (G, m): with the backfill cleared first (the old order) its re-check saw generation G, a
// target of G+1 and backfill 0 <= m, accepted, read some pages from the log and, after the
// publish, the rest from a database file that holds a later state.
TEST_P(WalInterleavingTest, AReaderPinningWhileALogRestartsHalfwayTakesAWholeSnapshot) {
  std::unique_ptr<Db> reader_db = Open();
  std::unique_ptr<Db> writer_db = Open();
  std::unique_ptr<Db> checkpoint_db = Open();
  Fill(*writer_db, "v1");
  Gates::Get().Arm("begin_read:header");
  std::mutex mu;
  std::condition_variable cv;
  bool read_one = false, restart_done = false;
  std::string seen;
  std::thread reader([&] {
    std::unique_ptr<ReadTransaction> t = *reader_db->BeginRead();
    seen = Value(*t, 0);
    {
      std::unique_lock<std::mutex> lock(mu);
      read_one = true;
      cv.notify_all();
      cv.wait(lock, [&] { return restart_done; });
    }
    for (int i = 1; i < 200; ++i) {
      if (Value(*t, i) != seen) {
        seen = absl::StrCat("mixed at key ", i, ": ", seen, " then ", Value(*t, i));
        break;
      }
    }
  });
  ASSERT_TRUE(Gates::Get().WaitUntilReached("begin_read:header"));
  // The reader holds the header of v1, unpinned. A newer commit, and a RESTART checkpoint that
  // copies everything (backfill past the reader's snapshot) and pauses halfway through the
  // restart.
  Fill(*writer_db, "v2");
  Gates::Get().Arm("restart:midway");
  absl::StatusOr<CheckpointResult> restart;
  std::thread restarter([&] { restart = checkpoint_db->Checkpoint(CheckpointMode::kRestart); });
  ASSERT_TRUE(Gates::Get().WaitUntilReached("restart:midway"));
  Gates::Get().Release("begin_read:header");
  {
    // A reader that accepted the half-restarted state reads its first key now; one that
    // waits for a whole snapshot does not get here before the restart ends.
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return read_one; });
  }
  Gates::Get().Release("restart:midway");
  restarter.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    restart_done = true;
    cv.notify_all();
  }
  reader.join();
  ASSERT_THAT(restart, IsOk());
  EXPECT_TRUE(restart->restarted);
  EXPECT_TRUE(seen == "v1" || seen == "v2") << seen;
}

// A reader whose snapshot was fully copied keeps reading it (from the database file) after the
// log restarts under it and its old frames are overwritten; checkpoints of the new generation
// wait for it.
TEST_P(WalInterleavingTest, ReaderPinnedAcrossARestartReadsItsSnapshot) {
  std::unique_ptr<Db> reader_db = Open();
  std::unique_ptr<Db> writer_db = Open();
  Fill(*writer_db, "v1");
  ASSERT_FALSE(writer_db->Checkpoint(CheckpointMode::kFull)->blocked);
  std::unique_ptr<ReadTransaction> t = *reader_db->BeginRead();
  Fill(*writer_db, "v2");  // wal2: into -wal2 (restarted), then v3 into -wal (restarted)
  Fill(*writer_db, "v3");
  EXPECT_GT(writer_db->Stats().log_restarts, 0u);
  if (wal2()) {
    EXPECT_EQ(writer_db->Stats().log_switches, 2u);
  }
  ExpectAll(*t, "v1");
  absl::StatusOr<CheckpointResult> r = writer_db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->blocked);
  EXPECT_EQ(r->copied, 0u);
  ExpectAll(*t, "v1");
  t.reset();
  r = writer_db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  ExpectAll(**reader_db->BeginRead(), "v3");
}

// A checkpoint paused after announcing its target and before copying: a reader begins and
// reads, the writer commits (it never waits for the checkpoint), a second checkpoint gives up
// at once (PASSIVE) or reports blocked (FULL); after the first resumes, everything agrees.
TEST_P(WalInterleavingTest, WriterReaderAndTwoCheckpointsRace) {
  std::unique_ptr<Db> a = Open();
  std::unique_ptr<Db> b = Open();
  std::unique_ptr<Db> c = Open();
  Fill(*a, "v1");
  if (wal2()) {
    // The second Fill switches to -wal2: the first one's frames, in the log that is not
    // current now, are what PASSIVE copies.
    Fill(*a, "v1");
    ASSERT_EQ(a->Stats().current_log, 1);
  }
  absl::StatusOr<CheckpointResult> first;
  Gate::Get().Arm("copy");
  std::thread checkpointer([&] {
    first = b->Checkpoint(CheckpointMode::kPassive);
  });
  if (!Gate::Get().WaitUntilReached()) {
    Gate::Get().Release();
    checkpointer.join();
    FAIL() << "the checkpoint never reached \"copy\"";
  }
  {
    std::unique_ptr<ReadTransaction> t = *c->BeginRead();
    ExpectAll(*t, "v1");
  }
  Fill(*a, "v2");  // commits while the checkpoint holds CKPT
  if (wal2()) {
    EXPECT_EQ(a->Stats().current_log, 1) << "switched to a log that was not copied";
  }
  absl::StatusOr<CheckpointResult> second = c->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(second, IsOk());
  EXPECT_TRUE(second->blocked);
  EXPECT_EQ(second->copied, 0u);
  std::unique_ptr<ReadTransaction> during = *c->BeginRead();
  Gate::Get().Release();
  checkpointer.join();
  ASSERT_THAT(first, IsOk());
  EXPECT_GT(first->copied, 0u);
  ExpectAll(*during, "v2");
  during.reset();
  ASSERT_FALSE(c->Checkpoint(CheckpointMode::kFull)->blocked);
  ExpectAll(**a->BeginRead(), "v2");
  EXPECT_TRUE(a->Check()->problems.empty());
}

// A writer paused after appending its frames and before publishing them: readers of other
// connections keep the old snapshot and never wait; a checkpoint copies only published frames.
TEST_P(WalInterleavingTest, UnpublishedFramesAreInvisible) {
  std::unique_ptr<Db> a = Open();
  std::unique_ptr<Db> b = Open();
  Fill(*a, "v1");
  Gate::Get().Arm("commit:appended");
  std::thread writer([&] {
    Fill(*a, "v2");  // wal2: switches to -wal2 first
  });
  if (!Gate::Get().WaitUntilReached()) {
    Gate::Get().Release();
    writer.join();
    FAIL() << "the writer never reached \"commit:appended\"";
  }
  ExpectAll(**b->BeginRead(), "v1");
  absl::StatusOr<CheckpointResult> r = b->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  ExpectAll(**b->BeginRead(), "v1");
  Gate::Get().Release();
  writer.join();
  ExpectAll(**b->BeginRead(), "v2");
  if (wal2()) {
    EXPECT_EQ(a->Stats().log_switches, 1u);
  }
}

// A WAL opener of a rollback database commits the family switch and only then takes SHARED
// for its life. A rollback-mode opener that came in between used to switch the family straight
// back (the WAL opener then had to notice and switch again, or it would run in wal mode on a
// database that rollback openers read directly, missing its commits). Now the switch holds
// the rollback-open byte exclusively until it is done (pager/db_lock.h), so that opener
// waits, and gives up busy here, where the switch cannot finish before it does; after the
// switch it would find a WAL connection open and be refused.
vfs::FileSystem* switch_back_fs = nullptr;
int switch_backs = 0;
void SwitchBackOnce(const char* point) {
  if (absl::string_view(point) != "open:family_switched" || switch_backs++ > 0) return;
  Options o;
  o.journal_mode = JournalMode::kDelete;
  o.file_system = switch_back_fs;
  o.busy_timeout = absl::Milliseconds(50);
  EXPECT_THAT(Db::Open("/x.db", o),
              StatusIs(absl::StatusCode::kUnavailable,
                       "busy: another connection is switching the database to a WAL mode"));
}

TEST_P(WalInterleavingTest, ARollbackOpenerMidSwitchWaitsAndCannotSwitchItBack) {
  Options rollback;
  rollback.journal_mode = JournalMode::kDelete;
  rollback.file_system = &fs_;
  ASSERT_THAT((*Db::Open("/x.db", rollback))->Put("a", "1"), IsOk());
  switch_back_fs = &fs_;
  switch_backs = 0;
  wal::SetWalHookForTesting(&SwitchBackOnce);
  std::unique_ptr<Db> wal = Open();
  wal::SetWalHookForTesting(&GateHook);
  ASSERT_NE(wal, nullptr);
  EXPECT_EQ(switch_backs, 1) << "the opener switched more than once";
  ASSERT_THAT(wal->Put("b", "2"), IsOk());
  EXPECT_THAT(Db::Open("/x.db", rollback), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                    "other connections have it open"));
  wal.reset();  // the last close copies the log back
  absl::StatusOr<std::unique_ptr<Db>> after = Db::Open("/x.db", rollback);
  ASSERT_THAT(after, IsOk());
  EXPECT_EQ(**(*after)->Get("a"), "1");
  EXPECT_EQ(**(*after)->Get("b"), "2");
}

// Race 3 of the WAL-races issue: byte-range locks belong to the open file, so a reader thread
// of a handle whose writer thread holds WRITE is granted WRITE and RECOVER too. When such a
// reader found the header torn (here: copy A damaged while the writer, paused, has appended its
// frames and their index entries but not yet published), it repaired the index as if it were
// the writer, truncating the entries past the published mx_frame: the writer's. After the
// writer published, its pages were no longer found in the index and reads returned the old
// version. A reader thread must leave the repair to the handle's writer (or wait for it).
TEST_P(WalInterleavingTest, AReaderThreadOfTheWritersHandleNeverRepairsUnderItsWriter) {
  std::unique_ptr<Db> db = Open();
  for (int i = 0; i < 20; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", 100 + i), "v1"), IsOk());
  Gates::Get().Arm("commit:appended");
  std::thread writer([&] { ASSERT_THAT(db->Put("k100", "v2"), IsOk()); });
  ASSERT_TRUE(Gates::Get().WaitUntilReached("commit:appended"));
  // Tear the published header: copy A's checksum no longer matches (what a publish that is
  // under way, or died, looks like).
  {
    absl::StatusOr<std::unique_ptr<vfs::File>> shm =
        fs_.Open("/x.db-shm", {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther});
    ASSERT_THAT(shm, IsOk());
    absl::StatusOr<uint8_t*> r0 = (*shm)->MapSharedRegion(0, shm::kRegionSize);
    ASSERT_THAT(r0, IsOk());
    (*r0)[shm::kHeaderAOffset + shm::kHeaderBytes - 8] ^= 0x5a;
  }
  absl::Status read_status;
  std::string read_value;
  std::thread reader([&] {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> t = db->BeginRead();
    read_status = t.status();
    if (t.ok()) read_value = Value(**t, 0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader meets the torn header
  Gates::Get().Release("commit:appended");  // the writer publishes: both copies whole again
  writer.join();
  reader.join();
  // The reader waited for the writer (or gave up busy); it saw v1 or v2, whole.
  if (read_status.ok()) {
    EXPECT_TRUE(read_value == "v1" || read_value == "v2") << read_value;
  } else {
    EXPECT_TRUE(absl::IsUnavailable(read_status)) << read_status;  // busy
  }
  absl::StatusOr<std::optional<std::string>> v = db->Get("k100");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->value_or("<missing>"), "v2") << "the committed write is not found";
  EXPECT_TRUE(db->Check()->problems.empty());
}

// Race 2 of the WAL-races issue, in WAL mode (the scripted order needs the background copy to
// take the log the commits go to; in WAL2 it copies the other one, by the same code). At FULL a
// background checkpointer copies frames up to T into the database file and leaves them
// unpublished (a deferred copy). A reader that read the header at m1 < T pins afterwards; a
// checkpoint of another connection sees that pin, must not copy older versions (<= m1) over the
// newer ones already in the file, nor lower the checkpoint target below T (the reader would
// then accept m1 and read, from the file, pages of a later commit); and once everything is
// checkpointed every commit must be in the file.
class WalDeferredCopyTest : public WalInterleavingTest {};

TEST_P(WalDeferredCopyTest, AnotherConnectionsCheckpointNeitherUndoesNorHidesADeferredCopy) {
  auto open = [&](const char* policy) {
    Options o;
    o.journal_mode = JournalMode::kWal;
    o.file_system = &fs_;
    o.sync = SyncLevel::kFull;
    o.checkpoint_policy = policy;
    o.busy_timeout = absl::Milliseconds(200);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  };
  std::unique_ptr<Db> a = open("async:0/1000000");  // checkpoints in the background, deferring
  std::unique_ptr<Db> b = open("manual");
  std::unique_ptr<Db> r = open("manual");
  auto put_all = [](Db& db, char region, const std::string& v) {
    std::unique_ptr<WriteTransaction> w = *db.BeginWrite();
    for (int i = 0; i < 60; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat(std::string(1, region), 100 + i), v + std::string(300, '.')),
                  IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  };
  // Regions x and y on pages of their own; all v0, checkpointed, the log restarted.
  put_all(*b, 'x', "v0");
  put_all(*b, 'y', "v0");
  ASSERT_TRUE(b->Checkpoint(CheckpointMode::kTruncate)->restarted);
  put_all(*b, 'x', "v1");  // frames up to m1
  Gates::Get().Arm("begin_read:header");
  Gates::Get().Arm("begin_read:pinned");
  std::string seen;
  std::thread reader([&] {
    std::unique_ptr<ReadTransaction> t = *r->BeginRead();
    auto value = [&](char region, int i) {
      absl::StatusOr<std::optional<std::string>> v = t->Get(absl::StrCat(std::string(1, region), 100 + i));
      return v.ok() && v->has_value() ? (*v)->substr(0, 2) : std::string("?");
    };
    const std::string x = value('x', 0), y = value('y', 0);
    seen = absl::StrCat("x=", x, " y=", y);
    for (int i = 1; i < 60; ++i) {
      if (value('x', i) != x || value('y', i) != y) seen += absl::StrCat(" mixed at ", i);
    }
  });
  ASSERT_TRUE(Gates::Get().WaitUntilReached("begin_read:header"));  // holds the header of m1
  Gates::Get().Arm("background:stepped");
  put_all(*a, 'x', "v2");  // and wakes a's background checkpointer
  put_all(*a, 'y', "v2");  // frames up to T
  ASSERT_TRUE(Gates::Get().WaitUntilReached("background:stepped"));  // copied, unpublished
  Gates::Get().Release("begin_read:header");
  ASSERT_TRUE(Gates::Get().WaitUntilReached("begin_read:pinned"));  // pinned at m1, unchecked
  absl::StatusOr<CheckpointResult> passive = b->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(passive, IsOk());
  Gates::Get().Release("begin_read:pinned");
  reader.join();
  EXPECT_TRUE(seen == "x=v1 y=v0" || seen == "x=v2 y=v2") << seen;
  Gates::Get().Release("background:stepped");
  a.reset();  // stops its checkpointer
  ASSERT_FALSE(b->Checkpoint(CheckpointMode::kTruncate)->blocked);
  b.reset();
  r.reset();
  std::unique_ptr<Db> after = open("manual");
  for (int i = 0; i < 60; ++i) {
    for (char region : {'x', 'y'}) {
      absl::StatusOr<std::optional<std::string>> v =
          after->Get(absl::StrCat(std::string(1, region), 100 + i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value());
      EXPECT_EQ((*v)->substr(0, 2), "v2") << region << 100 + i << ": a checkpointed commit is lost";
    }
  }
  EXPECT_TRUE(after->Check()->problems.empty());
}

INSTANTIATE_TEST_SUITE_P(Wal, WalDeferredCopyTest,
                         ::testing::Values(Interleaving{JournalMode::kWal, shm::kMaxSlots},
                                           Interleaving{JournalMode::kWal, 0}),
                         InterleavingName);

INSTANTIATE_TEST_SUITE_P(Modes, WalInterleavingTest,
                         ::testing::Values(Interleaving{JournalMode::kWal, shm::kMaxSlots},
                                           Interleaving{JournalMode::kWal2, shm::kMaxSlots},
                                           Interleaving{JournalMode::kWal, 0},
                                           Interleaving{JournalMode::kWal2, 0}),
                         InterleavingName);

}  // namespace
}  // namespace journalkv
