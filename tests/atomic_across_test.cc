// Transactions across databases in journal mode atomic (pager/atomic_across.h, Y1..Y7), through
// the engine's BeginWriteAcross, on the emulated batch: two and three databases commit
// together, a rollback leaves none changed, a busy participant leaves the transaction open and
// retryable, a transaction larger than the cache spills into its batches, the flushes per
// transaction (2N + 1), a writer that fails after the commit point is rolled forward by a live
// connection taking the database from idle and by an opener, and a record file whose last
// transaction is not rolled forward everywhere is not reused (Y7).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::journalkv::testing::IsOkAndHolds;

Options AtomicOptions(vfs::FileSystem* fs) {
  Options options;
  options.journal_mode = JournalMode::kAtomic;
  options.file_system = fs;
  options.busy_timeout = absl::Milliseconds(50);
  return options;
}

std::vector<std::string> Paths(int n) {
  std::vector<std::string> paths;
  for (int i = 0; i < n; ++i) paths.push_back(absl::StrCat("/d/db", i));
  return paths;
}

std::vector<std::unique_ptr<Db>> OpenAll(const std::vector<std::string>& paths,
                                         const Options& options) {
  std::vector<std::unique_ptr<Db>> dbs;
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, options);
    EXPECT_THAT(db, IsOk());
    if (db.ok()) dbs.push_back(*std::move(db));
  }
  return dbs;
}

std::vector<Db*> Raw(const std::vector<std::unique_ptr<Db>>& dbs) {
  std::vector<Db*> raw;
  for (const auto& db : dbs) raw.push_back(db.get());
  return raw;
}

// One transaction across `dbs` putting key=value in each.
absl::Status PutAcross(const std::vector<Db*>& dbs, const std::string& key,
                       const std::string& value) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteAcross> txn, BeginWriteAcross(dbs));
  for (Db* db : dbs) JKV_RETURN_IF_ERROR(txn->For(db)->Put(key, value));
  return txn->Commit();
}

std::string ValueOf(Db& db, const std::string& key) {
  absl::StatusOr<std::optional<std::string>> v = db.Get(key);
  EXPECT_THAT(v, IsOk());
  return v.ok() && v->has_value() ? **v : "(none)";
}

class AtomicAcrossTest : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Databases, AtomicAcrossTest, ::testing::Values(2, 3),
                         [](const auto& info) { return absl::StrCat(info.param, "dbs"); });

TEST_P(AtomicAcrossTest, CommitsTogetherAndRollsBackTogether) {
  vfs::MemFileSystem fs;
  auto dbs = OpenAll(Paths(GetParam()), AtomicOptions(&fs));
  ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
  for (auto& db : dbs) EXPECT_EQ(ValueOf(*db, "k"), "one");
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto txn, BeginWriteAcross(Raw(dbs)));
    for (auto& db : dbs) ASSERT_THAT(txn->For(db.get())->Put("k", "two"), IsOk());
    ASSERT_THAT(txn->Rollback(), IsOk());
  }
  for (auto& db : dbs) EXPECT_EQ(ValueOf(*db, "k"), "one");
  // Nothing prepared is left anywhere, and the record file holds no record (Y4).
  for (const std::string& path : Paths(GetParam())) {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs.Open(path, {vfs::OpenMode::kReadWrite}));
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> note, file->PreparedBatch());
    EXPECT_FALSE(note.has_value()) << path;
  }
  // (Its magic zeroed: the next record overwrites the block without allocating it again.)
  JKV_ASSERT_OK_AND_ASSIGN(auto record, fs.Open("/d/db0-super", {vfs::OpenMode::kReadWrite}));
  uint8_t magic[8];
  ASSERT_THAT(record->Read(0, magic), IsOk());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(magic), 8), std::string(8, '\0'));
}

// 2N + 1 flushes per transaction: a prepare per database, the record, a durable commit per
// database (the first transaction also syncs the folder for the files it creates).
TEST_P(AtomicAcrossTest, FlushesPerTransactionAreTwoNPlusOne) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  const int n = GetParam();
  auto dbs = OpenAll(Paths(n), AtomicOptions(&fs));
  ASSERT_THAT(PutAcross(Raw(dbs), "k", "first"), IsOk());
  const auto before = fs.sync_log();
  ASSERT_THAT(PutAcross(Raw(dbs), "k", "second"), IsOk());
  const auto after = fs.sync_log();
  std::vector<std::string> sites;
  int dir_syncs = 0, commits = 0, file_syncs = 0;
  for (size_t i = before.size(); i < after.size(); ++i) {
    if (after[i].directory) ++dir_syncs;
    else if (after[i].atomic_commit) ++commits;
    else ++file_syncs;
  }
  EXPECT_EQ(dir_syncs, 0);
  EXPECT_EQ(commits, n);
  EXPECT_EQ(file_syncs, n + 1);
  std::printf("flushes per transaction across %d atomic databases: %d (%d prepares + 1 record + "
              "%d durable commits)\n", n, commits + file_syncs, n, n);
}

