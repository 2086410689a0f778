// Journal mode atomic (atomic_strategy.h, A1..A6) on MemFileSystem, whose batches are
// emulated: commits, rollbacks, a transaction larger than the cache, the refusals at open, the
// fallback, the switches between families and a second connection reading while one writes.
#include "pager/atomic_strategy.h"

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/mem_fs.h"

namespace journalkv::pager {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kPath[] = "/db/test.db";

// A file of the wrapped file system that reports another atomic write kind and block size
// (`kind` kNone: no batches at all, as on ext4).
class CapsFile final : public vfs::File {
 public:
  CapsFile(std::unique_ptr<vfs::File> base, vfs::AtomicWriteKind kind, uint64_t block)
      : base_(std::move(base)), kind_(kind), block_(block) {}
  absl::Status Read(uint64_t o, absl::Span<uint8_t> out) override { return base_->Read(o, out); }
  absl::Status Write(uint64_t o, absl::Span<const uint8_t> d) override {
    return base_->Write(o, d);
  }
  absl::Status Sync(vfs::SyncKind k) override { return base_->Sync(k); }
  absl::Status Truncate(uint64_t n) override { return base_->Truncate(n); }
  absl::StatusOr<uint64_t> Size() override { return base_->Size(); }
  absl::StatusOr<bool> TryLock(uint64_t o, uint64_t n, vfs::LockMode m) override {
    return base_->TryLock(o, n, m);
  }
  absl::Status Unlock(uint64_t o, uint64_t n) override { return base_->Unlock(o, n); }
  absl::StatusOr<bool> CanLock(uint64_t o, uint64_t n, vfs::LockMode m) override {
    return base_->CanLock(o, n, m);
  }
  absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t r, size_t size) override {
    return base_->MapSharedRegion(r, size);
  }
  absl::StatusOr<uint64_t> LinkCount() override { return base_->LinkCount(); }
  vfs::AtomicWriteKind atomic_write_kind() const override { return kind_; }
  uint64_t atomic_write_block_size() const override { return block_; }
  absl::StatusOr<std::unique_ptr<vfs::AtomicBatch>> BeginAtomicBatch() override {
    if (kind_ == vfs::AtomicWriteKind::kNone) {
      return vfs::AtomicBatchUnsupportedError(path(), "test");
    }
    return base_->BeginAtomicBatch();
  }
  const std::string& path() const override { return base_->path(); }

 private:
  std::unique_ptr<vfs::File> base_;
  const vfs::AtomicWriteKind kind_;
  const uint64_t block_;
};

class CapsFileSystem final : public vfs::FileSystem {
 public:
  CapsFileSystem(vfs::FileSystem* base, vfs::AtomicWriteKind kind, uint64_t block)
      : base_(base), kind_(kind), block_(block) {}
  absl::StatusOr<std::unique_ptr<vfs::File>> Open(const std::string& path,
                                                  const vfs::OpenOptions& options) override {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f, base_->Open(path, options));
    return std::unique_ptr<vfs::File>(new CapsFile(std::move(f), kind_, block_));
  }
  absl::Status Delete(const std::string& p) override { return base_->Delete(p); }
  absl::StatusOr<bool> Exists(const std::string& p) override { return base_->Exists(p); }
  absl::StatusOr<bool> IsDirectory(const std::string& p) override { return base_->IsDirectory(p); }
  absl::Status SyncDirectory(const std::string& p) override { return base_->SyncDirectory(p); }

 private:
  vfs::FileSystem* const base_;
  const vfs::AtomicWriteKind kind_;
  const uint64_t block_;
};

// Pages carry (tag, page number) in their first 8 bytes so every read can be checked.
void Stamp(absl::Span<uint8_t> page, PageNo page_no, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  base::EncodeFixed32(page.data() + 4, page_no.value());
}
uint32_t TagOf(const PageRef& page) { return base::DecodeFixed32(page.data().data()); }

std::string ReadFile(vfs::FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  EXPECT_THAT(file, IsOk());
  if (!file.ok()) return "";
  auto size = (*file)->Size();
  std::string bytes(*size, '\0');
  EXPECT_THAT((*file)->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()),
                                              bytes.size())),
              IsOk());
  return bytes;
}

