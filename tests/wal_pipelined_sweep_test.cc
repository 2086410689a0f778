// Pipelined commits (WriteTransaction::CommitAsync, pager/commit_pipeline.h N1-N5) with
// transactions larger than the page cache, so that each one spills pages into the log before
// its commit while the commits before it are still waiting for their flush:
//   - SpillingCommitsWithReaders (in memory, threads): a writer pipelines spilling commits in
//     windows while reader threads of another connection and of the writer's own handle read
//     the whole database again and again. Every snapshot must be exactly the state after some
//     commit t (a spilled page of a transaction not yet committed, or a commit not yet
//     published, would show as a state that is no commit's, or as a later one), t at least the
//     last commit whose Wait returned OK before the read began.
//   - UnderCrashesAndCrashedRecoveries: the same workload under the crash harness
//     (tests/crash_sweep.h): power loss, process crash, and process crash then recovery then
//     power loss, at the points the driver picks (every sync and every idle moment sampled,
//     and more; every mutation in the long tier), and a sample of the states whose recovery
//     writes anything crashed again at every mutation of that recovery. Each recovered database
//     must pass Check() and hold exactly the keys of one commit t, with t from the last commit
//     whose Wait returned OK up to the last commit appended: acknowledged commits survive and
//     what survives is a prefix of the commit order. In the second window a TRUNCATE
//     checkpoint runs with two commits appended and their flush not yet run (it flushes them
//     as the writer, copies and restarts the log); in WAL2 the writer switches logs with
//     commits pending (wal2_switch_pages 40).
//
// Determinism (the crash harness replays a run up to its k-th mutation): the flusher thread is
// held at "pipeline:flushing" at the start of each window until the writer has appended the
// window's commits (and spilled their pages), then let go while the writer waits for the
// window's handles. So the writer's writes and the flusher's syncs never interleave, and every
// run makes the same mutations in the same order. A crash in the middle of a window fails the
// append (the writer releases the flusher then) or the flush (every commit of the window
// fails, N3).
//
// The driver gives Verify the allowed transactions {acknowledged, in flight}; with several
// commits in flight any one of those between them is a legal outcome (the log holds them in
// order and each builds on the one before), so Verify accepts the range between the two.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv::testing {
namespace {

using ::journalkv::testing::IsOk;

using Model = std::map<std::string, std::string>;

constexpr int kTransactions = 9;
constexpr int kWindow = 3;  // commits appended per window before the flusher goes
constexpr int kKeysPerTxn = 60;
constexpr int kCheckpointAfter = 5;  // appended second in the second window

std::string Key(int t, int i) { return absl::StrFormat("t%02d_k%03d", t, i); }
std::string Value(int t, int i, int version) {
  return absl::StrCat("v", t, "/", i, "@", version, std::string(150, 'a' + version % 26));
}

// What commit t does to the model (and to a transaction).
template <typename Put, typename Del>
void Apply(int t, Put put, Del del) {
  for (int i = 0; i < kKeysPerTxn; ++i) put(Key(t, i), Value(t, i, t));
  if (t > 1) {
    for (int i = 0; i < kKeysPerTxn; i += 5) put(Key(t - 1, i), Value(t - 1, i, t));
  }
  if (t > 2) {
    for (int i = 0; i < kKeysPerTxn; i += 7) del(Key(t - 2, i));
  }
  put("counter", absl::StrCat(t));
}

std::vector<Model> Models() {
  std::vector<Model> m(1);
  for (int t = 1; t <= kTransactions; ++t) {
    Model next = m.back();
    Apply(
        t, [&](const std::string& k, const std::string& v) { next[k] = v; },
        [&](const std::string& k) { next.erase(k); });
    m.push_back(std::move(next));
  }
  return m;
}

const std::vector<Model>& ModelsAfter() {
  static const std::vector<Model>* m = new std::vector<Model>(Models());
  return *m;
}

Options DbOptions(vfs::FileSystem* fs, pager::JournalMode mode) {
  Options o;
  o.file_system = fs;
  o.journal_mode = mode;
  o.sync = SyncLevel::kFull;
  o.page_size = 1024;
  o.cache_pages = 8;  // every transaction (about 11 KiB of values) spills
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 40;  // WAL2 switches logs within the run (with commits pending)
  o.wal_grow_bytes = kSweepWalGrowBytes;
  o.busy_timeout = absl::Seconds(5);
  return o;
}

// Reads every key; Check() first when `check`.
template <typename Txn>
absl::StatusOr<Model> ReadAll(Txn& txn) {
  Model m;
  std::unique_ptr<Iterator> it = txn.NewIterator();
  for (it->Seek(""); it->Valid(); it->Next()) {
    absl::StatusOr<absl::string_view> v = it->value_view();
    if (!v.ok()) return v.status();
    m[std::string(it->key())] = std::string(*v);
  }
  if (!it->status().ok()) return it->status();
  return m;
}

// The t whose model `m` is, in [lo, hi]; -1 when none.
int WhichState(const Model& m, int lo, int hi) {
  const std::vector<Model>& models = ModelsAfter();
  for (int t = std::max(lo, 0); t <= std::min(hi, kTransactions); ++t) {
    if (models[t] == m) return t;
  }
  return -1;
}

// Commit t, pipelined; a ready handle with the error when a step failed.
PendingCommit CommitAsync(Db& db, int t) {
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
  if (!w.ok()) return PendingCommit();  // an empty handle: see the callers (Ready, no append)
  absl::Status s;
  Apply(
      t,
      [&](const std::string& k, const std::string& v) {
        if (s.ok()) s = (*w)->Put(k, v);
      },
      [&](const std::string& k) {
        if (s.ok()) s = (*w)->Delete(k).status();
      });
  if (!s.ok()) return PendingCommit();
  return (*w)->CommitAsync();
}

// The flusher's gate: holds the first flusher that reaches "pipeline:flushing" after Arm
// until Release. One per process (the hook is global).
struct FlushGate {
  // std::mutex, not absl::Mutex::Await: TSan sees the condition's read (absl's build here is
  // not annotated for it).
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;     // guarded by mu
  bool held = false;      // guarded by mu
  bool released = true;   // guarded by mu

