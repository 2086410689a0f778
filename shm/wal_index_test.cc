// Tests of WalIndex on the heap and over the -shm file of the in-memory and the POSIX file
// systems: the header protocol, checkpoint info, the locks and reader slots, sharing between
// connections, the layout version and initialisation. The hash tables: wal_index_hash_test.cc.
#include "shm/wal_index.h"

#include <algorithm>
#include <cstring>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/vfs.h"
#include "shm/wal_index_testing.h"

namespace journalkv::shm::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(All, WalIndexTest,
                         ::testing::Values(Backend::kMem, Backend::kPosix, Backend::kHeap),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Shared, SharedWalIndexTest,
                         ::testing::Values(Backend::kMem, Backend::kPosix), BackendName);

// --- the index header

TEST_P(WalIndexTest, FreshHeaderIsInvalidAndPublishedHeadersReadBack) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  EXPECT_EQ(index->shared(), !heap());
  IndexHeader h;
  EXPECT_FALSE(index->ReadHeader(&h));
  index->WriteHeader(SampleHeader(1));
  ASSERT_TRUE(index->ReadHeader(&h));
  EXPECT_EQ(h, SampleHeader(1));
  index->WriteHeader(SampleHeader(2));
  ASSERT_TRUE(index->ReadHeader(&h));
  EXPECT_EQ(h, SampleHeader(2));
}

TEST_P(WalIndexTest, GenerationIsComparesBothCopiesOfOneLog) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  IndexHeader h = SampleHeader(1);  // log 0 at generation 3, log 1 at 4
  index->WriteHeader(h);
  EXPECT_TRUE(index->GenerationIs(0, 3));
  EXPECT_FALSE(index->GenerationIs(0, 4));
  EXPECT_TRUE(index->GenerationIs(1, 4));
  EXPECT_FALSE(index->GenerationIs(1, 3));
  h.logs[0].ckpt_seq = 0xFFFFFFFF;
  index->WriteHeader(h);
  EXPECT_TRUE(index->GenerationIs(0, 0xFFFFFFFF));
  EXPECT_FALSE(index->GenerationIs(0, 3));
  EXPECT_TRUE(index->GenerationIs(1, 4));
  index->CorruptHeaderForTesting();  // the checksum only: GenerationIs does not look at it
  EXPECT_TRUE(index->GenerationIs(0, 0xFFFFFFFF));
}

TEST_P(WalIndexTest, DamagedHeaderIsInvalidUntilRewritten) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  index->WriteHeader(SampleHeader(1));
  index->CorruptHeaderForTesting();
  IndexHeader h = SampleHeader(9);
  EXPECT_FALSE(index->ReadHeader(&h));
  EXPECT_EQ(h, SampleHeader(9));  // untouched on failure
  index->WriteHeader(SampleHeader(2));
  ASSERT_TRUE(index->ReadHeader(&h));
  EXPECT_EQ(h, SampleHeader(2));
}

// A header whose checksum matches but whose fields no writer can publish (a -shm damaged or
// written by a hostile process; the shm fuzzer found current_log 2) reads as torn, so that
// the caller waits it out and then recovers, instead of indexing past the two logs.
TEST_P(SharedWalIndexTest, HeaderWithImpossibleFieldsIsInvalid) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  index->WriteHeader(SampleHeader(1));
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* file, KeptFile());
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t* r0, file->MapSharedRegion(0, kRegionSize));
  // Word 3 of each copy is current_log, word 1 page_size; the checksum follows 18 words.
  for (const auto& [word, value] : {std::pair<int, uint32_t>{3, 2}, {1, 1000}}) {
    index->WriteHeader(SampleHeader(1));
    for (size_t copy : {kHeaderAOffset, kHeaderBOffset}) {
      std::memcpy(r0 + copy + 4 * word, &value, 4);
      const uint64_t sum = base::Xxh3(r0 + copy, kHeaderBytes - 8, 0);
      std::memcpy(r0 + copy + kHeaderBytes - 8, &sum, 8);
    }
    IndexHeader h;
    EXPECT_FALSE(index->ReadHeader(&h)) << "word " << word;
    EXPECT_FALSE(index->ReadHeaderCopy(0, &h)) << "word " << word;
    EXPECT_FALSE(index->ReadHeaderCopy(1, &h)) << "word " << word;
  }
}

