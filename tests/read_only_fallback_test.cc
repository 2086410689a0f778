// A user who may read a database but not write it still reads it, in every journal mode, with
// real file permissions: the database file 0444 in a 0555 folder, opened by an unprivileged
// user (nobody, 65534) in a child process. Tests run as root, which ignores file permissions, so
// the child drops to that user before it opens anything; a test run by another user needs no
// drop (the owner is held to the mode bits too) and the child then runs as that user.
//
// The opener asks for nothing special (Options() as `jkv x.db get k` gives): it falls back to a
// read-only connection, reads every key, sees a live writer's later commits in WAL modes (the
// writer, another process, keeps the -wal and -shm that the reader may not write), refuses
// writes with FailedPrecondition naming the database and why, and changes nothing in the folder.
#include <dirent.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr uid_t kNobody = 65534;

// Each entry of `dir`: name -> (size, mode, modification time in ns).
std::map<std::string, std::string> Listing(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;
    out[name] = absl::StrCat(st.st_size, " ", st.st_mode, " ", st.st_mtim.tv_sec, ".",
                             st.st_mtim.tv_nsec);
  }
  closedir(d);
  return out;
}

// In a child process: becomes the unprivileged user when running as root. Exits with 100 when
// it cannot.
void DropPrivileges() {
  if (geteuid() != 0) return;
  if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) {
    std::fprintf(stderr, "cannot drop to user %d: errno %d\n", kNobody, errno);
    _exit(100);
  }
}

// Runs `body` in a child process as an unprivileged user; the child's exit code is the number
// of failed checks (each printed on stderr). Returns that code, or -1 if the child died.
int RunAsUnprivileged(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    DropPrivileges();
    _exit(body());
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

#define CHILD_CHECK(cond, ...)                                              \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #cond,    \
                   absl::StrCat(__VA_ARGS__).c_str());                      \
      ++failures;                                                           \
    }                                                                       \
  } while (0)

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }

class ReadOnlyFallbackTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override {
    // Under /tmp, not TEST_TMPDIR: the unprivileged child must be able to reach the folder,
    // and a test's temporary directory may sit under root's home (0700).
    char templ[] = "/tmp/jkv-readonly-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr) << errno;
    dir_ = templ;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    path_ = dir_ + "/x.db";
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0755);
    for (const auto& [name, unused] : Listing(dir_)) std::remove((dir_ + "/" + name).c_str());
    rmdir(dir_.c_str());
  }

  Options WriterOptions() const {
    Options o;
    o.journal_mode = GetParam();
    o.checkpoint_policy = "manual";  // WAL: the commits stay in the log the reader must read
    return o;
  }

  // In the child: checks the keys [0, n) hold `value_of(i)` and that writes are refused.
  static int CheckReader(Db& db, int n, const std::function<std::string(int)>& value_of) {
    int failures = 0;
    CHILD_CHECK(db.options().read_only, "the connection should say it is read-only");
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::optional<std::string>> v = db.Get(Key(i));
      CHILD_CHECK(v.ok() && v->has_value() && **v == value_of(i), Key(i), ": ",
                  v.ok() ? (v->has_value() ? **v : "missing") : v.status().ToString());
    }
    const absl::Status put = db.Put(Key(0), "changed");
    CHILD_CHECK(put.code() == absl::StatusCode::kFailedPrecondition, put.ToString());
    CHILD_CHECK(absl::StrContains(put.message(), db.path()) &&
                    absl::StrContains(put.message(), "open read-only because writing it is not "
                                                     "allowed") &&
                    absl::StrContains(put.message(), "Permission denied"),
                put.ToString());
    const absl::Status del = db.Delete(Key(1)).status();
    CHILD_CHECK(del.code() == absl::StatusCode::kFailedPrecondition, del.ToString());
    return failures;
  }

  std::string dir_;
  std::string path_;
};