  static FlushGate& Get() {
    static FlushGate* g = new FlushGate;
    return *g;
  }
  static void Hook(const char* point) {
    if (std::string(point) != "pipeline:flushing") return;
    FlushGate& g = Get();
    std::unique_lock<std::mutex> lock(g.mu);
    if (!g.armed || g.held) return;
    g.held = true;
    g.cv.notify_all();
    g.cv.wait(lock, [&] { return g.released; });
  }
  void Arm() {
    std::lock_guard<std::mutex> lock(mu);
    armed = true;
    held = false;
    released = false;
  }
  bool AwaitHeld() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return held; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    armed = false;
    released = true;
    cv.notify_all();
  }
};

struct ScopedFlushGate {
  ScopedFlushGate() { wal::SetWalHookForTesting(&FlushGate::Hook); }
  ~ScopedFlushGate() {
    FlushGate::Get().Release();
    wal::SetWalHookForTesting(nullptr);
  }
};

struct Workload {
  pager::JournalMode mode;
  // Of the clean run: spills, commits whose handle was pending when the next one appended,
  // and snapshots the readers checked while commits were pending.
  uint64_t spills = 0;
  int pending_at_append = 0;
  int reader_checks = 0;
  bool checkpointed_pending = false;
  std::string reader_problem;

  RunResult Run(vfs::FaultInjectingFileSystem& fs, bool record) {
    RunResult result;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (!db.ok()) return result;
    std::unique_ptr<Db> other;  // a second connection's reader (recorded run)
    if (record) {
      absl::StatusOr<std::unique_ptr<Db>> o = Db::Open(kSweepPath, DbOptions(&fs, mode));
      if (!o.ok()) {
        reader_problem = absl::StrCat("second connection: ", o.status().ToString());
        return result;
      }
      other = *std::move(o);
      result.after.emplace_back();
      result.idle_points.push_back(fs.mutation_count());
    }
    bool failed = false;
    int checkpointed = 0;
    for (int start = 1; start <= kTransactions && !failed; start += kWindow) {
      std::vector<std::pair<int, PendingCommit>> window;
      FlushGate::Get().Arm();
      for (int t = start; t < start + kWindow && t <= kTransactions; ++t) {
        result.in_flight = t;
        PendingCommit h = CommitAsync(**db, t);
        if (h.Ready()) {
          // Appended and failed, or failed before the append: the crash point. (No commit of
          // this test completes at once: FULL pipelines every one.)
          failed = true;
          break;
        }
        if (t == start && !FlushGate::Get().AwaitHeld()) {
          reader_problem = "the flusher never reached pipeline:flushing";
          failed = true;
          break;
        }
        if (t > start && !window.back().second.Ready()) ++pending_at_append;
        window.emplace_back(t, h);
        if (t == kCheckpointAfter) {
          // A checkpoint with commits appended and their flush not yet run (the flusher held):
          // it flushes them as the writer and copies the log (TRUNCATE: restarts it too).
          absl::StatusOr<CheckpointResult> c = (*db)->Checkpoint(CheckpointMode::kTruncate);
          if (!c.ok()) {
            failed = true;
            break;
          }
          if (record) checkpointed_pending = !window.front().second.Ready();
          checkpointed = t;  // durable and published by the checkpoint's flush
        }
        if (record) {
          // In WAL2 a writer that switches logs first flushes and publishes the commits
          // pending before its own (W12 c): up to t - 1 may be visible, never t.
          const int flushed = mode == pager::JournalMode::kWal2 ? t - 1 : result.acknowledged;
          CheckReaders(**db, *other, result.acknowledged, std::max(flushed, checkpointed));
        }
      }
      FlushGate::Get().Release();
      bool wait_failed = false;
      for (auto& [t, h] : window) {
        if (!h.Wait().ok()) {
          failed = wait_failed = true;
          continue;  // every later one fails too (N3); each is waited for
        }
        if (wait_failed) {
          reader_problem = absl::StrCat("commit ", t, " acknowledged after an earlier one failed");
          continue;
        }
        result.acknowledged = result.acknowledged_durable = t;
        if (record) result.after.emplace_back();
      }
      if (failed) break;
      result.in_flight = 0;
      if (record) {
        CheckReaders(**db, *other, result.acknowledged, result.acknowledged);
        result.idle_points.push_back(fs.mutation_count());
      }
    }
    if (record) {
      spills = (*db)->Stats().spills;
      result.log_switches = (*db)->Stats().log_switches;
      other.reset();
    }
    (void)(*db)->Close();  // the last close checkpoints and removes the log
    return result;
  }

