// The engine's uses of the bottom-up builder (btree/builder.h; WriteTransaction::Put's
// comment): a transaction that starts with ascending Puts into an empty tree, a sorted
// WriteBatch, Compact and Backup with compaction take the built path (DbStats::built_pairs
// counts it) and give the same content as the ordinary one; anything else ends the build and
// the transaction goes on through the tree.
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using Model = std::map<std::string, std::string>;

std::string Key(int i) { return absl::StrFormat("key%07d", i); }
std::string Value(int i) { return std::string(10 + i % 90, static_cast<char>('a' + i % 26)); }

Options MemOptions(vfs::FileSystem* fs, JournalMode mode = JournalMode::kDelete) {
  Options o;
  o.file_system = fs;
  o.journal_mode = mode;
  return o;
}

std::unique_ptr<Db> MustOpen(vfs::FileSystem* fs, const std::string& path,
                             JournalMode mode = JournalMode::kDelete) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, MemOptions(fs, mode));
  EXPECT_THAT(db.status(), ::journalkv::testing::IsOk());
  return db.ok() ? *std::move(db) : nullptr;
}

// Every key and value of `db` equal to `model`, and the structure check clean.
void ExpectContent(Db& db, const Model& model) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db.BeginRead());
  std::unique_ptr<Iterator> it = r->NewIterator();
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, model.end());
    ASSERT_EQ(it->key(), m->first);
    JKV_ASSERT_OK_AND_ASSIGN(absl::string_view v, it->value_view());
    ASSERT_EQ(v, m->second);
  }
  JKV_ASSERT_OK(it->status());
  ASSERT_EQ(m, model.end());
  it.reset();
  r.reset();
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db.Check());
  EXPECT_TRUE(check.problems.empty()) << check.problems.front();
  EXPECT_EQ(check.keys, model.size());
}

TEST(BuiltPathTest, SortedWriteBatchIntoAnEmptyTreeIsBuilt) {
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kWal}) {
    vfs::MemFileSystem fs;
    std::unique_ptr<Db> db = MustOpen(&fs, "/x.db", mode);
    WriteBatch batch;
    Model model;
    for (int i = 0; i < 5000; ++i) {
      batch.Put(Key(i), Value(i));
      model[Key(i)] = Value(i);
    }
    JKV_ASSERT_OK(db->Write(batch));
    EXPECT_EQ(db->Stats().built_pairs, 5000u);
    ExpectContent(*db, model);
    // The built tree takes ordinary writes; a second batch is not built (the tree is not
    // empty).
    WriteBatch more;
    for (int i = 0; i < 5000; i += 2) {
      more.Delete(Key(i));
      model.erase(Key(i));
    }
    more.Put(Key(9999999), "last");
    model[Key(9999999)] = "last";
    JKV_ASSERT_OK(db->Write(more));
    EXPECT_EQ(db->Stats().built_pairs, 5000u);
    ExpectContent(*db, model);
  }
}

TEST(BuiltPathTest, AnUnsortedBatchBuildsItsSortedPrefixThenGoesThroughTheTree) {
  vfs::MemFileSystem fs;
  std::unique_ptr<Db> db = MustOpen(&fs, "/x.db");
  WriteBatch batch;
  Model model;
  for (int i = 0; i < 3000; ++i) batch.Put(Key(i), Value(i));
  batch.Put(Key(1500), "again");  // out of order: ends the build
  for (int i = 3000; i < 4000; ++i) batch.Put(Key(i), Value(i));
  batch.Delete(Key(7));
  for (int i = 0; i < 4000; ++i) model[Key(i)] = Value(i);
  model[Key(1500)] = "again";
  model.erase(Key(7));
  JKV_ASSERT_OK(db->Write(batch));
  EXPECT_EQ(db->Stats().built_pairs, 3000u);
  ExpectContent(*db, model);
}

TEST(BuiltPathTest, ReadsInTheMiddleOfABuildSeeEverythingPut) {
  vfs::MemFileSystem fs;
  std::unique_ptr<Db> db = MustOpen(&fs, "/x.db");
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
  for (int i = 0; i < 2000; ++i) JKV_ASSERT_OK(w->Put(Key(i), Value(i)));
  EXPECT_THAT(w->Get(Key(1234)), ::journalkv::testing::IsOkAndHolds(Value(1234)));
  EXPECT_THAT(w->Count(), ::journalkv::testing::IsOkAndHolds(2000u));
  for (int i = 2000; i < 2500; ++i) JKV_ASSERT_OK(w->Put(Key(i), Value(i)));  // through the tree
  JKV_ASSERT_OK(w->Commit());
  w.reset();
  EXPECT_EQ(db->Stats().built_pairs, 2000u);
  Model model;
  for (int i = 0; i < 2500; ++i) model[Key(i)] = Value(i);
  ExpectContent(*db, model);
}

