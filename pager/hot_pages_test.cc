#include "pager/hot_pages.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace journalkv::pager {
namespace {

std::shared_ptr<const PageBuffer> Image(uint8_t fill) {
  auto buffer = std::make_shared<PageBuffer>(64);
  std::fill_n(buffer->bytes.get(), 64, fill);
  return buffer;
}

constexpr HotPages::Kind kAny = HotPages::Kind::kAny;
constexpr HotPages::Kind kInterior = HotPages::Kind::kInterior;

TEST(HotPagesTest, FindsWhatWasAddedAndNothingElse) {
  HotPages hot(64);
  EXPECT_EQ(hot.Find(7), nullptr);  // nothing allocated yet
  hot.Add(7, Image(7), kAny);
  hot.Add(3, Image(3), kInterior);
  ASSERT_NE(hot.Find(7), nullptr);
  EXPECT_EQ(hot.Find(7)->bytes[0], 7);
  ASSERT_NE(hot.Find(3), nullptr);
  EXPECT_EQ(hot.Find(3)->bytes[0], 3);
  EXPECT_EQ(hot.Find(4), nullptr);
  EXPECT_EQ(hot.size(), 2u);
}

TEST(HotPagesTest, TheFirstImageOfAPageStays) {
  HotPages hot(64);
  hot.Add(5, Image(1), kAny);
  hot.Add(5, Image(2), kInterior);
  EXPECT_EQ(hot.size(), 1u);
  EXPECT_EQ(hot.Find(5)->bytes[0], 1);
}

// 48 pages in 128 slots share home slots (a birthday bound: with these page numbers, many
// do), so probes run past taken slots: each page is still found, with its own image, and a
// page the table does not hold ends its probe at an empty slot.
TEST(HotPagesTest, PagesSharingSlotsAreAllFound) {
  HotPages hot(64);  // 128 slots; any page may take 48
  std::vector<uint32_t> added;
  uint32_t x = 12345;
  while (added.size() < 48) {
    x = x * 1664525u + 1013904223u;
    const uint32_t p = 2 + (x >> 8) % 1000000;
    if (std::find(added.begin(), added.end(), p) != added.end()) continue;
    hot.Add(p, Image(static_cast<uint8_t>(added.size())), kAny);
    added.push_back(p);
  }
  ASSERT_EQ(hot.size(), 48u);
  for (size_t i = 0; i < added.size(); ++i) {
    ASSERT_NE(hot.Find(added[i]), nullptr) << added[i];
    EXPECT_EQ(hot.Find(added[i])->bytes[0], static_cast<uint8_t>(i));
  }
  for (uint32_t p = 1000002; p < 1000002 + 1000; ++p) ASSERT_EQ(hot.Find(p), nullptr) << p;
}

// Any page takes the first three quarters of the limit; interior pages the rest.
TEST(HotPagesTest, LeavesStopAtThreeQuartersAndInteriorPagesAtTheLimit) {
  HotPages hot(64);
  ASSERT_EQ(hot.limit(), 64u);
  for (uint32_t p = 2; p < 2 + 100; ++p) hot.Add(p, Image(static_cast<uint8_t>(p)), kAny);
  EXPECT_EQ(hot.size(), 48u);
  EXPECT_FALSE(hot.HasRoom(kAny));
  EXPECT_TRUE(hot.HasRoom(kInterior));
  EXPECT_EQ(hot.Find(2 + 48), nullptr);
  for (uint32_t p = 1000; p < 1000 + 100; ++p) hot.Add(p, Image(1), kInterior);
  EXPECT_EQ(hot.size(), 64u);
  EXPECT_FALSE(hot.HasRoom(kInterior));
  EXPECT_NE(hot.Find(1000 + 15), nullptr);
  EXPECT_EQ(hot.Find(1000 + 16), nullptr);
  for (uint32_t p = 2; p < 2 + 48; ++p) {
    ASSERT_NE(hot.Find(p), nullptr) << p;
    EXPECT_EQ(hot.Find(p)->bytes[0], static_cast<uint8_t>(p));
  }
}

TEST(HotPagesTest, TheLimitFollowsTheCacheWithinBounds) {
  EXPECT_EQ(HotPages(HotPages::LimitForCache(2000)).limit(), 1000u);
  EXPECT_EQ(HotPages(HotPages::LimitForCache(16384)).limit(), 8192u);  // a 64 MiB cache
  EXPECT_EQ(HotPages(HotPages::LimitForCache(0)).limit(), 8u);
  EXPECT_EQ(HotPages(HotPages::LimitForCache(1u << 20)).limit(), HotPages::kMaxLimit);
}

// The slots start few and double as pages come (H4): every page stays found with its first
// image, and an entry found before a growth stays whole, in the array it was found in.
TEST(HotPagesTest, AGrowingTableKeepsEveryPageAndEveryEntryFoundBefore) {
  HotPages hot(4096);  // any page may take 3,072; the slots grow from 64 to 8,192
  hot.Add(2, Image(2), kAny);
  const HotPages::Entry* early = hot.Find(2);
  ASSERT_NE(early, nullptr);
  const std::shared_ptr<const PageBuffer> image = early->image;
  for (uint32_t p = 3; p < 3100; ++p) hot.Add(p, Image(static_cast<uint8_t>(p)), kAny);
  EXPECT_EQ(hot.size(), 3072u);
  EXPECT_EQ(early->image, image);
  EXPECT_EQ(early->bytes[0], 2);
  EXPECT_EQ(hot.Find(2)->image, image);
  for (uint32_t p = 2; p < 2 + 3072; ++p) {
    ASSERT_NE(hot.Find(p), nullptr) << p;
    ASSERT_EQ(hot.Find(p)->bytes[0], static_cast<uint8_t>(p)) << p;
  }
  EXPECT_EQ(hot.Find(2 + 3072), nullptr);
  for (uint32_t p = 100000; p < 110000; ++p) ASSERT_EQ(hot.Find(p), nullptr) << p;
}

// The table keeps its images alive, and lets them go when it goes.
TEST(HotPagesTest, TheTableHoldsItsImagesUntilItGoes) {
  std::shared_ptr<const PageBuffer> image = Image(9);
  {
    HotPages hot(16);
    hot.Add(4, image, kAny);
    EXPECT_EQ(image.use_count(), 2);
    EXPECT_EQ(hot.Find(4)->image, image);
    EXPECT_EQ(hot.Find(4)->bytes, image->bytes.get());
  }
  EXPECT_EQ(image.use_count(), 1);
}

// Readers find while others add (ThreadSanitizer checks the publication order, H3 and H4):
// every image found is whole and the one its page was added with, through the table's growths
// from 64 slots to 2,048.
TEST(HotPagesTest, ThreadsFindWhileOthersAdd) {
  constexpr uint32_t kPages = 700;
  HotPages hot(1024);  // room for all of them, whichever kind
  std::atomic<bool> stop{false};
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        for (uint32_t p = 2; p < 2 + kPages; ++p) {
          if (const auto* image = hot.Find(p)) {
            for (int i = 0; i < 64; ++i) ASSERT_EQ(image->bytes[i], static_cast<uint8_t>(p));
            found.fetch_add(1);
          }
        }
      }
    });
  }
  std::vector<std::thread> adders;
  for (int t = 0; t < 2; ++t) {
    adders.emplace_back([&, t] {
      for (uint32_t p = 2 + t; p < 2 + kPages; p += 2) {
        hot.Add(p, Image(static_cast<uint8_t>(p)), t == 0 ? kAny : kInterior);
      }
    });
  }
  for (auto& a : adders) a.join();
  while (found.load() < 1000) std::this_thread::yield();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(hot.size(), kPages);
  for (uint32_t p = 2; p < 2 + kPages; ++p) ASSERT_NE(hot.Find(p), nullptr) << p;
}

}  // namespace
}  // namespace journalkv::pager
