// End-to-end tests of the jkv binary: each test runs the real program (fork + exec, its
// standard streams on files) against a fresh temporary directory and checks its exit status,
// stdout and stderr exactly as docs/cli.md and `jkv --help` promise them. The shell:
// jkv_shell_e2e_test.cc.
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
#include "vfs/posix_fs.h"

namespace journalkv::tools {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

TEST_F(JkvTest, HelpDocumentsEverythingAndExitsZero) {
  for (const char* flag : {"--help", "-h"}) {
    const Result r = Jkv({flag});
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.err, "");
    for (const char* word : {"usage: jkv [OPTIONS] DBPATH COMMAND [ARGS]",
                             "\\x2dk for the key \"-k\"",  // \x2d is "-": \x2dk is "-k"
                             "--journal=MODE",
                             "wal, wal2, delete",
                             "DBPATH-wal2",
                             "--wal2-switch-pages=N",
                             "--sync=LEVEL",
                             "--page-size=N",
                             "--cache-pages=N",
                             "--checkpoint=POLICY",
                             "--busy-timeout-ms=N",
                             "--read-only",
                             "put K V",
                             "get K",
                             "del K",
                             "scan [FROM [TO]] [--limit=N]",
                             "TO is exclusive",
                             "count",
                             "check",
                             "info",
                             "checkpoint [passive|full|restart|truncate]",
                             "dump",
                             "load",
                             "shell",
                             "DBPATH shell [OTHER_DBPATH ...]",
                             "A first field @N names the database",
                             "\\xHH",
                             "Exit status",
                             "begin read",
                             "pairs N",
                             "value V | missing",
                             "count N",
                             "-> ok | missing (K was not there; not an error)",
                             "stats            -> stats {JSON}",
                             "Empty lines are skipped",
                             "rolled back"}) {
      EXPECT_THAT(r.out, HasSubstr(word));
    }
  }
}

TEST_F(JkvTest, NoArgumentsPrintsUsageOnStderrAndExitsTwo) {
  const Result r = Jkv({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, StartsWith("usage: jkv [OPTIONS] DBPATH COMMAND [ARGS]\n"));
}

TEST_F(JkvTest, PutGetDelAndTheirExitCodes) {
  ExpectOk({"put", "k", "v"}, "");
  ExpectOk({"get", "k"}, "v\n");
  const Result missing = Jkv({db_, "get", "nope"});
  EXPECT_EQ(missing.exit_code, 1) << missing;
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "");
  ExpectOk({"del", "k"}, "");
  const Result del_missing = Jkv({db_, "del", "k"});
  EXPECT_EQ(del_missing.exit_code, 1) << del_missing;
  EXPECT_EQ(del_missing.out, "");
  EXPECT_EQ(del_missing.err, "");
  ExpectOk({"count"}, "0\n");
}

TEST_F(JkvTest, BinaryKeysAndValuesOnTheCommandLine) {
  ExpectOk({"put", "\\x00\\xff\\x20\\x5c\\x0a", "a\\x20b\\x0d\\x0a\\x00"}, "");
  ExpectOk({"put", "", ""}, "");  // the empty key and value
  ExpectOk({"get", "\\x00\\xFF\\x20\\x5C\\x0A"}, "a\\x20b\\x0d\\x0a\\x00\n");
  ExpectOk({"get", ""}, "\n");
  ExpectOk({"dump"}, " \n\\x00\\xff\\x20\\x5c\\x0a a\\x20b\\x0d\\x0a\\x00\n");
}

TEST_F(JkvTest, ScanRangesAndLimits) {
  for (const char* k : {"a", "b", "c", "d"}) ExpectOk({"put", k, absl::StrCat(k, k)}, "");
  ExpectOk({"scan"}, "a aa\nb bb\nc cc\nd dd\n");
  ExpectOk({"scan", "b"}, "b bb\nc cc\nd dd\n");
  ExpectOk({"scan", "b", "d"}, "b bb\nc cc\n");  // TO is exclusive
  ExpectOk({"scan", "b", "d", "--limit=1"}, "b bb\n");
  ExpectOk({"scan", "--limit=2"}, "a aa\nb bb\n");
  ExpectOk({"scan", "c", ""}, "c cc\nd dd\n");  // an empty TO is no bound
  ExpectOk({"scan", "--limit=0"}, "");
  ExpectOk({"scan", "x"}, "");
  ExpectError(Jkv({db_, "scan", "--limt=2"}), "scan: unknown or repeated option");
  ExpectError(Jkv({db_, "scan", "a", "b", "c"}), "usage: scan [FROM [TO]] [--limit=N]");
}

TEST_F(JkvTest, UsageErrorsExitTwoWithOneLineAndCreateNothing) {
  ExpectError(Jkv({db_, "frobnicate"}), "unknown command \"frobnicate\"");
  ExpectError(Jkv({db_}), "missing COMMAND");
  ExpectError(Jkv({"--sync=full"}), "missing DBPATH");
  ExpectError(Jkv({db_, "get"}), "get: wrong number of arguments (0); usage: get [--raw] K");
  ExpectError(Jkv({db_, "put", "k"}), "usage: put K V");
  ExpectError(Jkv({db_, "count", "extra"}), "usage: count");
  ExpectError(Jkv({"--bogus", db_, "count"}), "unknown option --bogus");
  EXPECT_FALSE(Exists(db_)) << "a usage error created the database";
}