  // While commits after `acknowledged` are appended and the flusher is held, a reader of the
  // writer's handle and one of another connection see a commit from `acknowledged` up to
  // `flushed`, the last one a flush other than the flusher's made durable and published (a
  // WAL2 switch's, the checkpoint's), never one nothing has flushed.
  void CheckReaders(Db& db, Db& other, int acknowledged, int flushed) {
    for (Db* d : {&db, &other}) {
      absl::StatusOr<std::unique_ptr<ReadTransaction>> r = d->BeginRead();
      if (!r.ok()) {
        reader_problem = absl::StrCat("BeginRead: ", r.status().ToString());
        return;
      }
      absl::StatusOr<Model> m = ReadAll(**r);
      if (!m.ok()) {
        reader_problem = absl::StrCat("read: ", m.status().ToString());
        return;
      }
      const int t = WhichState(*m, 0, kTransactions);
      if ((t < acknowledged || t > flushed) && reader_problem.empty()) {
        reader_problem = absl::StrCat(d == &db ? "the writer's handle" : "another connection",
                                      " read the state of commit ", t, " (", m->size(),
                                      " keys; -1: no commit's) with ", acknowledged,
                                      " acknowledged and ", flushed, " at most flushed");
      }
      ++reader_checks;
    }
  }

  Recovered Verify(vfs::FaultInjectingFileSystem& fs, const std::vector<int>& allowed) {
    Recovered r;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (!db.ok()) {
      r.problem = absl::StrCat("open: ", db.status().ToString());
      return r;
    }
    r.rolled_back = (*db)->Stats().recoveries > 0;
    absl::StatusOr<CheckResult> check = (*db)->Check();
    if (!check.ok() || !check->ok()) {
      r.problem = check.ok() ? absl::StrCat("check: ", check->problems.front())
                             : absl::StrCat("check: ", check.status().ToString());
      return r;
    }
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
    if (!txn.ok()) {
      r.problem = absl::StrCat("BeginRead: ", txn.status().ToString());
      return r;
    }
    absl::StatusOr<Model> keys = ReadAll(**txn);
    txn->reset();
    if (!keys.ok()) {
      r.problem = absl::StrCat("read: ", keys.status().ToString());
      return r;
    }
    int lo = 0, hi = kTransactions;
    if (!allowed.empty()) {
      lo = *std::min_element(allowed.begin(), allowed.end());
      hi = *std::max_element(allowed.begin(), allowed.end());
    }
    r.t = WhichState(*keys, lo, hi);
    if (r.t < 0) {
      const int any = WhichState(*keys, 0, kTransactions);
      r.problem = absl::StrCat("recovered ", keys->size(), " keys: the state of commit ", any,
                               " (-1: of none), not one of ", lo, "..", hi);
      return r;
    }
    const absl::Status closed = (*db)->Close();
    if (!closed.ok()) r.problem = absl::StrCat("close: ", closed.ToString());
    return r;
  }

  void Recover(vfs::FaultInjectingFileSystem& fs) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kSweepPath, DbOptions(&fs, mode));
    if (db.ok()) (void)(*db)->BeginRead();
  }
};

class PipelinedSpillTest : public ::testing::TestWithParam<pager::JournalMode> {};

