// What the end-to-end tests of the jkv binary share (jkv_e2e_test.cc, jkv_shell_e2e_test.cc):
// running the real program (fork + exec, its standard streams on files) against a fresh
// temporary directory, and the expectations on its exit status and streams.
#ifndef JOURNALKV_TOOLS_JKV_E2E_TESTING_H_
#define JOURNALKV_TOOLS_JKV_E2E_TESTING_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/tokens.h"

namespace journalkv::tools {

// The binary, from the test's runfiles (bazel test runs in the runfiles root, journalkv/).
inline std::string JkvPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr) return "tools/jkv";
  return absl::StrCat(srcdir, "/", workspace != nullptr ? workspace : "journalkv", "/tools/jkv");
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

struct Result {
  int exit_code = -1;  // -N when killed by signal N
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.exit_code << "\nstdout: " << r.out << "\nstderr: " << r.err;
}

inline int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return WIFSIGNALED(wait_status) ? -WTERMSIG(wait_status) : -1000;
}

// Replaces the child with jkv. Never returns.
[[noreturn]] inline void ExecJkv(const std::vector<std::string>& args) {
  std::vector<std::string> argv_strings = {JkvPath()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::perror("execv");
  ::_exit(127);
}

// The "name value" lines of info, as a map.
inline std::map<std::string, std::string> InfoFields(const std::string& out) {
  std::map<std::string, std::string> fields;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    fields.insert(kv);
  }
  return fields;
}

class JkvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/jkv_e2e_XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_ = dir_ + "/x.db";
    ASSERT_TRUE(Exists(JkvPath())) << "no jkv binary at " << JkvPath();
  }

  // Runs jkv with `args`, `input` on stdin, stdout and stderr into files; `stdout_path`
  // replaces the stdout file (e.g. /dev/full).
  Result Jkv(const std::vector<std::string>& args, const std::string& input = "",
             const std::string& stdout_path = "") {
    const std::string in = dir_ + "/stdin", out = dir_ + "/stdout", err = dir_ + "/stderr";
    WriteFile(in, input);
    const pid_t pid = ::fork();
    if (pid == 0) {
      RedirectOrDie(in, O_RDONLY, 0);
      RedirectOrDie(stdout_path.empty() ? out : stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 1);
      RedirectOrDie(err, O_WRONLY | O_CREAT | O_TRUNC, 2);
      ExecJkv(args);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return Result{ExitCodeOf(status), stdout_path.empty() ? ReadFile(out) : "", ReadFile(err)};
  }

  static void RedirectOrDie(const std::string& path, int flags, int target_fd) {
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0 || ::dup2(fd, target_fd) < 0) ::_exit(126);
    ::close(fd);
  }

  // Runs `args` on db_ and expects success with exactly `out` on stdout.
  void ExpectOk(std::vector<std::string> args, const std::string& out) {
    args.insert(args.begin(), db_);
    const Result r = Jkv(args);
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.out, out) << r;
    EXPECT_EQ(r.err, "") << r;
  }

  // Expects exit 2, nothing on stdout, and one "error: ..." line containing `message`.
  static void ExpectError(const Result& r, const std::string& message) {
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_EQ(r.out, "") << r;
    EXPECT_THAT(r.err, ::testing::AllOf(::testing::StartsWith("error: "), ::testing::HasSubstr(message))) << r;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r;
  }

  // Loads n keys "key0".. with values of value_size bytes into db_.
  void Fill(int n, size_t value_size) {
    std::string input;
    for (int i = 0; i < n; ++i)
      absl::StrAppend(&input, "key", i, " ", std::string(value_size, 'v'), "\n");
    const Result r = Jkv({db_, "load"}, input);
    ASSERT_EQ(r.out, absl::StrCat("loaded ", n, "\n")) << r;
  }

  std::string dir_;
  std::string db_;
};

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_JKV_E2E_TESTING_H_
