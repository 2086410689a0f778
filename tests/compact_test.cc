// Db::Compact (engine/compact.cc): in every journal mode the database is rewritten with no
// free pages and the file cut to its new size, with the same keys; WAL readers keep their
// snapshots through it (the file is cut only once none needs the old pages, checkpointer.h
// C7); other connections see the compacted database; and a power loss at any write of a
// compaction leaves every key, the file either as it was or compacted.
#include <atomic>
#include <cstdio>
#include <thread>
#include <map>
#include <random>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr char kPath[] = "/d/x.db";

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i) { return absl::StrCat("value-", i, std::string(i % 300, 'v')); }

using Model = std::map<std::string, std::string>;

// The crash sweeps' step between crash points: every mutation, every third under a sanitizer,
// every tenth under TSan (which runs this test for its threads, not for its sweeps).
int SweepStride() {
  if (testing::UnderThreadSanitizer()) return 10;
  return testing::ScaledForSanitizer(1, 3);
}

absl::StatusOr<Model> Read(Db& db) {
  JKV_ASSIGN_OR_RETURN(CheckResult check, db.Check());
  if (!check.ok()) return absl::DataLossError(check.problems.front());
  Model out;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  std::unique_ptr<Iterator> it = txn->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    JKV_ASSIGN_OR_RETURN(std::string value, it->value());
    out[std::string(it->key())] = std::move(value);
  }
  JKV_RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<uint64_t> FileSize(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  return f->Size();
}

// 2,000 keys, then three quarters of them (a run in the middle) deleted: many free pages.
constexpr int kKeys = 2000;
constexpr int kFirstDeleted = 200;
constexpr int kLastDeleted = 1700;

Model Fill(Db& db) {
  Model model;
  auto w = *db.BeginWrite();
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_THAT(w->Put(Key(i), Value(i)), IsOk());
    model[Key(i)] = Value(i);
  }
  EXPECT_THAT(w->Commit(), IsOk());
  w = *db.BeginWrite();
  for (int i = kFirstDeleted; i < kLastDeleted; ++i) {
    EXPECT_THAT(w->Delete(Key(i)), IsOk());
    model.erase(Key(i));
  }
  EXPECT_THAT(w->Commit(), IsOk());
  return model;
}

class CompactModeTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override { fs_.MakeDirectoryForTesting("/d"); }
  Options ModeOptions() {
    Options o;
    o.file_system = &fs_;
    o.journal_mode = GetParam();
    o.cache_pages = 16;  // the rewrite spills, as a large one does
    return o;
  }
  bool wal() const { return GetParam() == JournalMode::kWal || GetParam() == JournalMode::kWal2; }
  vfs::MemFileSystem fs_;
};

TEST_P(CompactModeTest, RewritesWithNoFreePagesAndCutsTheFile) {
  std::unique_ptr<Db> db = *Db::Open(kPath, ModeOptions());
  Model model = Fill(*db);
  if (wal()) {
    ASSERT_THAT(db->Checkpoint(CheckpointMode::kTruncate).status(), IsOk());
  }
  const DbStats before = db->Stats();
  ASSERT_GT(before.freelist_pages, 50u);

  absl::StatusOr<CompactResult> r = db->Compact();
  ASSERT_THAT(r.status(), IsOk());
  EXPECT_EQ(r->pages_before, before.page_count);
  EXPECT_EQ(r->free_pages_before, before.freelist_pages);
  EXPECT_EQ(r->keys, model.size());
  EXPECT_LT(r->pages, r->pages_before - before.freelist_pages / 2);
  EXPECT_EQ(r->bytes, uint64_t{r->pages} * db->page_size()) << "the file is cut to the pages";
  EXPECT_LT(r->bytes, r->bytes_before);
  if (wal()) {
    EXPECT_FALSE(r->checkpoint.blocked);
  }
  EXPECT_THAT(FileSize(fs_, kPath), IsOkAndHolds(r->bytes));
  EXPECT_FALSE(*fs_.Exists(absl::StrCat(kPath, kCompactTempSuffix))) << "the image is removed";

  const DbStats after = db->Stats();
  EXPECT_EQ(after.page_count, r->pages);
  EXPECT_EQ(after.freelist_pages, 0u);
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));

  // Nothing left to compact: the database is left as it is.
  absl::StatusOr<CompactResult> again = db->Compact();
  ASSERT_THAT(again.status(), IsOk());
  EXPECT_EQ(again->keys, 0u);
  EXPECT_EQ(again->pages, r->pages);

  // Writes go on after it, growing the file again, and a reopen finds them all.
  for (int i = 1000; i < 1300; ++i) {
    ASSERT_THAT(db->Put(Key(i), Value(i)), IsOk());
    model[Key(i)] = Value(i);
  }
  ASSERT_THAT(db->Close(), IsOk());
  db = *Db::Open(kPath, ModeOptions());
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));
}