// Copies that disagree are refused even when each has a good checksum (a writer between them),
// and GenerationIs needs both copies to agree.
// Only POSIX shows file writes in the mapping, so the copy is edited through the file there.
TEST(PosixWalIndexTest, HeaderCopiesThatDisagreeAreInvalid) {
  std::unique_ptr<vfs::FileSystemEnv> env = vfs::MakePosixEnv();
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> file,
                           env->fs().Open(env->Path("x.db-shm"), kShmOpen));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, WalIndex::OpenShared(file.get(), true));
  IndexHeader restarted = SampleHeader(2);
  restarted.logs[0].ckpt_seq = 8;
  index->WriteHeader(restarted);
  JKV_ASSERT_OK_AND_ASSIGN(std::string copy_b,
                           vfs::ReadString(*file, kHeaderBOffset, kHeaderBytes));
  index->WriteHeader(SampleHeader(1));
  IndexHeader h;
  ASSERT_TRUE(index->ReadHeader(&h));
  JKV_ASSERT_OK(vfs::WriteString(*file, kHeaderBOffset, copy_b));  // B: restarted, A: still 1
  EXPECT_FALSE(index->ReadHeader(&h));
  EXPECT_FALSE(index->GenerationIs(0, 3));
  EXPECT_FALSE(index->GenerationIs(0, 8));
  EXPECT_TRUE(index->GenerationIs(1, 4));  // the same in both copies
  JKV_ASSERT_OK(vfs::WriteString(*file, kHeaderAOffset, copy_b));  // a finished publish
  ASSERT_TRUE(index->ReadHeader(&h));
  EXPECT_EQ(h, restarted);
  EXPECT_TRUE(index->GenerationIs(0, 8));
}

// --- checkpoint info, slots and locks

TEST_P(WalIndexTest, CheckpointInfoAndSlotWordsStartZeroAndKeepValues) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  for (int log = 0; log < 2; ++log) {
    EXPECT_EQ(index->backfill(log), 0);
    EXPECT_EQ(index->ckpt_target(log), 0);
  }
  EXPECT_EQ(index->pin(kMaxSlots - 1, 1), 0);
  EXPECT_EQ(index->owner(0), 0);
  index->set_backfill(1, 42);
  index->set_ckpt_target(0, uint64_t{7} << 32 | 99);
  index->set_pin(3, 0, 0xAAAABBBBCCCCDDDD);
  index->set_pin(3, 1, 17);
  index->set_owner(kMaxSlots - 1, 12345);
  EXPECT_EQ(index->backfill(0), 0);
  EXPECT_EQ(index->backfill(1), 42);
  EXPECT_EQ(index->ckpt_target(0), uint64_t{7} << 32 | 99);
  EXPECT_EQ(index->ckpt_target(1), 0);
  EXPECT_EQ(index->pin(3, 0), 0xAAAABBBBCCCCDDDD);
  EXPECT_EQ(index->pin(3, 1), 17);
  EXPECT_EQ(index->pin(2, 1), 0);
  EXPECT_EQ(index->owner(kMaxSlots - 1), 12345);
  // None of it touches the header.
  IndexHeader h;
  EXPECT_FALSE(index->ReadHeader(&h));
}

TEST(HeapWalIndexTest, GrantsEveryLockAndHandsOutEachSlotOnce) {
  std::unique_ptr<WalIndex> index = WalIndex::OpenHeap();
  EXPECT_FALSE(index->shared());
  for (ShmLock lock : {ShmLock::kWrite, ShmLock::kCkpt, ShmLock::kRecover, ShmLock::kDms}) {
    EXPECT_TRUE(Ok(index->TryLock(lock, LockMode::kExclusive)));
    EXPECT_TRUE(Ok(index->TryLock(lock, LockMode::kExclusive)));
    EXPECT_THAT(index->Unlock(lock), IsOk());
  }
  EXPECT_TRUE(Ok(index->SlotOwnerGone(4)));
  EXPECT_TRUE(Ok(index->TryLockSlot(4)));
  EXPECT_FALSE(Ok(index->TryLockSlot(4)));
  EXPECT_FALSE(Ok(index->SlotOwnerGone(4)));
  EXPECT_TRUE(Ok(index->SlotOwnerGone(5)));
  EXPECT_TRUE(Ok(index->TryLockSlot(5)));
  EXPECT_THAT(index->UnlockSlot(4), IsOk());
  EXPECT_TRUE(Ok(index->SlotOwnerGone(4)));
  EXPECT_TRUE(Ok(index->TryLockSlot(4)));
}

