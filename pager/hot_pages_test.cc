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

TEST(HotPagesTest, FindsWhatWasAddedAndNothingElse) {
  HotPages hot;
  EXPECT_EQ(hot.Find(7), nullptr);
  hot.Add(7, Image(7));
  hot.Add(3, Image(3));
  ASSERT_NE(hot.Find(7), nullptr);
  EXPECT_EQ((*hot.Find(7))->bytes[0], 7);
  ASSERT_NE(hot.Find(3), nullptr);
  EXPECT_EQ((*hot.Find(3))->bytes[0], 3);
  EXPECT_EQ(hot.Find(4), nullptr);
  EXPECT_EQ(hot.size(), 2);
}

TEST(HotPagesTest, TheFirstImageOfAPageStays) {
  HotPages hot;
  hot.Add(5, Image(1));
  hot.Add(5, Image(2));
  EXPECT_EQ(hot.size(), 1);
  EXPECT_EQ((*hot.Find(5))->bytes[0], 1);
}

TEST(HotPagesTest, AFullTableTakesNoMore) {
  HotPages hot;
  for (uint32_t p = 2; p < 2 + HotPages::kSlots; ++p) hot.Add(p, Image(static_cast<uint8_t>(p)));
  EXPECT_EQ(hot.size(), HotPages::kSlots);
  hot.Add(1000, Image(1));
  EXPECT_EQ(hot.Find(1000), nullptr);
  for (uint32_t p = 2; p < 2 + HotPages::kSlots; ++p) {
    ASSERT_NE(hot.Find(p), nullptr) << p;
    EXPECT_EQ((*hot.Find(p))->bytes[0], static_cast<uint8_t>(p));
  }
}

// Readers find while others add (ThreadSanitizer checks the publication order): every image
// found is whole and the one its page was added with.
TEST(HotPagesTest, ThreadsFindWhileOthersAdd) {
  HotPages hot;
  std::atomic<bool> stop{false};
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        for (uint32_t p = 2; p < 2 + HotPages::kSlots; ++p) {
          if (const auto* image = hot.Find(p)) {
            for (int i = 0; i < 64; ++i) ASSERT_EQ((*image)->bytes[i], static_cast<uint8_t>(p));
            found.fetch_add(1);
          }
        }
      }
    });
  }
  std::vector<std::thread> adders;
  for (int t = 0; t < 2; ++t) {
    adders.emplace_back([&, t] {
      for (uint32_t p = 2 + t; p < 2 + HotPages::kSlots; p += 2) {
        hot.Add(p, Image(static_cast<uint8_t>(p)));
      }
    });
  }
  for (auto& a : adders) a.join();
  while (found.load() < 1000) std::this_thread::yield();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(hot.size(), HotPages::kSlots);
}

}  // namespace
}  // namespace journalkv::pager
