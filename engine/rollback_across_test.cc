// BeginWriteAcross in the rollback journal modes (pager/super_journal.h), through the engine:
// two databases commit together and survive a reopen, a power loss in the middle of the
// commit leaves both or neither, and a busy commit is retried. The lead's engine/across_test.cc
// has the API's own cases; the crash sweeps are tests/across_crash_sweep_test.cc.
#include <memory>
#include <string>

#include "base/status_matchers.h"
#include "engine/across.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;

class RollbackAcrossEngineTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Opts() {
    Options o;
    o.file_system = &fs_;
    o.page_size = 4096;
    o.journal_mode = GetParam();
    o.busy_timeout = absl::Milliseconds(20);
    return o;
  }
  std::unique_ptr<Db> Open(const std::string& path) {
    auto db = Db::Open(path, Opts());
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(db).value() : nullptr;
  }
  // Commits key=value in both databases as one transaction.
  absl::Status PutBoth(Db* a, Db* b, const std::string& key, const std::string& value) {
    auto txn = BeginWriteAcross({a, b});
    if (!txn.ok()) return txn.status();
    if (absl::Status s = (*txn)->For(a)->Put(key, value); !s.ok()) return s;
    if (absl::Status s = (*txn)->For(b)->Put(key, value); !s.ok()) return s;
    return (*txn)->Commit();
  }

  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fs_{&mem_};
};

TEST_P(RollbackAcrossEngineTest, CommitsBothAndSurvivesReopen) {
  {
    auto a = Open("/x/a.db");
    auto b = Open("/y/b.db");
    ASSERT_THAT(PutBoth(a.get(), b.get(), "k", "v1"), IsOk());
  }
  auto a = Open("/x/a.db");
  auto b = Open("/y/b.db");
  EXPECT_THAT(a->Get("k"), IsOkAndHolds(std::optional<std::string>("v1")));
  EXPECT_THAT(b->Get("k"), IsOkAndHolds(std::optional<std::string>("v1")));
}

// A crash after each mutation of a commit across both (a process crash, and at even points a
// power loss too): after recovery both have it or neither has, and the one before it is in
// both.
TEST_P(RollbackAcrossEngineTest, CrashMidCommitIsAllOrNone) {
  int landed = 0, undone = 0;
  for (uint64_t point = 1;; ++point) {
    vfs::MemFileSystem mem;
    vfs::FaultInjectingFileSystem fs(&mem);
    Options o = Opts();
    o.file_system = &fs;
    {
      auto a = Db::Open("/x/a.db", o);
      auto b = Db::Open("/y/b.db", o);
      ASSERT_THAT(a, IsOk());
      ASSERT_THAT(b, IsOk());
      ASSERT_THAT(PutBoth(a->get(), b->get(), "k", "v1"), IsOk());
      fs.CrashAfterMutations(point);
      const absl::Status s = PutBoth(a->get(), b->get(), "k", "v2");
      if (s.ok()) {  // past the commit point: the points before it were all tried
        EXPECT_GT(landed, 0);
        EXPECT_GT(undone, 0);
        return;
      }
    }
    // Both crash kinds at every point: a process crash past the commit point keeps it.
    fs.SimulateProcessCrash();
    if (point % 2 == 0) {
      ASSERT_THAT(fs.SimulatePowerLoss(point), IsOk());
    }
    auto a = Db::Open("/x/a.db", o);
    auto b = Db::Open("/y/b.db", o);
    ASSERT_THAT(a, IsOk()) << point;
    ASSERT_THAT(b, IsOk()) << point;
    auto va = (*a)->Get("k");
    auto vb = (*b)->Get("k");
    ASSERT_THAT(va, IsOk());
    ASSERT_THAT(vb, IsOk());
    EXPECT_EQ(*va, *vb) << "point " << point;
    EXPECT_TRUE(*va == std::optional<std::string>("v1") ||
                *va == std::optional<std::string>("v2"))
        << "point " << point;
    (*va == std::optional<std::string>("v2") ? landed : undone)++;
  }
}

TEST_P(RollbackAcrossEngineTest, BusyCommitIsRetried) {
  auto a = Open("/x/a.db");
  auto b = Open("/y/b.db");
  ASSERT_THAT(b->Put("k", "v0"), IsOk());
  auto reader_db = Open("/y/b.db");
  auto reader = reader_db->BeginRead();
  ASSERT_THAT(reader, IsOk());
  auto txn = BeginWriteAcross({a.get(), b.get()});
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((*txn)->For(a.get())->Put("k", "v1"), IsOk());
  ASSERT_THAT((*txn)->For(b.get())->Put("k", "v1"), IsOk());
  EXPECT_TRUE(absl::IsUnavailable((*txn)->Commit()));
  EXPECT_TRUE((*txn)->open());
  // While it waits to be retried, a, which it had locked EXCLUSIVE before b was found busy,
  // is readable again (its EXCLUSIVE given back, RESERVED kept), at its last commit.
  auto a_reader_db = Open("/x/a.db");
  {
    auto a_reader = a_reader_db->BeginRead();
    ASSERT_THAT(a_reader, IsOk());
    EXPECT_THAT((*a_reader)->Get("k"), IsOkAndHolds(std::nullopt));
  }
  reader->reset();
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_THAT(a->Get("k"), IsOkAndHolds(std::optional<std::string>("v1")));
  EXPECT_THAT(b->Get("k"), IsOkAndHolds(std::optional<std::string>("v1")));
}

INSTANTIATE_TEST_SUITE_P(Modes, RollbackAcrossEngineTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
