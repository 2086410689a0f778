// Pipelined commits (WriteTransaction::CommitAsync, pager/commit_pipeline.h N1-N5), step by
// step, over the in-memory file system with faults and power cuts:
//   - acknowledgements (handles ready, hooks) in commit order, the writer's next transaction
//     building on its pending commit;
//   - readers of this handle and of another never see a pipelined commit before its flush
//     published it (the flusher held at "pipeline:flushing" and at "flush:synced");
//   - a failed flush fails every commit it covered and every later one, and the writer's next
//     transactions fail clearly; none of them is ever visible;
//   - after Wait returned OK, a power cut keeps the commit; Close flushes what is queued;
//   - a NORMAL connection beside a pipelining FULL one, and the modes whose handles are ready
//     at once (rollback journals, NORMAL, OFF).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "base/hook_gate.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::HookGate;
using ::journalkv::testing::IsOk;
using vfs::FaultOp;

Options Base(vfs::FileSystem* fs, JournalMode mode, SyncLevel sync) {
  Options o;
  o.journal_mode = mode;
  o.file_system = fs;
  o.sync = sync;
  o.page_size = 1024;
  o.busy_timeout = absl::Seconds(5);
  o.checkpoint_policy = "manual";
  return o;
}

std::string Key(int i) { return absl::StrCat("k", 1000 + i); }

// Writes key i in one transaction and commits it pipelined.
PendingCommit PutAsync(Db& db, int i) {
  absl::StatusOr<std::unique_ptr<WriteTransaction>> txn = db.BeginWrite();
  if (!txn.ok()) {
    ADD_FAILURE() << txn.status();
    return PendingCommit();
  }
  EXPECT_THAT((*txn)->Put(Key(i), absl::StrCat("v", i)), IsOk());
  return (*txn)->CommitAsync();
}

bool Has(Db& db, int i) {
  absl::StatusOr<std::optional<std::string>> v = db.Get(Key(i));
  return v.ok() && v->has_value();
}

void GateHook(const char* point) { HookGate::Get().At(point); }

// Sets the gate hook for a scope; lets a held thread go should the test end early.
struct ScopedGate {
  explicit ScopedGate(const std::string& point) {
    HookGate::Get().Arm(point);
    wal::SetWalHookForTesting(&GateHook);
  }
  ~ScopedGate() {
    HookGate::Get().Release();
    wal::SetWalHookForTesting(nullptr);
  }
};

class PipelinedTest : public ::testing::TestWithParam<JournalMode> {};

// N1, N2: handles become ready and hooks fire in commit order, exactly once each, and the
// writer's next transaction sees the pending commit before it is acknowledged.
TEST_P(PipelinedTest, AcknowledgementsAndHooksFollowCommitOrder) {
  vfs::MemFileSystem fs;
  Options o = Base(&fs, GetParam(), SyncLevel::kFull);
  absl::Mutex mu;
  std::vector<uint32_t> hook_frames;  // wal_hook's last_frame, in the order the hooks ran
  int commit_hooks = 0;
  o.wal_hook = [&](const WalCommitInfo& info) {
    absl::MutexLock lock(&mu);
    hook_frames.push_back(info.last_frame);
  };
  o.commit_hook = [&](const CommitInfo&) {
    absl::MutexLock lock(&mu);
    ++commit_hooks;
  };
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/p.db", o);
  ASSERT_THAT(db, IsOk());
  constexpr int kCommits = 60;
  std::vector<PendingCommit> handles;
  for (int i = 0; i < kCommits; ++i) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> txn = (*db)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    if (i > 0) {
      // Built on the previous commit, pending or not.
      absl::StatusOr<std::optional<std::string>> prev = (*txn)->Get(Key(i - 1));
      ASSERT_THAT(prev, IsOk());
      EXPECT_EQ(prev->value_or("missing"), absl::StrCat("v", i - 1));
    }
    ASSERT_THAT((*txn)->Put(Key(i), absl::StrCat("v", i)), IsOk());
    handles.push_back((*txn)->CommitAsync());
  }
  for (int i = 0; i < kCommits; ++i) {
    ASSERT_THAT(handles[i].Wait(), IsOk()) << "commit " << i;
    for (int j = 0; j < i; ++j) EXPECT_TRUE(handles[j].Ready()) << j << " before " << i;
    EXPECT_TRUE(Has(**db, i)) << "acknowledged commit " << i << " not visible";
  }
  absl::MutexLock lock(&mu);
  EXPECT_EQ(commit_hooks, kCommits);
  ASSERT_EQ(hook_frames.size(), static_cast<size_t>(kCommits));
  for (size_t i = 1; i < hook_frames.size(); ++i) {
    EXPECT_LT(hook_frames[i - 1], hook_frames[i]) << "hooks out of commit order at " << i;
  }
  EXPECT_GT((*db)->Stats().Value("commits").value_or(0), kCommits - 1);
}

