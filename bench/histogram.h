// A latency histogram for the benchmark: log-linear buckets (64 per power of two, so a reported
// percentile is within 1/64 = 1.6% of the true value), with the exact minimum, maximum, count
// and sum kept beside them.
//
//   Histogram h;
//   h.Record(latency_ns);
//   double p99_us = h.Percentile(0.99) / 1000.0;
//
// Values below 64 ns have a bucket each (exact). A percentile is the midpoint of the bucket
// that holds it, clamped to [min, max], so Percentile is non-decreasing in its argument and
// Percentile(1.0) == max().
//
// Thread-safety: not thread-safe; give each thread its own and Merge them afterwards.
#ifndef JOURNALKV_BENCH_HISTOGRAM_H_
#define JOURNALKV_BENCH_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace journalkv::bench {

class Histogram {
 public:
  Histogram();

  void Record(uint64_t value);
  void Merge(const Histogram& other);
  void Clear();

  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double Mean() const;
  // The value at quantile q in [0, 1]; 0 when empty.
  double Percentile(double q) const;

  // A byte string holding the whole histogram (for handing one from a child process to its
  // parent), and back; Decode returns false, leaving *this unchanged, for bytes Encode did not
  // make.
  std::string Encode() const;
  bool Decode(const std::string& bytes);

  // Bucket geometry, exposed for the tests.
  static int BucketFor(uint64_t value);
  static uint64_t BucketLow(int bucket);   // smallest value in the bucket
  static uint64_t BucketHigh(int bucket);  // largest value in the bucket
  static int NumBuckets();

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_HISTOGRAM_H_
