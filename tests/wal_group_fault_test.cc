// Group commit (wal/wal_connection.h W12) under a failing sync and with connections at
// different sync levels, step by step: the guarantees P1-P4 of tests/counted_commits.h, over
// its counted commits. The sweep of the same: wal_group_fault_sweep_test.cc.
//
// The tests:
//   - FailedGroupFlushTest: a failed group flush, step by step: a commit
//     appended and waiting for its flush at FULL, a second commit appended on top of it (a
//     thread of the same handle, or another handle), the flush's fdatasync fails (the file
//     system's failed Sync makes each unsynced change durable or lost, as Linux does): both
//     commits must fail, neither may ever be visible, and after a power loss every commit that
//     returned OK is there.
//   - MixedLevelFlushTest: finding 2 step by step: a FULL commit appended and waiting, a
//     commit of an OFF (or NORMAL) connection meanwhile, whose flush publishes both: the FULL
//     commit, acknowledged, must survive a power loss.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/counted_commits.h"
#include "tests/crash_sweep.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using vfs::FaultOp;

using counted::BaseOptions;
using counted::Contents;
using counted::CountedCommit;
using counted::Read;
using counted::Whole;

// ---------------------------------------------------------------------------------------------
// Parking named test threads at hook points

// Holds the test threads that the test names (Parking::me, set by each thread) at a hook point
// until the test lets each go; other threads pass.
class Parking {
 public:
  static Parking& Get() {
    static Parking p;
    return p;
  }
  static thread_local int me;  // 0: a thread the test does not name

  void Hold(int who, std::string point) {
    std::lock_guard<std::mutex> lock(mu_);
    holds_[who] = Hold_{std::move(point)};
  }
  void At(const char* point) {
    if (me == 0) return;
    std::unique_lock<std::mutex> lock(mu_);
    auto it = holds_.find(me);
    if (it == holds_.end() || it->second.point != point || it->second.parked) return;
    it->second.parked = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return holds_[me].released; });
  }
  // False when `who` did not get there in 30 s.
  [[nodiscard]] bool WaitParked(int who) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return holds_[who].parked; });
  }
  void Release(int who) {
    std::lock_guard<std::mutex> lock(mu_);
    holds_[who].released = true;
    cv_.notify_all();
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [who, h] : holds_) h.released = true;
    cv_.notify_all();
    holds_.clear();
  }

 private:
  struct Hold_ {
    std::string point;
    bool parked = false;
    bool released = false;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Hold_> holds_;
};
thread_local int Parking::me = 0;

void ParkingHook(const char* point) { Parking::Get().At(point); }

// Sets the hook for a scope, and joins the test's threads when the scope ends (after letting
// every parked one go, should an assertion have ended the test early).
struct ScopedHook {
  explicit ScopedHook(wal::WalHook hook) { wal::SetWalHookForTesting(hook); }
  ~ScopedHook() {
    Parking::Get().Clear();
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
    wal::SetWalHookForTesting(nullptr);
  }
  std::vector<std::thread> threads;
};

// ---------------------------------------------------------------------------------------------
// Finding 1, step by step

struct FailedFlushCase {
  JournalMode mode;
  bool two_handles;  // the second commit on another handle (else another thread of the first)
};

std::string FailedFlushName(const ::testing::TestParamInfo<FailedFlushCase>& info) {
  return absl::StrCat(JournalModeName(info.param.mode), info.param.two_handles ? "_two_handles"
                                                                        : "_two_threads");
}

class FailedGroupFlushTest : public ::testing::TestWithParam<FailedFlushCase> {};

