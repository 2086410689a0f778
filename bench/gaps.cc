#include "bench/gaps.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace journalkv::bench {
namespace {

constexpr double kMaxMs = 60000;

bool ParseMs(absl::string_view text, double* ms) {
  return absl::SimpleAtod(text, ms) && *ms >= 0 && *ms <= kMaxMs;
}

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--gap: \"", text, "\" ", why,
      " (want exp:MS, fixed:MS or uniform:MIN-MAX, milliseconds in [0, 60000])"));
}

}  // namespace

double GapDistribution::MeanMs() const {
  return kind == Kind::kUniform ? (a_ms + b_ms) / 2 : a_ms;
}

double GapDistribution::NextMs(Rng& rng) const {
  switch (kind) {
    case Kind::kFixed:
      return a_ms;
    case Kind::kUniform:
      return a_ms + (b_ms - a_ms) * rng.Double();
    case Kind::kExponential:
      // 1 - u is in (0, 1], so the logarithm is finite.
      return -a_ms * std::log(1.0 - rng.Double());
  }
  return a_ms;
}

std::string GapDistribution::Name() const {
  switch (kind) {
    case Kind::kFixed:
      return absl::StrCat("fixed:", a_ms);
    case Kind::kUniform:
      return absl::StrCat("uniform:", a_ms, "-", b_ms);
    case Kind::kExponential:
      return absl::StrCat("exp:", a_ms);
  }
  return "";
}

absl::StatusOr<GapDistribution> ParseGap(absl::string_view text) {
  std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(text, absl::MaxSplits(':', 1));
  GapDistribution g;
  if (kv.first == "exp" || kv.first == "fixed") {
    g.kind = kv.first == "exp" ? GapDistribution::Kind::kExponential
                               : GapDistribution::Kind::kFixed;
    if (!ParseMs(kv.second, &g.a_ms)) return Bad(text, "has no valid length");
    g.b_ms = g.a_ms;
    return g;
  }
  if (kv.first == "uniform") {
    std::pair<absl::string_view, absl::string_view> range =
        absl::StrSplit(kv.second, absl::MaxSplits('-', 1));
    g.kind = GapDistribution::Kind::kUniform;
    if (!ParseMs(range.first, &g.a_ms) || !ParseMs(range.second, &g.b_ms)) {
      return Bad(text, "has no valid range");
    }
    if (g.b_ms < g.a_ms) return Bad(text, "has MAX below MIN");
    return g;
  }
  return Bad(text, "is not a known distribution");
}

}  // namespace journalkv::bench
