// Prefetch: a hint that starts loading a cache line before its first use.
#ifndef JOURNALKV_BASE_PREFETCH_H_
#define JOURNALKV_BASE_PREFETCH_H_

namespace journalkv::base {

// Starts bringing the cache line that holds `p` into the CPU's caches. A hint only: it never
// faults, whatever `p` points at (freed memory included), and changes nothing a program sees.
inline void Prefetch(const void* p) {
#if defined(__x86_64__)
  // The instruction itself, which the compiler keeps where it is written: GCC 12 left a
  // __builtin_prefetch placed behind a branch out of the code it emitted.
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_PREFETCH_H_
