// The one scan of the readers' pins (OldestLivePin) over a -shm in memory (vfs::MemFileSystem),
// opened by several "connections" (one File and one WalIndex each), so that a slot or mark
// lock held by one is seen by the others as it would be across processes.
#include "shm/pin_scan.h"

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "shm/pins.h"
#include "vfs/mem_fs.h"
#include "vfs/vfs.h"

namespace journalkv::shm {
namespace {

constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr uint32_t kSeq = 9;
constexpr uint32_t kBackfill = 2;
constexpr uint32_t kMx = 20;

struct Connection {
  std::unique_ptr<vfs::File> file;
  std::unique_ptr<WalIndex> index;
};

class PinScanTest : public ::testing::Test {
 protected:
  Connection Join(bool initialize) {
    Connection c;
    c.file = *fs_.Open("/x.db-shm", kShmOpen);
    c.index = *WalIndex::OpenShared(c.file.get(), initialize);
    return c;
  }
  void SetUp() override {
    me_ = Join(true);
    other_ = Join(false);
  }
  PinScanResult Scan(PinScanUse use, const OwnHolders& own = {}) {
    absl::StatusOr<PinScanResult> r =
        OldestLivePin(*me_.index, 0, kSeq, kBackfill, kMx, own, use);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : PinScanResult{};
  }

  vfs::MemFileSystem fs_;
  Connection me_;
  Connection other_;
};

TEST_F(PinScanTest, NoPinsAllowTheCeiling) {
  for (PinScanUse use : {PinScanUse::kCheckpoint, PinScanUse::kView}) {
    const PinScanResult r = Scan(use);
    EXPECT_EQ(r.limit, kMx);
    EXPECT_EQ(r.live, 0);
    EXPECT_EQ(r.oldest, 0u);
  }
}

// A live slot's pin of the scanned generation holds the log at its frame; a slot whose owner
// let go (its process died) holds nothing back, whatever its pin says.
TEST_F(PinScanTest, ALiveSlotHoldsTheLogAndADeadOneDoesNot) {
  ASSERT_TRUE(*other_.index->TryLockSlot(0));
  other_.index->set_pin(0, 0, EncodePin(kSeq, 7));
  ASSERT_TRUE(*other_.index->TryLockSlot(1));
  other_.index->set_pin(1, 0, EncodePin(kSeq, 4));
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint).limit, 4u);
  EXPECT_EQ(Scan(PinScanUse::kView).limit, 4u);
  EXPECT_EQ(Scan(PinScanUse::kView).live, 2);
  ASSERT_TRUE(other_.index->UnlockSlot(1).ok());  // slot 1's owner is gone; its pin stays
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint).limit, 7u);
  const PinScanResult view = Scan(PinScanUse::kView);
  EXPECT_EQ(view.limit, 7u);
  EXPECT_EQ(view.live, 1);
  EXPECT_EQ(view.oldest, EncodePin(kSeq, 7));
}

// A pin of an older generation (its reader reads the database file, W7) allows only the backfill;
// the view still reports it as the oldest pin.
TEST_F(PinScanTest, AnOlderGenerationsPinAllowsTheBackfill) {
  ASSERT_TRUE(*other_.index->TryLockSlot(0));
  other_.index->set_pin(0, 0, EncodePin(kSeq - 1, 15));
  ASSERT_TRUE(*other_.index->TryLockSlot(1));
  other_.index->set_pin(1, 0, EncodePin(kSeq, 12));
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint).limit, kBackfill);
  const PinScanResult view = Scan(PinScanUse::kView);
  EXPECT_EQ(view.limit, kBackfill);
  EXPECT_EQ(view.oldest, EncodePin(kSeq - 1, 15));
}

// M1, M4: a mark's pin holds the log while someone holds its byte shared, and nothing once
// nobody does.
TEST_F(PinScanTest, AMarkHoldsTheLogOnlyWhileSomeoneReadsUnderIt) {
  ASSERT_TRUE(*other_.index->TryLockMark(3, vfs::LockMode::kExclusive));
  other_.index->set_mark_pin(3, 0, EncodePin(kSeq, 6));
  ASSERT_TRUE(*other_.index->TryLockMark(3, vfs::LockMode::kShared));
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint).limit, 6u);
  EXPECT_EQ(Scan(PinScanUse::kView).live, 1);
  ASSERT_TRUE(other_.index->UnlockMark(3).ok());
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint).limit, kMx);
  EXPECT_EQ(Scan(PinScanUse::kView).live, 0);
}

// M5: the caller's own mark reads as held by nobody in the lock table (a lock never conflicts
// with its owner's test), yet its pin is honoured, and the checkpoint learns the limit is its own.
TEST_F(PinScanTest, TheCallersOwnMarkIsLiveWithoutALockTest) {
  ASSERT_TRUE(*me_.index->TryLockMark(5, vfs::LockMode::kExclusive));
  std::atomic<int> my_mark{5};
  me_.index->set_mark_pin(5, 0, EncodePin(kSeq, 8));
  ASSERT_TRUE(*me_.index->TryLockMark(5, vfs::LockMode::kShared));
  ASSERT_TRUE(*me_.index->HolderGone(kMaxSlots + 5));  // what a lock test would say
  const OwnHolders own{-1, &my_mark};
  const PinScanResult r = Scan(PinScanUse::kCheckpoint, own);
  EXPECT_EQ(r.limit, 8u);
  EXPECT_TRUE(r.own_limits);
  EXPECT_EQ(Scan(PinScanUse::kView, own).live, 1);
  // Read at each holder: a mark the caller's threads left is no longer its own.
  my_mark.store(-1);
  EXPECT_EQ(Scan(PinScanUse::kCheckpoint, own).limit, kMx);
  EXPECT_FALSE(*HolderLive(*me_.index, kMaxSlots + 5, OwnHolders{-1, &my_mark}));
}

// A checkpoint lock-tests only the pins below the limit it found (a system call each); the view
// counts every live one.
TEST_F(PinScanTest, ACheckpointTestsOnlyThePinsThatLowerItsLimit) {
  ASSERT_TRUE(*other_.index->TryLockSlot(0));
  other_.index->set_pin(0, 0, EncodePin(kSeq, 5));
  ASSERT_TRUE(*other_.index->TryLockSlot(1));
  other_.index->set_pin(1, 0, EncodePin(kSeq, 9));
  const PinScanResult ckpt = Scan(PinScanUse::kCheckpoint);
  EXPECT_EQ(ckpt.limit, 5u);
  EXPECT_EQ(ckpt.live, 1);
  EXPECT_FALSE(ckpt.own_limits);
  EXPECT_EQ(Scan(PinScanUse::kView).live, 2);
}

}  // namespace
}  // namespace journalkv::shm
