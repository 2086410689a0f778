// WAL mode with real processes on a real file (the POSIX file system): several processes share
// one database through `x.db-wal` and the mmapped `x.db-shm`, and are killed with SIGKILL.
//
//   - ReadersWriterCheckpointerSurviveSigkill: reader, writer and checkpointer processes run a
//     bank-transfer workload; every 100-300 ms one of them is SIGKILLed and replaced, the
//     checkpointer also kills itself at the checkpoint's hook points, and the writer is killed
//     (deterministically, a few times) inside a large transaction that spilled frames into the
//     log. Every snapshot any process reads must keep the total, and the killed transactions
//     must never become visible.
//   - DeadProcessShmAndLogAreRecovered: a process killed after its commits leaves -wal and -shm
//     behind; the next opener (alone) rebuilds the index from the log and finds every commit.
//   - LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen.
//   - TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole: a writer killed in the middle of
//     publishing the index header leaves it torn (emulated after the SIGKILL by damaging copy
//     A's checksum in the -shm, the state such a kill leaves); the connection that rebuilds the
//     index must not disturb the read transactions other processes have open.
//
// Only children open the database while other children run; the parent opens it only when it
// is the single process left (or, in the last case, next to one child on purpose). Children
// report through exit codes (ChildExit) and counters in anonymous shared memory.
//
// JKV_WAL_MP_SEED=n changes the random choices (timing stays nondeterministic).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "checkpoint/checkpointer.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::ScaledForSanitizer;

constexpr int kAccounts = 50;
constexpr int64_t kStartBalance = 1000;
constexpr int64_t kTotal = kAccounts * kStartBalance;
constexpr int kSpillKeys = 500;
constexpr int kSpillValueBytes = 200;
constexpr char kCounterKey[] = "counter";

std::string AccountKey(int i) { return absl::StrCat("acct", 1000 + i); }
// A balance and some padding, so that the accounts fill several leaves of 1 KiB pages and a
// stale or mixed-up page shows in the sum.
std::string EncodeBalance(int64_t balance) {
  return absl::StrCat(balance, "|", std::string(60, 'b'));
}
bool DecodeBalance(absl::string_view v, int64_t* balance) {
  const size_t bar = v.find('|');
  return bar != absl::string_view::npos && absl::SimpleAtoi(v.substr(0, bar), balance);
}
std::string SpillKey(int i) { return absl::StrFormat("spill%04d", i); }

// How a child ends. A child that ends any other way than kExitOk or SIGKILL failed.
enum ChildExit : int {
  kExitOk = 0,
  kExitOpenFailed = 2,
  kExitBadSum = 3,      // a snapshot without the total, or a snapshot that changed
  kExitSawSpill = 4,    // a key of a killed (never committed) transaction is visible
  kExitError = 5,       // any other unexpected error
  kExitBusy = 6,        // busy at a 5 s timeout, where no process holds a lock that long
  kExitWentBack = 7,    // a later snapshot of one process is older than an earlier one
  kExitNoSpill = 8,     // the large transaction did not spill: the test would test nothing
  kExitNotKilled = 9,   // waited to be killed, and was not
  kExitMissing = 10,    // an acknowledged commit is missing
};

uint64_t Seed() {
  const char* env = std::getenv("JKV_WAL_MP_SEED");
  uint64_t seed = 1;
  if (env != nullptr && !absl::SimpleAtoi(env, &seed)) seed = 1;
  return seed;
}

std::string TempDir(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, "_XXXXXX");
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

Options WalOptions(SyncLevel sync = SyncLevel::kNormal) {
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = sync;
  o.busy_timeout = absl::Seconds(5);
  return o;
}

// The bank database: small pages, so that its tree has several levels of pages.
Options BankOptions() {
  Options o = WalOptions();
  o.page_size = 1024;
  return o;
}

// Anonymous shared memory, mapped before the forks: every child sees the same T.
template <typename T>
T* MapShared() {
  void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) T();
}
template <typename T>
void UnmapShared(T* p) {
  p->~T();
  munmap(p, sizeof(T));
}

