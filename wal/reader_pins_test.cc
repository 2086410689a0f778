// The reader role on its own: a connection's slot, overflow mark and open snapshots' pins over
// a heap wal-index, or over a -shm in memory (vfs::MemFileSystem) that other "connections" (a
// File and a WalIndex each) share, so that their slot and mark locks are seen as across
// processes. What the WAL tests reach only through whole databases: the slot holds the oldest
// open snapshot (W3), the marks M1-M5.
#include "wal/reader_pins.h"

#include <cstdint>
#include <memory>

#include "base/mutex.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "shm/pin_scan.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "vfs/vfs.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::IsOk;
using shm::EncodePin;
using shm::kMaxSlots;

constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr uint32_t kSeq = 4;

WalSnapshot Snap(uint32_t mx, uint32_t seq1 = 0, uint32_t mx1 = 0) {
  WalSnapshot s;
  s.logs[0] = {kSeq, mx};
  s.logs[1] = {seq1, mx1};
  return s;
}

struct Connection {
  std::unique_ptr<vfs::File> file;
  std::unique_ptr<shm::WalIndex> index;
};

class ReaderPinsTest : public ::testing::Test {
 protected:
  Connection Join(bool initialize) {
    Connection c;
    c.file = *fs_.Open("/x.db-shm", kShmOpen);
    c.index = *shm::WalIndex::OpenShared(c.file.get(), initialize);
    return c;
  }
  // A read transaction's begin as WalConnection::BeginRead makes it once W3's re-check passes.
  bool Begin(ReaderPins& pins, const WalSnapshot& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pins.mu()) {
    const PinPair p = pins.PinsOf(s);
    if (!pins.Covered(p)) {
      absl::StatusOr<bool> pinned = pins.Pin(p);
      EXPECT_THAT(pinned.status(), IsOk());
      if (!pinned.ok() || !*pinned) return false;
    }
    pins.Open(p);
    return true;
  }
  // Another connection reading under mark `m` at log-0 frame `mx`.
  void HoldMark(shm::WalIndex& index, int m, uint32_t mx) {
    ASSERT_TRUE(*index.TryLockMark(m, vfs::LockMode::kExclusive));
    index.set_mark_pin(m, 0, EncodePin(kSeq, mx));
    ASSERT_TRUE(*index.TryLockMark(m, vfs::LockMode::kShared));
  }

  vfs::MemFileSystem fs_;
  base::Mutex mu_;
};

// W3: the slot holds the oldest open snapshot's pin; a later snapshot is covered by it and
// stores nothing; the slot moves forward as the oldest ends, and clears after the last.
TEST_F(ReaderPinsTest, TheSlotHoldsTheOldestOpenSnapshot) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  ReaderPins pins(/*wal2=*/false, &mu_);
  ASSERT_THAT(pins.Claim(index.get(), 8, "x"), IsOk());
  ASSERT_EQ(pins.slot(), 0);
  EXPECT_FALSE(pins.overflow());
  base::MutexLock lock(pins.mu());
  ASSERT_TRUE(Begin(pins, Snap(5)));
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 5));
  EXPECT_TRUE(pins.Covered(pins.PinsOf(Snap(9))));
  ASSERT_TRUE(Begin(pins, Snap(9)));
  ASSERT_TRUE(Begin(pins, Snap(9)));  // equal snapshots are kept twice
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 5));
  pins.Close(pins.PinsOf(Snap(9)));  // not the oldest: nothing moves
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 5));
  pins.Close(pins.PinsOf(Snap(5)));
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 9));
  pins.Close(pins.PinsOf(Snap(9)));
  EXPECT_EQ(index->pin(0, 0), 0u);
  EXPECT_TRUE(pins.OpenPinsForTesting().empty());
}

// W3's retry: a snapshot pinned and then found behind a checkpoint's target goes; the slot is
// back at the open snapshots' oldest pin.
TEST_F(ReaderPinsTest, UnpinPutsTheSlotBackToTheOldestOpenSnapshot) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  ReaderPins pins(/*wal2=*/false, &mu_);
  ASSERT_THAT(pins.Claim(index.get(), 8, "x"), IsOk());
  base::MutexLock lock(pins.mu());
  ASSERT_TRUE(*pins.Pin(pins.PinsOf(Snap(3))));
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 3));
  pins.Unpin();
  EXPECT_EQ(index->pin(0, 0), 0u);
  ASSERT_TRUE(Begin(pins, Snap(3)));
  pins.CheckInvariants();
}

