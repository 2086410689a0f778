#include "tools/cli_args.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::tools {
namespace {

using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;

absl::StatusOr<CommandLine> Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

// No --journal: the mode is left to Db::Open (wal for a new database, the database's own
// family otherwise).
TEST(ParseCommandLineTest, DefaultsAreTheDatabasesOwnModeAndFull) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"x.db", "count"}));
  EXPECT_FALSE(cl.help);
  EXPECT_EQ(cl.db_path, "x.db");
  EXPECT_EQ(cl.command.name, "count");
  EXPECT_EQ(cl.options.journal_mode, std::nullopt);
  EXPECT_EQ(cl.options.sync, SyncLevel::kFull);
  EXPECT_FALSE(cl.options.read_only);
}

TEST(ParseCommandLineTest, ReadsEveryOption) {
  JKV_ASSERT_OK_AND_ASSIGN(
      CommandLine cl,
      Parse({"--journal=truncate", "--sync=extra", "--page-size=512", "--cache-pages=7",
             "--busy-timeout-ms=250", "--read-only", "x.db", "get", "k"}));
  EXPECT_EQ(cl.options.journal_mode, JournalMode::kTruncate);
  EXPECT_EQ(cl.options.sync, SyncLevel::kExtra);
  EXPECT_EQ(cl.options.page_size, 512u);
  EXPECT_EQ(cl.options.cache_pages, 7u);
  EXPECT_EQ(cl.options.busy_timeout, absl::Milliseconds(250));
  EXPECT_TRUE(cl.options.read_only);
}

TEST(ParseCommandLineTest, HelpWinsOverEverythingBeforeDbPath) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine a, Parse({"--help"}));
  EXPECT_TRUE(a.help);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine b, Parse({"--bogus", "-h", "x.db"}));
  EXPECT_TRUE(b.help);
  // After DBPATH, -h is an argument like any other.
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine c, Parse({"x.db", "get", "-h"}));
  EXPECT_FALSE(c.help);
  EXPECT_THAT(c.command.args, ElementsAre("-h"));
}

TEST(ParseCommandLineTest, DoubleDashEndsOptions) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"--sync=off", "--", "-weird.db", "count"}));
  EXPECT_EQ(cl.db_path, "-weird.db");
  EXPECT_EQ(cl.options.sync, SyncLevel::kOff);
}

TEST(ParseCommandLineTest, RejectsBadOptions) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"--bogus", "x.db", "count"}), StatusIs(kInvalid, "unknown option --bogus"));
  EXPECT_THAT(Parse({"--journal=fast", "x.db", "count"}), StatusIs(kInvalid, "--journal"));
  EXPECT_THAT(Parse({"--journal", "x.db", "count"}), StatusIs(kInvalid, "needs a value"));
  EXPECT_THAT(Parse({"--sync=fsync", "x.db", "count"}), StatusIs(kInvalid, "--sync"));
  EXPECT_THAT(Parse({"--page-size=1000", "x.db", "count"}), StatusIs(kInvalid, "power of two"));
  EXPECT_THAT(Parse({"--page-size=131072", "x.db", "count"}), StatusIs(kInvalid, "power"));
  EXPECT_THAT(Parse({"--page-size=-4096", "x.db", "count"}), StatusIs(kInvalid, "\"-4096\" is not a power of two from 512 to 65536"));
  EXPECT_THAT(Parse({"--cache-pages=0", "x.db", "count"}), StatusIs(kInvalid, "from 1 to"));
  EXPECT_THAT(Parse({"--cache-pages=99999999999", "x.db", "count"}),
              StatusIs(kInvalid, "--cache-pages"));
  EXPECT_THAT(Parse({"--busy-timeout-ms=1s", "x.db", "count"}),
              StatusIs(kInvalid, "--busy-timeout-ms"));
  EXPECT_THAT(Parse({"--read-only=yes", "x.db", "count"}), StatusIs(kInvalid, "no value"));
  EXPECT_THAT(Parse({"--sync=off", "--sync=full", "x.db", "count"}),
              StatusIs(kInvalid, "given twice"));
}

