// WAL mode with real processes on a real file (the POSIX file system): several processes share
// one database through `x.db-wal` (wal2: and `x.db-wal2`) and the mmapped `x.db-shm`, and are
// killed with SIGKILL. Every case runs in journal mode wal and wal2.
//
//   - ReadersWriterCheckpointerSurviveSigkill (with the writer's policy threshold:1000, in
//     wal2 threshold:100 (wal2_switch_pages is 100), and
//     async:0/100, whose background checkpointer works next to the checkpointer process and
//     dies with its writer): reader, writer and checkpointer processes run a
//     bank-transfer workload; every 100-300 ms one of them is SIGKILLed and replaced, the
//     checkpointer also kills itself at the checkpoint's hook points, and the writer is killed
//     (deterministically, a few times) inside a large transaction that spilled frames into the
//     log. Every snapshot any process reads must keep the total, and the killed transactions
//     must never become visible.
// The recovery cases (a dead process's -shm and log, the last close, a torn index header under
// live readers) are in wal_process_recovery_test.cc.
//
// Only children open the database while other children run; the parent opens it only when it
// is the single process left (or, in the last case, next to one child on purpose). Children
// report through exit codes (ChildExit) and counters in anonymous shared memory.
//
// JKV_WAL_MP_SEED=n changes the random choices (timing stays nondeterministic).
#include <tuple>

#include "wal/wal_connection.h"
#include "tests/wal_process_testing.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::TierScaled;
using namespace ::journalkv::wal_process_testing;  // the helpers of this pair of tests

// ---------------------------------------------------------------------------------------------
// ReadersWriterCheckpointerSurviveSigkill

// Shared by the parent and every child of the bank test.
struct BankShared {
  std::atomic<int> stop{0};
  std::atomic<int> spill_request{0};  // the writer starts large transaction n when this is n
  std::atomic<int> spill_ready{0};    // n once transaction n spilled and waits to be killed
  std::atomic<uint64_t> transfers{0};  // commits acknowledged to the writer
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> held_reads{0};  // snapshots held for a while, then read again
  std::atomic<uint64_t> spill_frames_seen{0};  // writer: spills of the large transactions
  std::atomic<uint64_t> checkpoints[4] = {};   // successful, per mode
  std::atomic<uint64_t> ckpt_blocked{0};
  std::atomic<uint64_t> ckpt_busy{0};
  std::atomic<uint64_t> ckpt_aborted{0};
  std::atomic<uint64_t> ckpt_restarts{0};
  std::atomic<uint64_t> ckpt_copied{0};
  std::atomic<uint64_t> hook_kills{0};  // checkpointer kills at hook points
  std::atomic<uint64_t> log_switches{0};  // wal2: by the writers (reported every 2 commits)
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

int SetupMain(const std::string& path, JournalMode mode) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions(mode));
  if (!db.ok()) return StatusFail(db.status(), "setup open");
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
  if (!w.ok()) return StatusFail(w.status(), "setup begin");
  for (int i = 0; i < kAccounts; ++i) {
    absl::Status s = (*w)->Put(AccountKey(i), EncodeBalance(kStartBalance));
    if (!s.ok()) return StatusFail(s, "setup put");
  }
  absl::Status s = (*w)->Put(kCounterKey, "0");
  if (s.ok()) s = (*w)->Commit();
  if (!s.ok()) return StatusFail(s, "setup commit");
  return kExitOk;
}