// Only put, load and shell create a database: a read of a mistyped path names it and creates
// nothing, and an empty file is not made into a database by a read either.
TEST_F(JkvTest, ReadCommandsOnAMissingPathAreErrorsAndCreateNothing) {
  const std::vector<std::vector<std::string>> reads = {
      {"get", "k"}, {"scan"}, {"count"}, {"check"}, {"info"}, {"dump"}, {"del", "k"},
      {"checkpoint"}};
  for (std::vector<std::string> args : reads) {
    args.insert(args.begin(), db_);
    ExpectError(Jkv(args), db_ + ": no such database");
    EXPECT_FALSE(Exists(db_)) << args[1] << " created the database";
    EXPECT_FALSE(Exists(db_ + "-wal")) << args[1];
  }
  WriteFile(db_, "");
  for (std::vector<std::string> args : reads) {
    args.insert(args.begin(), db_);
    ExpectError(Jkv(args), "is an empty file, not a database");
  }
  EXPECT_EQ(ReadFile(db_), "") << "a read wrote the empty file";
  ::unlink(db_.c_str());
  ExpectOk({"put", "k", "v"}, "");  // a write creates it
  ExpectOk({"get", "k"}, "v\n");
}

TEST_F(JkvTest, BadEscapesExitTwo) {
  ExpectError(Jkv({db_, "get", "a\\q"}), "key: bad escape at offset 1");
  ExpectError(Jkv({db_, "get", "a\\x4"}), "two hex digits");
  ExpectError(Jkv({db_, "get", "\\xZZ"}), "two hex digits");
  ExpectError(Jkv({db_, "put", "k", "v\\"}), "value: bad escape at offset 1: token ends");
  ExpectError(Jkv({db_, "put", "a b", "v"}), "byte 0x20 at offset 1 must be escaped as \\x20");
  ExpectError(Jkv({db_, "put", "k", "line\nbreak"}), "byte 0x0a");
  EXPECT_FALSE(Exists(db_));
}

TEST_F(JkvTest, BadOptionValuesExitTwo) {
  ExpectError(Jkv({"--journal=fast", db_, "count"}), "--journal: unknown journal mode \"fast\"");
  ExpectError(Jkv({"--sync=sometimes", db_, "count"}), "--sync: unknown sync level");
  // Each names the range the option takes, whatever was wrong with the value.
  const std::string page_size = "is not a power of two from 512 to 65536";
  ExpectError(Jkv({"--page-size=1000", db_, "count"}), "--page-size: \"1000\" " + page_size);
  ExpectError(Jkv({"--page-size=256", db_, "count"}), "--page-size: \"256\" " + page_size);
  ExpectError(Jkv({"--page-size=abc", db_, "count"}), "--page-size: \"abc\" " + page_size);
  ExpectError(Jkv({"--page-size=131072", db_, "count"}), page_size);
  ExpectError(Jkv({"--cache-pages=0", db_, "count"}),
              "--cache-pages: \"0\" is not a whole number from 1 to 4294967295");
  ExpectError(Jkv({"--cache-pages=-5", db_, "count"}),
              "--cache-pages: \"-5\" is not a whole number from 1 to 4294967295");
  ExpectError(Jkv({"--busy-timeout-ms=-1", db_, "count"}), "--busy-timeout-ms");
  ExpectError(Jkv({"--checkpoint=sometimes", db_, "count"}),
              "--checkpoint: checkpoint policy 'sometimes': unknown policy (expected threshold:N");
  ExpectError(Jkv({"--journal=wal", "--checkpoint=async:100/100", db_, "count"}),
              "--checkpoint: checkpoint policy 'async:100/100': N must be below B");
  ExpectError(Jkv({"--journal=wal2", "--wal2-switch-pages=0", db_, "count"}),
              "--wal2-switch-pages: \"0\" is not a whole number from 1 to");
  ExpectError(Jkv({"--wal2-switch-pages=many", db_, "count"}), "--wal2-switch-pages");
  EXPECT_FALSE(Exists(db_));
}

