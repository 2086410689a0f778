// jkvbench's pseudo-random numbers: splitmix64, seeded from --seed, so that every engine of a run
// sees the same keys, values and choices, and a run can be repeated exactly on any platform
// (std::mt19937 would do, but its distributions differ between standard libraries).
//
//   Rng rng(seed);
//   uint64_t i = rng.Uniform(n);   // in [0, n)
//   double u = rng.Double();       // in [0, 1)
//
// Mix is splitmix64's finalizer, a bijection on 64-bit integers (BenchKey uses it so that key
// order is unrelated to key number).
//
// Thread-safety: an Rng is a plain value; give each thread its own.
#ifndef JOURNALKV_BENCH_RANDOM_H_
#define JOURNALKV_BENCH_RANDOM_H_

#include <cstdint>

namespace journalkv::bench {

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ULL); }
  // The modulo bias is below 2^-40 for the n jkvbench uses (at most 2^32 or so): not worth a
  // rejection loop that would make the sequence depend on n's form.
  uint64_t Uniform(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  // 53 random bits, so every value is exact and 1.0 is never returned.
  double Double() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_RANDOM_H_