// N1 across threads: two threads of one handle pipeline at once; the queue is the order of
// their appends, so the hooks (which fire in queue order) see the commit frames ascending, and
// every handle settles OK with every commit there.
TEST_P(PipelinedTest, TwoThreadsOfOneHandlePipelineInAppendOrder) {
  vfs::MemFileSystem fs;
  Options o = Base(&fs, GetParam(), SyncLevel::kFull);
  absl::Mutex mu;
  std::vector<std::pair<uint32_t, uint32_t>> hooks;  // (generation, last_frame), hook order
  o.wal_hook = [&](const WalCommitInfo& info) {
    absl::MutexLock lock(&mu);
    hooks.emplace_back(info.generation, info.last_frame);
  };
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/t.db", o);
  ASSERT_THAT(db, IsOk());
  constexpr int kEach = 40;
  std::vector<PendingCommit> handles[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) handles[t].push_back(PutAsync(**db, t * 1000 + i));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < kEach; ++i) {
      EXPECT_THAT(handles[t][i].Wait(), IsOk());
      EXPECT_TRUE(Has(**db, t * 1000 + i));
    }
  }
  absl::MutexLock lock(&mu);
  ASSERT_EQ(hooks.size(), 2u * kEach);
  for (size_t i = 1; i < hooks.size(); ++i) {
    EXPECT_LT(hooks[i - 1], hooks[i]) << "hooks out of append order at " << i;
  }
}

// N2: the flusher held before its flush ("pipeline:flushing") and after its sync, before the
// publish ("flush:synced"): no reader (this handle, this thread, another connection) sees the
// commit, and its handle is not ready; once released, all do.
TEST_P(PipelinedTest, NoReaderSeesAPipelinedCommitBeforeItsFlushPublishedIt) {
  for (const char* point : {"pipeline:flushing", "flush:synced"}) {
    SCOPED_TRACE(point);
    vfs::MemFileSystem fs;
    Options o = Base(&fs, GetParam(), SyncLevel::kFull);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/r.db", o);
    ASSERT_THAT(db, IsOk());
    absl::StatusOr<std::unique_ptr<Db>> other = Db::Open("/r.db", o);
    ASSERT_THAT(other, IsOk());
    ASSERT_THAT((*db)->Put(Key(0), "v0"), IsOk());
    PendingCommit h;
    {
      ScopedGate gate(point);
      h = PutAsync(**db, 1);
      ASSERT_TRUE(HookGate::Get().WaitUntilReached());
      EXPECT_FALSE(h.Ready());
      EXPECT_FALSE(Has(**db, 1)) << "this handle reads a commit not yet durable";
      EXPECT_FALSE(Has(**other, 1)) << "another connection reads a commit not yet durable";
      absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
      ASSERT_THAT(r, IsOk());
      absl::StatusOr<std::optional<std::string>> v = (*r)->Get(Key(1));
      ASSERT_THAT(v, IsOk());
      EXPECT_FALSE(v->has_value());
      // The writer goes on meanwhile: its next transaction builds on the pending commit.
      if (std::string(point) == "pipeline:flushing") {
        absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
        ASSERT_THAT(w, IsOk());
        absl::StatusOr<std::optional<std::string>> mine = (*w)->Get(Key(1));
        ASSERT_THAT(mine, IsOk());
        EXPECT_EQ(mine->value_or("missing"), "v1");
        ASSERT_THAT((*w)->Rollback(), IsOk());
      }
      r->reset();
      HookGate::Get().Release();
      ASSERT_THAT(h.Wait(), IsOk());
    }
    EXPECT_TRUE(Has(**db, 1));
    EXPECT_TRUE(Has(**other, 1));
  }
}

