// What an opener finds at the path it is given, on the real file system (TEST_TMPDIR):
//
//   - an empty file other openers are creating at the same moment: it waits for them, in one
//     process (a scripted interleaving through the hook "open:creating") and in twelve;
//   - a symbolic link: the database is the link's target, with one set of side files whichever
//     name a connection uses, a link to a file still to be created included;
//   - a second name (a hard link): refused, the data untouched;
//   - something that is not a regular file (a named pipe, a character device): refused with a
//     message naming it, at once (a named pipe opened for reading used to block forever).

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wal/wal_connection.h"
#include "vfs/file_system_testing.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Options WithMode(JournalMode mode) {
  Options o;
  o.journal_mode = mode;
  o.busy_timeout = absl::Seconds(10);
  return o;
}

std::unique_ptr<Db> MustOpen(const std::string& path, const Options& o) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  EXPECT_THAT(db, IsOk());
  return db.ok() ? std::move(db).value() : nullptr;
}

// --- creation

// The first opener to reach "open:creating" waits there until a second one has passed it and
// had ample time to take RESERVED and start waiting for EXCLUSIVE, that is for the first
// opener's SHARED to go.
std::atomic<int> g_creators{0};
void HoldTheFirstCreator(const char* point) {
  if (std::string(point) != "open:creating") return;
  if (g_creators.fetch_add(1) != 0) return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_creators.load() < 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

TEST(DbOpenTest, TwoOpenersCreatingOneDatabaseBothOpenIt) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kPersist}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::ScopedTempDir dir;
    const std::string path = dir.path() + "/new.db";
    Options o = WithMode(mode);
    o.busy_timeout = absl::Seconds(3);
    g_creators = 0;
    wal::SetWalHookForTesting(HoldTheFirstCreator);
    absl::StatusOr<std::unique_ptr<Db>> first;
    std::thread t([&] { first = Db::Open(path, o); });
    while (g_creators.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const absl::Time start = absl::Now();
    absl::StatusOr<std::unique_ptr<Db>> second = Db::Open(path, o);
    t.join();
    wal::SetWalHookForTesting(nullptr);
    std::printf("%s: two creators opened in %.0f ms\n", std::string(JournalModeName(mode)).c_str(),
                absl::ToDoubleMilliseconds(absl::Now() - start));
    ASSERT_THAT(first, IsOk());
    ASSERT_THAT(second, IsOk());
    EXPECT_EQ(g_creators.load(), 2);
    ASSERT_THAT((*first)->Put("a", "1"), IsOk());
    ASSERT_THAT((*second)->Put("b", "2"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> a, (*second)->Get("a"));
    EXPECT_EQ(a, "1");
  }
}

// Twelve one-shot processes put one key each into a database none of them has created yet.
TEST(DbOpenTest, TwelveProcessesCreatingOneDatabaseAllCommit) {
  constexpr int kProcesses = 12;
  constexpr int kRounds = 3;
  int failures = 0;
  for (JournalMode mode : {JournalMode::kPersist, JournalMode::kWal}) {
    for (int round = 0; round < kRounds; ++round) {
      vfs::ScopedTempDir dir;
      const std::string path = dir.path() + "/new.db";
      pid_t pids[kProcesses];
      for (int i = 0; i < kProcesses; ++i) {
        pids[i] = ::fork();
        ASSERT_GE(pids[i], 0);
        if (pids[i] == 0) {
          absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WithMode(mode));
          absl::Status s = db.ok() ? (*db)->Put(absl::StrCat("k", i), "v") : db.status();
          if (s.ok() && db.ok()) s = (*db)->Close();
          if (!s.ok()) std::fprintf(stderr, "process %d: %s\n", i, s.ToString().c_str());
          std::fflush(stderr);
          ::_exit(s.ok() ? 0 : 1);
        }
      }
      for (int i = 0; i < kProcesses; ++i) {
        int status = 0;
        ASSERT_EQ(::waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
      }
      std::unique_ptr<Db> db = MustOpen(path, WithMode(mode));
      ASSERT_NE(db, nullptr);
      for (int i = 0; i < kProcesses; ++i) {
        JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(absl::StrCat("k", i)));
        EXPECT_EQ(v, "v") << JournalModeName(mode) << " round " << round << " key k" << i;
      }
    }
  }
  std::printf("%d one-shot creators in 2 modes x %d rounds: %d failed\n", kProcesses, kRounds,
              failures);
  EXPECT_EQ(failures, 0);
}

// --- symbolic and hard links

