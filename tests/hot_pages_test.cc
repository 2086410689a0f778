// The pages a WAL reader keeps at hand between read transactions (pager/hot_pages.h) belong to
// one snapshot identity. These tests change the tree's interior pages and leaves between reads
// and check that no read sees another identity's pages: after commits of the same handle and
// of another connection, for a reader still at an older snapshot, after a value changed in its
// leaf (the interior pages unchanged), with a table too small for the tree, and across a log
// restart that leaves the new generation with as many frames as the old one had (an identity
// without the generation would take the old root there). WAL and WAL2; MemFileSystem.
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "base/hook_gate.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr char kPath[] = "/x.db";
// Even keys 0..2*kKeys-2 at first, odd ones added later: with 100-byte values about 30 pairs
// fill a 4 KiB leaf, so the tree has an interior root over tens of leaves.
constexpr int kKeys = 1500;

std::string Key(int i) { return absl::StrFormat("key%06d", i); }
std::string Value(int i, absl::string_view tag) {
  return absl::StrCat(tag, i, std::string(100, '.'));
}

class HotPagesTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Base() {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = &fs_;
    o.checkpoint_policy = "manual";
    return o;
  }
  std::unique_ptr<Db> Open() {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, Base());
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Puts keys first, first+step, ... below 2*kKeys with Value(i, tag) in one transaction.
  static void PutKeys(Db* db, int first, int step, absl::string_view tag) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db->BeginWrite();
    ASSERT_THAT(w, IsOk());
    for (int i = first; i < 2 * kKeys; i += step) {
      ASSERT_THAT((*w)->Put(Key(i), Value(i, tag)), IsOk());
    }
    ASSERT_THAT((*w)->Commit(), IsOk());
  }
  // Every key 0..2*kKeys-1 through `get`: even ones hold Value(i, even_tag), odd ones
  // Value(i, odd_tag), or are absent when odd_tag is empty.
  template <typename Get>
  static void ExpectKeys(Get get, absl::string_view even_tag, absl::string_view odd_tag) {
    for (int i = 0; i < 2 * kKeys; ++i) {
      absl::StatusOr<std::optional<std::string>> v = get(Key(i));
      ASSERT_THAT(v, IsOk()) << Key(i);
      const absl::string_view tag = i % 2 == 0 ? even_tag : odd_tag;
      if (tag.empty()) {
        ASSERT_FALSE(v->has_value()) << Key(i);
      } else {
        ASSERT_TRUE(v->has_value()) << Key(i) << " missing";
        ASSERT_EQ(**v, Value(i, tag)) << Key(i);
      }
    }
  }
  static void ExpectDbKeys(Db* db, absl::string_view even_tag, absl::string_view odd_tag) {
    ExpectKeys([db](absl::string_view k) { return db->Get(k); }, even_tag, odd_tag);
    absl::StatusOr<CheckResult> check = db->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_TRUE(check->ok()) << check->problems.front();
    EXPECT_GE(check->depth, 2);  // an interior root over leaves
  }

  vfs::MemFileSystem fs_;
};

// A commit that splits leaves changes the root: the handle's next reads descend through the
// new root, not the one its earlier reads kept.
TEST_P(HotPagesTest, ReadsAfterACommitOfTheSameHandleSeeTheNewInteriorPages) {
  std::unique_ptr<Db> db = Open();
  PutKeys(db.get(), 0, 2, "a");
  ExpectDbKeys(db.get(), "a", "");
  PutKeys(db.get(), 1, 2, "b");
  ExpectDbKeys(db.get(), "a", "b");
}

TEST_P(HotPagesTest, ReadsAfterAnotherConnectionsCommitSeeTheNewInteriorPages) {
  std::unique_ptr<Db> reader = Open();
  std::unique_ptr<Db> writer = Open();
  PutKeys(writer.get(), 0, 2, "a");
  ExpectDbKeys(reader.get(), "a", "");
  PutKeys(writer.get(), 1, 2, "b");
  ExpectDbKeys(reader.get(), "a", "b");
}

// A read transaction begun before the commit keeps reading its own snapshot's tree while
// newer reads of the same handle (which start a new table) read the new one.
TEST_P(HotPagesTest, AnOlderReadKeepsItsOwnInteriorPagesBesideNewerReads) {
  std::unique_ptr<Db> db = Open();
  PutKeys(db.get(), 0, 2, "a");
  absl::StatusOr<std::unique_ptr<ReadTransaction>> old = db->BeginRead();
  ASSERT_THAT(old, IsOk());
  ASSERT_THAT((*old)->Get(Key(0)), IsOk());  // its descent keeps the root
  PutKeys(db.get(), 0, 1, "b");               // every key anew: new leaves, a new root
  ExpectDbKeys(db.get(), "b", "b");
  ExpectKeys([&](absl::string_view k) { return (*old)->Get(k); }, "a", "");
  absl::StatusOr<uint64_t> count = (*old)->Count();
  ASSERT_THAT(count, IsOk());
  EXPECT_EQ(*count, uint64_t{kKeys});
}

