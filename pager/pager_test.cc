#include "pager/pager.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "pager/db_lock.h"
#include "vfs/mem_fs.h"

namespace journalkv::pager {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::IsEmpty;

constexpr char kPath[] = "/db/test.db";

// Pages carry (tag, page number) in their first 8 bytes so every read can be checked.
void Stamp(absl::Span<uint8_t> page, PageNo page_no, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  base::EncodeFixed32(page.data() + 4, page_no.value());
  std::memset(page.data() + 8, static_cast<int>(tag & 0xff), 64);
}

uint32_t TagOf(const PageRef& page) { return base::DecodeFixed32(page.data().data()); }

std::string ReadFile(vfs::FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  EXPECT_THAT(file, IsOk());
  auto size = (*file)->Size();
  std::string bytes(*size, '\0');
  EXPECT_THAT((*file)->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()),
                                              bytes.size())),
              IsOk());
  return bytes;
}

void WriteFile(vfs::FileSystem& fs, const std::string& path, const std::string& bytes) {
  auto file = fs.Open(path, {vfs::OpenMode::kCreate, vfs::FileKind::kOther});
  ASSERT_THAT(file, IsOk());
  ASSERT_THAT((*file)->Truncate(0), IsOk());
  ASSERT_THAT((*file)->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                    bytes.size())),
              IsOk());
}

class PagerTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  PagerOptions Options() {
    PagerOptions o;
    o.journal_mode = GetParam();
    o.page_size = 1024;
    o.cache_pages = 32;
    o.busy_timeout = absl::Milliseconds(200);
    return o;
  }
  std::unique_ptr<Pager> OpenPager() {
    auto pager = Pager::Open(&fs_, kPath, Options());
    EXPECT_THAT(pager, IsOk());
    return std::move(pager).value();
  }
  // Allocates n pages stamped with tag and commits; returns their numbers.
  std::vector<PageNo> AddPages(Pager& pager, int n, uint32_t tag) {
    auto txn = pager.BeginWrite();
    EXPECT_THAT(txn, IsOk());
    std::vector<PageNo> pages;
    for (int i = 0; i < n; ++i) {
      auto page = (*txn)->Allocate();
      EXPECT_THAT(page, IsOk());
      Stamp(page->data, page->page_no, tag);
      pages.push_back(page->page_no);
      EXPECT_THAT((*txn)->SpillIfNeeded(), IsOk());
    }
    EXPECT_THAT((*txn)->Commit(), IsOk());
    return pages;
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

TEST_P(PagerTest, CommittedPagesSurviveReopen) {
  std::vector<PageNo> pages;
  {
    auto pager = OpenPager();
    pages = AddPages(*pager, 10, 7);
  }
  auto pager = OpenPager();
  ExpectTags(*pager, pages, 7);
  EXPECT_EQ(pager->Stats().page_count, 11u);
}

TEST_P(PagerTest, RollbackDiscardsChanges) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 5, 1);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (PageNo p : pages) {
      auto span = (*txn)->GetMutable(p);
      ASSERT_THAT(span, IsOk());
      Stamp(*span, p, 2);
    }
    ASSERT_THAT((*txn)->Allocate(), IsOk());
    // The transaction sees its own writes.
    auto page = (*txn)->Get(pages[0]);
    ASSERT_THAT(page, IsOk());
    EXPECT_EQ(TagOf(*page), 2u);
    ASSERT_THAT((*txn)->Rollback(), IsOk());
    EXPECT_THAT((*txn)->Commit(), StatusIs(absl::StatusCode::kFailedPrecondition, "ended"));
  }
  ExpectTags(*pager, pages, 1);
  EXPECT_EQ(pager->Stats().page_count, 6u);
}

TEST_P(PagerTest, DestroyingAWriteTxnRollsBack) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 3, 1);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    auto span = (*txn)->GetMutable(pages[1]);
    ASSERT_THAT(span, IsOk());
    Stamp(*span, pages[1], 9);
  }
  ExpectTags(*pager, pages, 1);
}

TEST_P(PagerTest, TransactionLargerThanTheCacheSpillsAndCommits) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 300, 3);  // cache holds 32 pages
  EXPECT_GT(pager->Stats().spills, 0u);
  ExpectTags(*pager, pages, 3);
  pager.reset();
  pager = OpenPager();
  ExpectTags(*pager, pages, 3);
}

