// End-to-end tests of `jkv DB shell`: a whole script on stdin, a shell driven through pipes one
// line at a time as another program would, and its transactions seen from other processes
// (the real binary, fork + exec, against a fresh temporary directory).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/trace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/jkv_e2e_testing.h"
#include "tools/tokens.h"

namespace journalkv::tools {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

TEST_F(JkvTest, ShellAnswersEveryLineAndExitsZero) {
  const Result r = Jkv({db_, "shell"},
                       "put \\x00\\xff k\\x20\\x5c\\x0a\n"
                       "put a\\x20b \\x0a\n"
                       "get \\x00\\xff\n"
                       "\n"
                       "begin\nput t 1\nrollback\nget t\n"
                       "begin\nput t 2\ncommit\nget t\n"
                       "begin read\nput x y\nrollback\n"
                       "scan\nscan a\\x20b t 1\ncount\n"
                       "get a\\q\nfrobnicate\ndel nope\ncheckpoint\n");
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  const std::vector<std::string> expected = {
      "ok",  // put
      "ok",  // put
      "value k\\x20\\x5c\\x0a",
      // (the empty line: no answer)
      "ok", "ok", "ok", "missing",  // begin, put, rollback, get
      "ok", "ok", "ok", "value 2",  // begin, put, commit, get
      "ok",
      "error: put: the open transaction is read-only (begin read); commit or rollback it "
      "first",
      "ok",  // rollback of the read transaction
      "pairs 3", "\\x00\\xff k\\x20\\x5c\\x0a", "a\\x20b \\x0a", "t 2", "pairs 1", "a\\x20b \\x0a",
      "count 3",
      "error: key: bad escape at offset 1: '\\' followed by 'q' (only \\xHH escapes exist; "
      "write a backslash as \\x5c)",
      "error: unknown command \"frobnicate\" (try help)",
      "missing",  // del of a missing key
      "log_frames 4 copied 4 backfilled 4 blocked no",  // checkpoint: in wal, the default
      ""};
  EXPECT_EQ(lines, expected);
}

// --record: the shell's operations on DBPATH, in order, in the trace (docs/trace.md).
TEST_F(JkvTest, ShellRecordsItsOperationsToATrace) {
  const std::string trace = dir_ + "/shell.jkvtrace";
  const Result r = Jkv({"--record=" + trace, "--record-values=keep", db_, "shell"},
                       "put a 1\nbegin\nput b 2\ndel a\ncommit\nbegin read\nget b\n"
                       "rollback\nscan a z 5\nbegin\nput c 3\nrollback\ncheckpoint truncate\n");
  ASSERT_EQ(r.exit_code, 0) << r;
  absl::StatusOr<Trace> t = ReadTrace(trace);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values, TraceValues::kKeep);
  std::vector<std::string> got;
  for (const TraceRecord& rec : t->records) {
    std::string line(TraceKindName(rec.kind));
    if (!rec.key.empty()) absl::StrAppend(&line, " ", rec.key);
    if (rec.kind == TraceKind::kPut) absl::StrAppend(&line, "=", rec.value);
    if (rec.kind == TraceKind::kCheckpoint) absl::StrAppend(&line, " ", int(rec.checkpoint_mode));
    got.push_back(line);
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "begin_write", "put a=1", "commit",                          // put a 1
                     "begin_write", "put b=2", "delete a", "commit",              // begin..commit
                     "begin_read", "get b", "end_read",                           // begin read..
                     "begin_read", "scan a", "end_read",                          // scan a z 5
                     "begin_write", "put c=3", "rollback", "checkpoint 3"}));
  const TraceRecord& scan = t->records[11];
  EXPECT_EQ(scan.limit, 5u);
  EXPECT_EQ(scan.visited, 1u);  // b
  EXPECT_EQ(scan.upper_bound, "z");
  // --record-values alone is a usage error.
  EXPECT_EQ(Jkv({"--record-values=keep", db_, "get", "b"}).exit_code, 2);
}

