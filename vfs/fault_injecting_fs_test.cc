// Tests of FaultInjectingFileSystem over both MemFileSystem and PosixFileSystem: it passes the
// conformance suite, its power-loss model yields exactly the states a disk may hold (for every
// DiskModel), process crashes kill handles but keep unsynced data, crash points stop mutations,
// injected errors carry POSIX codes and are not applied, a failed fsync keeps or loses each
// change for good, and skipped syncs keep the sync numbering.
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

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;
using DiskModel = FaultInjectingFileSystem::DiskModel;
using SyncRecord = FaultInjectingFileSystem::SyncRecord;


constexpr OpenOptions kCreate{OpenMode::kCreate, FileKind::kOther};
constexpr OpenOptions kReadWrite{OpenMode::kReadWrite, FileKind::kOther};
constexpr int kSeeds = 100;

// A FaultInjectingFileSystem over another environment's file system.
class FaultInjectingEnv final : public FileSystemEnv {
 public:
  explicit FaultInjectingEnv(std::unique_ptr<FileSystemEnv> base)
      : base_(std::move(base)), fs_(&base_->fs()) {}
  FaultInjectingFileSystem& fs() override { return fs_; }
  FileSystem& base_fs() { return base_->fs(); }
  const std::string& dir() const override { return base_->dir(); }

 private:
  std::unique_ptr<FileSystemEnv> base_;  // declared first: outlives fs_
  FaultInjectingFileSystem fs_;
};

std::unique_ptr<FaultInjectingEnv> MakeFaultOnMemEnv() {
  return std::make_unique<FaultInjectingEnv>(MakeMemEnv());
}
std::unique_ptr<FaultInjectingEnv> MakeFaultOnPosixEnv() {
  return std::make_unique<FaultInjectingEnv>(MakePosixEnv());
}

INSTANTIATE_TEST_SUITE_P(FaultInjecting, FileSystemConformanceTest,
                         ::testing::Values(FileSystemEnvFactory{"OnMem", &MakeFaultOnMemEnv},
                                           FileSystemEnvFactory{"OnPosix", &MakeFaultOnPosixEnv}),
                         FileSystemEnvFactoryName);

struct BaseParam {
  std::string name;
  std::unique_ptr<FaultInjectingEnv> (*make)();
};
void PrintTo(const BaseParam& param, std::ostream* os) { *os << param.name; }

class FaultInjectingFsTest : public ::testing::TestWithParam<BaseParam> {
 protected:
  void SetUp() override { env_ = GetParam().make(); }

  FaultInjectingFileSystem& fs() { return env_->fs(); }
  std::string Path(absl::string_view name) const { return env_->Path(name); }

  // Creates or replaces name with content and makes both content and name durable.
  absl::Status WriteDurably(absl::string_view name, absl::string_view content) {
    JKV_RETURN_IF_ERROR(WriteStringToFile(fs(), Path(name), content));
    JKV_ASSIGN_OR_RETURN(auto file, fs().Open(Path(name), kReadWrite));
    JKV_RETURN_IF_ERROR(file->Sync(SyncKind::kData));
    return fs().SyncDirectory(env_->dir());
  }
  // Writes without any sync through a File that is closed again.
  absl::Status WriteUnsynced(absl::string_view name, uint64_t offset, absl::string_view bytes) {
    JKV_ASSIGN_OR_RETURN(auto file, fs().Open(Path(name), kCreate));
    return WriteString(*file, offset, bytes);
  }
  absl::StatusOr<std::string> Content(absl::string_view name) {
    return ReadFileToString(fs(), Path(name));
  }
  bool Exists(absl::string_view name) {
    absl::StatusOr<bool> exists = fs().Exists(Path(name));
    EXPECT_THAT(exists, IsOk());
    return exists.value_or(false);
  }

  std::unique_ptr<FaultInjectingEnv> env_;
};

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

// ---- Crash points and counters ----

