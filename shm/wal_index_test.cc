// Tests of WalIndex on the heap and over the -shm file of the in-memory and the POSIX file
// systems: the header protocol, the hash blocks (collisions, block boundaries, truncation), the
// locks and reader slots, sharing between connections, and readers racing the writer.
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

namespace journalkv::shm {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;
using vfs::LockMode;

constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr uint32_t kB = kFramesPerBlock;

enum class Backend { kMem, kPosix, kHeap };

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kMem:
      return "Mem";
    case Backend::kPosix:
      return "Posix";
    case Backend::kHeap:
      return "Heap";
  }
  return "Unknown";
}

// The newest frame <= mx of the log whose frame f holds pages[f - 1], 0 when none: what Lookup
// must return.
uint32_t Expected(const std::vector<uint32_t>& pages, uint32_t page, uint32_t mx) {
  for (uint32_t f = std::min<uint32_t>(mx, pages.size()); f > 0; --f) {
    if (pages[f - 1] == page) return f;
  }
  return 0;
}

// The one page number in [1, kHashSlots] whose probe sequence starts at `slot` (383 is odd, so
// page -> page * 383 is a bijection modulo 8192).
uint32_t PageWithSlot(uint32_t slot) {
  for (uint32_t p = 1; p <= kHashSlots; ++p) {
    if (p * 383 % kHashSlots == slot) return p;
  }
  return 0;
}

// The value of a lock call, which must succeed.
bool Ok(absl::StatusOr<bool> r) {
  EXPECT_THAT(r, IsOk());
  return r.ok() && *r;
}

IndexHeader SampleHeader(uint32_t change) {
  IndexHeader h;
  h.change = change;
  h.page_size = 4096;
  h.page_count = 77 + change;
  h.current_log = 1;
  h.logs[0] = LogState{3, 0x11111111, 0x22222222, 500 + change, 0x0123456789ABCDEF};
  h.logs[1] = LogState{4, 5, 6, 7, 0xFEDCBA9876543210};
  return h;
}

// Parameterized by backend. For the shared backends every Open is another connection: a new
// File object (its own lock owner) on the one -shm path.
class WalIndexTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kMem) env_ = vfs::MakeMemEnv();
    if (GetParam() == Backend::kPosix) env_ = vfs::MakePosixEnv();
  }

  bool heap() const { return GetParam() == Backend::kHeap; }
  std::string ShmPath(absl::string_view name = "x.db-shm") const { return env_->Path(name); }

  absl::StatusOr<std::unique_ptr<vfs::File>> OpenFile(absl::string_view name = "x.db-shm") {
    return env_->fs().Open(ShmPath(name), kShmOpen);
  }
  // A new File, kept until the test ends (it must outlive the indexes over it).
  absl::StatusOr<vfs::File*> KeptFile(absl::string_view name = "x.db-shm") {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file, OpenFile(name));
    files_.push_back(std::move(file));
    return files_.back().get();
  }
  // A heap index, or a connection to the shared one (`initialize`: as the first connection).
  absl::StatusOr<std::unique_ptr<WalIndex>> Open(bool initialize) {
    if (heap()) return WalIndex::OpenHeap();
    JKV_ASSIGN_OR_RETURN(vfs::File* file, KeptFile());
    return WalIndex::OpenShared(file, initialize);
  }

  static uint32_t Find(WalIndex& index, int log, uint32_t page, uint32_t mx) {
    absl::StatusOr<uint32_t> frame = index.Lookup(log, page, mx);
    EXPECT_THAT(frame, IsOk());
    return frame.ok() ? *frame : ~uint32_t{0};
  }
  // Appends frames pages->size() + 1, ... holding `more`, and records them in *pages.
  static void AppendPages(WalIndex& index, int log, std::vector<uint32_t>* pages,
                          const std::vector<uint32_t>& more) {
    for (uint32_t page : more) {
      pages->push_back(page);
      ASSERT_THAT(index.Append(log, pages->size(), page), IsOk());
    }
  }
  // Appends frames first, ..., pages.size() of `pages` (frame f holds pages[f - 1]).
  static void AppendFrames(WalIndex& index, int log, const std::vector<uint32_t>& pages,
                           uint32_t first = 1) {
    for (uint32_t f = first; f <= pages.size(); ++f) {
      ASSERT_THAT(index.Append(log, f, pages[f - 1]), IsOk()) << "frame " << f;
    }
  }
  // Checks Lookup against Expected for `probes` at each mx in `mxs`.
  static void CheckLookups(WalIndex& index, int log, const std::vector<uint32_t>& pages,
                           const std::vector<uint32_t>& probes, const std::vector<uint32_t>& mxs) {
    for (uint32_t mx : mxs) {
      for (uint32_t page : probes) {
        ASSERT_EQ(Find(index, log, page, mx), Expected(pages, page, mx))
            << "page " << page << " mx " << mx;
      }
    }
  }

  std::unique_ptr<vfs::FileSystemEnv> env_;  // null for the heap
  std::vector<std::unique_ptr<vfs::File>> files_;  // destroyed before env_
};

