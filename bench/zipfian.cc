#include "bench/zipfian.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace journalkv::bench {
namespace {

// A permutation of [0, 2^bits): rounds of an added constant, a multiplication by an odd
// constant (both invertible modulo 2^bits) and an xor with the value shifted right (invertible
// on `bits` bits), so that neighbouring inputs land far apart. The constant keeps 0 from
// mapping to 0.
uint64_t PermuteBits(uint64_t x, int bits) {
  static constexpr uint64_t kAdd[] = {0x2545f4914f6cdd1dULL, 0x9e3779b97f4a7c15ULL,
                                      0xd1b54a32d192ed03ULL};
  static constexpr uint64_t kOdd[] = {0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL,
                                      0xff51afd7ed558ccdULL};
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const int shift = std::max(1, bits / 2);
  for (int round = 0; round < 3; ++round) {
    x = (x + kAdd[round]) & mask;
    x = (x * kOdd[round]) & mask;
    x ^= x >> shift;
  }
  return x;
}

}  // namespace

double Zeta(uint64_t n, double theta) {
  double sum = 0;
  for (uint64_t i = 1; i <= n; ++i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta)
    : items_(std::max<uint64_t>(items, 1)),
      theta_(theta),
      alpha_(1.0 / (1.0 - theta)),
      zeta_two_(1.0 + std::pow(0.5, theta)),
      zeta_n_(Zeta(items_, theta)) {
  ComputeEta();
}

void ZipfianGenerator::ComputeEta() {
  // With one or two items the first two branches of Next cover every u, and the formula would
  // divide by zero (zeta(2) / zeta(2) = 1).
  if (items_ <= 2) {
    eta_ = 0;
    return;
  }
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) /
         (1.0 - zeta_two_ / zeta_n_);
}

void ZipfianGenerator::Grow(uint64_t items) {
  if (items <= items_) return;
  for (uint64_t i = items_ + 1; i <= items; ++i) {
    zeta_n_ += std::pow(static_cast<double>(i), -theta_);
  }
  items_ = items;
  ComputeEta();
}

uint64_t ZipfianGenerator::Next(Rng& rng) {
  const double u = rng.Double();
  const double uz = u * zeta_n_;
  if (uz < 1.0) return 0;
  if (uz < zeta_two_) return 1;
  // Past the first two ranks Gray's curve starts at exactly 2 (eta is chosen so); clamping
  // keeps rounding from reaching back into them or past the last item.
  const double rank = static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  if (!(rank >= 2.0)) return std::min<uint64_t>(2, items_ - 1);
  return std::min(static_cast<uint64_t>(rank), items_ - 1);
}

double ZipfianGenerator::Probability(uint64_t rank) const {
  if (rank >= items_) return 0;
  return std::pow(static_cast<double>(rank + 1), -theta_) / zeta_n_;
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(uint64_t items, double theta)
    : zipfian_(items, theta), bits_(std::bit_width(zipfian_.items() - 1)) {}

uint64_t ScrambledZipfianGenerator::Scramble(uint64_t rank) const {
  // Cycle walking: a permutation of the power-of-two range, applied until the value falls in
  // [0, items), is a permutation of [0, items). Fewer than two steps on average, since the
  // range is less than twice items.
  uint64_t x = rank;
  do {
    x = PermuteBits(x, bits_);
  } while (x >= zipfian_.items());
  return x;
}

}  // namespace journalkv::bench