// V5: in WAL2 a snapshot pins both logs, naming each log's generation even with no frame of it
// visible; the slot holds both.
TEST_F(ReaderPinsTest, Wal2PinsBothLogs) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  ReaderPins pins(/*wal2=*/true, &mu_);
  ASSERT_THAT(pins.Claim(index.get(), 8, "x"), IsOk());
  base::MutexLock lock(pins.mu());
  const WalSnapshot s = Snap(6, kSeq + 1, 0);
  EXPECT_EQ(pins.PinsOf(s).second, EncodePin(kSeq + 1, 0));
  ASSERT_TRUE(Begin(pins, s));
  EXPECT_EQ(index->pin(0, 0), EncodePin(kSeq, 6));
  EXPECT_EQ(index->pin(0, 1), EncodePin(kSeq + 1, 0));
  pins.Close(pins.PinsOf(s));
  EXPECT_EQ(index->pin(0, 1), 0u);
}

// The slot is the connection's for its life: another connection sees it taken, and free once
// this one goes (its pins cleared).
TEST_F(ReaderPinsTest, TheSlotIsHeldUntilThePinsGo) {
  Connection me = Join(true);
  Connection other = Join(false);
  {
    ReaderPins pins(/*wal2=*/false, &mu_);
    ASSERT_THAT(pins.Claim(me.index.get(), 8, "x"), IsOk());
    EXPECT_FALSE(*other.index->SlotOwnerGone(pins.slot()));
    base::MutexLock lock(pins.mu());
    ASSERT_TRUE(Begin(pins, Snap(2)));
  }
  EXPECT_TRUE(*other.index->SlotOwnerGone(0));
  EXPECT_EQ(other.index->pin(0, 0), 0u);
}

// M1, M2, M4: with no slot, the connection sets a free mark to its snapshot and holds it shared
// from its first open read to its last; another connection's scan honours it only meanwhile.
TEST_F(ReaderPinsTest, AnOverflowReaderHoldsAMarkWhileItReads) {
  Connection me = Join(true);
  Connection other = Join(false);
  ReaderPins pins(/*wal2=*/false, &mu_);
  ASSERT_THAT(pins.Claim(me.index.get(), /*max_slots=*/0, "x"), IsOk());
  EXPECT_TRUE(pins.overflow());
  const auto scan = [&] {
    return *shm::OldestLivePin(*other.index, 0, kSeq, 0, 100, {}, shm::PinScanUse::kView);
  };
  base::MutexLock lock(pins.mu());
  ASSERT_TRUE(Begin(pins, Snap(7)));
  EXPECT_EQ(pins.Own().mark->load(), 0);
  EXPECT_EQ(scan().limit, 7u);
  ASSERT_TRUE(Begin(pins, Snap(11)));  // the mark at 7 protects it too
  pins.Close(pins.PinsOf(Snap(7)));
  EXPECT_EQ(scan().limit, 7u);  // a mark's pin moves only while nobody holds it (M2)
  pins.Close(pins.PinsOf(Snap(11)));
  EXPECT_EQ(pins.Own().mark->load(), -1);
  EXPECT_EQ(scan().live, 0);  // M4: a mark nobody holds pins nothing
}

// M3: with every mark held by others, the reader shares the newest one at or below its
// snapshot, or, when every mark is past it, is told to take a newer snapshot.
TEST_F(ReaderPinsTest, WithEveryMarkHeldAReaderSharesTheNewestBelowIt) {
  Connection me = Join(true);
  Connection other = Join(false);
  for (int m = 0; m < shm::kOverflowMarks; ++m) HoldMark(*other.index, m, 20 + m);
  ReaderPins pins(/*wal2=*/false, &mu_);
  ASSERT_THAT(pins.Claim(me.index.get(), 0, "x"), IsOk());
  base::MutexLock lock(pins.mu());
  EXPECT_FALSE(Begin(pins, Snap(10)));  // every mark is past it
  EXPECT_EQ(pins.Own().mark->load(), -1);
  ASSERT_TRUE(Begin(pins, Snap(25)));
  EXPECT_EQ(pins.Own().mark->load(), 5);  // pinned at 25: the newest at or below
  pins.Close(pins.PinsOf(Snap(25)));
  EXPECT_EQ(pins.Own().mark->load(), -1);
}

// M5: the mark the connection reads under is its own for its scans, though the lock table says
// nobody holds it (a lock never conflicts with its owner's own test).
TEST_F(ReaderPinsTest, ItsOwnMarkIsItsOwnForTheScans) {
  Connection me = Join(true);
  ReaderPins pins(/*wal2=*/false, &mu_);
  ASSERT_THAT(pins.Claim(me.index.get(), 0, "x"), IsOk());
  base::MutexLock lock(pins.mu());
  ASSERT_TRUE(Begin(pins, Snap(4)));
  EXPECT_TRUE(*me.index->HolderGone(kMaxSlots + 0));
  EXPECT_TRUE(pins.Own().Is(kMaxSlots + 0));
  const shm::PinScanResult r = *shm::OldestLivePin(*me.index, 0, kSeq, 0, 100, pins.Own(),
                                                   shm::PinScanUse::kCheckpoint);
  EXPECT_EQ(r.limit, 4u);
  EXPECT_TRUE(r.own_limits);
  pins.Close(pins.PinsOf(Snap(4)));
}

}  // namespace
}  // namespace journalkv::wal