// The tests that need two connections on one -shm file.
class SharedWalIndexTest : public WalIndexTest {};

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

// A block left by an earlier life of a damaged -shm file may break the index's invariants
// (here: every hash slot filled, no pages[] word behind them). The first frame appended to it
// clears it, so that the rebuilt index answers lookups (the shm fuzzer found recovery failing).
TEST_P(SharedWalIndexTest, FirstFrameOfABlockClearsAnEarlierLifesGarbage) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* file, KeptFile());
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t* block, file->MapSharedRegion(1, kRegionSize));  // log 0
  const uint16_t garbage = 5;
  for (uint32_t slot = 0; slot < kHashSlots; ++slot) {
    std::memcpy(block + kFramesPerBlock * 4 + 2 * slot, &garbage, 2);
  }
  ASSERT_THAT(index->Append(0, 1, 7), IsOk());
  ASSERT_THAT(index->Append(0, 2, 9), IsOk());
  EXPECT_EQ(Find(*index, 0, 7, 2), 1u);
  EXPECT_EQ(Find(*index, 0, 9, 2), 2u);
  EXPECT_EQ(Find(*index, 0, 8, 2), 0u);
}

// Truncate reads one pages[] word to find a block empty past the kept frame, so a block of an
// earlier life whose pages[] words are zero keeps its stale slots through it; they go when
// the block's first frame is appended, and no lookup meets them before.
TEST_P(SharedWalIndexTest, TruncateLeavesAnEarlierLifesSlotsToTheBlocksFirstFrame) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  JKV_ASSERT_OK_AND_ASSIGN(vfs::File* file, KeptFile());
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t* block, file->MapSharedRegion(3, kRegionSize));  // log 0, 1
  const uint16_t garbage = 5;
  for (uint32_t slot = 0; slot < kHashSlots; ++slot) {
    std::memcpy(block + kFramesPerBlock * 4 + 2 * slot, &garbage, 2);
  }
  std::vector<uint32_t> pages;
  for (uint32_t f = 1; f <= kB - 2; ++f) pages.push_back(f % 700 + 1);
  AppendFrames(*index, 0, pages);
  const std::vector<uint32_t> probes = {1, 2, 5, 699, 700, 701, 3000, 3001};
  JKV_ASSERT_OK(index->Truncate(0, kB - 2));  // a writer's begin: nothing past it
  CheckLookups(*index, 0, pages, probes, {1, kB / 2, kB - 2});
  for (uint32_t f = kB - 1; f <= kB + 3; ++f) pages.push_back(3000 + f % 2);
  AppendFrames(*index, 0, pages, kB - 1);
  JKV_ASSERT_OK(index->Truncate(0, kB + 3));
  CheckLookups(*index, 0, pages, probes, {kB - 2, kB, kB + 1, kB + 3});
  // A rolled-back transaction's frames past the kept one go; the block stays usable.
  JKV_ASSERT_OK(index->Truncate(0, kB + 1));
  pages.resize(kB + 1);
  CheckLookups(*index, 0, pages, probes, {kB, kB + 1, kB + 3});
  pages.push_back(701);
  AppendFrames(*index, 0, pages, kB + 2);
  CheckLookups(*index, 0, pages, probes, {kB + 1, kB + 2});
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

// --- hash tables

