// Transactions across databases (engine/across.h) run by real processes on real files:
//   - several processes run transactions across overlapping sets of databases, naming them in
//     random orders: none deadlocks (each would time out busy) and no commit is lost, in every
//     family that takes part;
//   - processes running such transactions are killed (SIGKILL) at random moments, and then
//     the databases are opened again, one at a time in a random order: every transaction is in
//     every database it wrote to or in none, and every one a process acknowledged (sync FULL)
//     is there. In the rollback modes and atomic (atomic on a scratch XFS with exchange-range,
//     tests/../vfs/scratch_fs.h, where root may make one; skipped, saying why, elsewhere). WAL
//     and WAL2 promise only per-database atomicity, so they are killed only to check that.
//
// A transaction's key is "p<process>:<n>" and its value the set of databases it wrote, so the
// check needs no record of what each process meant to write.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/scratch_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr int kDatabases = 4;

// Where journal mode atomic's cases run: the test directory when its file system has atomic
// batches, else a scratch XFS with exchange-range made once for the whole test where root may
// (the forked children _exit), else nowhere (empty).
const std::string& AtomicRoot() {
  static const std::string root = [] {
    std::string why;
    std::string folder = vfs::AtomicBatchFolder(::testing::TempDir(), &why);
    if (folder.empty()) std::printf("atomic cases: %s\n", why.c_str());
    return folder;
  }();
  return root;
}

class AcrossProcessTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override {
    const JournalMode mode = GetParam();
    std::string root = ::testing::TempDir();
    if (mode == JournalMode::kAtomic) {
      root = AtomicRoot();
      if (root.empty()) GTEST_SKIP() << "no file system with atomic batches here (see above)";
    }
    std::string tmpl = root + "/jkv_across_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    for (int i = 0; i < kDatabases; ++i) paths_.push_back(absl::StrCat(tmpl, "/db", i));
  }

  Options DbOptions() const {
    Options o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kFull;
    o.page_size = 4096;  // atomic: whole file system blocks (A6)
    o.busy_timeout = absl::Seconds(30);
    return o;
  }

  bool CrashAtomic() const { return !IsWalMode(GetParam()); }

  // A worker process: `count` transactions (0: until killed), each across two or three of the
  // databases in a random order, writing "p<id>:<n>" -> the set into each; after each commit
  // writes n to `ack_fd` (if >= 0). Exits 0, or 2 + the step that failed (printed).
  [[noreturn]] void Worker(int id, int count, int ack_fd) {
    std::vector<std::unique_ptr<Db>> dbs;
    for (const std::string& path : paths_) {
      auto db = Db::Open(path, DbOptions());
      if (!db.ok()) {
        std::fprintf(stderr, "worker %d: open %s: %s\n", id, path.c_str(),
                     db.status().ToString().c_str());
        _exit(2);
      }
      dbs.push_back(*std::move(db));
    }
    std::mt19937 rng(1000 + id);
    for (int n = 0; count == 0 || n < count; ++n) {
      std::vector<int> order(kDatabases);
      for (int i = 0; i < kDatabases; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      order.resize(2 + rng() % 2);
      std::string set;
      std::vector<Db*> chosen;
      for (int i : order) chosen.push_back(dbs[i].get());
      for (int i : std::set<int>(order.begin(), order.end())) absl::StrAppend(&set, i);
      auto txn = BeginWriteAcross(chosen);
      if (!txn.ok()) {
        std::fprintf(stderr, "worker %d: begin: %s\n", id, txn.status().ToString().c_str());
        _exit(3);
      }
      const std::string key = absl::StrCat("p", id, ":", n);
      for (size_t i = 0; i < chosen.size(); ++i) {
        // Some bulk, so that commits take a while and kills land inside them.
        if (!(**txn)[i].Put(key, set).ok() ||
            !(**txn)[i].Put(absl::StrCat(key, ":bulk"), std::string(3000, 'a' + n % 26)).ok()) {
          _exit(4);
        }
      }
      if (absl::Status s = (*txn)->Commit(); !s.ok()) {
        std::fprintf(stderr, "worker %d: commit %d: %s\n", id, n, s.ToString().c_str());
        _exit(5);
      }
      if (ack_fd >= 0) {
        const std::string line = absl::StrCat(n, "\n");
        if (write(ack_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
          _exit(6);
        }
      }
    }
    _exit(0);
  }

  // Opens the databases one at a time in a random order (the first recovers alone) and checks
  // that every transaction is in every database of its set or in none (`all_or_none`; else
  // only that each database's copy is whole), and that each of `acked` (process -> the
  // transactions it acknowledged) is in every database of its set. Returns the transactions
  // seen.
  int CheckDatabases(std::mt19937& rng, bool all_or_none,
                     const std::map<int, std::vector<int>>& acked) {
    std::vector<int> order(kDatabases);
    for (int i = 0; i < kDatabases; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::map<std::string, std::string>> contents(kDatabases);
    for (int i : order) {
      auto db = Db::Open(paths_[i], DbOptions());
      EXPECT_THAT(db, IsOk()) << paths_[i];
      if (!db.ok()) return 0;
      auto check = (*db)->Check();
      EXPECT_THAT(check, IsOk());
      if (check.ok() && !check->ok()) {
        ADD_FAILURE() << paths_[i] << ": " << check->problems.front();
      }
      auto read = (*db)->BeginRead();
      EXPECT_THAT(read, IsOk());
      if (!read.ok()) return 0;
      auto it = (*read)->NewIterator();
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (!absl::EndsWith(it->key(), ":bulk")) {
          absl::StatusOr<std::string> value = it->value();
          EXPECT_THAT(value, IsOk());
          if (value.ok()) contents[i][std::string(it->key())] = *value;
        }
      }
      EXPECT_THAT(it->status(), IsOk());
    }
    std::set<std::string> keys;
    for (const auto& c : contents) {
      for (const auto& [k, v] : c) keys.insert(k);
    }
    for (const std::string& key : keys) {
      std::string set;
      for (int i = 0; i < kDatabases; ++i) {
        auto found = contents[i].find(key);
        if (found != contents[i].end()) set = found->second;
      }
      for (char c : set) {
        const int i = c - '0';
        if (all_or_none) {
          EXPECT_TRUE(contents[i].contains(key))
              << key << " (written to databases " << set << ") is missing from database " << i;
        }
      }
    }
    for (const auto& [id, ns] : acked) {
      for (int n : ns) {
        const std::string key = absl::StrCat("p", id, ":", n);
        bool anywhere = false;
        for (const auto& c : contents) anywhere = anywhere || c.contains(key);
        EXPECT_TRUE(anywhere) << key << " was acknowledged and is in no database";
      }
    }
    return static_cast<int>(keys.size());
  }

  std::vector<std::string> paths_;
};

TEST_P(AcrossProcessTest, OverlappingTransactionsNeitherDeadlockNorLoseCommits) {
  constexpr int kWorkers = 3, kEach = 25;
  std::vector<pid_t> pids;
  for (int id = 0; id < kWorkers; ++id) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) Worker(id, kEach, -1);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a worker failed (its error is above): status " << status;
  }
  std::map<int, std::vector<int>> acked;
  for (int id = 0; id < kWorkers; ++id) {
    for (int n = 0; n < kEach; ++n) acked[id].push_back(n);
  }
  std::mt19937 rng(7);
  EXPECT_EQ(CheckDatabases(rng, /*all_or_none=*/true, acked), kWorkers * kEach);
}