// Prints why a child fails and returns its exit code.
int ChildFail(int code, const std::string& what) {
  std::fprintf(stderr, "[pid %d] exit %d: %s\n", static_cast<int>(getpid()), code, what.c_str());
  return code;
}

// The exit code for a failed call: kExitBusy for busy, else kExitError.
int StatusFail(const absl::Status& s, const std::string& what) {
  return ChildFail(absl::IsResourceExhausted(s) ? kExitBusy : kExitError,
                   absl::StrCat(what, ": ", s.ToString()));
}

// Runs `body` in a child process, which exits with its result (never returns to gtest).
pid_t Spawn(const std::function<int()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// Kills and reaps, when the test ends early (a failed ASSERT), the children it still has. Only
// children not reaped yet are touched (waitpid says so), never a reused pid.
class ChildGuard {
 public:
  ChildGuard() = default;
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  ~ChildGuard() {
    for (pid_t pid : pids_) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != 0) continue;  // reaped now or before
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  pid_t Add(pid_t pid) {
    if (pid > 0) pids_.push_back(pid);
    return pid;
  }

 private:
  std::vector<pid_t> pids_;
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("status ", status);
}
bool KilledBySigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
bool ExitedOk(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// Waits up to `timeout` for `pid`; SIGKILLs it when it does not end (and returns false).
bool WaitFor(pid_t pid, absl::Duration timeout, int* status) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0) {
      *status = -1;
      return false;
    }
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// What one snapshot holds.
struct Snapshot {
  int64_t sum = 0;
  int accounts = 0;
  int64_t counter = 0;
  int spill_keys = 0;  // keys of the killed large transactions (there must be none)
  std::string error;   // empty when every read worked
};

template <typename Txn>
Snapshot ReadSnapshot(Txn& txn) {
  Snapshot s;
  {
    std::unique_ptr<Iterator> it = txn.NewIterator();
    for (it->Seek("acct"); it->Valid() && absl::StartsWith(it->key(), "acct"); it->Next()) {
      absl::StatusOr<absl::string_view> v = it->value_view();
      int64_t balance = 0;
      if (!v.ok() || !DecodeBalance(*v, &balance)) {
        s.error = absl::StrCat("bad value of ", it->key());
        return s;
      }
      s.sum += balance;
      ++s.accounts;
    }
    for (it->Seek("spill"); it->Valid() && absl::StartsWith(it->key(), "spill"); it->Next()) {
      ++s.spill_keys;
    }
    if (!it->status().ok()) {
      s.error = it->status().ToString();
      return s;
    }
  }
  absl::StatusOr<std::optional<std::string>> spill0 = txn.Get(SpillKey(0));
  if (!spill0.ok()) {
    s.error = spill0.status().ToString();
    return s;
  }
  if (spill0->has_value()) ++s.spill_keys;
  absl::StatusOr<std::optional<std::string>> counter = txn.Get(kCounterKey);
  if (!counter.ok()) {
    s.error = counter.status().ToString();
    return s;
  }
  if (counter->has_value() && !absl::SimpleAtoi(**counter, &s.counter)) s.error = "bad counter";
  return s;
}

// kExitOk when `s` is a whole snapshot of the bank, else the failure.
int CheckBank(const Snapshot& s, const char* who) {
  if (!s.error.empty()) return ChildFail(kExitError, absl::StrCat(who, ": ", s.error));
  if (s.accounts != kAccounts || s.sum != kTotal) {
    return ChildFail(kExitBadSum, absl::StrCat(who, ": ", s.accounts, " accounts hold ", s.sum,
                                               " (counter ", s.counter, ")"));
  }
  if (s.spill_keys != 0) {
    return ChildFail(kExitSawSpill, absl::StrCat(who, ": sees ", s.spill_keys,
                                                 " keys of a killed transaction"));
  }
  return kExitOk;
}

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
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

int SetupMain(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions());
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

int ReaderMain(const std::string& path, BankShared* shared, uint64_t seed) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions());
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