TEST(ParseCommandLineTest, WalAndWal2Parse) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine wal, Parse({"--journal=wal", "x.db", "count"}));
  EXPECT_EQ(wal.options.journal_mode, JournalMode::kWal);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine wal2, Parse({"--journal=wal2", "x.db", "count"}));
  EXPECT_EQ(wal2.options.journal_mode, JournalMode::kWal2);
  EXPECT_EQ(wal2.options.wal2_switch_pages, 1000u);  // the engine's default
  // --checkpoint applies to wal2 as to wal.
  JKV_ASSERT_OK_AND_ASSIGN(
      CommandLine ckpt, Parse({"--journal=wal2", "--checkpoint=async:0/100", "x.db", "info"}));
  EXPECT_EQ(ckpt.options.journal_mode, JournalMode::kWal2);
  EXPECT_EQ(ckpt.options.checkpoint_policy, "async:0/100");
  // jkv takes what the engine's parser takes: names in any case; the error lists wal2.
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine upper, Parse({"--journal=WAL2", "x.db", "count"}));
  EXPECT_EQ(upper.options.journal_mode, JournalMode::kWal2);
  EXPECT_THAT(Parse({"--journal=wal3", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "wal, wal2 or atomic"));
}

TEST(ParseCommandLineTest, AtomicAndItsFallbackParse) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine none, Parse({"--journal=atomic", "x.db", "count"}));
  EXPECT_EQ(none.options.journal_mode, JournalMode::kAtomic);
  EXPECT_EQ(none.options.atomic_fallback, std::nullopt);  // default: refuse, no fallback
  JKV_ASSERT_OK_AND_ASSIGN(
      CommandLine fb, Parse({"--journal=atomic", "--atomic-fallback=persist", "x.db", "count"}));
  EXPECT_EQ(fb.options.atomic_fallback, JournalMode::kPersist);
  EXPECT_THAT(Parse({"--atomic-fallback=atomic", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot be atomic"));
  EXPECT_THAT(Parse({"--atomic-fallback=ext4", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "--atomic-fallback: unknown journal"));
  EXPECT_THAT(Parse({"--atomic-fallback", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "needs a value"));
}

TEST(ParseCommandLineTest, ReaderSlots) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine def, Parse({"x.db", "count"}));
  EXPECT_EQ(def.options.reader_slots, 512);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine none, Parse({"--reader-slots=0", "x.db", "count"}));
  EXPECT_EQ(none.options.reader_slots, 0);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine all, Parse({"--reader-slots=512", "x.db", "count"}));
  EXPECT_EQ(all.options.reader_slots, 512);
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"--reader-slots=513", "x.db", "count"}), StatusIs(kInvalid, "--reader-slots"));
  EXPECT_THAT(Parse({"--reader-slots", "x.db", "count"}),
              StatusIs(kInvalid, "--reader-slots needs a value"));
}

TEST(ParseCommandLineTest, RecordAndItsValues) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine def, Parse({"x.db", "count"}));
  EXPECT_EQ(def.options.record_path, "");
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine rec, Parse({"--record=t.jkvtrace", "x.db", "shell"}));
  EXPECT_EQ(rec.options.record_path, "t.jkvtrace");
  EXPECT_EQ(rec.options.record_values, TraceValues::kSynthetic);
  JKV_ASSERT_OK_AND_ASSIGN(
      CommandLine keep, Parse({"--record=t", "--record-values=keep", "x.db", "get", "k"}));
  EXPECT_EQ(keep.options.record_values, TraceValues::kKeep);
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"--record-values=keep", "x.db", "count"}),
              StatusIs(kInvalid, "--record-values needs --record=FILE"));
  EXPECT_THAT(Parse({"--record=t", "--record-values=all", "x.db", "count"}),
              StatusIs(kInvalid, "--record-values: want keep or synthetic, got \"all\""));
  EXPECT_THAT(Parse({"--record=", "x.db", "count"}), StatusIs(kInvalid, "--record needs a file"));
  EXPECT_THAT(Parse({"--record", "x.db", "count"}), StatusIs(kInvalid, "--record needs a value"));
}