TEST_P(AtomicAcrossTest, ABusyParticipantLeavesTheTransactionOpenAndRetryable) {
  vfs::MemFileSystem fs;
  const int n = GetParam();
  auto dbs = OpenAll(Paths(n), AtomicOptions(&fs));
  ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
  // A reader of the last database, on another connection, outlasts the busy timeout.
  JKV_ASSERT_OK_AND_ASSIGN(auto other, Db::Open(Paths(n).back(), AtomicOptions(&fs)));
  JKV_ASSERT_OK_AND_ASSIGN(auto reader, other->BeginRead());
  JKV_ASSERT_OK_AND_ASSIGN(auto txn, BeginWriteAcross(Raw(dbs)));
  for (auto& db : dbs) ASSERT_THAT(txn->For(db.get())->Put("k", "two"), IsOk());
  EXPECT_THAT(txn->Commit(), StatusIs(absl::StatusCode::kUnavailable, "the transaction is still open"));
  ASSERT_TRUE(txn->open());
  // The other participants gave their EXCLUSIVE back: their readers read on, the old value.
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto first, Db::Open(Paths(n).front(), AtomicOptions(&fs)));
    EXPECT_EQ(ValueOf(*first, "k"), "one");
  }
  reader.reset();
  ASSERT_THAT(txn->Commit(), IsOk());
  for (auto& db : dbs) EXPECT_EQ(ValueOf(*db, "k"), "two");
  EXPECT_EQ(ValueOf(*other, "k"), "two");
}

TEST_P(AtomicAcrossTest, ATransactionLargerThanTheCacheSpillsIntoItsBatches) {
  vfs::MemFileSystem fs;
  Options options = AtomicOptions(&fs);
  options.cache_pages = 16;
  auto dbs = OpenAll(Paths(GetParam()), options);
  const std::string value(600, 'v');
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto txn, BeginWriteAcross(Raw(dbs)));
    for (int i = 0; i < 400; ++i) {
      for (auto& db : dbs) {
        ASSERT_THAT(txn->For(db.get())->Put(absl::StrCat("key", i), value), IsOk());
      }
    }
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  auto reopened = OpenAll(Paths(GetParam()), options);
  for (auto& db : reopened) {
    EXPECT_EQ(ValueOf(*db, "key0"), value);
    EXPECT_EQ(ValueOf(*db, "key399"), value);
    JKV_ASSERT_OK_AND_ASSIGN(auto check, db->Check());
    EXPECT_TRUE(check.ok()) << (check.ok() ? "" : check.problems.front());
  }
}

// The mutation count right after the super record's sync in a run of `txns` transactions.
uint64_t RecordSyncIndex(const std::vector<vfs::FaultInjectingFileSystem::SyncRecord>& log,
                         int nth) {
  int seen = 0;
  for (const auto& r : log) {
    if (!r.directory && absl::EndsWith(r.path, "-super") && ++seen == nth) return r.mutation_index;
  }
  return 0;
}

// A writer that fails right after its commit point (Y2): the transaction is committed; a
// connection that stayed open and takes its database from idle rolls it forward (Y5), an
// opener of another does too; until then the record file is not reused (Y7).
TEST(AtomicAcrossRecoveryTest, AWriterThatFailsAfterTheCommitPointIsRolledForward) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  const std::vector<std::string> paths = Paths(3);
  uint64_t point = 0;
  {
    // A dry run to find the mutation index of the second transaction's record sync.
    vfs::MemFileSystem dry_base;
    vfs::FaultInjectingFileSystem dry(&dry_base);
    auto dbs = OpenAll({paths[0], paths[1]}, AtomicOptions(&dry));
    ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
    const uint64_t start = dry.mutation_count();
    ASSERT_THAT(PutAcross(Raw(dbs), "k", "two"), IsOk());
    point = RecordSyncIndex(dry.sync_log(), 2) - start;  // counted from the second's start
    ASSERT_GT(point, 0u);
  }
  auto dbs = OpenAll({paths[0], paths[1]}, AtomicOptions(&fs));
  ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(auto watcher, Db::Open(paths[1], AtomicOptions(&fs)));
  EXPECT_EQ(ValueOf(*watcher, "k"), "one");
  fs.CrashAfterMutations(point);
  EXPECT_THAT(PutAcross(Raw(dbs), "k", "two"),
              StatusIs(absl::StatusCode::kInternal, "is committed"));
  fs.CrashAfterMutations(uint64_t{1} << 40);  // the disk works again
  dbs.clear();                                 // the failed writer's handles go
  // A connection of db1 that stayed open takes it from idle: rolled forward.
  EXPECT_EQ(ValueOf(*watcher, "k"), "two");
  // db0 not yet: a transaction across db0 and db2 (db0 first: its record file) recovers db0 at
  // its begin, and finds the record resolved everywhere (db1 was rolled forward).
  auto next = OpenAll({paths[0], paths[2]}, AtomicOptions(&fs));
  EXPECT_EQ(ValueOf(*next[0], "k"), "two");
  EXPECT_THAT(PutAcross(Raw(next), "k", "three"), IsOk());
  EXPECT_EQ(ValueOf(*watcher, "k"), "two");
}