TEST(BuiltPathTest, ARolledBackBuildLeavesNothing) {
  vfs::MemFileSystem fs;
  std::unique_ptr<Db> db = MustOpen(&fs, "/x.db");
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
    for (int i = 0; i < 3000; ++i) JKV_ASSERT_OK(w->Put(Key(i), Value(i)));
    JKV_ASSERT_OK(w->Rollback());
  }
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
    for (int i = 0; i < 3000; ++i) JKV_ASSERT_OK(w->Put(Key(i), Value(i)));
  }  // destroyed without Commit
  EXPECT_EQ(db->Stats().built_pairs, 0u);
  ExpectContent(*db, {});
}

TEST(BuiltPathTest, CompactAndBackupWithCompactionAreBuilt) {
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kWal}) {
    vfs::MemFileSystem fs;
    std::unique_ptr<Db> db = MustOpen(&fs, "/x.db", mode);
    Model model;
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
      // Descending: the first Put starts a build, the second ends it; the rest go through the
      // tree, as before the builder.
      for (int i = 19999; i >= 0; --i) JKV_ASSERT_OK(w->Put(Key(i), Value(i)));
      JKV_ASSERT_OK(w->Commit());
    }
    EXPECT_EQ(db->Stats().built_pairs, 1u);
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
      for (int i = 0; i < 20000; i += 2) JKV_ASSERT_OK(w->Delete(Key(i)).status());
      JKV_ASSERT_OK(w->Commit());
    }
    for (int i = 1; i < 20000; i += 2) model[Key(i)] = Value(i);
    JKV_ASSERT_OK_AND_ASSIGN(BackupResult backup, db->Backup("/copy.db", {.compact = true}));
    EXPECT_EQ(db->Stats().built_pairs, 1u + 10000u);
    JKV_ASSERT_OK_AND_ASSIGN(CompactResult r, db->Compact());
    EXPECT_EQ(db->Stats().built_pairs, 1u + 20000u);
    EXPECT_EQ(r.keys, 10000u);
    EXPECT_LT(r.pages, r.pages_before / 2 + 10);
    EXPECT_EQ(backup.pages, r.pages);
    ExpectContent(*db, model);
    std::unique_ptr<Db> copy = MustOpen(&fs, "/copy.db", mode);
    ExpectContent(*copy, model);
  }
}

// The example: 20,000 pairs loaded, every other one deleted. The estimate of what a
// compaction gives back is within 10% of what Compact then gave back (it was 4096 bytes, the
// free pages only, before the estimate counted the half-empty leaves).
TEST(BuiltPathTest, ReclaimableBytesEstimatesWhatCompactGivesBack) {
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kWal}) {
    vfs::MemFileSystem fs;
    std::unique_ptr<Db> db = MustOpen(&fs, "/x.db", mode);
    for (int i = 0; i < 20000; ++i) JKV_ASSERT_OK(db->Put(Key(i), Value(i)));
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
      for (int i = 0; i < 20000; i += 2) JKV_ASSERT_OK(w->Delete(Key(i)).status());
      JKV_ASSERT_OK(w->Commit());
    }
    if (mode == JournalMode::kWal) {
      JKV_ASSERT_OK(db->Checkpoint(CheckpointMode::kTruncate).status());
    }
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t estimate, db->EstimateReclaimableBytes());
    JKV_ASSERT_OK_AND_ASSIGN(CompactResult r, db->Compact());
    const double saved = static_cast<double>(r.bytes_before - r.bytes);
    EXPECT_GT(saved, 0.4 * static_cast<double>(r.bytes_before));  // half-empty leaves packed
    EXPECT_NEAR(static_cast<double>(estimate), saved, 0.1 * saved)
        << "pages " << r.pages_before << " -> " << r.pages;
    // Compacted: nothing left to give back.
    EXPECT_THAT(db->EstimateReclaimableBytes(), ::journalkv::testing::IsOkAndHolds(0u));
  }
}

}  // namespace
}  // namespace journalkv
