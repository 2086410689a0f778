// Durability when the connections of one database differ (issue 43): scripted interleavings of
// connections and threads at different sync levels and reader-slot settings, each the test of
// one finding of the 2026-12-06 protocol review, failing before its fix:
//   - a failed group flush fails every commit it covered, in this thread or connection or
//     another, and nothing builds on them (wal/wal_connection.h W13);
//   - an OFF or NORMAL connection's flush of a FULL commit syncs the log (D1), and a FULL
//     checkpointer syncs frames a NORMAL connection published before it copies them (C1 by the
//     frames, D2); an OFF checkpointer syncs the database before the log can restart (D1);
//   - an overflow reader's own checkpoint honours the mark a thread of its connection joins
//     while the checkpoint runs (M5);
//   - a flusher never publishes over a newer header a NORMAL commit published meanwhile (W12 h);
//   - a commit whose flusher is stopped gives up after the busy timeout (W14).
// Each thread names itself (Role); a gate holds the first thread of a role that reaches a hook
// point (WAL, checkpoint or index hooks) until the test releases it.
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "wal/checkpoint_copy.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using vfs::FaultOp;

thread_local std::string role;  // this thread's name in the gate's keys ("" for none)

// Holds the first thread of role R that reaches point P, for each armed "R:P", until released.
class RoleGates {
 public:
  static RoleGates& Get() {
    static RoleGates gates;
    return gates;
  }
  void Arm(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    points_[key] = State{};
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    points_.clear();
    cv_.notify_all();
  }
  void At(const char* point) {
    if (role.empty()) return;
    const std::string key = absl::StrCat(role, ":", point);
    std::unique_lock<std::mutex> lock(mu_);
    auto it = points_.find(key);
    if (it == points_.end() || it->second.reached) return;
    it->second.reached = true;
    cv_.notify_all();
    cv_.wait(lock, [&] {
      auto i = points_.find(key);
      return i == points_.end() || i->second.released;
    });
  }
  [[nodiscard]] bool WaitUntilReached(const std::string& key,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto i = points_.find(key);
      return i != points_.end() && i->second.reached;
    });
  }
  void Release(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    points_[key].released = true;
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

void GateHook(const char* point) { RoleGates::Get().At(point); }

// Runs `body` on a thread of role `name`; the result arrives through the future.
template <typename F>
auto InRole(std::string name, F body) {
  return std::async(std::launch::async, [name = std::move(name), body]() mutable {
    role = name;
    auto result = body();
    role.clear();
    return result;
  });
}

constexpr char kPath[] = "/x.db";

class MixedConnectionsTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  MixedConnectionsTest() : fs_(&base_) {}
  void SetUp() override {
    wal::SetWalHookForTesting(&GateHook);
    wal::SetCheckpointHookForTesting(&GateHook);
    shm::SetIndexHookForTesting(&GateHook);
  }
  void TearDown() override {
    RoleGates::Get().Clear();
    wal::SetWalHookForTesting(nullptr);
    wal::SetCheckpointHookForTesting(nullptr);
    shm::SetIndexHookForTesting(nullptr);
  }
  std::unique_ptr<Db> Open(SyncLevel sync, int reader_slots = 512,
                           absl::Duration busy = absl::Seconds(5),
                           uint32_t wal2_switch_pages = 1000) {
    Options o;
    o.wal2_switch_pages = wal2_switch_pages;
    o.journal_mode = GetParam();
    o.sync = sync;
    o.reader_slots = reader_slots;
    o.file_system = &fs_;
    o.checkpoint_policy = "manual";
    o.busy_timeout = busy;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  static std::string Value(Db& db, const std::string& key) {
    absl::StatusOr<std::optional<std::string>> v = db.Get(key);
    if (!v.ok()) return absl::StrCat("error: ", v.status().message());
    return v->value_or("<missing>");
  }
  // The syncs of the log files (-wal, -wal2) made since sync_log()[from].
  int LogSyncsSince(size_t from) {
    const std::vector<vfs::FaultInjectingFileSystem::SyncRecord> log = fs_.sync_log();
    int n = 0;
    for (size_t i = from; i < log.size(); ++i) {
      if (!log[i].directory && absl::StrContains(log[i].path, "-wal")) ++n;
    }
    return n;
  }

  vfs::MemFileSystem base_;
  vfs::FaultInjectingFileSystem fs_;
};

// Finding 1, threads of one handle: T1's flush covers T2's commit appended on top of T1's, and
// its sync fails. T2's commit must fail too (it was in the failed sync, and built on T1's),
// neither is ever visible, a later commit builds on neither, and a power loss keeps every
// acknowledged commit. (Before W13: T2 synced again, published both and returned OK.)
TEST_P(MixedConnectionsTest, AFailedGroupFlushFailsEveryCommitItCovered) {
  std::unique_ptr<Db> db = Open(SyncLevel::kFull);
  ASSERT_THAT(db->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("T1:await:start");
  RoleGates::Get().Arm("T2:await:start");
  auto t1 = InRole("T1", [&] { return db->Put("a", "1"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("T1:await:start"));
  auto t2 = InRole("T2", [&] { return db->Put("b", "2"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("T2:await:start"));
  fs_.FailNth(FaultOp::kSync, 1, EIO);  // T1's flush: the log's W1 sync
  RoleGates::Get().Release("T1:await:start");
  const absl::Status s1 = t1.get();
  RoleGates::Get().Release("T2:await:start");
  const absl::Status s2 = t2.get();
  EXPECT_FALSE(s1.ok());
  EXPECT_FALSE(s2.ok()) << "a commit the failed sync covered was acknowledged";
  db.reset();

  std::unique_ptr<Db> other = Open(SyncLevel::kFull);
  EXPECT_EQ(Value(*other, "a"), "<missing>");
  EXPECT_EQ(Value(*other, "b"), "<missing>");
  ASSERT_THAT(other->Put("c", "3"), IsOk());
  EXPECT_EQ(Value(*other, "a"), "<missing>");
  EXPECT_EQ(Value(*other, "b"), "<missing>");
  EXPECT_EQ(Value(*other, "c"), "3");
  other.reset();
  ASSERT_THAT(fs_.SimulatePowerLoss(7), IsOk());
  std::unique_ptr<Db> after = Open(SyncLevel::kFull);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(Value(*after, "base"), "0");
  EXPECT_EQ(Value(*after, "c"), "3");
  EXPECT_EQ(Value(*after, "a"), "<missing>");  // c, acknowledged later, overwrote their frames
  EXPECT_EQ(Value(*after, "b"), "<missing>");
}

// Finding 1, two connections: B's flush covers A's commit (appended first) and fails. A's
// commit fails too, and B's, whose commit returned an error, is not published by A's retry.
TEST_P(MixedConnectionsTest, AFailedFlushOfAnotherConnectionFailsTheCommitsItCovered) {
  std::unique_ptr<Db> a = Open(SyncLevel::kFull);
  std::unique_ptr<Db> b = Open(SyncLevel::kFull);
  ASSERT_THAT(a->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("A:await:start");
  RoleGates::Get().Arm("B:await:start");
  auto ta = InRole("A", [&] { return a->Put("a", "1"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("A:await:start"));
  auto tb = InRole("B", [&] { return b->Put("b", "2"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("B:await:start"));
  fs_.FailNth(FaultOp::kSync, 1, EIO);
  RoleGates::Get().Release("B:await:start");
  const absl::Status sb = tb.get();
  RoleGates::Get().Release("A:await:start");
  const absl::Status sa = ta.get();
  EXPECT_FALSE(sb.ok());
  EXPECT_FALSE(sa.ok()) << "another connection's failed flush covered this commit";
  EXPECT_TRUE(absl::IsDataLoss(sa)) << sa;
  a.reset();
  b.reset();
  std::unique_ptr<Db> c = Open(SyncLevel::kFull);
  EXPECT_EQ(Value(*c, "a"), "<missing>");
  EXPECT_EQ(Value(*c, "b"), "<missing>");
  ASSERT_THAT(c->Put("c", "3"), IsOk());
  EXPECT_EQ(Value(*c, "a"), "<missing>");
  EXPECT_EQ(Value(*c, "c"), "3");
}

// Finding 2: a FULL commit is pending when an OFF connection commits on top of it; the OFF
// connection's flush publishes both, so it syncs the log first (D1), and the FULL commit is
// acknowledged only once durable. (Before: no sync at all, and a power loss lost it.)
TEST_P(MixedConnectionsTest, AnOffConnectionsFlushSyncsTheFullCommitsItPublishes) {
  std::unique_ptr<Db> full = Open(SyncLevel::kFull);
  std::unique_ptr<Db> off = Open(SyncLevel::kOff);
  ASSERT_THAT(full->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("F:await:start");
  auto tf = InRole("F", [&] { return full->Put("f", "full"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("F:await:start"));
  const size_t syncs_before = fs_.sync_log().size();
  ASSERT_THAT(off->Put("o", "off"), IsOk());
  EXPECT_GE(LogSyncsSince(syncs_before), 1)
      << "the OFF connection published a pending FULL commit without syncing the log";
  RoleGates::Get().Release("F:await:start");
  ASSERT_THAT(tf.get(), IsOk());
  full.reset();
  off.reset();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    // Nothing is unsynced now but what the last close may leave; every seed keeps "f".
    ASSERT_THAT(fs_.SimulatePowerLoss(seed), IsOk());
    std::unique_ptr<Db> after = Open(SyncLevel::kFull);
    ASSERT_NE(after, nullptr) << "seed " << seed;
    EXPECT_EQ(Value(*after, "f"), "full") << "seed " << seed;
  }
}

// Finding 3: a NORMAL connection publishes its commits unsynced; a FULL connection's
// checkpoint copies them, so it syncs the log before the first database write (C1, decided by
// the frames: D2). (Before: the FULL checkpointer took every published frame for durable.)
TEST_P(MixedConnectionsTest, AFullCheckpointerSyncsFramesANormalConnectionPublished) {
  std::unique_ptr<Db> normal = Open(SyncLevel::kNormal);
  std::unique_ptr<Db> full = Open(SyncLevel::kFull);
  for (int i = 0; i < 20; ++i) ASSERT_THAT(normal->Put(absl::StrCat("k", i), "v"), IsOk());
  const size_t before = fs_.sync_log().size();
  // WAL2: the checkpoint switches logs as the writer, then copies the log switched from.
  ASSERT_THAT(full->Checkpoint(CheckpointMode::kFull), IsOk());
  const std::vector<vfs::FaultInjectingFileSystem::SyncRecord> log = fs_.sync_log();
  ASSERT_GT(log.size(), before) << "the checkpoint synced nothing";
  // The first sync of the checkpoint is the log's (C1), before the database's (C2).
  EXPECT_TRUE(absl::StrContains(log[before].path, "-wal")) << log[before].path;
  EXPECT_GE(LogSyncsSince(before), 1) << "frames published unsynced were copied unsynced";
}

// D1: an OFF connection's checkpoint of FULL commits syncs the database before it publishes
// the backfill (C2), and the log restarts only then: a power loss must not find the log's
// frames overwritten and their copies lost.
TEST_P(MixedConnectionsTest, AnOffCheckpointerSyncsTheDatabaseForFullCommits) {
  std::unique_ptr<Db> full = Open(SyncLevel::kFull);
  std::unique_ptr<Db> off = Open(SyncLevel::kOff);
  for (int i = 0; i < 20; ++i) ASSERT_THAT(full->Put(absl::StrCat("k", i), "v"), IsOk());
  const size_t before = fs_.sync_log().size();
  ASSERT_THAT(off->Checkpoint(CheckpointMode::kRestart), IsOk());
  const std::vector<vfs::FaultInjectingFileSystem::SyncRecord> log = fs_.sync_log();
  bool db_synced = false;
  for (size_t i = before; i < log.size(); ++i) db_synced |= log[i].path == kPath;
  EXPECT_TRUE(db_synced) << "an OFF checkpointer copied FULL commits without syncing the database";
}

// Finding 4: a connection with no reader slot reads under an overflow mark. Its own checkpoint
// began (and, before M5, sampled its own pin holder: none) before another of its threads began
// a read and joined a mark; another connection then commits two keys in one transaction. The
// checkpoint must honour the mark as its own, so the read sees both keys old, never one new.
TEST_P(MixedConnectionsTest, AnOverflowReadersOwnCheckpointHonoursTheMarkItJoinsMidway) {
  // WAL2: every write switches logs once the other one is copied, so that the commit below is
  // in the log a PASSIVE checkpoint copies (the one that is not current) when it runs.
  std::unique_ptr<Db> h = Open(SyncLevel::kFull, /*reader_slots=*/0, absl::Seconds(5), 1);
  std::unique_ptr<Db> g = Open(SyncLevel::kFull, 512, absl::Seconds(5), 1);
  {
    std::unique_ptr<WriteTransaction> w = *g->BeginWrite();
    for (int i = 0; i < 3000; ++i) {
      ASSERT_THAT(w->Put(absl::StrFormat("key%05d", i), "old"), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  ASSERT_THAT(g->Checkpoint(CheckpointMode::kTruncate), IsOk());  // the log empty
  RoleGates::Get().Arm("C:shm:lock");  // the checkpoint's take of CKPT, after it began
  auto ckpt = InRole("C", [&] { return h->Checkpoint(CheckpointMode::kPassive).status(); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("C:shm:lock"));
  std::unique_ptr<ReadTransaction> r = *h->BeginRead();
  EXPECT_EQ(*r->Get("key00010"), std::optional<std::string>("old"));
  {
    std::unique_ptr<WriteTransaction> w = *g->BeginWrite();
    ASSERT_THAT(w->Put("key00010", "new"), IsOk());
    ASSERT_THAT(w->Put("key02000", "new"), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
  }
  if (GetParam() == JournalMode::kWal2) {
    ASSERT_THAT(g->Put("switch", "x"), IsOk());  // the commit's log is no longer current
  }
  RoleGates::Get().Release("C:shm:lock");
  ASSERT_THAT(ckpt.get(), IsOk());
  EXPECT_EQ(*r->Get("key02000"), std::optional<std::string>("old")) << "a torn snapshot";
  EXPECT_EQ(*r->Get("key00010"), std::optional<std::string>("old"));
}

// Finding 6 (W12 h): F's commit was published by G's flush while F slept; N, a NORMAL
// connection with nothing pending, is publishing H1 under WRITE (held between its two copies)
// when F wakes, finds the header torn and flushes. N then finishes and publishes H2. F must
// not publish H1 over H2. (Before: F read the appended header H1, synced, and published it.)
TEST_P(MixedConnectionsTest, AFlusherNeverPublishesOverANewerDirectPublish) {
  std::unique_ptr<Db> f = Open(SyncLevel::kFull);
  std::unique_ptr<Db> g = Open(SyncLevel::kFull);
  std::unique_ptr<Db> n = Open(SyncLevel::kNormal);
  ASSERT_THAT(g->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("F:await:start");
  auto tf = InRole("F", [&] { return f->Put("t", "1"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("F:await:start"));
  ASSERT_THAT(g->Put("u", "2"), IsOk());  // its flush publishes F's commit too
  RoleGates::Get().Arm("N:shm:write_header:b_written");
  auto tn = InRole("N", [&] { return n->Put("h1", "3"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("N:shm:write_header:b_written"));
  RoleGates::Get().Arm("F:flush:synced");
  RoleGates::Get().Release("F:await:start");
  // Before W12 h, F reaches its publish of H1; after, it completes N's publish from copy B
  // (H1, which covers its commit) and publishes nothing.
  const bool f_synced =
      RoleGates::Get().WaitUntilReached("F:flush:synced", std::chrono::milliseconds(500));
  RoleGates::Get().Release("N:shm:write_header:b_written");
  ASSERT_THAT(tn.get(), IsOk());
  ASSERT_THAT(n->Put("h2", "4"), IsOk());  // nothing pending: published under WRITE
  RoleGates::Get().Release("F:flush:synced");
  ASSERT_THAT(tf.get(), IsOk());
  EXPECT_EQ(Value(*g, "h2"), "4") << "the published header moved back (F reached its publish: "
                                  << f_synced << ")";
  EXPECT_EQ(Value(*g, "t"), "1");
}

// W14: a connection stopped while it holds FLUSH (here: held after its sync) keeps every other
// committer waiting; they give up (after 30 s without a publish, here the busy timeout: the
// test lowers the floor) with Unavailable instead of forever.
TEST_P(MixedConnectionsTest, ACommitWaitingForAStoppedFlusherGivesUpBusy) {
  wal::SetMinFlushWaitForTesting(absl::ZeroDuration());
  std::unique_ptr<Db> a = Open(SyncLevel::kFull);
  std::unique_ptr<Db> b = Open(SyncLevel::kFull, 512, absl::Milliseconds(300));
  ASSERT_THAT(a->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("A:flush:synced");
  auto ta = InRole("A", [&] { return a->Put("a", "1"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("A:flush:synced"));
  auto tb = InRole("B", [&] { return b->Put("b", "2"); });
  const std::future_status waited = tb.wait_for(std::chrono::seconds(10));
  RoleGates::Get().Release("A:flush:synced");
  ASSERT_EQ(waited, std::future_status::ready) << "still waiting for a stopped flusher";
  const absl::Status sb = tb.get();
  EXPECT_TRUE(absl::IsUnavailable(sb)) << sb;
  EXPECT_TRUE(absl::StrContains(sb.message(), "flush lock")) << sb;
  ASSERT_THAT(ta.get(), IsOk());
  wal::SetMinFlushWaitForTesting(absl::Seconds(30));
}

// W13 (the review's side note): a repair that drops a commit appended but not yet published
// (the published header torn, both copies of the appended header damaged) makes its waiter
// fail. Another connection's next commit reaches the same frames; before, the waiter found the
// published header past its frame and was acknowledged for a commit nobody can read.
TEST_P(MixedConnectionsTest, ACommitDroppedByARepairFailsRatherThanBeingAcknowledged) {
  std::unique_ptr<Db> a = Open(SyncLevel::kFull);
  std::unique_ptr<Db> b = Open(SyncLevel::kFull);
  ASSERT_THAT(b->Put("base", "0"), IsOk());
  RoleGates::Get().Arm("A:await:start");
  auto ta = InRole("A", [&] { return a->Put("a", "1"); });
  ASSERT_TRUE(RoleGates::Get().WaitUntilReached("A:await:start"));
  {
    // What a process killed while publishing, over a -shm a buggy one overwrote, leaves.
    absl::StatusOr<std::unique_ptr<vfs::File>> f =
        fs_.Open("/x.db-shm", {vfs::OpenMode::kReadWrite, vfs::FileKind::kShm});
    ASSERT_THAT(f, IsOk());
    absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
        shm::WalIndex::OpenShared(f->get(), /*initialize=*/false);
    ASSERT_THAT(index, IsOk());
    (*index)->CorruptHeaderForTesting();
    (*index)->CorruptAppendedCopyForTesting(0);
    (*index)->CorruptAppendedCopyForTesting(1);
  }
  ASSERT_THAT(b->Put("c", "3"), IsOk());  // its writer repairs the header, then commits
  RoleGates::Get().Release("A:await:start");
  const absl::Status sa = ta.get();
  EXPECT_TRUE(absl::IsDataLoss(sa)) << "a dropped commit was acknowledged: " << sa;
  EXPECT_EQ(Value(*b, "a"), "<missing>");
  EXPECT_EQ(Value(*b, "c"), "3");
}

INSTANTIATE_TEST_SUITE_P(Modes, MixedConnectionsTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
