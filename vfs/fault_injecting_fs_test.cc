// Tests of FaultInjectingFileSystem over both MemFileSystem and PosixFileSystem: it passes the
// conformance suite, a disk of limited capacity, and its power-loss model yields exactly the
// states a disk may hold (for every DiskModel: content, directory entries, handles); process
// crashes kill handles but keep unsynced data. Crash points, injected errors, skipped syncs and
// threads: fault_injecting_fs_faults_test.cc.
#include "vfs/fault_injecting_fs.h"

#include <cerrno>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_conformance.h"
#include "vfs/file_system_testing.h"
#include "vfs/fault_injecting_fs_testing.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;
using DiskModel = FaultInjectingFileSystem::DiskModel;
using SyncRecord = FaultInjectingFileSystem::SyncRecord;

INSTANTIATE_TEST_SUITE_P(FaultInjecting, FileSystemConformanceTest,
                         ::testing::Values(FileSystemEnvFactory{"OnMem", &MakeFaultOnMemEnv},
                                           FileSystemEnvFactory{"OnPosix", &MakeFaultOnPosixEnv}),
                         FileSystemEnvFactoryName);

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectingFsTest,
                         ::testing::Values(BaseParam{"Mem", &MakeFaultOnMemEnv},
                                           BaseParam{"Posix", &MakeFaultOnPosixEnv}),
                         [](const auto& info) { return info.param.name; });

// ---- A disk of limited capacity ----

// Writes, growing truncates and shared mappings take blocks until the capacity is used; then
// growth fails with ResourceExhausted and changes nothing, overwrites in place still work, and
// truncating or deleting gives blocks back. A power loss counts what survived.
TEST_P(FaultInjectingFsTest, ACapacityLimitFailsGrowthButNotOverwritesAndCountsFreedBlocks) {
  constexpr uint64_t kBlock = FaultInjectingFileSystem::kBlockSize;
  JKV_ASSERT_OK(WriteDurably("a", std::string(kBlock + 1, 'a')));  // two blocks
  EXPECT_EQ(fs().used_bytes(), 2 * kBlock);
  fs().SetCapacity(4 * kBlock);
  JKV_ASSERT_OK_AND_ASSIGN(auto b, fs().Open(Path("b"), kCreate));
  JKV_ASSERT_OK(WriteString(*b, 0, std::string(kBlock, 'b')));  // the third block
  // As pwrite(2): what fits in the free block is written, then ENOSPC at the first byte that
  // did not fit.
  EXPECT_THAT(WriteString(*b, kBlock, std::string(2 * kBlock + 1, 'b')),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       absl::StrCat("pwrite at offset ", 2 * kBlock, ": No space left")));
  EXPECT_THAT(fs().used_bytes(), 4 * kBlock);
  EXPECT_THAT(b->Size(), IsOkAndHolds(2 * kBlock));
  JKV_ASSERT_OK(b->Truncate(kBlock));
  JKV_ASSERT_OK(WriteString(*b, 10, "overwrite"));  // within its blocks: no new one
  EXPECT_THAT(b->Truncate(3 * kBlock),
              StatusIs(absl::StatusCode::kResourceExhausted, "ftruncate to"));
  // A shared region of two blocks does not fit in the one block left, and says why.
  JKV_ASSERT_OK_AND_ASSIGN(auto shm, fs().Open(Path("s"), {OpenMode::kCreate, FileKind::kShm}));
  EXPECT_THAT(shm->MapSharedRegion(0, 2 * kBlock),
              StatusIs(absl::StatusCode::kResourceExhausted, "the disk is full"));
  EXPECT_THAT(shm->Size(), IsOkAndHolds(0u));
  JKV_ASSERT_OK(shm->MapSharedRegion(0, kBlock).status());  // one block does
  EXPECT_EQ(fs().used_bytes(), 4 * kBlock);
  JKV_ASSERT_OK(b->Truncate(0));  // gives its block back
  JKV_ASSERT_OK(shm->MapSharedRegion(1, kBlock).status());
  JKV_ASSERT_OK(fs().Delete(Path("a")));  // and a name's blocks are free once it is gone
  EXPECT_EQ(fs().used_bytes(), 2 * kBlock);
  JKV_ASSERT_OK(WriteString(*b, 0, std::string(2 * kBlock, 'b')));
  fs().SetCapacity(std::nullopt);
  JKV_ASSERT_OK(WriteString(*b, 0, std::string(8 * kBlock, 'b')));
  // After a power loss the unsynced files are gone or back to their synced size: "a" is back
  // (its delete was not synced), "b" and "s" are gone (never synced into the directory).
  b.reset();
  shm.reset();
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_EQ(fs().used_bytes(), 2 * kBlock);
}

