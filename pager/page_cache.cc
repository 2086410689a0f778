#include "pager/page_cache.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace journalkv::pager {

// The capacity is split exactly: a cache of fewer pages than shards keeps pages in only that
// many shards (a page of another shard is not kept).
PageCache::PageCache(size_t capacity_pages) {
  for (size_t i = 0; i < kShards; ++i) {
    shards_[i].capacity = capacity_pages / kShards + (i < capacity_pages % kShards ? 1 : 0);
  }
}

std::shared_ptr<const PageBuffer> PageCache::Lookup(PageNo page_no, uint64_t version) {
  Shard& shard = ShardOf(page_no);
  base::MutexLock lock(&shard.mu);
  auto it = shard.map.find(Key(page_no.value(), version));
  if (it == shard.map.end()) return nullptr;
  Entry& entry = it->second;
  if (shard.pushes - entry.pushed >= shard.capacity / 2) {  // maybe in the back half
    shard.lru.splice(shard.lru.begin(), shard.lru, entry.lru_position);
    entry.pushed = ++shard.pushes;
  }
  return entry.buffer;
}

void PageCache::Insert(PageNo page_no, std::shared_ptr<const PageBuffer> buffer,
                       uint64_t version) {
  Shard& shard = ShardOf(page_no);
  if (shard.capacity == 0) return;  // this shard keeps nothing
  base::MutexLock lock(&shard.mu);
  const Key key(page_no.value(), version);
  auto [it, inserted] = shard.map.try_emplace(key);
  if (inserted) {
    shard.lru.push_front(key);
    it->second.lru_position = shard.lru.begin();
  } else {
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second.lru_position);
  }
  it->second.pushed = ++shard.pushes;
  it->second.buffer = std::move(buffer);
  if (shard.map.size() > shard.capacity) EvictOverCapacity(shard);
}

void PageCache::Erase(PageNo page_no, uint64_t version) {
  Shard& shard = ShardOf(page_no);
  base::MutexLock lock(&shard.mu);
  auto it = shard.map.find(Key(page_no.value(), version));
  if (it == shard.map.end()) return;
  shard.lru.erase(it->second.lru_position);
  shard.map.erase(it);
}

void PageCache::Clear() {
  for (Shard& shard : shards_) {
    base::MutexLock lock(&shard.mu);
    shard.map.clear();
    shard.lru.clear();
  }
}

size_t PageCache::size() {
  size_t n = 0;
  for (Shard& shard : shards_) {
    base::MutexLock lock(&shard.mu);
    n += shard.map.size();
  }
  return n;
}

void PageCache::EvictOverCapacity(Shard& shard) {
  // From the least recently used end. A pinned page (use_count > 1) stays and goes to the
  // front, as if used now: it is in use. Left where it was, every later eviction walked past it
  // again (a hash probe and a reference count each, both cache misses), and a snapshot's table
  // of hot pages pins up to half the cache for as long as its snapshot is the newest: once the
  // database outgrew the cache, that walk was 18% of a point read. Each page is looked at
  // once at most, so the walk ends when every page is pinned.
  for (size_t left = shard.lru.size(); shard.map.size() > shard.capacity && left > 0; --left) {
    const auto last = std::prev(shard.lru.end());
    auto it = shard.map.find(*last);
    if (it->second.buffer.use_count() > 1) {
      shard.lru.splice(shard.lru.begin(), shard.lru, last);
      it->second.pushed = ++shard.pushes;
      continue;
    }
    shard.map.erase(it);
    shard.lru.pop_back();
  }
}

}  // namespace journalkv::pager
