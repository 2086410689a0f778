// Group commit (wal/wal_connection.h W12): several writers of one database, threads of one
// handle or separate handles, each committing its own keys at sync full and extra.
//   - Commits share flushes (some writer's commit is made durable by another's flush), and
//     every commit is there afterwards, in wal and wal2.
//   - Crashes amid the group's flushes: the fault-injecting file system stops every mutation
//     after a random count while the writers run (a flush may be half done, a commit appended
//     and not yet flushed), then a power loss or a process crash; after recovery every
//     acknowledged commit is present, each transaction whole (its two keys agree), and each
//     writer's commits a prefix of its sequence. With the flush's sync turned into a no-op, some
//     power loss loses an acknowledged commit: the group flush is what makes them durable.
//   - Writers in separate processes, one of them killed with SIGKILL in the middle: every
//     acknowledged commit of every process is there.
//   - W12 g: commits pending when a writer begins do not keep a copied log from restarting
//     (writers of several handles kept it growing by every commit), also amid crashes.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "base/hook_gate.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

std::string KeyA(int writer) { return absl::StrFormat("w%02d-a", writer); }
std::string KeyB(int writer) { return absl::StrFormat("w%02d-b", writer); }
std::string OwnKey(int writer, int n) { return absl::StrFormat("own-%02d-%06d", writer, n); }

// One commit of writer `w`: its two keys set to `n`, and a key of its own.
absl::Status CommitOne(Db& db, int w, int n) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, db.BeginWrite());
  JKV_RETURN_IF_ERROR(txn->Put(KeyA(w), absl::StrCat(n)));
  JKV_RETURN_IF_ERROR(txn->Put(OwnKey(w, n), "x"));
  JKV_RETURN_IF_ERROR(txn->Put(KeyB(w), absl::StrCat(n)));
  return txn->Commit();
}

// A flush that takes a while, as a real disk's does (about 100 us): while it runs, the other
// writers append and queue, so commits form groups even on an in-memory file system.
void SlowFlush(const char* point) {
  if (std::string_view(point) == "flush:synced") {
    std::this_thread::sleep_for(std::chrono::microseconds(150));
  }
}

struct Scoped {
  explicit Scoped(wal::WalHook hook) { wal::SetWalHookForTesting(hook); }
  ~Scoped() { wal::SetWalHookForTesting(nullptr); }
};

class GroupCommitTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Opts(vfs::FileSystem* fs, SyncLevel sync = SyncLevel::kFull) {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = fs;
    o.sync = sync;
    o.page_size = 1024;
    o.checkpoint_policy = "threshold:200";  // checkpoints and restarts run between groups
    return o;
  }
};

TEST_P(GroupCommitTest, ThreadsOfOneHandleShareFlushesAndLoseNothing) {
  for (SyncLevel sync : {SyncLevel::kFull, SyncLevel::kExtra}) {
    vfs::MemFileSystem fs;
    Scoped hook(&SlowFlush);
    constexpr int kWriters = 4;
    const int per_writer = testing::ScaledForSanitizer(150, 40);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/g.db", Opts(&fs, sync));
    ASSERT_THAT(db, IsOk());
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int n = 1; n <= per_writer; ++n) {
          if (!CommitOne(**db, w, n).ok()) ++failures;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
    const DbStats s = (*db)->Stats();
    EXPECT_EQ(s.flushed_commits, uint64_t{kWriters} * per_writer);
    // Shared: fewer flushes than commits, and some commits were made durable by another
    // thread's flush.
    EXPECT_LT(s.group_flushes, s.flushed_commits);
    EXPECT_GT(s.commits_flushed_by_others, 0u);
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*db)->BeginRead());
    for (int w = 0; w < kWriters; ++w) {
      EXPECT_EQ(**r->Get(KeyA(w)), absl::StrCat(per_writer));
      EXPECT_EQ(**r->Get(KeyB(w)), absl::StrCat(per_writer));
      for (int n = 1; n <= per_writer; ++n) ASSERT_TRUE(r->Get(OwnKey(w, n))->has_value());
    }
  }
}

