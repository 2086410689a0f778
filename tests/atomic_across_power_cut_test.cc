// Real power cuts (tests/cut_disk.h) of an xfs guest with exchange-range holding three
// databases in journal mode atomic, while a writer process runs transactions across all three
// (pager/atomic_across.h, Y1..Y7): each sets k = <its number> in every database. At each cut
// the guest's image is copied (what its disk holds, none of its page cache), mounted elsewhere
// and every database opened (in a varying order, one alone first on some cuts): all must hold
// the same transaction, no earlier than the last one acknowledged before the cut, no later
// than one past the last acknowledged after it. Every other cut (every one in the long tier)
// is cut again while a process recovers it (killed at a random moment), and that copy checked
// the same way. Skips with one line where no such guest can be made. Tagged "xfs".
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/cut_disk.h"
#include "vfs/scratch_fs.h"

namespace journalkv {
namespace {

constexpr int kDbs = 3;

Options Opts() {
  Options o;
  o.journal_mode = JournalMode::kAtomic;
  o.sync = SyncLevel::kFull;
  o.busy_timeout = absl::Seconds(5);
  return o;
}

std::vector<std::string> Paths(const std::string& dir) {
  std::vector<std::string> paths;
  for (int i = 0; i < kDbs; ++i) paths.push_back(absl::StrCat(dir, "/db", i));
  return paths;
}

// Opens the databases under `dir` in an order drawn from `seed` (the first alone, closed,
// first when `alone_first`), checks each, and says what is wrong ("" when all is well);
// *value: the transaction they all hold.
std::string Verify(const std::string& dir, uint64_t seed, bool alone_first, int before,
                   int after, int* value) {
  std::vector<std::string> order = Paths(dir);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  auto read = [](Db& db, int* v) -> std::string {
    absl::StatusOr<std::optional<std::string>> got = db.Get("k");
    if (!got.ok()) return absl::StrCat("get: ", got.status().ToString());
    if (!got->has_value() || !absl::SimpleAtoi(**got, v)) return "no k";
    return "";
  };
  int alone = -1;
  if (alone_first) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(order[0], Opts());
    if (!db.ok()) return absl::StrCat(order[0], ": open: ", db.status().ToString());
    if (std::string p = read(**db, &alone); !p.empty()) return absl::StrCat(order[0], ": ", p);
  }
  std::vector<std::unique_ptr<Db>> dbs;
  std::vector<int> values;
  for (const std::string& path : order) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, Opts());
    if (!db.ok()) return absl::StrCat(path, ": open: ", db.status().ToString());
    int v = -1;
    if (std::string p = read(**db, &v); !p.empty()) return absl::StrCat(path, ": ", p);
    absl::StatusOr<CheckResult> check = (*db)->Check();
    if (!check.ok() || !check->ok()) return absl::StrCat(path, ": Check() fails");
    values.push_back(v);
    dbs.push_back(*std::move(db));
  }
  *value = values[0];
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != values[0]) {
      return absl::StrCat(order[i], " holds transaction ", values[i], ", ", order[0],
                          " holds ", values[0]);
    }
  }
  if (alone_first && alone != values[0]) {
    return absl::StrCat(order[0], " recovered alone held ", alone, ", then ", values[0]);
  }
  if (values[0] < before) return absl::StrCat("acknowledged transaction ", before, " lost");
  if (values[0] > after + 1) return absl::StrCat("transaction ", values[0], " from the future");
  return "";
}

