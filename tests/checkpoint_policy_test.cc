// Checkpoint policies through the public API: a policy of your own is asked with the
// documented arguments and obeyed; checkpoint starvation under readers that are always active
// (threshold:N lets the log grow, async:N/B bounds it); a writer is never blocked by its own
// thread's reader; closing while the background checkpointer is mid-copy; the background
// checkpointer's I/O errors reach the next call.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/status_matchers.h"
#include "wal/checkpoint_copy.h"
#include "engine/db.h"
#include "wal/wal_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::testing::HasSubstr;

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }

// A policy whose answers the test scripts, recording what it was told.
class ScriptedPolicy final : public CheckpointPolicy {
 public:
  PolicyDecision AfterCommit(const LogSnapshot& log) override {
    base::MutexLock lock(&mu_);
    seen_.push_back(log);
    if (hook_) hook_();
    return answer_;
  }
  std::string Name() const override { return "scripted"; }

  void Answer(PolicyDecision d, std::function<void()> hook = nullptr) {
    base::MutexLock lock(&mu_);
    answer_ = d;
    hook_ = std::move(hook);
  }
  std::vector<LogSnapshot> Seen() {
    base::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  base::Mutex mu_;
  PolicyDecision answer_ ABSL_GUARDED_BY(mu_);
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
  std::vector<LogSnapshot> seen_ ABSL_GUARDED_BY(mu_);
};

class CheckpointPolicyTest : public ::testing::Test {
 protected:
  Options WalOptions() {
    Options o;
    o.journal_mode = JournalMode::kWal;
    o.file_system = &mem_;
    return o;
  }
  std::unique_ptr<Db> Open(const Options& o) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }

  vfs::MemFileSystem mem_;
  const std::string path_ = "/x.db";
};

TEST_F(CheckpointPolicyTest, AUserPolicyIsToldTheLogsStateAndObeyed) {
  auto policy = std::make_shared<ScriptedPolicy>();
  Options o = WalOptions();
  o.custom_checkpoint_policy = policy;
  o.checkpoint_policy = "not even parsed when a custom policy is given";
  std::unique_ptr<Db> db = Open(o);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->Stats().checkpoint_policy, "scripted");

  // kNone: the log keeps every commit; each call sees the frames the commit appended.
  for (int i = 0; i < 5; ++i) ASSERT_THAT(db->Put(Key(i), "v"), IsOk());
  std::vector<LogSnapshot> seen = policy->Seen();
  ASSERT_EQ(seen.size(), 5u);
  uint32_t frames = 0;
  for (const LogSnapshot& log : seen) {
    EXPECT_GE(log.commit_frames, 1u);
    frames += log.commit_frames;
    EXPECT_EQ(log.log_frames, frames);
    EXPECT_EQ(log.uncopied, frames);
    EXPECT_EQ(log.live_frames, frames);
    EXPECT_EQ(log.active_readers, 0);
    EXPECT_EQ(log.pinned_back, 0u);
    EXPECT_EQ(log.since_last_checkpoint, absl::InfiniteDuration());  // none yet
  }
  EXPECT_EQ(db->Stats().checkpoints, 0u);

  // kCheckpointNow: the commit's thread copies the log before Commit returns.
  policy->Answer(PolicyDecision::CheckpointNow());
  ASSERT_THAT(db->Put(Key(100), "v"), IsOk());
  DbStats s = db->Stats();
  EXPECT_EQ(s.policy_checkpoints, 1u);
  EXPECT_EQ(s.checkpoints, 1u);
  EXPECT_EQ(s.log_unbackfilled, 0u);
  EXPECT_GT(s.frames_copied, 0u);

  // Now a checkpoint has run: the policy is told how long ago.
  policy->Answer(PolicyDecision::None());
  ASSERT_THAT(db->Put(Key(101), "v"), IsOk());
  seen = policy->Seen();
  EXPECT_LT(seen.back().since_last_checkpoint, absl::Minutes(1));
  EXPECT_EQ(seen.back().log_frames, 0u + seen.back().commit_frames);  // the log restarted

  // kWakeBackground: the background checkpointer copies the log soon after.
  policy->Answer(PolicyDecision::WakeBackground());
  ASSERT_THAT(db->Put(Key(102), "v"), IsOk());
  for (int i = 0; i < 5000 && db->Stats().log_unbackfilled != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s = db->Stats();
  EXPECT_EQ(s.log_unbackfilled, 0u);
  EXPECT_GE(s.background_checkpoints, 1u);
  EXPECT_EQ(s.background_errors, 0u);

  // kBlockUnder: Commit returns once the log's live frames are under the limit (here: every
  // frame copied, so the next commit restarts the log).
  policy->Answer(PolicyDecision::BlockUnder(1));
  ASSERT_THAT(db->Put(Key(103), "v"), IsOk());
  s = db->Stats();
  EXPECT_EQ(s.blocked_commits, 1u);
  EXPECT_EQ(s.blocked_timeouts, 0u);
  EXPECT_EQ(s.log_unbackfilled, 0u);
  EXPECT_GE(s.blocked_writer_ms, 0.0);

  for (int i : {0, 4, 100, 101, 102, 103}) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Key(i)));
    EXPECT_EQ(v, "v") << i;
  }
  EXPECT_EQ(db->Stats().write_txns, 9u);
}

