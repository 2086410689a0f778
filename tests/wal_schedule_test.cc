// The schedule explorer (tests/schedule_explorer.h) over WAL and WAL2: a writer, two readers on
// their own connections, a reader thread of the writer's own connection and a checkpointer
// (PASSIVE, FULL, RESTART, TRUNCATE in turn), and in every other schedule of each kind the
// writer connection's background checkpointer (async:0/B, deferring its copies; the schedule
// adopts its thread), run over the in-memory file system, one at a time
// between two hook points, in an order drawn from a seed. Checked:
//   - every read transaction sees one committed state: the accounts sum to the bank's total,
//     and they are exactly what the writer committed at the version the transaction read (a
//     version map kept by the writer), read twice within the transaction;
//   - after every step, the published index is sane: the backfill is within the published
//     log, what a checkpoint copied is within what it may have written, and a generation's
//     published end never moves back;
//   - at the end, after a final checkpoint and a reopen, the last acknowledged commit is there
//     and Check() passes; no schedule deadlocks (the controller aborts with the trace).
// A failing schedule prints its seed and its last steps; --test_env=JKV_SCHEDULE_SEED=N
// replays exactly that one. The default tier runs a few dozen schedules a mode, each from a
// seed drawn from the run seed (new each run, printed); the long tier runs thousands
// (JKV_SCHEDULES=N: N a mode). A third of the schedules drop threads at steps drawn by name
// instead of at drawn step numbers; JKV_SCHEDULE_DROPS=a,b,c names the steps of every
// schedule, to look at one window (begin_read:header,restart:midway,read:frame finds the
// restart race of docs/design-notes.md in a few dozen schedules when its fix is undone).
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "checkpoint/checkpointer.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "pager/wal_strategy.h"
#include "shm/wal_index.h"
#include "tests/crash_sweep.h"
#include "tests/schedule_explorer.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::Schedule;
using ::journalkv::testing::ScheduleOptions;
using ::journalkv::testing::TierScaled;
using ::journalkv::testing::UnderSanitizer;

constexpr int kAccounts = 8;
constexpr int kInitial = 100;
constexpr int kCommits = 8;
constexpr int kReads = 4;
constexpr int kCheckpoints = 6;
const std::string kPad(200, '.');  // spreads the accounts over several 1 KiB pages

std::string AccountKey(int i) { return absl::StrCat("acct", 10 + i); }

using Accounts = std::array<int, kAccounts>;

// One schedule's world: the database, the version map and the first failure.
class World {
 public:
  World(JournalMode mode, uint64_t seed) : mode_(mode), rng_(seed) {}

  Options Opts(uint32_t cache_pages = 2000, const char* policy = "manual") {
    Options o;
    o.cache_pages = cache_pages;
    o.journal_mode = mode_;
    o.file_system = &fs_;
    o.page_size = 1024;
    o.wal2_switch_pages = 8;
    o.checkpoint_policy = policy;
    o.busy_timeout = absl::Seconds(2);
    return o;
  }
  std::unique_ptr<Db> Open(uint32_t cache_pages = 2000, const char* policy = "manual") {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", Opts(cache_pages, policy));
    if (!db.ok()) {
      Fail(absl::StrCat("open: ", db.status().ToString()));
      return nullptr;
    }
    return std::move(*db);
  }

  // Version 0: every account at kInitial. Before the schedule starts.
  bool Create(Db& db) {
    Accounts start;
    start.fill(kInitial);
    {
      std::lock_guard<std::mutex> lock(mu_);
      versions_.push_back(start);
    }
    std::unique_ptr<WriteTransaction> w = *db.BeginWrite();
    for (int i = 0; i < kAccounts; ++i) {
      if (!w->Put(AccountKey(i), absl::StrCat(kInitial, kPad)).ok()) return false;
    }
    if (!w->Put("version", "0").ok() || !w->Commit().ok()) return false;
    // Into the database file, so that the schedule's snapshots read pages from it too.
    absl::StatusOr<CheckpointResult> r = db.Checkpoint(CheckpointMode::kTruncate);
    return r.ok() && r->restarted;
  }