int WriterMain(const std::string& path, BankShared* shared, uint64_t seed) {
  Options o = BankOptions();
  o.cache_pages = 16;  // the large transaction spills
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::mt19937_64 rng(seed);
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
  }
  return kExitOk;
}

// The checkpointer process kills itself at the checkpoint's hook points now and then: after C1
// before the copy ("copy"), after C2 before backfill is published ("synced"), and before the
// log restarts ("restart"), the last two holding the WRITE lock in FULL, RESTART, TRUNCATE.
BankShared* hook_shared = nullptr;
std::mt19937_64* hook_rng = nullptr;

void KillingHook(const char* point) {
  (void)point;
  if ((*hook_rng)() % 64 != 0) return;
  hook_shared->hook_kills.fetch_add(1);
  raise(SIGKILL);
}

int CheckpointerMain(const std::string& path, BankShared* shared, uint64_t seed) {
  Options o = BankOptions();
  o.busy_timeout = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<Db>> db;
  for (int attempt = 0; attempt < 100; ++attempt) {
    db = Db::Open(path, o);
    if (!absl::IsResourceExhausted(db.status())) break;
  }
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::mt19937_64 rng(seed);
  hook_shared = shared;
  hook_rng = &rng;
  checkpoint::SetCheckpointHookForTesting(&KillingHook);
  for (uint64_t i = rng() % 4; shared->stop.load() == 0; ++i) {
    const CheckpointMode mode = static_cast<CheckpointMode>(i % 4);
    absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(mode);
    if (r.ok()) {
      shared->checkpoints[i % 4].fetch_add(1);
      if (r->blocked) shared->ckpt_blocked.fetch_add(1);
      if (r->restarted) shared->ckpt_restarts.fetch_add(1);
      shared->ckpt_copied.fetch_add(r->copied);
    } else if (absl::IsResourceExhausted(r.status())) {
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
  checkpoint::SetCheckpointHookForTesting(nullptr);
  return kExitOk;
}

// A fresh process: the killed large transaction must be invisible to it too.
int VerifierMain(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions());
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

TEST(WalMultiProcessTest, ReadersWriterCheckpointerSurviveSigkill) {
  const std::string dir = TempDir("jkv_wal_mp");
  const std::string path = dir + "/bank.db";
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  BankShared* shared = MapShared<BankShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;

  // A child creates the database; being the last to close, it removes -wal and -shm.
  {
    const pid_t setup = guard.Add(Spawn([&] { return SetupMain(path); }));
    ASSERT_GT(setup, 0);
    int status = 0;
    ASSERT_TRUE(WaitFor(setup, absl::Seconds(30), &status)) << "setup hangs";
    ASSERT_TRUE(ExitedOk(status)) << "setup " << DescribeStatus(status);
    ASSERT_TRUE(Exists(path));
    EXPECT_FALSE(Exists(path + "-wal"));
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
        case Role::kReader: return ReaderMain(path, shared, child_seed);
        case Role::kWriter: return WriterMain(path, shared, child_seed);
        case Role::kCheckpointer: return CheckpointerMain(path, shared, child_seed);
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
  const absl::Duration run = absl::Seconds(ScaledForSanitizer(15, 8));
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

  while (absl::Now() < end && failures.empty()) {
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
      const pid_t verifier = guard.Add(Spawn([&] { return VerifierMain(path); }));
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
      "truncate %llu, blocked %llu, busy %llu, aborted %llu, restarts %llu, frames copied %llu\n",
      (unsigned long long)shared->transfers.load(), (unsigned long long)shared->reads.load(),
      (unsigned long long)shared->held_reads.load(),
      (unsigned long long)shared->checkpoints[0].load(),
      (unsigned long long)shared->checkpoints[1].load(),
      (unsigned long long)shared->checkpoints[2].load(),
      (unsigned long long)shared->checkpoints[3].load(),
      (unsigned long long)shared->ckpt_blocked.load(), (unsigned long long)shared->ckpt_busy.load(),
      (unsigned long long)shared->ckpt_aborted.load(),
      (unsigned long long)shared->ckpt_restarts.load(),
      (unsigned long long)shared->ckpt_copied.load());
  EXPECT_THAT(failures, ::testing::IsEmpty()) << "seed " << seed;
  EXPECT_EQ(spill_kills, kSpillRounds);
  EXPECT_GT(shared->spill_frames_seen.load(), 0u);
  EXPECT_GT(shared->reads.load(), 0u);
  EXPECT_GT(shared->transfers.load(), 0u) << "the writer made no progress";
  EXPECT_GT(shared->ckpt_restarts.load(), 0u) << "no RESTART or TRUNCATE checkpoint got through";
  EXPECT_GT(shared->ckpt_copied.load(), 0u);

  // Alone now: the last child closed (or the -shm is rebuilt from the log).
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, BankOptions());
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
  EXPECT_FALSE(Exists(path + "-wal")) << "the last close left the log";
  EXPECT_FALSE(Exists(path + "-shm")) << "the last close left the -shm";
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// DeadProcessShmAndLogAreRecovered

struct CommitShared {
  std::atomic<int> acked{0};  // keys 0 .. acked-1 are committed (Put returned OK)
  std::atomic<int> ready{0};  // the child is done and waits to be killed
};

std::string RoundKey(int round, int i) { return absl::StrFormat("r%02d_k%05d", round, i); }
std::string RoundValue(int round, int i) {
  return absl::StrCat("value of ", round, "/", i, std::string(40 + i % 100, 'v'));
}

// Commits keys of `round` one per transaction (sync FULL) until `commits` (or forever when 0),
// with a PASSIVE checkpoint half way. Then, when `commits` > 0, leaves a pinned read snapshot
// and a large spilled write transaction open, says so and waits to be killed.
int CommitterMain(const std::string& path, CommitShared* shared, int round, int commits) {
  Options o = WalOptions(SyncLevel::kFull);
  o.wal_autocheckpoint = 0;  // the log keeps the commits: the opener must recover them from it
  o.cache_pages = 16;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  for (int i = 0; commits == 0 || i < commits; ++i) {
    absl::Status s = (*db)->Put(RoundKey(round, i), RoundValue(round, i));
    if (!s.ok()) return StatusFail(s, "committer put");
    shared->acked.store(i + 1);
    if (i == commits / 2) {
      absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kPassive);
      if (!r.ok()) return StatusFail(r.status(), "committer checkpoint");
    }
  }
  absl::StatusOr<std::unique_ptr<ReadTransaction>> reader = (*db)->BeginRead();
  if (!reader.ok()) return StatusFail(reader.status(), "committer BeginRead");
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
  if (!w.ok()) return StatusFail(w.status(), "committer BeginWrite");
  for (int i = 0; i < kSpillKeys; ++i) {
    absl::Status s = (*w)->Put(SpillKey(i), std::string(kSpillValueBytes, 'S'));
    if (!s.ok()) return StatusFail(s, "committer spill put");
  }
  if ((*db)->Stats().spills == 0) return ChildFail(kExitNoSpill, "no spill");
  shared->ready.store(1);
  for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return ChildFail(kExitNotKilled, "not killed");
}

TEST(WalMultiProcessTest, DeadProcessShmAndLogAreRecovered) {
  const std::string dir = TempDir("jkv_wal_dead");
  const std::string path = dir + "/dead.db";
  std::mt19937_64 rng(Seed());
  CommitShared* shared = MapShared<CommitShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;
  const int rounds = ScaledForSanitizer(6, 4);
  std::vector<int> committed(rounds, 0);  // per round: keys the parent knows are committed
  for (int round = 0; round < rounds; ++round) {
    // Even rounds: commit 200 keys, then wait to be killed (pinned reader, spilled frames).
    // Odd rounds: commit in a loop and be killed at a random moment.
    const bool pause = round % 2 == 0;
    shared->acked.store(0);
    shared->ready.store(0);
    const pid_t child =
        guard.Add(Spawn([&] { return CommitterMain(path, shared, round, pause ? 200 : 0); }));
    ASSERT_GT(child, 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    if (pause) {
      while (shared->ready.load() == 0 && absl::Now() < deadline) {
        int status = 0;
        ASSERT_NE(waitpid(child, &status, WNOHANG), child)
            << "round " << round << ": the committer " << DescribeStatus(status);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      ASSERT_EQ(shared->ready.load(), 1) << "round " << round << ": the committer hangs";
    } else {
      while (shared->acked.load() < 20 && absl::Now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(KilledBySigkill(status)) << "round " << round << ": " << DescribeStatus(status);
    const int acked = shared->acked.load();
    committed[round] = acked;
    ASSERT_GT(acked, 0) << "round " << round;
    // The dead process could not remove its files.
    EXPECT_TRUE(Exists(path + "-wal"));
    EXPECT_TRUE(Exists(path + "-shm"));

    // Alone: the opener reinitialises the -shm and rebuilds the index from the log.
    {
      Options o = WalOptions(SyncLevel::kFull);
      o.wal_autocheckpoint = 0;
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
      ASSERT_THAT(db, IsOk());
      const DbStats stats = (*db)->Stats();
      EXPECT_TRUE(stats.wal_mode);
      EXPECT_GT(stats.log_frames, 0u) << "round " << round << ": the commits were not in the log";
      EXPECT_EQ(stats.pinned_connections, 0) << "the dead process's pin survived";
      absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
      ASSERT_THAT(txn, IsOk());
      for (int r = 0; r <= round; ++r) {
        for (int i = 0; i < committed[r]; ++i) {
          absl::StatusOr<std::optional<std::string>> v = (*txn)->Get(RoundKey(r, i));
          ASSERT_THAT(v, IsOk());
          ASSERT_TRUE(v->has_value()) << "round " << r << ": acknowledged commit " << i
                                      << " of " << committed[r] << " is missing";
          ASSERT_EQ(**v, RoundValue(r, i));
        }
      }
      // The commit in flight at the kill may or may not be there; none after it can be.
      absl::StatusOr<std::optional<std::string>> after = (*txn)->Get(RoundKey(round, acked + 1));
      ASSERT_THAT(after, IsOk());
      EXPECT_FALSE(after->has_value());
      const Snapshot s = ReadSnapshot(**txn);
      EXPECT_EQ(s.error, "");
      EXPECT_EQ(s.spill_keys, 0) << "round " << round << ": the killed transaction is visible";
      txn->reset();
      // The in-flight commit, if it made it, counts from now on.
      absl::StatusOr<std::optional<std::string>> in_flight = (*db)->Get(RoundKey(round, acked));
      ASSERT_THAT(in_flight, IsOk());
      if (in_flight->has_value()) committed[round] = acked + 1;
      absl::StatusOr<CheckResult> check = (*db)->Check();
      ASSERT_THAT(check, IsOk());
      EXPECT_THAT(check->problems, ::testing::IsEmpty()) << "round " << round;
      // A checkpoint is not held back by the dead reader's pin.
      absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kFull);
      ASSERT_THAT(r, IsOk());
      EXPECT_FALSE(r->blocked);
      // And the database takes new commits on top of the recovered log.
      ASSERT_THAT((*db)->Put(absl::StrCat("after_round", round), "x"), IsOk());
    }
    // This opener was the last to close.
    EXPECT_FALSE(Exists(path + "-wal"));
    EXPECT_FALSE(Exists(path + "-shm"));
    std::printf("round %d: %d commits acknowledged before the kill (%s)\n", round, acked,
                pause ? "paused" : "mid-loop");
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions(SyncLevel::kFull));
  ASSERT_THAT(db, IsOk());
  for (int r = 0; r < rounds; ++r) {
    EXPECT_EQ(**(*db)->Get(absl::StrCat("after_round", r)), "x");
    for (int i = 0; i < committed[r]; ++i) {
      absl::StatusOr<std::optional<std::string>> v = (*db)->Get(RoundKey(r, i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value()) << "round " << r << " key " << i;
    }
  }
  absl::StatusOr<CheckResult> check = (*db)->Check();
  ASSERT_THAT(check, IsOk());
  EXPECT_THAT(check->problems, ::testing::IsEmpty());
  db->reset();
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen

constexpr int kParentKeys = 300;

// Creates the database, keeps it open with a read snapshot taken before the parent writes, and
// checks what it reads after the parent closed. Steps are driven by bytes on two pipes.
int HolderMain(const std::string& path, int to_parent, int from_parent) {
  int code = kExitOk;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions());
    if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
    absl::Status s = (*db)->Put("k", "v0");
    if (!s.ok()) return StatusFail(s, "holder put");
    absl::StatusOr<std::unique_ptr<ReadTransaction>> old = (*db)->BeginRead();
    if (!old.ok()) return StatusFail(old.status(), "holder BeginRead");
    char c = 'o';
    if (write(to_parent, &c, 1) != 1) return ChildFail(kExitError, "pipe");
    // The parent opens, writes and closes.
    if (read(from_parent, &c, 1) != 1) return ChildFail(kExitError, "pipe");
    // The old snapshot is unchanged; a new one sees everything the parent wrote.
    absl::StatusOr<std::optional<std::string>> v = (*old)->Get("k");
    if (!v.ok() || !v->has_value() || **v != "v0") {
      return ChildFail(kExitBadSum, "the old snapshot does not read v0");
    }
    absl::StatusOr<std::optional<std::string>> p = (*old)->Get("p0");
    if (!p.ok() || p->has_value()) return ChildFail(kExitBadSum, "the old snapshot sees p0");
    old->reset();
    absl::StatusOr<std::unique_ptr<ReadTransaction>> now = (*db)->BeginRead();
    if (!now.ok()) return StatusFail(now.status(), "holder BeginRead");
    v = (*now)->Get("k");
    if (!v.ok() || !v->has_value() || **v != "v1") {
      return ChildFail(kExitMissing, "a new snapshot does not read the parent's v1");
    }
    for (int i = 0; i < kParentKeys; ++i) {
      p = (*now)->Get(absl::StrCat("p", i));
      if (!p.ok() || !p->has_value() || **p != std::string(100, 'p')) {
        return ChildFail(kExitMissing, absl::StrCat("the parent's p", i, " is missing"));
      }
    }
    now->reset();
    absl::StatusOr<CheckResult> check = (*db)->Check();
    if (!check.ok()) return StatusFail(check.status(), "holder Check");
    if (!check->ok()) code = ChildFail(kExitError, "holder Check: " + check->problems[0]);
    // And it still writes.
    s = (*db)->Put("k", "v2");
    if (!s.ok()) return StatusFail(s, "holder put");
    if (!Exists(path + "-wal") || !Exists(path + "-shm")) {
      return ChildFail(kExitError, "-wal or -shm went away while the holder had them open");
    }
  }  // the last close
  return code;
}

TEST(WalMultiProcessTest, LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen) {
  const std::string dir = TempDir("jkv_wal_last");
  const std::string path = dir + "/last.db";
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  ChildGuard guard;
  const pid_t child = guard.Add(Spawn([&] {
    close(up[0]);
    close(down[1]);
    return HolderMain(path, up[1], down[0]);
  }));
  ASSERT_GT(child, 0);
  close(up[1]);
  close(down[0]);
  char c = 0;
  ASSERT_EQ(read(up[0], &c, 1), 1) << "the holder failed before it was ready";
  ASSERT_TRUE(Exists(path + "-wal"));
  ASSERT_TRUE(Exists(path + "-shm"));
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions());
    ASSERT_THAT(db, IsOk());
    EXPECT_EQ(**(*db)->Get("k"), "v0");
    ASSERT_THAT((*db)->Put("k", "v1"), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, (*db)->BeginWrite());
      for (int i = 0; i < kParentKeys; ++i) {
        ASSERT_THAT(w->Put(absl::StrCat("p", i), std::string(100, 'p')), IsOk());
      }
      ASSERT_THAT(w->Commit(), IsOk());
    }
    // A checkpoint cannot copy past the holder's old snapshot.
    absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kPassive);
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->blocked);
  }
  // The holder still has them open: the parent's close is not the last.
  EXPECT_TRUE(Exists(path + "-wal")) << "the parent's close removed the log under the holder";
  EXPECT_TRUE(Exists(path + "-shm")) << "the parent's close removed the -shm under the holder";
  ASSERT_EQ(write(down[1], &c, 1), 1);
  int status = 0;
  ASSERT_TRUE(WaitFor(child, absl::Seconds(30), &status)) << "the holder hangs";
  EXPECT_TRUE(ExitedOk(status)) << "holder " << DescribeStatus(status);
  close(up[0]);
  close(down[1]);
  // The holder was the last to close.
  EXPECT_FALSE(Exists(path + "-wal"));
  EXPECT_FALSE(Exists(path + "-shm"));
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions());
    ASSERT_THAT(db, IsOk());
    EXPECT_EQ(**(*db)->Get("k"), "v2");
    EXPECT_EQ(**(*db)->Get(absl::StrCat("p", kParentKeys - 1)), std::string(100, 'p'));
    absl::StatusOr<CheckResult> check = (*db)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_THAT(check->problems, ::testing::IsEmpty());
  }
  EXPECT_FALSE(Exists(path + "-wal"));
  EXPECT_FALSE(Exists(path + "-shm"));
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole

