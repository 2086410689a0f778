// Log generations across the 31-bit wrap (issue 19, item 5). A log restart starts generation
// ckpt_seq + 1 modulo 2^31, so after 0x7fffffff comes 0. Snapshot pins name their generation,
// and one connection holding snapshots from both sides of the wrap must pin the older one: an
// order by plain numbers takes generation 0 for the older and lets a checkpoint copy past the
// snapshot of 0x7fffffff, whose reader reads the database file. The database starts one
// generation before the wrap (wal::SetFirstGenerationForTesting), so its first commit
// writes generation 0x7fffffff.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "wal/wal_connection.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr uint32_t kLastGeneration = 0x7fffffffu;

class WalGenerationTest : public ::testing::Test {
 protected:
  // The first write restarts the empty log, into 0x7fffffff.
  void SetUp() override { wal::SetFirstGenerationForTesting(kLastGeneration - 1); }
  void TearDown() override {
    wal::SetFirstGenerationForTesting(0);
    pager::SetCacheGenerationSpanForTesting(0);
  }
  std::unique_ptr<Db> Open() {
    Options o;
    o.journal_mode = JournalMode::kWal;
    o.file_system = &fs_;
    o.checkpoint_policy = "manual";
    o.busy_timeout = absl::Milliseconds(200);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Keys k100..k299 set to `value` in one transaction (many pages).
  void Fill(Db& db, const std::string& value) {
    std::unique_ptr<WriteTransaction> w = *db.BeginWrite();
    for (int i = 0; i < 200; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("k", 100 + i), value + std::string(300, 'x')), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  static void ExpectAll(ReadTransaction& t, const std::string& value) {
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<std::optional<std::string>> v = t.Get(absl::StrCat("k", 100 + i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value()) << "key " << i;
      ASSERT_EQ((*v)->substr(0, (*v)->size() - 300), value) << "key " << i;
    }
  }
  // The published generation of the log, read from the -shm (header copy A: the words change,
  // page_size, page_count, current_log, then log 0's ckpt_seq).
  uint32_t Generation() {
    absl::StatusOr<std::unique_ptr<vfs::File>> shm =
        fs_.Open("/x.db-shm", {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
    EXPECT_THAT(shm, IsOk());
    if (!shm.ok()) return 0;
    uint8_t word[4];
    EXPECT_THAT((*shm)->Read(shm::kHeaderAOffset + 16, absl::MakeSpan(word)), IsOk());
    uint32_t seq;
    std::memcpy(&seq, word, 4);
    return seq;
  }

  vfs::MemFileSystem fs_;
};

// Two snapshots of one connection, one each side of the wrap: the older one is pinned while it
// is open, and the newer one once it is the only one.
TEST_F(WalGenerationTest, AConnectionPinsItsOlderSnapshotAcrossTheWrap) {
  std::unique_ptr<Db> reader_db = Open();
  std::unique_ptr<Db> writer_db = Open();
  Fill(*writer_db, "v1");
  ASSERT_EQ(Generation(), kLastGeneration);
  ASSERT_FALSE(writer_db->Checkpoint(CheckpointMode::kFull)->blocked);
  std::unique_ptr<ReadTransaction> before_wrap = *reader_db->BeginRead();
  Fill(*writer_db, "v2");  // the log was copied: the write restarts it, into generation 0
  ASSERT_EQ(Generation(), 0u);
  std::unique_ptr<ReadTransaction> after_wrap = *reader_db->BeginRead();
  // The snapshot of generation 0x7fffffff reads the database file: nothing of generation 0 may
  // be copied into it while that snapshot is open.
  absl::StatusOr<CheckpointResult> r = writer_db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->blocked);
  EXPECT_EQ(r->copied, 0u);
  ExpectAll(*before_wrap, "v1");
  ExpectAll(*after_wrap, "v2");
  // With the older snapshot gone, the connection pins the newer one, which allows it all.
  before_wrap.reset();
  r = writer_db->Checkpoint(CheckpointMode::kPassive);
  ASSERT_THAT(r, IsOk());
  EXPECT_FALSE(r->blocked);
  EXPECT_GT(r->copied, 0u);
  ExpectAll(*after_wrap, "v2");
  after_wrap.reset();
  ExpectAll(**reader_db->BeginRead(), "v2");
  EXPECT_EQ(writer_db->Stats().pinned_connections, 0);
}

// The page cache names a generation by its 31 bits, so a key repeats 2^31 generations later:
// a connection clears its cache once it sees a generation far past the one it last cleared at
// (2^29; lowered here to 2), across the wrap too. Without the clear, the reader keeps every
// page it cached in earlier generations.
TEST_F(WalGenerationTest, ThePageCacheIsClearedLongBeforeItsKeysRepeat) {
  pager::SetCacheGenerationSpanForTesting(2);
  std::unique_ptr<Db> reader_db = Open();
  std::unique_ptr<Db> writer_db = Open();
  Fill(*writer_db, "v1");
  ExpectAll(**reader_db->BeginRead(), "v1");  // caches the pages at generation 0x7fffffff
  const uint64_t cached = reader_db->Stats().cached_pages;
  ASSERT_GT(cached, 10u);
  // One generation on (0, past the wrap): the cache is kept.
  ASSERT_FALSE(writer_db->Checkpoint(CheckpointMode::kFull)->blocked);
  Fill(*writer_db, "v2");
  ASSERT_EQ(Generation(), 0u);
  {
    std::unique_ptr<ReadTransaction> t = *reader_db->BeginRead();
    EXPECT_GE(reader_db->Stats().cached_pages, cached);
    ExpectAll(*t, "v2");
  }
  // Two on: cleared when the next snapshot begins.
  ASSERT_FALSE(writer_db->Checkpoint(CheckpointMode::kFull)->blocked);
  Fill(*writer_db, "v3");
  ASSERT_EQ(Generation(), 1u);
  std::unique_ptr<ReadTransaction> t = *reader_db->BeginRead();
  EXPECT_LE(reader_db->Stats().cached_pages, 1u);  // page 1, read as the snapshot began
  ExpectAll(*t, "v3");
}

}  // namespace
}  // namespace journalkv
