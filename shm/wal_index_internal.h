// What the files of WalIndex (wal_index*.cc) share and nothing else includes.
#ifndef JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_
#define JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/check.h"

namespace journalkv::shm::internal {

// The word of type T at base + offset. It must be lock-free for all time: other processes use
// the same memory with their own instructions, so an atomic with a hidden lock would not work.
template <typename T>
std::atomic_ref<T> Word(uint8_t* base, size_t offset) {
  static_assert(std::atomic_ref<T>::is_always_lock_free);
  JKV_DCHECK(reinterpret_cast<uintptr_t>(base + offset) % std::atomic_ref<T>::required_alignment ==
             0);
  return std::atomic_ref<T>(*reinterpret_cast<T*>(base + offset));
}

// The index's test hook point (SetIndexHookForTesting), for the files beside wal_index.cc.
void CallIndexHook(const char* point);

// Zeroes the durability words (wal_index_durability.cc) of a new life of the -shm file.
void InitializeDurabilityWords(uint8_t* r0);

}  // namespace journalkv::shm::internal

#endif  // JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_
