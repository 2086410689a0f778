#include "bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

namespace journalkv::bench {
namespace {

// 2^kSubBits linear sub-buckets per power of two.
constexpr int kSubBits = 6;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
// Values < kSub have one bucket each; each exponent e in [kSubBits, 63] has kSub buckets.
constexpr int kNumBuckets = static_cast<int>(kSub) + (64 - kSubBits) * static_cast<int>(kSub);

}  // namespace

Histogram::Histogram() : buckets_(kNumBuckets, 0) {}

int Histogram::NumBuckets() { return kNumBuckets; }

int Histogram::BucketFor(uint64_t value) {
  if (value < kSub) return static_cast<int>(value);
  const int exponent = 63 - std::countl_zero(value);  // >= kSubBits
  const int shift = exponent - kSubBits;
  const uint64_t sub = (value >> shift) - kSub;  // in [0, kSub)
  return static_cast<int>(kSub) + shift * static_cast<int>(kSub) + static_cast<int>(sub);
}

uint64_t Histogram::BucketLow(int bucket) {
  if (bucket < static_cast<int>(kSub)) return static_cast<uint64_t>(bucket);
  const int shift = (bucket - static_cast<int>(kSub)) / static_cast<int>(kSub);
  const uint64_t sub = static_cast<uint64_t>(bucket) % kSub;
  return (kSub + sub) << shift;
}

uint64_t Histogram::BucketHigh(int bucket) {
  if (bucket + 1 >= kNumBuckets) return UINT64_MAX;
  return BucketLow(bucket + 1) - 1;
}

void Histogram::Record(uint64_t value) {
  ++buckets_[BucketFor(value)];
  if (count_ == 0 || value < min_) min_ = value;
  max_ = std::max(max_, value);
  ++count_;
  sum_ += static_cast<double>(value);
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (int i = 0; i < kNumBuckets; ++i) buckets_[i] += other.buckets_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void Histogram::Clear() { *this = Histogram(); }

std::string Histogram::Encode() const {
  std::string out;
  const auto put = [&out](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
  };
  put(&count_, sizeof count_);
  put(&min_, sizeof min_);
  put(&max_, sizeof max_);
  put(&sum_, sizeof sum_);
  put(buckets_.data(), buckets_.size() * sizeof(uint64_t));
  return out;
}

bool Histogram::Decode(const std::string& bytes) {
  constexpr size_t kFixed = 3 * sizeof(uint64_t) + sizeof(double);
  if (bytes.size() != kFixed + kNumBuckets * sizeof(uint64_t)) return false;
  Histogram h;
  const char* p = bytes.data();
  const auto get = [&p](void* dst, size_t n) {
    std::memcpy(dst, p, n);
    p += n;
  };
  get(&h.count_, sizeof h.count_);
  get(&h.min_, sizeof h.min_);
  get(&h.max_, sizeof h.max_);
  get(&h.sum_, sizeof h.sum_);
  get(h.buckets_.data(), h.buckets_.size() * sizeof(uint64_t));
  uint64_t total = 0;
  for (uint64_t b : h.buckets_) total += b;
  if (total != h.count_ || h.min_ > h.max_) return false;
  *this = std::move(h);
  return true;
}

double Histogram::Mean() const { return count_ == 0 ? 0 : sum_ / static_cast<double>(count_); }

double Histogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank (1-based) of the value asked for: at least 1, at most count_.
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  if (rank >= count_) return static_cast<double>(max_);
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const double mid =
          (static_cast<double>(BucketLow(i)) + static_cast<double>(BucketHigh(i))) / 2;
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace journalkv::bench
