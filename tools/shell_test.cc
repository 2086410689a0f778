#include "tools/shell.h"

#include <cstdlib>
#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv::tools {
namespace {

// A fresh database in the test's temporary directory, and a shell on it.
class ShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TEST_TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    JKV_ASSERT_OK_AND_ASSIGN(db_, Db::Open(path_));
    shell_ = std::make_unique<Shell>(db_.get(), &out_);
  }
  void TearDown() override {
    shell_.reset();
    db_.reset();
  }
  // The shell on a new handle of the same database, opened with `options`.
  void Reopen(const Options& options) {
    shell_.reset();
    db_.reset();
    JKV_ASSERT_OK_AND_ASSIGN(db_, Db::Open(path_, options));
    shell_ = std::make_unique<Shell>(db_.get(), &out_);
  }

  // Feeds `lines` to the shell and returns everything it answered.
  std::string Run(const std::string& lines) {
    out_.str("");
    std::istringstream in(lines);
    EXPECT_THAT(shell_->Run(in), testing::IsOk());
    return out_.str();
  }
  // One line, and its answer.
  std::string Line(absl::string_view line) {
    out_.str("");
    EXPECT_TRUE(shell_->ExecuteLine(line));
    return out_.str();
  }
  // What another connection sees.
  std::optional<std::string> GetFromOtherHandle(absl::string_view key) {
    absl::StatusOr<std::unique_ptr<Db>> other = Db::Open(path_);
    EXPECT_THAT(other, testing::IsOk());
    absl::StatusOr<std::optional<std::string>> v = (*other)->Get(key);
    EXPECT_THAT(v, testing::IsOk());
    return *v;
  }

  std::string path_;
  std::unique_ptr<Db> db_;
  std::ostringstream out_;
  std::unique_ptr<Shell> shell_;
};

