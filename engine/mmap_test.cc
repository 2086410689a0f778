// The read map (Options::mmap_size; vfs/read_map.h E1..E5) through the engine on the real file
// system: the map serves the database file's pages and gives the same answers as pread; what
// another connection writes into the file (a rollback commit, a WAL checkpoint, a compaction's
// cut) is seen by the next transaction of a mapped reader; a file cut under a reader by someone
// else gives that reader's transaction an error (no crash) and the database reads again once
// the file is whole.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

constexpr int kKeys = 3000;
#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;  // the map looks the file size up before each read: no fault
#else
constexpr bool kTsan = false;
#endif

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i, int round) { return absl::StrCat("value-", round, "-", i, std::string(60, 'v')); }

class MmapTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Opts(uint64_t mmap_size = 64 << 20) const {
    Options o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kOff;
    o.cache_pages = 16;  // most reads go to the file
    o.mmap_size = mmap_size;
    o.checkpoint_policy = "manual";
    return o;
  }
  std::unique_ptr<Db> MustOpen(const Options& o) {
    auto db = Db::Open(path_, o);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? std::move(*db) : nullptr;
  }
  void Fill(Db* db, int round) {
    auto w = db->BeginWrite();
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < kKeys; ++i) JKV_ASSERT_OK((*w)->Put(Key(i), Value(i, round)));
    JKV_ASSERT_OK((*w)->Commit());
    if (IsWalMode(GetParam())) {
      JKV_ASSERT_OK(db->Checkpoint(CheckpointMode::kTruncate).status());
    }
  }
  void ExpectAll(Db* db, int round) {
    for (int i = 0; i < kKeys; i += 7) {
      auto v = db->Get(Key(i));
      ASSERT_TRUE(v.ok()) << v.status();
      ASSERT_EQ(v->value_or("<none>"), Value(i, round)) << Key(i);
    }
  }
  static bool IsWalMode(JournalMode m) { return m == JournalMode::kWal || m == JournalMode::kWal2; }

  vfs::ScopedTempDir dir_;
  std::string path_ = absl::StrCat(dir_.path(), "/m.db");
};

TEST_P(MmapTest, TheMapServesReadsWithTheAnswersOfPread) {
  {
    auto db = MustOpen(Opts());
    ASSERT_NE(db, nullptr);
    Fill(db.get(), 1);
  }
  auto mapped = MustOpen(Opts());
  auto plain = MustOpen(Opts(0));
  ASSERT_NE(mapped, nullptr);
  ASSERT_NE(plain, nullptr);
  ExpectAll(mapped.get(), 1);
  ExpectAll(plain.get(), 1);
  EXPECT_GT(mapped->Stats().map_reads, 0u);
  EXPECT_EQ(mapped->Stats().map_faults, 0u);
  EXPECT_EQ(plain->Stats().map_reads, 0u);
  auto checked = mapped->Check();
  JKV_ASSERT_OK(checked.status());
}

// E1 (and the cache's own rules): a mapped reader's next transaction sees what another
// connection wrote into the file: commits (rollback modes write the file in place),
// checkpoints (WAL copies frames into it) and a compaction, which cuts the file.
TEST_P(MmapTest, WritesOfAnotherConnectionAreSeenByTheNextRead) {
  auto reader = MustOpen(Opts());
  auto writer = MustOpen(Opts());
  ASSERT_NE(reader, nullptr);
  ASSERT_NE(writer, nullptr);
  Fill(writer.get(), 1);
  ExpectAll(reader.get(), 1);
  Fill(writer.get(), 2);
  ExpectAll(reader.get(), 2);
  // Delete most keys, then compact: the file shrinks under the reader's map.
  {
    auto w = writer->BeginWrite();
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < kKeys; ++i) {
      if (i % 7 != 0) {
        JKV_ASSERT_OK((*w)->Delete(Key(i)).status());
      }
    }
    JKV_ASSERT_OK((*w)->Commit());
  }
  const uint64_t before = std::filesystem::file_size(path_);
  auto compacted = writer->Compact();
  JKV_ASSERT_OK(compacted.status());
  ExpectAll(reader.get(), 2);
  EXPECT_LT(std::filesystem::file_size(path_), before);
  Fill(writer.get(), 3);  // the file grows again under the map
  ExpectAll(reader.get(), 3);
  EXPECT_GT(reader->Stats().map_reads, 0u);
}

