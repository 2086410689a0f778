// The idle gaps of jkvbench's bursty workload (bursty.cc): a distribution of gap lengths in
// milliseconds, parsed from --gap and drawn from a seeded Rng, so that every engine of a run
// idles for the same sequence of gaps.
//
//   exp:MS            exponential with mean MS (arrivals of a Poisson process: an app's bursts
//                     of writes at random moments)
//   fixed:MS          exactly MS every time
//   uniform:MIN-MAX   uniform in [MIN, MAX)
//
// MS, MIN and MAX are non-negative decimal numbers of milliseconds, at most 60000.
//
//   absl::StatusOr<GapDistribution> gap = ParseGap("exp:20");
//   Rng rng(seed);
//   double ms = gap->NextMs(rng);
//
// Thread-safety: a GapDistribution is a plain value; the Rng is the caller's.
#ifndef JOURNALKV_BENCH_GAPS_H_
#define JOURNALKV_BENCH_GAPS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/random.h"

namespace journalkv::bench {

struct GapDistribution {
  enum class Kind { kExponential, kFixed, kUniform };
  Kind kind = Kind::kExponential;
  double a_ms = 20;  // exp: the mean; fixed: the gap; uniform: the lowest
  double b_ms = 20;  // uniform: the bound above (excluded); else equal to a_ms

  // The distribution's mean in milliseconds.
  double MeanMs() const;
  // The next gap, in milliseconds (>= 0), one or two draws from `rng`.
  double NextMs(Rng& rng) const;
  // The --gap text that parses back to this distribution ("exp:20", "uniform:5-50").
  std::string Name() const;
};

// InvalidArgument naming the text for anything but the three forms above.
absl::StatusOr<GapDistribution> ParseGap(absl::string_view text);

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_GAPS_H_
