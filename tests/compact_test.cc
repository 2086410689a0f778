// Db::Compact (engine/compact.cc): in every journal mode the database is rewritten with no
// free pages and the file cut to its new size, with the same keys; WAL readers keep their
// snapshots through it (the file is cut only once none needs the old pages, wal/checkpoint_copy.h
// C7); other connections, and a writer on one, see the compacted database. The power-loss
// sweeps and auto_vacuum are in compact_sweep_test.cc.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compact_testing.h"
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
                                           JournalMode::kWal2, JournalMode::kAtomic),
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

// Every key deleted: the compacted database is the header page alone, and it takes new keys.
TEST(CompactTest, AnEmptyTreeCompactsToTheHeaderPage) {
  for (const JournalMode mode : {JournalMode::kDelete, JournalMode::kWal}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::MemFileSystem fs;
    fs.MakeDirectoryForTesting("/d");
    Options o;
    o.file_system = &fs;
    o.journal_mode = mode;
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    Model model = Fill(*db);
    {
      auto w = *db->BeginWrite();
      for (const auto& [k, v] : model) ASSERT_THAT(w->Delete(k).status(), IsOk());
      ASSERT_THAT(w->Commit(), IsOk());
    }
    model.clear();
    absl::StatusOr<CompactResult> r = db->Compact();
    ASSERT_THAT(r.status(), IsOk());
    EXPECT_EQ(r->pages, 1u);
    EXPECT_EQ(r->bytes, uint64_t{db->page_size()});
    EXPECT_THAT(Read(*db), IsOkAndHolds(model));
    ASSERT_THAT(db->Put("again", "1"), IsOk());
    model["again"] = "1";
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

}  // namespace
}  // namespace journalkv
