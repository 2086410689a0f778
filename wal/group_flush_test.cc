// The group-flush role on its own: FLUSH over a heap wal-index (this connection's threads), or
// over a -shm in memory (vfs::MemFileSystem) that two "connections" (a File, a WalIndex and a
// GroupFlush each) share, so that the FLUSH byte is seen as across processes; Covers, the
// publish and its group (F3), the wait for joining writers, W14's give-up, and CheckInvariants
// (F1-F4) failing on each invariant broken.
#include "wal/group_flush.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/check.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "shm/pins.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "vfs/vfs.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::IsOk;

constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr uint32_t kSeq = 4;
constexpr absl::Duration kPatience = absl::Milliseconds(30);

// A header of log 0 at generation `seq` through frame `mx`, after `change` publishes.
shm::IndexHeader Header(uint32_t change, uint32_t mx, uint32_t seq = kSeq) {
  shm::IndexHeader h;
  h.change = change;
  h.page_size = 4096;
  h.page_count = 10;
  h.logs[0].ckpt_seq = seq;
  h.logs[0].mx_frame = mx;
  return h;
}

struct Connection {
  std::unique_ptr<vfs::File> file;
  std::unique_ptr<shm::WalIndex> index;
  GroupFlush flush;
};

// A TryLock whose result the test only compares (it expects false): the analysis off.
bool TryLockUnchecked(GroupFlush& flush, shm::WalIndex& index, absl::Status* error)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  const bool locked = flush.TryLock(index, error);
  if (locked) flush.Unlock(index);
  return locked;
}

class GroupFlushTest : public ::testing::Test {
 protected:
  std::unique_ptr<Connection> Join(bool initialize) {
    auto c = std::make_unique<Connection>();
    c->file = *fs_.Open("/x.db-shm", kShmOpen);
    c->index = *shm::WalIndex::OpenShared(c->file.get(), initialize);
    return c;
  }

  vfs::MemFileSystem fs_;
};

TEST(GroupFlushCoversTest, SameGenerationByFrameLaterGenerationAlways) {
  EXPECT_TRUE(GroupFlush::Covers(Header(3, 10), Header(2, 10)));
  EXPECT_TRUE(GroupFlush::Covers(Header(3, 11), Header(2, 10)));
  EXPECT_FALSE(GroupFlush::Covers(Header(2, 9), Header(3, 10)));
  // W12 c: a log restarts only once everything in it was published.
  EXPECT_TRUE(GroupFlush::Covers(Header(5, 0, kSeq + 1), Header(4, 50)));
  EXPECT_FALSE(GroupFlush::Covers(Header(4, 50), Header(5, 0, kSeq + 1)));
  // The log the commit was appended to (current_log) is the one compared.
  shm::IndexHeader wal2 = Header(6, 3);
  wal2.current_log = 1;
  wal2.logs[1] = {kSeq + 1, 0, 0, 7, 0};
  shm::IndexHeader published = wal2;
  published.logs[1].mx_frame = 6;
  EXPECT_FALSE(GroupFlush::Covers(published, wal2));
  published.logs[1].mx_frame = 7;
  EXPECT_TRUE(GroupFlush::Covers(published, wal2));
}

TEST(GroupFlushHeapTest, OneThreadOfTheConnectionAtATime) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  GroupFlush flush;
  absl::Status error;
  if (!flush.TryLock(*index, &error)) GTEST_FAIL() << "FLUSH is free";
  EXPECT_TRUE(flush.HeldHere());
  bool other = true;
  bool held_there = true;
  std::thread t([&] {
    absl::Status e;
    other = TryLockUnchecked(flush, *index, &e);
    held_there = flush.HeldHere();
  });
  t.join();
  EXPECT_FALSE(other);       // another thread of this connection holds it
  EXPECT_FALSE(held_there);  // F1: the holder is this thread
  const uint32_t seq = index->wake_seq(shm::WalIndex::Wake::kFlush);
  flush.Unlock(*index);
  EXPECT_FALSE(flush.HeldHere());
  EXPECT_NE(index->wake_seq(shm::WalIndex::Wake::kFlush), seq);  // the waiters are woken
  // Lock waits for the thread holding it to let go.
  if (!flush.TryLock(*index, &error)) GTEST_FAIL() << "FLUSH is free";
  std::atomic<bool> locked{false};
  std::thread waiter([&] {
    ASSERT_THAT(flush.Lock(*index, absl::Now() + absl::Seconds(10), absl::Seconds(10), "/x"),
                IsOk());
    flush.AssertHeld();
    locked = true;
    flush.Unlock(*index);
  });
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_FALSE(locked.load());
  flush.Unlock(*index);
  waiter.join();
  EXPECT_TRUE(locked.load());
}