TEST(ParseCommandLineTest, Wal2SwitchPages) {
  JKV_ASSERT_OK_AND_ASSIGN(
      CommandLine cl, Parse({"--journal=wal2", "--wal2-switch-pages=64", "x.db", "count"}));
  EXPECT_EQ(cl.options.wal2_switch_pages, 64u);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine one, Parse({"--wal2-switch-pages=1", "x.db", "count"}));
  EXPECT_EQ(one.options.wal2_switch_pages, 1u);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine max,
                           Parse({"--wal2-switch-pages=4294967295", "x.db", "count"}));
  EXPECT_EQ(max.options.wal2_switch_pages, 4294967295u);
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"--wal2-switch-pages=0", "x.db", "count"}),
              StatusIs(kInvalid, "--wal2-switch-pages: \"0\" is not a whole number from 1 to"));
  EXPECT_THAT(Parse({"--wal2-switch-pages=-5", "x.db", "count"}),
              StatusIs(kInvalid, "--wal2-switch-pages: \"-5\" is not a whole number"));
  EXPECT_THAT(Parse({"--wal2-switch-pages=4294967296", "x.db", "count"}),
              StatusIs(kInvalid, "--wal2-switch-pages"));
  EXPECT_THAT(Parse({"--wal2-switch-pages=", "x.db", "count"}),
              StatusIs(kInvalid, "--wal2-switch-pages"));
  EXPECT_THAT(Parse({"--wal2-switch-pages", "x.db", "count"}), StatusIs(kInvalid, "needs a value"));
  EXPECT_THAT(Parse({"--wal2-switch-pages=5", "--wal2-switch-pages=6", "x.db", "count"}),
              StatusIs(kInvalid, "given twice"));
}

TEST(ParseCommandLineTest, CheckpointPolicyGoesToTheOptions) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine plain, Parse({"x.db", "count"}));
  EXPECT_EQ(plain.options.checkpoint_policy, "threshold:1000");  // the engine's default
  for (const char* policy :
       {"manual", "threshold:1000", "threshold:1", "async:100/300", "async:0/100", "async:5/6"}) {
    JKV_ASSERT_OK_AND_ASSIGN(
        CommandLine cl,
        Parse({"--journal=wal", std::string("--checkpoint=") + policy, "x.db", "count"}));
    EXPECT_EQ(cl.options.checkpoint_policy, policy);
    EXPECT_EQ(cl.options.journal_mode, JournalMode::kWal);
  }
}

TEST(ParseCommandLineTest, RejectsBadCheckpointPoliciesNamingThem) {
  for (const char* policy : {"", "often", "threshold:", "threshold:0", "async:5", "async:5/3",
                             "async:5/5", "async:1/2/3", "threshold:x", "threshold:-1"}) {
    EXPECT_THAT(Parse({std::string("--checkpoint=") + policy, "x.db", "count"}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("--checkpoint: checkpoint policy '", policy, "'")))
        << policy;
  }
  EXPECT_THAT(Parse({"--checkpoint=async:5/3", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "N must be below B"));
  EXPECT_THAT(Parse({"--checkpoint", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "needs a value"));
  EXPECT_THAT(Parse({"--checkpoint=manual", "--checkpoint=manual", "x.db", "count"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "given twice"));
}

TEST(ParseCommandLineTest, RejectsMissingPathOrCommand) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"--sync=off"}), StatusIs(kInvalid, "missing DBPATH"));
  EXPECT_THAT(Parse({"x.db"}), StatusIs(kInvalid, "missing COMMAND"));
  EXPECT_THAT(Parse({"", "count"}), StatusIs(kInvalid, "DBPATH is empty"));
  EXPECT_THAT(Parse({"x.db", "frobnicate"}), StatusIs(kInvalid, "unknown command \"frobnicate\""));
}

