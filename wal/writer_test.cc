// The writer role on its own: WRITE as the connection's one role (W9), the state table's edges,
// a transaction's frames rewritten over its own and rechained before the commit (W11), the
// commit's two publishes (W12 a, b) and a rollback (W2), over a heap wal-index and a log in
// memory (vfs::MemFileSystem). What the WAL tests reach only through whole databases.
#include "wal/writer.h"

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/counters.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "wal/checkpoint_copy.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::IsOk;

constexpr uint32_t kPageSize = 1024;
constexpr uint32_t kSeq = 7;

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(logs_[0], WalLog::Open(&fs_, "/x.db-wal", false));
    index_ = shm::WalIndex::OpenHeap();
    header_.page_size = kPageSize;
    header_.page_count = 8;
    header_.logs[0] = {kSeq, 0x1111, 0x2222, 0, 0};
    for (int l = 0; l < 2; ++l) ForgetCopies(*index_, l, header_.logs[l].ckpt_seq, 0);
    index_->WriteHeader(header_);
  }

  std::unique_ptr<Writer> MakeWriter(vfs::SyncLevel sync) {
    options_.sync = sync;
    return std::make_unique<Writer>(Writer::Env{
        .index = &index_,
        .logs = &logs_,
        .wal2 = false,
        .page_size = kPageSize,
        .options = &options_,
        .counters = &counters_,
        .maintenance_sync = [this] { return options_.sync; },
        .make_log_durable = [](int, const shm::LogState&, const char*,
                               absl::Time) -> absl::StatusOr<bool> { return false; },
    });
  }

  // WRITE taken, the transaction begun from the published header (BeginWrite's part).
  void Begin(Writer& w) {
    JKV_ASSERT_OK_AND_ASSIGN(bool locked, w.TryLock());
    ASSERT_TRUE(locked);
    shm::IndexHeader h;
    ASSERT_TRUE(index_->ReadHeader(&h));
    w.Begin(h, index_->append_epoch());
  }

  // Page `p`'s image filled with `tag`, ending with its checksum (log/wal_format.h).
  std::vector<uint8_t>& Image(uint32_t p, char tag) {
    images_.push_back(std::make_unique<std::vector<uint8_t>>(kPageSize, tag));
    std::vector<uint8_t>& image = *images_.back();
    base::EncodeFixed64(image.data() + kPageSize - 8, ImageChecksum(p, image));
    return image;
  }
  std::vector<FramePage> Pages(std::vector<uint32_t> pages, char tag) {
    std::vector<FramePage> out;
    for (uint32_t p : pages) out.push_back({PageNo(p), Image(p, tag)});
    return out;
  }
  char FrameTag(uint32_t frame) {
    std::vector<uint8_t> out(kPageSize);
    EXPECT_THAT(logs_[0]->ReadPage(frame, kPageSize, absl::MakeSpan(out)), IsOk());
    return static_cast<char>(out[0]);
  }

  vfs::MemFileSystem fs_;
  std::array<std::unique_ptr<WalLog>, 2> logs_;
  std::unique_ptr<shm::WalIndex> index_;
  shm::IndexHeader header_;
  WalOptions options_;
  base::Counters counters_;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> images_;
};

