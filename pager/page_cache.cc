#include "pager/page_cache.h"

#include <utility>

namespace journalkv::pager {

std::shared_ptr<const PageBuffer> PageCache::Lookup(PageNo page_no) {
  auto it = map_.find(page_no.value());
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru_position);
  return it->second.buffer;
}

void PageCache::Insert(PageNo page_no, std::shared_ptr<const PageBuffer> buffer) {
  auto [it, inserted] = map_.try_emplace(page_no.value());
  if (inserted) {
    lru_.push_front(page_no.value());
    it->second.lru_position = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru_position);
  }
  it->second.buffer = std::move(buffer);
  if (map_.size() > capacity_) EvictOverCapacity();
}

void PageCache::Erase(PageNo page_no) {
  auto it = map_.find(page_no.value());
  if (it == map_.end()) return;
  lru_.erase(it->second.lru_position);
  map_.erase(it);
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