TEST_P(FaultInjectingFsTest, MutationCountCountsEachMutatingOperationOnce) {
  const uint64_t start = fs().mutation_count();
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));  // 1
  JKV_ASSERT_OK(WriteString(*file, 0, "abc"));                         // 2
  JKV_ASSERT_OK(file->Truncate(2));                                    // 3
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));                          // 4
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));                      // 5
  // None of these mutate.
  JKV_ASSERT_OK(ReadString(*file, 0, 2).status());
  JKV_ASSERT_OK(file->Size().status());
  JKV_ASSERT_OK(file->TryLock(0, 1, LockMode::kShared).status());
  JKV_ASSERT_OK(fs().Open(Path("a"), kCreate).status());
  JKV_ASSERT_OK(fs().Exists(Path("a")).status());
  file.reset();
  JKV_ASSERT_OK(fs().Delete(Path("a")));  // 6
  EXPECT_EQ(fs().mutation_count() - start, 6u);
  EXPECT_EQ(fs().sync_count(), 2u);
  EXPECT_THAT(fs().sync_mutation_indexes(), ElementsAre(start + 4, start + 5));
}

TEST_P(FaultInjectingFsTest, CrashAfterMutationsStopsApplyingMutationsUntilPowerLoss) {
  JKV_ASSERT_OK(WriteDurably("a", "aaaa"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
  const uint64_t before = fs().mutation_count();
  fs().CrashAfterMutations(1);
  JKV_ASSERT_OK(WriteString(*file, 0, "b"));
  const auto crashed = StatusIs(absl::StatusCode::kInternal, "simulated power loss");
  EXPECT_THAT(WriteString(*file, 1, "c"), crashed);
  EXPECT_THAT(file->Truncate(0), crashed);
  EXPECT_THAT(file->Sync(SyncKind::kData), crashed);
  EXPECT_THAT(fs().Delete(Path("a")), crashed);
  EXPECT_THAT(fs().SyncDirectory(env_->dir()), crashed);
  EXPECT_THAT(fs().Open(Path("new"), kCreate), crashed);
  EXPECT_FALSE(Exists("new"));
  // Reads and opens of existing files still work, and show nothing of the refused mutations.
  EXPECT_THAT(ReadString(*file, 0, 4), IsOkAndHolds("baaa"));
  JKV_EXPECT_OK(fs().Open(Path("a"), kReadWrite).status());
  EXPECT_EQ(fs().mutation_count(), before + 1);

  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  JKV_EXPECT_OK(WriteUnsynced("a", 0, "z"));
}

// The intended use of the counters: run a workload once to count its mutations, then crash
// after every prefix of it and check what a power loss leaves.
TEST_P(FaultInjectingFsTest, CrashSweepOverAWorkloadNeverLosesSyncedData) {
  auto workload = [this]() -> absl::Status {
    JKV_ASSIGN_OR_RETURN(auto file, fs().Open(Path("log"), kCreate));
    JKV_RETURN_IF_ERROR(WriteString(*file, 0, "first"));
    JKV_RETURN_IF_ERROR(file->Sync(SyncKind::kData));
    JKV_RETURN_IF_ERROR(fs().SyncDirectory(env_->dir()));
    JKV_RETURN_IF_ERROR(WriteString(*file, 5, "second"));
    return file->Sync(SyncKind::kData);
  };
  const uint64_t start = fs().mutation_count();
  JKV_ASSERT_OK(workload());
  const uint64_t n = fs().mutation_count() - start;
  const std::vector<uint64_t> syncs = fs().sync_mutation_indexes();
  ASSERT_EQ(syncs.size(), 3u);
  for (uint64_t k = 0; k <= n; ++k) {
    if (Exists("log")) {
      JKV_ASSERT_OK(fs().Delete(Path("log")));
    }
    JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));
    const uint64_t base = fs().mutation_count();
    fs().CrashAfterMutations(k);
    workload().IgnoreError();  // fails from mutation k + 1 on: that is the point
    JKV_ASSERT_OK(fs().SimulatePowerLoss(k));
    absl::StatusOr<std::string> content = Content("log");
    if (k >= syncs[1] - start) {  // "first" and its directory entry were durable
      ASSERT_THAT(content, IsOk()) << "k=" << k;
      EXPECT_EQ(content->substr(0, 5), "first") << "k=" << k;
    }
    if (k >= syncs[2] - start) {
      EXPECT_THAT(content, IsOkAndHolds("firstsecond")) << "k=" << k;
    }
    EXPECT_EQ(fs().mutation_count(), base + k);
  }
}

