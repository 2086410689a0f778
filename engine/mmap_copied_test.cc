// Copied snapshots (wal/wal_types.h O9) through the engine on the real file system, WAL with the
// map on: a read transaction begun when every frame of its snapshot is in the database file
// (the backfill at its mx) takes its pages from the map without looking them up in the
// wal-index; one begun with frames not yet copied reads those from the log; a copied reader
// keeps its snapshot while a writer commits and a checkpointer runs past it (paused at the hook
// point between its pin and its backfill read, and after); two readers of one snapshot
// identity, one copied and one not, share the hot-page table and both read their snapshot.
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/hook_gate.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

constexpr int kKeys = 3000;

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i, int round) {
  return absl::StrCat("value-", round, "-", i, std::string(60, 'v'));
}

using testing::HookGate;

void GateHook(const char* point) { HookGate::Get().At(point); }

class MmapCopiedTest : public ::testing::Test {
 protected:
  Options Opts() const {
    Options o;
    o.journal_mode = JournalMode::kWal;
    o.sync = SyncLevel::kOff;
    o.cache_pages = 16;  // every leaf comes from the file or the log
    o.mmap_size = 64 << 20;
    o.checkpoint_policy = "manual";
    return o;
  }
  std::unique_ptr<Db> MustOpen() {
    auto db = Db::Open(path_, Opts());
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Round `round`'s value for every key, in one commit (no checkpoint).
  void Fill(Db* db, int round) {
    auto w = db->BeginWrite();
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < kKeys; ++i) JKV_ASSERT_OK((*w)->Put(Key(i), Value(i, round)));
    JKV_ASSERT_OK((*w)->Commit());
  }
  // Every key, once, as `txn` sees it, against round `round`.
  static void ExpectRound(ReadTransaction& txn, int round) {
    for (int i = 0; i < kKeys; i += 7) {
      auto v = txn.Get(Key(i));
      ASSERT_TRUE(v.ok()) << v.status();
      ASSERT_EQ(v->value_or("<none>"), Value(i, round)) << Key(i);
    }
  }
  // Reads every seventh key in one read transaction; the pages it took in place from the map
  // (counted when the transaction ends).
  uint64_t ReadAll(Db* db, int round) {
    const uint64_t before = db->Stats().map_pages;
    {
      auto txn = db->BeginRead();
      EXPECT_TRUE(txn.ok()) << txn.status();
      if (txn.ok()) ExpectRound(**txn, round);
    }
    return db->Stats().map_pages - before;
  }

  vfs::ScopedTempDir dir_;
  std::string path_ = absl::StrCat(dir_.path(), "/c.db");
};

// The cut itself: after a PASSIVE checkpoint every frame is in the file and the log is kept.
// A reader's leaves come from the map (without O9 each is looked up, found in the log and read
// from it: no page from the map, as every page of this database was written to the log).
TEST_F(MmapCopiedTest, ACopiedSnapshotReadsItsPagesFromTheMap) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  EXPECT_EQ(ReadAll(reader.get(), 1), 0u);  // nothing copied yet: every page from the log
  auto r = writer->Checkpoint(CheckpointMode::kPassive);
  JKV_ASSERT_OK(r.status());
  ASSERT_FALSE(r->blocked);
  EXPECT_GT(reader->Stats().log_frames, 0u) << "the passive checkpoint restarted the log";
  EXPECT_GT(ReadAll(reader.get(), 1), uint64_t{kKeys / 7 / 2});
}

// O9's condition: frames not yet copied (the backfill below mx) are read from the log. Fails
// if a snapshot with the backfill below its mx is taken as copied (it would read round 1 from
// the file).
TEST_F(MmapCopiedTest, FramesNotYetCopiedAreReadFromTheLog) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  JKV_ASSERT_OK(writer->Checkpoint(CheckpointMode::kPassive).status());
  ReadAll(reader.get(), 1);
  Fill(writer.get(), 2);  // no checkpoint: round 2 is in the log only
  ReadAll(reader.get(), 2);
  JKV_ASSERT_OK(writer->Put(Key(0), "one more"));  // one page newer than the file's
  auto v = reader->Get(Key(0));
  JKV_ASSERT_OK(v.status());
  EXPECT_EQ(v->value_or("<none>"), "one more");
}

