// Test-only: the heaviest randomized tests (power-loss sweeps, model tests) do less work under
// the sanitizers, whose builds run many times slower. `.bazelrc` sets JKV_SANITIZER for
// --config=asan and --config=tsan. The optimized run (the README's test command) always does
// the full amount; the sanitizer runs keep every case, with fewer seeds or operations.
#ifndef JOURNALKV_BASE_TEST_SCALE_H_
#define JOURNALKV_BASE_TEST_SCALE_H_

#include <cstdlib>

namespace journalkv::testing {

inline bool UnderSanitizer() { return std::getenv("JKV_SANITIZER") != nullptr; }

// `full` normally, `reduced` under a sanitizer.
inline int ScaledForSanitizer(int full, int reduced) { return UnderSanitizer() ? reduced : full; }

}  // namespace journalkv::testing

#endif  // JOURNALKV_BASE_TEST_SCALE_H_