// ---- Injected errors ----

TEST_P(FaultInjectingFsTest, FailNthWriteWithEioIsInternalAndNotApplied) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().FailNth(FaultOp::kWrite, 2, EIO);
  JKV_ASSERT_OK(WriteString(*file, 0, "one"));
  EXPECT_THAT(WriteString(*file, 3, "two"),
              StatusIs(absl::StatusCode::kInternal,
                       Path("a") + ": pwrite at offset 3: Input/output error"));
  JKV_ASSERT_OK(WriteString(*file, 6, "six"));
  EXPECT_THAT(ReadString(*file, 0, 9), IsOkAndHolds(std::string("one\0\0\0six", 9)));
}

TEST_P(FaultInjectingFsTest, FailNthWriteWithEnospcIsResourceExhausted) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().FailNth(FaultOp::kWrite, 1, ENOSPC);
  EXPECT_THAT(WriteString(*file, 0, "x"),
              StatusIs(absl::StatusCode::kResourceExhausted, "No space left on device"));
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
  EXPECT_EQ(size, 0u);
}

TEST_P(FaultInjectingFsTest, PersistentFaultFailsEveryLaterOperationUntilCleared) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().FailNth(FaultOp::kSync, 2, EIO, /*persistent=*/true);
  JKV_EXPECT_OK(file->Sync(SyncKind::kData));
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(file->Sync(SyncKind::kAll),
                StatusIs(absl::StatusCode::kInternal, Path("a") + ": fsync: Input/output error"));
  }
  JKV_EXPECT_OK(WriteString(*file, 0, "writes are unaffected"));
  fs().ClearFaults();
  JKV_EXPECT_OK(file->Sync(SyncKind::kData));
}

TEST_P(FaultInjectingFsTest, FailNthReachesEveryOperationKindAndAppliesNothing) {
  JKV_ASSERT_OK(WriteDurably("a", "abcdef"));
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
  const auto eio = StatusIs(absl::StatusCode::kInternal, "Input/output error");
  fs().FailNth(FaultOp::kRead, 1, EIO);
  EXPECT_THAT(ReadString(*file, 0, 1), eio);
  fs().FailNth(FaultOp::kTruncate, 1, EIO);
  EXPECT_THAT(file->Truncate(1), eio);
  EXPECT_THAT(file->Size(), IsOkAndHolds(6u));
  fs().FailNth(FaultOp::kCreate, 1, ENOSPC);
  EXPECT_THAT(fs().Open(Path("b"), kCreate),
              StatusIs(absl::StatusCode::kResourceExhausted, Path("b") + ": open"));
  EXPECT_FALSE(Exists("b"));
  fs().FailNth(FaultOp::kDelete, 1, EIO);
  EXPECT_THAT(fs().Delete(Path("a")), eio);
  EXPECT_TRUE(Exists("a"));
  fs().FailNth(FaultOp::kDirSync, 1, EIO);
  EXPECT_THAT(fs().SyncDirectory(env_->dir()), eio);
  EXPECT_THAT(ReadString(*file, 0, 6), IsOkAndHolds("abcdef"));
}

TEST_P(FaultInjectingFsTest, FailedDirectorySyncLeavesTheCreateUndoable) {
  JKV_ASSERT_OK(WriteUnsynced("new", 0, "x"));
  fs().FailNth(FaultOp::kDirSync, 1, EIO);
  EXPECT_FALSE(fs().SyncDirectory(env_->dir()).ok());
  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  EXPECT_FALSE(Exists("new"));
}