TEST_F(CheckpointPolicyTest, ThePolicySeesReadersAndWhatTheyHoldBack) {
  auto policy = std::make_shared<ScriptedPolicy>();
  Options o = WalOptions();
  o.custom_checkpoint_policy = policy;
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put(Key(0), "v"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> reader, db->BeginRead());
  ASSERT_THAT(db->Put(Key(1), "v"), IsOk());
  ASSERT_THAT(db->Put(Key(2), "v"), IsOk());
  const std::vector<LogSnapshot> seen = policy->Seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].active_readers, 1);
  EXPECT_EQ(seen[2].pinned_back, seen[1].commit_frames + seen[2].commit_frames);
  reader.reset();
}

TEST_F(CheckpointPolicyTest, ThresholdCheckpointsOnTheCommittingThread) {
  Options o = WalOptions();
  o.checkpoint_policy = "threshold:20";
  std::unique_ptr<Db> db = Open(o);
  uint32_t largest = 0;
  for (int i = 0; i < 200; ++i) {
    ASSERT_THAT(db->Put(Key(i), std::string(50, 'v')), IsOk());
    largest = std::max(largest, db->Stats().log_frames);
  }
  const DbStats s = db->Stats();
  EXPECT_EQ(s.checkpoint_policy, "threshold:20");
  EXPECT_GT(s.policy_checkpoints, 5u);
  EXPECT_EQ(s.background_checkpoints, 0u);  // no thread
  EXPECT_LT(largest, 20u + 10u);            // restarted after each checkpoint
  EXPECT_EQ(s.max_log_frames, largest);
  EXPECT_GT(s.log_restarts, 5u);
}

TEST_F(CheckpointPolicyTest, ManualNeverCheckpoints) {
  Options o = WalOptions();
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> db = Open(o);
  for (int i = 0; i < 300; ++i) ASSERT_THAT(db->Put(Key(i), "v"), IsOk());
  DbStats s = db->Stats();
  EXPECT_EQ(s.checkpoints, 0u);
  EXPECT_GE(s.log_frames, 300u);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, db->Checkpoint(CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, s.log_frames);
}

TEST_F(CheckpointPolicyTest, BadPolicyStringFailsOpenWithItsName) {
  Options o = WalOptions();
  o.checkpoint_policy = "async:100/50";
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, o);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(db.status().message(), HasSubstr("'async:100/50'"));
}

// Readers always active: each reader thread begins its next read transaction before it ends
// the previous one, and ends the previous one only once two more commits have landed (or 2 ms
// passed, which lets readers move on while the policy blocks the writer). So right after any
// commit some open snapshot is older than it, whatever the relative speed of the threads.
struct Starvation {
  uint32_t largest_log = 0;
  uint64_t commits = 0;
  DbStats stats;
};