// ---- Power loss: content ----

TEST_P(FaultInjectingFsTest, SyncedWriteSurvivesEveryPowerLoss) {
  const std::string data = std::string(3000, 'd') + "end";
  JKV_ASSERT_OK(WriteDurably("a", data));
  for (int seed = 0; seed < kSeeds / 4; ++seed) {
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_THAT(Content("a"), IsOkAndHolds(data)) << "seed " << seed;
  }
}

// How an unsynced write of 'n' bytes over 'o' bytes came through a power loss.
enum class Outcome { kKept, kDropped, kTorn };

// Classifies content (expected: 'o' everywhere except where [begin, end) may hold 'n') and
// checks that every sector-aligned piece of [begin, end) is entirely old or entirely new.
Outcome ClassifySectors(const std::string& content, size_t begin, size_t end,
                        size_t sector = 512) {
  int pieces_new = 0;
  int pieces_old = 0;
  for (size_t start = begin; start < end;) {
    const size_t next = std::min(end, (start / sector + 1) * sector);
    const std::string piece = content.substr(start, next - start);
    if (piece == std::string(piece.size(), 'n')) {
      ++pieces_new;
    } else {
      EXPECT_EQ(piece, std::string(piece.size(), 'o')) << "sector piece at " << start;
      ++pieces_old;
    }
    start = next;
  }
  EXPECT_EQ(content.substr(0, begin), std::string(begin, 'o'));
  EXPECT_EQ(content.substr(end), std::string(content.size() - end, 'o'));
  if (pieces_old == 0) return Outcome::kKept;
  return pieces_new == 0 ? Outcome::kDropped : Outcome::kTorn;
}

TEST_P(FaultInjectingFsTest, UnsyncedOverwriteIsKeptDroppedOrTornAtSectorGranularity) {
  fs().SetTornSectorGarbage(false);
  // [100, 2100) spans five sector pieces: 100-511, 512-1023, ..., 2048-2099.
  constexpr size_t kBegin = 100;
  constexpr size_t kEnd = 2100;
  int outcomes[3] = {0, 0, 0};
  for (int seed = 0; seed < kSeeds; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(4096, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", kBegin, std::string(kEnd - kBegin, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_EQ(content.size(), 4096u) << "seed " << seed;
    ++outcomes[static_cast<int>(ClassifySectors(content, kBegin, kEnd))];
  }
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kKept)], 0);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kDropped)], 0);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kTorn)], 0);
}