TEST_P(PagerTest, RollbackAfterSpillRestoresTheFile) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 100, 4);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (PageNo p : pages) {
      auto span = (*txn)->GetMutable(p);
      ASSERT_THAT(span, IsOk());
      Stamp(*span, p, 5);
      ASSERT_THAT((*txn)->SpillIfNeeded(), IsOk());
    }
    for (int i = 0; i < 100; ++i) {
      ASSERT_THAT((*txn)->Allocate(), IsOk());
      ASSERT_THAT((*txn)->SpillIfNeeded(), IsOk());
    }
    ASSERT_THAT((*txn)->Rollback(), IsOk());
  }
  EXPECT_GT(pager->Stats().spills, 0u);
  ExpectTags(*pager, pages, 4);
  EXPECT_EQ(pager->Stats().page_count, 101u);
  pager.reset();
  pager = OpenPager();
  ExpectTags(*pager, pages, 4);
  EXPECT_EQ(pager->Stats().page_count, 101u);
}

TEST_P(PagerTest, FreedPagesAreReusedAndTheFileDoesNotGrow) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 400, 1);  // more than one trunk at 1 KiB pages
  const uint32_t count = pager->Stats().page_count;
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (PageNo p : pages) ASSERT_THAT((*txn)->Free(p), IsOk());
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  EXPECT_EQ(pager->Stats().freelist_pages, 400u);
  {
    auto txn = pager->BeginRead();
    ASSERT_THAT(txn, IsOk());
    auto free_pages = (*txn)->FreelistPages();
    ASSERT_THAT(free_pages, IsOk());
    EXPECT_EQ(free_pages->size(), 400u);
  }
  std::vector<PageNo> again = AddPages(*pager, 400, 2);
  EXPECT_EQ(pager->Stats().page_count, count);
  EXPECT_EQ(pager->Stats().freelist_pages, 0u);
  ExpectTags(*pager, again, 2);
  std::sort(again.begin(), again.end());
  std::sort(pages.begin(), pages.end());
  EXPECT_EQ(again, pages);
}

TEST_P(PagerTest, FreeAndReallocateInOneTransactionRollsBackCleanly) {
  auto pager = OpenPager();
  std::vector<PageNo> pages = AddPages(*pager, 20, 1);
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (PageNo p : pages) ASSERT_THAT((*txn)->Free(p), IsOk());
    for (int i = 0; i < 20; ++i) {
      auto page = (*txn)->Allocate();
      ASSERT_THAT(page, IsOk());
      Stamp(page->data, page->page_no, 8);
    }
    EXPECT_EQ((*txn)->page_count(), 21u);
    ASSERT_THAT((*txn)->Rollback(), IsOk());
  }
  ExpectTags(*pager, pages, 1);
}

TEST_P(PagerTest, MetaSlotsAreTransactional) {
  auto pager = OpenPager();
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    (*txn)->set_meta(0, 42);
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  {
    auto txn = pager->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    (*txn)->set_meta(0, 43);
  }
  pager.reset();
  pager = OpenPager();
  auto txn = pager->BeginRead();
  ASSERT_THAT(txn, IsOk());
  EXPECT_EQ((*txn)->meta(0), 42u);
}

TEST_P(PagerTest, CorruptedPageIsReportedAsDataLossNamingThePage) {
  std::vector<PageNo> pages;
  {
    auto pager = OpenPager();
    pages = AddPages(*pager, 4, 1);
  }
  std::string bytes = ReadFile(fs_, kPath);
  bytes[(pages[2].value() - 1) * 1024 + 100] ^= 0x40;
  WriteFile(fs_, kPath, bytes);
  auto pager = OpenPager();
  auto txn = pager->BeginRead();
  ASSERT_THAT(txn, IsOk());
  EXPECT_THAT((*txn)->Get(pages[1]), IsOk());
  EXPECT_THAT((*txn)->Get(pages[2]),
              StatusIs(absl::StatusCode::kDataLoss,
                       absl::StrCat("page ", pages[2].value(), ": checksum mismatch")));
  auto problems = (*txn)->CheckPages();
  ASSERT_THAT(problems, IsOk());
  ASSERT_EQ(problems->size(), 1u);
}

