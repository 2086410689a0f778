#include "pager/hot_pages.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

namespace journalkv::pager {
namespace {

constexpr uint32_t kMinLimit = 8;

uint32_t SlotsFor(uint32_t limit) { return std::bit_ceil(2 * limit); }

}  // namespace

HotPages::HotPages(uint32_t limit)
    : limit_(std::clamp(limit, kMinLimit, kMaxLimit)),
      mask_(SlotsFor(limit_) - 1),
      shift_(32 - std::countr_zero(SlotsFor(limit_))) {}

HotPages::~HotPages() {
  std::atomic<uint32_t>* pages = pages_.load(std::memory_order_acquire);
  if (pages == nullptr) return;
  base::MutexLock lock(&mu_);  // no Add is running: for the analysis
  for (uint32_t i : taken_) entries_[i].~Entry();
  ::operator delete(entries_);
  delete[] pages;
}

void HotPages::Add(uint32_t page_no, std::shared_ptr<const PageBuffer> buffer, Kind kind) {
  // A table already full for `kind` takes no lock (the common case once a snapshot's pages are
  // all in it, or when it holds as many as it may).
  if (!HasRoom(kind)) return;
  base::MutexLock lock(&mu_);
  std::atomic<uint32_t>* pages = pages_.load(std::memory_order_relaxed);
  if (pages == nullptr) {
    const uint32_t slots = mask_ + 1;
    entries_ = static_cast<Entry*>(::operator new(sizeof(Entry) * slots));
    pages = new std::atomic<uint32_t>[slots]();
    pages_.store(pages, std::memory_order_release);  // after entries_
  }
  const uint32_t n = used_.load(std::memory_order_relaxed);
  if (n >= RoomFor(kind)) return;
  uint32_t i = Home(page_no);
  for (;; i = (i + 1) & mask_) {
    const uint32_t p = pages[i].load(std::memory_order_relaxed);
    if (p == page_no) return;  // the first image of a page stays
    if (p == 0) break;
  }
  taken_.push_back(i);
  const uint8_t* bytes = buffer->bytes.get();
  new (&entries_[i]) Entry{std::move(buffer), bytes};
  pages[i].store(page_no, std::memory_order_release);  // H3: publishes slot i
  used_.store(n + 1, std::memory_order_relaxed);
}

}  // namespace journalkv::pager
