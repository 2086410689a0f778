// Transactions across atomic databases on a real XFS with exchange-range (pager/atomic_across.h
// on vfs/xfs_exchange.h's prepared batches), on a scratch XFS made for the test
// (vfs/scratch_fs.h): two and three databases commit together; writer processes running
// transactions across the databases are SIGKILLed at random moments, and every reopen finds
// every database holding the same transaction, no earlier than the last one the writer
// acknowledged; and the commits/s of transactions across two databases in atomic, beside wal
// (each database in turn) on the same XFS and persist on a scratch ext4, printed (not asserted:
// a loop device on a shared machine is no benchmark; bench/ has the real one). Skips with one
// line where no scratch XFS can be made. Tagged "xfs".
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/scratch_fs.h"

namespace journalkv {
namespace {

bool KernelAtLeast(int major, int minor) {
  struct utsname u;
  int got_major = 0, got_minor = 0;
  return ::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &got_major, &got_minor) == 2 &&
         (got_major > major || (got_major == major && got_minor >= minor));
}

Options ModeOptions(JournalMode mode) {
  Options options;
  options.journal_mode = mode;
  options.sync = SyncLevel::kFull;
  options.busy_timeout = absl::Seconds(5);
  return options;
}

class AtomicAcrossXfsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    why_not_ = new std::string(vfs::ScratchFs::CannotMakeReason(vfs::ScratchFs::Kind::kXfs));
    if (why_not_->empty() && !KernelAtLeast(6, 10)) *why_not_ = "needs Linux 6.10+";
    if (!why_not_->empty()) return;
    auto xfs = vfs::ScratchFs::Make(vfs::ScratchFs::Kind::kXfs);
    if (!xfs.ok()) {
      *why_not_ = std::string(xfs.status().message());
      return;
    }
    xfs_ = xfs->release();
  }
  static void TearDownTestSuite() {
    delete xfs_;
    xfs_ = nullptr;
    delete why_not_;
  }
  void SetUp() override {
    if (!why_not_->empty()) GTEST_SKIP() << "real XFS test skipped: " << *why_not_;
    static int n = 0;
    dir_ = absl::StrCat(xfs_->mount(), "/a", n++);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  }
  std::vector<std::string> Paths(int n) const {
    std::vector<std::string> paths;
    for (int i = 0; i < n; ++i) paths.push_back(absl::StrCat(dir_, "/db", i));
    return paths;
  }

  static std::string* why_not_;
  static vfs::ScratchFs* xfs_;
  std::string dir_;
};
std::string* AtomicAcrossXfsTest::why_not_ = nullptr;
vfs::ScratchFs* AtomicAcrossXfsTest::xfs_ = nullptr;

std::vector<std::unique_ptr<Db>> OpenAll(const std::vector<std::string>& paths,
                                         const Options& options) {
  std::vector<std::unique_ptr<Db>> dbs;
  for (const std::string& path : paths) {
    auto db = Db::Open(path, options);
    EXPECT_TRUE(db.ok()) << db.status();
    if (db.ok()) dbs.push_back(*std::move(db));
  }
  return dbs;
}

absl::Status PutAcross(const std::vector<std::unique_ptr<Db>>& dbs, const std::string& key,
                       const std::string& value) {
  std::vector<Db*> raw;
  for (const auto& db : dbs) raw.push_back(db.get());
  auto txn = BeginWriteAcross(raw);
  if (!txn.ok()) return txn.status();
  for (Db* db : raw) {
    if (absl::Status s = (*txn)->For(db)->Put(key, value); !s.ok()) return s;
  }
  return (*txn)->Commit();
}

int64_t ValueOf(Db& db) {
  auto v = db.Get("k");
  if (!v.ok() || !v->has_value()) return -1;
  return std::stoll(**v);
}