// Another connection, open throughout, reads the compacted database (rollback modes: its
// cache is revalidated by the change counter; WAL: its snapshots come from the index).
TEST_P(CompactModeTest, AnotherConnectionSeesTheCompactedDatabase) {
  std::unique_ptr<Db> a = *Db::Open(kPath, ModeOptions());
  std::unique_ptr<Db> b = *Db::Open(kPath, ModeOptions());
  const Model model = Fill(*a);
  ASSERT_THAT(Read(*b), IsOkAndHolds(model));  // b's cache holds the old pages
  absl::StatusOr<CompactResult> r = a->Compact();
  ASSERT_THAT(r.status(), IsOk());
  ASSERT_LT(r->pages, r->pages_before);
  EXPECT_THAT(Read(*b), IsOkAndHolds(model));
  EXPECT_EQ(b->Stats().page_count, r->pages);
  EXPECT_THAT(b->Put(Key(7777), "after"), IsOk());
  EXPECT_THAT(a->Get(Key(7777)), IsOkAndHolds(::testing::Optional(std::string("after"))));
}

// A writer on another connection commits throughout: it waits while a compaction holds the
// write lock, and every commit of it, before, between and after the compactions, is there.
TEST_P(CompactModeTest, AWriterOnAnotherConnectionGoesOnAroundIt) {
  std::unique_ptr<Db> db = *Db::Open(kPath, ModeOptions());
  Model model = Fill(*db);
  Options wo = ModeOptions();
  wo.busy_timeout = absl::Seconds(30);
  std::unique_ptr<Db> writer = *Db::Open(kPath, wo);
  constexpr int kWrites = 300;
  std::atomic<int> written{0};
  absl::Status writer_status;
  std::thread t([&] {
    for (int i = 0; i < kWrites && writer_status.ok(); ++i) {
      writer_status = writer->Put(Key(5000 + i), Value(i));
      written.store(i + 1);
    }
  });
  int compactions = 0;
  while (compactions < 3 || (written.load() < kWrites && writer_status.ok())) {
    absl::StatusOr<CompactResult> r = db->Compact();
    ASSERT_THAT(r.status(), IsOk());
    ++compactions;
    // Some free pages again for the next one: a few of the writer's keys deleted.
    auto w = *db->BeginWrite();
    for (int i = 0; i < 20; ++i) ASSERT_THAT(w->Put(Key(9000 + i), Value(299)), IsOk());
    for (int i = 0; i < 20; ++i) ASSERT_THAT(w->Delete(Key(9000 + i)).status(), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
  }
  t.join();
  ASSERT_THAT(writer_status, IsOk());
  EXPECT_GE(compactions, 3);
  for (int i = 0; i < kWrites; ++i) model[Key(5000 + i)] = Value(i);
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));
  EXPECT_THAT(Read(*writer), IsOkAndHolds(model));
}

INSTANTIATE_TEST_SUITE_P(Modes, CompactModeTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory,
                                           JournalMode::kOff, JournalMode::kWal,
                                           JournalMode::kWal2),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