TEST(AtomicAcrossRecoveryTest, TheRecordFileIsNotReusedBeforeItsTransactionIsRolledForward) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  const std::vector<std::string> paths = Paths(3);
  uint64_t point = 0;
  {
    vfs::MemFileSystem dry_base;
    vfs::FaultInjectingFileSystem dry(&dry_base);
    auto dbs = OpenAll({paths[0], paths[1]}, AtomicOptions(&dry));
    ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
    point = RecordSyncIndex(dry.sync_log(), 1);
  }
  {
    auto dbs = OpenAll({paths[0], paths[1]}, AtomicOptions(&fs));
    fs.CrashAfterMutations(point - fs.mutation_count());
    EXPECT_THAT(PutAcross(Raw(dbs), "k", "one"), StatusIs(absl::StatusCode::kInternal, ""));
    fs.CrashAfterMutations(uint64_t{1} << 40);
  }
  // db1 is not opened: its prepared batch waits. db0 first again: its record is unresolved.
  auto next = OpenAll({paths[0], paths[2]}, AtomicOptions(&fs));
  EXPECT_EQ(ValueOf(*next[0], "k"), "one");
  EXPECT_THAT(PutAcross(Raw(next), "k", "two"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "/d/db0-super: an earlier transaction across databases committed here "
                       "has not been rolled forward in /d/db1"));
  EXPECT_EQ(ValueOf(*next[0], "k"), "one");
  EXPECT_EQ(ValueOf(*next[1], "k"), "(none)");
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto db1, Db::Open(paths[1], AtomicOptions(&fs)));
    EXPECT_EQ(ValueOf(*db1, "k"), "one");
  }
  EXPECT_THAT(PutAcross(Raw(next), "k", "two"), IsOk());
}

}  // namespace
}  // namespace journalkv

namespace journalkv {
namespace {

// The writer fails after the record's sync but before its folder's (the record file's first
// use): a connection that stayed open rolls its database forward when it next reads (Y5), and
// must make the record's name durable first, or a power loss then takes the record and the
// other database discards its prepared batch.
TEST(AtomicAcrossRecoveryTest, ALiveRecoveryBeforeAPowerLossMakesTheRecordDurableFirst) {
  const std::vector<std::string> paths = Paths(2);
  uint64_t point = 0;
  {
    vfs::MemFileSystem dry_base;
    vfs::FaultInjectingFileSystem dry(&dry_base);
    auto dbs = OpenAll(paths, AtomicOptions(&dry));
    ASSERT_THAT(dry.SyncDirectory("/d"), IsOk());
    const uint64_t start = dry.mutation_count();
    ASSERT_THAT(PutAcross(Raw(dbs), "k", "one"), IsOk());
    point = RecordSyncIndex(dry.sync_log(), 1) - start;
  }
  for (int alone : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("db", alone, " rolled forward by a live connection"));
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    {
      auto dbs = OpenAll(paths, AtomicOptions(&fs));
      JKV_ASSERT_OK_AND_ASSIGN(auto watcher, Db::Open(paths[alone], AtomicOptions(&fs)));
      ASSERT_THAT(fs.SyncDirectory("/d"), IsOk());
      fs.CrashAfterMutations(point);  // the record synced, its folder not
      EXPECT_THAT(PutAcross(Raw(dbs), "k", "one"), StatusIs(absl::StatusCode::kInternal, ""));
      fs.CrashAfterMutations(uint64_t{1} << 40);
      dbs.clear();
      EXPECT_EQ(ValueOf(*watcher, "k"), "one") << "rolled forward: the record was there";
    }
    ASSERT_THAT(fs.SimulatePowerLoss(alone), IsOk());
    auto dbs = OpenAll(paths, AtomicOptions(&fs));
    EXPECT_EQ(ValueOf(*dbs[0], "k"), "one");
    EXPECT_EQ(ValueOf(*dbs[1], "k"), "one");
  }
}

}  // namespace
}  // namespace journalkv