// Leaves the index header as a writer SIGKILLed in the middle of publishing it does
// (shm/wal_index.h: it writes copy B, then copy A): copy A's checksum no longer matches copy B.
// The next connection that reads the header must rebuild the index from the log (W6).
bool TearIndexHeader(const std::string& shm_path) {
  const int fd = open(shm_path.c_str(), O_RDWR);
  if (fd < 0) return false;
  void* p = mmap(nullptr, shm::kRegionSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the children's locks are OFD locks: closing this descriptor drops none of them
  if (p == MAP_FAILED) return false;
  uint32_t& checksum_low = *reinterpret_cast<uint32_t*>(
      static_cast<uint8_t*>(p) + shm::kHeaderAOffset + shm::kHeaderBytes - 8);
  std::atomic_ref<uint32_t>(checksum_low).fetch_xor(0x5A5A5A5A);
  munmap(p, shm::kRegionSize);
  return true;
}

struct TornShared {
  std::atomic<int> ready{0};   // the reader holds its snapshot
  std::atomic<int> stop{0};
  std::atomic<uint64_t> scans{0};
  std::atomic<int> committed{0};  // the current writer's commits are done
};

std::string TornKey(int t, int i) {
  return absl::StrFormat("key%06d", (t * 7919 + i * 104729) % 100000);
}

// Ten keys per transaction, `transactions` transactions from `first`.
int CommitBatches(Db& db, int first, int transactions) {
  for (int t = first; t < first + transactions; ++t) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
    if (!w.ok()) return StatusFail(w.status(), "BeginWrite");
    for (int i = 0; i < 10; ++i) {
      absl::Status s = (*w)->Put(TornKey(t, i), std::string(100, 'a' + t % 26));
      if (!s.ok()) return StatusFail(s, "put");
    }
    absl::Status s = (*w)->Commit();
    if (!s.ok()) return StatusFail(s, "commit");
  }
  return kExitOk;
}

