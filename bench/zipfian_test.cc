// The YCSB request distributions of zipfian.h, drawn a million times from fixed seeds: the top
// ranks' frequencies against the zipf law (exact for ranks 0 and 1, Gray's documented
// approximation after them), every draw in range, the scramble a permutation that spreads the
// popular items, and "latest" favouring the newest items as they are inserted.
#include "bench/zipfian.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "bench/random.h"
#include "gtest/gtest.h"

namespace journalkv::bench {
namespace {

constexpr uint64_t kDraws = 1000000;
constexpr double kTheta = kYcsbZipfianTheta;

// How often each of n values came out of `draw` in kDraws draws.
std::vector<uint64_t> Counts(uint64_t n, const std::function<uint64_t()>& draw) {
  std::vector<uint64_t> counts(n, 0);
  for (uint64_t i = 0; i < kDraws; ++i) {
    const uint64_t v = draw();
    EXPECT_LT(v, n);
    if (v < n) ++counts[v];
  }
  return counts;
}

double Share(uint64_t count) { return static_cast<double>(count) / kDraws; }

// Within 4.5 standard deviations of a binomial share p over kDraws (a false failure about once
// in 150,000 checks; the seeds are fixed, so a pass stays a pass).
void ExpectShareNear(double share, double p, const char* what, uint64_t rank) {
  const double sigma = std::sqrt(p * (1 - p) / kDraws);
  EXPECT_NEAR(share, p, 4.5 * sigma) << what << " rank " << rank;
}

// The share Gray's closed form gives `rank` (rank >= 2): the measure of the u that the curve
// n * (eta*u - eta + 1)^alpha sends into [rank, rank + 1).
double GrayShare(const ZipfianGenerator& z, uint64_t rank) {
  const double n = static_cast<double>(z.items());
  const double zeta2 = 1 + std::pow(0.5, kTheta);
  const double eta = (1 - std::pow(2.0 / n, 1 - kTheta)) / (1 - zeta2 / z.zeta());
  auto u_at = [&](double x) {
    const double u = (std::pow(x / n, 1 - kTheta) - 1 + eta) / eta;
    return std::max(u, zeta2 / z.zeta());
  };
  return u_at(static_cast<double>(rank + 1)) - u_at(static_cast<double>(rank));
}

TEST(ZipfianTest, ZetaIsTheSumAndGrowsIncrementally) {
  EXPECT_DOUBLE_EQ(Zeta(1, kTheta), 1.0);
  EXPECT_DOUBLE_EQ(Zeta(2, kTheta), 1.0 + std::pow(0.5, kTheta));
  // 0.5 makes the terms easy to check by hand: 1 + 1/sqrt(2) + 1/sqrt(3).
  EXPECT_NEAR(Zeta(3, 0.5), 1 + 1 / std::sqrt(2.0) + 1 / std::sqrt(3.0), 1e-12);
  ZipfianGenerator z(1000);
  EXPECT_NEAR(z.zeta(), Zeta(1000, kTheta), 1e-12);
  z.Grow(1001);
  z.Grow(25000);
  EXPECT_EQ(z.items(), 25000u);
  EXPECT_NEAR(z.zeta(), Zeta(25000, kTheta), 1e-9 * z.zeta());
}

TEST(ZipfianTest, TopRanksFollowTheZipfLaw) {
  for (uint64_t n : {1000u, 100000u}) {
    ZipfianGenerator z(n);
    Rng rng(12345 + n);
    const std::vector<uint64_t> counts = Counts(n, [&] { return z.Next(rng); });
    // Ranks 0 and 1 are drawn exactly as the law says.
    for (uint64_t r : {0u, 1u}) ExpectShareNear(Share(counts[r]), z.Probability(r), "law", r);
    EXPECT_NEAR(z.Probability(0), 1 / Zeta(n, kTheta), 1e-15);
    EXPECT_NEAR(z.Probability(1), std::pow(2.0, -kTheta) / Zeta(n, kTheta), 1e-15);
    // Ranks 2-9 as Gray's curve gives them, which is the law plus at most 25% (rank 2, the
    // worst, gets 17-19% more).
    for (uint64_t r = 2; r < 10; ++r) {
      ExpectShareNear(Share(counts[r]), GrayShare(z, r), "Gray's curve", r);
      EXPECT_GT(Share(counts[r]), 0.97 * z.Probability(r)) << "rank " << r;
      EXPECT_LT(Share(counts[r]), 1.25 * z.Probability(r)) << "rank " << r;
    }
    // Popularity falls with rank, and the head's share is the law's within 0.02.
    for (uint64_t r = 1; r < 10; ++r) EXPECT_LT(counts[r], counts[r - 1]) << "rank " << r;
    for (uint64_t k : {10u, 100u, static_cast<unsigned>(n / 2)}) {
      uint64_t head = 0;
      double law = 0;
      for (uint64_t r = 0; r < k; ++r) {
        head += counts[r];
        law += z.Probability(r);
      }
      EXPECT_NEAR(Share(head), law, 0.02) << "top " << k << " of " << n;
    }
  }
}

TEST(ZipfianTest, EveryDrawInRange) {
  for (uint64_t n : {1u, 2u, 3u, 7u, 64u, 1000u}) {
    ZipfianGenerator z(n);
    ScrambledZipfianGenerator s(n);
    LatestGenerator l(n);
    Rng rng(n);
    std::set<uint64_t> seen_z, seen_s, seen_l;
    for (int i = 0; i < 200000; ++i) {
      const uint64_t a = z.Next(rng), b = s.Next(rng), c = l.Next(rng);
      ASSERT_LT(a, n);
      ASSERT_LT(b, n);
      ASSERT_LT(c, n);
      seen_z.insert(a);
      seen_s.insert(b);
      seen_l.insert(c);
    }
    if (n <= 64) {  // every item turns up (the rarest of 64 has a share of 0.35%)
      EXPECT_EQ(seen_z.size(), n);
      EXPECT_EQ(seen_s.size(), n);
      EXPECT_EQ(seen_l.size(), n);
    }
  }
}

TEST(ZipfianTest, ScrambleIsAPermutationThatSpreadsThePopularItems) {
  for (uint64_t n : {1u, 2u, 3u, 5u, 1000u, 1024u, 1025u, 100000u}) {
    ScrambledZipfianGenerator s(n);
    std::vector<bool> hit(n, false);
    for (uint64_t r = 0; r < n; ++r) {
      const uint64_t item = s.Scramble(r);
      ASSERT_LT(item, n);
      ASSERT_FALSE(hit[item]) << "two ranks map to item " << item << " of " << n;
      hit[item] = true;
    }
  }
  // The 16 most popular of 100,000 items are neither the first ones nor next to each other.
  ScrambledZipfianGenerator s(100000);
  std::vector<uint64_t> top;
  for (uint64_t r = 0; r < 16; ++r) top.push_back(s.Scramble(r));
  std::sort(top.begin(), top.end());
  EXPECT_GT(top.back() - top.front(), 50000u);
  EXPECT_GT(top[8], 16u);
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GT(top[i] - top[i - 1], 1u);
}

TEST(ZipfianTest, ScrambledItemsHaveTheirRanksPopularity) {
  const uint64_t n = 1000;
  ScrambledZipfianGenerator s(n);
  Rng rng(777);
  const std::vector<uint64_t> counts = Counts(n, [&] { return s.Next(rng); });
  for (uint64_t r : {0u, 1u}) {
    ExpectShareNear(Share(counts[s.Scramble(r)]), s.zipfian().Probability(r), "scrambled", r);
  }
  // The most popular item is rank 0's; and by popularity the items follow the ranks' law.
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()) - counts.begin(),
            static_cast<ptrdiff_t>(s.Scramble(0)));
  std::vector<uint64_t> sorted = counts;
  std::sort(sorted.rbegin(), sorted.rend());
  ExpectShareNear(Share(sorted[1]), s.zipfian().Probability(1), "second most popular", 1);
}