// put K - takes the value from stdin, as is (past what argv can carry); get --raw gives it
// back unescaped. A value of one "-" is still writable as \x2d.
TEST_F(JkvTest, PutFromStdinAndGetRaw) {
  std::string big(300 * 1024, 'x');
  for (size_t i = 0; i < big.size(); i += 1000) big[i] = static_cast<char>(i % 256);
  Result r = Jkv({db_, "put", "big", "-"}, big);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string raw_out = dir_ + "/raw";
  r = Jkv({db_, "get", "--raw", "big"}, "", raw_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(ReadFile(raw_out) == big) << "get --raw did not give the bytes back";
  ExpectOk({"put", "dash", "\\x2d"}, "");
  ExpectOk({"get", "dash"}, "-\n");  // "-" is a token of its own in output
  ExpectOk({"get", "dash", "--raw"}, "-");
  ExpectError(Jkv({db_, "get", "--rae", "dash"}), "get: unknown or repeated option \"--rae\"");
}

// An option after DBPATH says where options go, instead of "unknown command".
TEST_F(JkvTest, OptionsAfterDbPathSayWhereOptionsGo) {
  ExpectError(Jkv({db_, "--journal=wal", "get", "k"}),
              "\"--journal=wal\" after DBPATH: options go before DBPATH");
  EXPECT_FALSE(Exists(db_));
}

TEST_F(JkvTest, RollbackCheckpointsAreClearErrors) {
  ASSERT_EQ(Jkv({"--journal=delete", db_, "put", "k", "v"}).exit_code, 0);
  ExpectError(Jkv({"--journal=delete", db_, "checkpoint"}),
              "checkpoint needs journal mode wal or wal2");
  // A rollback database stays one without --journal, so checkpoints stay refused.
  ExpectError(Jkv({db_, "checkpoint", "truncate"}), "checkpoint needs journal mode wal");
  ExpectError(Jkv({db_, "checkpoint", "sideways"}), "unknown checkpoint mode \"sideways\"");
}

// Without --journal a new database is created in wal, and each later invocation keeps the
// database's own family.
TEST_F(JkvTest, WalIsTheDefaultForNewDatabasesAndOthersKeepTheirFamily) {
  ExpectOk({"put", "k", "v"}, "");
  Result r = Jkv({db_, "info"});
  EXPECT_THAT(r.out, ::testing::HasSubstr("journal_mode wal\n")) << r;
  r = Jkv({db_, "checkpoint"});
  EXPECT_EQ(r.exit_code, 0) << r;
  ASSERT_EQ(Jkv({"--journal=persist", db_, "put", "k", "w"}).exit_code, 0);
  r = Jkv({db_, "info"});
  EXPECT_THAT(r.out, ::testing::HasSubstr("journal_mode delete\n")) << r;
  ExpectOk({"get", "k"}, "w\n");
}

// backup copies a database that opens on its own; --compact drops the free pages, which
// info's reclaimable_bytes announced; an existing DEST is refused and left alone.
TEST_F(JkvTest, BackupCopiesAndCompactsAndNeverOverwrites) {
  std::string lines;
  for (int i = 0; i < 400; ++i) lines += absl::StrCat("k", 1000 + i, " v", std::string(200, 'x'), "\n");
  Result r = Jkv({db_, "load"}, lines);
  ASSERT_EQ(r.exit_code, 0) << r;
  std::string dels;  // a run of keys: their leaves empty and go to the freelist
  for (int i = 100; i < 300; ++i) absl::StrAppend(&dels, "del k", 1000 + i, "\n");
  r = Jkv({db_, "shell"}, dels);
  ASSERT_EQ(r.exit_code, 0) << r;
  r = Jkv({db_, "info"});
  ASSERT_THAT(r.out, HasSubstr("reclaimable_bytes ")) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("reclaimable_bytes 0\n"))) << r;
  const std::string copy = dir_ + "/copy.db", small = dir_ + "/small.db";
  r = Jkv({db_, "backup", copy});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("backup " + copy + ": ")) << r;
  r = Jkv({db_, "backup", "--compact", small});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr(" 200 keys")) << r;
  for (const std::string& path : {copy, small}) {
    EXPECT_EQ(Jkv({path, "count"}).out, "200\n") << path;
    EXPECT_EQ(Jkv({path, "check"}).exit_code, 0) << path;
    EXPECT_EQ(Jkv({path, "get", "k1001"}).out, absl::StrCat("v", std::string(200, 'x'), "\n"));
    EXPECT_EQ(Jkv({path, "get", "k1100"}).exit_code, 1);
  }
  r = Jkv({small, "info"});
  EXPECT_THAT(r.out, HasSubstr("free_pages 0\n")) << r;
  EXPECT_THAT(r.out, HasSubstr("reclaimable_bytes 0\n")) << r;
  ExpectError(Jkv({db_, "backup", copy}), "exists (a backup never overwrites a file)");
  ExpectError(Jkv({db_, "backup", "--compactt", copy}), "backup: unknown or repeated option");
  ExpectError(Jkv({db_, "backup"}), "usage: backup [--compact] DEST");
}