TEST(ParseCommandLineTest, ChecksArgumentCounts) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"x.db", "put", "k"}), StatusIs(kInvalid, "usage: put K V"));
  EXPECT_THAT(Parse({"x.db", "get"}), StatusIs(kInvalid, "usage: get [--raw] K"));
  EXPECT_THAT(Parse({"x.db", "del", "a", "b"}), StatusIs(kInvalid, "usage: del K"));
  EXPECT_THAT(Parse({"x.db", "count", "x"}), StatusIs(kInvalid, "usage: count"));
  EXPECT_THAT(Parse({"x.db", "scan", "a", "b", "c"}), StatusIs(kInvalid, "usage: scan"));
  EXPECT_THAT(Parse({"x.db", "checkpoint", "full", "x"}), StatusIs(kInvalid, "checkpoint"));
}

TEST(ParseCommandLineTest, ShellTakesOtherDatabasePaths) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine one, Parse({"x.db", "shell"}));
  EXPECT_THAT(one.command.other_dbs, ElementsAre());
  // Paths, not tokens: a backslash is kept as it is.
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"x.db", "shell", "y.db", "dir/z\\q.db"}));
  EXPECT_EQ(cl.db_path, "x.db");
  EXPECT_THAT(cl.command.other_dbs, ElementsAre("y.db", "dir/z\\q.db"));
  EXPECT_THAT(Parse({"x.db", "shell", "y.db", ""}),
              StatusIs(kInvalid, "shell: OTHER_DBPATH 2 is empty"));
  EXPECT_THAT(Parse({"x.db", "shell", "--journal=wal"}),
              StatusIs(kInvalid, "options go before DBPATH"));
  EXPECT_THAT(Parse({"x.db", "shell", "x.db"}),
              StatusIs(kInvalid, "shell: x.db is given twice (databases 0 and 1)"));
  EXPECT_THAT(Parse({"x.db", "shell", "y.db", "z.db", "y.db"}),
              StatusIs(kInvalid, "shell: y.db is given twice (databases 1 and 3)"));
}

TEST(ParseCommandLineTest, DecodesTokens) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"x.db", "put", "a\\x00b", "\\x20\\x5c"}));
  EXPECT_THAT(cl.command.args, ElementsAre(std::string("a\0b", 3), " \\"));
  EXPECT_THAT(Parse({"x.db", "get", "a\\q"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "key: bad escape"));
  EXPECT_THAT(Parse({"x.db", "put", "k", "v\\"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "value: bad escape"));
}

TEST(ParseCommandLineTest, ScanTakesRangeAndLimitAnywhere) {
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"x.db", "scan", "--limit=3", "a", "c"}));
  EXPECT_EQ(cl.command.range.from, "a");
  EXPECT_EQ(cl.command.range.to, "c");
  EXPECT_EQ(cl.command.range.limit, 3u);
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine all, Parse({"x.db", "scan"}));
  EXPECT_EQ(all.command.range.from, "");
  EXPECT_EQ(all.command.range.to, std::nullopt);
  EXPECT_EQ(all.command.range.limit, std::nullopt);
  // An empty TO is no upper bound.
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine open, Parse({"x.db", "scan", "b", "", "--limit=0"}));
  EXPECT_EQ(open.command.range.to, std::nullopt);
  EXPECT_EQ(open.command.range.limit, 0u);
}

TEST(ParseCommandLineTest, ScanRejectsOtherDashDashArguments) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(Parse({"x.db", "scan", "--limt=3"}), StatusIs(kInvalid, "\\x2d"));
  EXPECT_THAT(Parse({"x.db", "scan", "--limit=1", "--limit=2"}), StatusIs(kInvalid, "repeated"));
  EXPECT_THAT(Parse({"x.db", "scan", "--limit=x"}), StatusIs(kInvalid, "--limit"));
  JKV_ASSERT_OK_AND_ASSIGN(CommandLine cl, Parse({"x.db", "scan", "\\x2d-limit=3"}));
  EXPECT_EQ(cl.command.range.from, "--limit=3");
}

}  // namespace
}  // namespace journalkv::tools
