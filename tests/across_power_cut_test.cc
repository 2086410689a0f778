// Power cuts on the real kernel of a guest holding three databases that one process changes
// with transactions across them (engine/across.h): the rollback modes' super-journal
// (pager/super_journal.h) on ext4 and xfs. (Journal mode atomic's prepared batches and super
// record have their own: tests/atomic_across_power_cut_test.cc.) The disk and the cut are
// tests/cut_disk.h's (a reflink copy of a guest image
// written with direct I/O holds exactly what the guest had issued to its disk).
//
// Commit c (1, 2, ...) writes into two or all three of the databases (which: Members(c)) the
// key "c<c>" with the set as its value, and every seventh commit 200 more keys into each (a
// transaction that spills). One writer process commits them in order and publishes the last
// acknowledged one. At each cut, after the guest's journal replays, the databases are opened
// one at a time in a random order (the first recovers alone) and:
//   - every commit is in every database of its set or in none (atomic across databases);
//   - the commits present are 1..L for some L (a prefix: one writer commits them in order);
//   - (durable at normal, full and extra) L is at least the last commit acknowledged before the cut (durable), and at
//     most one past the last acknowledged after it.
// Every other cut (every one in the long tier) is cut again while its recovery runs in a child
// process killed at a random moment, and that cut is checked the same way.
//
// Skips with one line where loop devices and mounts are not allowed. Prints cuts and commits
// checked per configuration.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/crash_sweep.h"
#include "tests/cut_disk.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr int kDatabases = 3;

std::vector<int> Members(int c) {
  switch (c % 4) {
    case 0: return {0, 1, 2};
    case 1: return {0, 1};
    case 2: return {1, 2};
    default: return {2, 0};
  }
}

struct Config {
  std::string guest_fs;
  JournalMode mode;
  SyncLevel sync;
};

std::string Name(const Config& c) {
  return absl::StrCat(c.guest_fs, "_", JournalModeName(c.mode), "_", SyncLevelName(c.sync));
}

Options Opts(const Config& c) {
  Options o;
  o.journal_mode = c.mode;
  o.sync = c.sync;
  o.cache_pages = 64;  // the 200-key commits spill
  return o;
}

std::string DbPath(const std::string& dir, int i) { return absl::StrCat(dir, "/db", i); }

// The writer: commits 1, 2, ... until killed; *acked is the last acknowledged. Never returns.
[[noreturn]] void Writer(const Config& config, const std::string& dir, std::atomic<int>* acked) {
  std::vector<std::unique_ptr<Db>> dbs;
  for (int i = 0; i < kDatabases; ++i) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(DbPath(dir, i), Opts(config));
    if (!db.ok()) ::_exit(10);
    dbs.push_back(*std::move(db));
  }
  for (int c = 1;; ++c) {
    const std::vector<int> members = Members(c);
    std::vector<Db*> chosen;
    std::string set;
    for (int i : members) chosen.push_back(dbs[i].get());
    for (int i : std::set<int>(members.begin(), members.end())) absl::StrAppend(&set, i);
    absl::StatusOr<std::unique_ptr<WriteAcross>> txn = BeginWriteAcross(chosen);
    if (!txn.ok()) ::_exit(11);
    for (size_t p = 0; p < chosen.size(); ++p) {
      if (!(**txn)[p].Put(absl::StrCat("c", c), set).ok()) ::_exit(12);
      if (c % 7 == 0) {
        for (int k = 0; k < 200; ++k) {
          if (!(**txn)[p].Put(absl::StrFormat("bulk%03d", k), std::string(300, 'a' + c % 26))
                   .ok()) {
            ::_exit(12);
          }
        }
      }
    }
    if (!(*txn)->Commit().ok()) ::_exit(13);
    acked->store(c);
  }
}

struct Cut {
  std::string name;
  int before = 0;  // acknowledged when the cut began
  int after = 0;   // and when it ended
};

// Opens the databases under `dir` in a random order and checks them against `cut`: "" or what
// is wrong; *last is the newest commit they hold.
std::string Verify(const Config& config, const std::string& dir, const Cut& cut,
                   std::mt19937_64& rng, int* last) {
  *last = 0;
  std::vector<int> order(kDatabases);
  for (int i = 0; i < kDatabases; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::set<int>> commits(kDatabases);
  for (int i : order) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(DbPath(dir, i), Opts(config));
    if (!db.ok()) return absl::StrCat("open db", i, ": ", db.status().ToString());
    absl::StatusOr<CheckResult> check = (*db)->Check();
    if (!check.ok()) return absl::StrCat("check db", i, ": ", check.status().ToString());
    if (!check->ok()) return absl::StrCat("Check() db", i, ": ", check->problems.front());
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
    if (!r.ok()) return absl::StrCat("begin read: ", r.status().ToString());
    std::unique_ptr<Iterator> it = (*r)->NewIterator(IteratorOptions::Prefix("c"));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      int c = 0;
      if (!absl::SimpleAtoi(it->key().substr(1), &c)) return "a key that is no commit's";
      commits[i].insert(c);
      *last = std::max(*last, c);
    }
    if (!it->status().ok()) return absl::StrCat("scan: ", it->status().ToString());
  }
  for (int c = 1; c <= *last; ++c) {
    for (int i : Members(c)) {
      if (!commits[i].contains(c)) {
        return absl::StrCat("commit ", c, " is not in db", i, " but commit ", *last,
                            " is in some database (not all or none, or not a prefix)");
      }
    }
  }
  // Durable at every level here: the rollback modes sync at normal as at full (README,
  // "Journal modes and sync levels").
  const bool durable = config.sync != SyncLevel::kOff;
  if (durable && *last < cut.before) {
    return absl::StrCat("an acknowledged commit is lost: the newest is ", *last);
  }
  if (*last > cut.after + 1) return absl::StrCat("commit ", *last, " is from the future");
  return "";
}