  // A transfer between two accounts and the next version, kCommits times.
  void Writer(Db& db) {
    std::mt19937_64 rng(rng_());
    for (int c = 0; c < kCommits && !failed(); ++c) {
      absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
      if (Busy(w.status(), "begin write")) {
        --c;
        continue;
      }
      if (!w.ok()) return;
      std::optional<int> version = ReadInt(**w, "version");
      if (!version) return;
      Accounts next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        next = versions_[*version];
      }
      const int from = static_cast<int>(rng() % kAccounts), to = static_cast<int>(rng() % kAccounts);
      const int amount = 1 + static_cast<int>(rng() % 10);
      next[from] -= amount;
      next[to] += amount;
      for (int i : {from, to}) {
        if (!Check((*w)->Put(AccountKey(i), absl::StrCat(next[i], kPad)), "put")) return;
      }
      if (!Check((*w)->Put("version", absl::StrCat(*version + 1)), "put")) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (versions_.size() != static_cast<size_t>(*version) + 1) {
          Fail(absl::StrCat("the writer read version ", *version, " after committing ",
                            versions_.size() - 1));
          return;
        }
        versions_.push_back(next);
      }
      if (!Check((*w)->Commit(), "commit")) return;
      acknowledged_.store(*version + 1);
      Yield();
    }
    writer_done_.store(true);
  }

  // Read transactions, each reading every account twice and checking them against the map.
  void Reader(Db& db, int reads) {
    for (int r = 0; r < reads && !failed(); ++r) {
      Pace(r * kCommits / reads);
      absl::StatusOr<std::unique_ptr<ReadTransaction>> t = db.BeginRead();
      if (Busy(t.status(), "begin read")) continue;
      if (!t.ok()) return;
      for (int pass = 0; pass < 2 && !failed(); ++pass) {
        std::optional<int> version = ReadInt(**t, "version");
        if (!version) return;
        Accounts expect;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (*version < 0 || static_cast<size_t>(*version) >= versions_.size()) {
            Fail(absl::StrCat("a reader saw version ", *version, ", never committed"));
            return;
          }
          expect = versions_[*version];
        }
        int sum = 0;
        for (int i = 0; i < kAccounts; ++i) {
          std::optional<int> v = ReadInt(**t, AccountKey(i));
          if (!v) return;
          sum += *v;
          if (*v != expect[i]) {
            Fail(absl::StrCat("a reader at version ", *version, " (pass ", pass + 1, ") read ",
                              AccountKey(i), " = ", *v, ", committed ", expect[i],
                              ": a torn snapshot"));
            return;
          }
        }
        if (sum != kAccounts * kInitial) Fail(absl::StrCat("the accounts sum to ", sum));
      }
    }
  }

  void Checkpointer(Db& db) {
    const CheckpointMode modes[] = {CheckpointMode::kPassive, CheckpointMode::kFull,
                                    CheckpointMode::kRestart, CheckpointMode::kTruncate};
    for (int c = 0; c < kCheckpoints && !failed(); ++c) {
      Pace(1 + c * kCommits / kCheckpoints);
      absl::StatusOr<CheckpointResult> r = db.Checkpoint(modes[c % 4]);
      if (Busy(r.status(), "checkpoint")) continue;
      if (!r.ok()) return;
    }
  }

  // After the schedule: every handle closed, a final checkpoint by a new connection, reopened.
  void Final() {
    if (failed()) return;
    for (int round = 0; round < 2; ++round) {
      std::unique_ptr<Db> db = Open();
      if (db == nullptr) return;
      if (round == 0) {
        absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kTruncate);
        if (!Check(r.status(), "final checkpoint")) return;
      }
      std::unique_ptr<ReadTransaction> t = *db->BeginRead();
      std::optional<int> version = ReadInt(*t, "version");
      if (!version) return;
      if (*version != acknowledged_.load()) {
        Fail(absl::StrCat("after a reopen the database is at version ", *version,
                          ", the last acknowledged commit was ", acknowledged_.load()));
        return;
      }
      Accounts expect;
      {
        std::lock_guard<std::mutex> lock(mu_);
        expect = versions_[*version];
      }
      for (int i = 0; i < kAccounts; ++i) {
        std::optional<int> v = ReadInt(*t, AccountKey(i));
        if (!v) return;
        if (*v != expect[i]) {
          Fail(absl::StrCat("after a reopen ", AccountKey(i), " = ", *v, ", committed ",
                            expect[i]));
        }
      }
      t.reset();
      absl::StatusOr<CheckResult> check = db->Check();
      if (!Check(check.status(), "check")) return;
      if (!check->ok()) Fail(absl::StrCat("Check(): ", check->problems.front()));
    }
  }

  // The per-step check: the published index over the -shm, read without taking anything.
  std::string StepCheck() {
    if (index_ == nullptr) {
      absl::StatusOr<std::unique_ptr<vfs::File>> f =
          fs_.Open("/x.db-shm", {vfs::OpenMode::kReadWrite, vfs::FileKind::kShm});
      if (!f.ok()) return "";
      absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
          shm::WalIndex::OpenShared(f->get(), /*initialize=*/false);
      if (!index.ok()) return "";
      shm_file_ = std::move(*f);
      index_ = std::move(*index);
    }
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return "";  // a writer is publishing
    const int logs = mode_ == JournalMode::kWal2 ? 2 : 1;
    for (int l = 0; l < logs; ++l) {
      const shm::LogState& log = h.logs[l];
      const uint32_t backfill = index_->backfill(l);
      if (backfill > log.mx_frame) {
        return absl::StrCat("log ", l, ": backfill ", backfill, " past the published end ",
                            log.mx_frame, " of generation ", log.ckpt_seq);
      }
      const uint64_t copied = index_->copied_through(l), written = index_->written_through(l);
      if ((copied >> 32) == (written >> 32) && static_cast<uint32_t>(copied) >
                                                   static_cast<uint32_t>(written)) {
        return absl::StrCat("log ", l, ": copied through ", static_cast<uint32_t>(copied),
                            " past written through ", static_cast<uint32_t>(written));
      }
      auto& [seq, mx] = last_[l];
      if (seq == log.ckpt_seq && log.mx_frame < mx) {
        return absl::StrCat("log ", l, ": generation ", seq, "'s published end went back from ",
                            mx, " to ", log.mx_frame);
      }
      seq = log.ckpt_seq;
      mx = log.mx_frame;
    }
    return "";
  }
  void CloseIndex() {
    index_.reset();
    shm_file_.reset();
  }

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !failure_.empty();
  }
  std::string failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }
  uint64_t busy() const { return busy_.load(); }
  int acknowledged() const { return acknowledged_.load(); }

 private:
  void Fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = what;
  }
  bool Check(const absl::Status& s, const char* what) {
    if (!s.ok()) Fail(absl::StrCat(what, ": ", s.ToString()));
    return s.ok();
  }
  // A busy answer is allowed (a busy timeout passed while the schedule ran someone else):
  // true, and the caller tries again. Any other error fails the schedule.
  bool Busy(const absl::Status& s, const char* what) {
    if (s.ok()) return false;
    if (s.code() == absl::StatusCode::kResourceExhausted) {
      ++busy_;
      return busy_.load() < 10000;
    }
    Fail(absl::StrCat(what, ": ", s.ToString()));
    return false;
  }
  // Between two operations a thread goes last (the schedule's "wait"), so that the threads'
  // operations interleave and the change points preempt them inside one.
  static void Yield() { pager::CallWalHook("wait"); }
  // Until the writer has acknowledged `commits` (or ended): readers and the checkpointer spread
  // over the writer's run instead of running before it.
  void Pace(int commits) {
    Yield();
    while (acknowledged_.load() < commits && !writer_done_.load() && !failed()) Yield();
  }
  template <typename Txn>
  std::optional<int> ReadInt(Txn& t, const std::string& key) {
    absl::StatusOr<std::optional<std::string>> v = t.Get(key);
    if (!Check(v.status(), "get")) return std::nullopt;
    int n;
    if (!v->has_value() || !absl::SimpleAtoi(absl::string_view(**v).substr(0, (*v)->find('.')), &n)) {
      Fail(absl::StrCat(key, " is missing or unreadable"));
      return std::nullopt;
    }
    return n;
  }

  const JournalMode mode_;
  std::mt19937_64 rng_;
  vfs::MemFileSystem fs_;
  std::mutex mu_;
  std::vector<Accounts> versions_;  // the state the writer committed at each version
  std::atomic<int> acknowledged_{0};
  std::atomic<bool> writer_done_{false};
  std::atomic<uint64_t> busy_{0};
  std::string failure_;
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
  std::array<std::pair<uint32_t, uint32_t>, 2> last_{};
};