// A shell driven through pipes, one line at a time, the way another program would use it.
class ShellProcess {
 public:
  explicit ShellProcess(const std::vector<std::string>& args) {
    int to_child[2], from_child[2];
    EXPECT_EQ(::pipe(to_child), 0);
    EXPECT_EQ(::pipe(from_child), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::close(to_child[0]), ::close(to_child[1]), ::close(from_child[0]), ::close(from_child[1]);
      ExecJkv(args);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  ~ShellProcess() {
    if (in_ >= 0) Finish();
    ::close(out_);
  }

  void Send(const std::string& line) {
    const std::string text = line + "\n";
    EXPECT_EQ(::write(in_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  // Sends one line and returns the one line answered, waiting at most 10 s: jkv must flush.
  std::string Ask(const std::string& line) {
    Send(line);
    return ReadLine();
  }

  std::string ReadLine() {
    std::string line;
    char c;
    while (true) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return line + "<timeout: answer not flushed>";
      if (::read(out_, &c, 1) != 1) return line + "<eof>";
      if (c == '\n') return line;
      line.push_back(c);
    }
  }

  // Closes stdin (end of input) and returns the exit status.
  int Finish() {
    ::close(in_);
    in_ = -1;
    int status = 0;
    EXPECT_EQ(::waitpid(pid_, &status, 0), pid_);
    return ExitCodeOf(status);
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
};

TEST_F(JkvTest, ShellOverPipesAnswersEachLineAtOnce) {
  ShellProcess shell({db_, "shell"});
  EXPECT_EQ(shell.Ask("put k v"), "ok");
  EXPECT_EQ(shell.Ask("get k"), "value v");
  shell.Send("");  // an empty line gets no answer: the next answer is the next command's
  EXPECT_EQ(shell.Ask("get k"), "value v");
  EXPECT_EQ(shell.Ask("get \\x"),
            "error: key: bad escape at offset 0: \\x must be followed by "
            "two hex digits");
  EXPECT_EQ(shell.Ask("scan"), "pairs 1");
  EXPECT_EQ(shell.ReadLine(), "k v");
  EXPECT_EQ(shell.Ask("quit"), "ok");
  EXPECT_EQ(shell.ReadLine(), "<eof>");
  EXPECT_EQ(shell.Finish(), 0);
}

TEST_F(JkvTest, ShellTransactionIsInvisibleToOtherProcessesUntilCommit) {
  ExpectOk({"put", "k", "old"}, "");
  ShellProcess shell({db_, "shell"});
  EXPECT_EQ(shell.Ask("begin"), "ok");
  EXPECT_EQ(shell.Ask("put k new"), "ok");
  EXPECT_EQ(shell.Ask("put k2 v2"), "ok");
  EXPECT_EQ(shell.Ask("get k"), "value new");
  ExpectOk({"get", "k"}, "old\n");
  EXPECT_EQ(Jkv({db_, "get", "k2"}).exit_code, 1);
  EXPECT_EQ(shell.Ask("commit"), "ok");
  ExpectOk({"get", "k"}, "new\n");
  ExpectOk({"get", "k2"}, "v2\n");
  EXPECT_EQ(shell.Ask("begin"), "ok");
  EXPECT_EQ(shell.Ask("del k"), "ok");
  EXPECT_EQ(shell.Finish(), 0);  // end of input: rolled back
  ExpectOk({"get", "k"}, "new\n");
}

// While a shell keeps the database open with manual checkpoints, another process's info shows
// both logs: with --wal2-switch-pages=1 the second commit moves the writer to -wal2 (which is
// empty, so fully copied), and since -wal still holds the first commit uncopied, the writer then
// stays on -wal2.
TEST_F(JkvTest, Wal2InfoShowsBothLogsWhileAnotherProcessHoldsThem) {
  ShellProcess shell({"--journal=wal2", "--checkpoint=manual", "--wal2-switch-pages=1", db_,
                      "shell"});
  EXPECT_EQ(shell.Ask("put a 1"), "ok");  // into -wal
  EXPECT_EQ(shell.Ask("put b 2"), "ok");  // -wal2 is empty (all copied): the writer switches
  EXPECT_EQ(shell.Ask("put c 3"), "ok");  // -wal is not copied: the writer stays on -wal2
  EXPECT_TRUE(Exists(db_ + "-wal"));
  EXPECT_TRUE(Exists(db_ + "-wal2"));
  const Result r = Jkv({"--journal=wal2", "--checkpoint=manual", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  std::map<std::string, std::string> f = InfoFields(r.out);
  EXPECT_EQ(f["journal_mode"], "wal2") << r;
  EXPECT_EQ(f["keys"], "3") << r;
  EXPECT_EQ(f["current_log"], "1") << r;
  EXPECT_EQ(f["log_switches"], "0") << r;  // the shell switched, not this handle
  const uint64_t frames = std::stoull(f["log_frames"]), frames2 = std::stoull(f["wal2_log_frames"]);
  EXPECT_GT(frames2, 0u) << r;
  EXPECT_GT(frames, frames2) << r;  // the total of both logs
  EXPECT_EQ(f["log_frames_not_checkpointed"], f["log_frames"]) << r;  // manual: nothing copied
  EXPECT_EQ(f["wal2_log_frames_not_checkpointed"], f["wal2_log_frames"]) << r;
  const uint64_t bytes = std::stoull(f["log_bytes"]), bytes2 = std::stoull(f["wal2_log_bytes"]);
  EXPECT_GT(bytes2, 0u) << r;
  EXPECT_GT(bytes, bytes2) << r;
  EXPECT_EQ(shell.Ask("quit"), "ok");
  EXPECT_EQ(shell.Finish(), 0);
  // The shell's close was the last: both logs copied back, every side file removed.
  EXPECT_FALSE(Exists(db_ + "-wal"));
  EXPECT_FALSE(Exists(db_ + "-wal2"));
  EXPECT_FALSE(Exists(db_ + "-shm"));
  ExpectOk({"dump"}, "a 1\nb 2\nc 3\n");
}

// `jkv DBPATH shell OTHER_DBPATH`: one transaction across two files, committed in both, and one
// rolled back in both; @N names the database (database 0 is DBPATH).
TEST_F(JkvTest, ShellOverTwoDatabasesCommitsInBothOrNeither) {
  const std::string other = dir_ + "/y.db";
  for (const std::string mode : {"wal", "delete", "persist"}) {
    SCOPED_TRACE(mode);
    std::remove(db_.c_str());
    std::remove(other.c_str());
    const Result r = Jkv({"--journal=" + mode, db_, "shell", other},
                         "begin\nput a 1\n@1 put b 2\n@1 get b\nget b\ncommit\n"
                         "begin\nput a 9\n@1 put c 3\n@1 del b\nrollback\n"
                         "get a\n@1 get b\n@1 get c\n@0 scan\n@1 scan\n"
                         "@2 get a\n@x get a\n@1 begin\n@1 put d 4\nrollback\n@1 put d 4\n");
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.err, "") << r;
    EXPECT_EQ(r.out,
              "ok\nok\nok\nvalue 2\nmissing\nok\n"     // begin, put, @1 put, @1 get, get, commit
              "ok\nok\nok\nok\nok\n"                   // begin, put, @1 put, @1 del, rollback
              "value 1\nvalue 2\nmissing\npairs 1\na 1\npairs 1\nb 2\n"
              "error: @2: no database 2: this shell has 2 databases, @0 to @1\n"
              "error: \"@x\" is not a database: write @N with N a number (this shell has 2 "
              "databases, @0 to @1)\n"
              "error: begin: @1 names a database, but begin opens the transaction on every "
              "database (write it without @N)\n"
              "error: put: no transaction: the begin failed (begin: @1 names a database, but "
              "begin opens the transaction on every database (write it without @N)); send "
              "rollback to go on\n"
              "ok\nok\n")
        << r;
    ExpectOk({"dump"}, "a 1\n");
    const Result y = Jkv({other, "dump"});
    EXPECT_EQ(y.out, "b 2\nd 4\n") << y;
  }
}

// The transaction seen from other processes while a shell over two files holds it: nothing of
// it in either file until commit, all of it in both after; the end of input rolls back both.
TEST_F(JkvTest, ShellTransactionAcrossTwoFilesIsInvisibleUntilCommit) {
  const std::string other = dir_ + "/y.db";
  ShellProcess shell({"--journal=delete", db_, "shell", other});
  EXPECT_EQ(shell.Ask("begin"), "ok");
  EXPECT_EQ(shell.Ask("put k x"), "ok");
  EXPECT_EQ(shell.Ask("@1 put k y"), "ok");
  EXPECT_EQ(Jkv({db_, "get", "k"}).exit_code, 1);
  EXPECT_EQ(Jkv({other, "get", "k"}).exit_code, 1);
  EXPECT_EQ(shell.Ask("commit"), "ok");
  ExpectOk({"get", "k"}, "x\n");
  EXPECT_EQ(Jkv({other, "get", "k"}).out, "y\n");
  EXPECT_EQ(shell.Ask("begin"), "ok");
  EXPECT_EQ(shell.Ask("@1 del k"), "ok");
  EXPECT_EQ(shell.Ask("put k2 x"), "ok");
  EXPECT_EQ(shell.Finish(), 0);  // end of input: rolled back in both
  ExpectOk({"dump"}, "k x\n");
  EXPECT_EQ(Jkv({other, "dump"}).out, "k y\n");
}

TEST_F(JkvTest, ShellRefusesOneFileTwiceAndMixedFamilies) {
  ExpectError(Jkv({db_, "shell", db_}, "put a 1\n"),
              "shell: " + db_ + " is given twice (databases 0 and 1); each database takes part "
              "once");
  ExpectError(Jkv({db_, "shell", dir_ + "/y.db", dir_ + "/./x.db"}, "put a 1\n"),
              "shell: " + db_ + " and " + dir_ + "/./x.db are the same file (databases 0 and "
              "2); each database takes part once");
  ExpectError(Jkv({db_, "shell", "--journal=wal"}), "options go before DBPATH");
  EXPECT_EQ(Jkv({db_, "get", "a"}).exit_code, 1);  // the refused shells ran nothing
  // A database in the rollback family beside one in wal: begin is refused, saying why.
  ASSERT_EQ(Jkv({"--journal=delete", db_, "put", "r", "1"}).exit_code, 0);
  const std::string wal = dir_ + "/w.db";
  const Result r = Jkv({db_, "shell", wal}, "begin\n@1 put w 1\nrollback\n@1 put w 1\n");
  EXPECT_EQ(r.exit_code, 0) << r;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  ASSERT_EQ(lines.size(), 5u) << r;
  EXPECT_THAT(lines[0], AllOf(StartsWith("error: a transaction across databases needs every "
                                         "database in the same journal family"),
                              HasSubstr(db_ + " (delete)"), HasSubstr(wal + " (wal)"),
                              HasSubstr("no protocol makes a commit atomic across both")));
  EXPECT_THAT(lines[1], StartsWith("error: put: no transaction: the begin failed"));
  EXPECT_EQ(lines[2], "ok");
  EXPECT_EQ(lines[3], "ok");  // an autocommit on w.db alone
  EXPECT_EQ(Jkv({wal, "get", "w"}).out, "1\n");
}

}  // namespace
}  // namespace journalkv::tools