Options TornOptions() {
  Options o = WalOptions();
  o.page_size = 1024;
  o.wal_autocheckpoint = 0;  // every commit stays in the log: the database file is far behind
  return o;
}

// Creates the database, then holds one read snapshot and scans it over and over: every scan
// must read exactly what the first one read.
int HeldSnapshotReaderMain(const std::string& path, TornShared* shared) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions());
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  if (int bad = CommitBatches(**db, 0, 200); bad != kExitOk) return bad;
  absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
  if (!txn.ok()) return StatusFail(txn.status(), "BeginRead");
  auto scan = [&](std::string* out) {
    out->clear();
    std::unique_ptr<Iterator> it = (*txn)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      absl::StatusOr<absl::string_view> v = it->value_view();
      if (!v.ok()) return v.status();
      absl::StrAppend(out, it->key(), "=", *v, ";");
    }
    return it->status();
  };
  std::string expected, got;
  if (absl::Status s = scan(&expected); !s.ok()) return StatusFail(s, "first scan");
  shared->ready.store(1);
  while (shared->stop.load() == 0) {
    absl::Status s = scan(&got);
    const uint64_t scans = shared->scans.fetch_add(1) + 1;
    if (!s.ok()) {
      return ChildFail(kExitError, absl::StrCat("scan ", scans, " of the held snapshot: ",
                                                s.ToString()));
    }
    if (got != expected) {
      return ChildFail(kExitBadSum, absl::StrCat("scan ", scans, " of the held snapshot read "
                                                 "something else than the first scan"));
    }
  }
  return kExitOk;
}

