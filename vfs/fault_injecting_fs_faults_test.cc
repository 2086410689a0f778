// Tests of FaultInjectingFileSystem over both MemFileSystem and PosixFileSystem: crash points
// stop mutations, injected errors carry POSIX codes and are not applied, a failed fsync keeps or
// loses each change for good, skipped syncs keep the sync numbering, and threads using their
// own files keep what they synced. The power-loss model: fault_injecting_fs_test.cc.
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

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectingFsTest,
                         ::testing::Values(BaseParam{"Mem", &MakeFaultOnMemEnv},
                                           BaseParam{"Posix", &MakeFaultOnPosixEnv}),
                         [](const auto& info) { return info.param.name; });

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
