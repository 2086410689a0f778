// Explicit little-endian encoding of fixed-width integers. Every on-disk integer in journalkv
// goes through these: formats are never read by casting a struct over bytes.
#ifndef JOURNALKV_BASE_ENDIAN_H_
#define JOURNALKV_BASE_ENDIAN_H_

#include <cstdint>
#include <cstring>

namespace journalkv::base {

// On a little-endian machine each is one unaligned load or store (memcpy); the byte loops
// are the portable definition, which GCC does not turn into one load (a scan decoded each
// cell's value size a byte at a time).
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
inline constexpr bool kLittleEndian = true;
#else
inline constexpr bool kLittleEndian = false;
#endif

inline void EncodeFixed16(uint8_t* dst, uint16_t v) {
  if constexpr (kLittleEndian) {
    std::memcpy(dst, &v, sizeof v);
  } else {
    dst[0] = static_cast<uint8_t>(v);
    dst[1] = static_cast<uint8_t>(v >> 8);
  }
}

inline void EncodeFixed32(uint8_t* dst, uint32_t v) {
  if constexpr (kLittleEndian) {
    std::memcpy(dst, &v, sizeof v);
  } else {
    for (int i = 0; i < 4; ++i) dst[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

inline void EncodeFixed64(uint8_t* dst, uint64_t v) {
  if constexpr (kLittleEndian) {
    std::memcpy(dst, &v, sizeof v);
  } else {
    for (int i = 0; i < 8; ++i) dst[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}

inline uint16_t DecodeFixed16(const uint8_t* src) {
  if constexpr (kLittleEndian) {
    uint16_t v;
    std::memcpy(&v, src, sizeof v);
    return v;
  } else {
    return static_cast<uint16_t>(src[0] | (src[1] << 8));
  }
}

inline uint32_t DecodeFixed32(const uint8_t* src) {
  if constexpr (kLittleEndian) {
    uint32_t v;
    std::memcpy(&v, src, sizeof v);
    return v;
  } else {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | src[i];
    return v;
  }
}

inline uint64_t DecodeFixed64(const uint8_t* src) {
  if constexpr (kLittleEndian) {
    uint64_t v;
    std::memcpy(&v, src, sizeof v);
    return v;
  } else {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | src[i];
    return v;
  }
}

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_ENDIAN_H_
