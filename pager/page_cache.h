// The cache of committed (clean) page images shared by every transaction of one pager.
//
// An entry is keyed by the page and its version: in the rollback modes every version is 0 (the
// file holds one version of each page, and the pager clears the cache when another connection
// has changed it); in WAL mode the version names the log frame (or the database file) a
// snapshot reads the page from (wal/wal_connection.h, "Page versions"), so readers pinned at
// different snapshots in one process each get the version of their snapshot, never another.
//
// Entries are immutable PageBuffers held by shared_ptr: a transaction that pins a page keeps
// its image alive even after the cache drops or replaces the entry. The cache is split into
// kShards shards by page number, each with its own mutex and its own least-recently-used
// order, so that reader threads of one pager looking up different pages do not queue on one
// lock; eviction skips pages that someone still pins, moving each to the front as it passes
// it (a pinned page is in use; left at the back, every eviction walked past it again), so a
// shard may briefly hold more than its share of the capacity while many pages are pinned.
//
// Thread-safety: thread-safe.
#ifndef JOURNALKV_PAGER_PAGE_CACHE_H_
#define JOURNALKV_PAGER_PAGE_CACHE_H_

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "base/types.h"
#include "pager/page_access.h"

namespace journalkv::pager {

class PageCache {
 public:
  static constexpr int kShards = 16;

  explicit PageCache(size_t capacity_pages);

  // The cached image, or nullptr. Marks the entry recently used (moving it to the front unless
  // it is still in the front half).
  std::shared_ptr<const PageBuffer> Lookup(PageNo page_no, uint64_t version = 0);
  // Inserts or replaces the image of a version of a page, then evicts unpinned pages over
  // the shard's capacity.
  void Insert(PageNo page_no, std::shared_ptr<const PageBuffer> buffer, uint64_t version = 0);
  // Drops the entry of that version of the page, if any.
  void Erase(PageNo page_no, uint64_t version = 0);
  void Clear();
  size_t size();

 private:
  using Key = std::pair<uint32_t, uint64_t>;  // page, version
  struct Entry {
    std::shared_ptr<const PageBuffer> buffer;
    std::list<Key>::iterator lru_position;
    uint64_t pushed = 0;  // the shard's `pushes` when this entry last went to the front
  };
  struct Shard {
    base::Mutex mu;
    absl::flat_hash_map<Key, Entry> map ABSL_GUARDED_BY(mu);
    std::list<Key> lru ABSL_GUARDED_BY(mu);  // front: most recently used
    // Entries put at the front so far (inserts and moves). An entry pushed k pushes ago is at
    // most k places from the front: a hit moves it only once k reaches half the capacity, so
    // the pages most reads hit, which stay near the front, are not moved at every hit (the
    // list's relinking missed the CPU's caches: a fifth of a cached point read with a large
    // cache). Eviction order is unchanged for the back half.
    uint64_t pushes ABSL_GUARDED_BY(mu) = 0;
    size_t capacity = 0;  // this shard's share of the capacity (0 when it has fewer pages)
  };
  Shard& ShardOf(PageNo page_no) { return shards_[page_no.value() % kShards]; }
  void EvictOverCapacity(Shard& shard) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  std::array<Shard, kShards> shards_;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGE_CACHE_H_