uint8_t FamilyByte(vfs::FileSystem& fs) {
  return static_cast<uint8_t>(ReadFile(fs, kPath).at(kJournalFamilyOffset));
}

class AtomicStrategyTest : public ::testing::Test {
 protected:
  PagerOptions Options(JournalMode mode = JournalMode::kAtomic) {
    PagerOptions o;
    o.journal_mode = mode;
    o.page_size = 1024;
    o.cache_pages = 16;
    o.busy_timeout = absl::Milliseconds(200);
    return o;
  }
  std::unique_ptr<Pager> Open(JournalMode mode = JournalMode::kAtomic) {
    auto pager = Pager::Open(&fs_, kPath, Options(mode));
    EXPECT_THAT(pager, IsOk());
    return pager.ok() ? std::move(pager).value() : nullptr;
  }
  // Allocates n pages stamped with `tag`, spilling as the engine does.
  std::vector<PageNo> Allocate(WriteTxn& txn, int n, uint32_t tag) {
    std::vector<PageNo> pages;
    for (int i = 0; i < n; ++i) {
      auto page = txn.Allocate();
      EXPECT_THAT(page, IsOk());
      Stamp(page->data, page->page_no, tag);
      pages.push_back(page->page_no);
      EXPECT_THAT(txn.SpillIfNeeded(), IsOk());
    }
    return pages;
  }
  // Restamps every page with `tag`, spilling as the engine does.
  void Restamp(WriteTxn& txn, const std::vector<PageNo>& pages, uint32_t tag) {
    for (PageNo p : pages) {
      auto span = txn.GetMutable(p);
      ASSERT_THAT(span, IsOk());
      EXPECT_EQ(base::DecodeFixed32(span->data() + 4), p.value());  // the right page came back
      Stamp(*span, p, tag);
      ASSERT_THAT(txn.SpillIfNeeded(), IsOk());
    }
  }
  void ExpectTags(Pager& pager, const std::vector<PageNo>& pages, uint32_t tag) {
    auto txn = pager.BeginRead();
    ASSERT_THAT(txn, IsOk());
    for (PageNo p : pages) {
      auto page = (*txn)->Get(p);
      ASSERT_THAT(page, IsOk());
      EXPECT_EQ(TagOf(*page), tag) << "page " << p.value();
    }
    auto problems = (*txn)->CheckPages();
    ASSERT_THAT(problems, IsOk());
    EXPECT_THAT(*problems, IsEmpty());
  }

  vfs::MemFileSystem fs_;
};

TEST_F(AtomicStrategyTest, ACommitIsOneBatchWithNoJournalAndNoSync) {
  auto pager = Open();
  ASSERT_NE(pager, nullptr);
  EXPECT_EQ(FamilyByte(fs_), static_cast<uint8_t>(JournalFamily::kAtomic));
  const vfs::IoCounts before_db = fs_.stats().Snapshot(vfs::FileKind::kDatabase);
  const vfs::IoCounts before_j = fs_.stats().Snapshot(vfs::FileKind::kJournal);
  std::vector<PageNo> pages;
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    pages = Allocate(**txn, 5, 7);
    ASSERT_THAT((*txn)->Commit(), IsOk());
    EXPECT_EQ((*txn)->commit_record().pages, 6u);  // five pages and page 1
  }
  const vfs::IoCounts db = fs_.stats().Snapshot(vfs::FileKind::kDatabase);
  const vfs::IoCounts j = fs_.stats().Snapshot(vfs::FileKind::kJournal);
  EXPECT_EQ(db.atomic_commits - before_db.atomic_commits, 1u);
  EXPECT_EQ(db.durable_atomic_commits - before_db.durable_atomic_commits, 1u);  // FULL
  EXPECT_EQ(db.syncs, before_db.syncs);  // the batch's commit is the flush
  EXPECT_EQ(j.writes, before_j.writes);
  auto journal = fs_.Exists(std::string(kPath) + "-journal");
  ASSERT_THAT(journal, IsOk());
  EXPECT_FALSE(*journal);
  PagerStats stats = pager->Stats();
  EXPECT_EQ(stats.atomic_commits, 1u);
  EXPECT_EQ(stats.durable_atomic_commits, 1u);
  EXPECT_EQ(stats.atomic_write_kind, "emulated");
  EXPECT_EQ(stats.atomic_fallback, "");
  pager.reset();
  pager = Open();
  ExpectTags(*pager, pages, 7);
}