// N3: the flusher held before its flush while the writer appends two more commits on top of
// the first; the flush's sync fails. Every one of the three fails, none is ever visible, the
// writer's next transaction fails naming the failure, and after a power cut the commit
// acknowledged before is there and the database checks clean.
TEST_P(PipelinedTest, AFailedFlushFailsEveryCoveredAndLaterCommit) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetSyncFailureSeed(seed);
    Options o = Base(&fs, GetParam(), SyncLevel::kFull);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/f.db", o);
    ASSERT_THAT(db, IsOk());
    absl::StatusOr<std::unique_ptr<Db>> observer = Db::Open("/f.db", o);
    ASSERT_THAT(observer, IsOk());
    ASSERT_THAT(PutAsync(**db, 0).Wait(), IsOk());  // acknowledged: must survive
    std::vector<PendingCommit> h;
    {
      ScopedGate gate("pipeline:flushing");
      h.push_back(PutAsync(**db, 1));
      ASSERT_TRUE(HookGate::Get().WaitUntilReached());
      h.push_back(PutAsync(**db, 2));
      h.push_back(PutAsync(**db, 3));
      fs.FailNth(FaultOp::kSync, 1, EIO);  // the flusher's sync, next
      HookGate::Get().Release();
      for (int i = 0; i < 3; ++i) {
        const absl::Status s = h[i].Wait();
        EXPECT_FALSE(s.ok()) << "commit " << i + 1 << " of a failed flush returned OK";
      }
    }
    for (int i = 1; i <= 3; ++i) {
      EXPECT_FALSE(Has(**observer, i)) << "failed commit " << i << " visible to another reader";
    }
    absl::StatusOr<std::unique_ptr<WriteTransaction>> next = (*db)->BeginWrite();
    EXPECT_FALSE(next.ok()) << "the writer's next transaction began after a failed flush";
    ASSERT_THAT(fs.SimulatePowerLoss(seed), IsOk());
    observer->reset();
    db->reset();
    fs.ClearFaults();
    absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/f.db", o);
    ASSERT_THAT(reopened, IsOk());
    EXPECT_TRUE(Has(**reopened, 0)) << "the acknowledged commit was lost";
    EXPECT_FALSE(Has(**reopened, 4));
    absl::StatusOr<CheckResult> check = (*reopened)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_TRUE(check->ok()) << (check->ok() ? "" : check->problems.front());
    if (HasFailure()) break;
  }
}

// A power cut after Wait returned OK keeps every such commit, whatever the cut drops of what
// was not synced; commits still in flight at the cut may be there or not, but only as a prefix
// of the commit order (each builds on the one before).
TEST_P(PipelinedTest, APowerCutKeepsEveryCommitWhoseWaitReturnedOk) {
  constexpr int kCommits = 24;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    Options o = Base(&fs, GetParam(), SyncLevel::kFull);
    int acknowledged = 0;
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/c.db", o);
      ASSERT_THAT(db, IsOk());
      std::vector<PendingCommit> h;
      for (int i = 0; i < kCommits; ++i) h.push_back(PutAsync(**db, i));
      // Waited for half of them; the rest are in flight or done, unread.
      for (int i = 0; i < kCommits / 2; ++i) {
        ASSERT_THAT(h[i].Wait(), IsOk());
        acknowledged = i + 1;
      }
      // The cut comes once the flusher is idle (the fault layer's cut is not made for a
      // thread writing meanwhile); what the flusher did past the waited ones is unsynced or
      // synced at random, as the cut decides.
      for (int i = kCommits / 2; i < kCommits; ++i) h[i].Wait().IgnoreError();
      ASSERT_THAT(fs.SimulatePowerLoss(seed * 7919), IsOk());
    }
    absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/c.db", o);
    ASSERT_THAT(reopened, IsOk());
    bool gap = false;
    for (int i = 0; i < kCommits; ++i) {
      const bool has = Has(**reopened, i);
      if (i < acknowledged) {
        EXPECT_TRUE(has) << "acknowledged commit " << i << " lost";
      }
      if (!has) gap = true;
      EXPECT_FALSE(gap && has) << "commit " << i << " is there without an earlier one";
    }
    absl::StatusOr<CheckResult> check = (*reopened)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_TRUE(check->ok());
  }
}

