#include "base/hash.h"

#include <xxhash.h>

namespace journalkv::base {

uint64_t Xxh3(const void* data, size_t size_bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size_bytes, seed);
}

}  // namespace journalkv::base