Starvation RunStarvation(Db& db, int commits) {
  std::atomic<bool> done{false};
  std::atomic<int> readers_started{0};
  std::atomic<uint64_t> committed{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&db, &done, &readers_started, &committed] {
      absl::StatusOr<std::unique_ptr<ReadTransaction>> held = db.BeginRead();
      ASSERT_THAT(held, IsOk());
      ++readers_started;
      while (!done.load()) {
        absl::StatusOr<std::unique_ptr<ReadTransaction>> next = db.BeginRead();
        ASSERT_THAT(next, IsOk());
        const uint64_t began = committed.load();
        const absl::Time until = absl::Now() + absl::Milliseconds(2);
        while (committed.load() < began + 2 && absl::Now() < until && !done.load()) {
          std::this_thread::yield();
        }
        ASSERT_THAT((*next)->Get(Key(1)), IsOk());
        held = std::move(next);  // ends the previous one after the next one began
      }
    });
  }
  while (readers_started.load() < 2) std::this_thread::yield();
  Starvation out;
  for (int i = 0; i < commits; ++i) {
    EXPECT_THAT(db.Put(Key(i % 500), std::string(40, 'a' + i % 26)), IsOk());
    ++committed;
    out.largest_log = std::max(out.largest_log, db.Stats().log_frames);
    ++out.commits;
  }
  done = true;
  for (std::thread& t : readers) t.join();
  out.stats = db.Stats();
  return out;
}

TEST_F(CheckpointPolicyTest, StarvationThresholdLetsTheLogGrow) {
  Options o = WalOptions();
  o.checkpoint_policy = "threshold:50";
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put(Key(1), "v"), IsOk());
  const Starvation r = RunStarvation(*db, 1500);
  // Checkpoints ran after nearly every commit past 50 frames, but never caught up with the
  // readers, so the log never restarted: it holds every commit.
  std::printf("threshold:50 under readers always active: largest log %u frames after %llu "
              "commits, %llu checkpoints\n",
              r.largest_log, static_cast<unsigned long long>(r.commits),
              static_cast<unsigned long long>(r.stats.policy_checkpoints));
  EXPECT_GT(r.stats.policy_checkpoints, 100u);
  EXPECT_GT(r.largest_log, 10u * 50u);
}

TEST_F(CheckpointPolicyTest, StarvationAsyncKeepsTheLogUnderItsBlockingThreshold) {
  Options o = WalOptions();
  o.checkpoint_policy = "async:10/50";
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put(Key(1), "v"), IsOk());
  const Starvation r = RunStarvation(*db, 1500);
  std::printf("async:10/50 under readers always active: largest log %u frames after %llu "
              "commits, %llu blocked commits, %.1f ms blocked\n",
              r.largest_log, static_cast<unsigned long long>(r.commits),
              static_cast<unsigned long long>(r.stats.blocked_commits), r.stats.blocked_writer_ms);
  // The blocking threshold plus one transaction (a one-key put logs at most a few pages).
  EXPECT_LE(r.largest_log, 50u + 6u);
  EXPECT_EQ(r.stats.max_log_frames, r.largest_log);
  EXPECT_GT(r.stats.blocked_commits, 0u);
  EXPECT_EQ(r.stats.blocked_timeouts, 0u);
  EXPECT_GT(r.stats.log_restarts, 10u);
  EXPECT_EQ(r.stats.background_errors, 0u);
}