TEST_P(SharedWalIndexTest, LocksConflictBetweenConnections) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(false));
  EXPECT_TRUE(Ok(a->TryLock(ShmLock::kDms, LockMode::kShared)));
  EXPECT_TRUE(Ok(b->TryLock(ShmLock::kDms, LockMode::kShared)));
  EXPECT_FALSE(Ok(b->TryLock(ShmLock::kDms, LockMode::kExclusive)));
  EXPECT_TRUE(Ok(a->TryLock(ShmLock::kWrite, LockMode::kExclusive)));
  EXPECT_FALSE(Ok(b->TryLock(ShmLock::kWrite, LockMode::kExclusive)));
  EXPECT_TRUE(Ok(b->TryLock(ShmLock::kCkpt, LockMode::kExclusive)));  // another byte
  EXPECT_FALSE(Ok(a->TryLock(ShmLock::kCkpt, LockMode::kExclusive)));
  JKV_EXPECT_OK(a->Unlock(ShmLock::kWrite));
  EXPECT_TRUE(Ok(b->TryLock(ShmLock::kWrite, LockMode::kExclusive)));
  JKV_EXPECT_OK(a->Unlock(ShmLock::kDms));
  EXPECT_TRUE(Ok(b->TryLock(ShmLock::kDms, LockMode::kExclusive)));  // now alone
}

TEST_P(SharedWalIndexTest, SlotLockBelongsToOneConnectionUntilItGoes) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> file_a, OpenFile());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> file_b, OpenFile());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, WalIndex::OpenShared(file_a.get(), true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b,
                           WalIndex::OpenShared(file_b.get(), false));
  EXPECT_TRUE(Ok(a->TryLockSlot(3)));
  EXPECT_FALSE(Ok(b->TryLockSlot(3)));
  EXPECT_FALSE(Ok(b->SlotOwnerGone(3)));
  EXPECT_TRUE(Ok(b->SlotOwnerGone(4)));
  JKV_ASSERT_OK(a->UnlockSlot(3));
  EXPECT_TRUE(Ok(b->SlotOwnerGone(3)));
  EXPECT_TRUE(Ok(b->TryLockSlot(3)));
  EXPECT_FALSE(Ok(a->TryLockSlot(3)));
  EXPECT_FALSE(Ok(a->SlotOwnerGone(3)));
  // A connection that goes away (its File closed, as when its process dies) frees its slot.
  b.reset();
  file_b.reset();
  EXPECT_TRUE(Ok(a->SlotOwnerGone(3)));
  EXPECT_TRUE(Ok(a->TryLockSlot(3)));
}

// S1: slots_used is one past the highest slot claimed, in every connection's view; it never
// shrinks while the file lives, and a new life starts it at 0.
TEST_P(SharedWalIndexTest, SlotsUsedCoversEveryClaimedSlot) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(false));
  EXPECT_EQ(b->slots_used(), 0);
  EXPECT_TRUE(Ok(a->TryLockSlot(0)));
  EXPECT_EQ(b->slots_used(), 1);
  EXPECT_TRUE(Ok(b->TryLockSlot(6)));
  EXPECT_EQ(a->slots_used(), 7);
  EXPECT_FALSE(Ok(a->TryLockSlot(6)));  // a failed claim changes nothing
  EXPECT_TRUE(Ok(a->TryLockSlot(2)));
  EXPECT_EQ(a->slots_used(), 7);
  JKV_ASSERT_OK(b->UnlockSlot(6));
  EXPECT_EQ(a->slots_used(), 7);
  EXPECT_TRUE(Ok(a->TryLockSlot(kMaxSlots - 1)));
  EXPECT_EQ(b->slots_used(), kMaxSlots);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> c, Open(true));  // a new life
  EXPECT_EQ(c->slots_used(), 0);
}

TEST(HeapWalIndexTest, SlotsUsedCoversEveryClaimedSlot) {
  std::unique_ptr<WalIndex> index = WalIndex::OpenHeap();
  EXPECT_EQ(index->slots_used(), 0);
  EXPECT_TRUE(Ok(index->TryLockSlot(3)));
  EXPECT_EQ(index->slots_used(), 4);
  EXPECT_TRUE(Ok(index->TryLockSlot(1)));
  EXPECT_EQ(index->slots_used(), 4);
}

