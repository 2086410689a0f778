// The verify-once epoch of the zero-copy map (pager/mapped_pages.h O5..O7, shm/wal_index.h O4)
// through the engine on the real file system, WAL and WAL2: a page of the database file read in
// place is checked once and then trusted by the transactions of the same epoch; a checkpoint
// that writes the file moves the epoch, and the next transactions check each page again, so a
// page damaged in the file since is found (without the move it would be trusted); a
// transaction begun while a checkpoint writes (an odd epoch) trusts nothing and checks every
// page it reads.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/hook_gate.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/file_system_testing.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

constexpr int kKeys = 3000;

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i, int round) {
  return absl::StrCat("value-", round, "-", i, std::string(60, 'v'));
}

using testing::HookGate;

void GateHook(const char* point) { HookGate::Get().At(point); }

class MmapEpochTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Opts() const {
    Options o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kOff;
    o.cache_pages = 16;  // every leaf comes from the file
    o.mmap_size = 64 << 20;
    o.checkpoint_policy = "manual";
    return o;
  }
  std::unique_ptr<Db> MustOpen() {
    auto db = Db::Open(path_, Opts());
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  void Fill(Db* db, int round) {
    auto w = db->BeginWrite();
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < kKeys; ++i) JKV_ASSERT_OK((*w)->Put(Key(i), Value(i, round)));
    JKV_ASSERT_OK((*w)->Commit());
    JKV_ASSERT_OK(db->Checkpoint(CheckpointMode::kTruncate).status());
  }
  // Reads every seventh key in one read transaction; the map's checks it took.
  uint64_t ReadAll(Db* db, int round) {
    const uint64_t before = db->Stats().map_checks;
    auto txn = db->BeginRead();
    EXPECT_TRUE(txn.ok()) << txn.status();
    if (!txn.ok()) return 0;
    for (int i = 0; i < kKeys; i += 7) {
      auto v = (*txn)->Get(Key(i));
      EXPECT_TRUE(v.ok()) << v.status();
      if (!v.ok()) break;
      EXPECT_EQ(v->value_or("<none>"), Value(i, round)) << Key(i);
    }
    return db->Stats().map_checks - before;
  }

  vfs::ScopedTempDir dir_;
  std::string path_ = absl::StrCat(dir_.path(), "/e.db");
};

// O6: checked once, then trusted while the epoch stays; a checkpoint's write moves it (O4)
// and the pages are checked again.
TEST_P(MmapEpochTest, PagesAreCheckedOncePerEpoch) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  const uint64_t first = ReadAll(reader.get(), 1);
  EXPECT_GT(first, 10u);                    // the leaves, each checked once
  EXPECT_EQ(ReadAll(reader.get(), 1), 0u);  // a second transaction of the epoch trusts them
  // Read in place: most reads' leaves (the few the hot-page table holds are found there, O8).
  EXPECT_GT(reader->Stats().map_pages, kKeys / 7);
  Fill(writer.get(), 2);  // the checkpoint writes the file: the epoch moves
  EXPECT_GT(ReadAll(reader.get(), 2), 10u);
  EXPECT_EQ(ReadAll(reader.get(), 2), 0u);
}

// O4 + O6: a page damaged in the file is trusted while the epoch stays (that is what a stamp
// means), and found once a checkpoint has moved the epoch, although that checkpoint never wrote
// the damaged page: without the epoch's move the damage would stay hidden.
TEST_P(MmapEpochTest, APageDamagedInTheFileIsFoundOnceACheckpointMovesTheEpoch) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  ReadAll(reader.get(), 1);  // every leaf stamped
  // Damage Key(0)'s value in the file, behind every connection's back.
  std::string image;
  {
    std::ifstream in(path_, std::ios::binary);
    image.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = image.find(Value(0, 1));
  ASSERT_NE(at, std::string::npos);
  {
    vfs::PosixFileSystem posix;
    auto f = posix.Open(path_, {vfs::OpenMode::kReadWrite, vfs::FileKind::kDatabase});
    JKV_ASSERT_OK(f.status());
    const uint8_t x = 'X';
    JKV_ASSERT_OK((*f)->Write(at + 6, absl::MakeConstSpan(&x, 1)));
  }
  auto trusted = reader->Get(Key(0));
  JKV_ASSERT_OK(trusted.status());  // same epoch: the stamp vouches for it (O6)
  EXPECT_NE(trusted->value_or(""), Value(0, 1));
  // A commit to the other end of the tree and its checkpoint: pages far from Key(0) written.
  JKV_ASSERT_OK(writer->Put("zzzz", "last"));
  JKV_ASSERT_OK(writer->Checkpoint(CheckpointMode::kTruncate).status());
  auto found = reader->Get(Key(0));
  EXPECT_TRUE(absl::IsDataLoss(found.status())) << found.status();
  EXPECT_NE(found.status().message().find("checksum mismatch"), std::string::npos)
      << found.status();
}

// O5: a transaction begun while a checkpoint writes the file (the epoch odd: paused at the hook
// point right after the odd store) trusts no stamp and stamps nothing; after the checkpoint the
// pages are checked once more and then trusted.
TEST_P(MmapEpochTest, AReaderBegunWhileACheckpointWritesChecksEveryPage) {
  auto writer = MustOpen();
  auto reader = MustOpen();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  Fill(writer.get(), 1);
  ReadAll(reader.get(), 1);
  EXPECT_EQ(ReadAll(reader.get(), 1), 0u);
  JKV_ASSERT_OK(writer->Put("zzzz", "last"));  // a frame for the checkpoint to copy
  HookGate::Get().Arm("shm:db_epoch_odd");
  shm::SetIndexHookForTesting(&GateHook);
  std::thread checkpointer(
      [&] { JKV_EXPECT_OK(writer->Checkpoint(CheckpointMode::kTruncate).status()); });
  const bool reached = HookGate::Get().WaitUntilReached();
  if (!reached) {
    checkpointer.join();
    shm::SetIndexHookForTesting(nullptr);
    FAIL() << "the checkpoint never made the epoch odd";
  }
  // Two passes in one transaction begun at the odd epoch: both check every page they read.
  const uint64_t before = reader->Stats().map_checks;
  {
    auto txn = reader->BeginRead();
    ASSERT_TRUE(txn.ok()) << txn.status();
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < kKeys; i += 7) {
        auto v = (*txn)->Get(Key(i));
        ASSERT_TRUE(v.ok()) << v.status();
      }
    }
  }
  const uint64_t odd_checks = reader->Stats().map_checks - before;
  // More checks than one pass reads pages (a transaction that stamps checks each of the
  // ~120 leaves once): the same pages are checked again in the second pass (a few leaves are
  // found in the hot-page table instead, O8, and the last commit's pages in the log).
  EXPECT_GT(odd_checks, uint64_t{kKeys / 7});
  HookGate::Get().Release();
  checkpointer.join();
  shm::SetIndexHookForTesting(nullptr);
  EXPECT_GT(ReadAll(reader.get(), 1), 0u);   // the new epoch: checked again
  EXPECT_EQ(ReadAll(reader.get(), 1), 0u);   // and trusted
}

INSTANTIATE_TEST_SUITE_P(Modes, MmapEpochTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