TEST(ZipfianTest, LatestFavoursTheNewestItems) {
  const uint64_t n = 1000;
  LatestGenerator l(n);
  ZipfianGenerator law(n);
  Rng rng(4242);
  std::vector<uint64_t> counts = Counts(n, [&] { return l.Next(rng); });
  // The newest item has rank 0's share, the one before it rank 1's.
  ExpectShareNear(Share(counts[n - 1]), law.Probability(0), "newest", 0);
  ExpectShareNear(Share(counts[n - 2]), law.Probability(1), "second newest", 1);
  uint64_t newest10 = 0, oldest500 = 0;
  for (uint64_t i = 0; i < 10; ++i) newest10 += counts[n - 1 - i];
  for (uint64_t i = 0; i < 500; ++i) oldest500 += counts[i];
  // By the law 0.38 against 0.09.
  EXPECT_GT(newest10, 3 * oldest500);
  // An insert makes the new item the most popular, and its predecessor second.
  l.Grow(n + 1);
  EXPECT_EQ(l.items(), n + 1);
  counts = Counts(n + 1, [&] { return l.Next(rng); });
  ExpectShareNear(Share(counts[n]), ZipfianGenerator(n + 1).Probability(0), "inserted", 0);
  ExpectShareNear(Share(counts[n - 1]), ZipfianGenerator(n + 1).Probability(1), "previous", 1);
  EXPECT_EQ(std::max_element(counts.begin(), counts.end()) - counts.begin(),
            static_cast<ptrdiff_t>(n));
}

}  // namespace
}  // namespace journalkv::bench