TEST(PinHoldersTest, AScanVisitsTheUsedSlotsThenEveryMark) {
  for (int used : {0, 1, 5, kMaxSlots}) {
    std::vector<int> visited;
    for (int h = FirstHolder(used); h < kPinHolders; h = NextHolder(h, used)) visited.push_back(h);
    std::vector<int> expected;
    for (int h = 0; h < used; ++h) expected.push_back(h);
    for (int m = 0; m < kOverflowMarks; ++m) expected.push_back(kMaxSlots + m);
    EXPECT_EQ(visited, expected) << "slots_used " << used;
  }
}

// --- sharing

TEST_P(SharedWalIndexTest, ConnectionsSeeEachOthersWrites) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(false));
  IndexHeader h;
  a->WriteHeader(SampleHeader(5));
  ASSERT_TRUE(b->ReadHeader(&h));
  EXPECT_EQ(h, SampleHeader(5));
  b->CorruptHeaderForTesting();
  EXPECT_FALSE(a->ReadHeader(&h));

  std::vector<uint32_t> pages;
  for (uint32_t f = 1; f <= kB + 20; ++f) pages.push_back(f % 500 + 1);
  AppendFrames(*a, 0, pages);
  CheckLookups(*b, 0, pages, {1, 2, 250, 500, 501}, {1, 600, kB, kB + 20});
  EXPECT_EQ(Find(*b, 1, 2, kB + 20), 0);

  a->set_pin(7, 1, 1234);
  b->set_owner(7, 99);
  b->set_backfill(0, 55);
  a->set_ckpt_target(1, 66);
  EXPECT_EQ(b->pin(7, 1), 1234);
  EXPECT_EQ(a->owner(7), 99);
  EXPECT_EQ(a->backfill(0), 55);
  EXPECT_EQ(b->ckpt_target(1), 66);
}

// Another process appended blocks this connection never mapped; its Truncate still clears them.
TEST_P(SharedWalIndexTest, TruncateClearsBlocksAnotherConnectionAppended) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(false));
  std::vector<uint32_t> pages;
  for (uint32_t f = 1; f <= 3 * kB + 10; ++f) pages.push_back(f % 700 + 1);
  AppendFrames(*a, 0, pages);
  JKV_ASSERT_OK(b->Truncate(0, 100));
  pages.resize(100);
  CheckLookups(*a, 0, pages, {1, 2, 50, 100, 101, 102, 700}, {100, 3 * kB + 10});
  JKV_ASSERT_OK(b->Truncate(0, 0));
  CheckLookups(*a, 0, {}, {1, 2, 50}, {100, 3 * kB + 10});
}

// --- layout version and initialisation

TEST_P(SharedWalIndexTest, UninitialisedOrUnknownLayoutIsRefused) {
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* fresh, KeptFile("fresh.db-shm"));
  EXPECT_THAT(WalIndex::OpenShared(fresh, false),
              StatusIs(absl::StatusCode::kUnavailable,
                       ShmPath("fresh.db-shm") + ": not initialised (layout version 0)"));

  // Written through the file before any mapping: MemFileSystem copies the bytes in then.
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* odd, KeptFile("odd.db-shm"));
  JKV_ASSERT_OK(vfs::WriteString(*odd, kLayoutVersionOffset, std::string("\xEF\xBE\xAD\xDE", 4)));
  absl::StatusOr<std::unique_ptr<WalIndex>> refused = WalIndex::OpenShared(odd, false);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition, ShmPath("odd.db-shm")));
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition, "0xdeadbeef"));

  // Initialising writes the version; later connections accept it.
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* first, KeptFile("odd.db-shm"));
  JKV_ASSERT_OK(WalIndex::OpenShared(first, true).status());
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* second, KeptFile("odd.db-shm"));
  JKV_ASSERT_OK(WalIndex::OpenShared(second, false).status());
}

TEST_P(SharedWalIndexTest, InitialiseResetsHeaderCheckpointInfoAndSlots) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  a->WriteHeader(SampleHeader(3));
  a->set_backfill(0, 10);
  a->set_ckpt_target(1, 20);
  a->set_pin(kMaxSlots - 1, 0, 30);
  a->set_owner(0, 40);
  a->set_mark_pin(kOverflowMarks - 1, 1, 50);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(true));
  IndexHeader h;
  EXPECT_FALSE(a->ReadHeader(&h));
  EXPECT_FALSE(b->ReadHeader(&h));
  EXPECT_EQ(a->backfill(0), 0);
  EXPECT_EQ(a->ckpt_target(1), 0);
  EXPECT_EQ(a->pin(kMaxSlots - 1, 0), 0);
  EXPECT_EQ(a->owner(0), 0);
  EXPECT_EQ(a->mark_pin(kOverflowMarks - 1, 1), 0);
}

