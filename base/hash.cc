#include "base/hash.h"

// For XXH3_state_t, so that Xxh3Pair keeps its state on the stack instead of allocating it.
// This ties the build to the installed library's state layout, which is fine: we link the
// same system libxxhash we compile against.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace journalkv::base {

uint64_t Xxh3(const void* data, size_t size_bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size_bytes, seed);
}

uint64_t Xxh3Pair(const void* a, size_t a_bytes, const void* b, size_t b_bytes, uint64_t seed) {
  // The streaming API returns exactly what the one-shot call returns on the concatenation.
  // reset/update only fail on a null state or null data with nonzero length.
  XXH3_state_t state;
  // Required for a state on the stack: reset_withSeed skips deriving its secret from the seed
  // when state.seed already equals the seed, so stack garbage would corrupt the hash.
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset_withSeed(&state, seed);
  XXH3_64bits_update(&state, a, a_bytes);
  XXH3_64bits_update(&state, b, b_bytes);
  return XXH3_64bits_digest(&state);
}

}  // namespace journalkv::base