class AcrossPowerCutTest : public ::testing::TestWithParam<Config> {};

TEST_P(AcrossPowerCutTest, EveryCutHoldsEachTransactionInAllItsDatabasesOrNone) {
  const Config& config = GetParam();
  std::unique_ptr<CutDisk> disk;
  const std::string why = CutDisk::Make(config.guest_fs, &disk);
  if (!why.empty()) GTEST_SKIP() << why;
  for (int i = 0; i < kDatabases; ++i) {  // the starting state is on the disk
    Options o = Opts(config);
    o.sync = SyncLevel::kFull;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(DbPath(disk->guest(), i), o);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put("start", "1"), IsOk());
    ASSERT_THAT((*db)->Close(), IsOk());
  }
  ASSERT_TRUE(Shell(absl::StrCat("sync -f ", DbPath(disk->guest(), 0))));
  auto* acked = static_cast<std::atomic<int>*>(::mmap(nullptr, sizeof(std::atomic<int>),
                                                      PROT_READ | PROT_WRITE,
                                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  new (acked) std::atomic<int>(0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t writer = ::fork();
  if (writer == 0) Writer(config, disk->guest(), acked);
  ASSERT_GT(writer, 0);
  std::vector<Cut> cuts;
  std::mt19937_64 rng(testing::DrawSeed(absl::StrCat("across_power_cut/", Name(config)), 0));
  const int n = testing::TierScaled(6, 3, 40);
  while (acked->load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 40));
    Cut cut{absl::StrCat("cut", i, ".img"), acked->load(), 0};
    ASSERT_TRUE(disk->Cut(cut.name)) << "reflink copy failed";
    cut.after = acked->load();
    cuts.push_back(cut);
  }
  ::kill(writer, SIGKILL);
  int status = 0;
  ::waitpid(writer, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended by itself: exit " << WEXITSTATUS(status);
  uint64_t checked = 0;
  int recovery_cuts = 0, cut_short = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const Cut& cut = cuts[i];
    const std::string where = absl::StrCat(Name(config), ", ", cut.name, " (acknowledged ",
                                           cut.before, " before it, ", cut.after, " after)");
    const bool again = i % 2 == 1 || testing::LongTier();
    const uint64_t child_seed = rng();
    int last = 0;
    bool killed = false;
    const std::string problem = disk->CheckCut(
        cut.name, again, rng() % 20000,
        [&](const std::string& folder, bool in_child) {
          int ignored;
          std::mt19937_64 order(in_child ? child_seed : child_seed + 1);
          return Verify(config, folder, cut, order, in_child ? &ignored : &last);
        },
        &killed);
    ASSERT_EQ(problem, "") << where;
    recovery_cuts += again ? 1 : 0;
    cut_short += killed ? 1 : 0;
    checked += static_cast<uint64_t>(last);
  }
  std::printf("%s: %zu cuts over %d transactions across databases (%d cut again during their "
              "recovery, %d of those recoveries killed before they ended); %llu commits "
              "checked in all their databases\n",
              Name(config).c_str(), cuts.size(), acked->load(), recovery_cuts, cut_short,
              static_cast<unsigned long long>(checked));
  ::munmap(acked, sizeof(std::atomic<int>));
}

// The default tier: persist and delete at full on ext4, persist at full on xfs. The long tier:
// every journal-file mode at normal, full and extra on both.
std::vector<Config> Configs() {
  std::vector<Config> out;
  const bool all = testing::LongTier();
  for (const char* fs : {"ext4", "xfs"}) {
    for (JournalMode m : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist}) {
      for (SyncLevel s : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
        const bool sample = s == SyncLevel::kFull &&
                            (m == JournalMode::kPersist ||
                             (m == JournalMode::kDelete && std::string(fs) == "ext4"));
        if (all || sample) out.push_back({fs, m, s});
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Disks, AcrossPowerCutTest, ::testing::ValuesIn(Configs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return Name(info.param);
                         });

}  // namespace
}  // namespace journalkv