// E5: someone else (no locks) cuts the file under a read transaction. The transaction's reads
// fail with an error naming the cut; the process goes on, and once the file is whole again a
// new transaction reads every key.
TEST_P(MmapTest, AFileCutUnderAReaderFailsItsReadsNotTheProcess) {
  {
    auto db = MustOpen(Opts());
    ASSERT_NE(db, nullptr);
    Fill(db.get(), 1);
  }
  vfs::PosixFileSystem posix;
  std::vector<uint8_t> image(std::filesystem::file_size(path_));
  {
    auto f = posix.Open(path_, {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase});
    JKV_ASSERT_OK(f.status());
    JKV_ASSERT_OK((*f)->Read(0, absl::MakeSpan(image)));
  }
  auto db = MustOpen(Opts());
  ASSERT_NE(db, nullptr);
  ExpectAll(db.get(), 1);  // the map knows the whole file
  {
    auto txn = db->BeginRead();
    ASSERT_TRUE(txn.ok()) << txn.status();
    ASSERT_TRUE((*txn)->Get(Key(0)).ok());
    ASSERT_EQ(::truncate(path_.c_str(), 2 * 4096), 0);
    int failed = 0;
    for (int i = 0; i < kKeys; i += 3) {
      auto v = (*txn)->Get(Key(i));
      if (!v.ok()) {
        ++failed;
        EXPECT_TRUE(absl::IsDataLoss(v.status())) << v.status();
        // WAL modes read pages in place in the map: the fault read zeros, and the transaction
        // fails with the map's error (O1, O2); the rollback modes copy and fall back to pread.
        // Under TSan the map looks the size up before it hands a page out, so a WAL read sees
        // the cut first unless its leaf was at hand already (O8).
        const absl::string_view message = v.status().message();
        const bool map_error =
            message.find("memory-mapped database file could not be read") != message.npos;
        const bool cut_error = message.find("past the end of the file") != message.npos;
        if (!IsWalMode(GetParam())) {
          EXPECT_TRUE(cut_error) << v.status();
        } else if (!kTsan) {
          EXPECT_TRUE(map_error) << v.status();
        } else {
          EXPECT_TRUE(map_error || cut_error) << v.status();
        }
      }
    }
    EXPECT_GT(failed, 0);
  }
#if !defined(__SANITIZE_THREAD__)  // under TSan the map looks the size up before each copy
  if (IsWalMode(GetParam())) {
    EXPECT_GT(db->Stats().map_damage, 0u);  // O1: answered with zeros, counted
  } else {
    EXPECT_GT(db->Stats().map_faults, 0u);
  }
#endif
  // Whole again (the test puts the bytes back, as a restore would): the same handle reads.
  {
    auto f = posix.Open(path_, {vfs::OpenMode::kReadWrite, vfs::FileKind::kDatabase});
    JKV_ASSERT_OK(f.status());
    JKV_ASSERT_OK((*f)->Write(0, image));
  }
  ExpectAll(db.get(), 1);
  JKV_ASSERT_OK(db->Put("after", "the cut"));
  auto v = db->Get("after");
  JKV_ASSERT_OK(v.status());
  EXPECT_EQ(v->value_or(""), "the cut");
}

// Lent (the default), the fault layer's map reaches the WAL's pages taken in place: the crash
// sweeps and the schedule explorer over real files with the map on read as a mapped database
// does (tests/sweep_base.h). The rollback modes copy out of the map (E2) either way.
TEST_P(MmapTest, TheFaultInjectingFileSystemLendsItsBasesMapForPagesTakenInPlace) {
  vfs::PosixFileSystem posix;
  vfs::FaultInjectingFileSystem fault(&posix);
  Options o = Opts();
  o.file_system = &fault;
  {
    auto db = MustOpen(o);
    ASSERT_NE(db, nullptr);
    Fill(db.get(), 1);  // checkpointed: the pages are in the database file, where the map is
  }
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  ExpectAll(db.get(), 1);
  if (IsWalMode(GetParam())) {
    EXPECT_GT(db->Stats().map_pages, 0u) << "no page was taken in place through the fault layer";
  } else {
    EXPECT_EQ(db->Stats().map_pages, 0u);
    EXPECT_GT(db->Stats().map_reads, 0u);
  }
}

// The fault-injecting file system over real files forwards the map to its base (the crash
// sweeps' base with the map on, tests/sweep_base.h): reads go through the map, and its
// injected read errors still reach the reader, and the answers are the same.
TEST_P(MmapTest, TheFaultInjectingFileSystemMapsItsBaseAndStillFailsReadsAsTold) {
  vfs::PosixFileSystem posix;
  vfs::FaultInjectingFileSystem fault(&posix);
  // Every page a Read through the fault layer (WAL's pages taken in place would bypass the
  // injected faults: SetLendReadMap).
  fault.SetLendReadMap(false);
  Options o = Opts();
  o.file_system = &fault;
  {
    auto db = MustOpen(o);
    ASSERT_NE(db, nullptr);
    Fill(db.get(), 1);
  }
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  ExpectAll(db.get(), 1);
  EXPECT_GT(db->Stats().map_reads, 0u);
  fault.FailNth(vfs::FaultOp::kRead, 1, EIO, /*persistent=*/true);
  int failed = 0;
  for (int i = 1; i < kKeys; i += 97) {
    auto v = db->Get(Key(i));
    if (!v.ok()) {
      ++failed;
      EXPECT_NE(v.status().message().find("Input/output error"), std::string::npos) << v.status();
    }
  }
  EXPECT_GT(failed, 0);
  fault.ClearFaults();
  ExpectAll(db.get(), 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, MmapTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal,
                                           JournalMode::kWal2),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