// Thread 1 commits k1 and is held as it begins to wait for its flush ("await:start": appended,
// WRITE let go); thread 2 commits k2 on top of it (its base is thread 1's appended commit) and
// is held there too. The flush thread 1 then runs covers both, and its fdatasync fails: k1 and
// k2 are not durable (each unsynced change was made durable or lost, none pending), so both
// commits must fail, whoever flushes next, and neither may ever be visible. After a power
// loss, every commit that returned OK is there.
TEST_P(FailedGroupFlushTest, EveryCommitOfAFailedFlushFailsAndNoneIsEverVisible) {
  const FailedFlushCase& c = GetParam();
  int problems_seen = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    SCOPED_TRACE(absl::StrCat("sync failure seed ", seed));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetSyncFailureSeed(seed);
    Options o = BaseOptions(&fs, c.mode, SyncLevel::kFull);
    o.checkpoint_policy = "manual";
    absl::StatusOr<std::unique_ptr<Db>> a = Db::Open("/f.db", o);
    ASSERT_THAT(a, IsOk());
    std::unique_ptr<Db> b_handle;
    if (c.two_handles) {
      absl::StatusOr<std::unique_ptr<Db>> b = Db::Open("/f.db", o);
      ASSERT_THAT(b, IsOk());
      b_handle = std::move(*b);
    }
    Db& db1 = **a;
    Db& db2 = c.two_handles ? *b_handle : **a;
    absl::StatusOr<std::unique_ptr<Db>> observer = Db::Open("/f.db", o);
    ASSERT_THAT(observer, IsOk());
    int pred = 0;
    ASSERT_THAT(CountedCommit(db1, 1, &pred), IsOk());  // acknowledged and durable
    ASSERT_THAT(CountedCommit(db2, 2, &pred), IsOk());

    ScopedHook hook(&ParkingHook);
    Parking& parking = Parking::Get();
    parking.Hold(1, "await:start");
    parking.Hold(2, "await:start");
    absl::Status s1, s2;
    int pred1 = -1, pred2 = -1;
    hook.threads.emplace_back([&] {
      Parking::me = 1;
      s1 = CountedCommit(db1, 11, &pred1);
    });
    ASSERT_TRUE(parking.WaitParked(1));
    hook.threads.emplace_back([&] {
      Parking::me = 2;
      s2 = CountedCommit(db2, 12, &pred2);
    });
    ASSERT_TRUE(parking.WaitParked(2));
    ASSERT_EQ(pred2, 11) << "the second commit did not build on the first, pending one";
    fs.FailNth(FaultOp::kSync, 1, EIO);  // the next sync: the flush thread 1 runs now
    parking.Release(1);
    hook.threads[0].join();
    EXPECT_FALSE(s1.ok()) << "the flush's sync failed, yet its commit returned OK";
    const Contents mid = Read(**observer);
    EXPECT_EQ(mid.error, "");
    EXPECT_FALSE(mid.own.contains(11)) << "a commit whose flush failed is visible";
    parking.Release(2);
    hook.threads[1].join();
    // Finding 1: thread 2's flush synced again (it succeeded), published both commits and
    // acknowledged its own, which is built on the failed one.
    EXPECT_FALSE(s2.ok()) << "a commit covered by another thread's failed flush returned OK ("
                          << (c.two_handles ? "another handle" : "the same handle") << ")";
    if (s2.ok()) ++problems_seen;
    for (Db* reader : {observer->get()}) {
      const Contents after = Read(*reader);
      EXPECT_EQ(after.error, "") << "a reader of another connection";
      EXPECT_FALSE(after.own.contains(11)) << "the failed commit 11 is visible to another reader";
      EXPECT_FALSE(after.own.contains(12)) << "commit 12, covered by the failed flush, is visible";
      EXPECT_EQ(Whole(after), "");
    }
    {
      // A connection opened now sees no more.
      absl::StatusOr<std::unique_ptr<Db>> late = Db::Open("/f.db", o);
      if (late.ok()) {
        const Contents seen = Read(**late);
        EXPECT_FALSE(seen.own.contains(11) || seen.own.contains(12))
            << "a connection opened after the failure sees a failed commit";
      }
    }

    ASSERT_THAT(fs.SimulatePowerLoss(seed), IsOk());
    observer->reset();
    b_handle.reset();
    a->reset();
    fs.ClearFaults();
    absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/f.db", o);
    ASSERT_THAT(reopened, IsOk());
    const Contents rec = Read(**reopened);
    EXPECT_EQ(Whole(rec), "") << "after the power loss";
    EXPECT_TRUE(rec.own.contains(1) && rec.own.contains(2)) << "an acknowledged commit was lost";
    EXPECT_TRUE(!s1.ok() || rec.own.contains(11)) << "acknowledged commit 11 lost";
    if (s2.ok()) {
      EXPECT_TRUE(rec.own.contains(12)) << "acknowledged commit 12 lost";
      // P4 after a crash: the failed commit 11 may be present only if no commit acknowledged
      // after its failure is.
      EXPECT_FALSE(!s1.ok() && rec.own.contains(11) && rec.own.contains(12))
          << "the failed commit 11 is present with commit 12, acknowledged after it failed";
    }
    absl::StatusOr<CheckResult> check = (*reopened)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_TRUE(check->ok()) << (check->ok() ? "" : check->problems.front());
    if (HasFailure()) break;  // one seed's failures say it all
  }
  std::printf("%d runs acknowledged the commit a failed flush covered\n", problems_seen);
}

