// Tests of FaultInjectingFileSystem's emulated atomic batch: the shared contract on both bases,
// and its place in the power-loss model: a committed batch is kept whole or dropped whole, a
// durable commit survives every power loss, a Sync covers a non-durable one, a crash point or
// a process crash before the commit leaves nothing of it, a commit is one mutation, and a
// durable commit is a sync that SkipSyncs can take away.
#include <memory>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/atomic_batch_testing.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/fault_injecting_fs_testing.h"
#include "vfs/file_system_testing.h"

namespace journalkv::vfs {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

constexpr uint64_t kPage = 4096;

INSTANTIATE_TEST_SUITE_P(Bases, FaultInjectingFsTest,
                         ::testing::Values(BaseParam{"Mem", &MakeFaultOnMemEnv},
                                           BaseParam{"Posix", &MakeFaultOnPosixEnv}),
                         [](const auto& info) { return info.param.name; });

// A durable file of 4 pages (page i full of 0x10 + i), and what a batch of 3 scattered pages
// (and one past the end) makes of it.
class BatchPowerLossTest : public FaultInjectingFsTest {
 protected:
  void SetUp() override {
    FaultInjectingFsTest::SetUp();
    old_ = BatchTestPages(kPage, 4, 0x10);
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    fresh_ = old_;
    fresh_.resize(6 * kPage);
    for (int i : {0, 2, 5}) {
      std::fill(fresh_.begin() + i * kPage, fresh_.begin() + (i + 1) * kPage, uint8_t(0xA0 + i));
    }
  }
  // Writes the batch through `file` and commits it.
  absl::Status CommitBatch(File& file, BatchSync sync) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<AtomicBatch> batch, file.BeginAtomicBatch());
    for (int i : {0, 2, 5}) {
      JKV_RETURN_IF_ERROR(
          batch->Write(i * kPage, absl::MakeConstSpan(fresh_).subspan(i * kPage, kPage)));
    }
    return batch->Commit(sync);
  }
  std::vector<uint8_t> Now() {
    absl::StatusOr<std::string> content = Content("db");
    EXPECT_THAT(content, IsOk());
    return std::vector<uint8_t>(content->begin(), content->end());
  }

  // Whether `after` holds the batch's pages (0, 2 and 5) all new (1), all old (0: page 5
  // absent), or a mix (-1). Other pages are not looked at.
  int BatchState(const std::vector<uint8_t>& after) const {
    auto same = [&](const std::vector<uint8_t>& want, int i) {
      return after.size() >= (i + 1) * kPage &&
             std::equal(want.begin() + i * kPage, want.begin() + (i + 1) * kPage,
                        after.begin() + i * kPage);
    };
    if (same(fresh_, 0) && same(fresh_, 2) && same(fresh_, 5)) return 1;
    if (same(old_, 0) && same(old_, 2) && after.size() == old_.size()) return 0;
    return -1;
  }

  std::vector<uint8_t> old_, fresh_;
};

INSTANTIATE_TEST_SUITE_P(Bases, BatchPowerLossTest,
                         ::testing::Values(BaseParam{"Mem", &MakeFaultOnMemEnv},
                                           BaseParam{"Posix", &MakeFaultOnPosixEnv}),
                         [](const auto& info) { return info.param.name; });

TEST_P(FaultInjectingFsTest, AtomicBatchKeepsTheContract) {
  RunAtomicBatchContract(fs(), env_->dir(), 512);
}

TEST_P(BatchPowerLossTest, ANonDurableCommitIsKeptWholeOrDroppedWhole) {
  int kept = 0, dropped = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
      // An unsynced write elsewhere before the batch still draws on its own.
      JKV_ASSERT_OK(file->Write(3 * kPage, std::vector<uint8_t>(kPage, 0x13)));
      JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kAtomicOnly));
      ASSERT_EQ(Now(), fresh_);
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    const int state = BatchState(Now());
    ASSERT_NE(state, -1) << "seed " << seed << ": a part of the batch survived";
    (state == 1 ? kept : dropped)++;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(dropped, 0);
}