TEST_P(FaultInjectingFsTest, TornSectorsMayHoldGarbageButOnlyInsideTheWrite) {
  bool saw_garbage = false;
  for (int seed = 0; seed < kSeeds && !saw_garbage; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(8192, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", 1024, std::string(4096, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_EQ(content.size(), 8192u);
    EXPECT_EQ(content.substr(0, 1024), std::string(1024, 'o'));
    EXPECT_EQ(content.substr(5120), std::string(3072, 'o'));
    saw_garbage = content.substr(1024, 4096).find_first_not_of("on") != std::string::npos;
  }
  EXPECT_TRUE(saw_garbage);
}

TEST_P(FaultInjectingFsTest, UnsyncedAppendNeverDamagesTheSyncedPrefix) {
  fs().SetTornSectorGarbage(false);
  for (int seed = 0; seed < kSeeds / 4; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(1000, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", 1000, std::string(3000, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    EXPECT_TRUE(content.size() == 1000 || content.size() == 4000) << content.size();
    EXPECT_EQ(content.substr(0, 1000), std::string(1000, 'o'));
    // Dropped sectors past the old end read as zeros; kept ones as the new bytes.
    EXPECT_EQ(content.substr(1000).find_first_not_of(std::string("n\0", 2)), std::string::npos);
  }
}

TEST_P(FaultInjectingFsTest, TheSameSeedAndHistoryGiveTheSameState) {
  std::vector<std::string> results;
  for (int run = 0; run < 2; ++run) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(4096, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", 0, std::string(4096, 'n')));
    JKV_ASSERT_OK(WriteUnsynced("a", 2000, std::string(1000, 'm')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(42));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    results.push_back(content);
  }
  EXPECT_TRUE(results[0] == results[1]);
}

TEST_P(FaultInjectingFsTest, UnsyncedTruncateIsKeptOrDropped) {
  bool kept = false;
  bool dropped = false;
  for (int seed = 0; seed < kSeeds / 2; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(8192, 'o')));
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
      JKV_ASSERT_OK(file->Truncate(1000));
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_TRUE(content.size() == 1000 || content.size() == 8192) << content.size();
    EXPECT_EQ(content, std::string(content.size(), 'o'));
    (content.size() == 1000 ? kept : dropped) = true;
  }
  EXPECT_TRUE(kept);
  EXPECT_TRUE(dropped);
}

TEST_P(FaultInjectingFsTest, SyncedTruncateSurvives) {
  JKV_ASSERT_OK(WriteDurably("a", std::string(8192, 'o')));
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
    JKV_ASSERT_OK(file->Truncate(10));
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  }
  for (int seed = 0; seed < 10; ++seed) {
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_THAT(Content("a"), IsOkAndHolds(std::string(10, 'o')));
  }
}

// FNV-1a of content, mixed with its size: a fingerprint that pins exact power-loss draws.
uint64_t Fingerprint(const std::string& content) {
  uint64_t hash = 1469598103934665603u;
  for (const char c : content) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211u;
  }
  return hash ^ content.size();
}

// DiskModel{} draws exactly as the model did before DiskModel existed, so recorded sweeps
// reproduce. The fingerprints were computed with that model (power_loss_model.cc before
// DiskModel, fed this history) and must never change.
TEST_P(FaultInjectingFsTest, TheDefaultDiskModelDrawsExactlyAsBefore) {
  constexpr uint64_t kExpected[8][2] = {
      {0xd0c19aa783fd7ab7u, 0x28ac15f518ea95bbu}, {0xdde7e6fedfb464aau, 0x8401414c7c5f19bbu},
      {0xd0c19aa783fd7ab7u, 0x34b14ce2dd709eefu}, {0xf7d30a4f02fd01b6u, 0xb4d8cbc7854e5c37u},
      {0x172f5855529806cfu, 0x5b700c0d74912fd8u}, {0x063c43c8435318e0u, 0x28ac15f518ea95bbu},
      {0x2562bb8ecb11eae3u, 0x28ac15f518ea95bbu}, {0x172f5855529806cfu, 0x28ac15f518ea95bbu}};
  for (int seed = 0; seed < 8; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(4096, 'o')));
    JKV_ASSERT_OK(WriteDurably("b", std::string(1000, 'p')));
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto a, fs().Open(Path("a"), kReadWrite));
      JKV_ASSERT_OK(WriteString(*a, 100, std::string(2900, 'n')));
      JKV_ASSERT_OK(a->Truncate(2500));
      JKV_ASSERT_OK(WriteString(*a, 2000, std::string(3000, 'm')));
    }
    JKV_ASSERT_OK(WriteUnsynced("b", 1000, std::string(3000, 'q')));
    JKV_ASSERT_OK(WriteUnsynced("c", 0, "unsynced create"));  // undone without a draw
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_FALSE(Exists("c"));
    JKV_ASSERT_OK_AND_ASSIGN(std::string a, Content("a"));
    JKV_ASSERT_OK_AND_ASSIGN(std::string b, Content("b"));
    EXPECT_EQ(Fingerprint(a), kExpected[seed][0]) << "seed " << seed;
    EXPECT_EQ(Fingerprint(b), kExpected[seed][1]) << "seed " << seed;
  }
}

