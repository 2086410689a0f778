// BeginWriteAcross and WriteAcross (engine/across.h) in every journal family that takes part:
// what a commit, a rollback and the checks do from the API. The crash behaviour of each family's
// protocol is tested by the sweeps (tests/across_crash_sweep_test.cc and
// tests/atomic_across_sweep_test.cc).
#include "engine/across.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

class AcrossTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  std::unique_ptr<Db> Open(const std::string& path, std::optional<JournalMode> mode = {}) {
    Options o;
    o.cache_pages = 64;  // a large transaction spills
    o.file_system = &fs_;
    o.journal_mode = mode.has_value() ? *mode : GetParam();
    o.busy_timeout = absl::Seconds(20);
    o.commit_hook = [this, path](const CommitInfo&) { ++hooks_[path]; };
    auto db = Db::Open(path, o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(db).value() : nullptr;
  }
  static std::optional<std::string> Get(Db& db, const std::string& key) {
    auto v = db.Get(key);
    EXPECT_THAT(v, IsOk());
    return v.ok() ? *v : std::nullopt;
  }

  vfs::MemFileSystem fs_;
  std::map<std::string, int> hooks_;
};

TEST_P(AcrossTest, CommitsInEveryDatabase) {
  auto a = Open("/a.db"), b = Open("/b.db"), c = Open("/c.db");
  auto txn = BeginWriteAcross({a.get(), b.get(), c.get()});
  ASSERT_THAT(txn, IsOk());
  ASSERT_EQ((*txn)->size(), 3u);
  EXPECT_EQ((*txn)->For(b.get()), &(**txn)[1]);
  ASSERT_THAT((*txn)->For(a.get())->Put("k", "in a"), IsOk());
  ASSERT_THAT((*txn)->For(b.get())->Put("k", "in b"), IsOk());
  ASSERT_THAT((**txn)[2].Put("k", "in c"), IsOk());
  // Each part sees its own writes before the commit; the databases do not yet.
  EXPECT_THAT(*(*txn)->For(b.get())->Get("k"), ::testing::Optional(std::string("in b")));
  EXPECT_EQ(Get(*a, "k"), std::nullopt);
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_FALSE((*txn)->open());
  EXPECT_EQ(Get(*a, "k"), "in a");
  EXPECT_EQ(Get(*b, "k"), "in b");
  EXPECT_EQ(Get(*c, "k"), "in c");
  EXPECT_EQ(hooks_["/a.db"], 1);
  EXPECT_EQ(hooks_["/c.db"], 1);
  EXPECT_THAT((*txn)->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
}

TEST_P(AcrossTest, RollbackAndDestructionDiscardEverywhere) {
  auto a = Open("/a.db"), b = Open("/b.db");
  ASSERT_THAT(a->Put("k", "old"), IsOk());
  {
    auto txn = BeginWriteAcross({a.get(), b.get()});
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT((**txn)[0].Put("k", "new"), IsOk());
    ASSERT_THAT((**txn)[1].Put("k", "new"), IsOk());
    ASSERT_THAT((*txn)->Rollback(), IsOk());
    EXPECT_FALSE((*txn)->open());
    EXPECT_THAT((*txn)->Rollback(), IsOk());  // idempotent
  }
  {
    auto txn = BeginWriteAcross({a.get(), b.get()});
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT((**txn)[0].Put("k", "new"), IsOk());
    ASSERT_THAT((**txn)[1].Put("k", "new"), IsOk());
  }  // destroyed without Commit
  EXPECT_EQ(Get(*a, "k"), "old");
  EXPECT_EQ(Get(*b, "k"), std::nullopt);
  // Both databases take ordinary writes again.
  ASSERT_THAT(b->Put("k", "b"), IsOk());
  ASSERT_THAT(a->Put("k", "a"), IsOk());
}

TEST_P(AcrossTest, LargeTransactionsSpillInEveryDatabase) {
  auto a = Open("/a.db"), b = Open("/b.db");
  auto txn = BeginWriteAcross({a.get(), b.get()});
  ASSERT_THAT(txn, IsOk());
  const std::string value(900, 'v');
  for (int i = 0; i < 1200; ++i) {  // well past the cache (64 pages): every part spills
    ASSERT_THAT((**txn)[i % 2].Put(absl::StrCat("key", i), value), IsOk());
  }
  EXPECT_GT(a->Stats().Value(base::Counter::kSpills), 0u);
  EXPECT_GT(b->Stats().Value(base::Counter::kSpills), 0u);
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_EQ(*a->BeginRead().value()->Count(), 600u);
  EXPECT_EQ(*b->BeginRead().value()->Count(), 600u);
  EXPECT_EQ(Get(*b, "key1199"), value);
}

TEST_P(AcrossTest, AnUnchangedDatabaseTakesPartWithoutACommit) {
  auto a = Open("/a.db"), b = Open("/b.db");
  auto txn = BeginWriteAcross({a.get(), b.get()});
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((**txn)[1].Put("only", "b"), IsOk());
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_EQ(Get(*b, "only"), "b");
  EXPECT_EQ(hooks_["/b.db"], 1);
}

TEST_P(AcrossTest, ItsPartsCannotCommitOrRollBackAlone) {
  auto a = Open("/a.db"), b = Open("/b.db");
  auto txn = BeginWriteAcross({a.get(), b.get()});
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((**txn)[0].Put("k", "v"), IsOk());
  EXPECT_THAT((**txn)[0].Commit(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                             "WriteAcross::Commit"));
  EXPECT_THAT((**txn)[1].Rollback(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  EXPECT_THAT((**txn)[1].CommitOrRollback(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  EXPECT_TRUE((*txn)->open());
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_EQ(Get(*a, "k"), "v");
  // Close waits for the transaction object to go (it holds both databases' transactions).
  EXPECT_THAT(a->Close(), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
  txn->reset();
  EXPECT_THAT(a->Close(), IsOk());
}

// Two threads run transactions across the same two databases, naming them in opposite orders:
// the locks are taken in one canonical order, so neither waits for the other forever (each
// would time out busy, with the locks taken in argument order).
TEST_P(AcrossTest, OppositeArgumentOrdersDoNotDeadlock) {
  auto a = Open("/a.db"), b = Open("/b.db");
  std::atomic<int> failures{0};
  auto run = [&](Db* first, Db* second, const std::string& tag) {
    for (int i = 0; i < 40; ++i) {
      auto txn = BeginWriteAcross({first, second});
      if (!txn.ok()) {
        ADD_FAILURE() << txn.status();
        ++failures;
        continue;
      }
      const std::string key = absl::StrCat(tag, i);
      if (!(**txn)[0].Put(key, "1").ok() || !(**txn)[1].Put(key, "2").ok()) ++failures;
      std::this_thread::yield();
      absl::Status s = (*txn)->Commit();
      if (!s.ok()) {
        ADD_FAILURE() << s;
        ++failures;
      }
    }
  };
  std::thread t1(run, a.get(), b.get(), "ab");
  std::thread t2(run, b.get(), a.get(), "ba");
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*a->BeginRead().value()->Count(), 80u);
  EXPECT_EQ(*b->BeginRead().value()->Count(), 80u);
  EXPECT_EQ(Get(*a, "ba7"), "2");
  EXPECT_EQ(Get(*b, "ba7"), "1");
}

TEST_P(AcrossTest, RefusesWhatItCannotDo) {
  auto a = Open("/a.db"), b = Open("/b.db");
  EXPECT_THAT(BeginWriteAcross(absl::Span<Db* const>()),
              StatusIs(absl::StatusCode::kInvalidArgument, "at least one"));
  EXPECT_THAT(BeginWriteAcross({a.get(), nullptr}),
              StatusIs(absl::StatusCode::kInvalidArgument, "null"));
  EXPECT_THAT(BeginWriteAcross({a.get(), a.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument, "same file"));
  // Another handle on a's file is the same database.
  auto a2 = Open("/a.db");
  EXPECT_THAT(BeginWriteAcross({a.get(), b.get(), a2.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument, "twice"));
  // A database of another family.
  const JournalMode other = IsWalMode(GetParam()) ? JournalMode::kDelete : JournalMode::kWal;
  auto c = Open("/c.db", other);
  EXPECT_THAT(BeginWriteAcross({a.get(), c.get()}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "same journal family"));
  // A database that keeps no journal on disk.
  auto m = Open("/m.db", JournalMode::kMemory);
  EXPECT_THAT(BeginWriteAcross({a.get(), m.get()}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "memory"));
  // The locks a refused transaction took are given back.
  ASSERT_THAT(a->Put("after", "1"), IsOk());
  ASSERT_THAT(c->Put("after", "1"), IsOk());
}

TEST(AcrossWalTest, WalAndWal2MixAndOneDatabaseIsAnOrdinaryTransaction) {
  vfs::MemFileSystem fs;
  Options o;
  o.file_system = &fs;
  o.journal_mode = JournalMode::kWal;
  auto a = Db::Open("/a.db", o);
  o.journal_mode = JournalMode::kWal2;
  auto b = Db::Open("/b.db", o);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  auto txn = BeginWriteAcross({a->get(), b->get()});
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((**txn)[0].Put("k", "a"), IsOk());
  ASSERT_THAT((**txn)[1].Put("k", "b"), IsOk());
  ASSERT_THAT((*txn)->Commit(), IsOk());
  auto one = BeginWriteAcross({b->get()});
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT((**one)[0].Put("k2", "b"), IsOk());
  ASSERT_THAT((*one)->Commit(), IsOk());
  EXPECT_EQ(*(*b)->Get("k2"), "b");
}

// WAL and WAL2 commit each database in turn: when the second one's log sync fails, the first
// has committed, and the error says so (the guarantee is per database).
TEST(AcrossWalTest, ACommitThatFailsPartWaySaysWhichDatabasesCommitted) {
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  Options o;
  o.file_system = &fs;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kFull;
  auto a = Db::Open("/a.db", o);
  auto b = Db::Open("/b.db", o);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  // The syncs of one database's commit (full), to fail the second database's.
  const uint64_t syncs = fs.op_count(vfs::FaultOp::kSync);
  ASSERT_THAT((*a)->Put("before", "1"), IsOk());
  const uint64_t per_commit = fs.op_count(vfs::FaultOp::kSync) - syncs;
  ASSERT_GE(per_commit, 1u);
  auto txn = BeginWriteAcross({b->get(), a->get()});  // committed in the files' order: a, b
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((**txn)[0].Put("k", "b"), IsOk());
  ASSERT_THAT((**txn)[1].Put("k", "a"), IsOk());
  fs.FailNth(vfs::FaultOp::kSync, per_commit + 1, EIO);  // counted from now
  const absl::Status s = (*txn)->Commit();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal, "committed in /a.db, not in the others"));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal, "atomic per database only"));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal, "/b.db failed its sync"));
  EXPECT_FALSE((*txn)->open());
  txn->reset();
  EXPECT_EQ(*(*a)->Get("k"), "a");
  // b's handle is in its error state after the failed sync (I7); reopened, the transaction is
  // there or not, whole either way.
  b->reset();
  fs.ClearFaults();
  auto b2 = Db::Open("/b.db", o);
  ASSERT_THAT(b2, IsOk());
  auto got = (*b2)->Get("k");
  ASSERT_THAT(got, IsOk());
  EXPECT_TRUE(!got->has_value() || **got == "b");
}

std::string ModeName(const ::testing::TestParamInfo<JournalMode>& info) {
  return std::string(JournalModeName(info.param));
}

INSTANTIATE_TEST_SUITE_P(Modes, AcrossTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kWal,
                                           JournalMode::kWal2, JournalMode::kAtomic),
                         ModeName);

}  // namespace
}  // namespace journalkv