// W11: a page spilled and written again goes over its own frame; the commit frame is new, and
// the commit rechains from the first frame rewritten, so that recovery's scan takes the whole
// transaction with its new images.
TEST_F(WriterTest, ARewrittenFrameIsRechainedBeforeTheCommit) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kNormal);
  Begin(*w);
  std::vector<uint32_t> frames;
  ASSERT_THAT(w->WriteFrames(Pages({2, 3}, 'a'), 0, &frames), IsOk());
  EXPECT_EQ(frames, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(w->state(), Writer::State::kAppended);
  // Page 2 again (over frame 1) and page 5 as the commit frame (new: frame 3).
  JKV_ASSERT_OK_AND_ASSIGN(Writer::CommitTicket t, w->Commit(Pages({2, 5}, 'b'), 9));
  EXPECT_EQ(t.frames, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(counters_.Get(base::Counter::kFramesRewritten), 1u);
  EXPECT_EQ(t.header.logs[0].mx_frame, 3u);
  EXPECT_EQ(t.header.page_count, 9u);
  EXPECT_EQ(FrameTag(1), 'b');
  EXPECT_EQ(FrameTag(2), 'a');
  JKV_ASSERT_OK_AND_ASSIGN(ScanResult scan, logs_[0]->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, 3u);  // the chain holds through the commit frame
  EXPECT_EQ(scan.last_checksum, t.header.logs[0].last_checksum);
  // NORMAL with nothing pending: published under WRITE (W12 b); the state is LOCKED again.
  EXPECT_TRUE(t.published);
  EXPECT_EQ(w->state(), Writer::State::kLocked);
  shm::IndexHeader published;
  ASSERT_TRUE(index_->ReadHeader(&published));
  EXPECT_EQ(published, t.header);
  EXPECT_EQ(*index_->Lookup(0, 2, 3), 1u);
  EXPECT_EQ(*index_->Lookup(0, 5, 3), 3u);
  w->Unlock();
}

// W12 a: at FULL the commit is the appended header, not yet published; the next transaction
// builds on it. A rollback then drops its own frames only (W2).
TEST_F(WriterTest, AFullCommitIsAppendedAndARollbackDropsOnlyItsOwnFrames) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kFull);
  Begin(*w);
  JKV_ASSERT_OK_AND_ASSIGN(Writer::CommitTicket t, w->Commit(Pages({2}, 'a'), 8));
  EXPECT_FALSE(t.published);
  EXPECT_EQ(w->state(), Writer::State::kCommitted);
  shm::IndexHeader published, appended;
  ASSERT_TRUE(index_->ReadHeader(&published));
  ASSERT_TRUE(index_->ReadAppendedHeader(&appended));
  EXPECT_EQ(published, header_);
  EXPECT_EQ(appended, t.header);
  w->Unlock();
  EXPECT_EQ(w->state(), Writer::State::kIdle);

  Begin(*w);  // the connection begins from the appended header
  w->Begin(appended, index_->append_epoch());
  std::vector<uint32_t> frames;
  ASSERT_THAT(w->WriteFrames(Pages({3, 4}, 'b'), 0, &frames), IsOk());
  EXPECT_EQ(frames, (std::vector<uint32_t>{2, 3}));
  ASSERT_THAT(w->Rollback(), IsOk());
  EXPECT_EQ(w->cursor(), WriterCursor::AtEndOf(appended, false));
  EXPECT_EQ(*index_->Lookup(0, 3, 3), 0u);
  EXPECT_EQ(*index_->Lookup(0, 2, 3), 1u);
  // The frames are no longer the transaction's: page 3 is appended again, not rewritten.
  ASSERT_THAT(w->WriteFrames(Pages({3}, 'c'), 0, &frames), IsOk());
  EXPECT_EQ(frames, (std::vector<uint32_t>{2}));
  EXPECT_EQ(counters_.Get(base::Counter::kFramesRewritten), 0u);
  ASSERT_THAT(w->Rollback(), IsOk());
  w->Unlock();
}

// W9: WRITE is the connection's, but only its writer thread is the writer.
TEST_F(WriterTest, OnlyTheThreadThatTookWriteIsTheWriterThread) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kNormal);
  EXPECT_FALSE(w->write_locked());
  Begin(*w);
  EXPECT_TRUE(w->write_locked());
  EXPECT_TRUE(w->OnWriterThread());
  bool other_locked = false, other_writer = true;
  std::thread other([&] {
    other_locked = w->write_locked();
    other_writer = w->OnWriterThread();
  });
  other.join();
  EXPECT_TRUE(other_locked);
  EXPECT_FALSE(other_writer);
  w->Unlock();
  EXPECT_FALSE(w->OnWriterThread());
}

// Each invariant broken from outside the role: CheckInvariants (debug builds) stops the process.
class WriterDeathTest : public WriterTest {
 protected:
  void SetUp() override {
    if (!JKV_DCHECK_IS_ON) GTEST_SKIP() << "CheckInvariants is a no-op under NDEBUG";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    WriterTest::SetUp();
  }
};

// The state table: a committed transaction appends nothing more before the next Begin.
TEST_F(WriterDeathTest, NoAppendAfterACommitWithoutANewBegin) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kFull);
  Begin(*w);
  ASSERT_THAT(w->Commit(Pages({2}, 'a'), 8).status(), IsOk());
  ASSERT_EQ(w->state(), Writer::State::kCommitted);
  std::vector<uint32_t> frames;
  EXPECT_DEATH(w->WriteFrames(Pages({3}, 'b'), 0, &frames).IgnoreError(), "from == S::k");
  w->Unlock();
}

// W11: a transaction's frames are past the published mx_frame. A header published over them
// (here by the test, as a buggy publisher would) fails the next append's check.
TEST_F(WriterDeathTest, ATransactionsFramesArePastThePublishedHeader) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kNormal);
  Begin(*w);
  std::vector<uint32_t> frames;
  ASSERT_THAT(w->WriteFrames(Pages({2, 3}, 'a'), 0, &frames), IsOk());
  w->CheckInvariants();
  shm::IndexHeader over = header_;
  over.logs[0].mx_frame = 2;
  ++over.change;
  index_->WriteHeader(over);
  EXPECT_DEATH(w->CheckInvariants(), "published");
  EXPECT_DEATH(w->WriteFrames(Pages({2}, 'b'), 0, &frames).IgnoreError(), "published");
  w->Unlock();
}

// The cursor's invariant: between transactions it is at the end of the writer's header.
TEST_F(WriterDeathTest, BetweenTransactionsTheCursorIsAtTheHeadersEnd) {
  std::unique_ptr<Writer> w = MakeWriter(vfs::SyncLevel::kNormal);
  Begin(*w);
  w->CheckInvariants();
  w->mutable_cursor_for_testing().next_frame = 5;
  EXPECT_DEATH(w->CheckInvariants(), "next_frame == end.next_frame");
  w->mutable_cursor_for_testing().next_frame = 1;
  w->Unlock();
}

}  // namespace
}  // namespace journalkv::wal