TEST(AtomicAcrossPowerCutTest, EveryCutHoldsEachTransactionInAllDatabasesOrNone) {
  std::unique_ptr<CutDisk> disk;
  const std::string why = CutDisk::Make("xfs", &disk);
  if (!why.empty()) GTEST_SKIP() << why;
  if (!vfs::HasAtomicBatches(disk->guest())) {
    GTEST_SKIP() << "the xfs guest has no exchange-range (Linux 6.10+)";
  }
  {
    std::vector<std::unique_ptr<Db>> dbs;
    for (const std::string& path : Paths(disk->guest())) {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, Opts());
      ASSERT_THAT(db, testing::IsOk());
      dbs.push_back(*std::move(db));
    }
    std::vector<Db*> raw;
    for (auto& db : dbs) raw.push_back(db.get());
    auto txn = BeginWriteAcross(raw);
    ASSERT_THAT(txn, testing::IsOk());
    for (Db* db : raw) ASSERT_THAT((*txn)->For(db)->Put("k", "0"), testing::IsOk());
    ASSERT_THAT((*txn)->Commit(), testing::IsOk());
  }
  ASSERT_TRUE(Shell(absl::StrCat("sync -f ", disk->guest(), "/db0")));
  auto* acked = static_cast<std::atomic<int>*>(::mmap(nullptr, sizeof(std::atomic<int>),
                                                      PROT_READ | PROT_WRITE,
                                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  new (acked) std::atomic<int>(0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    std::vector<std::unique_ptr<Db>> dbs;
    for (const std::string& path : Paths(disk->guest())) {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, Opts());
      if (!db.ok()) ::_exit(10);
      dbs.push_back(*std::move(db));
    }
    std::vector<Db*> raw;
    for (auto& db : dbs) raw.push_back(db.get());
    for (int t = 1;; ++t) {
      auto txn = BeginWriteAcross(raw);
      if (!txn.ok()) ::_exit(11);
      for (Db* db : raw) {
        if (!(*txn)->For(db)->Put("k", std::to_string(t)).ok()) ::_exit(12);
        // Every fifth transaction is larger than the cache: its batches hold spilled pages.
        for (int i = 0; t % 5 == 0 && i < 300; ++i) {
          if (!(*txn)->For(db)->Put(absl::StrCat("bulk", i), std::string(300, 'b')).ok()) {
            ::_exit(12);
          }
        }
      }
      if (!(*txn)->Commit().ok()) ::_exit(13);
      acked->store(t);
    }
  }
  struct Cut {
    std::string name;
    int before, after;
  };
  std::vector<Cut> cuts;
  const uint64_t run_seed = std::random_device{}();
  std::printf("atomic across power cut run seed %llu\n", static_cast<unsigned long long>(run_seed));
  std::mt19937_64 rng(run_seed);
  const int n = testing::TierScaled(8, 4, 60);
  while (acked->load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
    Cut cut{absl::StrCat("cut", i, ".img"), acked->load(), 0};
    ASSERT_TRUE(disk->Cut(cut.name)) << "reflink copy failed";
    cut.after = acked->load();
    cuts.push_back(cut);
  }
  ::kill(writer, SIGKILL);
  int status = 0;
  ::waitpid(writer, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended by itself: exit " << WEXITSTATUS(status);
  int in_flight = 0, recovery_cuts = 0, cut_short = 0;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const Cut& cut = cuts[i];
    const std::string where = absl::StrCat(cut.name, " (acknowledged ", cut.before,
                                           " before it, ", cut.after, " after)");
    const uint64_t seed = rng();
    const bool alone_first = (seed & 2) != 0;
    const bool again = i % 2 == 1 || testing::LongTier();
    int value = -1;
    bool killed = false;
    // The recovery opens the databases in one order (one alone first, or all), the check of
    // its cut in the other.
    const std::string problem = disk->CheckCut(
        cut.name, again, rng() % 20000,
        [&](const std::string& folder, bool in_child) {
          int ignored;
          if (in_child || !again) {
            return Verify(folder, seed, alone_first, cut.before, cut.after,
                          in_child ? &ignored : &value);
          }
          return Verify(folder, seed >> 8, !alone_first, cut.before, cut.after, &value);
        },
        &killed);
    ASSERT_EQ(problem, "") << where;
    recovery_cuts += again ? 1 : 0;
    cut_short += killed ? 1 : 0;
    if (value > cut.after) ++in_flight;
  }
  std::printf("%zu cuts of 3 atomic databases over %d transactions across them (%d cut again "
              "during their recovery, %d of those recoveries killed before they ended); %d cuts "
              "held the transaction in flight\n",
              cuts.size(), acked->load(), recovery_cuts, cut_short, in_flight);
  ::munmap(acked, sizeof(std::atomic<int>));
}

}  // namespace
}  // namespace journalkv