// Holds the background checkpointer before it copies while `g_hold_copies` is set; a commit
// that starts waiting for the copy ("policy:blocked") lets it go. A step that a commit woke
// before the reader ended can otherwise run after it and copy the whole log before the next
// commit looks (it did, under ASan). The hold gives up after 20 s, so a commit that never
// blocks fails the test instead of hanging it.
std::atomic<bool> g_hold_copies{false};
void HoldCopyWhileAsked(const char* point) {
  if (std::string(point) != "copy") return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (g_hold_copies.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}
void ReleaseCopiesWhenBlocked(const char* point) {
  if (std::string(point) == "policy:blocked") g_hold_copies = false;
}

TEST_F(CheckpointPolicyTest, AWriterIsNotBlockedByItsOwnThreadsReader) {
  Options o = WalOptions();
  o.checkpoint_policy = "async:0/4";
  o.busy_timeout = absl::Seconds(30);  // a wait for itself would show as a hang
  std::unique_ptr<Db> db = Open(o);
  ASSERT_THAT(db->Put(Key(0), "v"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> reader, db->BeginRead());
  for (int i = 1; i < 30; ++i) ASSERT_THAT(db->Put(Key(i), "v"), IsOk());
  DbStats s = db->Stats();
  EXPECT_EQ(s.blocked_commits, 0u);
  EXPECT_GT(s.log_frames, 4u);  // the reader holds the checkpoint back
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, reader->Get(Key(5)));
  EXPECT_EQ(v, std::nullopt);  // its snapshot
  g_hold_copies = true;
  wal::SetCheckpointHookForTesting(HoldCopyWhileAsked);
  wal::SetWalHookForTesting(ReleaseCopiesWhenBlocked);
  reader.reset();
  ASSERT_THAT(db->Put(Key(30), "v"), IsOk());  // now it blocks until copied, and returns
  wal::SetWalHookForTesting(nullptr);
  wal::SetCheckpointHookForTesting(nullptr);
  s = db->Stats();
  EXPECT_EQ(s.blocked_commits, 1u);
  EXPECT_EQ(s.log_unbackfilled, 0u);
}

// The checkpoint hook: the background checkpointer announces it is about to copy, then waits
// until the test has begun closing its database.
std::atomic<bool> g_in_copy{false};
std::atomic<bool> g_closing{false};
void HoldCopyUntilClosing(const char* point) {
  if (std::string(point) != "copy") return;
  g_in_copy = true;
  while (!g_closing.load()) std::this_thread::yield();
  // Close sets the stop flag first thing; give it ample time to get there.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST_F(CheckpointPolicyTest, CloseWhileTheBackgroundCheckpointerIsMidCopy) {
  Options watcher_options = WalOptions();
  watcher_options.checkpoint_policy = "manual";
  std::unique_ptr<Db> watcher = Open(watcher_options);  // keeps the log and index alive
  auto policy = std::make_shared<ScriptedPolicy>();
  Options o = WalOptions();
  o.custom_checkpoint_policy = policy;
  std::unique_ptr<Db> db = Open(o);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> txn, db->BeginWrite());
    for (int i = 0; i < 2000; ++i) ASSERT_THAT(txn->Put(Key(i), std::string(100, 'x')), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  const DbStats before = watcher->Stats();
  ASSERT_GT(before.log_unbackfilled, 50u);

  g_in_copy = false;
  g_closing = false;
  wal::SetCheckpointHookForTesting(HoldCopyUntilClosing);
  policy->Answer(PolicyDecision::WakeBackground());
  ASSERT_THAT(db->Put(Key(5000), "last"), IsOk());
  while (!g_in_copy.load()) std::this_thread::yield();
  const uint64_t db_writes = mem_.stats().Snapshot(vfs::FileKind::kDatabase).writes;
  g_closing = true;
  ASSERT_THAT(db->Close(), IsOk());  // the step stops before its first page
  wal::SetCheckpointHookForTesting(nullptr);
  EXPECT_EQ(mem_.stats().Snapshot(vfs::FileKind::kDatabase).writes, db_writes);

  // Nothing was published; the other connection sees every commit and copies the log itself.
  const DbStats after = watcher->Stats();
  EXPECT_EQ(after.log_unbackfilled, after.log_frames);
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, watcher->Get(Key(5000)));
  EXPECT_EQ(v, "last");
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, watcher->Checkpoint(CheckpointMode::kPassive));
  EXPECT_EQ(r.copied, after.log_frames);
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, watcher->Check());
  EXPECT_TRUE(check.ok()) << check.problems.front();
  EXPECT_EQ(check.keys, 2001u);
}

// The checkpoint hook: the first background copy waits at "copy" until released; every
// "synced" (a C2 flush followed by a publish) is counted.
std::atomic<bool> g_hold_first_copy{false};
std::atomic<bool> g_held{false};
std::atomic<bool> g_release{false};
std::atomic<int> g_publishes{0};
void HoldFirstCopyCountPublishes(const char* point) {
  const std::string p = point;
  if (p == "synced") ++g_publishes;
  if (p == "copy" && g_hold_first_copy.exchange(false)) {
    g_held = true;
    while (!g_release.load()) std::this_thread::yield();
  }
}