INSTANTIATE_TEST_SUITE_P(Cases, FailedGroupFlushTest,
                         ::testing::Values(FailedFlushCase{JournalMode::kWal, false},
                                           FailedFlushCase{JournalMode::kWal, true},
                                           FailedFlushCase{JournalMode::kWal2, false},
                                           FailedFlushCase{JournalMode::kWal2, true}),
                         FailedFlushName);

// ---------------------------------------------------------------------------------------------
// Finding 2, step by step

struct MixedFlushCase {
  JournalMode mode;
  SyncLevel other;  // the level of the connection whose commit flushes the FULL one
};

std::string MixedFlushName(const ::testing::TestParamInfo<MixedFlushCase>& info) {
  return absl::StrCat(JournalModeName(info.param.mode), "_", SyncLevelName(info.param.other));
}

class MixedLevelFlushTest : public ::testing::TestWithParam<MixedFlushCase> {};

// A FULL connection's commit is appended and held as it begins to wait for its flush; a commit
// of another connection, at OFF or NORMAL, finds it pending, and its own flush publishes both.
// The FULL commit, then acknowledged, must survive a power loss (P1): the other connection's
// flush syncs the log for it, whatever its own level. Each seed is a new run and one power
// loss; a power loss drops each unsynced write with probability 2/3, so a FULL commit that
// was never synced is lost in nearly every run.
TEST_P(MixedLevelFlushTest, AFullCommitFlushedByAnotherLevelsConnectionSurvivesAPowerLoss) {
  const MixedFlushCase& c = GetParam();
  constexpr int kRuns = 12;
  int lost = 0;
  for (int run = 0; run < kRuns; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    Options full = BaseOptions(&fs, c.mode, SyncLevel::kFull);
    full.checkpoint_policy = "manual";
    Options other = full;
    other.sync = c.other;
    absl::StatusOr<std::unique_ptr<Db>> a = Db::Open("/m.db", full);
    ASSERT_THAT(a, IsOk());
    absl::StatusOr<std::unique_ptr<Db>> b = Db::Open("/m.db", other);
    ASSERT_THAT(b, IsOk());
    int pred = 0;
    ASSERT_THAT(CountedCommit(**a, 1, &pred), IsOk());
    absl::Status full_status;
    {
      ScopedHook hook(&ParkingHook);
      Parking::Get().Hold(1, "await:start");
      hook.threads.emplace_back([&] {
        Parking::me = 1;
        full_status = CountedCommit(**a, 2, &pred);
      });
      ASSERT_TRUE(Parking::Get().WaitParked(1));
      int other_pred = 0;
      // The other connection's commit: its base is the FULL commit, pending; its flush
      // publishes both.
      EXPECT_THAT(CountedCommit(**b, 3, &other_pred), IsOk());
      EXPECT_EQ(other_pred, 2);
      Parking::Get().Release(1);
      hook.threads[0].join();
    }
    ASSERT_THAT(full_status, IsOk());
    ASSERT_THAT(fs.SimulatePowerLoss(static_cast<uint64_t>(run) * 7919 + 1), IsOk());
    b->reset();
    a->reset();
    absl::StatusOr<std::unique_ptr<Db>> reopened = Db::Open("/m.db", full);
    ASSERT_THAT(reopened, IsOk());
    const Contents rec = Read(**reopened);
    EXPECT_EQ(Whole(rec), "");
    if (!rec.own.contains(2)) ++lost;
  }
  EXPECT_EQ(lost, 0) << lost << " of " << kRuns << " power losses lost the FULL commit that a "
                     << SyncLevelName(c.other) << " connection's flush acknowledged";
}

INSTANTIATE_TEST_SUITE_P(Cases, MixedLevelFlushTest,
                         ::testing::Values(MixedFlushCase{JournalMode::kWal, SyncLevel::kOff},
                                           MixedFlushCase{JournalMode::kWal, SyncLevel::kNormal},
                                           MixedFlushCase{JournalMode::kWal2, SyncLevel::kOff},
                                           MixedFlushCase{JournalMode::kWal2,
                                                          SyncLevel::kNormal}),
                         MixedFlushName);

}  // namespace
}  // namespace journalkv
