// The one checksum of journalkv: XXH3-64 with a seed (xxHash from Debian's libxxhash-dev).
// Pages seed it with their page number, journal records with the journal nonce, so a page
// written to the wrong place or left over from an older journal fails its check.
#ifndef JOURNALKV_BASE_HASH_H_
#define JOURNALKV_BASE_HASH_H_

#include <cstddef>
#include <cstdint>

namespace journalkv::base {

uint64_t Xxh3(const void* data, size_t size_bytes, uint64_t seed);

// XXH3-64 of a's bytes followed by b's, seeded: equal to Xxh3 over their concatenation, without
// copying them together (a WAL frame hashes its header bytes, then the page image in place).
uint64_t Xxh3Pair(const void* a, size_t a_bytes, const void* b, size_t b_bytes, uint64_t seed);

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_HASH_H_