TEST_P(GroupCommitTest, SeparateHandlesShareFlushes) {
  vfs::MemFileSystem fs;
  Scoped hook(&SlowFlush);
  constexpr int kWriters = 3;
  const int per_writer = testing::ScaledForSanitizer(120, 30);
  std::vector<std::unique_ptr<Db>> dbs;
  for (int w = 0; w < kWriters; ++w) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/g.db", Opts(&fs));
    ASSERT_THAT(db, IsOk());
    dbs.push_back(std::move(*db));
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int n = 1; n <= per_writer; ++n) {
        if (!CommitOne(*dbs[w], w, n).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  uint64_t by_others = 0;
  for (auto& db : dbs) by_others += db->Stats().commits_flushed_by_others;
  EXPECT_GT(by_others, 0u) << "no handle's commit was made durable by another's flush";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, dbs[0]->BeginRead());
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(**r->Get(KeyA(w)), absl::StrCat(per_writer));
}

// One trial: writers on `fault` until the crash point stops them, then a power loss (seed) or a
// process crash, then recovery and the checks. The writers are threads of one handle, or with
// `separate_handles` each its own handle (a connection, as a process has). Returns the number of acknowledged commits
// missing after recovery (0 when the guarantees held); records other violations as failures.
struct TrialResult {
  int missing_acknowledged = 0;
  uint64_t flushed_by_others = 0;
  int acknowledged = 0;
};

TrialResult CrashTrial(JournalMode mode, uint64_t crash_after, uint64_t seed, bool power_loss,
                       bool skip_flush_syncs, bool separate_handles = false) {
  TrialResult result;
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fault(&base);
  Options o;
  o.journal_mode = mode;
  o.file_system = &fault;
  o.sync = SyncLevel::kFull;
  o.page_size = 1024;
  o.checkpoint_policy = "manual";  // the run's only syncs are the group flushes (and W4 once)
  o.busy_timeout = absl::Seconds(2);
  constexpr int kWriters = 3;
  std::vector<int> acked(kWriters, 0);
  std::vector<int> attempted(kWriters, 0);
  {
    std::vector<std::unique_ptr<Db>> dbs;
    for (int h = 0; h < (separate_handles ? kWriters : 1); ++h) {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/c.db", o);
      EXPECT_THAT(db, IsOk());
      if (!db.ok()) return result;
      dbs.push_back(std::move(*db));
    }
    const auto db_of = [&](int w) -> Db& { return *dbs[separate_handles ? w : 0]; };
    for (int w = 0; w < kWriters; ++w) EXPECT_THAT(CommitOne(db_of(w), w, 0), IsOk());
    if (skip_flush_syncs) {
      std::set<uint64_t> later;
      for (uint64_t i = 1; i <= 100'000; ++i) later.insert(fault.sync_count() + i);
      fault.SkipSyncs(later);
    }
    fault.CrashAfterMutations(crash_after);
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int n = 1; n <= 400; ++n) {
          attempted[w] = n;
          if (!CommitOne(db_of(w), w, n).ok()) return;  // the crash point: this writer stops
          acked[w] = n;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (auto& db : dbs) result.flushed_by_others += db->Stats().commits_flushed_by_others;
    if (power_loss) {
      EXPECT_THAT(fault.SimulatePowerLoss(seed), IsOk());
    } else {
      fault.SimulateProcessCrash();
    }
  }  // the crashed handles go; their files are dead
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/c.db", o);
  EXPECT_THAT(db, IsOk());
  if (!db.ok()) return result;
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
  EXPECT_THAT(r, IsOk());
  if (!r.ok()) return result;
  for (int w = 0; w < kWriters; ++w) {
    result.acknowledged += acked[w];
    absl::StatusOr<std::optional<std::string>> a = (*r)->Get(KeyA(w));
    absl::StatusOr<std::optional<std::string>> b = (*r)->Get(KeyB(w));
    EXPECT_THAT(a, IsOk());
    EXPECT_THAT(b, IsOk());
    if (!a.ok() || !b.ok() || !a->has_value() || !b->has_value()) continue;
    EXPECT_EQ(**a, **b) << "writer " << w << "'s transaction is partly present";
    int present = -1;
    EXPECT_TRUE(absl::SimpleAtoi(**a, &present));
    EXPECT_LE(present, attempted[w]) << "writer " << w << " has a commit it never made";
    if (present < acked[w]) ++result.missing_acknowledged;
    for (int n = 1; n <= attempted[w]; ++n) {  // its commits: exactly a prefix
      absl::StatusOr<std::optional<std::string>> own = (*r)->Get(OwnKey(w, n));
      EXPECT_THAT(own, IsOk());
      if (own.ok()) {
        EXPECT_EQ(own->has_value(), n <= present) << "writer " << w << " n " << n;
      }
    }
  }
  absl::StatusOr<CheckResult> check = (*db)->Check();
  EXPECT_THAT(check, IsOk());
  if (check.ok() && !check->ok()) ADD_FAILURE() << check->problems.front();
  return result;
}

TEST_P(GroupCommitTest, CrashesAmidGroupFlushesKeepEveryAcknowledgedCommit) {
  Scoped hook(&SlowFlush);
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed());
  const int trials = testing::ScaledForSanitizer(24, 8);
  uint64_t by_others = 0;
  int acknowledged = 0;
  for (int t = 0; t < trials; ++t) {
    const uint64_t crash_after = 20 + rng() % 400;
    const uint64_t seed = rng();
    const bool power_loss = t % 3 != 2;
    SCOPED_TRACE(absl::StrCat("trial ", t, ": crash after ", crash_after, " mutations, ",
                              power_loss ? absl::StrCat("power loss seed ", seed)
                                         : std::string("process crash")));
    const TrialResult r = CrashTrial(GetParam(), crash_after, seed, power_loss, false);
    EXPECT_EQ(r.missing_acknowledged, 0) << "acknowledged commits lost";
    by_others += r.flushed_by_others;
    acknowledged += r.acknowledged;
  }
  // Not vacuous: writers committed, and flushes covered other writers' commits.
  EXPECT_GT(acknowledged, trials * 3);
  EXPECT_GT(by_others, 0u);
}

