// Db::Compact and Options::auto_vacuum under power loss at every mutation (the file cut
// after the database sync, pager I11; in WAL by the checkpoint, C7), and auto_vacuum's
// freelist rebuild against a model.
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compact_testing.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;
using compact_testing::FileSize;
using compact_testing::Fill;
using compact_testing::Key;
using compact_testing::kFirstDeleted;
using compact_testing::kKeys;
using compact_testing::kLastDeleted;
using compact_testing::kPath;
using compact_testing::Model;
using compact_testing::Read;
using compact_testing::SweepStride;
using compact_testing::Value;

// A power loss after every mutation of a compaction: the database opens with every key and
// passes its check; once Compact returned OK the compaction is there.
struct SweepOutcome {
  bool compact_ok = false;
  uint32_t compacted_pages = 0;  // CompactResult::pages when compact_ok
  absl::Status contents;         // reopening and reading it
  uint32_t pages_after = 0;      // the reopened database's page count
};

SweepOutcome CompactThenPowerLoss(JournalMode mode, int64_t crash_after, uint64_t seed) {
  vfs::MemFileSystem base;
  base.MakeDirectoryForTesting("/d");
  vfs::FaultInjectingFileSystem fs(&base);
  SweepOutcome out;
  Options o;
  o.file_system = &fs;
  o.journal_mode = mode;
  o.cache_pages = 16;
  o.wal_grow_bytes = 64 << 10;
  Model model;
  {
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    model = Fill(*db);
    if (crash_after >= 0) fs.CrashAfterMutations(crash_after);
    absl::StatusOr<CompactResult> r = db->Compact();
    out.compact_ok = r.ok();
    if (r.ok()) out.compacted_pages = r->pages;
    db.reset();
  }
  JKV_CHECK(fs.SimulatePowerLoss(seed).ok());
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
  if (!db.ok()) {
    out.contents = db.status();
    return out;
  }
  absl::StatusOr<Model> got = Read(**db);
  out.contents = !got.ok()         ? got.status()
                 : *got == model ? absl::OkStatus()
                                 : absl::DataLossError("the keys differ after the crash");
  out.pages_after = (*db)->Stats().page_count;
  return out;
}

class CompactCrashTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(CompactCrashTest, APowerLossAtEveryMutationKeepsEveryKey) {
  const JournalMode mode = GetParam();
  // Every mutation; under a sanitizer every third (from a start that varies by mode), under
  // TSan, which runs this test for its threads, every tenth.
  const int stride = SweepStride();
  int completed = 0;
  for (int64_t n = static_cast<int>(mode) % stride;; n += stride) {
    SweepOutcome o = CompactThenPowerLoss(mode, n, n);
    EXPECT_THAT(o.contents, IsOk()) << "crash after " << n << " mutations";
    if (o.compact_ok) {
      EXPECT_EQ(o.pages_after, o.compacted_pages)
          << "crash after " << n << ": a compaction that returned OK was lost";
      if (++completed == 2) {  // past the last mutation: the sweep covered them all
        std::printf("%s: %lld crash points\n", std::string(JournalModeName(mode)).c_str(),
                    static_cast<long long>(n - 1));
        break;
      }
    }
    ASSERT_LT(n, 20000) << "the compaction never completed";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CompactCrashTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kPersist,
                                           JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

// Options::auto_vacuum: a commit that leaves free pages at the end of the file takes them off
// the freelist and the file ends before them; pages in use stay where they are.
class AutoVacuumTest
    : public ::testing::TestWithParam<std::tuple<JournalMode, uint32_t>> {
 protected:
  void SetUp() override { fs_.MakeDirectoryForTesting("/d"); }
  Options VacuumOptions(bool on) {
    Options o;
    o.file_system = &fs_;
    o.journal_mode = std::get<0>(GetParam());
    o.page_size = std::get<1>(GetParam());
    o.cache_pages = 16;
    o.auto_vacuum = on;
    return o;
  }
  bool wal() const {
    const JournalMode m = std::get<0>(GetParam());
    return m == JournalMode::kWal || m == JournalMode::kWal2;
  }
  vfs::MemFileSystem fs_;
};

// Loads keys in order (the newest leaves are at the end of the file), then deletes the newest
// half: with the option the file ends before the freed leaves, without it nothing changes.
TEST_P(AutoVacuumTest, DeletingTheNewestKeysGivesTheTailBack) {
  for (const bool on : {false, true}) {
    SCOPED_TRACE(on ? "auto_vacuum" : "without auto_vacuum");
    const std::string path = on ? "/d/on.db" : "/d/off.db";
    std::unique_ptr<Db> db = *Db::Open(path, VacuumOptions(on));
    Model model;
    auto w = *db->BeginWrite();
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_THAT(w->Put(Key(i), Value(i)), IsOk());
      model[Key(i)] = Value(i);
    }
    ASSERT_THAT(w->Commit(), IsOk());
    const uint32_t loaded = db->Stats().page_count;
    w = *db->BeginWrite();
    for (int i = kKeys / 2; i < kKeys; ++i) {
      ASSERT_THAT(w->Delete(Key(i)).status(), IsOk());
      model.erase(Key(i));
    }
    ASSERT_THAT(w->Commit(), IsOk());
    w.reset();
    const DbStats after = db->Stats();
    EXPECT_THAT(Read(*db), IsOkAndHolds(model));
    if (wal()) {  // the cut comes with the checkpoint that copies the whole log (C7)
      ASSERT_THAT(db->Checkpoint(CheckpointMode::kTruncate).status(), IsOk());
    }
    if (!on) {
      EXPECT_EQ(after.page_count, loaded);
      continue;
    }
    EXPECT_LT(after.page_count, loaded * 3 / 4) << "the freed leaves were at the end";
    EXPECT_THAT(FileSize(fs_, path), IsOkAndHolds(uint64_t{after.page_count} * db->page_size()));
    // It grows again, and a reopen reads it all.
    for (int i = kKeys; i < kKeys + 300; ++i) {
      ASSERT_THAT(db->Put(Key(i), Value(i)), IsOk());
      model[Key(i)] = Value(i);
    }
    ASSERT_THAT(db->Close(), IsOk());
    db = *Db::Open(path, VacuumOptions(on));
    EXPECT_THAT(Read(*db), IsOkAndHolds(model));
  }
}

// Random transactions of puts and deletes: after each, the keys are the model's and the check
// (the freelist, every page, the tree) passes, whatever the freelist's rebuilds did.
TEST_P(AutoVacuumTest, RandomTransactionsKeepTheModelAndTheFreelist) {
  std::unique_ptr<Db> db = *Db::Open(kPath, VacuumOptions(true));
  Model model;
  std::mt19937 rng(7);
  uint32_t shrinks = 0;
  uint32_t last_pages = 0;
  const int rounds = testing::ScaledForSanitizer(120, 40);
  for (int round = 0; round < rounds; ++round) {
    auto w = *db->BeginWrite();
    const int ops = 1 + static_cast<int>(rng() % 300);
    const bool shrinking = rng() % 3 == 0;
    for (int op = 0; op < ops; ++op) {
      const int k = static_cast<int>(rng() % 3000);
      if (shrinking || rng() % 4 == 0) {
        // Deletes of a run at the top of the key space free the newest leaves.
        const int top = 3000 - static_cast<int>(rng() % 400);
        ASSERT_THAT(w->Delete(Key(shrinking ? top : k)).status(), IsOk());
        model.erase(Key(shrinking ? top : k));
      } else {
        const std::string v = Value(static_cast<int>(rng() % 1000));
        ASSERT_THAT(w->Put(Key(k), v), IsOk());
        model[Key(k)] = v;
      }
    }
    ASSERT_THAT(w->Commit(), IsOk());
    const uint32_t pages = db->Stats().page_count;
    if (pages < last_pages) ++shrinks;
    last_pages = pages;
    ASSERT_THAT(Read(*db), IsOkAndHolds(model)) << "round " << round;
  }
  EXPECT_GT(shrinks, 0u);
  ASSERT_THAT(db->Close(), IsOk());
  db = *Db::Open(kPath, VacuumOptions(true));
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AutoVacuumTest,
    ::testing::Combine(::testing::Values(JournalMode::kDelete, JournalMode::kPersist,
                                         JournalMode::kMemory, JournalMode::kWal,
                                         JournalMode::kWal2),
                       ::testing::Values(512u, 4096u)),
    [](const auto& info) {
      return absl::StrCat(JournalModeName(std::get<0>(info.param)), "_",
                          std::get<1>(info.param));
    });

// A power loss at every mutation of a commit that releases a free tail (its transaction
// spills): the database is the one before or the one after, whole, and after once Commit
// returned OK.
struct VacuumOutcome {
  bool commit_ok = false;
  absl::StatusOr<Model> contents;
};

VacuumOutcome DeleteTailThenPowerLoss(JournalMode mode, int64_t crash_after, uint64_t seed,
                                      Model* before, Model* after) {
  vfs::MemFileSystem base;
  base.MakeDirectoryForTesting("/d");
  vfs::FaultInjectingFileSystem fs(&base);
  Options o;
  o.file_system = &fs;
  o.journal_mode = mode;
  o.page_size = 512;  // several freelist trunks
  o.cache_pages = 16;
  o.auto_vacuum = true;
  o.wal_grow_bytes = 64 << 10;
  VacuumOutcome out;
  {
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    before->clear();
    auto w = *db->BeginWrite();
    for (int i = 0; i < 600; ++i) {
      JKV_CHECK(w->Put(Key(i), Value(i)).ok());
      (*before)[Key(i)] = Value(i);
    }
    JKV_CHECK(w->Commit().ok());
    // Free pages in the middle first: the freelist has trunks when the tail goes, and its
    // rebuild rewrites them (their originals must be journaled).
    w = *db->BeginWrite();
    for (int i = 100; i < 250; ++i) {
      JKV_CHECK(w->Delete(Key(i)).ok());
      before->erase(Key(i));
    }
    JKV_CHECK(w->Commit().ok());
    w.reset();
    JKV_CHECK(db->Stats().freelist_pages > 0);
    *after = *before;
    if (crash_after >= 0) fs.CrashAfterMutations(crash_after);
    absl::StatusOr<std::unique_ptr<WriteTransaction>> d = db->BeginWrite();
    absl::Status s = d.status();
    for (int i = 300; s.ok() && i < 600; ++i) {
      s = (*d)->Delete(Key(i)).status();
      after->erase(Key(i));
    }
    if (s.ok()) s = (*d)->Commit();
    out.commit_ok = s.ok();
    if (d.ok()) d->reset();
    db.reset();
  }
  JKV_CHECK(fs.SimulatePowerLoss(seed).ok());
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
  out.contents = db.ok() ? Read(**db) : absl::StatusOr<Model>(db.status());
  return out;
}

class AutoVacuumCrashTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(AutoVacuumCrashTest, APowerLossAtEveryMutationLeavesBeforeOrAfter) {
  const JournalMode mode = GetParam();
  const int stride = SweepStride();
  int completed = 0;
  Model before, after;
  for (int64_t n = static_cast<int>(mode) % stride;; n += stride) {
    VacuumOutcome o = DeleteTailThenPowerLoss(mode, n, n, &before, &after);
    ASSERT_THAT(o.contents.status(), IsOk()) << "crash after " << n << " mutations";
    if (o.commit_ok) {
      EXPECT_TRUE(*o.contents == after) << "crash after " << n << ": a commit was lost";
      if (++completed == 2) {
        std::printf("%s: %lld crash points\n", std::string(JournalModeName(mode)).c_str(),
                    static_cast<long long>(n - 1));
        break;
      }
    } else {
      EXPECT_TRUE(*o.contents == before || *o.contents == after)
          << "crash after " << n << ": neither the state before nor after";
    }
    ASSERT_LT(n, 20000) << "the commit never completed";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, AutoVacuumCrashTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

}  // namespace
}  // namespace journalkv