TEST_F(GroupFlushTest, AnotherConnectionsFlushKeepsThisOneOutUntilW14GivesUp) {
  std::unique_ptr<Connection> a = Join(/*initialize=*/true);
  std::unique_ptr<Connection> b = Join(/*initialize=*/false);
  absl::Status error;
  if (!a->flush.TryLock(*a->index, &error)) GTEST_FAIL() << "FLUSH is free";
  EXPECT_FALSE(TryLockUnchecked(b->flush, *b->index, &error));
  EXPECT_THAT(error, IsOk());
  EXPECT_FALSE(b->flush.HeldHere());  // both locks or neither (F1): b's mutex was let go
  // W14: nothing published for the patience, past the deadline: busy, naming the file.
  const absl::Time start = absl::Now();
  absl::Status busy = b->flush.Lock(*b->index, start, kPatience, "/x.db-shm");
  EXPECT_TRUE(absl::IsUnavailable(busy)) << busy;
  EXPECT_NE(busy.message().find("/x.db-shm"), std::string::npos) << busy;
  EXPECT_GE(absl::Now() - start, kPatience);
  EXPECT_FALSE(b->flush.HeldHere());
  // A holder that lets go (its flush published) lets the waiter in, past its first patience.
  std::thread waiter([&] {
    ASSERT_THAT(b->flush.Lock(*b->index, absl::Now(), absl::Seconds(10), "/x.db-shm"), IsOk());
    b->flush.AssertHeld();
    EXPECT_TRUE(b->flush.HeldHere());
    b->flush.Unlock(*b->index);
  });
  absl::SleepFor(absl::Milliseconds(5));
  a->flush.Unlock(*a->index);
  waiter.join();
  if (!a->flush.TryLock(*a->index, &error)) GTEST_FAIL() << "FLUSH is free again";
  a->flush.Unlock(*a->index);
}

// Z1: the FLUSH word is odd exactly while a connection holds FLUSH, whoever takes it (TryLock,
// Lock), every take and release moves it, and a holder that died (the word left odd, the lock
// byte free: a connection gone without Unlock) is followed by a take that keeps it odd.
TEST_F(GroupFlushTest, TheFlushWordIsOddExactlyWhileFlushIsHeld) {
  using Wake = shm::WalIndex::Wake;
  std::unique_ptr<Connection> a = Join(/*initialize=*/true);
  std::unique_ptr<Connection> b = Join(/*initialize=*/false);
  const uint32_t free_seq = a->index->wake_seq(Wake::kFlush);
  EXPECT_FALSE(GroupFlush::UnderWay(free_seq));
  absl::Status error;
  if (!a->flush.TryLock(*a->index, &error)) GTEST_FAIL() << "FLUSH is free";
  const uint32_t held_seq = b->index->wake_seq(Wake::kFlush);
  EXPECT_TRUE(GroupFlush::UnderWay(held_seq));
  EXPECT_FALSE(TryLockUnchecked(b->flush, *b->index, &error));  // a miss changes nothing
  EXPECT_EQ(b->index->wake_seq(Wake::kFlush), held_seq);
  a->flush.Unlock(*a->index);
  const uint32_t released_seq = b->index->wake_seq(Wake::kFlush);
  EXPECT_FALSE(GroupFlush::UnderWay(released_seq));
  EXPECT_NE(released_seq, free_seq);
  ASSERT_THAT(b->flush.Lock(*b->index, absl::Now(), kPatience, "/x.db-shm"), IsOk());
  b->flush.AssertHeld();
  EXPECT_TRUE(GroupFlush::UnderWay(a->index->wake_seq(Wake::kFlush)));
  // b dies holding FLUSH: its file closes (the byte is freed), the word stays odd.
  b->index.reset();
  b->file.reset();
  const uint32_t dead_seq = a->index->wake_seq(Wake::kFlush);
  EXPECT_TRUE(GroupFlush::UnderWay(dead_seq));
  if (!a->flush.TryLock(*a->index, &error)) GTEST_FAIL() << "a dead holder's byte is free";
  EXPECT_TRUE(GroupFlush::UnderWay(a->index->wake_seq(Wake::kFlush)));
  EXPECT_NE(a->index->wake_seq(Wake::kFlush), dead_seq) << "the take moved it";
  a->flush.Unlock(*a->index);
  EXPECT_FALSE(GroupFlush::UnderWay(a->index->wake_seq(Wake::kFlush)));
}