TEST_P(GroupCommitTest, WithoutTheFlushesSyncAPowerLossLosesAcknowledgedCommits) {
  Scoped hook(&SlowFlush);
  std::mt19937_64 rng(7);
  int lost = 0;
  for (int t = 0; t < 12 && lost == 0; ++t) {
    const TrialResult r = CrashTrial(GetParam(), 200 + rng() % 300, rng(), /*power_loss=*/true,
                                     /*skip_flush_syncs=*/true);
    lost += r.missing_acknowledged;
  }
  EXPECT_GT(lost, 0) << "no power loss noticed the missing flush: the test cannot tell";
}

// W12 g's length threshold set for a scope (every log at least `frames` long qualifies).
struct ScopedRestartThrough {
  explicit ScopedRestartThrough(uint32_t frames) { Set(frames); }
  ~ScopedRestartThrough() { Set(0); }
  void Set(uint32_t frames) { wal::SetRestartThroughPendingFramesForTesting(frames); }
};

// WAL at FULL with no checkpoint but the test's own.
Options ManualWalOptions(vfs::FileSystem* fs) {
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.file_system = fs;
  o.sync = SyncLevel::kFull;
  o.page_size = 1024;
  o.checkpoint_policy = "manual";
  return o;
}

// W12 g, step by step: everything published is copied, a commit of another handle is
// appended and waits for its flush (paused at "await:start", WRITE let go), and a writer
// begins. It flushes that commit, copies it and restarts the log; the paused commit is then
// acknowledged by that flush (the restarted generation covers it).
TEST(GroupCommitRestartTest, PendingCommitsDoNotKeepACopiedLogFromRestarting) {
  vfs::MemFileSystem fs;
  const Options o = ManualWalOptions(&fs);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> a, Db::Open("/r.db", o));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> b, Db::Open("/r.db", o));
  for (int i = 0; i < 5; ++i) ASSERT_THAT(a->Put(absl::StrCat("a", i), "x"), IsOk());
  const uint64_t restarts = a->Stats().log_restarts;
  const uint64_t flushes = a->Stats().group_flushes;

  testing::HookGate& gate = testing::HookGate::Get();
  gate.Arm("await:start");
  Scoped hook(+[](const char* point) { testing::HookGate::Get().At(point); });
  std::thread writer_b([&] { EXPECT_THAT(b->Put("b", "pending"), IsOk()); });
  ASSERT_TRUE(gate.WaitUntilReached());
  // Every published frame copied; b's commit, appended after them, is not published.
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult copied, a->Checkpoint());
  ASSERT_EQ(copied.backfilled, copied.log_frames);
  ASSERT_GT(copied.log_frames, 0u);
  ScopedRestartThrough any_log(1);  // any log is long enough from here
  EXPECT_THAT(a->Put("a", "after"), IsOk());
  EXPECT_EQ(a->Stats().log_restarts, restarts + 1)
      << "the pending commit kept the copied log from restarting";
  EXPECT_EQ(a->Stats().group_flushes, flushes + 2) << "the pending commit's flush, then its own";
  gate.Release();
  writer_b.join();
  EXPECT_EQ(b->Stats().group_flushes, 0u) << "the restarting writer's flush covered b's commit";
  for (Db* db : {a.get(), b.get()}) {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db->BeginRead());
    EXPECT_EQ(**r->Get("b"), "pending");
    EXPECT_EQ(**r->Get("a"), "after");
  }
}

