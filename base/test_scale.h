// Test-only: how much work the heavy randomized tests (crash sweeps, sync-removal sweeps, model
// tests, multi-process kill runs) do, by test tier and build.
//
// Tiers (README.md, "Tests"):
//   default  `./bazelw test //...`: every case, every journal mode, sync level and crash kind,
//            each with fewer states drawn at random from a per-run seed that the sweeps print
//            (JKV_CRASH_SEED=N replays one), so that runs over time cover more than any one run.
//   long     `./bazelw test --config=long //...` (sets JKV_TEST_TIER=long): the full sweeps,
//            every mutation, more seeds, the configurations the default tier leaves out.
//            JKV_LONG_SWEEP=1, its older spelling, still selects it.
// Sanitizer builds (`.bazelrc` sets JKV_SANITIZER for --config=asan and --config=tsan) run many
// times slower: in the default tier they do the reduced amount; the long tier ignores them.
#ifndef JOURNALKV_BASE_TEST_SCALE_H_
#define JOURNALKV_BASE_TEST_SCALE_H_

#include <cstdlib>
#include <cstring>

namespace journalkv::testing {

inline bool UnderSanitizer() { return std::getenv("JKV_SANITIZER") != nullptr; }

// ThreadSanitizer (`--config=tsan`) in particular: CI runs only the concurrency tests under it.
inline bool UnderThreadSanitizer() {
  const char* s = std::getenv("JKV_SANITIZER");
  return s != nullptr && std::strcmp(s, "tsan") == 0;
}

// True in the long tier.
inline bool LongTier() {
  const char* tier = std::getenv("JKV_TEST_TIER");
  if (tier != nullptr && std::strcmp(tier, "long") == 0) return true;
  const char* old = std::getenv("JKV_LONG_SWEEP");
  return old != nullptr && std::strcmp(old, "1") == 0;
}

// The amount of work for this tier and build: `long_tier` in the long tier, else `reduced`
// under a sanitizer, else `normal`.
inline int TierScaled(int normal, int reduced, int long_tier) {
  if (LongTier()) return long_tier;
  return UnderSanitizer() ? reduced : normal;
}

// `full` normally, `reduced` under a sanitizer (the long tier too: for work the long tier does
// not grow).
inline int ScaledForSanitizer(int full, int reduced) { return UnderSanitizer() ? reduced : full; }

}  // namespace journalkv::testing

#endif  // JOURNALKV_BASE_TEST_SCALE_H_