TEST_P(FaultInjectingFsTest, FourKSectorDiskTearsOnlyAt4096ByteBoundaries) {
  fs().SetDiskModel(DiskModel{.sector_size = 4096});
  fs().SetTornSectorGarbage(false);
  // [100, 13000) spans four 4096-byte sector pieces (and 26 pieces of 512 bytes).
  constexpr size_t kBegin = 100;
  constexpr size_t kEnd = 13000;
  int outcomes[3] = {0, 0, 0};
  for (int seed = 0; seed < kSeeds; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(16384, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", kBegin, std::string(kEnd - kBegin, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_EQ(content.size(), 16384u) << "seed " << seed;
    ++outcomes[static_cast<int>(ClassifySectors(content, kBegin, kEnd, 4096))];
  }
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kKept)], 0);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kDropped)], 0);
  EXPECT_GT(outcomes[static_cast<int>(Outcome::kTorn)], 0);
}

TEST_P(FaultInjectingFsTest, SizeWithoutDataExtendsTheFileWithZerosOnly) {
  fs().SetDiskModel(DiskModel{.size_without_data = true});
  fs().SetTornSectorGarbage(false);
  // The append covers 65 sector pieces: a torn write drops every one of them with odds 2^-65,
  // so a tail of zeros is the size-only outcome.
  constexpr size_t kOld = 1000;
  constexpr size_t kEnd = kOld + 64 * 512;
  bool size_only = false;
  for (int seed = 0; seed < kSeeds; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(kOld, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", kOld, std::string(kEnd - kOld, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_TRUE(content.size() == kOld || content.size() == kEnd) << content.size();
    EXPECT_EQ(content.substr(0, kOld), std::string(kOld, 'o'));
    EXPECT_EQ(content.substr(kOld).find_first_not_of(std::string("n\0", 2)), std::string::npos);
    size_only = size_only || content == std::string(kOld, 'o') + std::string(kEnd - kOld, '\0');
  }
  EXPECT_TRUE(size_only);
  // A write inside the file has no size change to keep: its bytes stay old or new, never zeros.
  for (int seed = 0; seed < kSeeds / 4; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(4096, 'o')));
    JKV_ASSERT_OK(WriteUnsynced("a", 0, std::string(4096, 'n')));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    EXPECT_EQ(content.find_first_not_of("on"), std::string::npos) << "seed " << seed;
  }
}

// ---- Power loss: directory entries ----

TEST_P(FaultInjectingFsTest, UnsyncedCreateIsUndoneEvenWhenTheFileWasSynced) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("new"), kCreate));
    JKV_ASSERT_OK(WriteString(*file, 0, "data"));
    JKV_ASSERT_OK(file->Sync(SyncKind::kAll));  // content durable, directory entry not
  }
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_FALSE(Exists("new"));
}

TEST_P(FaultInjectingFsTest, CreateSurvivesOnceTheDirectoryIsSynced) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("new"), kCreate));
    JKV_ASSERT_OK(WriteString(*file, 0, "data"));
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  }
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir() + "/"));  // trailing slash names the same dir
  for (int seed = 0; seed < 10; ++seed) {
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_THAT(Content("new"), IsOkAndHolds("data"));
  }
}

TEST_P(FaultInjectingFsTest, UnsyncedDeleteIsUndoneWithTheDurableContent) {
  JKV_ASSERT_OK(WriteDurably("a", "precious"));
  JKV_ASSERT_OK(fs().Delete(Path("a")));
  EXPECT_FALSE(Exists("a"));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_THAT(Content("a"), IsOkAndHolds("precious"));
}