// N4: Close with pipelined commits queued flushes them all (their handles settle OK, hooks
// run), and the handles outlive the Db; a handle dropped without Wait commits all the same.
TEST_P(PipelinedTest, CloseFlushesWhatIsQueuedAndHandlesOutliveTheDb) {
  vfs::MemFileSystem fs;
  Options o = Base(&fs, GetParam(), SyncLevel::kFull);
  std::atomic<int> hooks{0};
  o.commit_hook = [&](const CommitInfo&) { hooks.fetch_add(1); };
  std::vector<PendingCommit> h;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", o);
    ASSERT_THAT(db, IsOk());
    for (int i = 0; i < 20; ++i) h.push_back(PutAsync(**db, i));
    PutAsync(**db, 20);  // dropped at once
    ASSERT_THAT((*db)->Close(), IsOk());
    for (const PendingCommit& p : h) EXPECT_TRUE(p.Ready()) << "Close returned before a flush";
    EXPECT_EQ(hooks.load(), 21);
  }
  for (const PendingCommit& p : h) EXPECT_THAT(p.Wait(), IsOk());
  absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/x.db", o);
  ASSERT_THAT(reopened, IsOk());
  for (int i = 0; i <= 20; ++i) EXPECT_TRUE(Has(**reopened, i)) << i;
  EXPECT_TRUE(PendingCommit().Ready());
}

// N4, the drain itself: the flusher is held before its first flush with three commits
// queued, and Close runs on another thread. Close must not touch the log (its last-close
// checkpoint takes the writer role, flushes what is pending and removes the log) while a
// queued commit's flush has not settled: the closing thread must reach no WAL hook point
// until the flusher is let go. (Without the drain the pipeline's destructor still settles
// every promise before Close returns, and CloseLast's own flush publishes the commits, so the
// end state alone does not show it: CloseFlushesWhatIsQueuedAndHandlesOutliveTheDb passes
// without the drain. What shows it is the order.)
struct CloseOrder {
  std::mutex mu;  // std::mutex: TSan sees through its condition variable's waits
  std::condition_variable cv;
  bool flusher_held = false;  // guarded by mu
  bool released = false;      // guarded by mu
  std::thread::id closer;     // guarded by mu
  std::vector<std::string> closer_points;  // guarded by mu; reached while held
};
CloseOrder* close_order = nullptr;
void CloseOrderHook(const char* point) {
  CloseOrder& o = *close_order;
  std::unique_lock<std::mutex> lock(o.mu);
  if (std::string(point) == "pipeline:flushing" && !o.flusher_held) {
    o.flusher_held = true;
    o.cv.notify_all();
    o.cv.wait(lock, [&] { return o.released; });
    return;
  }
  if (o.flusher_held && !o.released && std::this_thread::get_id() == o.closer) {
    o.closer_points.push_back(point);
    o.released = true;  // let the flusher go: the order is already broken
    o.cv.notify_all();
  }
}