// The example as a new user tries it: 20,000 pairs loaded, every other one deleted.
// info's reclaimable_bytes (4096 before it counted the half-empty leaves) is within 10% of what
// compact then gives back.
TEST_F(JkvTest, ReclaimableBytesIsWhatCompactGivesBack) {
  std::string lines, dels;
  for (int i = 0; i < 20000; ++i) {
    absl::StrAppend(&lines, "key", 100000 + i, " value", std::string(40, 'v'), "\n");
    if (i % 2 == 0) absl::StrAppend(&dels, "del key", 100000 + i, "\n");
  }
  ASSERT_EQ(Jkv({db_, "load"}, lines).exit_code, 0);
  ASSERT_EQ(Jkv({db_, "shell"}, dels).exit_code, 0);
  Result r = Jkv({db_, "info"});
  const size_t at = r.out.find("reclaimable_bytes ");
  ASSERT_NE(at, std::string::npos) << r;
  const double estimate = std::stod(r.out.substr(at + 18));
  const size_t size_at = r.out.find("file_size ");
  ASSERT_NE(size_at, std::string::npos) << r;
  const double before = std::stod(r.out.substr(size_at + 10));
  ASSERT_EQ(Jkv({db_, "compact"}).exit_code, 0);
  r = Jkv({db_, "info"});
  const size_t after_at = r.out.find("file_size ");
  ASSERT_NE(after_at, std::string::npos) << r;
  const double saved = before - std::stod(r.out.substr(after_at + 10));
  EXPECT_GT(saved, 0.4 * before) << r;
  EXPECT_NEAR(estimate, saved, 0.1 * saved) << r;
  EXPECT_THAT(r.out, HasSubstr("reclaimable_bytes 0\n")) << r;
  EXPECT_EQ(Jkv({db_, "count"}).out, "10000\n");
}

// compact rewrites the database in place: the free pages that info announced are gone, the
// file is cut, and every key is still there.
TEST_F(JkvTest, CompactGivesTheFreePagesBack) {
  std::string lines;
  for (int i = 0; i < 400; ++i) lines += absl::StrCat("k", 1000 + i, " v", std::string(200, 'x'), "\n");
  Result r = Jkv({db_, "load"}, lines);
  ASSERT_EQ(r.exit_code, 0) << r;
  std::string dels;
  for (int i = 100; i < 300; ++i) absl::StrAppend(&dels, "del k", 1000 + i, "\n");
  ASSERT_EQ(Jkv({db_, "shell"}, dels).exit_code, 0);
  r = Jkv({db_, "info"});
  ASSERT_THAT(r.out, Not(HasSubstr("free_pages 0\n"))) << r;
  r = Jkv({db_, "compact"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("compact: ")) << r;
  r = Jkv({db_, "info"});
  EXPECT_THAT(r.out, HasSubstr("free_pages 0\n")) << r;
  EXPECT_THAT(r.out, HasSubstr("reclaimable_bytes 0\n")) << r;
  EXPECT_EQ(Jkv({db_, "count"}).out, "200\n");
  EXPECT_EQ(Jkv({db_, "check"}).exit_code, 0);
  ExpectError(Jkv({db_, "compact", "x"}), "usage: compact");
  ExpectError(Jkv({dir_ + "/missing.db", "compact"}), "missing.db");
}

// --auto-vacuum: deleting the newest keys of a sorted load gives the tail of the file back;
// without it the file keeps its pages.
TEST_F(JkvTest, AutoVacuumGivesAFreeTailBack) {
  std::string lines;
  for (int i = 0; i < 400; ++i) lines += absl::StrCat("k", 1000 + i, " v", std::string(200, 'x'), "\n");
  std::string dels;
  for (int i = 200; i < 400; ++i) absl::StrAppend(&dels, "del k", 1000 + i, "\n");
  const auto pages = [&](const std::string& path) {
    const Result r = Jkv({path, "info"});
    const size_t at = r.out.find("page_count ");
    return at == std::string::npos ? -1 : std::atoi(r.out.c_str() + at + 11);
  };
  const std::string plain = dir_ + "/plain.db", vacuumed = dir_ + "/vacuumed.db";
  for (const std::string& path : {plain, vacuumed}) {
    ASSERT_EQ(Jkv({path, "load"}, lines).exit_code, 0);
  }
  const int loaded = pages(plain);
  ASSERT_GT(loaded, 20);
  ASSERT_EQ(Jkv({plain, "shell"}, dels).exit_code, 0);
  Result r = Jkv({"--auto-vacuum", vacuumed, "shell"}, dels);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(pages(plain), loaded);
  EXPECT_LT(pages(vacuumed), loaded * 3 / 4);
  EXPECT_EQ(Jkv({vacuumed, "count"}).out, "200\n");
  EXPECT_EQ(Jkv({vacuumed, "check"}).exit_code, 0);
  ExpectError(Jkv({"--auto-vacuum=1", vacuumed, "count"}), "--auto-vacuum takes no value");
}

// A read command never switches the database's family; a writing one does.
TEST_F(JkvTest, OnlyWritingCommandsSwitchTheJournalFamily) {
  ASSERT_EQ(Jkv({"--journal=delete", db_, "put", "k", "v"}).exit_code, 0);
  Result r = Jkv({"--journal=wal", db_, "get", "k"});
  EXPECT_EQ(r.out, "v\n") << r;
  EXPECT_THAT(r.err, HasSubstr("note: " + db_ + " stays in delete mode (only put, del, load and "
                               "shell switch it to --journal=wal)")) << r;
  for (const char* command : {"count", "info", "check", "dump", "stats"}) {
    EXPECT_EQ(Jkv({"--journal=wal2", db_, command}).exit_code, 0) << command;
  }
  EXPECT_THAT(Jkv({db_, "info"}).out, HasSubstr("journal_mode delete\n"));
  // Within the family there is nothing to say.
  r = Jkv({"--journal=persist", db_, "get", "k"});
  EXPECT_EQ(r.err, "") << r;
  ASSERT_EQ(Jkv({"--journal=wal", db_, "put", "k2", "v"}).exit_code, 0);
  EXPECT_THAT(Jkv({db_, "info"}).out, HasSubstr("journal_mode wal\n"));
}

// --journal=atomic on a file system without atomic writes (the test's temporary directory:
// ext4 or tmpfs) is refused naming what it needs; with --atomic-fallback=MODE it runs in MODE,
// and info and stats say so.
TEST_F(JkvTest, AtomicWithoutAtomicWritesIsRefusedOrFallsBack) {
  {
    vfs::PosixFileSystem fs;
    auto probe = fs.Open(dir_ + "/probe", {vfs::OpenMode::kCreate, vfs::FileKind::kOther});
    ASSERT_TRUE(probe.ok()) << probe.status();
    if ((*probe)->atomic_write_kind() != vfs::AtomicWriteKind::kNone) {
      GTEST_SKIP() << "the temporary directory has atomic writes";
    }
  }
  Result r = Jkv({"--journal=atomic", db_, "put", "k", "v"});
  ExpectError(r, "journal mode atomic needs a file system with atomic batches (XFS with the "
                 "exchange-range feature on Linux 6.10+, or F2FS)");
  r = Jkv({"--journal=atomic", "--atomic-fallback=persist", db_, "put", "k", "v"});
  EXPECT_EQ(r.exit_code, 0) << r;
  // The shell switches families as put does, so it runs in the fallback and its stats say so.
  r = Jkv({"--journal=atomic", "--atomic-fallback=persist", db_, "shell"}, "stats\n");
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("running in persist mode (the atomic fallback): " + db_ +
                               ": journal mode atomic needs")) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("atomic_write_kind")));
  // info does not switch a database: it opens it in its own family, the rollback journal.
  EXPECT_THAT(Jkv({"--journal=atomic", db_, "info"}).out, HasSubstr("journal_mode delete\n"));
  EXPECT_THAT(Jkv({db_, "get", "k"}).out, "v\n");
  EXPECT_TRUE(Exists(db_ + "-journal"));  // persist's journal: the fallback really ran
}