TEST_P(PagerTest, JournalIsEndedAsTheModeSays) {
  auto pager = OpenPager();
  AddPages(*pager, 2, 1);
  const std::string journal = std::string(kPath) + "-journal";
  auto exists = fs_.Exists(journal);
  ASSERT_THAT(exists, IsOk());
  switch (GetParam()) {
    case JournalMode::kDelete:
    case JournalMode::kMemory:
    case JournalMode::kOff:
    case JournalMode::kAtomic:  // journals only its creation, in DELETE mode
      EXPECT_FALSE(*exists);
      break;
    case JournalMode::kTruncate:
      ASSERT_TRUE(*exists);
      EXPECT_EQ(ReadFile(fs_, journal).size(), 0u);
      break;
    case JournalMode::kPersist: {
      ASSERT_TRUE(*exists);
      const std::string bytes = ReadFile(fs_, journal);
      ASSERT_GE(bytes.size(), 512u);
      EXPECT_EQ(bytes.substr(0, 512), std::string(512, '\0'));
      break;
    }
    case JournalMode::kWal:
    case JournalMode::kWal2:
      FAIL() << "not a rollback mode";
  }
}

TEST_P(PagerTest, OutOfRangePagesAreRefused) {
  auto pager = OpenPager();
  auto txn = pager->BeginWrite();
  ASSERT_THAT(txn, IsOk());
  EXPECT_THAT((*txn)->Get(PageNo(1)), StatusIs(absl::StatusCode::kInvalidArgument, "page 1"));
  EXPECT_THAT((*txn)->GetMutable(PageNo(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, "out of range"));
}

INSTANTIATE_TEST_SUITE_P(AllModes, PagerTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory,
                                           JournalMode::kOff, JournalMode::kAtomic),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

// ---------------------------------------------------------------------------------------------

TEST(PagerOpenTest, ForeignFileIsRefusedAndLeftUntouched) {
  vfs::MemFileSystem fs;
  const std::string foreign = "SQLite format 3" + std::string(2000, 'x');
  WriteFile(fs, kPath, foreign);
  EXPECT_THAT(Pager::Open(&fs, kPath, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "not a journalkv database"));
  EXPECT_EQ(ReadFile(fs, kPath), foreign);
  WriteFile(fs, kPath, "tiny");
  EXPECT_THAT(Pager::Open(&fs, kPath, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "not a journalkv database"));
  EXPECT_EQ(ReadFile(fs, kPath), "tiny");
}

TEST(PagerOpenTest, NewerFormatVersionIsRefused) {
  vfs::MemFileSystem fs;
  { ASSERT_THAT(Pager::Open(&fs, kPath, {}), IsOk()); }
  std::string bytes = ReadFile(fs, kPath);
  bytes[16] = 9;
  WriteFile(fs, kPath, bytes);
  EXPECT_THAT(Pager::Open(&fs, kPath, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, "format version 9 is newer"));
  EXPECT_EQ(ReadFile(fs, kPath), bytes);
}

// journal_family records the mode family last used. A rollback-mode opener of a database last
// used in WAL or WAL2 mode copies its log(s) back and records the rollback family, when no
// other connection has it open (tests/wal_test.cc covers the logs and the refusals).
TEST(PagerOpenTest, DatabaseLastUsedInAWalModeIsSwitchedBackToRollback) {
  for (JournalFamily family : {JournalFamily::kWal, JournalFamily::kWal2}) {
    vfs::MemFileSystem fs;
    { ASSERT_THAT(Pager::Open(&fs, kPath, {}), IsOk()); }
    std::string bytes = ReadFile(fs, kPath);
    auto page = absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), kDefaultPageSize);
    DbHeader header;
    header.journal_family = family;
    EncodeDbHeader(header, page);
    SealPage(PageNo(1), page);
    WriteFile(fs, kPath, bytes);
    { ASSERT_THAT(Pager::Open(&fs, kPath, {}), IsOk()); }
    EXPECT_EQ(ReadFile(fs, kPath)[kJournalFamilyOffset],
              static_cast<char>(JournalFamily::kRollback));
  }
}

