#include "pager/page_cache.h"

#include <utility>

namespace journalkv::pager {

std::shared_ptr<const PageBuffer> PageCache::Lookup(PageNo page_no, uint64_t version) {
  auto it = map_.find(Key(page_no.value(), version));
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru_position);
  return it->second.buffer;
}

void PageCache::Insert(PageNo page_no, std::shared_ptr<const PageBuffer> buffer,
                       uint64_t version) {
  const Key key(page_no.value(), version);
  auto [it, inserted] = map_.try_emplace(key);
  if (inserted) {
    lru_.push_front(key);
    it->second.lru_position = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru_position);
  }
  it->second.buffer = std::move(buffer);
  if (map_.size() > capacity_) EvictOverCapacity();
}

void PageCache::Clear() {
  map_.clear();
  lru_.clear();
}

void PageCache::EvictOverCapacity() {
  // Walk from the least recently used end; pinned pages (use_count > 1) stay.
  auto pos = lru_.end();
  while (map_.size() > capacity_ && pos != lru_.begin()) {
    --pos;
    auto it = map_.find(*pos);
    if (it->second.buffer.use_count() > 1) continue;
    map_.erase(it);
    pos = lru_.erase(pos);
  }
}

}  // namespace journalkv::pager