// A connection through a link and one through the file's own name are connections to one
// database: one writer at a time, and every commit of either kept.
TEST(DbOpenTest, ASymbolicLinkIsTheDatabaseItNames) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2, JournalMode::kDelete}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::ScopedTempDir dir;
    const std::string real = dir.path() + "/s.db";
    const std::string link = dir.path() + "/l.db";
    {
      std::unique_ptr<Db> db = MustOpen(real, WithMode(mode));
      ASSERT_THAT(db->Put("base", "0"), IsOk());
    }
    ASSERT_EQ(::symlink("s.db", link.c_str()), 0);  // relative, as `ln -s s.db l.db` makes it
    Options quick = WithMode(mode);
    quick.busy_timeout = absl::ZeroDuration();
    std::unique_ptr<Db> via_link = MustOpen(link, WithMode(mode));
    std::unique_ptr<Db> direct = MustOpen(real, quick);
    ASSERT_NE(via_link, nullptr);
    ASSERT_NE(direct, nullptr);
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> txn, via_link->BeginWrite());
      ASSERT_THAT(txn->Put("viaLink", "1"), IsOk());
      // The other name's writer waits for this one (here: is refused at once).
      EXPECT_THAT(direct->Put("direct", "1"), StatusIs(absl::StatusCode::kUnavailable, "busy"));
      ASSERT_THAT(txn->Commit(), IsOk());
    }
    ASSERT_THAT(direct->Put("direct", "1"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> seen, direct->Get("viaLink"));
    EXPECT_EQ(seen, "1");
    ASSERT_THAT(direct->Close(), IsOk());
    ASSERT_THAT(via_link->Close(), IsOk());
    EXPECT_FALSE(Exists(link + "-wal"));
    EXPECT_FALSE(Exists(link + "-shm"));
    EXPECT_FALSE(Exists(link + "-journal"));
    for (const std::string& name : {real, link}) {
      std::unique_ptr<Db> db = MustOpen(name, WithMode(mode));
      for (const char* key : {"base", "viaLink", "direct"}) {
        JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get(key));
        EXPECT_TRUE(v.has_value()) << key << " through " << name;
      }
    }
  }
}

TEST(DbOpenTest, ALinkToAMissingFileCreatesTheTarget) {
  vfs::ScopedTempDir dir;
  const std::string link = dir.path() + "/l.db";
  ASSERT_EQ(::symlink("chain.db", link.c_str()), 0);
  ASSERT_EQ(::symlink((dir.path() + "/target.db").c_str(), (dir.path() + "/chain.db").c_str()),
            0);
  {
    std::unique_ptr<Db> db = MustOpen(link, WithMode(JournalMode::kWal));
    ASSERT_THAT(db->Put("k", "v"), IsOk());
    EXPECT_TRUE(Exists(dir.path() + "/target.db-wal"));
    EXPECT_FALSE(Exists(link + "-wal"));
  }
  std::unique_ptr<Db> db = MustOpen(dir.path() + "/target.db", WithMode(JournalMode::kWal));
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("k"));
  EXPECT_EQ(v, "v");
}

TEST(DbOpenTest, ALinkLoopIsRefused) {
  vfs::ScopedTempDir dir;
  const std::string a = dir.path() + "/a.db";
  ASSERT_EQ(::symlink("b.db", a.c_str()), 0);
  ASSERT_EQ(::symlink("a.db", (dir.path() + "/b.db").c_str()), 0);
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(a, WithMode(JournalMode::kWal));
  std::printf("a loop of links: %s\n", db.status().ToString().c_str());
  EXPECT_THAT(db, StatusIs(absl::StatusCode::kFailedPrecondition, "symbolic links"));
}

TEST(DbOpenTest, AHardLinkedDatabaseIsRefusedUnderEitherName) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kDelete}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::ScopedTempDir dir;
    const std::string real = dir.path() + "/s.db";
    const std::string second = dir.path() + "/h.db";
    {
      std::unique_ptr<Db> db = MustOpen(real, WithMode(mode));
      ASSERT_THAT(db->Put("k", "v"), IsOk());
    }
    ASSERT_EQ(::link(real.c_str(), second.c_str()), 0);
    for (const std::string& name : {real, second}) {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(name, WithMode(mode));
      std::printf("%s: %s\n", name.c_str(), db.status().ToString().c_str());
      EXPECT_THAT(db, StatusIs(absl::StatusCode::kFailedPrecondition, "hard links"));
      EXPECT_FALSE(Exists(name + "-wal"));
      EXPECT_FALSE(Exists(name + "-shm"));
    }
    ASSERT_EQ(::unlink(second.c_str()), 0);
    std::unique_ptr<Db> db = MustOpen(real, WithMode(mode));
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("k"));
    EXPECT_EQ(v, "v");
  }
}

// --- not a regular file

// Opens `path` in a child process and reports what Open returned; a child still in Open after
// 5 s is killed and reported as "hung".
std::string OpenInAChild(const std::string& path, bool read_only) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Options o = WithMode(JournalMode::kWal);
    o.read_only = read_only;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
    const std::string out = db.ok() ? "opened" : db.status().ToString();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(fds[0]);
      return "hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string out(4096, '\0');
  const ssize_t n = ::read(fds[0], out.data(), out.size());
  ::close(fds[0]);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

TEST(DbOpenTest, ANamedPipeOrADeviceIsRefusedAtOnceNamingWhatItIs) {
  vfs::ScopedTempDir dir;
  const std::string fifo = dir.path() + "/ff";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (bool read_only : {true, false}) {
    const std::string got = OpenInAChild(fifo, read_only);
    std::printf("a named pipe, %s: %s\n", read_only ? "read-only" : "read-write", got.c_str());
    EXPECT_THAT(got, HasSubstr("FAILED_PRECONDITION"));
    EXPECT_THAT(got, HasSubstr("not a regular file (a named pipe)"));
    EXPECT_FALSE(Exists(fifo + "-wal"));
    EXPECT_FALSE(Exists(fifo + "-shm"));
  }
  const std::string got = OpenInAChild("/dev/null", false);
  std::printf("/dev/null: %s\n", got.c_str());
  EXPECT_THAT(got, HasSubstr("not a regular file (a character device)"));
  // A link to a device is the device.
  const std::string link = dir.path() + "/null.db";
  ASSERT_EQ(::symlink("/dev/null", link.c_str()), 0);
  EXPECT_THAT(OpenInAChild(link, true), HasSubstr("not a regular file (a character device)"));
}

}  // namespace
}  // namespace journalkv
