#include "pager/db_lock.h"

#include <memory>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv::pager {
namespace {

constexpr vfs::OpenOptions kOpen{vfs::OpenMode::kCreate, vfs::FileKind::kDatabase};

// Two connections (two Files, two lock owners) on one database file.
class DbLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(file_a_, fs_.Open("/db", kOpen));
    JKV_ASSERT_OK_AND_ASSIGN(file_b_, fs_.Open("/db", kOpen));
    a_ = std::make_unique<DbLock>(file_a_.get());
    b_ = std::make_unique<DbLock>(file_b_.get());
  }
  static bool Ok(absl::StatusOr<bool> r) {
    EXPECT_THAT(r, ::journalkv::testing::IsOk());
    return r.ok() && *r;
  }

  vfs::MemFileSystem fs_;
  std::unique_ptr<vfs::File> file_a_, file_b_;
  std::unique_ptr<DbLock> a_, b_;
};

TEST_F(DbLockTest, UncontendedWriterGoesToExclusiveAndBackToNone) {
  ASSERT_TRUE(Ok(a_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryReserved()));
  ASSERT_TRUE(Ok(a_->TryExclusive()));
  EXPECT_EQ(a_->level(), LockLevel::kExclusive);
  EXPECT_FALSE(Ok(b_->TryShared()));
  EXPECT_TRUE(Ok(b_->WriterPending()));
  JKV_ASSERT_OK(a_->Release());
  EXPECT_EQ(a_->level(), LockLevel::kNone);
  EXPECT_FALSE(Ok(b_->WriterPending()));
  ASSERT_TRUE(Ok(b_->TryShared()));
  ASSERT_TRUE(Ok(b_->TryReserved()));
  EXPECT_TRUE(Ok(b_->TryExclusive()));
}

TEST_F(DbLockTest, AReaderHoldsOffTheWriterWhosePendingKeepsNewReadersOut) {
  ASSERT_TRUE(Ok(b_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryReserved()));
  EXPECT_FALSE(Ok(b_->TryReserved()));  // one writer at a time
  EXPECT_FALSE(Ok(a_->TryExclusive()));
  EXPECT_EQ(a_->level(), LockLevel::kReserved);
  // a kept PENDING: b, once it lets go, cannot come back as a reader.
  JKV_ASSERT_OK(b_->Release());
  EXPECT_TRUE(Ok(b_->WriterPending()));
  EXPECT_FALSE(Ok(b_->TryShared()));
  EXPECT_EQ(b_->level(), LockLevel::kNone);
  // The refused reader left nothing behind: a gets EXCLUSIVE on its retry.
  EXPECT_TRUE(Ok(a_->TryExclusive()));
}

TEST_F(DbLockTest, DroppingPendingLetsReadersBackIn) {
  ASSERT_TRUE(Ok(b_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryReserved()));
  EXPECT_FALSE(Ok(a_->TryExclusive()));
  JKV_ASSERT_OK(a_->DropPending());
  EXPECT_FALSE(Ok(b_->WriterPending()));
  JKV_ASSERT_OK(b_->Release());
  EXPECT_TRUE(Ok(b_->TryShared()));
}

TEST_F(DbLockTest, DowngradeKeepsSharedAndFreesTheWriterRole) {
  ASSERT_TRUE(Ok(a_->TryShared()));
  ASSERT_TRUE(Ok(a_->TryReserved()));
  ASSERT_TRUE(Ok(a_->TryExclusive()));
  JKV_ASSERT_OK(a_->DowngradeToShared());
  EXPECT_EQ(a_->level(), LockLevel::kShared);
  ASSERT_TRUE(Ok(b_->TryShared()));
  ASSERT_TRUE(Ok(b_->TryReserved()));  // RESERVED was dropped
  EXPECT_FALSE(Ok(b_->TryExclusive()));  // a still reads
  JKV_ASSERT_OK(a_->Release());
  EXPECT_TRUE(Ok(b_->TryExclusive()));
}

// A waiting writer is seen by other connections only, survives its own lock level changes (it
// sits outside the SHARED/RESERVED/PENDING range), and never blocks a reader or a writer.
TEST_F(DbLockTest, WaitingWriterIsVisibleToOthersOnly) {
  EXPECT_FALSE(Ok(a_->OtherWritersWaiting()));
  JKV_ASSERT_OK(a_->SetWaiting(true));
  EXPECT_TRUE(a_->waiting());
  EXPECT_FALSE(Ok(a_->OtherWritersWaiting())) << "its own mark counts as someone else's";
  EXPECT_TRUE(Ok(b_->OtherWritersWaiting()));
  ASSERT_TRUE(Ok(a_->TryShared()));
  JKV_ASSERT_OK(a_->Release());
  EXPECT_TRUE(Ok(b_->OtherWritersWaiting())) << "Release dropped the waiting mark";
  ASSERT_TRUE(Ok(b_->TryShared()));
  ASSERT_TRUE(Ok(b_->TryReserved()));
  ASSERT_TRUE(Ok(b_->TryExclusive())) << "a waiting mark blocked the writer";
  JKV_ASSERT_OK(b_->Release());
  JKV_ASSERT_OK(b_->SetWaiting(true));  // two waiters at once
  JKV_ASSERT_OK(a_->SetWaiting(false));
  EXPECT_FALSE(a_->waiting());
  EXPECT_TRUE(Ok(a_->OtherWritersWaiting()));
  EXPECT_FALSE(Ok(b_->OtherWritersWaiting()));
  JKV_ASSERT_OK(b_->SetWaiting(false));
  EXPECT_FALSE(Ok(a_->OtherWritersWaiting()));
}

}  // namespace
}  // namespace journalkv::pager