TEST_P(FaultInjectingFsTest, DeleteSurvivesOnceTheDirectoryIsSynced) {
  JKV_ASSERT_OK(WriteDurably("a", "gone"));
  JKV_ASSERT_OK(fs().Delete(Path("a")));
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_FALSE(Exists("a"));
}

TEST_P(FaultInjectingFsTest, UnsyncedDeleteAndRecreateBringsBackTheOldFile) {
  JKV_ASSERT_OK(WriteDurably("a", "old"));
  JKV_ASSERT_OK(fs().Delete(Path("a")));
  {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
    JKV_ASSERT_OK(WriteString(*file, 0, "new"));
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  }
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_THAT(Content("a"), IsOkAndHolds("old"));
}

TEST_P(FaultInjectingFsTest, UnsyncedRenameIsUndoneWholeAndASyncedOneSurvives) {
  JKV_ASSERT_OK(WriteDurably("new", "the backup"));
  JKV_ASSERT_OK(WriteDurably("target", "the old file"));
  JKV_ASSERT_OK(fs().Rename(Path("new"), Path("target")));
  EXPECT_FALSE(Exists("new"));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  // Undone: each name has its old file again.
  EXPECT_THAT(Content("new"), IsOkAndHolds("the backup"));
  EXPECT_THAT(Content("target"), IsOkAndHolds("the old file"));
  // A rename to a free name, undone, leaves that name free.
  JKV_ASSERT_OK(fs().Rename(Path("new"), Path("free")));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(2));
  EXPECT_FALSE(Exists("free"));
  EXPECT_THAT(Content("new"), IsOkAndHolds("the backup"));
  // Synced, it stays.
  JKV_ASSERT_OK(fs().Rename(Path("new"), Path("target")));
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(3));
  EXPECT_FALSE(Exists("new"));
  EXPECT_THAT(Content("target"), IsOkAndHolds("the backup"));
}

TEST_P(FaultInjectingFsTest, AnUnsyncedRenameSurvivingAsAPrefixIsNeverHalfDone) {
  fs().SetDiskModel({.unsynced_entries_may_survive = true});
  int renamed = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    JKV_ASSERT_OK(WriteDurably("new", "n"));
    JKV_ASSERT_OK(WriteDurably("target", "t"));
    JKV_ASSERT_OK(fs().Rename(Path("new"), Path("target")));
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    // Either both names as before, or the rename whole: never neither name, never both "n".
    if (Exists("new")) {
      EXPECT_THAT(Content("new"), IsOkAndHolds("n")) << seed;
      EXPECT_THAT(Content("target"), IsOkAndHolds("t")) << seed;
    } else {
      EXPECT_THAT(Content("target"), IsOkAndHolds("n")) << seed;
      ++renamed;
    }
  }
  EXPECT_GT(renamed, 0);
  EXPECT_LT(renamed, 40);
}

// RenameNoReplace is one entry change as Rename is: undone whole by a power loss before the
// directory's sync (the new name free again), kept after it; a refused one changes nothing
// and is no mutation.
TEST_P(FaultInjectingFsTest, RenameNoReplaceIsOneEntryChangeAndARefusedOneIsNone) {
  JKV_ASSERT_OK(WriteDurably("new", "the backup"));
  JKV_ASSERT_OK(WriteDurably("taken", "another file"));
  const uint64_t mutations = fs().mutation_count();
  EXPECT_THAT(fs().RenameNoReplace(Path("new"), Path("taken")),
              StatusIs(absl::StatusCode::kAlreadyExists, Path("taken")));
  EXPECT_EQ(fs().mutation_count(), mutations);
  JKV_ASSERT_OK(fs().RenameNoReplace(Path("new"), Path("free")));
  EXPECT_EQ(fs().mutation_count(), mutations + 1);
  EXPECT_FALSE(Exists("new"));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  EXPECT_FALSE(Exists("free"));
  EXPECT_THAT(Content("new"), IsOkAndHolds("the backup"));
  EXPECT_THAT(Content("taken"), IsOkAndHolds("another file"));
  JKV_ASSERT_OK(fs().RenameNoReplace(Path("new"), Path("free")));
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(2));
  EXPECT_FALSE(Exists("new"));
  EXPECT_THAT(Content("free"), IsOkAndHolds("the backup"));
  EXPECT_THAT(Content("taken"), IsOkAndHolds("another file"));
}