// The log checks a frame's image by the page trailer's rule, which it states itself
// (log/wal_format.h, ImageChecksum) rather than include the pager: the two must agree, for every
// page size and page number, or recovery would refuse every frame the pager sealed.
TEST(PageTrailerTest, TheLogComputesTheTrailerTheSealWrites) {
  for (uint32_t page_size : {512u, 4096u, 65536u}) {
    std::vector<uint8_t> page(page_size);
    for (size_t i = 0; i < page.size(); ++i) page[i] = static_cast<uint8_t>(i * 13 + page_size);
    for (uint32_t page_no : {1u, 2u, 977u, 0xfffffffeu}) {
      SealPage(PageNo(page_no), absl::MakeSpan(page));
      EXPECT_EQ(wal::ImageChecksum(page_no, page), StoredPageChecksum(page));
      EXPECT_EQ(wal::StoredImageChecksum(page), StoredPageChecksum(page));
      EXPECT_EQ(wal::ImageChecksum(page_no + 1, page) == StoredPageChecksum(page), false);
    }
  }
}

TEST(PagerOpenTest, TruncatedFileIsRefused) {
  vfs::MemFileSystem fs;
  {
    auto pager = Pager::Open(&fs, kPath, {});
    ASSERT_THAT(pager, IsOk());
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < 5; ++i) ASSERT_THAT((*txn)->Allocate(), IsOk());
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  std::string bytes = ReadFile(fs, kPath);
  bytes.resize(bytes.size() - 4096 - 100);
  WriteFile(fs, kPath, bytes);
  EXPECT_THAT(Pager::Open(&fs, kPath, {}), StatusIs(absl::StatusCode::kDataLoss, "truncated"));
  EXPECT_EQ(ReadFile(fs, kPath), bytes);
}

TEST(PagerOpenTest, DirectoryIsRefused) {
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/db/dir");
  EXPECT_THAT(Pager::Open(&fs, "/db/dir", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "is a directory"));
}

TEST(PagerOpenTest, ExistingPageSizeWinsOverTheOption) {
  vfs::MemFileSystem fs;
  PagerOptions o;
  o.page_size = 8192;
  { ASSERT_THAT(Pager::Open(&fs, kPath, o), IsOk()); }
  o.page_size = 512;
  auto pager = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(pager, IsOk());
  EXPECT_EQ((*pager)->page_size(), 8192u);
  o.page_size = 1000;
  EXPECT_THAT(Pager::Open(&fs, kPath, o),
              StatusIs(absl::StatusCode::kInvalidArgument, "page size 1000"));
}

