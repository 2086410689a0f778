// What the files of WalIndex (wal_index*.cc) share and nothing else includes.
#ifndef JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_
#define JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "base/check.h"
#include "shm/wal_index.h"
#include "vfs/vfs.h"

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

// The index's test hook (SetIndexHookForTesting) and a point that calls it: inline, one
// relaxed load, because lookups and appends pass one each.
extern std::atomic<IndexHook> index_hook;
inline void Point(const char* point) {
  if (IndexHook h = index_hook.load(std::memory_order_relaxed)) h(point);
}

// For messages: the -shm file's path, or "heap wal-index".
absl::string_view IndexName(const vfs::File* file);

// Zeroes the durability words (wal_index_durability.cc) of a new life of the -shm file.
void InitializeDurabilityWords(uint8_t* r0);

}  // namespace journalkv::shm::internal

#endif  // JOURNALKV_SHM_WAL_INDEX_INTERNAL_H_