// inspect reads the files without opening the database: even a damaged one.
TEST_F(JkvTest, InspectReadsTheFilesEvenOfADamagedDatabase) {
  ExpectOk({"put", "k", "v"}, "");
  Result r = Jkv({db_, "inspect", "page", "1"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("\nmagic ok\n")) << r;
  WriteFile(db_, std::string(9000, 'x'));
  ExpectError(Jkv({db_, "get", "k"}), "not a journalkv database");
  r = Jkv({db_, "inspect", "page", "2"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("BAD: page 1: ")) << r;
  EXPECT_THAT(r.out, HasSubstr("checksum 0x7878787878787878 BAD")) << r;
  ExpectError(Jkv({db_, "inspect", "page"}), "inspect: page needs a page number N");
  ExpectError(Jkv({db_, "inspect", "wal", "3"}), "inspect: only page takes an argument");
  ExpectError(Jkv({db_, "inspect", "leaves"}), "inspect: unknown structure \"leaves\"");
  ExpectError(Jkv({db_, "inspect", "page", "0"}), "N");
  ExpectError(Jkv({db_, "inspect", "journal"}), "x.db-journal: open: No such file");
}

// info and stats print "name value" lines, or with --json the same names in one JSON object.
TEST_F(JkvTest, InfoAndStatsAsLinesAndAsJson) {
  ExpectOk({"put", "k", "v"}, "");
  Result r = Jkv({db_, "info", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("{\"path\":\"" + db_ + "\",\"page_size\":4096,")) << r;
  EXPECT_THAT(r.out, HasSubstr("\"keys\":1,")) << r;
  EXPECT_THAT(r.out, HasSubstr("\"read_only\":false,")) << r;
  EXPECT_THAT(r.out, HasSubstr("\"journal_mode\":\"wal\",")) << r;
  EXPECT_THAT(r.out, ::testing::EndsWith("}\n")) << r;
  r = Jkv({db_, "stats"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("page_size 4096\n")) << r;
  for (const char* name : {"cache_hits ", "database_reads ", "database_syncs ", "wal_bytes_written ",
                           "shm_writes ", "journal_syncs ", "checkpoint_policy threshold:1000\n",
                           "group_flushes "}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("\n") + name)) << r;
  }
  r = Jkv({db_, "stats", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("{\"page_size\":4096,")) << r;
  EXPECT_THAT(r.out, HasSubstr("\"wal_mode\":true,")) << r;
  ExpectError(Jkv({db_, "stats", "--jsn"}), "stats: unknown or repeated argument \"--jsn\"");
  ExpectError(Jkv({db_, "info", "--json", "--json"}), "info: unknown or repeated argument");
}

TEST_F(JkvTest, WalModePutGetCheckpointInfo) {
  Result r = Jkv({"--journal=wal", db_, "put", "k", "v"});
  EXPECT_EQ(r.exit_code, 0) << r;
  r = Jkv({"--journal=wal", db_, "get", "k"});
  EXPECT_EQ(r.out, "v\n") << r;
  r = Jkv({"--journal=wal", db_, "checkpoint", "full"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("log_frames 0 copied 0 backfilled 0 blocked no"));
  r = Jkv({"--journal=wal", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::HasSubstr("journal_mode wal\n"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("log_frames 0\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("current_log"))) << r;  // wal2's lines only in wal2
  EXPECT_THAT(r.out, Not(HasSubstr("wal2_"))) << r;
  // The last connection's close copied the log back and removed it and the wal-index.
  EXPECT_FALSE(Exists(db_ + "-wal"));
  EXPECT_FALSE(Exists(db_ + "-shm"));
  // Opening it in a rollback mode switches it back; the data stays.
  r = Jkv({"--journal=delete", db_, "get", "k"});
  EXPECT_EQ(r.out, "v\n") << r;
}

TEST_F(JkvTest, Wal2ModePutGetCheckpointInfo) {
  Result r = Jkv({"--journal=wal2", db_, "put", "k", "v"});
  EXPECT_EQ(r.exit_code, 0) << r;
  r = Jkv({"--journal=wal2", db_, "get", "k"});
  EXPECT_EQ(r.out, "v\n") << r;
  r = Jkv({"--journal=wal2", db_, "checkpoint", "full"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::StartsWith("log_frames 0 copied 0 backfilled 0 blocked no"));
  r = Jkv({"--journal=wal2", "--wal2-switch-pages=64", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, ::testing::HasSubstr("journal_mode wal2\n"));
  std::map<std::string, std::string> fields = InfoFields(r.out);
  EXPECT_EQ(fields["keys"], "1") << r;
  EXPECT_EQ(fields["log_frames"], "0") << r;
  EXPECT_EQ(fields["log_frames_not_checkpointed"], "0") << r;
  EXPECT_EQ(fields["log_bytes"], "0") << r;
  EXPECT_THAT(fields["current_log"], ::testing::AnyOf("0", "1")) << r;
  EXPECT_EQ(fields["wal2_log_frames"], "0") << r;
  EXPECT_EQ(fields["wal2_log_frames_not_checkpointed"], "0") << r;
  EXPECT_EQ(fields["wal2_log_bytes"], "0") << r;
  EXPECT_EQ(fields["log_switches"], "0") << r;
  EXPECT_EQ(fields["wal2_switch_pages"], "64") << r;
  EXPECT_EQ(fields["checkpoint_policy"], "threshold:1000") << r;
  // The wal2 lines sit among the log's lines, after log_bytes and before checkpoints.
  EXPECT_THAT(r.out, HasSubstr("log_bytes 0\ncurrent_log ")) << r;
  EXPECT_THAT(r.out, HasSubstr("\nwal2_switch_pages 64\ncheckpoints ")) << r;
  // The last connection's close copied both logs back and removed them and the wal-index.
  EXPECT_FALSE(Exists(db_ + "-wal"));
  EXPECT_FALSE(Exists(db_ + "-wal2"));
  EXPECT_FALSE(Exists(db_ + "-shm"));
  // Without --journal the database keeps its family: wal2.
  r = Jkv({db_, "info"});
  EXPECT_THAT(r.out, HasSubstr("journal_mode wal2\n")) << r;
  EXPECT_THAT(r.out, HasSubstr("\nwal2_switch_pages 1000\n")) << r;
  ExpectOk({"get", "k"}, "v\n");
  EXPECT_FALSE(Exists(db_ + "-wal"));
  EXPECT_FALSE(Exists(db_ + "-wal2"));
  EXPECT_FALSE(Exists(db_ + "-shm"));
  // A writing command in a rollback mode switches it back; the data stays.
  r = Jkv({"--journal=delete", db_, "put", "k2", "w"});
  EXPECT_EQ(r.exit_code, 0) << r;
  ExpectOk({"get", "k"}, "v\n");
  r = Jkv({db_, "info"});
  EXPECT_THAT(r.out, HasSubstr("journal_mode delete\n")) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("current_log"))) << r;
}

// Every sync level in wal2, and a switch to the other log at every commit that may switch
// (--wal2-switch-pages=1, each commit checkpointed by threshold:1): the data is all there.
TEST_F(JkvTest, Wal2AtEverySyncLevelWithFrequentSwitches) {
  int i = 0;
  for (const char* sync : {"off", "normal", "full", "extra"}) {
    std::string input;
    for (int j = 0; j < 20; ++j) absl::StrAppend(&input, "put k", i++, " ", sync, "\n");
    const Result r = Jkv({"--journal=wal2", absl::StrCat("--sync=", sync),
                          "--wal2-switch-pages=1", "--checkpoint=threshold:1", db_, "shell"},
                         input);
    EXPECT_EQ(r.exit_code, 0) << r;
    std::string oks;
    for (int j = 0; j < 20; ++j) oks += "ok\n";
    EXPECT_EQ(r.out, oks) << r;
    const Result info = Jkv({"--journal=wal2", absl::StrCat("--sync=", sync), db_, "info"});
    EXPECT_THAT(info.out, AllOf(HasSubstr("journal_mode wal2\n"),
                                HasSubstr(absl::StrCat("sync ", sync, "\n"))))
        << info;
  }
  ExpectOk({"count"}, "80\n");
  const Result check = Jkv({db_, "check"});
  EXPECT_EQ(check.exit_code, 0) << check;
  EXPECT_THAT(check.out, StartsWith("ok: 80 keys"));
  EXPECT_FALSE(Exists(db_ + "-wal"));
  EXPECT_FALSE(Exists(db_ + "-wal2"));
  EXPECT_FALSE(Exists(db_ + "-shm"));
}

// --checkpoint reaches the engine: info names this invocation's policy (the policy is not
// stored in the database: each invocation runs under its own). What manual leaves in the log is
// not visible here, since closing the last connection copies the log back.
TEST_F(JkvTest, CheckpointPolicyShowsInInfo) {
  ASSERT_EQ(Jkv({"--journal=wal", db_, "put", "a", "0"}).exit_code, 0);  // load overwrites it
  Result r = Jkv({"--journal=wal", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("checkpoint_policy threshold:1000\n"));  // the default
  EXPECT_THAT(r.out, Not(HasSubstr("background_errors")));
  r = Jkv({"--journal=wal", "--checkpoint=manual", db_, "load"}, "a 1\nb 2\n");
  EXPECT_EQ(r.out, "loaded 2\n") << r;
  r = Jkv({"--journal=wal", "--checkpoint=manual", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("checkpoint_policy manual\n"));
  EXPECT_THAT(r.out, HasSubstr("keys 2\n"));
  r = Jkv({"--journal=wal", "--checkpoint=async:0/100", db_, "put", "c", "3"});
  EXPECT_EQ(r.exit_code, 0) << r;
  r = Jkv({"--journal=wal", "--checkpoint=async:0/100", db_, "info"});
  EXPECT_THAT(r.out, HasSubstr("checkpoint_policy async:0/100\n")) << r;
  EXPECT_THAT(r.out, HasSubstr("keys 3\n"));
  // A rollback mode has no log, so no policy to show.
  ASSERT_EQ(Jkv({"--journal=delete", db_, "put", "d", "4"}).exit_code, 0);
  r = Jkv({"--journal=delete", "--checkpoint=manual", db_, "info"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("checkpoint_policy")));
  EXPECT_THAT(r.out, HasSubstr("keys 4\n"));
}

TEST_F(JkvTest, DirectoryOrForeignFileAsDbPathExitsTwo) {
  ExpectError(Jkv({dir_, "count"}), "is a directory");
  const std::string foreign = dir_ + "/notes.txt";
  const std::string text(10000, 'x');
  WriteFile(foreign, text);
  ExpectError(Jkv({foreign, "put", "k", "v"}), "not a journalkv database");
  ExpectError(Jkv({foreign, "count"}), "not a journalkv database");
  EXPECT_EQ(ReadFile(foreign), text) << "jkv changed a foreign file";
  ExpectError(Jkv({"--read-only", dir_ + "/missing.db", "count"}), "missing.db");
}

TEST_F(JkvTest, ReadOnlyRefusesWrites) {
  ExpectOk({"put", "k", "v"}, "");
  ExpectError(Jkv({"--read-only", db_, "put", "k", "w"}), "read-only");
  const Result r = Jkv({"--read-only", db_, "get", "k"});
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, "v\n");
}

TEST_F(JkvTest, EveryJournalModeAndSyncLevelWorks) {
  int i = 0;
  for (const char* mode : {"delete", "truncate", "persist", "memory", "off"}) {
    for (const char* sync : {"off", "normal", "full", "extra"}) {
      const std::string key = absl::StrCat("k", i++);
      const std::vector<std::string> opts = {absl::StrCat("--journal=", mode),
                                             absl::StrCat("--sync=", sync), db_};
      Result put = Jkv({opts[0], opts[1], opts[2], "put", key, mode});
      EXPECT_EQ(put.exit_code, 0) << put;
      Result info = Jkv({opts[0], opts[1], opts[2], "info"});
      EXPECT_THAT(info.out, AllOf(HasSubstr(absl::StrCat("journal_mode ", mode, "\n")),
                                  HasSubstr(absl::StrCat("sync ", sync, "\n"))));
    }
  }
  ExpectOk({"count"}, "20\n");
}

TEST_F(JkvTest, LoadThenDumpRoundTrips) {
  std::string input;
  std::vector<std::string> expected;
  for (int i = 0; i < 300; ++i) {
    const std::string key = absl::StrCat(std::string(1, static_cast<char>(i % 256)), "key ", i);
    const std::string value = absl::StrCat("\\\n\xff value ", std::string(i * 7, 'v'));
    const std::string line = absl::StrCat(EncodeToken(key), " ", EncodeToken(value));
    input += line + "\n";
    expected.push_back(line);
  }
  std::sort(expected.begin(), expected.end());  // compared as sets; key order checked below
  const Result load = Jkv({db_, "load"}, input + "\n");  // a final empty line is skipped
  EXPECT_EQ(load.exit_code, 0) << load;
  EXPECT_EQ(load.out, "loaded 300\n");
  const Result dump = Jkv({db_, "dump"});
  EXPECT_EQ(dump.exit_code, 0) << dump;
  std::vector<std::string> lines = absl::StrSplit(dump.out, '\n', absl::SkipEmpty());
  std::vector<std::string> sorted = lines;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, expected);
  // Into a second database, and out again: byte for byte the same.
  const Result load2 = Jkv({dir_ + "/y.db", "load"}, dump.out);
  EXPECT_EQ(load2.out, "loaded 300\n") << load2;
  EXPECT_EQ(Jkv({dir_ + "/y.db", "dump"}).out, dump.out);
  // dump is in key order: memcmp order of the decoded keys.
  std::vector<std::string> keys;
  for (const std::string& line : lines) {
    keys.push_back(*DecodeToken(line.substr(0, line.find(' '))));
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  const Result check = Jkv({db_, "check"});
  EXPECT_EQ(check.exit_code, 0) << check;
  EXPECT_THAT(check.out, StartsWith("ok: 300 keys, depth "));
}

TEST_F(JkvTest, LoadWithAMalformedLineWritesNothing) {
  ExpectOk({"put", "old", "1"}, "");
  for (const std::string& bad : {std::string("k"), std::string("k v extra"), std::string("k\\q v"),
                                 std::string("k v\\x4"), std::string("k\tv")}) {
    const Result r = Jkv({db_, "load"}, "a 1\nb 2\n" + bad + "\nc 3\n");
    ExpectError(r, "stdin line 3: ");
    EXPECT_THAT(r.err, HasSubstr("nothing was loaded"));
    ExpectOk({"dump"}, "old 1\n");
  }
}

TEST_F(JkvTest, CheckAndInfo) {
  Fill(500, 100);
  const Result check = Jkv({db_, "check"});
  EXPECT_EQ(check.exit_code, 0) << check;
  EXPECT_THAT(check.out, StartsWith("ok: 500 keys, depth 2, "));
  EXPECT_EQ(check.err, "");
  const Result info = Jkv({db_, "info"});
  EXPECT_EQ(info.exit_code, 0) << info;
  std::map<std::string, std::string> fields;
  for (absl::string_view line : absl::StrSplit(info.out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    fields.insert(kv);
  }
  EXPECT_EQ(fields["path"], db_);
  EXPECT_EQ(fields["page_size"], "4096");
  EXPECT_EQ(fields["keys"], "500");
  EXPECT_EQ(fields["journal_mode"], "wal");  // the default for a new database
  EXPECT_EQ(fields["sync"], "full");
  EXPECT_EQ(fields["read_only"], "no");
  EXPECT_EQ(fields["free_pages"], "0");
  EXPECT_EQ(std::stoull(fields["file_size"]), std::stoull(fields["page_count"]) * 4096);
}

TEST_F(JkvTest, PageSizeIsFixedAtCreation) {
  ASSERT_EQ(Jkv({"--page-size=512", db_, "put", "k", "v"}).exit_code, 0);
  const Result info = Jkv({"--page-size=8192", db_, "info"});
  EXPECT_THAT(info.out, HasSubstr("page_size 512\n")) << info;
  // Said, not silently dropped; and not said when it matches or was not given.
  EXPECT_THAT(info.err, HasSubstr("has 512-byte pages, fixed when it was made; --page-size=8192 "
                                  "is ignored")) << info;
  EXPECT_EQ(Jkv({"--page-size=512", db_, "count"}).err, "");
  EXPECT_EQ(Jkv({db_, "count"}).err, "");
}

TEST_F(JkvTest, CheckReportsDamagedPagesAndExitsTwo) {
  Fill(200, 200);
  {
    std::fstream f(db_, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(2 * 4096 + 100);  // inside page 3
    f.put('\x5a');
  }
  const Result r = Jkv({db_, "check"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_THAT(r.out, StartsWith("damaged: ")) << r;
  EXPECT_THAT(r.err, AllOf(StartsWith("error: "), HasSubstr("page 3"))) << r;
}

TEST_F(JkvTest, WriteErrorOnStdoutExitsTwo) {
  ExpectOk({"put", "k", "v"}, "");
  const Result r = Jkv({db_, "dump"}, "", "/dev/full");
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "error: writing stdout failed\n");
}

}  // namespace
}  // namespace journalkv::tools