// A writer that dies in the middle of publishing the index header leaves it torn, and the next
// connection that reads it rebuilds the index from the log (pager/wal_strategy.h W6), while
// other processes have read transactions open on snapshots that live in the log. Each round: a
// writer process commits and is SIGKILLed, the header is left torn as a kill in
// WalIndex::WriteHeader leaves it, and a new connection reads (and so recovers). The process
// holding an old snapshot must keep reading exactly that snapshot.
TEST(WalMultiProcessTest, TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole) {
  const std::string dir = TempDir("jkv_wal_torn");
  const std::string path = dir + "/torn.db";
  TornShared* shared = MapShared<TornShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;
  const pid_t reader = guard.Add(Spawn([&] { return HeldSnapshotReaderMain(path, shared); }));
  ASSERT_GT(reader, 0);
  const absl::Time ready_by = absl::Now() + absl::Seconds(60);
  while (shared->ready.load() == 0 && absl::Now() < ready_by) {
    int status = 0;
    ASSERT_NE(waitpid(reader, &status, WNOHANG), reader) << "reader " << DescribeStatus(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(shared->ready.load(), 1) << "the reader hangs";

  const int rounds = ScaledForSanitizer(400, 150);
  int round = 0;
  int status = 0;
  bool reader_ended = false;
  for (; round < rounds && !reader_ended; ++round) {
    shared->committed.store(0);
    const pid_t writer = guard.Add(Spawn([&] {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions());
      if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
      if (int bad = CommitBatches(**db, 1000 + 5 * round, 5); bad != kExitOk) return bad;
      shared->committed.store(1);
      for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return ChildFail(kExitNotKilled, "not killed");
    }));
    ASSERT_GT(writer, 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (shared->committed.load() == 0 && absl::Now() < deadline) {
      ASSERT_NE(waitpid(writer, &status, WNOHANG), writer)
          << "round " << round << ": writer " << DescribeStatus(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(shared->committed.load(), 1) << "round " << round << ": the writer hangs";
    ASSERT_EQ(kill(writer, SIGKILL), 0);
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
    ASSERT_TRUE(TearIndexHeader(path + "-shm"));
    {
      // Not alone (the reader has the database open): this connection finds the header torn
      // and rebuilds the index from the log.
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions());
      ASSERT_THAT(db, IsOk());
      absl::StatusOr<std::optional<std::string>> v = (*db)->Get(TornKey(1000 + 5 * round + 4, 9));
      ASSERT_THAT(v, IsOk());
      EXPECT_TRUE(v->has_value()) << "round " << round << ": the killed writer's last commit";
    }
    reader_ended = waitpid(reader, &status, WNOHANG) == reader;
  }
  shared->stop.store(1);
  if (!reader_ended) {
    ASSERT_TRUE(WaitFor(reader, absl::Seconds(30), &status)) << "reader hangs";
  }
  std::printf("%d writers killed and headers torn; the reader scanned its snapshot %llu times\n",
              round, static_cast<unsigned long long>(shared->scans.load()));
  EXPECT_TRUE(ExitedOk(status)) << "the process holding a snapshot through the recoveries "
                                << DescribeStatus(status) << " after " << round << " rounds";
  // The reader closed last.
  EXPECT_FALSE(Exists(path + "-wal"));
  EXPECT_FALSE(Exists(path + "-shm"));
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

}  // namespace
}  // namespace journalkv