TEST_F(AtomicStrategyTest, NormalAndOffCommitAtomicOnlyFullAndExtraDurable) {
  for (SyncLevel sync : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull,
                         SyncLevel::kExtra}) {
    SCOPED_TRACE(SyncLevelName(sync));
    vfs::MemFileSystem fs;
    PagerOptions o = Options();
    o.sync = sync;
    auto pager = Pager::Open(&fs, kPath, o);
    ASSERT_THAT(pager, IsOk());
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT((*txn)->Allocate(), IsOk());
    ASSERT_THAT((*txn)->Commit(), IsOk());
    const bool durable = sync == SyncLevel::kFull || sync == SyncLevel::kExtra;
    EXPECT_EQ((*pager)->Stats().atomic_commits, 1u);
    EXPECT_EQ((*pager)->Stats().durable_atomic_commits, durable ? 1u : 0u);
    EXPECT_EQ(fs.stats().Snapshot(vfs::FileKind::kDatabase).durable_atomic_commits,
              durable ? 1u : 0u);
  }
}

TEST_F(AtomicStrategyTest, RollbackLeavesTheFileUntouched) {
  auto pager = Open();
  ASSERT_NE(pager, nullptr);
  std::vector<PageNo> pages;
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    pages = Allocate(**txn, 4, 1);
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  const std::string before = ReadFile(fs_, kPath);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    Restamp(**txn, pages, 2);
    Allocate(**txn, 3, 2);
    ASSERT_THAT((*txn)->Rollback(), IsOk());
  }
  EXPECT_EQ(ReadFile(fs_, kPath), before);
  ExpectTags(*pager, pages, 1);
  EXPECT_EQ(pager->Stats().atomic_commits, 1u);
}

// A1: a transaction far larger than the cache (16 pages) spills into the batch, never into the
// file, and reads its spilled pages back from the batch; its commit then writes all of it.
TEST_F(AtomicStrategyTest, ATransactionLargerThanTheCacheSpillsIntoTheBatch) {
  auto pager = Open();
  ASSERT_NE(pager, nullptr);
  std::vector<PageNo> pages;
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    pages = Allocate(**txn, 40, 1);
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  const std::string committed = ReadFile(fs_, kPath);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    Restamp(**txn, pages, 2);
    std::vector<PageNo> more = Allocate(**txn, 200, 2);
    Restamp(**txn, pages, 3);  // re-reads the spilled images (the page numbers are checked)
    EXPECT_GT(pager->Stats().spills, 0u);
    EXPECT_EQ(ReadFile(fs_, kPath), committed);  // nothing reached the file
    ExpectTags(*pager, pages, 1);                 // a reader still sees the last commit
    ASSERT_THAT((*txn)->Commit(), IsOk());
    pages.insert(pages.end(), more.begin(), more.end());
  }
  ExpectTags(*pager, std::vector<PageNo>(pages.begin(), pages.begin() + 40), 3);
  ExpectTags(*pager, std::vector<PageNo>(pages.begin() + 40, pages.end()), 2);
  EXPECT_EQ(pager->Stats().page_count, 241u);
  EXPECT_EQ(pager->Stats().atomic_commits, 2u);
  // And a spilled transaction rolled back leaves the file as it was.
  const std::string before = ReadFile(fs_, kPath);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    Restamp(**txn, pages, 9);
    Allocate(**txn, 100, 9);
    ASSERT_THAT((*txn)->Rollback(), IsOk());
  }
  EXPECT_EQ(ReadFile(fs_, kPath), before);
  pager.reset();
  pager = Open();
  ExpectTags(*pager, std::vector<PageNo>(pages.begin(), pages.begin() + 40), 3);
  EXPECT_EQ(pager->Stats().page_count, 241u);
}