TEST_F(CheckpointPolicyTest, AtFullTheBackgroundCheckpointerFlushesOncePerBatch) {
  auto policy = std::make_shared<ScriptedPolicy>();
  Options o = WalOptions();  // sync FULL: every published frame is durable already
  o.custom_checkpoint_policy = policy;
  std::unique_ptr<Db> db = Open(o);
  for (int i = 0; i < 10; ++i) ASSERT_THAT(db->Put(Key(i), "v"), IsOk());
  g_hold_first_copy = true;
  g_held = false;
  g_release = false;
  g_publishes = 0;
  wal::SetCheckpointHookForTesting(HoldFirstCopyCountPublishes);
  policy->Answer(PolicyDecision::WakeBackground());
  ASSERT_THAT(db->Put(Key(10), "v"), IsOk());
  while (!g_held.load()) std::this_thread::yield();
  // While the first step copies, more commits arrive, and wake the checkpointer once more.
  policy->Answer(PolicyDecision::None());
  for (int i = 11; i < 20; ++i) ASSERT_THAT(db->Put(Key(i), "v"), IsOk());
  policy->Answer(PolicyDecision::WakeBackground());
  ASSERT_THAT(db->Put(Key(20), "v"), IsOk());
  policy->Answer(PolicyDecision::None());
  g_release = true;
  for (int i = 0; i < 5000 && db->Stats().log_unbackfilled != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  wal::SetCheckpointHookForTesting(nullptr);
  const DbStats s = db->Stats();
  EXPECT_EQ(s.log_unbackfilled, 0u);
  // Two batches of copying (before and after the second wake), one flush and publish: the
  // step that found nothing new published both.
  EXPECT_GE(s.background_checkpoints, 3u);
  EXPECT_EQ(g_publishes.load(), 1);
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
  EXPECT_TRUE(check.ok());
}

class BackgroundErrorTest : public ::testing::Test {
 protected:
  // Opens a WAL database, commits 20 keys, then one more whose policy wakes the background
  // checkpointer right after the commit's own writes, when the next `op` anywhere (the
  // checkpoint's) is made to fail; returns once the checkpointer has failed.
  std::unique_ptr<Db> OpenAndFailTheBackground(vfs::FaultOp op) {
    options_.journal_mode = JournalMode::kWal;
    options_.file_system = &fault_;
    options_.custom_checkpoint_policy = policy_;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", options_);
    EXPECT_THAT(db, IsOk());
    if (!db.ok()) return nullptr;
    for (int i = 0; i < 20; ++i) EXPECT_THAT((*db)->Put(Key(i), "v"), IsOk());
    policy_->Answer(PolicyDecision::WakeBackground(),
                    [this, op] { fault_.FailNth(op, 1, EIO); });
    EXPECT_THAT((*db)->Put(Key(20), "v"), IsOk());  // the commit itself stands
    policy_->Answer(PolicyDecision::None());
    for (int i = 0; i < 5000 && (*db)->Stats().background_errors == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ((*db)->Stats().background_errors, 1u);
    return std::move(*db);
  }

  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fault_{&mem_};
  std::shared_ptr<ScriptedPolicy> policy_ = std::make_shared<ScriptedPolicy>();
  Options options_;
};

TEST_F(BackgroundErrorTest, AFailedWriteIsReportedByTheNextCallOnce) {
  // The checkpoint's first database page write fails.
  std::unique_ptr<Db> db = OpenAndFailTheBackground(vfs::FaultOp::kWrite);
  ASSERT_NE(db, nullptr);
  EXPECT_THAT(db->Stats().background_last_error, HasSubstr("/x.db"));

  absl::StatusOr<std::optional<std::string>> got = db->Get(Key(20));
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("background checkpoint"));
  // Reported once; the handle works on (the failed write was not a sync: nothing is lost).
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Key(20)));
  EXPECT_EQ(v, "v");
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, db->Checkpoint(CheckpointMode::kPassive));
  EXPECT_FALSE(r.blocked);
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
  EXPECT_TRUE(check.ok());
}

TEST_F(BackgroundErrorTest, AFailedSyncPutsTheHandleInItsErrorState) {
  // The checkpoint's database sync (C2) fails.
  std::unique_ptr<Db> db = OpenAndFailTheBackground(vfs::FaultOp::kSync);
  ASSERT_NE(db, nullptr);
  absl::Status first = db->Put(Key(21), "v");
  EXPECT_THAT(first.message(), HasSubstr("background checkpoint"));
  absl::Status second = db->Put(Key(21), "v");
  EXPECT_THAT(second.message(), HasSubstr("error state"));
  db.reset();
  // Reopening recovers: every acknowledged commit is there (sync FULL).
  options_.custom_checkpoint_policy = nullptr;
  JKV_ASSERT_OK_AND_ASSIGN(db, Db::Open("/x.db", options_));
  for (int i = 0; i <= 20; ++i) {
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(Key(i)));
    EXPECT_EQ(v, "v") << i;
  }
}

}  // namespace
}  // namespace journalkv
