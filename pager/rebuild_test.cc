// WriteTxn::StartRebuild, GetAtStart and HoldForCommit (pager/txn.h L7-L10) in every journal
// mode: a transaction that writes the database anew from page 2 up, spilling, while it reads
// every page as the transaction's start had it, in an order that reads most pages after they
// were overwritten and spilled (so from the rollback journal, the in-memory journal, the
// writer's start snapshot or the file the batch leaves alone).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/mem_fs.h"

namespace journalkv::pager {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

constexpr char kPath[] = "/db/rebuild.db";
constexpr int kPages = 120;  // more than the cache: the rebuild spills

void Stamp(absl::Span<uint8_t> page, uint32_t page_no, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  base::EncodeFixed32(page.data() + 4, page_no);
  std::memset(page.data() + 8, static_cast<int>(tag & 0xff), 100);
}
uint32_t TagOf(absl::Span<const uint8_t> page) { return base::DecodeFixed32(page.data()); }

class RebuildTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override { fs_.MakeDirectoryForTesting("/db"); }
  PagerOptions Options() {
    PagerOptions o;
    o.journal_mode = GetParam();
    o.page_size = 1024;
    o.cache_pages = 16;
    return o;
  }
  std::unique_ptr<Pager> Open() {
    auto pager = Pager::Open(&fs_, kPath, Options());
    EXPECT_THAT(pager, IsOk());
    return std::move(pager).value();
  }
  // kPages pages, page p tagged 1000 + p; then every third freed (free leaves to skip, L7).
  void Fill(Pager& pager) {
    auto txn = *pager.BeginWrite();
    for (int i = 0; i < kPages; ++i) {
      auto page = *txn->Allocate();
      Stamp(page.data, page.page_no.value(), 1000 + page.page_no.value());
      ASSERT_THAT(txn->SpillIfNeeded(), IsOk());
    }
    ASSERT_THAT(txn->Commit(), IsOk());
    txn = *pager.BeginWrite();
    for (uint32_t p = 2; p <= kPages + 1; p += 3) ASSERT_THAT(txn->Free(PageNo(p)), IsOk());
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  std::vector<uint32_t> Live(Pager& pager) {
    auto txn = *pager.BeginRead();
    std::vector<PageNo> free = *txn->FreelistPages();
    std::vector<uint32_t> live;
    for (uint32_t p = 2; p <= txn->page_count(); ++p) {
      if (std::find(free.begin(), free.end(), PageNo(p)) == free.end()) live.push_back(p);
    }
    return live;
  }
  // The rebuild: new page k (2, 3, ...) holds the old live pages in reverse order, each read
  // through GetAtStart after the pages below it were overwritten (and spilled), its tag kept
  // and its old page number recorded. The page held for the commit (L10) is the first one,
  // written again at the end. Returns the new page count, or 0 on a failure (reported).
  uint32_t Rebuild(WriteTxn& txn, const std::vector<uint32_t>& live) {
    EXPECT_THAT(txn.StartRebuild(), IsOk());
    EXPECT_EQ(txn.page_count(), 1u);
    PageNo first;
    for (size_t i = 0; i < live.size(); ++i) {
      const uint32_t from = live[live.size() - 1 - i];
      auto page = txn.Allocate();
      EXPECT_THAT(page, IsOk());
      if (!page.ok()) return 0;
      EXPECT_EQ(page->page_no.value(), 2 + i) << "L7: pages handed out in order";
      if (i == 0) {
        first = page->page_no;
        txn.HoldForCommit(first);
      }
      auto old = txn.GetAtStart(PageNo(from));  // L8, after page `from` may be overwritten
      EXPECT_THAT(old, IsOk());
      if (!old.ok()) return 0;
      EXPECT_EQ(TagOf(old->data()), 1000 + from) << "L8: page " << from << " at the start";
      Stamp(page->data, page->page_no.value(), 1000 + from);
      base::EncodeFixed32(page->data.data() + 8, from);
      EXPECT_THAT(txn.SpillIfNeeded(), IsOk());
    }
    auto again = txn.GetMutable(first);  // L10: written again after every spill
    EXPECT_THAT(again, IsOk());
    if (!again.ok()) return 0;
    base::EncodeFixed32(again->data() + 12, 77);
    return txn.page_count();
  }
  void ExpectRebuilt(Pager& pager, const std::vector<uint32_t>& live) {
    auto txn = *pager.BeginRead();
    ASSERT_EQ(txn->page_count(), live.size() + 1);
    EXPECT_EQ(txn->header().freelist_count, 0u);
    for (size_t i = 0; i < live.size(); ++i) {
      const uint32_t from = live[live.size() - 1 - i];
      auto page = txn->Get(PageNo(2 + i));
      ASSERT_THAT(page, IsOk());
      EXPECT_EQ(TagOf(page->data()), 1000 + from);
      EXPECT_EQ(base::DecodeFixed32(page->data().data() + 8), from);
    }
    EXPECT_EQ(base::DecodeFixed32(txn->Get(PageNo(2))->data().data() + 12), 77u);
    auto problems = txn->CheckPages();
    ASSERT_THAT(problems, IsOk());
    EXPECT_TRUE(problems->empty()) << (*problems)[0];
  }
  vfs::MemFileSystem fs_;
};

TEST_P(RebuildTest, ReadsTheStartWhileOverwritingItAndCommits) {
  auto pager = Open();
  Fill(*pager);
  const std::vector<uint32_t> live = Live(*pager);
  ASSERT_GT(live.size(), 60u);
  {
    auto txn = *pager->BeginWrite();
    ASSERT_EQ(Rebuild(*txn, live), live.size() + 1);
    ASSERT_THAT(txn->Commit(), IsOk());
  }
  if (pager->wal_mode()) {
    ASSERT_THAT(pager->Checkpoint(wal::CheckpointMode::kTruncate), IsOk());
  }
  ExpectRebuilt(*pager, live);
  pager.reset();
  pager = Open();  // as a new connection finds it
  ExpectRebuilt(*pager, live);
  auto size = *(*fs_.Open(kPath, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}))->Size();
  EXPECT_EQ(size, (live.size() + 1) * 1024) << "the commit cut the file (I11, C7)";
}