int ReaderMain(const std::string& path, JournalMode mode, BankShared* shared, uint64_t seed) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions(mode));
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::mt19937_64 rng(seed);
  int64_t last_counter = -1;
  while (shared->stop.load() == 0) {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
    if (!txn.ok()) return StatusFail(txn.status(), "reader BeginRead");
    const Snapshot s = ReadSnapshot(**txn);
    if (int bad = CheckBank(s, "reader"); bad != kExitOk) return bad;
    if (s.counter < last_counter) {
      return ChildFail(kExitWentBack, absl::StrCat("reader: counter ", s.counter,
                                                   " after an earlier snapshot saw ",
                                                   last_counter));
    }
    last_counter = s.counter;
    if (rng() % 16 == 0) {
      // Hold the snapshot pinned a while (checkpoints must wait for it, and a kill may land
      // here), then read it again: it must not have changed.
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % 20));
      const Snapshot again = ReadSnapshot(**txn);
      if (int bad = CheckBank(again, "reader (held)"); bad != kExitOk) return bad;
      if (again.counter != s.counter) {
        return ChildFail(kExitBadSum, absl::StrCat("reader: a held snapshot changed from counter ",
                                                   s.counter, " to ", again.counter));
      }
      shared->held_reads.fetch_add(1);
    }
    shared->reads.fetch_add(1);
  }
  return kExitOk;
}

absl::StatusOr<int64_t> GetInt(WriteTransaction& w, const std::string& key) {
  absl::StatusOr<std::optional<std::string>> v = w.Get(key);
  if (!v.ok()) return v.status();
  int64_t n = 0;
  if (!v->has_value() ||
      !(key == kCounterKey ? absl::SimpleAtoi(**v, &n) : DecodeBalance(**v, &n))) {
    return absl::DataLossError(absl::StrCat(key, " is missing or not a number"));
  }
  return n;
}

// Large transaction `request`: writes kSpillKeys keys and takes 1 from an account, so that any
// reader that sees it sees a wrong sum too; spills; tells the parent; waits to be killed.
int SpillAndWait(Db& db, BankShared* shared, int request) {
  const uint64_t spills_before = db.Stats().spills;
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
  if (!w.ok()) return StatusFail(w.status(), "spill BeginWrite");
  const std::string value(kSpillValueBytes, 'S');
  for (int i = 0; i < kSpillKeys; ++i) {
    absl::Status s = (*w)->Put(SpillKey(i), value);
    if (!s.ok()) return StatusFail(s, "spill put");
  }
  absl::StatusOr<int64_t> a = GetInt(**w, AccountKey(0));
  if (!a.ok()) return StatusFail(a.status(), "spill get");
  absl::Status s = (*w)->Put(AccountKey(0), EncodeBalance(*a - 1));
  if (!s.ok()) return StatusFail(s, "spill put account");
  const uint64_t spills = db.Stats().spills - spills_before;
  if (spills == 0) return ChildFail(kExitNoSpill, "the large transaction did not spill");
  shared->spill_frames_seen.fetch_add(spills);
  shared->spill_ready.store(request);
  // Killed here, holding the WRITE lock, with the spilled frames in the log.
  for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return ChildFail(kExitNotKilled, "the parent did not kill the large transaction");
}

// The writer's checkpoint policy (the test's parameter; children inherit it at the fork).
std::string writer_policy = "threshold:1000";

int WriterMain(const std::string& path, JournalMode mode, BankShared* shared, uint64_t seed) {
  Options o = BankOptions(mode);
  o.checkpoint_policy = writer_policy;
  o.cache_pages = 16;  // the large transaction spills
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::mt19937_64 rng(seed);
  uint64_t commits = 0, switches_reported = 0;
  while (shared->stop.load() == 0) {
    const int request = shared->spill_request.load();
    if (request != 0 && shared->spill_ready.load() != request) {
      return SpillAndWait(**db, shared, request);
    }
    const int from = static_cast<int>(rng() % kAccounts);
    const int to = static_cast<int>(rng() % kAccounts);
    const int64_t amount = 1 + static_cast<int64_t>(rng() % 100);
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
    if (!w.ok()) return StatusFail(w.status(), "writer BeginWrite");
    absl::StatusOr<int64_t> a = GetInt(**w, AccountKey(from));
    if (!a.ok()) return StatusFail(a.status(), "writer get");
    absl::Status s = (*w)->Put(AccountKey(from), EncodeBalance(*a - amount));
    if (!s.ok()) return StatusFail(s, "writer put");
    absl::StatusOr<int64_t> b = GetInt(**w, AccountKey(to));
    if (!b.ok()) return StatusFail(b.status(), "writer get");
    s = (*w)->Put(AccountKey(to), EncodeBalance(*b + amount));
    if (!s.ok()) return StatusFail(s, "writer put");
    absl::StatusOr<int64_t> c = GetInt(**w, kCounterKey);
    if (!c.ok()) return StatusFail(c.status(), "writer get counter");
    s = (*w)->Put(kCounterKey, std::to_string(*c + 1));
    if (!s.ok()) return StatusFail(s, "writer put counter");
    s = (*w)->Commit();
    if (!s.ok()) return StatusFail(s, "writer commit");
    shared->transfers.fetch_add(1);
    if (++commits % 2 == 0) {  // often: a killed writer's unreported switches are lost
      const uint64_t switches = (*db)->Stats().log_switches;
      shared->log_switches.fetch_add(switches - switches_reported);
      switches_reported = switches;
    }
  }
  return kExitOk;
}

