// Prepared atomic batches of the emulated batch (vfs.h: AtomicBatch::Prepare and the File's
// PreparedBatch, CommitPreparedBatch, DiscardPreparedBatch; batch_overlay.h): the contract on
// MemFileSystem and FaultInjectingFileSystem, and on the latter a process crash and a power
// loss between the prepare and the commit, a crash at every mutation of the prepare, and a
// power loss after a prepared batch's commit.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_prepare_testing.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::vfs {
namespace {

constexpr uint64_t kPage = 4096;
constexpr OpenOptions kOpen{OpenMode::kReadWrite, FileKind::kDatabase};

TEST(EmulatedPrepareTest, MemFileSystemKeepsTheContract) {
  MemFileSystem fs;
  RunPreparedCommitContract(fs, "/d", kPage);
  RunPreparedDiscardContract(fs, "/d", kPage);
}

TEST(EmulatedPrepareTest, FaultInjectingFileSystemKeepsTheContract) {
  MemFileSystem base;
  FaultInjectingFileSystem fs(&base);
  RunPreparedCommitContract(fs, "/d", kPage);
  RunPreparedDiscardContract(fs, "/d", kPage);
}

std::optional<std::string> NoteOf(FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, kOpen);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return std::nullopt;
  auto note = (*file)->PreparedBatch();
  EXPECT_TRUE(note.ok()) << note.status();
  return note.ok() ? *note : std::nullopt;
}

std::vector<uint8_t> ContentOf(FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, kOpen);
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? BatchTestReadAll(**file) : std::vector<uint8_t>{};
}

// A prepared batch survives a process crash and every power loss, and a later File commits it.
TEST(EmulatedPrepareTest, APreparedBatchSurvivesAProcessCrashAndAPowerLoss) {
  for (bool power_loss : {false, true}) {
    for (uint64_t seed = 0; seed < (power_loss ? 8 : 1); ++seed) {
      SCOPED_TRACE(absl::StrCat(power_loss ? "power loss, seed " : "process crash", seed));
      MemFileSystem base;
      FaultInjectingFileSystem fs(&base);
      const std::vector<uint8_t> want = LeavePreparedBatch(fs, "/d/db", kPage, 3, "n");
      if (power_loss) {
        ASSERT_TRUE(fs.SimulatePowerLoss(seed).ok());
      } else {
        fs.SimulateProcessCrash();
      }
      EXPECT_EQ(NoteOf(fs, "/d/db"), std::optional<std::string>("n"));
      EXPECT_EQ(ContentOf(fs, "/d/db"), BatchTestPages(kPage, 3, 0x10));
      {
        auto file = fs.Open("/d/db", kOpen);
        ASSERT_TRUE(file.ok());
        ASSERT_TRUE((*file)->CommitPreparedBatch(BatchSync::kDurable).ok());
      }
      // Durable once committed: a power loss keeps it (the cleared prepared batch may come
      // back; its note is the same, and the file holds the batch).
      ASSERT_TRUE(fs.SimulatePowerLoss(seed + 100).ok());
      EXPECT_EQ(ContentOf(fs, "/d/db"), want);
      std::optional<std::string> note = NoteOf(fs, "/d/db");
      EXPECT_TRUE(!note.has_value() || *note == "n");
    }
  }
}

// A crash at any mutation of the prepare leaves either no prepared batch or a whole one, and a
// prepare that returned OK always leaves it.
TEST(EmulatedPrepareTest, ACrashDuringThePrepareLeavesNoneOrAWholeOne) {
  int states = 0, whole = 0;
  for (uint64_t k = 0; k < 6; ++k) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      SCOPED_TRACE(absl::StrCat("crash after ", k, " mutations, seed ", seed));
      MemFileSystem base;
      FaultInjectingFileSystem fs(&base);
      const std::vector<uint8_t> old = BatchTestPages(kPage, 2, 0x10);
      const std::vector<uint8_t> fresh = BatchTestPages(kPage, 2, 0x70);
      absl::Status prepared;
      {
        auto file = fs.Open("/d/db", OpenOptions{OpenMode::kCreate, FileKind::kDatabase});
        ASSERT_TRUE(file.ok());
        ASSERT_TRUE((*file)->Write(0, old).ok());
        ASSERT_TRUE((*file)->Sync(SyncKind::kData).ok());
        ASSERT_TRUE(fs.SyncDirectory("/d").ok());
        auto batch = (*file)->BeginAtomicBatch();
        ASSERT_TRUE(batch.ok());
        ASSERT_TRUE((*batch)->Write(kPage * 2, fresh).ok());
        fs.CrashAfterMutations(k);
        prepared = (*batch)->Prepare("note");
      }
      ASSERT_TRUE(fs.SimulatePowerLoss(seed).ok());
      ++states;
      std::optional<std::string> note = NoteOf(fs, "/d/db");
      if (prepared.ok()) {
        EXPECT_TRUE(note.has_value()) << "a prepare that returned is durable";
      }
      if (!note.has_value()) continue;
      ++whole;
      EXPECT_EQ(*note, "note");
      auto file = fs.Open("/d/db", kOpen);
      ASSERT_TRUE(file.ok());
      ASSERT_TRUE((*file)->CommitPreparedBatch(BatchSync::kDurable).ok());
      std::vector<uint8_t> want = old;
      want.insert(want.end(), fresh.begin(), fresh.end());
      EXPECT_EQ(BatchTestReadAll(**file), want) << "a prepared batch is whole";
    }
  }
  std::printf("prepare crash states checked: %d (%d with a whole prepared batch)\n", states,
              whole);
  EXPECT_GT(whole, 0);
  EXPECT_LT(whole, states);
}

}  // namespace
}  // namespace journalkv::vfs