// A failed fsync resolves each change at once, as Linux does after a writeback error: the
// overwrite and the append are each durable or lost (and undone in the base), none pending.
TEST_P(FaultInjectingFsTest, FailedSyncMakesEachChangeDurableOrLostAtOnce) {
  const std::string old_bytes(1024, 'o');
  std::set<std::string> seen;
  std::vector<std::string> by_seed;
  for (int seed = 0; seed <= kSeeds / 2; ++seed) {
    fs().SetSyncFailureSeed(seed % (kSeeds / 2));  // the last run repeats seed 0
    JKV_ASSERT_OK(WriteDurably("a", old_bytes));
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
    JKV_ASSERT_OK(WriteString(*file, 0, std::string(1024, 'n')));
    JKV_ASSERT_OK(WriteString(*file, 1024, std::string(1024, 'm')));
    fs().FailNth(FaultOp::kSync, 1, EIO);
    EXPECT_THAT(file->Sync(SyncKind::kData),
                StatusIs(absl::StatusCode::kInternal, ": fdatasync: Input/output error"));
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t size, file->Size());
    ASSERT_TRUE(size == 1024 || size == 2048) << size;
    JKV_ASSERT_OK_AND_ASSIGN(std::string after, ReadString(*file, 0, size));
    const std::string first = after.substr(0, 1024);
    ASSERT_TRUE(first == old_bytes || first == std::string(1024, 'n')) << "seed " << seed;
    if (size == 2048) {
      ASSERT_EQ(after.substr(1024), std::string(1024, 'm'));
    }
    seen.insert(std::string(1, first[0]) + (size == 2048 ? "m" : "-"));
    by_seed.push_back(after);
    // Nothing stays pending: a power loss keeps exactly what the failure made durable.
    file.reset();
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_THAT(Content("a"), IsOkAndHolds(after)) << "seed " << seed;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"nm", "n-", "om", "o-"}));
  EXPECT_EQ(by_seed.front(), by_seed.back());  // SetSyncFailureSeed reproduces the choices
}

// The retry-and-trust bug: a Sync after a failed one succeeds, but what the failure lost is gone.
TEST_P(FaultInjectingFsTest, RetriedSyncAfterAFailureDoesNotBringBackALostWrite) {
  bool lost = false;
  for (int seed = 0; seed < kSeeds && !lost; ++seed) {
    fs().SetSyncFailureSeed(seed);
    JKV_ASSERT_OK(WriteDurably("a", std::string(1024, 'o')));
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
    JKV_ASSERT_OK(WriteString(*file, 0, std::string(1024, 'n')));
    fs().FailNth(FaultOp::kSync, 1, EIO);
    EXPECT_FALSE(file->Sync(SyncKind::kData).ok());
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
    JKV_ASSERT_OK_AND_ASSIGN(std::string after, ReadString(*file, 0, 1024));
    file.reset();
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    EXPECT_THAT(Content("a"), IsOkAndHolds(after));
    lost = after == std::string(1024, 'o');
  }
  EXPECT_TRUE(lost);
}

TEST_P(FaultInjectingFsTest, ShortWriteRoundsDownToTheDiskModelSectorSize) {
  fs().SetDiskModel(DiskModel{.sector_size = 4096});
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().ShortWriteNth(1);
  EXPECT_THAT(WriteString(*file, 0, std::string(10000, 'n')),
              StatusIs(absl::StatusCode::kResourceExhausted, "pwrite at offset 4096"));
  EXPECT_THAT(file->Size(), IsOkAndHolds(4096u));
}

TEST_P(FaultInjectingFsTest, ShortWriteAppliesTheFirstHalfRoundedDownToASector) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().ShortWriteNth(1);
  EXPECT_THAT(WriteString(*file, 0, std::string(3000, 'n')),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Path("a") + ": pwrite at offset 1024: No space left on device"));
  EXPECT_THAT(ReadString(*file, 0, 1024), IsOkAndHolds(std::string(1024, 'n')));
  EXPECT_THAT(file->Size(), IsOkAndHolds(1024u));
  fs().ShortWriteNth(1, EIO);
  EXPECT_THAT(WriteString(*file, 4096, std::string(1000, 'm')),
              StatusIs(absl::StatusCode::kInternal, "Input/output error"));
  EXPECT_THAT(file->Size(), IsOkAndHolds(1024u));  // half of 1000 rounds down to nothing
  JKV_EXPECT_OK(WriteString(*file, 4096, "ok"));
}