// H2: a replaced table lives until the last read transaction handed it ends. Readers of three
// identities, two of them at the middle one, end out of order and read in between (ASan sees
// a table freed too early).
TEST_P(HotPagesTest, EachTableLivesUntilItsLastReaderEnds) {
  std::unique_ptr<Db> db = Open();
  PutKeys(db.get(), 0, 2, "a");
  auto read = [&]() {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = db->BeginRead();
    EXPECT_THAT(r, IsOk());
    return r.ok() ? std::move(*r) : nullptr;
  };
  auto via = [](ReadTransaction* r) { return [r](absl::string_view k) { return r->Get(k); }; };
  std::unique_ptr<ReadTransaction> first = read();
  ExpectKeys(via(first.get()), "a", "");
  PutKeys(db.get(), 1, 2, "b");
  std::unique_ptr<ReadTransaction> second = read();
  std::unique_ptr<ReadTransaction> second_too = read();
  ExpectKeys(via(second.get()), "a", "b");
  PutKeys(db.get(), 0, 1, "c");
  std::unique_ptr<ReadTransaction> third = read();
  ExpectKeys(via(third.get()), "c", "c");
  second.reset();
  ExpectKeys(via(first.get()), "a", "");
  first.reset();
  ExpectKeys(via(second_too.get()), "a", "b");
  second_too.reset();
  ExpectKeys(via(third.get()), "c", "c");
  third.reset();
  ExpectDbKeys(db.get(), "c", "c");
}