// A database closed cleanly, its file 0444 in a 0555 folder (SQLite reads such a rollback
// database but not a WAL one: it cannot create the -shm).
TEST_P(ReadOnlyFallbackTest, AnUnprivilegedUserReadsAClosedDatabase) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, WriterOptions()));
    ASSERT_THAT(db->Put(Key(0), "v0"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> txn, db->BeginWrite());
    for (int i = 1; i < 300; ++i) ASSERT_THAT(txn->Put(Key(i), absl::StrCat("v", i)), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  for (const auto& [name, unused] : Listing(dir_)) {
    ASSERT_EQ(chmod((dir_ + "/" + name).c_str(), 0444), 0) << name;
  }
  ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);
  const auto before = Listing(dir_);

  const int failures = RunAsUnprivileged([&] {
    int failures = 0;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, Options());
    CHILD_CHECK(db.ok(), db.status().ToString());
    if (!db.ok()) return failures;
    failures += CheckReader(**db, 300, [](int i) { return absl::StrCat("v", i); });
    // Forcing it still works, and still refuses writes, with the plain message.
    absl::StatusOr<std::unique_ptr<Db>> forced = [&] {
      Options o;
      o.read_only = true;
      return Db::Open(path_, o);
    }();
    CHILD_CHECK(forced.ok(), forced.status().ToString());
    return failures;
  });
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(Listing(dir_), before) << "a read-only opener changed the folder";
}

// A user who may not write where the database lives gets a clear error when the database
// does not exist, not an empty read-only database.
TEST_P(ReadOnlyFallbackTest, AMissingDatabaseInAFolderTheUserMayNotWriteIsAnError) {
  ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);
  const int failures = RunAsUnprivileged([&] {
    int failures = 0;
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, Options());
    CHILD_CHECK(!db.ok(), "opened a database that does not exist in an unwritable folder");
    CHILD_CHECK(db.status().code() == absl::StatusCode::kPermissionDenied,
                db.status().ToString());
    return failures;
  });
  EXPECT_EQ(failures, 0);
  EXPECT_TRUE(Listing(dir_).empty());
}

// A writer in this process keeps the database open (in WAL modes its commits in the -wal, the
// -shm mapped); the unprivileged reader in a child reads its commits and, after the writer
// commits again, the newer ones.
TEST_P(ReadOnlyFallbackTest, AnUnprivilegedUserReadsBesideALiveWriter) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  ASSERT_THAT(writer->Put(Key(0), "first"), IsOk());
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> txn, writer->BeginWrite());
    for (int i = 1; i < 200; ++i) ASSERT_THAT(txn->Put(Key(i), "first"), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  for (const auto& [name, unused] : Listing(dir_)) {
    ASSERT_EQ(chmod((dir_ + "/" + name).c_str(), 0444), 0) << name;  // the writer's fds stay
  }
  ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);

  int to_child[2];
  int to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    DropPrivileges();
    _exit([&] {
      int failures = 0;
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, Options());
      CHILD_CHECK(db.ok(), db.status().ToString());
      if (!db.ok()) return failures;
      failures += CheckReader(**db, 200, [](int) { return std::string("first"); });
      char c = 'r';
      if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1) return failures + 1;
      // The writer has committed "second" to every key meanwhile.
      failures += CheckReader(**db, 200, [](int) { return std::string("second"); });
      return failures;
    }());
  }
  close(to_child[0]);
  close(to_parent[1]);
  char c;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1) << "the reader died before its first reads";
  chmod(dir_.c_str(), 0755);  // the rollback modes' writer creates its journal
  ASSERT_THAT(writer->Put(Key(0), "second"), IsOk());
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> txn, writer->BeginWrite());
    for (int i = 1; i < 200; ++i) ASSERT_THAT(txn->Put(Key(i), "second"), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  ASSERT_EQ(write(to_child[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(to_child[1]);
  close(to_parent[0]);
}

INSTANTIATE_TEST_SUITE_P(Modes, ReadOnlyFallbackTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2,
                                           JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