TEST_P(FaultInjectingFsTest, OpCountCountsAttemptsIncludingFailures) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kCreate));
  fs().FailNth(FaultOp::kWrite, 1, EIO);
  EXPECT_FALSE(WriteString(*file, 0, "x").ok());
  JKV_ASSERT_OK(WriteString(*file, 0, "x"));
  JKV_ASSERT_OK(ReadString(*file, 0, 1).status());
  EXPECT_EQ(fs().op_count(FaultOp::kWrite), 2u);
  EXPECT_EQ(fs().op_count(FaultOp::kRead), 1u);
  EXPECT_EQ(fs().op_count(FaultOp::kCreate), 1u);
  EXPECT_EQ(fs().op_count(FaultOp::kSync), 0u);
}

TEST_P(FaultInjectingFsTest, CountersCountThroughTheWrapperAndInTheBase) {
  JKV_ASSERT_OK_AND_ASSIGN(
      auto file, fs().Open(Path("j"), OpenOptions{OpenMode::kCreate, FileKind::kJournal}));
  JKV_ASSERT_OK(WriteString(*file, 0, "1234"));
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));
  fs().FailNth(FaultOp::kWrite, 1, EIO);
  EXPECT_FALSE(WriteString(*file, 0, "lost").ok());
  const IoCounts mine = fs().stats().Snapshot(FileKind::kJournal);
  EXPECT_EQ(mine.writes, 1u);  // the failed write is not counted
  EXPECT_EQ(mine.bytes_written, 4u);
  EXPECT_EQ(mine.syncs, 1u);
  EXPECT_EQ(env_->base_fs().stats().Snapshot(FileKind::kJournal).writes, 1u);
}

// ---- Skipped syncs and the sync log ----

TEST_P(FaultInjectingFsTest, SkippedSyncMakesNothingDurableButCountsAsBefore) {
  fs().SetTornSectorGarbage(false);
  bool dropped = false;
  for (int seed = 0; seed < kSeeds && !dropped; ++seed) {
    JKV_ASSERT_OK(WriteDurably("a", std::string(1024, 'o')));
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("a"), kReadWrite));
    JKV_ASSERT_OK(WriteString(*file, 0, std::string(1024, 'n')));
    const uint64_t before = fs().mutation_count();
    fs().SkipSyncs({fs().sync_log().size() + 1});  // every sync so far succeeded: the next one
    JKV_ASSERT_OK(file->Sync(SyncKind::kData));
    EXPECT_EQ(fs().mutation_count(), before + 1);
    EXPECT_EQ(fs().sync_mutation_indexes().back(), before + 1);
    EXPECT_TRUE(fs().sync_log().back().skipped);
    file.reset();
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content("a"));
    dropped = content != std::string(1024, 'n');
  }
  EXPECT_TRUE(dropped);
}

std::string Describe(const SyncRecord& r) {
  return absl::StrCat("#", r.ordinal, " @", r.mutation_index, " ", r.path,
                      r.directory ? " dir" : "", r.skipped ? " skipped" : "");
}

