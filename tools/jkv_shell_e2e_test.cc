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

}  // namespace
}  // namespace journalkv::tools