TEST_P(WalIndexTest, NewestFrameAtOrBelowMxWins) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  std::vector<uint32_t> pages;
  AppendPages(*index, 0, &pages, {7, 8, 7, 9, 10, 7, 8});
  EXPECT_EQ(Find(*index, 0, 7, 0), 0);
  EXPECT_EQ(Find(*index, 0, 7, 1), 1);
  EXPECT_EQ(Find(*index, 0, 7, 2), 1);
  EXPECT_EQ(Find(*index, 0, 7, 3), 3);
  EXPECT_EQ(Find(*index, 0, 7, 5), 3);
  EXPECT_EQ(Find(*index, 0, 7, 6), 6);
  EXPECT_EQ(Find(*index, 0, 7, 7), 6);
  EXPECT_EQ(Find(*index, 0, 8, 6), 2);
  EXPECT_EQ(Find(*index, 0, 8, 7), 7);
  EXPECT_EQ(Find(*index, 0, 10, 4), 0);  // only in a frame past mx
  EXPECT_EQ(Find(*index, 0, 11, 7), 0);  // never written
  CheckLookups(*index, 0, pages, {7, 8, 9, 10, 11}, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_P(WalIndexTest, PagesThatCollideAreAllFound) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  const uint32_t p = PageWithSlot(100);
  const uint32_t q = PageWithSlot(101);  // its own start slot is taken by p's chain
  ASSERT_EQ((p + kHashSlots) * 383 % kHashSlots, 100);
  std::vector<uint32_t> pages;
  AppendPages(*index, 0, &pages,
              {p, p + kHashSlots, q, p + 2 * kHashSlots, p, q + kHashSlots, p + kHashSlots});
  EXPECT_EQ(Find(*index, 0, p, 7), 5);
  EXPECT_EQ(Find(*index, 0, p, 4), 1);
  EXPECT_EQ(Find(*index, 0, p + kHashSlots, 7), 7);
  EXPECT_EQ(Find(*index, 0, p + kHashSlots, 6), 2);
  EXPECT_EQ(Find(*index, 0, p + kHashSlots, 1), 0);
  EXPECT_EQ(Find(*index, 0, q, 7), 3);
  EXPECT_EQ(Find(*index, 0, p + 2 * kHashSlots, 7), 4);
  EXPECT_EQ(Find(*index, 0, p + 3 * kHashSlots, 7), 0);
  CheckLookups(*index, 0, pages,
               {p, q, p + kHashSlots, q + kHashSlots, p + 2 * kHashSlots, p + 3 * kHashSlots},
               {1, 2, 3, 4, 5, 6, 7});
}

TEST_P(WalIndexTest, LookupsCrossBlockBoundaries) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  constexpr uint32_t kOnlyInBlock0 = 999999;
  std::vector<uint32_t> pages;
  for (uint32_t f = 1; f <= 3 * kB + 10; ++f) {
    pages.push_back(f == 7 ? kOnlyInBlock0 : f % 3001 + 1);
  }
  AppendFrames(*index, 0, pages);

  EXPECT_EQ(Find(*index, 0, kOnlyInBlock0, 3 * kB + 10), 7);
  EXPECT_EQ(Find(*index, 0, kOnlyInBlock0, 6), 0);
  const std::vector<uint32_t> mxs = {kB - 1, kB, kB + 1, 2 * kB - 1, 2 * kB, 2 * kB + 1,
                                     3 * kB, 3 * kB + 1, 3 * kB + 10};
  std::vector<uint32_t> probes = {kOnlyInBlock0, 1, 2, 3000, 3001, 3002};
  for (uint32_t mx : mxs) {  // the pages of the frames around each boundary
    for (uint32_t f = mx - 2; f <= mx + 2 && f <= pages.size(); ++f) probes.push_back(pages[f - 1]);
  }
  for (uint32_t page = 5; page <= 3001; page += 97) probes.push_back(page);
  CheckLookups(*index, 0, pages, probes, mxs);
}

TEST_P(WalIndexTest, TheTwoLogsAreIndependent) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  std::vector<uint32_t> log0, log1;
  AppendPages(*index, 1, &log1, {5, 6});
  EXPECT_EQ(Find(*index, 0, 5, 2), 0);
  EXPECT_EQ(Find(*index, 1, 5, 2), 1);
  AppendPages(*index, 0, &log0, {6, 5, 5});
  EXPECT_EQ(Find(*index, 0, 5, 3), 3);
  EXPECT_EQ(Find(*index, 1, 5, 3), 1);
  EXPECT_EQ(Find(*index, 1, 6, 2), 2);
  JKV_ASSERT_OK(index->Truncate(1, 0));
  EXPECT_EQ(Find(*index, 1, 6, 2), 0);
  EXPECT_EQ(Find(*index, 0, 6, 3), 1);
}