// Batches reach the disk in their commit order: of two non-durable batches, the second is never
// kept without the first; a durable one keeps every batch before it.
TEST_P(BatchPowerLossTest, BatchesAreKeptInTheirCommitOrder) {
  auto page_is = [&](const std::vector<uint8_t>& image, int i, uint8_t value) {
    return image.size() >= (i + 1) * kPage && image[i * kPage] == value;
  };
  int outcomes[3] = {0, 0, 0};  // none, the first only, both
  for (int seed = 0; seed < kSeeds; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
      for (uint8_t value : {0xB1, 0xB2}) {  // page 1, then page 3
        JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicBatch> batch, file->BeginAtomicBatch());
        JKV_ASSERT_OK(batch->Write((value == 0xB1 ? 1 : 3) * kPage,
                                   std::vector<uint8_t>(kPage, value)));
        JKV_ASSERT_OK(batch->Commit(BatchSync::kAtomicOnly));
      }
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    const std::vector<uint8_t> after = Now();
    const bool first = page_is(after, 1, 0xB1), second = page_is(after, 3, 0xB2);
    ASSERT_TRUE(first || !second) << "seed " << seed << ": the second batch without the first";
    outcomes[first + second]++;
  }
  EXPECT_GT(outcomes[0], 0);
  EXPECT_GT(outcomes[1], 0);
  EXPECT_GT(outcomes[2], 0);
  for (int seed = 0; seed < 20; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicBatch> batch, file->BeginAtomicBatch());
      JKV_ASSERT_OK(batch->Write(kPage, std::vector<uint8_t>(kPage, 0xB1)));
      JKV_ASSERT_OK(batch->Commit(BatchSync::kAtomicOnly));
      JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kDurable));
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    const std::vector<uint8_t> after = Now();
    ASSERT_TRUE(page_is(after, 1, 0xB1)) << "seed " << seed << ": lost before a durable batch";
    ASSERT_EQ(BatchState(after), 1) << "seed " << seed;
  }
}

TEST_P(BatchPowerLossTest, ADurableCommitSurvivesEveryPowerLoss) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
      JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kDurable));
      // A later unsynced write to another page may be lost, never the batch.
      JKV_ASSERT_OK(file->Write(kPage, std::vector<uint8_t>(kPage, 0x77)));
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    std::vector<uint8_t> after = Now();
    ASSERT_EQ(after.size(), fresh_.size()) << "seed " << seed;
    for (int i : {0, 2, 5}) {
      ASSERT_TRUE(std::equal(fresh_.begin() + i * kPage, fresh_.begin() + (i + 1) * kPage,
                             after.begin() + i * kPage))
          << "seed " << seed << ": page " << i << " of a durable batch lost";
    }
  }
}

TEST_P(BatchPowerLossTest, ASyncAfterANonDurableCommitMakesItDurable) {
  for (int seed = 0; seed < 20; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
      JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kAtomicOnly));
      JKV_ASSERT_OK(file->Sync(SyncKind::kData));
    }
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    ASSERT_EQ(Now(), fresh_) << "seed " << seed;
  }
}