TEST_F(AtomicAcrossXfsTest, TwoAndThreeDatabasesCommitTogether) {
  for (int n : {2, 3}) {
    const std::vector<std::string> paths = Paths(n);
    {
      auto dbs = OpenAll(paths, ModeOptions(JournalMode::kAtomic));
      ASSERT_EQ(dbs.size(), static_cast<size_t>(n));
      for (int t = 1; t <= 20; ++t) {
        ASSERT_THAT(PutAcross(dbs, "k", std::to_string(t)), journalkv::testing::IsOk());
      }
      auto stats = dbs[0]->Stats();
      EXPECT_EQ(stats.atomic_write_kind, "xfs-exchange-range");
    }
    auto dbs = OpenAll(paths, ModeOptions(JournalMode::kAtomic));
    for (auto& db : dbs) EXPECT_EQ(ValueOf(*db), 20);
    struct stat st = {};
    {
      const int fd = ::open((paths[0] + "-super").c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      char magic[8] = {1};
      EXPECT_EQ(::pread(fd, magic, 8, 0), 8);
      ::close(fd);
      EXPECT_EQ(std::string(magic, 8), std::string(8, '\0'))
          << "the record is emptied (its magic zeroed) after each commit (Y4)";
    }
    for (const std::string& path : paths) {
      ASSERT_EQ(::stat((path + "-shadow").c_str(), &st), 0);
      EXPECT_EQ(st.st_size, 0) << path << ": the shadow is emptied after each commit";
    }
  }
}

// Writers killed mid-transaction: every reopen finds all or none of each transaction.
TEST_F(AtomicAcrossXfsTest, WritersKilledMidCommitLeaveEveryDatabaseAlike) {
  const std::vector<std::string> paths = Paths(3);
  {
    auto dbs = OpenAll(paths, ModeOptions(JournalMode::kAtomic));
    ASSERT_THAT(PutAcross(dbs, "k", "0"), journalkv::testing::IsOk());
  }
  // The last transaction each writer acknowledged, in memory shared with the parent.
  auto* acked = static_cast<std::atomic<int64_t>*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  new (acked) std::atomic<int64_t>(0);
  std::mt19937_64 rng(std::random_device{}());
  int rolled_forward = 0;
  const int kills = 12;
  for (int round = 0; round < kills; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto dbs = OpenAll(paths, ModeOptions(JournalMode::kAtomic));
      for (int64_t t = acked->load() + 1;; ++t) {
        // The databases' order varies, so the record's first database (and file) does too.
        if (!PutAcross(dbs, "k", std::to_string(t)).ok()) ::_exit(2);
        acked->store(t);
      }
    }
    ::usleep(30000 + rng() % 120000);  // the opens, then a few transactions
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed on its own (exit " << status << ")";
    // Recover in a varying order, one database alone first on odd rounds.
    std::vector<std::string> order = paths;
    std::shuffle(order.begin(), order.end(), rng);
    int64_t alone = -2;
    if (round % 2 == 1) {
      auto db = Db::Open(order[0], ModeOptions(JournalMode::kAtomic));
      ASSERT_TRUE(db.ok()) << db.status();
      alone = ValueOf(**db);
    }
    auto dbs = OpenAll(order, ModeOptions(JournalMode::kAtomic));
    const int64_t v = ValueOf(*dbs[0]);
    for (auto& db : dbs) ASSERT_EQ(ValueOf(*db), v) << "round " << round;
    if (alone != -2) {
      ASSERT_EQ(alone, v);
    }
    const int64_t a = acked->load();
    ASSERT_GE(v, a) << "an acknowledged transaction was lost";
    ASSERT_LE(v, a + 1);
    if (v == a + 1) {
      ++rolled_forward;
      acked->store(v);
    }
  }
  std::printf("%d writers killed mid-transaction across 3 atomic databases on XFS; %lld "
              "transactions acknowledged, %d in flight found committed\n",
              kills, static_cast<long long>(acked->load()), rolled_forward);
  ::munmap(acked, 4096);
}

double CommitsPerSecond(const std::vector<std::string>& paths, JournalMode mode) {
  auto dbs = OpenAll(paths, ModeOptions(mode));
  const int txns = 200;
  const absl::Time start = absl::Now();
  for (int t = 0; t < txns; ++t) {
    if (!PutAcross(dbs, absl::StrCat("key", t % 50), std::string(100, 'v')).ok()) return 0;
  }
  return txns / absl::ToDoubleSeconds(absl::Now() - start);
}

TEST_F(AtomicAcrossXfsTest, CommitsPerSecondBesideWalAndPersist) {
  const double atomic2 = CommitsPerSecond({dir_ + "/a0", dir_ + "/a1"}, JournalMode::kAtomic);
  const double wal2 = CommitsPerSecond({dir_ + "/w0", dir_ + "/w1"}, JournalMode::kWal);
  const double persist_xfs =
      CommitsPerSecond({dir_ + "/p0", dir_ + "/p1"}, JournalMode::kPersist);
  double persist_ext4 = 0;
  auto ext4 = vfs::ScratchFs::Make(vfs::ScratchFs::Kind::kExt4);
  if (ext4.ok()) {
    persist_ext4 = CommitsPerSecond({(*ext4)->mount() + "/p0", (*ext4)->mount() + "/p1"},
                                    JournalMode::kPersist);
  }
  std::printf("transactions across 2 databases, commits/s on scratch loop devices (FULL): "
              "atomic on xfs %.0f, wal on xfs %.0f (%.2fx), persist on xfs %.0f, persist on ext4 "
              "%.0f (%.2fx)\n",
              atomic2, wal2, wal2 > 0 ? atomic2 / wal2 : 0, persist_xfs, persist_ext4,
              persist_ext4 > 0 ? atomic2 / persist_ext4 : 0);
  EXPECT_GT(atomic2, 0);
}

}  // namespace
}  // namespace journalkv
