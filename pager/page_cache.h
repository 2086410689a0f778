// The cache of committed (clean) page images shared by every transaction of one pager.
//
// An entry is keyed by the page and its version: in the rollback modes every version is 0 (the
// file holds one version of each page, and the pager clears the cache when another connection
// has changed it); in WAL mode the version names the log frame (or the database file) a
// snapshot reads the page from (pager/wal_strategy.h, "Page versions"), so readers pinned at
// different snapshots in one process each get the version of their snapshot, never another.
//
// Entries are immutable PageBuffers held by shared_ptr: a transaction that pins a page keeps
// its image alive even after the cache drops or replaces the entry. Eviction is least recently
// inserted-or-used first and skips pages that someone still pins, so the cache may briefly hold
// more than its capacity while many pages are pinned.
//
// Thread-safety: not thread-safe; the pager guards it with its mutex.
#ifndef JOURNALKV_PAGER_PAGE_CACHE_H_
#define JOURNALKV_PAGER_PAGE_CACHE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "base/types.h"
#include "pager/page_access.h"

namespace journalkv::pager {

class PageCache {
 public:
  explicit PageCache(size_t capacity_pages) : capacity_(capacity_pages) {}

  // The cached image, or nullptr. Marks the entry recently used.
  std::shared_ptr<const PageBuffer> Lookup(PageNo page_no, uint64_t version = 0);
  // Inserts or replaces the image of a version of a page, then evicts unpinned pages over
  // capacity.
  void Insert(PageNo page_no, std::shared_ptr<const PageBuffer> buffer, uint64_t version = 0);
  void Clear();
  size_t size() const { return map_.size(); }

 private:
  using Key = std::pair<uint32_t, uint64_t>;  // page, version
  struct Entry {
    std::shared_ptr<const PageBuffer> buffer;
    std::list<Key>::iterator lru_position;
  };
  void EvictOverCapacity();

  const size_t capacity_;
  absl::flat_hash_map<Key, Entry> map_;
  std::list<Key> lru_;  // front: most recently used
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGE_CACHE_H_