TEST(GroupFlushHeapTest, APublishCountsTheCommitsItCovers) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  index->WriteHeader(Header(2, 10));
  index->WriteAppendedHeader(Header(5, 16));  // three commits pending
  GroupFlush flush;
  EXPECT_EQ(flush.last_group(), 1u);
  absl::Status error;
  if (!flush.TryLock(*index, &error)) GTEST_FAIL() << "FLUSH is free";
  shm::IndexHeader published;
  shm::IndexHeader appended;
  EXPECT_TRUE(GroupFlush::ReadPublished(*index, &published));
  EXPECT_TRUE(GroupFlush::ReadAppended(*index, &appended));
  EXPECT_FALSE(GroupFlush::Covers(published, appended));
  flush.Publish(*index, published, appended);
  EXPECT_EQ(flush.last_group(), 3u);  // F3
  shm::IndexHeader now;
  EXPECT_TRUE(GroupFlush::ReadPublished(*index, &now));
  EXPECT_EQ(now, appended);
  EXPECT_TRUE(GroupFlush::ReadAppended(*index, &now));
  EXPECT_EQ(now, appended);  // the appended header is the writers', untouched
  flush.CheckInvariants(*index);
  flush.Unlock(*index);
}

TEST(GroupFlushHeapTest, ALoneWritersFlushDoesNotWaitAndAnAppendingOneWaitsASyncAtMost) {
  std::unique_ptr<shm::WalIndex> index = shm::WalIndex::OpenHeap();
  const shm::IndexHeader published = Header(2, 10);
  index->WriteHeader(published);
  index->WriteAppendedHeader(Header(3, 11));  // its own commit
  GroupFlush flush;
  absl::Status error;
  if (!flush.TryLock(*index, &error)) GTEST_FAIL() << "FLUSH is free";
  int waits = 0;
  flush.WaitForAppenders(
      *index, published, [] { return false; }, [&] { ++waits; });
  EXPECT_EQ(waits, 0);  // its last group (1) is pending, and no one is on the way
  // A writer of this connection holds WRITE: the flush waits, for its last sync at most.
  flush.SyncTook(absl::Microseconds(200));
  const absl::Time start = absl::Now();
  flush.WaitForAppenders(
      *index, published, [] { return true; }, [&] { ++waits; });
  EXPECT_GT(waits, 0);
  EXPECT_GE(absl::Now() - start, absl::Microseconds(200));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // A thread waiting to be the writer (F4's count) keeps it waiting too, until it stops.
  flush.AddWaitingWriters(1);
  EXPECT_EQ(flush.waiting_writers(), 1);
  waits = 0;
  flush.WaitForAppenders(
      *index, published, [] { return false; }, [&] { ++waits; });
  EXPECT_GT(waits, 0);
  flush.AddWaitingWriters(-1);
  waits = 0;
  flush.WaitForAppenders(
      *index, published, [] { return false; }, [&] { ++waits; });
  EXPECT_EQ(waits, 0);
  flush.CheckInvariants(*index);
  flush.Unlock(*index);
}

// Each invariant broken from outside the role: CheckInvariants (debug builds) stops the process.
class GroupFlushDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!JKV_DCHECK_IS_ON) GTEST_SKIP() << "CheckInvariants is a no-op under NDEBUG";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    index_ = shm::WalIndex::OpenHeap();
    index_->WriteHeader(Header(2, 10));
  }
  // The death tests break F1 on purpose, and EXPECT_DEATH's branches hide the lock from the
  // analysis: these take FLUSH and call under it with the analysis off.
  void Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::Status error;
    ASSERT_TRUE(flush_.TryLock(*index_, &error));
  }
  void Check() ABSL_NO_THREAD_SAFETY_ANALYSIS { flush_.CheckInvariants(*index_); }
  void Publish(const shm::IndexHeader& published, const shm::IndexHeader& appended)
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    flush_.Publish(*index_, published, appended);
  }
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS { flush_.Unlock(*index_); }

  std::unique_ptr<shm::WalIndex> index_;
  GroupFlush flush_;
};

TEST_F(GroupFlushDeathTest, F1NotHeldByTheCaller) {
  EXPECT_DEATH(Check(), "HeldHere");
  EXPECT_DEATH(Unlock(), "HeldHere");
}

TEST_F(GroupFlushDeathTest, F2APublishedHeaderAheadOfTheAppendedOne) {
  Lock();
  Check();
  index_->PublishHeader(Header(3, 12));  // the appended header stays at frame 10
  EXPECT_DEATH(Check(), "Covers");
  // Publish checks it too, after its publish: one over the appended header moves it ahead.
  EXPECT_DEATH(Publish(Header(3, 12), Header(4, 13)), "Covers");
  index_->WriteHeader(Header(3, 12));
  Unlock();
}

TEST_F(GroupFlushDeathTest, F3APublishThatCoversNoCommit) {
  Lock();
  // Publishing the published header again (W12 h forbids it) counts a group of 0.
  EXPECT_DEATH(Publish(Header(2, 10), Header(2, 10)), "last_group_");
  Unlock();
}

TEST_F(GroupFlushDeathTest, F4MoreWritersCountedOutThanIn) {
  Lock();
  flush_.AddWaitingWriters(-1);
  EXPECT_DEATH(Check(), "waiting_writers_");
  flush_.AddWaitingWriters(1);
  Check();
  Unlock();
}

}  // namespace
}  // namespace journalkv::wal