// W12 g's other half: a long log with a few published frames not yet copied (and nothing
// pending) is restarted by the next writer, which copies them first; before, it waited for a
// policy checkpoint to copy everything between two commits.
TEST(GroupCommitRestartTest, AWriterCopiesTheLastFewFramesAndRestarts) {
  vfs::MemFileSystem fs;
  const Options o = ManualWalOptions(&fs);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open("/f.db", o));
  for (int i = 0; i < 5; ++i) ASSERT_THAT(db->Put(absl::StrCat("k", i), "x"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult copied, db->Checkpoint());
  ASSERT_EQ(copied.backfilled, copied.log_frames);
  ASSERT_THAT(db->Put("published", "not copied"), IsOk());  // the log restarted before it
  ASSERT_THAT(db->Put("later", "y"), IsOk());
  ASSERT_GT(db->Stats().log_unbackfilled, 0u);
  const uint64_t restarts = db->Stats().log_restarts;
  ScopedRestartThrough any_log(1);  // any log is long enough from here
  ASSERT_THAT(db->Put("next", "z"), IsOk());
  EXPECT_EQ(db->Stats().log_restarts, restarts + 1) << "the few frames left kept the log going";
  EXPECT_EQ(db->Stats().log_frames, 1u);  // only the new commit's frame
  db.reset();
  JKV_ASSERT_OK_AND_ASSIGN(db, Db::Open("/f.db", o));
  for (const char* k : {"k4", "published", "later", "next"}) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(k));
    EXPECT_TRUE(v.has_value()) << k;
  }
}

// A flush that takes a while (SlowFlush), and the restarts through pending commits counted.
std::atomic<int> restarts_through_pending{0};
void SlowFlushCountingRestarts(const char* point) {
  SlowFlush(point);
  if (std::string_view(point) == "begin_write:restart_through_pending") ++restarts_through_pending;
}