struct Outcome {
  std::string failure;  // "" when the schedule passed
  uint64_t steps = 0;
  uint64_t decisions = 0;
  uint64_t restarts = 0;
  uint64_t stalls = 0;
  uint64_t busy = 0;
  int adopted = 0;  // background threads the schedule adopted
  std::string trace;
  std::string drops;  // the steps drawn by name, if any
};

Outcome RunOne(JournalMode mode, uint64_t seed, uint64_t expected_decisions,
               bool whole_trace) {
  World world(mode, seed);
  Outcome out;
  // One reader with the smallest page cache (16 pages, one a shard; the pager keeps at least
  // that many): it reads most pages from the log or the database file, where a torn snapshot
  // shows (a cached page of its generation would not).
  // Every other schedule of each kind, the writer's connection checkpoints in the background
  // after every commit (async:0/B at sync FULL: its copies are deferred, unpublished, C3), a
  // thread the schedule adopts: the background checkpointer beside another connection's
  // checkpoints (race 2 of the WAL-races issue).
  const bool background = (seed / 3) % 2 == 1;
  std::unique_ptr<Db> writer = world.Open(2000, background ? "async:0/1000000" : "manual"),
                      reader = world.Open(/*cache_pages=*/1), other = world.Open(),
                      checkpointer = world.Open();
  if (writer == nullptr || reader == nullptr || other == nullptr || checkpointer == nullptr ||
      !world.Create(*writer)) {
    out.failure = world.failed() ? world.failure() : "could not create the database";
    return out;
  }
  ScheduleOptions options;
  options.seed = seed;
  options.expected_decisions = expected_decisions;
  if (whole_trace) options.trace_size = 1 << 20;
  // Three kinds of schedule, by seed: PCT change points at any store or named step, PCT
  // change points at the named steps only, and drops at three protocol steps drawn by name.
  options.every_store_decides = seed % 3 == 0;
  if (seed % 3 == 2) {
    options.change_points = 0;
    options.drop_points = 3;
  }
  // JKV_SCHEDULE_DROPS=a,b,c: every schedule drops at these steps (and has no change points),
  // to look at one window.
  if (const char* drops = std::getenv("JKV_SCHEDULE_DROPS"); drops != nullptr) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(drops, ',');
  }
  if (UnderSanitizer()) options.stall = absl::Milliseconds(100);
  options.adopt_threads = background;
  {
    Schedule schedule(options);
    schedule.SetStepCheck([&] { return world.StepCheck(); });
    schedule.Run({
        [&] { world.Writer(*writer); },
        [&] { world.Reader(*reader, kReads); },
        [&] { world.Reader(*other, kReads); },
        [&] { world.Reader(*writer, kReads / 2); },  // a reader thread of the writer's handle
        [&] { world.Checkpointer(*checkpointer); },
    });
    out.restarts = writer->Stats().log_restarts + checkpointer->Stats().log_restarts;
    out.steps = schedule.steps();
    out.decisions = schedule.decisions();
    out.stalls = schedule.stalls();
    out.adopted = schedule.adopted();
    out.trace = schedule.Trace();
    out.drops = schedule.DropNames();
    if (!schedule.step_failure().empty()) out.failure = schedule.step_failure();
    // Before the schedule goes: the writer's background checkpointer thread, which the
    // schedule adopted, calls its hooks until its database is closed.
    world.CloseIndex();
    writer.reset();
    reader.reset();
    other.reset();
    checkpointer.reset();
  }
  if (out.failure.empty()) world.Final();
  if (out.failure.empty()) out.failure = world.failure();
  out.busy = world.busy();
  return out;
}

class WalScheduleTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(WalScheduleTest, EveryScheduleReadsWholeSnapshotsAndLosesNoCommit) {
  const char* name = GetParam() == JournalMode::kWal2 ? "wal2" : "wal";
  std::vector<uint64_t> seeds;
  const char* env = std::getenv("JKV_SCHEDULE_SEED");
  uint64_t replay = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &replay)) {
    seeds.push_back(replay);
  } else {
    // JKV_SCHEDULES=N runs N schedules a mode instead of the tier's number.
    int n = TierScaled(40, 10, 2000);
    if (const char* count = std::getenv("JKV_SCHEDULES"); count != nullptr) {
      EXPECT_TRUE(absl::SimpleAtoi(count, &n) && n > 0) << "JKV_SCHEDULES=" << count;
    }
    for (int i = 0; i < n; ++i) {
      seeds.push_back(testing::DrawSeed(absl::StrCat("schedule/", name), i) >> 1);
    }
  }
  // The change points span a run's decision points (about 240 a run at every store, 80 at the
  // named steps; fixed, so that a seed alone replays its schedule).
  const uint64_t expected[3] = {250, 80, 0};
  uint64_t steps = 0, decisions = 0, stalls = 0, busy = 0, restarts = 0, adopted = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const uint64_t seed = seeds[i];
    Outcome o = RunOne(GetParam(), seed, expected[seed % 3], /*whole_trace=*/replay != 0);
    if (replay != 0) std::printf("%s: schedule seed %llu:\n%s", name,
                                 static_cast<unsigned long long>(seed), o.trace.c_str());
    ASSERT_EQ(o.failure, "") << name << ": schedule " << i + 1 << " of " << seeds.size()
                             << ", seed " << seed
                             << " (replay: --test_env=JKV_SCHEDULE_SEED=" << seed << ")"
                             << (o.drops.empty() ? "" : ", drops at: ") << o.drops << "\n"
                             << "the last steps:\n"
                             << o.trace;
    steps += o.steps;
    decisions += o.decisions;
    restarts += o.restarts;
    stalls += o.stalls;
    busy += o.busy;
    adopted += o.adopted;
  }
  std::printf("schedule explorer (%s): %zu schedules, %llu steps (%llu a schedule, %llu of them "
              "decision points), %llu log restarts, %llu stalls outside hook points, %llu busy answers "
              "retried, %llu background checkpointer threads adopted\n",
              name, seeds.size(), static_cast<unsigned long long>(steps),
              static_cast<unsigned long long>(steps / seeds.size()),
              static_cast<unsigned long long>(decisions / seeds.size()),
              static_cast<unsigned long long>(restarts),
              static_cast<unsigned long long>(stalls), static_cast<unsigned long long>(busy),
              static_cast<unsigned long long>(adopted));
  EXPECT_GT(steps, seeds.size() * 100) << "the schedules ran almost nothing";
}

INSTANTIATE_TEST_SUITE_P(Modes, WalScheduleTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return info.param == JournalMode::kWal2 ? "Wal2" : "Wal";
                         });

}  // namespace
}  // namespace journalkv
