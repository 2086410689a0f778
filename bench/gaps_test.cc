// bursty's gap distributions (gaps.h): parsing and its errors, fixed gaps exact, exponential and
// uniform means within tolerance of the asked mean over many seeded draws, uniform gaps inside
// their range, and the same seed giving the same sequence.
#include "bench/gaps.h"

#include <cmath>
#include <string>
#include <vector>

#include "bench/random.h"
#include "gtest/gtest.h"

namespace journalkv::bench {
namespace {

constexpr int kDraws = 200000;

TEST(GapsTest, ParsesEachFormAndNamesItBack) {
  for (const std::string text : {"exp:20", "fixed:1", "uniform:5-50", "fixed:0", "exp:0.5"}) {
    absl::StatusOr<GapDistribution> g = ParseGap(text);
    ASSERT_TRUE(g.ok()) << text << ": " << g.status();
    EXPECT_EQ(g->Name(), text);
  }
  EXPECT_DOUBLE_EQ(ParseGap("uniform:5-50")->MeanMs(), 27.5);
  EXPECT_DOUBLE_EQ(ParseGap("exp:20")->MeanMs(), 20);
}

TEST(GapsTest, RejectsMalformedText) {
  for (const std::string text : {"", "exp", "exp:", "exp:-1", "fixed:abc", "poisson:5",
                                 "uniform:5", "uniform:50-5", "fixed:60001", "uniform:1-x"}) {
    absl::StatusOr<GapDistribution> g = ParseGap(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find("--gap"), absl::string_view::npos);
  }
}

TEST(GapsTest, FixedIsExact) {
  const GapDistribution g = *ParseGap("fixed:7.25");
  Rng rng(1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(g.NextMs(rng), 7.25);
}

// The mean of kDraws draws within 4 standard errors of the distribution's mean.
void ExpectMean(const std::string& text, double sd) {
  const GapDistribution g = *ParseGap(text);
  Rng rng(301);
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double ms = g.NextMs(rng);
    ASSERT_GE(ms, 0) << text;
    ASSERT_TRUE(std::isfinite(ms)) << text;
    sum += ms;
  }
  EXPECT_NEAR(sum / kDraws, g.MeanMs(), 4 * sd / std::sqrt(kDraws)) << text;
}

TEST(GapsTest, ExponentialMeanWithinTolerance) {
  ExpectMean("exp:20", 20);  // an exponential's standard deviation is its mean
  ExpectMean("exp:3", 3);
}

TEST(GapsTest, ExponentialHasItsSpread) {
  // P(gap > mean) = 1/e: a distribution that only had the right mean would miss it.
  const GapDistribution g = *ParseGap("exp:10");
  Rng rng(7);
  int above = 0;
  for (int i = 0; i < kDraws; ++i) above += g.NextMs(rng) > 10;
  const double p = std::exp(-1.0);
  EXPECT_NEAR(double(above) / kDraws, p, 4 * std::sqrt(p * (1 - p) / kDraws));
}

TEST(GapsTest, UniformStaysInRangeWithItsMean) {
  ExpectMean("uniform:5-50", 45 / std::sqrt(12.0));
  const GapDistribution g = *ParseGap("uniform:5-50");
  Rng rng(2);
  double lo = 1e9, hi = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double ms = g.NextMs(rng);
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
  }
  EXPECT_GE(lo, 5);
  EXPECT_LT(hi, 50);
  EXPECT_LT(lo, 5.01);  // the range is covered, not a point in it
  EXPECT_GT(hi, 49.99);
}

TEST(GapsTest, SameSeedSameSequence) {
  const GapDistribution g = *ParseGap("exp:15");
  Rng a(42), b(42), c(43);
  std::vector<double> x, y, z;
  for (int i = 0; i < 100; ++i) {
    x.push_back(g.NextMs(a));
    y.push_back(g.NextMs(b));
    z.push_back(g.NextMs(c));
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

}  // namespace
}  // namespace journalkv::bench