TEST_P(PipelinedTest, CloseTouchesNothingWhileAQueuedFlushIsUnsettled) {
  vfs::MemFileSystem fs;
  Options o = Base(&fs, GetParam(), SyncLevel::kFull);
  std::atomic<int> hooks{0};
  o.commit_hook = [&](const CommitInfo&) { hooks.fetch_add(1); };
  CloseOrder order;
  close_order = &order;
  wal::SetWalHookForTesting(&CloseOrderHook);
  std::vector<PendingCommit> h;
  absl::Status closed;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/d.db", o);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put(Key(0), "v0"), IsOk());
    h.push_back(PutAsync(**db, 1));
    {
      std::unique_lock<std::mutex> lock(order.mu);
      ASSERT_TRUE(order.cv.wait_for(lock, std::chrono::seconds(30),
                                    [&] { return order.flusher_held; }));
    }
    h.push_back(PutAsync(**db, 2));  // appended behind the held flush
    h.push_back(PutAsync(**db, 3));
    std::atomic<bool> close_returned{false};
    std::thread closer([&] {
      {
        std::lock_guard<std::mutex> lock(order.mu);
        order.closer = std::this_thread::get_id();
      }
      closed = (*db)->Close();
      close_returned.store(true);
    });
    // The closing thread gets time to run past a missing drain; with the drain it waits.
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_FALSE(close_returned.load()) << "Close returned while a queued commit was unsettled";
    for (const PendingCommit& p : h) EXPECT_FALSE(p.Ready());
    {
      std::lock_guard<std::mutex> lock(order.mu);
      order.released = true;
      order.cv.notify_all();
    }
    closer.join();
  }
  wal::SetWalHookForTesting(nullptr);
  close_order = nullptr;
  EXPECT_THAT(closed, IsOk());
  {
    std::lock_guard<std::mutex> lock(order.mu);
    EXPECT_TRUE(order.closer_points.empty())
        << "Close reached " << order.closer_points.front()
        << " while a queued commit's flush had not settled";
  }
  for (const PendingCommit& p : h) EXPECT_THAT(p.Wait(), IsOk());
  EXPECT_EQ(hooks.load(), 4);
  absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/d.db", o);
  ASSERT_THAT(reopened, IsOk());
  for (int i = 0; i <= 3; ++i) EXPECT_TRUE(Has(**reopened, i)) << i;
}

// N3 and N4 at close: the flusher held before its flush with three commits queued, the next
// sync set to fail, and Close on another thread. The flusher's own flush meets the failure
// (so the first commit's error names the failed sync, not only "dropped"), every queued commit
// fails, and after a reopen (no power cut) none of them is there while the commit before them
// is: each Wait's result agrees with the database. (Without the drain, CloseLast's flush met
// the failure first and every handle said DataLoss; the data still agreed.)
TEST_P(PipelinedTest, AQueuedFlushFailingAtCloseFailsItsCommitsAndLeavesThemOut) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  Options o = Base(&fs, GetParam(), SyncLevel::kFull);
  std::vector<PendingCommit> h;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/e.db", o);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put(Key(0), "v0"), IsOk());
    ScopedGate gate("pipeline:flushing");
    h.push_back(PutAsync(**db, 1));
    ASSERT_TRUE(HookGate::Get().WaitUntilReached());
    h.push_back(PutAsync(**db, 2));
    h.push_back(PutAsync(**db, 3));
    fs.FailNth(FaultOp::kSync, 1, EIO);
    absl::Status closed;
    std::thread closer([&] { closed = (*db)->Close(); });
    absl::SleepFor(absl::Milliseconds(200));  // a Close without the drain runs ahead here
    HookGate::Get().Release();
    closer.join();
    EXPECT_THAT(closed, IsOk());
  }
  for (size_t i = 0; i < h.size(); ++i) {
    const absl::Status s = h[i].Wait();
    EXPECT_FALSE(s.ok()) << "commit " << i + 1 << " of a failed flush returned OK";
    if (i == 0) {
      EXPECT_FALSE(absl::IsDataLoss(s)) << "the first commit's error does not name the failed "
                                           "sync: " << s;
    }
  }
  fs.ClearFaults();
  absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/e.db", o);
  ASSERT_THAT(reopened, IsOk());
  EXPECT_TRUE(Has(**reopened, 0));
  for (int i = 1; i <= 3; ++i) EXPECT_FALSE(Has(**reopened, i)) << "failed commit " << i;
  absl::StatusOr<CheckResult> check = (*reopened)->Check();
  ASSERT_THAT(check, IsOk());
  EXPECT_TRUE(check->ok());
}