TEST_P(RebuildTest, ARolledBackRebuildLeavesTheStart) {
  auto pager = Open();
  Fill(*pager);
  const std::vector<uint32_t> live = Live(*pager);
  {
    auto txn = *pager->BeginWrite();
    ASSERT_NE(Rebuild(*txn, live), 0u);
    ASSERT_THAT(txn->Rollback(), IsOk());
  }
  EXPECT_EQ(Live(*pager), live);
  auto txn = *pager->BeginRead();
  for (uint32_t p : live) EXPECT_EQ(TagOf(txn->Get(PageNo(p))->data()), 1000 + p);
}

TEST_P(RebuildTest, StartRebuildOnlyBeforeAnyWriteAndGetAtStartInRange) {
  auto pager = Open();
  Fill(*pager);
  auto txn = *pager->BeginWrite();
  ASSERT_THAT(txn->GetMutable(PageNo(3)), IsOk());
  EXPECT_THAT(txn->StartRebuild(), StatusIs(absl::StatusCode::kFailedPrecondition, "before"));
  EXPECT_THAT(txn->GetAtStart(PageNo(1)), StatusIs(absl::StatusCode::kInvalidArgument, "range"));
  EXPECT_THAT(txn->GetAtStart(PageNo(kPages + 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, "at the start"));
  auto start = txn->AtStart();
  EXPECT_EQ(start->page_count(), static_cast<uint32_t>(kPages + 1));
  EXPECT_EQ(TagOf(start->Get(PageNo(3))->data()), 1003u);
  ASSERT_THAT(txn->Rollback(), IsOk());
}

// L11, in the modes that keep originals (the rollback journal's): a rebuild's Allocate reads
// the originals it keeps ahead, a run per read, not one read per page.
TEST_P(RebuildTest, ReadsTheOriginalsAheadInRuns) {
  if (!IsRollbackMode(GetParam())) GTEST_SKIP() << "keeps no originals (L7)";
  PagerOptions options = Options();
  options.cache_pages = 256;  // runs of 32 (a quarter of the cache at most), no spill
  {
    auto pager = *Pager::Open(&fs_, kPath, options);
    Fill(*pager);
  }
  auto pager = *Pager::Open(&fs_, kPath, options);  // an empty cache
  const std::vector<uint32_t> live = Live(*pager);
  auto txn = *pager->BeginWrite();
  ASSERT_THAT(txn->StartRebuild(), IsOk());
  const uint64_t reads_before = fs_.stats().Snapshot(vfs::FileKind::kDatabase).reads;
  for (size_t i = 0; i < live.size(); ++i) ASSERT_THAT(txn->Allocate(), IsOk());
  const uint64_t reads = fs_.stats().Snapshot(vfs::FileKind::kDatabase).reads - reads_before;
  EXPECT_LE(reads, live.size() / 16) << live.size() << " originals kept";
  // Every original read ahead is the start's page (what a rollback restores).
  ASSERT_THAT(txn->Rollback(), IsOk());
  auto read = *pager->BeginRead();
  for (uint32_t p : live) EXPECT_EQ(TagOf(read->Get(PageNo(p))->data()), 1000 + p);
}

// L11: a page whose checksum fails is not read ahead as a good one: keeping its original
// fails as reading it alone does, naming the page.
TEST_P(RebuildTest, ADamagedOriginalIsNotReadAheadAsGood) {
  if (!IsRollbackMode(GetParam())) GTEST_SKIP() << "keeps no originals (L7)";
  PagerOptions options = Options();
  options.cache_pages = 256;
  std::vector<uint32_t> live;
  {
    auto pager = *Pager::Open(&fs_, kPath, options);
    Fill(*pager);
    live = Live(*pager);
  }
  const uint32_t damaged = live[5];  // inside the first run, not its first page
  ASSERT_GT(damaged, 3u);
  ASSERT_LT(damaged, 30u);
  {
    auto file = *fs_.Open(kPath, {vfs::OpenMode::kReadWrite, vfs::FileKind::kDatabase});
    const uint8_t junk[4] = {0xde, 0xad, 0xbe, 0xef};
    ASSERT_THAT(file->Write(uint64_t{damaged - 1} * 1024 + 200, junk), IsOk());
  }
  auto pager = *Pager::Open(&fs_, kPath, options);
  auto txn = *pager->BeginWrite();
  ASSERT_THAT(txn->StartRebuild(), IsOk());
  for (uint32_t p = 2; p < damaged; ++p) ASSERT_THAT(txn->Allocate(), IsOk()) << p;
  EXPECT_THAT(txn->Allocate(), StatusIs(absl::StatusCode::kDataLoss,
                                        absl::StrCat("page ", damaged, ": checksum mismatch")));
  ASSERT_THAT(txn->Rollback(), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Modes, RebuildTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory,
                                           JournalMode::kOff, JournalMode::kWal,
                                           JournalMode::kWal2, JournalMode::kAtomic),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

}  // namespace
}  // namespace journalkv::pager