TEST_P(FaultInjectingFsTest, UnsyncedEntryChangesMaySurviveAsAPrefixInOrder) {
  fs().SetDiskModel(DiskModel{.unsynced_entries_may_survive = true});
  // After a durable "old", three unsynced entry changes: create c1, delete old, create c2. The
  // names each prefix leaves (none of them, one, two, all three kept):
  const std::set<std::string> kPrefixStates = {"old ", "c1 old ", "c1 ", "c1 c2 "};
  std::set<std::string> seen;
  for (int seed = 0; seed < kSeeds; ++seed) {
    for (const char* name : {"c1", "c2"}) {
      if (Exists(name)) {
        JKV_ASSERT_OK(fs().Delete(Path(name)));
      }
    }
    JKV_ASSERT_OK(WriteDurably("old", "old"));  // also makes the deletes durable
    for (const char* name : {"c1", "c2"}) {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path(name), kCreate));
      JKV_ASSERT_OK(WriteString(*file, 0, name));
      JKV_ASSERT_OK(file->Sync(SyncKind::kData));  // content durable, the entry not
      if (std::string(name) == "c1") {
        JKV_ASSERT_OK(fs().Delete(Path("old")));
      }
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    std::string state;
    for (const char* name : {"c1", "c2", "old"}) {
      if (!Exists(name)) continue;
      absl::StrAppend(&state, name, " ");
      EXPECT_THAT(Content(name), IsOkAndHolds(std::string(name))) << "seed " << seed;
    }
    EXPECT_TRUE(kPrefixStates.contains(state)) << "not a prefix: " << state << "seed " << seed;
    seen.insert(state);
  }
  // Every prefix length shows: creates and the delete each both survive and get undone.
  EXPECT_EQ(seen, kPrefixStates);
}

TEST_P(FaultInjectingFsTest, FilesThatExistedBeforeAreDurableAndOthersUntouched) {
  JKV_ASSERT_OK(WriteStringToFile(env_->base_fs(), Path("pre"), "pre"));
  JKV_ASSERT_OK(WriteStringToFile(env_->base_fs(), Path("other"), "other"));
  JKV_ASSERT_OK(WriteUnsynced("pre", 0, "PRE"));  // first opened here: "pre" is durable
  JKV_ASSERT_OK(fs().Delete(Path("other")));
  JKV_ASSERT_OK(WriteStringToFile(env_->base_fs(), Path("untracked"), "u"));
  fs().SetTornSectorGarbage(false);
  JKV_ASSERT_OK(fs().SimulatePowerLoss(3));
  JKV_ASSERT_OK_AND_ASSIGN(std::string pre, Content("pre"));
  EXPECT_TRUE(pre == "pre" || pre == "PRE") << pre;
  EXPECT_THAT(Content("other"), IsOkAndHolds("other"));
  EXPECT_THAT(Content("untracked"), IsOkAndHolds("u"));
}

// ---- Power loss: handles ----

