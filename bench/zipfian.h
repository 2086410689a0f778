// The request distributions of the YCSB core workloads (Cooper et al., SoCC 2010), which choose
// which record an operation touches:
//
//   ZipfianGenerator           a rank in [0, n), rank r drawn with probability
//                              (r+1)^-theta / zeta(n, theta): rank 0 the most popular. YCSB's
//                              constant theta is 0.99. Drawn in O(1) with the closed form of
//                              Gray et al. ("Quickly generating billion-record synthetic
//                              databases", SIGMOD 1994), after an O(n) zeta sum
//   ScrambledZipfianGenerator  the same popularities, but the rank goes through a fixed
//                              permutation of [0, n), so the popular items are spread over the
//                              item numbers instead of being the first ones loaded
//   LatestGenerator            YCSB's "latest" (workload D): the newest item is the most popular,
//                              item n-1-r for a zipfian rank r; Grow(n) as items are inserted
//
//   ScrambledZipfianGenerator keys(records);
//   uint64_t item = keys.Next(rng);   // in [0, records)
//
// How they differ from a perfect zipf law, and from YCSB's own code:
//   - Gray's closed form is exact for ranks 0 and 1 and approximates the rest by a continuous
//     curve: it gives rank 2 about 17-19% more than the law (for n from 10^3 to 10^5), ranks
//     3-7 3-13% more, and its cumulative share of the top k ranks stays within 0.02 of the
//     law's. YCSB uses the same closed form, so jkvbench's skew is YCSB's.
//   - YCSB scrambles a rank with FNV-1a and takes it modulo n, which sends some ranks to the
//     same item (their popularities add up). The permutation here sends each rank to its own
//     item, so an item's share is exactly its rank's: the popularity of the k-th most popular
//     item is the law above, whatever n is.
//   - YCSB's scrambled generator draws ranks over 10^10 items and folds them into n; this one
//     draws over n, so its zeta is n's own (the law above holds for the n records loaded).
//
// Thread-safety: none; one generator per thread (each with its own Rng).
#ifndef JOURNALKV_BENCH_ZIPFIAN_H_
#define JOURNALKV_BENCH_ZIPFIAN_H_

#include <cstdint>

#include "bench/random.h"

namespace journalkv::bench {

// YCSB's zipfian constant (CoreWorkload's ZIPFIAN_CONSTANT).
inline constexpr double kYcsbZipfianTheta = 0.99;

// zeta(n, theta) = sum over i in [1, n] of 1 / i^theta.
double Zeta(uint64_t n, double theta);

class ZipfianGenerator {
 public:
  // REQUIRES: items >= 1, 0 < theta < 1.
  explicit ZipfianGenerator(uint64_t items, double theta = kYcsbZipfianTheta);

  // A rank in [0, items()).
  uint64_t Next(Rng& rng);
  // Extends the ranks to [0, items): the zeta sum grows by the new terms only, so inserting
  // records one at a time costs O(1) each. REQUIRES: items >= items().
  void Grow(uint64_t items);

  uint64_t items() const { return items_; }
  double theta() const { return theta_; }
  double zeta() const { return zeta_n_; }
  // The zipf law's probability of `rank` (what Next approximates; exact for ranks 0 and 1).
  double Probability(uint64_t rank) const;

 private:
  // Gray's eta, which depends on the item count.
  void ComputeEta();

  uint64_t items_;
  const double theta_;
  const double alpha_;     // 1 / (1 - theta)
  const double zeta_two_;  // zeta(2, theta) = 1 + 0.5^theta
  double zeta_n_;
  double eta_ = 0;
};

class ScrambledZipfianGenerator {
 public:
  explicit ScrambledZipfianGenerator(uint64_t items, double theta = kYcsbZipfianTheta);

  // An item in [0, items()): Scramble of a zipfian rank.
  uint64_t Next(Rng& rng) { return Scramble(zipfian_.Next(rng)); }
  // A bijection of [0, items()) onto itself: the item of `rank`.
  uint64_t Scramble(uint64_t rank) const;

  uint64_t items() const { return zipfian_.items(); }
  const ZipfianGenerator& zipfian() const { return zipfian_; }

 private:
  ZipfianGenerator zipfian_;
  int bits_ = 0;  // the smallest power of two >= items is 2^bits_
};

class LatestGenerator {
 public:
  explicit LatestGenerator(uint64_t items, double theta = kYcsbZipfianTheta)
      : zipfian_(items, theta) {}

  // An item in [0, items()), the newest (items() - 1) the most likely.
  uint64_t Next(Rng& rng) { return zipfian_.items() - 1 - zipfian_.Next(rng); }
  // Items [old items(), items) were inserted. REQUIRES: items >= items().
  void Grow(uint64_t items) { zipfian_.Grow(items); }

  uint64_t items() const { return zipfian_.items(); }

 private:
  ZipfianGenerator zipfian_;
};

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_ZIPFIAN_H_