TEST_P(WalIndexTest, TruncateRemovesOnlyNewerFramesAndKeepsOlderChains) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  // One cluster of slots 200..: a, b start at 200 (b = a + 8192), c at 201, d at 202.
  const uint32_t a = PageWithSlot(200), b = a + kHashSlots;
  const uint32_t c = PageWithSlot(201), d = PageWithSlot(202);
  std::vector<uint32_t> pages;
  AppendPages(*index, 0, &pages, {a, c});                  // slots 200, 201
  JKV_ASSERT_OK(index->Truncate(0, 1));                     // empties 201
  pages.resize(1);
  EXPECT_EQ(Find(*index, 0, c, 2), 0);
  AppendPages(*index, 0, &pages, {b, c, d, a, b, c});      // 201 (over a), 202, 203, 204, ...
  const std::vector<uint32_t> probes = {a, b, c, d, a + 2 * kHashSlots};
  CheckLookups(*index, 0, pages, probes, {1, 2, 3, 4, 5, 6, 7});

  // Removes the newest entries, which sit at the ends of the chains of the older ones.
  JKV_ASSERT_OK(index->Truncate(0, 4));
  pages.resize(4);
  EXPECT_EQ(Find(*index, 0, a, 7), 1);
  EXPECT_EQ(Find(*index, 0, b, 7), 2);
  EXPECT_EQ(Find(*index, 0, c, 7), 3);
  EXPECT_EQ(Find(*index, 0, d, 7), 4);
  CheckLookups(*index, 0, pages, probes, {1, 2, 3, 4, 7});

  AppendPages(*index, 0, &pages, {d, c, a});
  CheckLookups(*index, 0, pages, probes, {4, 5, 6, 7});
}

TEST_P(WalIndexTest, TruncateAcrossBlocksAndRestart) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  std::vector<uint32_t> pages;
  for (uint32_t f = 1; f <= 3 * kB + 10; ++f) pages.push_back(f % 2999 + 1);
  AppendFrames(*index, 0, pages);

  constexpr uint32_t kKeep = kB + 904;  // inside block 1
  JKV_ASSERT_OK(index->Truncate(0, kKeep));
  pages.resize(kKeep);
  std::vector<uint32_t> probes;
  for (uint32_t page = 1; page <= 3000; page += 37) probes.push_back(page);
  CheckLookups(*index, 0, pages, probes, {kKeep - 1, kKeep, 3 * kB + 10});

  // Appending again, with another pattern, into the truncated block and the cleared ones.
  for (uint32_t f = kKeep + 1; f <= 2 * kB + 100; ++f) pages.push_back(f % 1777 + 5000);
  AppendFrames(*index, 0, pages, kKeep + 1);
  for (uint32_t page = 5000; page < 6777; page += 41) probes.push_back(page);
  CheckLookups(*index, 0, pages, probes, {kKeep, kKeep + 1, 2 * kB, 2 * kB + 1, 3 * kB + 10});

  // A restart empties the log: nothing is found, and frame 1 can be appended again.
  JKV_ASSERT_OK(index->Truncate(0, 0));
  pages.clear();
  CheckLookups(*index, 0, pages, probes, {1, kB + 1, 3 * kB + 10});
  AppendPages(*index, 0, &pages, {5003, 7});
  CheckLookups(*index, 0, pages, {5003, 7, 5004}, {1, 2, 3 * kB + 10});
}

// A writer that died after appending frames it never published leaves entries behind; the next
// writer's Append over them drops the stale ones of that block.
TEST_P(WalIndexTest, AppendOverLeftoversDropsThem) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  std::vector<uint32_t> pages;
  AppendPages(*index, 0, &pages, {1, 2, 3, 4, 5});
  pages.resize(2);
  AppendPages(*index, 0, &pages, {9});  // frame 3 again, without Truncate
  EXPECT_EQ(Find(*index, 0, 3, 5), 0);
  EXPECT_EQ(Find(*index, 0, 4, 5), 0);
  EXPECT_EQ(Find(*index, 0, 9, 5), 3);
  CheckLookups(*index, 0, pages, {1, 2, 3, 4, 5, 9}, {1, 2, 3, 5});
}