TEST(PagerOpenTest, ReadOnlyRefusesWrites) {
  vfs::MemFileSystem fs;
  { ASSERT_THAT(Pager::Open(&fs, kPath, {}), IsOk()); }
  PagerOptions o;
  o.access = AccessMode::kReadOnly;
  auto pager = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(pager, IsOk());
  EXPECT_THAT((*pager)->BeginWrite(), StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
  EXPECT_THAT((*pager)->BeginRead(), IsOk());
  EXPECT_THAT(Pager::Open(&fs, "/db/missing.db", o), StatusIs(absl::StatusCode::kNotFound, ""));
}

// ---------------------------------------------------------------------------------------------
// Syncs per commit: the protocol pays exactly what README.md says.

struct SyncCase {
  JournalMode mode;
  SyncLevel sync;
  uint64_t journal_syncs;
  uint64_t db_syncs;
  uint64_t dir_syncs;
};

class SyncCountTest : public ::testing::TestWithParam<SyncCase> {};

TEST_P(SyncCountTest, SteadyStateCommitPaysTheDocumentedSyncs) {
  const SyncCase c = GetParam();
  vfs::MemFileSystem fs;
  PagerOptions o;
  o.journal_mode = c.mode;
  o.sync = c.sync;
  auto pager = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(pager, IsOk());
  auto commit_one = [&] {
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT((*txn)->Allocate(), IsOk());
    ASSERT_THAT((*txn)->Commit(), IsOk());
  };
  commit_one();  // the first commit may create the journal file
  const auto before_j = fs.stats().Snapshot(vfs::FileKind::kJournal);
  const auto before_d = fs.stats().Snapshot(vfs::FileKind::kDatabase);
  const auto before_o = fs.stats().Snapshot(vfs::FileKind::kOther);
  commit_one();
  EXPECT_EQ(fs.stats().Snapshot(vfs::FileKind::kJournal).syncs - before_j.syncs,
            c.journal_syncs);
  EXPECT_EQ(fs.stats().Snapshot(vfs::FileKind::kDatabase).syncs - before_d.syncs, c.db_syncs);
  EXPECT_EQ(fs.stats().Snapshot(vfs::FileKind::kOther).dir_syncs - before_o.dir_syncs,
            c.dir_syncs);
}

INSTANTIATE_TEST_SUITE_P(
    Protocol, SyncCountTest,
    ::testing::Values(SyncCase{JournalMode::kDelete, SyncLevel::kOff, 0, 0, 0},
                      SyncCase{JournalMode::kDelete, SyncLevel::kNormal, 1, 1, 1},
                      SyncCase{JournalMode::kDelete, SyncLevel::kFull, 1, 1, 1},
                      SyncCase{JournalMode::kDelete, SyncLevel::kExtra, 1, 1, 2},
                      SyncCase{JournalMode::kTruncate, SyncLevel::kOff, 0, 0, 0},
                      SyncCase{JournalMode::kTruncate, SyncLevel::kNormal, 1, 1, 0},
                      SyncCase{JournalMode::kTruncate, SyncLevel::kFull, 1, 1, 0},
                      SyncCase{JournalMode::kTruncate, SyncLevel::kExtra, 2, 1, 0},
                      SyncCase{JournalMode::kPersist, SyncLevel::kFull, 1, 1, 0},
                      SyncCase{JournalMode::kPersist, SyncLevel::kExtra, 2, 1, 0},
                      SyncCase{JournalMode::kMemory, SyncLevel::kFull, 0, 1, 0},
                      SyncCase{JournalMode::kOff, SyncLevel::kFull, 0, 1, 0}),
    [](const auto& info) {
      return absl::StrCat(JournalModeName(info.param.mode), "_",
                          SyncLevelName(info.param.sync));
    });

TEST(JournalPlacementTest, JournalStaysSmallOverManyCommitsAtEverySyncLevel) {
  for (JournalMode mode : {JournalMode::kTruncate, JournalMode::kPersist}) {
    for (SyncLevel sync : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kExtra}) {
      vfs::MemFileSystem fs;
      PagerOptions o;
      o.journal_mode = mode;
      o.sync = sync;
      o.page_size = 1024;
      auto pager = Pager::Open(&fs, kPath, o);
      ASSERT_THAT(pager, IsOk());
      for (int i = 0; i < 300; ++i) {
        auto txn = (*pager)->BeginWrite();
        ASSERT_THAT(txn, IsOk());
        ASSERT_THAT((*txn)->Allocate(), IsOk());
        ASSERT_THAT((*txn)->Commit(), IsOk());
      }
      // Records alternate between two regions at most: a few KiB, not 300 transactions' worth.
      auto file = fs.Open(std::string(kPath) + "-journal", {vfs::OpenMode::kReadOnly});
      ASSERT_THAT(file, IsOk());
      auto size = (*file)->Size();
      ASSERT_THAT(size, IsOk());
      EXPECT_LE(*size, 16u * 1024) << JournalModeName(mode) << "/" << SyncLevelName(sync);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Concurrency

TEST(PagerConcurrencyTest, ReaderOfAnotherHandleBlocksCommitUntilBusyTimeout) {
  vfs::MemFileSystem fs;
  PagerOptions o;
  o.busy_timeout = absl::Milliseconds(50);
  auto a = Pager::Open(&fs, kPath, o);
  auto b = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  auto reader = (*b)->BeginRead();
  ASSERT_THAT(reader, IsOk());
  {
    auto txn = (*a)->BeginWrite();  // RESERVED coexists with SHARED
    ASSERT_THAT(txn, IsOk());
    ASSERT_THAT((*txn)->Allocate(), IsOk());
    EXPECT_THAT((*txn)->Commit(), StatusIs(absl::StatusCode::kUnavailable, "busy"));
  }
  // A second writer is refused while the first holds RESERVED.
  auto w1 = (*a)->BeginWrite();
  ASSERT_THAT(w1, IsOk());
  EXPECT_THAT((*b)->BeginWrite(), StatusIs(absl::StatusCode::kUnavailable, "busy"));
  ASSERT_THAT((*w1)->Allocate(), IsOk());
  reader->reset();
  ASSERT_THAT((*w1)->Commit(), IsOk());
  // b notices the commit of a.
  auto check = (*b)->BeginRead();
  ASSERT_THAT(check, IsOk());
  EXPECT_EQ((*check)->page_count(), 2u);
}

TEST(PagerConcurrencyTest, CachedPagesAreRefreshedAfterAnotherHandleCommits) {
  for (uint32_t page_size : {512u, 65536u}) {
    SCOPED_TRACE(absl::StrCat("page size ", page_size));
    vfs::MemFileSystem fs;
    PagerOptions o;
    o.page_size = page_size;
    auto a = Pager::Open(&fs, kPath, o);
    auto b = Pager::Open(&fs, kPath, o);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    PageNo page_no;
    {
      auto txn = (*a)->BeginWrite();
      ASSERT_THAT(txn, IsOk());
      auto page = (*txn)->Allocate();
      ASSERT_THAT(page, IsOk());
      page_no = page->page_no;
      Stamp(page->data, page_no, 1);
      ASSERT_THAT((*txn)->Commit(), IsOk());
    }
    for (uint32_t tag = 2; tag < 5; ++tag) {
      {
        auto read = (*b)->BeginRead();  // b caches the page as it is now
        ASSERT_THAT(read, IsOk());
        auto page = (*read)->Get(page_no);
        ASSERT_THAT(page, IsOk());
        EXPECT_EQ(TagOf(*page), tag - 1);
      }
      auto txn = (*a)->BeginWrite();
      ASSERT_THAT(txn, IsOk());
      auto span = (*txn)->GetMutable(page_no);
      ASSERT_THAT(span, IsOk());
      Stamp(*span, page_no, tag);
      ASSERT_THAT((*txn)->Commit(), IsOk());
    }
    auto read = (*b)->BeginRead();
    ASSERT_THAT(read, IsOk());
    auto page = (*read)->Get(page_no);
    ASSERT_THAT(page, IsOk());
    EXPECT_EQ(TagOf(*page), 4u);
  }
}

TEST(PagerConcurrencyTest, AWriterHoldingPendingKeepsNewReadersOut) {
  vfs::MemFileSystem fs;
  PagerOptions o;
  o.busy_timeout = absl::Milliseconds(30);
  auto a = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(a, IsOk());
  // Another connection announces that it waits to write, as a committing writer does.
  auto writer = fs.Open(kPath, {vfs::OpenMode::kReadWrite, vfs::FileKind::kDatabase});
  ASSERT_THAT(writer, IsOk());
  auto pending = (*writer)->TryLock(kPendingByte, 1, vfs::LockMode::kExclusive);
  ASSERT_THAT(pending, IsOk());
  ASSERT_TRUE(*pending);
  EXPECT_THAT((*a)->BeginRead(), StatusIs(absl::StatusCode::kUnavailable, "busy"));
  // The refused reader left no SHARED lock behind: the writer can take EXCLUSIVE.
  auto exclusive = (*writer)->TryLock(kSharedFirst, kSharedSize, vfs::LockMode::kExclusive);
  ASSERT_THAT(exclusive, IsOk());
  EXPECT_TRUE(*exclusive);
  ASSERT_THAT((*writer)->Unlock(0, 0), IsOk());
  EXPECT_THAT((*a)->BeginRead(), IsOk());
}

TEST(PagerConcurrencyTest, ReadersInThreadsSeeWholeTransactions) {
  vfs::MemFileSystem fs;
  PagerOptions o;
  o.page_size = 512;
  o.busy_timeout = absl::Seconds(10);
  auto pager_or = Pager::Open(&fs, kPath, o);
  ASSERT_THAT(pager_or, IsOk());
  Pager& pager = **pager_or;
  constexpr int kPages = 8;
  {
    auto txn = pager.BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < kPages; ++i) {
      auto page = (*txn)->Allocate();
      ASSERT_THAT(page, IsOk());
      Stamp(page->data, page->page_no, 0);
    }
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto txn = pager.BeginRead();
        if (!txn.ok()) continue;
        uint32_t first = 0;
        for (int i = 0; i < kPages; ++i) {
          auto page = (*txn)->Get(PageNo(2 + i));
          if (!page.ok()) {
            torn.fetch_add(1);
            break;
          }
          if (i == 0) first = TagOf(*page);
          if (TagOf(*page) != first) torn.fetch_add(1);
        }
        reads.fetch_add(1);
      }
    });
  }
  // Keep writing until the readers have overlapped with a good number of commits.
  for (uint32_t tag = 1; tag <= 200 || reads.load() < 100; ++tag) {
    auto txn = pager.BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < kPages; ++i) {
      auto span = (*txn)->GetMutable(PageNo(2 + i));
      ASSERT_THAT(span, IsOk());
      Stamp(*span, PageNo(2 + i), tag);
    }
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
}  // namespace journalkv::pager
