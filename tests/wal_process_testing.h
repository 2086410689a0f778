// Helpers of the WAL multi-process tests (wal_multiprocess_test.cc, wal_process_recovery_test.cc):
// child processes and their exit codes, the bank workload and its snapshots, shared memory
// between parent and children. JKV_WAL_MP_SEED=n changes the random choices. The tests run in
// journal mode wal and wal2 (the mode is a parameter of the options below).
#ifndef JOURNALKV_TESTS_WAL_PROCESS_TESTING_H_
#define JOURNALKV_TESTS_WAL_PROCESS_TESTING_H_

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
#include "wal/checkpoint_copy.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"

namespace journalkv::wal_process_testing {

inline constexpr int kAccounts = 50;
inline constexpr int64_t kStartBalance = 1000;
inline constexpr int64_t kTotal = kAccounts * kStartBalance;
inline constexpr int kSpillKeys = 500;
inline constexpr int kSpillValueBytes = 200;
inline constexpr char kCounterKey[] = "counter";

inline std::string AccountKey(int i) { return absl::StrCat("acct", 1000 + i); }
// A balance and some padding, so that the accounts fill several leaves of 1 KiB pages and a
// stale or mixed-up page shows in the sum.
inline std::string EncodeBalance(int64_t balance) {
  return absl::StrCat(balance, "|", std::string(60, 'b'));
}
inline bool DecodeBalance(absl::string_view v, int64_t* balance) {
  const size_t bar = v.find('|');
  return bar != absl::string_view::npos && absl::SimpleAtoi(v.substr(0, bar), balance);
}
inline std::string SpillKey(int i) { return absl::StrFormat("spill%04d", i); }

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

inline uint64_t Seed() {
  const char* env = std::getenv("JKV_WAL_MP_SEED");
  uint64_t seed = 1;
  if (env != nullptr && !absl::SimpleAtoi(env, &seed)) seed = 1;
  return seed;
}

inline std::string TempDir(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, "_XXXXXX");
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// WAL2: the writer switches logs once the current one holds this many frames (and the other
// one is copied). Smaller than the default (1000), so that the recovery tests' few hundred
// commits go to both logs; the bank test's policies look at no more frames than this (a policy
// threshold above it would never copy the log that is not current).
inline constexpr uint32_t kWal2SwitchPages = 100;

// `mode`: kWal or kWal2.
inline Options WalOptions(JournalMode mode, SyncLevel sync = SyncLevel::kNormal) {
  Options o;
  o.journal_mode = mode;
  o.wal2_switch_pages = kWal2SwitchPages;
  o.sync = sync;
  o.busy_timeout = absl::Seconds(5);
  return o;
}

// The bank database: small pages, so that its tree has several levels of pages.
inline Options BankOptions(JournalMode mode) {
  Options o = WalOptions(mode);
  o.page_size = 1024;
  return o;
}

// The log files of the database at `path`: -wal, and in wal2 -wal2.
inline std::vector<std::string> LogPaths(JournalMode mode, const std::string& path) {
  if (mode == JournalMode::kWal2) return {path + "-wal", path + "-wal2"};
  return {path + "-wal"};
}

// The names of the logs of `path` that exist ("" when none does).
inline std::string ExistingLogs(JournalMode mode, const std::string& path) {
  std::string out;
  for (const std::string& log : LogPaths(mode, path)) {
    if (Exists(log)) absl::StrAppend(&out, out.empty() ? "" : ", ", log);
  }
  return out;
}

// The names of the logs of `path` that are missing ("" when every one exists).
inline std::string MissingLogs(JournalMode mode, const std::string& path) {
  std::string out;
  for (const std::string& log : LogPaths(mode, path)) {
    if (!Exists(log)) absl::StrAppend(&out, out.empty() ? "" : ", ", log);
  }
  return out;
}

inline std::string ModeName(JournalMode mode) { return std::string(JournalModeName(mode)); }

// Anonymous shared memory, mapped before the forks: every child sees the same T.
template <typename T>
T* MapShared() {
  void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) T();
}
template <typename T>
inline void UnmapShared(T* p) {
  p->~T();
  munmap(p, sizeof(T));
}

// Prints why a child fails and returns its exit code.
inline int ChildFail(int code, const std::string& what) {
  std::fprintf(stderr, "[pid %d] exit %d: %s\n", static_cast<int>(getpid()), code, what.c_str());
  return code;
}

// The exit code for a failed call: kExitBusy for busy, else kExitError.
inline int StatusFail(const absl::Status& s, const std::string& what) {
  return ChildFail(absl::IsUnavailable(s) ? kExitBusy : kExitError,
                   absl::StrCat(what, ": ", s.ToString()));
}

// Runs `body` in a child process, which exits with its result (never returns to gtest).
inline pid_t Spawn(const std::function<int()>& body) {
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

inline std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("status ", status);
}
inline bool KilledBySigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
inline bool ExitedOk(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// Waits up to `timeout` for `pid`; SIGKILLs it when it does not end (and returns false).
inline bool WaitFor(pid_t pid, absl::Duration timeout, int* status) {
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
inline int CheckBank(const Snapshot& s, const char* who) {
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

}  // namespace journalkv::wal_process_testing

#endif  // JOURNALKV_TESTS_WAL_PROCESS_TESTING_H_