// The checkpointer process kills itself at the checkpoint's hook points now and then: after C1
// before the copy ("copy"), after C2 before backfill is published ("synced"), and before the
// log restarts ("restart"), the last two holding the WRITE lock in WAL's FULL, RESTART,
// TRUNCATE; and in WAL2's phases of those (V4): holding the writer role before the switch
// ("checkpoint:switching") and before the last restart ("checkpoint:restarting"), between the
// switch and the second copy ("checkpoint:switched") and after it ("checkpoint:copied").
BankShared* hook_shared = nullptr;
std::mt19937_64* hook_rng = nullptr;

void KillingHook(const char* point) {
  (void)point;
  if ((*hook_rng)() % 64 != 0) return;
  hook_shared->hook_kills.fetch_add(1);
  raise(SIGKILL);
}

void KillingWalHook(const char* point) {
  if (!absl::StartsWith(point, "checkpoint:") || (*hook_rng)() % 16 != 0) return;
  hook_shared->hook_kills.fetch_add(1);
  raise(SIGKILL);
}

int CheckpointerMain(const std::string& path, JournalMode mode, BankShared* shared,
                     uint64_t seed) {
  Options o = BankOptions(mode);
  o.busy_timeout = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<Db>> db;
  for (int attempt = 0; attempt < 100; ++attempt) {
    db = Db::Open(path, o);
    if (!absl::IsUnavailable(db.status())) break;  // retried while busy
  }
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::mt19937_64 rng(seed);
  hook_shared = shared;
  hook_rng = &rng;
  wal::SetCheckpointHookForTesting(&KillingHook);
  wal::SetWalHookForTesting(&KillingWalHook);
  for (uint64_t i = rng() % 4; shared->stop.load() == 0; ++i) {
    const CheckpointMode mode = static_cast<CheckpointMode>(i % 4);
    absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(mode);
    if (r.ok()) {
      shared->checkpoints[i % 4].fetch_add(1);
      if (r->blocked) shared->ckpt_blocked.fetch_add(1);
      if (r->restarted) shared->ckpt_restarts.fetch_add(1);
      shared->ckpt_copied.fetch_add(r->copied);
    } else if (absl::IsUnavailable(r.status())) {
      shared->ckpt_busy.fetch_add(1);
    } else if (absl::IsAborted(r.status())) {
      shared->ckpt_aborted.fetch_add(1);  // the index header was being published
    } else {
      return ChildFail(kExitError, absl::StrCat("checkpoint ", CheckpointModeName(mode), ": ",
                                                r.status().ToString()));
    }
    // Let the writer in between the checkpoints that keep it out.
    std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 5000));
  }
  wal::SetCheckpointHookForTesting(nullptr);
  wal::SetWalHookForTesting(nullptr);
  return kExitOk;
}