TEST_P(FaultInjectingFsTest, FilesOpenedBeforeAPowerLossAreDead) {
  JKV_ASSERT_OK(WriteDurably("a", "data"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
  JKV_ASSERT_OK_AND_ASSIGN(bool locked, file->TryLock(0, 0, LockMode::kExclusive));
  ASSERT_TRUE(locked);
  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  const auto dead = StatusIs(absl::StatusCode::kFailedPrecondition,
                             "file handle invalidated by simulated power loss");
  EXPECT_THAT(ReadString(*file, 0, 1), dead);
  EXPECT_THAT(WriteString(*file, 0, "x"), dead);
  EXPECT_THAT(file->Sync(SyncKind::kData), dead);
  EXPECT_THAT(file->Truncate(0), dead);
  EXPECT_THAT(file->Size(), dead);
  EXPECT_THAT(file->TryLock(0, 1, LockMode::kShared), dead);
  EXPECT_THAT(file->Unlock(0, 1), dead);
  EXPECT_THAT(file->MapSharedRegion(0, 64 << 10), dead);
  // A new File works, and the dead File's lock does not get in its way.
  JKV_ASSERT_OK_AND_ASSIGN(auto fresh, fs().Open(Path("a"), kReadWrite));
  JKV_ASSERT_OK_AND_ASSIGN(locked, fresh->TryLock(0, 0, LockMode::kExclusive));
  EXPECT_TRUE(locked);
  EXPECT_THAT(ReadString(*fresh, 0, 4), IsOkAndHolds("data"));
}

// ---- Process crash ----

TEST_P(FaultInjectingFsTest, ProcessCrashKillsFilesButKeepsUnsyncedChangesForAPowerLoss) {
  fs().SetTornSectorGarbage(false);
  bool dropped = false;
  for (int seed = 0; seed < kSeeds && !dropped; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(1024, 'o')));
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
    JKV_ASSERT_OK(WriteString(*file, 0, std::string(1024, 'n')));
    JKV_ASSERT_OK(WriteUnsynced("new", 0, "x"));
    const uint64_t mutations = fs().mutation_count();
    fs().SimulateProcessCrash();
    const auto dead = StatusIs(absl::StatusCode::kFailedPrecondition,
                               "file handle invalidated by simulated process crash");
    EXPECT_THAT(ReadString(*file, 0, 1), dead);
    EXPECT_THAT(WriteString(*file, 0, "x"), dead);
    EXPECT_THAT(file->Sync(SyncKind::kData), dead);
    EXPECT_THAT(file->Truncate(0), dead);
    EXPECT_THAT(file->Size(), dead);
    EXPECT_THAT(file->TryLock(0, 1, LockMode::kShared), dead);
    file.reset();  // a crashed connection goes before a new one opens
    EXPECT_EQ(fs().mutation_count(), mutations);
    // The OS still holds what the process wrote...
    EXPECT_THAT(Content("a"), IsOkAndHolds(std::string(1024, 'n')));
    EXPECT_THAT(Content("new"), IsOkAndHolds("x"));
    // ... and it is still unsynced: a power loss may drop the write, and undoes the create.
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_FALSE(Exists("new"));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    ASSERT_EQ(content.size(), 1024u);
    EXPECT_EQ(content.find_first_not_of("on"), std::string::npos);
    dropped = content != std::string(1024, 'n');
  }
  EXPECT_TRUE(dropped);
}

TEST_P(FaultInjectingFsTest, ProcessCrashAfterACrashPointKeepsOnlyTheMutationsBeforeIt) {
  fs().SetTornSectorGarbage(false);
  JKV_ASSERT_OK(WriteDurably("a", "aaaa"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
  fs().CrashAfterMutations(2);
  JKV_ASSERT_OK(WriteString(*file, 0, "b"));
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  EXPECT_THAT(WriteString(*file, 1, "c"), StatusIs(absl::StatusCode::kInternal, "not applied"));
  fs().SimulateProcessCrash();
  file.reset();
  EXPECT_THAT(Content("a"), IsOkAndHolds("baaa"));
  // The crash point is gone; a new write is unsynced, the synced one durable.
  JKV_ASSERT_OK(WriteUnsynced("a", 2, "d"));
  EXPECT_THAT(Content("a"), IsOkAndHolds("bada"));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
  EXPECT_TRUE(content == "baaa" || content == "bada") << content;
}

}  // namespace
}  // namespace journalkv::vfs