TEST_F(ShellTest, AutocommitPutGetDel) {
  EXPECT_EQ(Line("put k v"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("k"), "v");
  EXPECT_EQ(Line("get k"), "value v\n");
  EXPECT_EQ(Line("del k"), "ok\n");
  EXPECT_EQ(Line("get k"), "missing\n");
  EXPECT_EQ(Line("del k"), "missing\n");  // not an error: the answer says it was not there
  EXPECT_EQ(GetFromOtherHandle("k"), std::nullopt);
  EXPECT_EQ(Run("put k v\nbegin\ndel k\ndel k\ncommit\n"), "ok\nok\nok\nmissing\nok\n");
}

TEST_F(ShellTest, CheckpointAnswersItsFiguresAndStatsOneJsonLine) {
  EXPECT_EQ(Run("put a 1\nput b 2\n"), "ok\nok\n");
  const std::string ckpt = Line("checkpoint truncate");
  EXPECT_THAT(ckpt, ::testing::MatchesRegex("log_frames [0-9]+ copied [0-9]+ backfilled [0-9]+ "
                                            "blocked no.*\n"));
  EXPECT_THAT(ckpt, ::testing::Not(::testing::StartsWith("log_frames 0 ")));
  const std::string stats = Line("stats");
  EXPECT_THAT(stats, ::testing::StartsWith("stats {\"page_size\":4096,"));
  EXPECT_THAT(stats, ::testing::HasSubstr("\"commits\":2,"));  // this handle's two puts
  EXPECT_THAT(stats, ::testing::HasSubstr("\"checkpoints\":1,"));
  EXPECT_THAT(stats, ::testing::HasSubstr("\"wal_syncs\":"));
  EXPECT_THAT(stats, ::testing::EndsWith("}\n"));
  EXPECT_EQ(std::count(stats.begin(), stats.end(), '\n'), 1);
}

TEST_F(ShellTest, BinaryKeysAndValuesGoThroughTokens) {
  EXPECT_EQ(Line("put \\x00\\xff\\x20\\x5c\\x0a \\x0a\\x00"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle(std::string("\0\xff \\\n", 5)), std::string("\n\0", 2));
  EXPECT_EQ(Line("get \\x00\\xFF\\x20\\x5c\\x0a"), "value \\x0a\\x00\n");
  EXPECT_EQ(Line("scan"), "pairs 1\n\\x00\\xff\\x20\\x5c\\x0a \\x0a\\x00\n");
}

TEST_F(ShellTest, EmptyTokensAreEmptyKeysAndValues) {
  EXPECT_EQ(Line("put  empty-key"), "ok\n");
  EXPECT_EQ(Line("put empty-value "), "ok\n");
  EXPECT_EQ(Line("get "), "value empty-key\n");
  EXPECT_EQ(Line("scan"), "pairs 2\n empty-key\nempty-value \n");
}

TEST_F(ShellTest, WriteTransactionIsVisibleOnlyAfterCommit) {
  EXPECT_EQ(Run("begin\nput a 1\nput b 2\nget a\ncount\n"), "ok\nok\nok\nvalue 1\ncount 2\n");
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
  // The end of the input ended the shell's transaction: it rolled back.
  EXPECT_EQ(Line("commit"), "error: commit: no transaction is open\n");
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
}

TEST_F(ShellTest, CommitMakesWritesVisible) {
  EXPECT_EQ(Line("begin"), "ok\n");
  EXPECT_EQ(Line("put a 1"), "ok\n");
  EXPECT_EQ(Line("del a"), "ok\n");
  EXPECT_EQ(Line("put b 2"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("b"), std::nullopt);
  EXPECT_EQ(Line("commit"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("b"), "2");
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
}

TEST_F(ShellTest, RollbackDiscardsWrites) {
  EXPECT_EQ(Run("put keep 1\nbegin\nput a 1\ndel keep\nrollback\nget a\nget keep\n"),
            "ok\nok\nok\nok\nok\nmissing\nvalue 1\n");
}

TEST_F(ShellTest, ReadTransactionRefusesWrites) {
  EXPECT_EQ(Line("put a 1"), "ok\n");
  EXPECT_EQ(Line("begin read"), "ok\n");
  EXPECT_THAT(Line("put b 2"),
              ::testing::StartsWith("error: put: the open transaction is read-only"));
  EXPECT_THAT(Line("del a"),
              ::testing::StartsWith("error: del: the open transaction is read-only"));
  EXPECT_EQ(Line("get a"), "value 1\n");
  EXPECT_EQ(Line("count"), "count 1\n");
  EXPECT_EQ(Line("commit"), "ok\n");
  EXPECT_EQ(Line("put b 2"), "ok\n");
}

TEST_F(ShellTest, TransactionStateErrors) {
  EXPECT_EQ(Line("commit"), "error: commit: no transaction is open\n");
  EXPECT_EQ(Line("rollback"), "error: rollback: no transaction is open\n");
  EXPECT_EQ(Line("begin"), "ok\n");
  EXPECT_THAT(Line("begin"), ::testing::HasSubstr("already open"));
  EXPECT_THAT(Line("begin read"), ::testing::HasSubstr("already open"));
  EXPECT_EQ(Line("rollback"), "ok\n");
  EXPECT_THAT(Line("begin write"), ::testing::HasSubstr("expected \"begin\" or \"begin read\""));
  // A malformed begin failed too: no transaction is open and writes are refused.
  EXPECT_THAT(Line("put a 1"), ::testing::StartsWith("error: put: no transaction: the begin "
                                                     "failed (begin: expected"));
  EXPECT_EQ(Line("rollback"), "ok\n");
  EXPECT_EQ(Line("put a 1"), "ok\n");
}

// A `begin` that answered an error opened no transaction: the put and del lines meant for it
// must not commit one by one (issue 43). Here the begin's read of page 1 fails with EIO.
TEST_F(ShellTest, FailedBeginRefusesWritesUntilRollback) {
  vfs::PosixFileSystem posix;
  vfs::FaultInjectingFileSystem fs(&posix);
  Options options;
  options.journal_mode = JournalMode::kDelete;
  options.file_system = &fs;
  Reopen(options);
  EXPECT_EQ(Line("put a 1"), "ok\n");
  fs.FailNth(vfs::FaultOp::kRead, 1, EIO);
  const std::string begin = Line("begin");
  EXPECT_THAT(begin, ::testing::StartsWith("error: "));
  EXPECT_THAT(begin, ::testing::HasSubstr("Input/output error"));
  const std::string refused = "no transaction: the begin failed (" +
                              begin.substr(7, begin.size() - 8) + "); send rollback to go on\n";
  EXPECT_EQ(Line("put b 2"), "error: put: " + refused);
  EXPECT_EQ(Line("del a"), "error: del: " + refused);
  EXPECT_EQ(GetFromOtherHandle("b"), std::nullopt);
  EXPECT_EQ(GetFromOtherHandle("a"), "1");
  // Reads go on, each in a read transaction of its own.
  EXPECT_EQ(Line("get a"), "value 1\n");
  EXPECT_EQ(Line("count"), "count 1\n");
  EXPECT_EQ(Line("scan"), "pairs 1\na 1\n");
  EXPECT_EQ(Line("rollback"), "ok\n");
  EXPECT_EQ(Line("rollback"), "error: rollback: no transaction is open\n");
  EXPECT_EQ(Line("put b 2"), "ok\n");  // an autocommit again
  EXPECT_EQ(GetFromOtherHandle("b"), "2");
}

// `commit` after a failed begin answers the error too (nothing was committed) and, like
// rollback, ends the state.
TEST_F(ShellTest, CommitAfterAFailedBeginAnswersAnErrorAndEndsIt) {
  vfs::PosixFileSystem posix;
  vfs::FaultInjectingFileSystem fs(&posix);
  Options options;
  options.journal_mode = JournalMode::kDelete;
  options.file_system = &fs;
  Reopen(options);
  EXPECT_EQ(Line("put a 1"), "ok\n");
  fs.FailNth(vfs::FaultOp::kRead, 1, EIO);
  const std::string begin = Line("begin");
  ASSERT_THAT(begin, ::testing::StartsWith("error: "));
  const std::string failed = "no transaction: the begin failed (" +
                             begin.substr(7, begin.size() - 8) + ")";
  EXPECT_EQ(Run("put b 2\ndel a\ncommit\nget a\nget b\nput c 3\n"),
            "error: put: " + failed + "; send rollback to go on\n" +
            "error: del: " + failed + "; send rollback to go on\n" +
            "error: commit: " + failed + "; nothing was committed\n" +
            "value 1\nmissing\nok\n");
  EXPECT_EQ(GetFromOtherHandle("b"), std::nullopt);
  EXPECT_EQ(GetFromOtherHandle("c"), "3");
}

// The same with a begin that fails busy (another connection is writing), as a script meets it:
// every line sent at once. Sending `begin` again retries it.
TEST_F(ShellTest, BusyBeginRefusesWritesAndBeginRetries) {
  Options options;
  options.busy_timeout = absl::Milliseconds(20);
  Reopen(options);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> other, Db::Open(path_));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> writer, other->BeginWrite());
  const std::string begin = Line("begin");
  EXPECT_THAT(begin, ::testing::StartsWith("error: busy"));
  ASSERT_THAT(writer->Rollback(), testing::IsOk());
  EXPECT_THAT(Line("put a 1"), ::testing::StartsWith("error: put: no transaction: the begin "
                                                     "failed (busy"));
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
  EXPECT_EQ(Line("begin"), "ok\n");
  EXPECT_EQ(Line("put a 1"), "ok\n");
  EXPECT_EQ(Line("put b 2"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
  EXPECT_EQ(Line("commit"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("b"), "2");
}

TEST_F(ShellTest, ScanRangesAndLimits) {
  EXPECT_EQ(Run("put a 1\nput b 2\nput c 3\nput d 4\n"), "ok\nok\nok\nok\n");
  EXPECT_EQ(Line("scan"), "pairs 4\na 1\nb 2\nc 3\nd 4\n");
  EXPECT_EQ(Line("scan b"), "pairs 3\nb 2\nc 3\nd 4\n");
  EXPECT_EQ(Line("scan b d"), "pairs 2\nb 2\nc 3\n");  // TO is exclusive
  EXPECT_EQ(Line("scan bb d"), "pairs 1\nc 3\n");
  EXPECT_EQ(Line("scan a d 2"), "pairs 2\na 1\nb 2\n");
  EXPECT_EQ(Line("scan   3"), "pairs 3\na 1\nb 2\nc 3\n");  // empty FROM and TO
  EXPECT_EQ(Line("scan b  0"), "pairs 0\n");
  EXPECT_EQ(Line("scan e"), "pairs 0\n");
  EXPECT_EQ(Line("scan c a"), "pairs 0\n");
  EXPECT_THAT(Line("scan a b x"), ::testing::StartsWith("error: LIMIT: \"x\" is not a whole"));
}

TEST_F(ShellTest, ScanInsideWriteTransactionSeesItsWrites) {
  EXPECT_EQ(Run("put a 1\nbegin\nput b 2\ndel a\nscan\ncount\n"),
            "ok\nok\nok\nok\npairs 1\nb 2\ncount 1\n");
}

TEST_F(ShellTest, ScanOrdersKeysAsUnsignedBytes) {
  EXPECT_EQ(Run("put \\xff 1\nput \\x7f 2\nput \\x00 3\nput  4\nscan\n"),
            "ok\nok\nok\nok\npairs 4\n 4\n\\x00 3\n\\x7f 2\n\\xff 1\n");
}

TEST_F(ShellTest, ErrorsAnswerOneLineAndTheShellGoesOn) {
  EXPECT_EQ(Run("get a\\q\nput k\nfrobnicate x\nget\nput a\\x4 v\nput a \\\nput a b\\xZZ\n"
                "put a\tb c\ncheckpoint\ncheckpoint sideways\nquit now\nget a\n"),
            "error: key: bad escape at offset 1: '\\' followed by 'q' (only \\xHH escapes exist; "
            "write a backslash as \\x5c)\n"
            "error: put: wrong number of arguments (1); usage: put K V\n"
            "error: unknown command \"frobnicate\" (try help)\n"
            "error: get: wrong number of arguments (0); usage: get K\n"
            "error: key: bad escape at offset 1: \\x must be followed by two hex digits\n"
            "error: value: bad escape at offset 0: token ends with '\\' (write \\x5c)\n"
            "error: value: bad escape at offset 1: \\x must be followed by two hex digits\n"
            "error: key: byte 0x09 at offset 1 must be escaped as \\x09\n"
            "log_frames 0 copied 0 backfilled 0 blocked no\n"  // the database is in wal
            "error: unknown checkpoint mode \"sideways\" (expected passive, full, restart or "
            "truncate)\n"
            "error: quit takes no arguments\n"
            "missing\n");
}

TEST_F(ShellTest, BadLineInsideTransactionDoesNotEndIt) {
  EXPECT_EQ(Run("begin\nput a 1\nput b\\q 2\ncommit\nget a\n"),
            "ok\nok\nerror: key: bad escape at offset 1: '\\' followed by 'q' (only \\xHH "
            "escapes exist; write a backslash as \\x5c)\nok\nvalue 1\n");
}

TEST_F(ShellTest, EmptyLinesAreSkippedAndCarriageReturnsIgnored) {
  EXPECT_EQ(Run("\n\nput a 1\r\n\r\nget a\r\n"), "ok\nvalue 1\n");
}

TEST_F(ShellTest, QuitAnswersOkAndRollsBack) {
  EXPECT_EQ(Run("begin\nput a 1\nquit\nget a\n"), "ok\nok\nok\n");
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
  EXPECT_EQ(Run("exit\nget a\n"), "ok\n");
}

TEST_F(ShellTest, EndOfInputRollsBack) {
  EXPECT_EQ(Run("begin\nput a 1"), "ok\nok\n");  // the last line needs no newline
  EXPECT_EQ(GetFromOtherHandle("a"), std::nullopt);
}

TEST_F(ShellTest, OversizedKeyIsAnErrorAndTheTransactionGoesOn) {
  const std::string big(70000, 'k');
  EXPECT_EQ(Line("begin"), "ok\n");
  EXPECT_THAT(Line("put " + big + " v"), ::testing::StartsWith("error: "));
  EXPECT_EQ(Line("put a 1"), "ok\n");
  EXPECT_EQ(Line("commit"), "ok\n");
  EXPECT_EQ(GetFromOtherHandle("a"), "1");
}

TEST_F(ShellTest, HelpIsOneLine) {
  const std::string help = Line("help");
  EXPECT_THAT(help, ::testing::StartsWith("commands: begin [read], commit, rollback"));
  EXPECT_EQ(help.find('\n'), help.size() - 1);
}

}  // namespace
}  // namespace journalkv::tools