// Bugs live between connections: a NORMAL connection commits while the FULL one's pipelined
// commit waits for its flush (the flusher held). The NORMAL commit finds it pending and
// publishes both through a flush of its own (W12 b), syncing the log; the FULL handle's
// Wait then returns OK, and a power cut keeps both.
TEST_P(PipelinedTest, ANormalConnectionBesideAPipeliningFullOne) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    Options full = Base(&fs, GetParam(), SyncLevel::kFull);
    Options normal = full;
    normal.sync = SyncLevel::kNormal;
    absl::StatusOr<std::unique_ptr<Db>> a = Db::Open("/m.db", full);
    ASSERT_THAT(a, IsOk());
    absl::StatusOr<std::unique_ptr<Db>> b = Db::Open("/m.db", normal);
    ASSERT_THAT(b, IsOk());
    PendingCommit h1;
    {
      ScopedGate gate("pipeline:flushing");
      h1 = PutAsync(**a, 1);
      ASSERT_TRUE(HookGate::Get().WaitUntilReached());
      EXPECT_FALSE(Has(**b, 1));
      // NORMAL: complete on return, ready at once.
      PendingCommit hb = PutAsync(**b, 2);
      EXPECT_TRUE(hb.Ready());
      EXPECT_THAT(hb.Wait(), IsOk());
      EXPECT_TRUE(Has(**b, 1)) << "the NORMAL commit's flush published the FULL one";
      // The FULL handle pipelines on top of both.
      HookGate::Get().Release();
      PendingCommit h3 = PutAsync(**a, 3);
      EXPECT_THAT(h1.Wait(), IsOk());
      EXPECT_THAT(h3.Wait(), IsOk());
    }
    ASSERT_THAT(fs.SimulatePowerLoss(seed), IsOk());
    b->reset();
    a->reset();
    absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/m.db", full);
    ASSERT_THAT(reopened, IsOk());
    EXPECT_TRUE(Has(**reopened, 1)) << "acknowledged FULL commit lost";
    EXPECT_TRUE(Has(**reopened, 3)) << "acknowledged FULL commit lost";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelinedTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

// Every mode and level where the commit completes on return: the handle is ready at once, and
// a failed commit's error is the handle's.
TEST(PipelinedReadyTest, RollbackModesAndNormalAndOffReturnReadyHandles) {
  struct Case {
    JournalMode mode;
    SyncLevel sync;
  };
  for (const Case c : {Case{JournalMode::kDelete, SyncLevel::kFull},
                       Case{JournalMode::kTruncate, SyncLevel::kFull},
                       Case{JournalMode::kWal, SyncLevel::kNormal},
                       Case{JournalMode::kWal, SyncLevel::kOff},
                       Case{JournalMode::kWal2, SyncLevel::kNormal}}) {
    SCOPED_TRACE(absl::StrCat(JournalModeName(c.mode), " ", SyncLevelName(c.sync)));
    vfs::MemFileSystem fs;
    Options o = Base(&fs, c.mode, c.sync);
    int hooks = 0;
    o.commit_hook = [&](const CommitInfo&) { ++hooks; };
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/n.db", o);
    ASSERT_THAT(db, IsOk());
    PendingCommit h = PutAsync(**db, 1);
    EXPECT_TRUE(h.Ready());
    EXPECT_EQ(hooks, 1) << "the hook runs before the ready handle is returned";
    EXPECT_THAT(h.Wait(), IsOk());
    EXPECT_TRUE(Has(**db, 1));
  }
}

}  // namespace
}  // namespace journalkv