TEST_F(AtomicStrategyTest, APageSizeBelowTheBlockSizeIsRefusedNamingBoth) {
  CapsFileSystem xfs(&fs_, vfs::AtomicWriteKind::kXfsExchangeRange, 4096);
  auto refused = Pager::Open(&xfs, kPath, Options());  // page size 1024
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument, "whole blocks"));
  EXPECT_THAT(std::string(refused.status().message()), AllOf(HasSubstr("1024"), HasSubstr("4096")));
  EXPECT_EQ(ReadFile(fs_, kPath), "");  // refused before the database was made
  PagerOptions o = Options();
  o.page_size = 8192;
  auto pager = Pager::Open(&xfs, kPath, o);
  ASSERT_THAT(pager, IsOk());
  EXPECT_EQ((*pager)->Stats().atomic_write_kind, "xfs-exchange-range");
  pager->reset();
  // An existing database of a smaller page size is refused too, and stays in its mode.
  vfs::MemFileSystem other;
  ASSERT_THAT(Pager::Open(&other, kPath, Options(JournalMode::kDelete)), IsOk());
  CapsFileSystem other_xfs(&other, vfs::AtomicWriteKind::kXfsExchangeRange, 4096);
  EXPECT_THAT(Pager::Open(&other_xfs, kPath, Options()),
              StatusIs(absl::StatusCode::kInvalidArgument, "1024"));
  EXPECT_EQ(FamilyByte(other), static_cast<uint8_t>(JournalFamily::kRollback));
}

TEST_F(AtomicStrategyTest, AFileWithoutBatchesIsRefusedNamingWhatIsNeeded) {
  CapsFileSystem ext4(&fs_, vfs::AtomicWriteKind::kNone, 1);
  auto refused = Pager::Open(&ext4, kPath, Options());
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition, "journal mode atomic"));
  EXPECT_THAT(std::string(refused.status().message()),
              AllOf(HasSubstr("exchange-range"), HasSubstr("Linux 6.10"), HasSubstr("F2FS"),
                    HasSubstr("atomic_fallback")));
  // Read-only, it never commits: it needs no batches.
  ASSERT_THAT(Pager::Open(&fs_, kPath, Options()), IsOk());
  PagerOptions ro = Options();
  ro.access = AccessMode::kReadOnly;
  EXPECT_THAT(Pager::Open(&ext4, kPath, ro), IsOk());
}

TEST_F(AtomicStrategyTest, TheFallbackRunsInItsModeAndSaysSo) {
  CapsFileSystem ext4(&fs_, vfs::AtomicWriteKind::kNone, 1);
  PagerOptions o = Options();
  o.atomic_fallback = JournalMode::kPersist;
  auto pager = Pager::Open(&ext4, kPath, o);
  ASSERT_THAT(pager, IsOk());
  EXPECT_EQ((*pager)->options().journal_mode, JournalMode::kPersist);
  const PagerStats stats = (*pager)->Stats();
  EXPECT_THAT(stats.atomic_fallback, AllOf(HasSubstr("persist"), HasSubstr("F2FS")));
  EXPECT_EQ(stats.atomic_write_kind, "");
  auto txn = (*pager)->BeginWrite();
  ASSERT_THAT(txn, IsOk());
  ASSERT_THAT((*txn)->Allocate(), IsOk());
  ASSERT_THAT((*txn)->Commit(), IsOk());
  EXPECT_EQ((*pager)->Stats().atomic_commits, 0u);
  auto journal = fs_.Exists(std::string(kPath) + "-journal");  // persist keeps its journal
  ASSERT_THAT(journal, IsOk());
  EXPECT_TRUE(*journal);
  EXPECT_EQ(FamilyByte(fs_), static_cast<uint8_t>(JournalFamily::kRollback));
  // Where batches exist, the fallback is not taken.
  vfs::MemFileSystem other;
  auto atomic = Pager::Open(&other, kPath, o);
  ASSERT_THAT(atomic, IsOk());
  EXPECT_EQ((*atomic)->options().journal_mode, JournalMode::kAtomic);
  EXPECT_EQ((*atomic)->Stats().atomic_fallback, "");
}