// Overflow marks: set under EXCLUSIVE, shared by several connections, and a mark's pin counts
// (HolderGone false) exactly while some other connection holds its lock byte.
TEST_P(SharedWalIndexTest, AnOverflowMarkIsSetAloneSharedByManyAndPinsOnlyWhileHeld) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> a, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> b, Open(false));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> c, Open(false));
  constexpr int kMark = 7;
  constexpr int kHolder = kMaxSlots + kMark;
  EXPECT_THAT(c->HolderGone(kHolder), IsOkAndHolds(true));
  EXPECT_THAT(a->TryLockMark(kMark, LockMode::kExclusive), IsOkAndHolds(true));
  a->set_mark_pin(kMark, 0, 111);
  a->set_mark_pin(kMark, 1, 222);
  EXPECT_EQ(b->holder_pin(kHolder, 0), 111);  // the same words as mark_pin
  EXPECT_EQ(b->mark_pin(kMark, 1), 222);
  EXPECT_THAT(b->TryLockMark(kMark, LockMode::kShared), IsOkAndHolds(false));  // being set
  EXPECT_THAT(c->HolderGone(kHolder), IsOkAndHolds(false));
  EXPECT_THAT(a->TryLockMark(kMark, LockMode::kShared), IsOkAndHolds(true));  // converted
  EXPECT_THAT(b->TryLockMark(kMark, LockMode::kShared), IsOkAndHolds(true));  // shared
  EXPECT_THAT(c->TryLockMark(kMark, LockMode::kExclusive), IsOkAndHolds(false));
  JKV_ASSERT_OK(a->UnlockMark(kMark));
  EXPECT_THAT(c->HolderGone(kHolder), IsOkAndHolds(false));  // b still reads under it
  EXPECT_THAT(c->TryLockMark(kMark, LockMode::kExclusive), IsOkAndHolds(false));
  JKV_ASSERT_OK(b->UnlockMark(kMark));
  EXPECT_THAT(c->HolderGone(kHolder), IsOkAndHolds(true));  // its words stay, pinning nothing
  EXPECT_EQ(c->mark_pin(kMark, 0), 111);
  EXPECT_THAT(c->TryLockMark(kMark, LockMode::kExclusive), IsOkAndHolds(true));
  // Slots keep their numbers among the holders; numbers past the marks are refused.
  a->set_pin(3, 0, 333);
  EXPECT_EQ(c->holder_pin(3, 0), 333);
  EXPECT_THAT(c->HolderGone(kPinHolders), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(c->TryLockMark(kOverflowMarks, LockMode::kShared),
              StatusIs(absl::StatusCode::kInvalidArgument, ""));
}

// A File without shared memory (as on a file system that cannot map files).
class NoSharedMemoryFile final : public vfs::File {
 public:
  absl::Status Read(uint64_t, absl::Span<uint8_t>) override { return Unsupported(); }
  absl::Status Write(uint64_t, absl::Span<const uint8_t>) override { return Unsupported(); }
  absl::Status Sync(vfs::SyncKind) override { return Unsupported(); }
  absl::Status Truncate(uint64_t) override { return Unsupported(); }
  absl::StatusOr<uint64_t> Size() override { return Unsupported(); }
  absl::StatusOr<bool> TryLock(uint64_t, uint64_t, LockMode) override { return Unsupported(); }
  absl::Status Unlock(uint64_t, uint64_t) override { return Unsupported(); }
  absl::StatusOr<bool> CanLock(uint64_t, uint64_t, LockMode) override { return Unsupported(); }
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t, size_t) override {
    return absl::UnimplementedError("no mmap here");
  }
  const std::string& path() const override { return path_; }

 private:
  static absl::Status Unsupported() { return absl::InternalError("not used by the test"); }
  const std::string path_ = "/nfs/x.db-shm";
};

TEST(WalIndexOpenTest, NoSharedMemoryIsUnimplementedNamingTheFile) {
  NoSharedMemoryFile file;
  EXPECT_THAT(WalIndex::OpenShared(&file, true),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "/nfs/x.db-shm: shared memory is not supported by this file system: "
                       "no mmap here"));
}

}  // namespace
}  // namespace journalkv::shm::testing