TEST_P(AcrossProcessTest, KilledWritersLeaveEachTransactionInAllOrNone) {
  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  constexpr int kRounds = 4, kWorkers = 2;
  int seen = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::pair<pid_t, int>> workers;  // pid, the read end of its acks
    for (int w = 0; w < kWorkers; ++w) {
      int fds[2];
      ASSERT_EQ(pipe(fds), 0);
      const int id = round * kWorkers + w;
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(fds[0]);
        Worker(id, 0, fds[1]);
      }
      close(fds[1]);
      workers.emplace_back(pid, fds[0]);
    }
    usleep(150000 + rng() % 400000);
    std::map<int, std::vector<int>> acked;
    for (size_t w = 0; w < workers.size(); ++w) {
      ASSERT_EQ(kill(workers[w].first, SIGKILL), 0);
      int status = 0;
      ASSERT_EQ(waitpid(workers[w].first, &status, 0), workers[w].first);
      EXPECT_TRUE(WIFSIGNALED(status)) << "a worker failed before the kill (see above)";
      std::string text;
      char buf[4096];
      for (ssize_t n; (n = read(workers[w].second, buf, sizeof buf)) > 0;) text.append(buf, n);
      close(workers[w].second);
      for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
        int n = 0;
        if (absl::SimpleAtoi(line, &n)) acked[round * kWorkers + static_cast<int>(w)].push_back(n);
      }
    }
    seen += CheckDatabases(rng, CrashAtomic(), acked);
  }
  std::printf("%s: %d transactions checked across %d kills\n",
              std::string(JournalModeName(GetParam())).c_str(), seen, kRounds * kWorkers);
  EXPECT_GT(seen, 0);
}

std::string ModeName(const ::testing::TestParamInfo<JournalMode>& info) {
  return std::string(JournalModeName(info.param));
}

INSTANTIATE_TEST_SUITE_P(Modes, AcrossProcessTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kWal,
                                           JournalMode::kWal2, JournalMode::kAtomic),
                         ModeName);

}  // namespace
}  // namespace journalkv