TEST_P(BatchPowerLossTest, ACommitIsOneMutationAndACrashPointBeforeItLeavesNothing) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
  const uint64_t before = fs().mutation_count();
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(kPage, 1)));
  JKV_ASSERT_OK(batch->Write(2 * kPage, std::vector<uint8_t>(kPage, 2)));
  EXPECT_EQ(fs().mutation_count(), before) << "writes into the batch are no mutations";
  fs().CrashAfterMutations(0);  // the crash point falls inside the batch, before its commit
  EXPECT_THAT(batch->Commit(BatchSync::kDurable),
              StatusIs(absl::StatusCode::kInternal, "simulated power loss"));
  EXPECT_EQ(fs().mutation_count(), before);
  file.reset();
  for (int seed = 0; seed < 10; ++seed) {
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    ASSERT_EQ(Now(), old_);
  }
  JKV_ASSERT_OK_AND_ASSIGN(file, fs().Open(Path("db"), kReadWrite));
  JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kAtomicOnly));
  EXPECT_EQ(fs().mutation_count(), before + 1);
  JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kDurable));
  EXPECT_EQ(fs().mutation_count(), before + 2);
  // The crash point right after a commit: the commit is whole in the state a power loss sees.
  fs().CrashAfterMutations(1);
  std::vector<uint8_t> page(kPage, 9);
  JKV_ASSERT_OK_AND_ASSIGN(auto next, file->BeginAtomicBatch());
  JKV_ASSERT_OK(next->Write(kPage, page));
  JKV_ASSERT_OK(next->Commit(BatchSync::kDurable));
  EXPECT_THAT(file->Write(0, page), StatusIs(absl::StatusCode::kInternal, ""));
  next.reset();
  file.reset();
  JKV_ASSERT_OK(fs().SimulatePowerLoss(1));
  std::vector<uint8_t> expected = fresh_;
  std::copy(page.begin(), page.end(), expected.begin() + kPage);
  EXPECT_EQ(Now(), expected);
}

TEST_P(BatchPowerLossTest, AProcessCrashBeforeTheCommitLeavesNothing) {
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
  JKV_ASSERT_OK_AND_ASSIGN(auto batch, file->BeginAtomicBatch());
  JKV_ASSERT_OK(batch->Write(0, std::vector<uint8_t>(kPage, 1)));
  fs().SimulateProcessCrash();
  EXPECT_THAT(batch->Commit(BatchSync::kDurable),
              StatusIs(absl::StatusCode::kFailedPrecondition, "process crash"));
  batch.reset();
  file.reset();
  EXPECT_EQ(Now(), old_);
  JKV_ASSERT_OK(fs().SimulatePowerLoss(0));
  EXPECT_EQ(Now(), old_);
}

TEST_P(BatchPowerLossTest, ADurableCommitIsASyncThatSkipSyncsCanTakeAway) {
  int kept = 0, dropped = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    ASSERT_THAT(WriteDurably("db", std::string(old_.begin(), old_.end())), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
    const uint64_t syncs = fs().sync_count();
    // The next sync attempt's number: every attempt so far succeeded or was skipped.
    const uint64_t ordinal = fs().sync_log().empty() ? 1 : fs().sync_log().back().ordinal + 1;
    fs().SkipSyncs({ordinal});
    JKV_ASSERT_OK(CommitBatch(*file, BatchSync::kDurable));
    fs().SkipSyncs({});
    ASSERT_EQ(fs().sync_count(), syncs + 1);
    const auto record = fs().sync_log().back();
    EXPECT_TRUE(record.atomic_commit);
    EXPECT_TRUE(record.skipped);
    EXPECT_EQ(record.path, Path("db"));
    file.reset();
    JKV_ASSERT_OK(fs().SimulatePowerLoss(seed));
    const std::vector<uint8_t> after = Now();
    if (after == fresh_) {
      ++kept;
    } else {
      ASSERT_EQ(after, old_) << "seed " << seed;
      ++dropped;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(dropped, 0) << "a skipped flush must make the commit losable";
}

TEST_P(BatchPowerLossTest, ABatchThatDoesNotFitIsRefusedWhole) {
  fs().SetCapacity(fs().used_bytes() + kPage);  // room for one more block, not two
  JKV_ASSERT_OK_AND_ASSIGN(auto file, fs().Open(Path("db"), kReadWrite));
  EXPECT_THAT(CommitBatch(*file, BatchSync::kDurable),
              StatusIs(absl::StatusCode::kResourceExhausted, "atomic batch commit"));
  EXPECT_EQ(Now(), old_);
}

}  // namespace
}  // namespace journalkv::vfs