// A copied reader keeps its snapshot while the writer commits past it and a checkpointer runs:
// paused between its pin and its backfill read (hook "begin_read:mark_copied") while round 2 is
// committed and checkpointed, then reading; and again with the writer and checkpointer moving
// on after it began. A checkpoint that copied past its pin, or a later generation's copy over
// the file's pages, would show it round 2.
TEST_F(MmapCopiedTest, ACopiedReaderKeepsItsSnapshotWhileTheWriterAndCheckpointerMoveOn) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  JKV_ASSERT_OK(writer->Checkpoint(CheckpointMode::kPassive).status());
  HookGate::Get().Arm("begin_read:mark_copied");
  wal::SetWalHookForTesting(&GateHook);
  std::unique_ptr<ReadTransaction> paused;
  std::thread begin([&] {
    auto txn = reader->BeginRead();
    EXPECT_TRUE(txn.ok()) << txn.status();
    if (txn.ok()) paused = std::move(*txn);
  });
  const bool reached = HookGate::Get().WaitUntilReached();
  if (reached) {
    Fill(writer.get(), 2);
    JKV_EXPECT_OK(writer->Checkpoint(CheckpointMode::kPassive).status());
  }
  HookGate::Get().Release();
  begin.join();
  wal::SetWalHookForTesting(nullptr);
  ASSERT_TRUE(reached) << "no read reached begin_read:mark_copied";
  ASSERT_NE(paused, nullptr);
  ExpectRound(*paused, 1);
  paused.reset();

  // Begun copied at round 2 (a checkpoint copied it all), then round 3 committed, a passive
  // checkpoint, round 4 (the log restarts under it: W7) and a checkpoint of that generation.
  auto r = writer->Checkpoint(CheckpointMode::kPassive);
  JKV_ASSERT_OK(r.status());
  auto txn = reader->BeginRead();
  ASSERT_TRUE(txn.ok()) << txn.status();
  // Pages checked in the map (counted at once; the checkpoint moved the epoch, O4): copied.
  const uint64_t checks_before = reader->Stats().map_checks;
  ExpectRound(**txn, 2);
  EXPECT_GT(reader->Stats().map_checks, checks_before);
  Fill(writer.get(), 3);
  JKV_ASSERT_OK(writer->Checkpoint(CheckpointMode::kPassive).status());
  ExpectRound(**txn, 2);
  Fill(writer.get(), 4);
  JKV_ASSERT_OK(writer->Checkpoint(CheckpointMode::kPassive).status());
  ExpectRound(**txn, 2);
  txn->reset();
  ReadAll(reader.get(), 4);
}

// Two readers of one snapshot identity share its hot-page table (pager/hot_pages.h H1): one
// begun before the copy (its pages from the log), one after (copied: leaves from the map,
// entered in the table at their map address, O8). Each reads its snapshot through the other's
// entries.
TEST_F(MmapCopiedTest, ACopiedAndAnUncopiedReaderOfOneIdentityShareTheHotTable) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  auto before_copy = reader->BeginRead();
  ASSERT_TRUE(before_copy.ok()) << before_copy.status();
  ExpectRound(**before_copy, 1);
  auto r = writer->Checkpoint(CheckpointMode::kPassive);  // its pin is at mx: all is copied
  JKV_ASSERT_OK(r.status());
  ASSERT_FALSE(r->blocked);
  auto after_copy = reader->BeginRead();
  ASSERT_TRUE(after_copy.ok()) << after_copy.status();
  const uint64_t checks_before = reader->Stats().map_checks;  // counted at once
  ExpectRound(**after_copy, 1);
  EXPECT_GT(reader->Stats().map_checks, checks_before);
  ExpectRound(**before_copy, 1);
  Fill(writer.get(), 2);
  ExpectRound(**before_copy, 1);
  ExpectRound(**after_copy, 1);
}

}  // namespace
}  // namespace journalkv