// Writers of separate handles, each committing its own keys while the policy checkpoints: the
// log stays short. Before W12 g some commit was pending at nearly every BeginWrite, the log
// never restarted, and the policy checkpointed after every commit. Then the same writers amid
// crashes (CrashTrial, separate handles): every log long enough for W12 g and no policy copies,
// so nearly every writer restarts the log through the frames and commits left and the crashes
// fall amid those restarts, whichever way the writers' timing goes (which decides whether the
// first run takes that path at all).
TEST(GroupCommitRestartTest, SeparateHandlesKeepTheLogShortAndLoseNothingInCrashes) {
  Scoped hook(&SlowFlushCountingRestarts);
  {
    ScopedRestartThrough threshold(30);
    vfs::MemFileSystem fs;
    Options o = ManualWalOptions(&fs);
    o.checkpoint_policy = "threshold:30";
    constexpr int kWriters = 3;
    std::vector<std::unique_ptr<Db>> dbs;
    for (int w = 0; w < kWriters; ++w) {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open("/h.db", o));
      dbs.push_back(std::move(db));
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int n = 1; n <= testing::ScaledForSanitizer(150, 50); ++n) {
          EXPECT_THAT(CommitOne(*dbs[w], w, n), IsOk());
        }
      });
    }
    for (std::thread& th : threads) th.join();
    uint32_t longest = 0;
    for (auto& db : dbs) longest = std::max(longest, db->Stats().max_log_frames);
    // The policy checkpoints from 30 frames on; a commit is 3 or 4 frames. (Without W12 g the
    // longest log was 188 frames in one run, with it 35.)
    EXPECT_LT(longest, 100u) << "the log did not restart while writers committed";
  }
  ScopedRestartThrough any_log(1);
  restarts_through_pending = 0;
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed());
  const int trials = testing::ScaledForSanitizer(10, 4);
  int acknowledged = 0;
  for (int t = 0; t < trials; ++t) {
    const uint64_t crash_after = 50 + rng() % 600;
    const uint64_t seed = rng();
    const bool power_loss = t % 3 != 2;
    SCOPED_TRACE(absl::StrCat("trial ", t, ": crash after ", crash_after, " mutations, ",
                              power_loss ? absl::StrCat("power loss seed ", seed)
                                         : std::string("process crash")));
    const TrialResult r = CrashTrial(JournalMode::kWal, crash_after, seed, power_loss,
                                     /*skip_flush_syncs=*/false, /*separate_handles=*/true);
    EXPECT_EQ(r.missing_acknowledged, 0) << "acknowledged commits lost";
    acknowledged += r.acknowledged;
  }
  // Not vacuous: writers committed, and the crashed runs restarted logs through what was left.
  EXPECT_GT(acknowledged, trials * 3);
  EXPECT_GT(restarts_through_pending.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, GroupCommitTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) {
                           return info.param == JournalMode::kWal ? "wal" : "wal2";
                         });

// Separate processes, each writing its own keys at sync full; one of them killed with SIGKILL
// while the others go on. Each child records, in memory shared with the parent, the last of
// its commits that returned OK before it wrote the next.
TEST(GroupCommitProcessTest, KilledWriterProcessesLoseNoAcknowledgedCommit) {
  vfs::ScopedTempDir dir;
  const std::string path = dir.path() + "/p.db";
  {
    Options o;
    o.journal_mode = JournalMode::kWal;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
    ASSERT_THAT(db, IsOk());
  }
  constexpr int kProcs = 4;
  const int per_proc = testing::ScaledForSanitizer(300, 60);
  auto* acked = static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>) * kProcs,
                                                    PROT_READ | PROT_WRITE,
                                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  for (int p = 0; p < kProcs; ++p) new (&acked[p]) std::atomic<int>(0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Options o;
      o.journal_mode = JournalMode::kWal;
      o.sync = SyncLevel::kFull;
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
      if (!db.ok()) _exit(2);
      for (int n = 1; n <= per_proc; ++n) {
        if (!CommitOne(**db, p, n).ok()) _exit(3);
        acked[p].store(n);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  // Kill the first writer once it has committed a little.
  while (acked[0].load() < per_proc / 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(pids[0], SIGKILL);
  for (int p = 0; p < kProcs; ++p) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[p], &status, 0), pids[p]);
    if (p == 0) {
      EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer process " << p;
    }
  }
  Options o;
  o.journal_mode = JournalMode::kWal;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  ASSERT_THAT(db, IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*db)->BeginRead());
  for (int p = 0; p < kProcs; ++p) {
    const int a = acked[p].load();
    absl::StatusOr<std::optional<std::string>> v = r->Get(KeyA(p));
    ASSERT_THAT(v, IsOk());
    ASSERT_TRUE(v->has_value()) << "process " << p;
    int present = 0;
    ASSERT_TRUE(absl::SimpleAtoi(**v, &present));
    EXPECT_GE(present, a) << "process " << p << " lost acknowledged commits";
    EXPECT_EQ(**v, **r->Get(KeyB(p)));
    for (int n = 1; n <= present; ++n) ASSERT_TRUE(r->Get(OwnKey(p, n))->has_value());
  }
  munmap(acked, sizeof(std::atomic<int>) * kProcs);
}

}  // namespace
}  // namespace journalkv