TEST_P(WalIndexTest, OutOfRangeArgumentsAreInvalid) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> index, Open(true));
  constexpr uint32_t kMax = kMaxBlocksPerLog * kFramesPerBlock;
  EXPECT_THAT(index->Append(0, 0, 5), StatusIs(absl::StatusCode::kInvalidArgument, "frame 0"));
  EXPECT_THAT(index->Append(0, 1, 0), StatusIs(absl::StatusCode::kInvalidArgument, "page 0"));
  EXPECT_THAT(index->Append(0, kMax + 1, 5), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(index->Lookup(0, 5, kMax + 1), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(index->Truncate(0, kMax + 1), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(index->Truncate(0, kMax), IsOk());
  EXPECT_THAT(index->TryLockSlot(kMaxSlots), StatusIs(absl::StatusCode::kInvalidArgument, ""));
  EXPECT_THAT(index->SlotOwnerGone(-1), StatusIs(absl::StatusCode::kInvalidArgument, ""));
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

// --- readers racing the writer

// The writer appends frame f holding page f % 1000 + 1 and publishes every 10 frames; readers
// take the published header and look up random pages at its mx_frame, which must give exactly
// the newest frame <= mx_frame holding the page.
TEST_P(WalIndexTest, ReadersRacingTheWriterSeeConsistentSnapshots) {
  constexpr uint32_t kFrames = 200000;
  constexpr uint32_t kPages = 1000;
  constexpr int kReaders = 3;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalIndex> writer_index, Open(true));
  // Shared: one reader uses the writer's connection, the others their own (mapping the blocks
  // themselves as they go).
  std::vector<std::unique_ptr<WalIndex>> own(kReaders);
  std::vector<WalIndex*> reader_index(kReaders, writer_index.get());
  for (int r = 1; r < kReaders && !heap(); ++r) {
    JKV_ASSERT_OK_AND_ASSIGN(own[r], Open(false));
    reader_index[r] = own[r].get();
  }
  const auto expected = [](uint32_t page, uint32_t mx) -> uint32_t {
    const uint32_t rest = page - 1;  // frames f with f % kPages == rest hold the page
    return mx < rest ? 0 : mx - (mx - rest) % kPages;
  };
  const auto published = [](uint32_t mx) {
    IndexHeader h;
    h.change = mx / 10;
    h.page_size = 4096;
    h.page_count = mx * 3;
    h.logs[0].salt1 = ~mx;
    h.logs[0].mx_frame = mx;
    h.logs[0].last_checksum = uint64_t{mx} * 0x9E3779B97F4A7C15;
    return h;
  };

  std::atomic<int> ready{0};
  std::atomic<bool> done{false};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> lookups{0};
  const auto reader = [&](int r) {
    std::mt19937 random(r + 1);
    WalIndex& index = *reader_index[r];
    ready.fetch_add(1);
    do {
      const bool last = done.load();  // one more pass after the writer is done
      IndexHeader h;
      if (!index.ReadHeader(&h)) continue;
      const uint32_t mx = h.logs[0].mx_frame;
      if (h != published(mx)) {
        ADD_FAILURE() << "inconsistent header accepted at mx " << mx;
        failed = true;
      }
      for (int i = 0; i < 20 && !failed; ++i) {
        const uint32_t page = random() % kPages + 1;
        absl::StatusOr<uint32_t> frame = index.Lookup(0, page, mx);
        lookups.fetch_add(1, std::memory_order_relaxed);
        if (!frame.ok() || *frame != expected(page, mx)) {
          ADD_FAILURE() << "page " << page << " at mx " << mx << ": "
                        << (frame.ok() ? absl::StrCat(*frame) : frame.status().ToString())
                        << ", want " << expected(page, mx);
          failed = true;
        }
      }
      if (last) break;
    } while (!failed);
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) readers.emplace_back(reader, r);
  while (ready.load() < kReaders) std::this_thread::yield();
  for (uint32_t f = 1; f <= kFrames && !failed; ++f) {
    const absl::Status appended = writer_index->Append(0, f, f % kPages + 1);
    if (!appended.ok()) {
      ADD_FAILURE() << appended;
      failed = true;
    }
    if (f % 10 == 0) writer_index->WriteHeader(published(f));
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_GT(lookups.load(), 0);
  for (uint32_t page = 1; page <= kPages; ++page) {
    ASSERT_EQ(Find(*writer_index, 0, page, kFrames), expected(page, kFrames)) << page;
  }
}

}  // namespace
}  // namespace journalkv::shm