// WAL and WAL2: a snapshot taken before the compaction reads the old pages, including those
// past the new end, so the file is not cut while it is open (C7); the checkpoint after it
// ends cuts it.
class CompactWalTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(CompactWalTest, AnOlderSnapshotKeepsThePagesPastTheNewEnd) {
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  Options o;
  o.file_system = &fs;
  o.journal_mode = GetParam();
  o.busy_timeout = absl::Milliseconds(200);
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  const Model model = Fill(*db);
  // The old snapshot has every key: its pages are spread over the whole file.
  std::unique_ptr<Db> reader_db = *Db::Open(kPath, o);
  {
    auto w = *db->BeginWrite();
    for (int i = kFirstDeleted; i < kLastDeleted; ++i) ASSERT_THAT(w->Put(Key(i), Value(i)), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
    w = *db->BeginWrite();
    for (int i = kFirstDeleted; i < kLastDeleted; ++i) ASSERT_THAT(w->Delete(Key(i)), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
  }
  ASSERT_THAT(db->Checkpoint(CheckpointMode::kTruncate).status(), IsOk());
  const uint64_t full_size = *FileSize(fs, kPath);
  std::unique_ptr<ReadTransaction> old_snapshot = *reader_db->BeginRead();

  absl::StatusOr<CompactResult> r = db->Compact();
  ASSERT_THAT(r.status(), IsOk());
  ASSERT_LT(r->pages, r->pages_before);
  EXPECT_TRUE(r->checkpoint.blocked) << "the older snapshot holds the checkpoint";
  EXPECT_EQ(r->bytes, full_size) << "cut under a snapshot that reads past the new end";
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));

  // The old snapshot reads every one of its keys, from the database file.
  Model seen;
  std::unique_ptr<Iterator> it = old_snapshot->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) seen[std::string(it->key())] = *it->value();
  ASSERT_THAT(it->status(), IsOk());
  it.reset();
  EXPECT_EQ(seen, model);
  old_snapshot.reset();

  ASSERT_THAT(db->Checkpoint(CheckpointMode::kPassive).status(), IsOk());
  EXPECT_THAT(FileSize(fs, kPath), IsOkAndHolds(uint64_t{r->pages} * db->page_size()));
  EXPECT_THAT(Read(*reader_db), IsOkAndHolds(model));
}

INSTANTIATE_TEST_SUITE_P(Modes, CompactWalTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

// Values in overflow chains: the image's overflow pages replace the database's like any page.
TEST(CompactTest, OverflowValuesSurvive) {
  for (const JournalMode mode : {JournalMode::kDelete, JournalMode::kWal}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::MemFileSystem fs;
    fs.MakeDirectoryForTesting("/d");
    Options o;
    o.file_system = &fs;
    o.journal_mode = mode;
    o.cache_pages = 16;
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    Model model;
    for (int i = 0; i < 60; ++i) {
      const std::string v(1000 + 700 * i, static_cast<char>('a' + i % 26));  // up to 43 KB
      ASSERT_THAT(db->Put(Key(i), v), IsOk());
      model[Key(i)] = v;
    }
    for (int i = 0; i < 60; i += 2) {
      ASSERT_THAT(db->Delete(Key(i)).status(), IsOk());
      model.erase(Key(i));
    }
    absl::StatusOr<CompactResult> r = db->Compact();
    ASSERT_THAT(r.status(), IsOk());
    EXPECT_LT(r->pages, r->pages_before * 2 / 3);
    EXPECT_EQ(db->Stats().freelist_pages, 0u);
    EXPECT_THAT(Read(*db), IsOkAndHolds(model));
    ASSERT_THAT(db->Close(), IsOk());
    db = *Db::Open(kPath, o);
    EXPECT_THAT(Read(*db), IsOkAndHolds(model));
  }
}

TEST(CompactTest, ReadOnlyConnectionsCannotCompact) {
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  Options o;
  o.file_system = &fs;
  { Fill(**Db::Open(kPath, o)); }
  o.read_only = true;
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  EXPECT_THAT(db->Compact().status(), StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
}

// A leftover image (a Compact a crash interrupted) is removed and built again.
TEST(CompactTest, ALeftoverImageIsReplaced) {
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  Options o;
  o.file_system = &fs;
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  const Model model = Fill(*db);
  {
    auto f = *fs.Open(absl::StrCat(kPath, kCompactTempSuffix),
                      {vfs::OpenMode::kCreate, vfs::FileKind::kOther});
    ASSERT_THAT(f->Write(0, std::vector<uint8_t>(5000, 0x5a)), IsOk());
  }
  ASSERT_THAT(db->Compact().status(), IsOk());
  EXPECT_THAT(Read(*db), IsOkAndHolds(model));
  EXPECT_FALSE(*fs.Exists(absl::StrCat(kPath, kCompactTempSuffix)));
}

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
