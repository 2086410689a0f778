// Tests of WalIndex's hash tables (wal_index_hash.cc) on the heap and over the -shm file of the
// in-memory and the POSIX file systems: collisions, block boundaries, truncation, an earlier
// life's garbage, and readers racing the writer.
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
}  // namespace journalkv::shm::testing