// A commit that rewrites one value in its leaf changes no interior page: reads after it, of
// this handle and of another connection, must take the new leaf, not the one earlier reads of
// every key put in the table; a read begun before it keeps the old leaf.
TEST_P(HotPagesTest, AValueChangedInItsLeafIsSeenByLaterReadsOnly) {
  std::unique_ptr<Db> db = Open();
  std::unique_ptr<Db> other = Open();
  PutKeys(db.get(), 0, 2, "a");
  ExpectDbKeys(db.get(), "a", "");
  ExpectDbKeys(other.get(), "a", "");
  absl::StatusOr<std::unique_ptr<ReadTransaction>> old = db->BeginRead();
  ASSERT_THAT(old, IsOk());
  ASSERT_THAT((*old)->Get(Key(10)), IsOk());
  for (const int i : {10, 11 * 2, 2 * kKeys - 2}) {
    ASSERT_THAT(db->Put(Key(i), Value(i, "c")), IsOk());  // same size: the leaf in place
    for (Db* reader : {db.get(), other.get()}) {
      absl::StatusOr<std::optional<std::string>> v = reader->Get(Key(i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value());
      EXPECT_EQ(**v, Value(i, "c")) << Key(i);
    }
    absl::StatusOr<std::optional<std::string>> was = (*old)->Get(Key(i));
    ASSERT_THAT(was, IsOk());
    ASSERT_TRUE(was->has_value());
    EXPECT_EQ(**was, Value(i, "a")) << Key(i);
  }
}

// A cache of 16 pages gives a table of 8 (its least): the tree's pages do not fit, so reads
// take most pages through the cache and the wal-index as before, and every read is right.
TEST_P(HotPagesTest, ATableTooSmallForTheTreeLeavesTheRestToTheCache) {
  Options o = Base();
  o.cache_pages = 16;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
  ASSERT_THAT(db, IsOk());
  PutKeys(db->get(), 0, 2, "a");
  ExpectDbKeys(db->get(), "a", "");
  PutKeys(db->get(), 1, 2, "b");
  ExpectDbKeys(db->get(), "a", "b");
}

void GateHook(const char* point) { ::journalkv::testing::HookGate::Get().At(point); }

// H2: a reader of the old identity, paused just before it adds the old root to its table,
// goes on after a commit has changed the root and a read of the new identity has begun (and
// made the table the handle now hands out). Its add must land in its own table: in the new
// one, the new reads would descend through the old root.
TEST_P(HotPagesTest, AnAddOfAnOlderReadLandsInItsOwnTable) {
  std::unique_ptr<Db> db = Open();
  PutKeys(db.get(), 0, 2, "a");
  ::journalkv::testing::HookGate& gate = ::journalkv::testing::HookGate::Get();
  gate.Arm("read:hot_add");  // H2: a read transaction about to add a page (the root first)
  wal::SetWalHookForTesting(&GateHook);
  std::thread old_reader([&] {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> old = db->BeginRead();
    ASSERT_THAT(old, IsOk());
    EXPECT_THAT((*old)->Get(Key(0)), IsOk());  // pauses at its root's add
    ExpectKeys([&](absl::string_view k) { return (*old)->Get(k); }, "a", "");
  });
  const bool reached = gate.WaitUntilReached();
  if (reached) {
    PutKeys(db.get(), 1, 2, "b");
    absl::StatusOr<std::unique_ptr<ReadTransaction>> fresh = db->BeginRead();
    ASSERT_THAT(fresh, IsOk());
    gate.Release();
    old_reader.join();
    ExpectKeys([&](absl::string_view k) { return (*fresh)->Get(k); }, "a", "b");
  } else {
    gate.Release();
    old_reader.join();
  }
  wal::SetWalHookForTesting(nullptr);
  ASSERT_TRUE(reached) << "the read never reached read:hot_add";
  ExpectDbKeys(db.get(), "a", "b");
}

// WAL: a log restart begins a new generation whose frames count up from 1 again. Two commits
// that each split one leaf (the leaf, the new leaf, the root, the header) leave the log at the
// same last frame in two generations; reads after the second must not take the root kept from
// reads after the first. (WAL2 restarts a log only after switching away from it, so its
// identities differ in the current log as well.)
using HotPagesRestartTest = HotPagesTest;

TEST_P(HotPagesRestartTest, ALogRestartToTheSameLastFrameStartsANewTable) {
  std::unique_ptr<Db> db = Open();
  PutKeys(db.get(), 0, 2, "a");  // in key order: every leaf but the last is full
  absl::StatusOr<CheckpointResult> c = db->Checkpoint(CheckpointMode::kTruncate);
  ASSERT_THAT(c, IsOk());
  ASSERT_FALSE(c->blocked);
  ASSERT_THAT(db->Put(Key(1), Value(1, "b")), IsOk());  // splits the first leaf
  const uint32_t first_frames = db->Stats().log_frames;
  ASSERT_THAT(db->Get(Key(1)), IsOk());  // a read at this identity keeps the root
  c = db->Checkpoint(CheckpointMode::kTruncate);
  ASSERT_THAT(c, IsOk());
  ASSERT_FALSE(c->blocked);
  ASSERT_THAT(db->Put(Key(kKeys + 1), Value(kKeys + 1, "b")), IsOk());  // splits a middle leaf
  ASSERT_EQ(db->Stats().log_frames, first_frames)
      << "the test needs both commits to end their generation at the same frame";
  for (int i = 0; i < 2 * kKeys; ++i) {
    absl::StatusOr<std::optional<std::string>> v = db->Get(Key(i));
    ASSERT_THAT(v, IsOk()) << Key(i);
    const bool present = i % 2 == 0 || i == 1 || i == kKeys + 1;
    ASSERT_EQ(v->has_value(), present) << Key(i);
  }
}

// Issue 43, finding 5. A WAL connection clears its page cache when it sees a generation too far
// from those it holds pages of (the span: 2^29, lowered here; G1, pager/wal_strategy.h), and
// stops handing out its table then (an identity names its generation by 31 bits too). A read
// transaction still using that table keeps it until it ends (H5, hot_pages.h). The clear used
// to free the table under its readers, who then probed and added to freed memory (ASan) or,
// with the next table made at the same address, added images of their older snapshot to the
// newer identity's table, where the newer reads took them.
class HotPagesGenerationTest : public HotPagesTest {
 protected:
  void TearDown() override { pager::SetCacheGenerationSpanForTesting(0); }

  // What `txn` reads for Key(i): its value, "(absent)", or the error.
  static std::string Read(ReadTransaction& txn, int i) {
    absl::StatusOr<std::optional<std::string>> v = txn.Get(Key(i));
    if (!v.ok()) return v.status().ToString();
    return v->value_or("(absent)");
  }
};

// The read transactions of one handle may be on any threads; one thread runs both here, so
// that the order is exact.
TEST_P(HotPagesGenerationTest, ACacheClearLeavesAnOpenReadItsOwnTable) {
  pager::SetCacheGenerationSpanForTesting(1);  // every new generation clears the cache
  std::unique_ptr<Db> db = Open();
  std::unique_ptr<Db> other = Open();
  PutKeys(other.get(), 0, 2, "a");
  // Every frame copied: the next commit restarts the log, into a new generation.
  absl::StatusOr<CheckpointResult> c = other->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(c, IsOk());
  ASSERT_FALSE(c->blocked);
  constexpr int kLast = 2 * kKeys - 2;  // in the last leaf, not Key(0)'s
  absl::StatusOr<std::unique_ptr<ReadTransaction>> old = db->BeginRead();
  ASSERT_THAT(old, IsOk());
  EXPECT_EQ(Read(**old, 0), Value(0, "a"));  // the root and the first leaf go into its table
  const uint64_t restarts = other->Stats().log_restarts;
  ASSERT_THAT(other->Put(Key(kLast), Value(kLast, "b")), IsOk());
  ASSERT_EQ(other->Stats().log_restarts, restarts + 1) << "the test needs a new generation";
  // A read at the new generation: the cache is cleared and a new table handed out.
  absl::StatusOr<std::unique_ptr<ReadTransaction>> fresh = db->BeginRead();
  ASSERT_THAT(fresh, IsOk());
  // The old read meets the last leaf at its own snapshot, into its own table; the new read
  // must not find that image in its table.
  EXPECT_EQ(Read(**old, kLast), Value(kLast, "a"));
  EXPECT_EQ(Read(**fresh, kLast), Value(kLast, "b"));
  EXPECT_EQ(Read(**old, 0), Value(0, "a"));
  old->reset();
  EXPECT_EQ(Read(**fresh, 0), Value(0, "a"));
  fresh->reset();
  EXPECT_EQ(Read(**db->BeginRead(), kLast), Value(kLast, "b"));
}

// A commit notes its published generation after its flush, without the handle's mutex held
// in between: reads of other threads may have noted a later generation meanwhile (and
// cleared the cache for it). The commit's older generation is among those the cache holds
// pages of, or next to them: it clears nothing and leaves the reads' table alone.
TEST_P(HotPagesGenerationTest, ACommitNotingAnOlderGenerationLateClearsNothing) {
  pager::SetCacheGenerationSpanForTesting(1);
  std::unique_ptr<Db> db = Open();
  std::unique_ptr<Db> other = Open();
  PutKeys(db.get(), 0, 2, "a");
  absl::StatusOr<CheckpointResult> c = db->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(c, IsOk());
  ASSERT_FALSE(c->blocked);
  // The cache was last cleared at this generation, G.
  EXPECT_EQ(Read(**db->BeginRead(), 0), Value(0, "a"));
  // From here a clear needs a generation two from the ones cached.
  pager::SetCacheGenerationSpanForTesting(2);
  ::journalkv::testing::HookGate& gate = ::journalkv::testing::HookGate::Get();
  gate.Arm("commit:published");
  wal::SetWalHookForTesting(&GateHook);
  const uint64_t restarts = db->Stats().log_restarts;
  // Restarts the log (G + 1) and pauses once its commit is published, before noting it.
  std::thread committer([&] { EXPECT_THAT(db->Put(Key(1), Value(1, "b")), IsOk()); });
  const bool reached = gate.WaitUntilReached();
  absl::StatusOr<std::unique_ptr<ReadTransaction>> fresh = absl::UnknownError("not begun");
  uint64_t cached = 0;
  if (reached) {
    EXPECT_EQ(db->Stats().log_restarts, restarts + 1);
    // Another connection copies that commit and restarts the log again: G + 2.
    c = other->Checkpoint(CheckpointMode::kFull);
    EXPECT_THAT(c, IsOk());
    const uint64_t other_restarts = other->Stats().log_restarts;
    EXPECT_THAT(other->Put(Key(3), Value(3, "b")), IsOk());
    EXPECT_EQ(other->Stats().log_restarts, other_restarts + 1);
    // A read at G + 2 clears the cache (two from G), gets a new table and fills both.
    fresh = db->BeginRead();
    if (fresh.ok()) {
      for (int i = 0; i < 2 * kKeys; i += 2) {
        EXPECT_EQ(Read(**fresh, i), Value(i, "a"));
      }
      cached = db->Stats().cached_pages;
    }
  }
  gate.Release();
  committer.join();  // the commit notes G + 1: one before the read's
  wal::SetWalHookForTesting(nullptr);
  ASSERT_TRUE(reached) << "the commit never reached commit:published";
  ASSERT_THAT(fresh, IsOk());
  EXPECT_GE(db->Stats().cached_pages, cached) << "the cache was cleared again";
  EXPECT_EQ(Read(**fresh, 0), Value(0, "a"));
  EXPECT_EQ(Read(**fresh, 1), Value(1, "b"));
  EXPECT_EQ(Read(**fresh, 3), Value(3, "b"));
  fresh->reset();
  EXPECT_EQ(Read(**db->BeginRead(), 1), Value(1, "b"));
}

std::string ModeName(const ::testing::TestParamInfo<JournalMode>& info) {
  return std::string(JournalModeName(info.param));
}
INSTANTIATE_TEST_SUITE_P(Modes, HotPagesTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2), ModeName);
INSTANTIATE_TEST_SUITE_P(Wal, HotPagesRestartTest, ::testing::Values(JournalMode::kWal),
                         ModeName);
INSTANTIATE_TEST_SUITE_P(Wal, HotPagesGenerationTest, ::testing::Values(JournalMode::kWal),
                         ModeName);

}  // namespace
}  // namespace journalkv