TEST_F(AtomicStrategyTest, TheDatabaseSwitchesBetweenAtomicWalAndDelete) {
  std::vector<PageNo> pages;
  uint32_t tag = 1;
  {
    auto pager = Open();
    ASSERT_NE(pager, nullptr);
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    pages = Allocate(**txn, 30, tag);
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kAtomic, JournalMode::kDelete,
                           JournalMode::kAtomic, JournalMode::kWal2, JournalMode::kAtomic}) {
    SCOPED_TRACE(JournalModeName(mode));
    auto pager = Open(mode);
    ASSERT_NE(pager, nullptr);
    EXPECT_EQ(FamilyByte(fs_), static_cast<uint8_t>(FamilyOf(mode)));
    ExpectTags(*pager, pages, tag);
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    Restamp(**txn, pages, ++tag);
    ASSERT_THAT((*txn)->Commit(), IsOk());
    ExpectTags(*pager, pages, tag);
  }
  auto pager = Open(JournalMode::kDelete);
  ASSERT_NE(pager, nullptr);
  ExpectTags(*pager, pages, tag);
}

TEST_F(AtomicStrategyTest, ASwitchIsRefusedWhileAnotherFamilysConnectionIsOpen) {
  auto atomic = Open();
  ASSERT_NE(atomic, nullptr);
  for (JournalMode other : {JournalMode::kDelete, JournalMode::kWal}) {
    SCOPED_TRACE(JournalModeName(other));
    EXPECT_THAT(Pager::Open(&fs_, kPath, Options(other)),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "only when no other connection is open"));
    EXPECT_EQ(FamilyByte(fs_), static_cast<uint8_t>(JournalFamily::kAtomic));
  }
  auto second = Open();  // another atomic connection is welcome
  ASSERT_NE(second, nullptr);
  second.reset();
  atomic.reset();
  for (JournalMode other : {JournalMode::kDelete, JournalMode::kWal}) {
    SCOPED_TRACE(JournalModeName(other));
    auto held = Open(other);
    ASSERT_NE(held, nullptr);
    EXPECT_THAT(Pager::Open(&fs_, kPath, Options()),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         "only when no other connection is open"));
    EXPECT_EQ(FamilyByte(fs_), static_cast<uint8_t>(FamilyOf(other)));
  }
}

// Two connections: one commits transactions that restamp every page (spilling: 60 pages over a
// cache of 16), the other reads all of them at once again and again. A reader never sees two
// tags in one snapshot.
TEST_F(AtomicStrategyTest, ASecondConnectionNeverReadsAcrossACommit) {
  auto writer = Open();
  ASSERT_NE(writer, nullptr);
  std::vector<PageNo> pages;
  {
    auto txn = writer->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    pages = Allocate(**txn, 60, 0);
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  PagerOptions o = Options();
  o.busy_timeout = absl::Seconds(10);
  auto reader = Pager::Open(&fs_, kPath, o);
  ASSERT_THAT(reader, IsOk());
  std::atomic<bool> done{false};
  std::atomic<int> snapshots{0};
  std::thread reads([&] {
    while (!done.load()) {
      auto txn = (*reader)->BeginRead();
      ASSERT_THAT(txn, IsOk());
      auto first = (*txn)->Get(pages[0]);
      ASSERT_THAT(first, IsOk());
      const uint32_t tag = TagOf(*first);
      for (PageNo p : pages) {
        auto page = (*txn)->Get(p);
        ASSERT_THAT(page, IsOk());
        ASSERT_EQ(TagOf(*page), tag) << "page " << p.value() << " torn";
      }
      snapshots.fetch_add(1);
    }
  });
  const absl::Time start = absl::Now();
  uint32_t tag = 0;
  while (tag < 20 || (snapshots.load() < 20 && absl::Now() - start < absl::Seconds(20))) {
    auto txn = writer->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    Restamp(**txn, pages, ++tag);
    absl::Status s = (*txn)->Commit();
    ASSERT_THAT(s, IsOk());
  }
  done.store(true);
  reads.join();
  EXPECT_GE(snapshots.load(), 20);
  ExpectTags(**reader, pages, tag);
}

}  // namespace
}  // namespace journalkv::pager