// A fresh process: the killed large transaction must be invisible to it too.
int VerifierMain(const std::string& path, JournalMode mode) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions(mode));
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
    if (!txn.ok()) return StatusFail(txn.status(), "verifier BeginRead");
    if (int bad = CheckBank(ReadSnapshot(**txn), "verifier"); bad != kExitOk) return bad;
  }
  absl::StatusOr<CheckResult> check = (*db)->Check();
  if (!check.ok()) return StatusFail(check.status(), "verifier Check");
  if (!check->ok()) return ChildFail(kExitError, "verifier Check: " + check->problems[0]);
  return kExitOk;
}

enum class Role { kReader, kWriter, kCheckpointer };
const char* RoleName(Role r) {
  switch (r) {
    case Role::kReader: return "reader";
    case Role::kWriter: return "writer";
    case Role::kCheckpointer: return "checkpointer";
  }
  return "?";
}

// Param: the journal mode and the writer's checkpoint policy.
class WalMultiProcessTest
    : public ::testing::TestWithParam<std::tuple<JournalMode, const char*>> {};

TEST_P(WalMultiProcessTest, ReadersWriterCheckpointerSurviveSigkill) {
  const JournalMode mode = std::get<0>(GetParam());
  writer_policy = std::get<1>(GetParam());
  const std::string dir = TempDir("jkv_wal_mp");
  const std::string path = dir + "/bank.db";
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  BankShared* shared = MapShared<BankShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;

  // A child creates the database; being the last to close, it removes -wal and -shm.
  {
    const pid_t setup = guard.Add(Spawn([&] { return SetupMain(path, mode); }));
    ASSERT_GT(setup, 0);
    int status = 0;
    ASSERT_TRUE(WaitFor(setup, absl::Seconds(30), &status)) << "setup hangs";
    ASSERT_TRUE(ExitedOk(status)) << "setup " << DescribeStatus(status);
    ASSERT_TRUE(Exists(path));
    EXPECT_EQ(ExistingLogs(mode, path), "");
    EXPECT_FALSE(Exists(path + "-shm"));
  }

  struct Child {
    pid_t pid;
    Role role;
  };
  uint64_t spawned = 0;
  auto spawn = [&](Role role) {
    const uint64_t child_seed = seed * 1000003 + ++spawned;
    const pid_t pid = guard.Add(Spawn([&] {
      switch (role) {
        case Role::kReader: return ReaderMain(path, mode, shared, child_seed);
        case Role::kWriter: return WriterMain(path, mode, shared, child_seed);
        case Role::kCheckpointer: return CheckpointerMain(path, mode, shared, child_seed);
      }
      return static_cast<int>(kExitError);
    }));
    EXPECT_GT(pid, 0);
    return Child{pid, role};
  };
  std::vector<Child> children;
  for (Role role : {Role::kReader, Role::kReader, Role::kReader, Role::kWriter,
                    Role::kCheckpointer}) {
    children.push_back(spawn(role));
  }
  auto writer = [&]() -> Child& {
    for (Child& c : children) {
      if (c.role == Role::kWriter) return c;
    }
    std::abort();
  };

  std::vector<std::string> failures;
  int kills[3] = {0, 0, 0};
  int self_kills = 0;
  int spill_kills = 0;
  const absl::Duration run = absl::Seconds(TierScaled(6, 6, 30));
  const absl::Time start = absl::Now();
  const absl::Time end = start + run;
  constexpr int kSpillRounds = 3;
  int next_spill = 1;  // large transaction n is due at n/(kSpillRounds+1) of the run

  // A child that ended by itself: the checkpointer killing itself at a hook point is expected.
  auto reap_ended = [&]() {
    for (Child& c : children) {
      int status = 0;
      const pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r != c.pid) continue;
      if (c.role == Role::kCheckpointer && KilledBySigkill(status)) {
        ++self_kills;
      } else {
        failures.push_back(absl::StrCat(RoleName(c.role), " ", c.pid, " ended by itself: ",
                                        DescribeStatus(status)));
      }
      c = spawn(c.role);
    }
  };

  // Past `end` the run goes on (up to three times as long) until what the checks below ask
  // for happened: on a loaded machine a few hundred transfers in the whole run were seen, and
  // no RESTART got through or no WAL2 writer switched.
  const absl::Time cap = start + 3 * run;
  auto covered = [&] {
    return shared->transfers.load() > 0 && shared->ckpt_restarts.load() > 0 &&
           shared->ckpt_copied.load() > 0 &&
           (mode != JournalMode::kWal2 || shared->log_switches.load() > 0);
  };
  while ((absl::Now() < end || (!covered() && absl::Now() < cap)) && failures.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 201));
    reap_ended();
    if (!failures.empty()) break;
    if (next_spill <= kSpillRounds &&
        absl::Now() >= start + run * next_spill / (kSpillRounds + 1)) {
      const int request = next_spill++;
      shared->spill_request.store(request);
      const absl::Time wait_until = absl::Now() + absl::Seconds(30);
      while (shared->spill_ready.load() != request && absl::Now() < wait_until) {
        int status = 0;
        if (waitpid(writer().pid, &status, WNOHANG) == writer().pid) {
          failures.push_back(absl::StrCat("writer ended before its large transaction spilled: ",
                                          DescribeStatus(status)));
          writer() = spawn(Role::kWriter);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (!failures.empty()) break;
      if (shared->spill_ready.load() != request) {
        failures.push_back("the writer's large transaction did not spill in 30 s");
        break;
      }
      // Readers go on while the spilled frames sit in the log past the published end.
      std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 101));
      kill(writer().pid, SIGKILL);
      int status = 0;
      waitpid(writer().pid, &status, 0);
      if (!KilledBySigkill(status)) {
        failures.push_back(absl::StrCat("writer in its large transaction ",
                                        DescribeStatus(status)));
      }
      ++spill_kills;
      shared->spill_request.store(0);
      const pid_t verifier = guard.Add(Spawn([&] { return VerifierMain(path, mode); }));
      if (!WaitFor(verifier, absl::Seconds(30), &status)) {
        failures.push_back("the verifier hangs");
      } else if (!ExitedOk(status)) {
        failures.push_back(absl::StrCat("a fresh process after killed large transaction ",
                                        request, ": ", DescribeStatus(status)));
      }
      writer() = spawn(Role::kWriter);
      continue;
    }
    Child& victim = children[rng() % children.size()];
    kill(victim.pid, SIGKILL);
    int status = 0;
    waitpid(victim.pid, &status, 0);
    if (KilledBySigkill(status)) {
      ++kills[static_cast<int>(victim.role)];
    } else {
      failures.push_back(absl::StrCat(RoleName(victim.role), " ", victim.pid,
                                      " ended before the kill: ", DescribeStatus(status)));
    }
    victim = spawn(victim.role);
  }

  // Stop: every child ends its loop and closes its handle.
  shared->stop.store(1);
  for (Child& c : children) {
    int status = 0;
    if (!WaitFor(c.pid, absl::Seconds(30), &status)) {
      failures.push_back(absl::StrCat(RoleName(c.role), " ", c.pid, " did not stop"));
    } else if (c.role == Role::kCheckpointer && KilledBySigkill(status)) {
      ++self_kills;  // at a hook point, before it saw the stop
    } else if (!ExitedOk(status)) {
      failures.push_back(absl::StrCat(RoleName(c.role), " ", c.pid, " at the stop: ",
                                      DescribeStatus(status)));
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf(
      "seed %llu, %.1f s: killed %d readers, %d writers, %d checkpointers (+%d at hook points), "
      "%d writers in large transactions\n",
      static_cast<unsigned long long>(seed), seconds, kills[0], kills[1], kills[2], self_kills,
      spill_kills);
  std::printf(
      "transfers %llu, reads %llu (%llu held), checkpoints passive %llu full %llu restart %llu "
      "truncate %llu, blocked %llu, busy %llu, aborted %llu, restarts %llu, frames copied %llu, "
      "log switches %llu\n",
      (unsigned long long)shared->transfers.load(), (unsigned long long)shared->reads.load(),
      (unsigned long long)shared->held_reads.load(),
      (unsigned long long)shared->checkpoints[0].load(),
      (unsigned long long)shared->checkpoints[1].load(),
      (unsigned long long)shared->checkpoints[2].load(),
      (unsigned long long)shared->checkpoints[3].load(),
      (unsigned long long)shared->ckpt_blocked.load(), (unsigned long long)shared->ckpt_busy.load(),
      (unsigned long long)shared->ckpt_aborted.load(),
      (unsigned long long)shared->ckpt_restarts.load(),
      (unsigned long long)shared->ckpt_copied.load(),
      (unsigned long long)shared->log_switches.load());
  EXPECT_THAT(failures, ::testing::IsEmpty()) << "seed " << seed;
  EXPECT_EQ(spill_kills, kSpillRounds);
  EXPECT_GT(shared->spill_frames_seen.load(), 0u);
  EXPECT_GT(shared->reads.load(), 0u);
  EXPECT_GT(shared->transfers.load(), 0u) << "the writer made no progress";
  EXPECT_GT(shared->ckpt_restarts.load(), 0u) << "no RESTART or TRUNCATE checkpoint got through";
  EXPECT_GT(shared->ckpt_copied.load(), 0u);
  if (mode == JournalMode::kWal2) {
    EXPECT_GT(shared->log_switches.load(), 0u) << "the writers never switched logs";
  }

  // Alone now: the last child closed (or the -shm is rebuilt from the log).
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions(mode));
    ASSERT_THAT(db, IsOk());
    absl::StatusOr<CheckResult> check = (*db)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_THAT(check->problems, ::testing::IsEmpty());
    EXPECT_GT(check->depth, 1) << "the bank fits one page: stale pages would go unnoticed";
    absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
    ASSERT_THAT(txn, IsOk());
    const Snapshot s = ReadSnapshot(**txn);
    EXPECT_EQ(s.error, "");
    EXPECT_EQ(s.accounts, kAccounts);
    EXPECT_EQ(s.sum, kTotal);
    EXPECT_EQ(s.spill_keys, 0) << "a killed large transaction survived";
    // Every acknowledged transfer survived; at most one more per killed writer (killed after
    // its commit was published but before it counted it).
    const int64_t acked = static_cast<int64_t>(shared->transfers.load());
    EXPECT_GT(s.counter, 0);
    EXPECT_GE(s.counter, acked) << "acknowledged transfers were lost";
    EXPECT_LE(s.counter, acked + kills[static_cast<int>(Role::kWriter)]);
    txn->reset();
  }
  EXPECT_EQ(ExistingLogs(mode, path), "") << "the last close left the log";
  EXPECT_FALSE(Exists(path + "-shm")) << "the last close left the -shm";
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// wal2's threshold is no larger than wal2_switch_pages (kWal2SwitchPages): the policy looks at
// the log that is not current, which keeps about that many frames after a switch, so a larger
// threshold would never copy it and only the checkpointer process would.
INSTANTIATE_TEST_SUITE_P(
    ModesPolicies, WalMultiProcessTest,
    ::testing::Values(std::make_tuple(JournalMode::kWal, "threshold:1000"),
                      std::make_tuple(JournalMode::kWal, "async:0/100"),
                      std::make_tuple(JournalMode::kWal2, "threshold:100"),
                      std::make_tuple(JournalMode::kWal2, "async:0/100")),
    [](const ::testing::TestParamInfo<std::tuple<JournalMode, const char*>>& info) {
      std::string policy = std::get<1>(info.param);
      std::replace(policy.begin(), policy.end(), ':', '_');
      std::replace(policy.begin(), policy.end(), '/', '_');
      return absl::StrCat(ModeName(std::get<0>(info.param)), "_", policy);
    });

}  // namespace
}  // namespace journalkv
