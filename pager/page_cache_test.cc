// The page cache keeps what its capacity says, split exactly over its shards.
#include "pager/page_cache.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace journalkv::pager {
namespace {

std::shared_ptr<const PageBuffer> Image() { return std::make_shared<const PageBuffer>(64); }

// Inserts pages 1..n (unpinned: the cache holds the only reference).
void Fill(PageCache& cache, uint32_t n) {
  for (uint32_t p = 1; p <= n; ++p) cache.Insert(PageNo(p), Image());
}

TEST(PageCacheTest, HoldsExactlyItsCapacity) {
  for (size_t capacity : {1, 5, 16, 20, 100, 1000}) {
    PageCache cache(capacity);
    Fill(cache, 5000);
    // A per-shard capacity rounded up (20 pages as 2 a shard) held up to 16 pages more.
    EXPECT_EQ(cache.size(), capacity) << "capacity " << capacity;
  }
}

TEST(PageCacheTest, ACacheSmallerThanItsShardsKeepsPagesOfOnlySomeShards) {
  PageCache cache(3);
  Fill(cache, PageCache::kShards);
  EXPECT_EQ(cache.size(), 3u);
  int kept = 0;
  for (uint32_t p = 1; p <= PageCache::kShards; ++p) kept += cache.Lookup(PageNo(p)) != nullptr;
  EXPECT_EQ(kept, 3);
}

TEST(PageCacheTest, PinnedPagesStayPastTheCapacity) {
  PageCache cache(16);
  std::shared_ptr<const PageBuffer> pinned = Image();
  cache.Insert(PageNo(16), pinned);  // shard 0, one page a shard
  cache.Insert(PageNo(32), Image());
  EXPECT_EQ(cache.Lookup(PageNo(16)), pinned) << "a pinned page was evicted";
  pinned.reset();
  cache.Insert(PageNo(48), Image());
  EXPECT_EQ(cache.Lookup(PageNo(16)), nullptr);
  EXPECT_NE(cache.Lookup(PageNo(48)), nullptr);
}

// A page that eviction found pinned counts as used at that moment: it goes to the front, so
// that the next evictions do not walk past it again (a snapshot's table of hot pages pins up
// to half the cache for as long as its snapshot is the newest; pager/hot_pages.h). Once its
// pin drops it goes in its turn, after the pages that were older when it was passed over.
TEST(PageCacheTest, APinnedPagePassedOverByEvictionGoesToTheFront) {
  PageCache cache(2 * PageCache::kShards);
  const auto page = [](uint32_t i) { return PageNo(i * PageCache::kShards); };  // shard 0
  std::shared_ptr<const PageBuffer> pinned = Image();
  cache.Insert(page(1), pinned);
  cache.Insert(page(2), Image());
  cache.Insert(page(3), Image());  // passes over 1 (pinned), evicts 2
  EXPECT_EQ(cache.Lookup(page(2)), nullptr);
  pinned.reset();
  cache.Insert(page(4), Image());  // 3 is now the least recently used
  EXPECT_EQ(cache.Lookup(page(3)), nullptr) << "the page passed over stayed at the back";
  EXPECT_NE(cache.Lookup(page(1)), nullptr);
  EXPECT_NE(cache.Lookup(page(4)), nullptr);
}

// Eviction with every page of a shard pinned ends: nothing is evicted, the shard holds more
// than its share until the pins drop, and the next insert then evicts down to the share.
TEST(PageCacheTest, EvictionOfAShardWhosePagesAreAllPinnedEnds) {
  PageCache cache(2 * PageCache::kShards);
  const auto page = [](uint32_t i) { return PageNo(i * PageCache::kShards); };  // shard 0
  std::vector<std::shared_ptr<const PageBuffer>> pins;
  for (uint32_t i = 1; i <= 5; ++i) {
    pins.push_back(Image());
    cache.Insert(page(i), pins.back());
  }
  for (uint32_t i = 1; i <= 5; ++i) EXPECT_NE(cache.Lookup(page(i)), nullptr) << i;
  pins.clear();
  cache.Insert(page(6), Image());
  int kept = 0;
  for (uint32_t i = 1; i <= 6; ++i) kept += cache.Lookup(page(i)) != nullptr;
  EXPECT_EQ(kept, 2);
  EXPECT_NE(cache.Lookup(page(6)), nullptr);
}

// Least recently used first, except that a hit on a page in the front half does not move it
// (page_cache.h, `pushes`). One shard of 8 pages: a hit on the oldest page moves it to the
// front, so it outlives the next evictions; a hit on a page pushed 3 pushes before keeps its
// place, so it goes in its turn (strict LRU would have kept it and evicted the page after it).
TEST(PageCacheTest, EvictsTheLeastRecentlyUsedAndMovesOnlyHitsFromTheBackHalf) {
  PageCache cache(8 * PageCache::kShards);
  const auto page = [](uint32_t i) { return PageNo(i * PageCache::kShards); };  // shard 0
  for (uint32_t i = 1; i <= 8; ++i) cache.Insert(page(i), Image());
  ASSERT_NE(cache.Lookup(page(1)), nullptr);  // back half: to the front
  ASSERT_NE(cache.Lookup(page(6)), nullptr);  // front half: stays, third from the front
  for (uint32_t i = 9; i <= 13; ++i) cache.Insert(page(i), Image());  // evicts 2, 3, 4, 5, 6
  for (uint32_t i = 2; i <= 6; ++i) EXPECT_EQ(cache.Lookup(page(i)), nullptr) << i;
  EXPECT_NE(cache.Lookup(page(1)), nullptr);
  for (uint32_t i = 7; i <= 13; ++i) EXPECT_NE(cache.Lookup(page(i)), nullptr) << i;
}

}  // namespace
}  // namespace journalkv::pager