TEST_P(PipelinedSpillTest, UnderCrashesAndCrashedRecoveries) {
  ScopedFlushGate gate;
  auto workload = std::make_shared<Workload>();
  workload->mode = GetParam();
  SweepSpec spec;
  spec.name = absl::StrCat("pipelined_", pager::JournalModeName(GetParam()));
  spec.options.pager.journal_mode = GetParam();
  spec.options.transactions = kTransactions;
  spec.guarantees.atomic = true;
  spec.guarantees.power_loss = true;
  spec.guarantees.power_loss_durable = true;
  spec.further_points = static_cast<size_t>(TierScaled(60, 10, 400));
  spec.recovery_crash_states = static_cast<size_t>(TierScaled(6, 1, 250));
  spec.workload = SweepWorkload{
      [workload](vfs::FaultInjectingFileSystem& fs, bool record) {
        return workload->Run(fs, record);
      },
      [workload](vfs::FaultInjectingFileSystem& fs, const std::vector<int>& allowed) {
        return workload->Verify(fs, allowed);
      },
      [workload](vfs::FaultInjectingFileSystem& fs) { workload->Recover(fs); }};
  spec.check_clean_run = [workload](const RunResult& clean, const std::map<std::string, int>&) {
    EXPECT_EQ(clean.acknowledged, kTransactions);
    EXPECT_EQ(workload->reader_problem, "");
    EXPECT_GT(workload->spills, 0u) << "no transaction spilled: the sweep tests less than it says";
    EXPECT_GT(workload->pending_at_append, 0) << "no commit was appended on a pending one";
    EXPECT_GT(workload->reader_checks, kTransactions);
    EXPECT_TRUE(workload->checkpointed_pending) << "the checkpoint found no commit pending";
    if (workload->mode == pager::JournalMode::kWal2) {
      EXPECT_GT(clean.log_switches, 0u) << "WAL2 never switched logs with commits pending";
    }
    std::printf("%s: %llu spills, %d commits appended on a pending one, %d reader checks\n",
                pager::JournalModeName(workload->mode).data(),
                static_cast<unsigned long long>(workload->spills), workload->pending_at_append,
                workload->reader_checks);
  };
  RunCrashSweep(spec);
  EXPECT_EQ(workload->reader_problem, "");
}

// Threads, in memory: the writer pipelines spilling commits (windows of kWindow, no gate),
// readers of its handle and of another connection check every snapshot.
TEST_P(PipelinedSpillTest, SpillingCommitsWithReaders) {
  vfs::MemFileSystem fs;
  const Options o = DbOptions(&fs, GetParam());
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/data/s.db", o);
  ASSERT_THAT(db, IsOk());
  absl::StatusOr<std::unique_ptr<Db>> other = Db::Open("/data/s.db", o);
  ASSERT_THAT(other, IsOk());
  std::atomic<int> acknowledged{0};
  std::atomic<int> appended{0};
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  absl::Mutex mu;
  std::string problem;  // guarded by mu
  auto reader = [&](Db* d, const char* who) {
    while (!done.load()) {
      const int before = acknowledged.load();
      absl::StatusOr<std::unique_ptr<ReadTransaction>> r = d->BeginRead();
      absl::StatusOr<Model> m = r.ok() ? ReadAll(**r) : absl::StatusOr<Model>(r.status());
      const int last = appended.load();
      absl::MutexLock lock(&mu);
      if (!m.ok()) {
        problem = absl::StrCat(who, ": ", m.status().ToString());
        return;
      }
      const int t = WhichState(*m, before, last);
      if (t < 0) {
        problem = absl::StrCat(who, " read ", m->size(), " keys, the state of commit ",
                               WhichState(*m, 0, kTransactions), " (-1: of none), with ", before,
                               " acknowledged before the read and ", last, " appended after it");
        return;
      }
      reads.fetch_add(1);
    }
  };
  std::thread r1(reader, db->get(), "the writer's handle");
  std::thread r2(reader, other->get(), "another connection");
  std::vector<PendingCommit> h(kTransactions + 1);
  for (int t = 1; t <= kTransactions; ++t) {
    appended.store(t);
    h[t] = CommitAsync(**db, t);
    if (t > kWindow) {
      ASSERT_THAT(h[t - kWindow].Wait(), IsOk()) << "commit " << t - kWindow;
      acknowledged.store(t - kWindow);
    }
  }
  for (int t = kTransactions - kWindow + 1; t <= kTransactions; ++t) {
    ASSERT_THAT(h[t].Wait(), IsOk()) << "commit " << t;
    acknowledged.store(t);
  }
  // The readers go on a little after the last commit.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (reads.load() < 20 && absl::Now() < deadline) std::this_thread::yield();
  done.store(true);
  r1.join();
  r2.join();
  EXPECT_GT((*db)->Stats().spills, 0u);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(problem, "");
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelinedSpillTest,
                         ::testing::Values(pager::JournalMode::kWal, pager::JournalMode::kWal2),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv::testing