TEST_P(FaultInjectingFsTest, SyncLogNumbersAttemptsAcrossCrashesAndMarksSkips) {
  const std::string a = Path("a");
  const std::string dir = env_->dir();
  fs().SkipSyncs({2, 5});
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(a, kCreate));  // mutation 1
  JKV_ASSERT_OK(WriteString(*file, 0, "x"));                   // 2
  JKV_ASSERT_OK(file->Sync(SyncKind::kData));                  // sync 1, mutation 3
  JKV_ASSERT_OK(fs().SyncDirectory(dir));                      // sync 2 (skipped), 4
  fs().FailNth(FaultOp::kSync, 1, EIO);
  EXPECT_FALSE(file->Sync(SyncKind::kAll).ok());  // sync 3 fails: numbered, not logged
  fs().CrashAfterMutations(0);
  EXPECT_FALSE(fs().SyncDirectory(dir).ok());  // refused by the crash point: no number
  fs().SimulateProcessCrash();
  EXPECT_FALSE(file->Sync(SyncKind::kData).ok());  // dead: no number
  file.reset();
  JKV_ASSERT_OK_AND_ASSIGN(file, fs().Open(a, kReadWrite));
  JKV_ASSERT_OK(file->Sync(SyncKind::kAll));  // sync 4, mutation 5
  file.reset();
  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  EXPECT_FALSE(Exists("a"));               // the skipped directory sync made nothing durable
  JKV_ASSERT_OK(fs().SyncDirectory(dir));  // sync 5 (skipped), mutation 6
  EXPECT_EQ(fs().sync_count(), 4u);
  EXPECT_THAT(fs().sync_mutation_indexes(), ElementsAre(3, 4, 5, 6));
  std::vector<std::string> log;
  for (const SyncRecord& record : fs().sync_log()) log.push_back(Describe(record));
  EXPECT_THAT(log, ElementsAre("#1 @3 " + a, "#2 @4 " + dir + " dir skipped", "#4 @5 " + a,
                               "#5 @6 " + dir + " dir skipped"));
}

// ---- Concurrency (meaningful under TSan) ----

TEST_P(FaultInjectingFsTest, ThreadsWritingAndSyncingTheirOwnFilesKeepWhatTheySynced) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      const std::string name = absl::StrCat("f", t);
      absl::StatusOr<std::unique_ptr<File>> file = fs().Open(Path(name), kCreate);
      ASSERT_THAT(file, IsOk());
      for (int i = 0; i < 20; ++i) {
        EXPECT_THAT(WriteString(**file, i * 600, std::string(600, 'a' + t)), IsOk());
        EXPECT_THAT(ReadString(**file, i * 600, 600), IsOk());
        if (i % 5 == 4) {
          EXPECT_THAT((*file)->Sync(SyncKind::kData), IsOk());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  JKV_ASSERT_OK(fs().SyncDirectory(env_->dir()));
  JKV_ASSERT_OK(fs().SimulatePowerLoss(5));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_THAT(Content(absl::StrCat("f", t)), IsOkAndHolds(std::string(20 * 600, 'a' + t)));
  }
}

// Every call either works or fails as dead, and once dead a File stays dead; what the threads
// wrote before the crash is what new Files read.
TEST_P(FaultInjectingFsTest, ProcessCrashWhileThreadsUseTheirFiles) {
  constexpr int kThreads = 3;
  std::vector<std::unique_ptr<File>> files;
  for (int t = 0; t < kThreads; ++t) {
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path(absl::StrCat("f", t)), kCreate));
    files.push_back(std::move(file));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&files, t] {
      bool dead = false;
      for (int i = 0; i < 200; ++i) {
        const absl::Status statuses[] = {WriteString(*files[t], i * 100, std::string(100, 'a' + t)),
                                         ReadString(*files[t], i * 100, 100).status(),
                                         files[t]->Sync(SyncKind::kData)};
        for (const absl::Status& status : statuses) {
          if (status.ok()) {
            EXPECT_FALSE(dead) << "a dead File came back";
            continue;
          }
          EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                                       "simulated process crash"));
          dead = true;
        }
      }
    });
  }
  fs().SimulateProcessCrash();
  for (std::thread& t : threads) t.join();
  files.clear();
  for (int t = 0; t < kThreads; ++t) {
    JKV_ASSERT_OK_AND_ASSIGN(std::string content, Content(absl::StrCat("f", t)));
    EXPECT_EQ(content.size() % 100, 0u);
    EXPECT_EQ(content, std::string(content.size(), 'a' + t));
  }
}

}  // namespace
}  // namespace journalkv::vfs
