#include "pager/hot_pages.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

namespace journalkv::pager {
namespace {

constexpr uint32_t kMinLimit = 8;
constexpr uint32_t kFirstSlots = 64;

uint32_t SlotsFor(uint32_t limit) { return std::bit_ceil(2 * limit); }

}  // namespace

HotPages::Slots::Slots(uint32_t count)
    : mask(count - 1),
      shift(32 - std::countr_zero(count)),
      pages(new std::atomic<uint32_t>[count]()),
      entries(static_cast<Entry*>(::operator new(sizeof(Entry) * count))) {}

HotPages::Slots::~Slots() {
  for (uint32_t i : taken) entries[i].~Entry();
  ::operator delete(entries);
  delete[] pages;
}

void HotPages::Slots::Put(uint32_t page_no, Entry entry) {
  uint32_t i = Home(page_no);
  while (pages[i].load(std::memory_order_relaxed) != 0) i = (i + 1) & mask;
  taken.push_back(i);
  new (&entries[i]) Entry(std::move(entry));
  pages[i].store(page_no, std::memory_order_release);  // H3: publishes slot i
}

HotPages::HotPages(uint32_t limit)
    : limit_(std::clamp(limit, kMinLimit, kMaxLimit)), max_slots_(SlotsFor(limit_)) {}

HotPages::~HotPages() {
  base::MutexLock lock(&mu_);  // no Add is running: for the analysis
  arrays_.clear();
}

HotPages::Slots* HotPages::Grow() {
  const Slots* last = arrays_.empty() ? nullptr : arrays_.back().get();
  const uint32_t count = last == nullptr ? std::min(kFirstSlots, max_slots_) : 2 * (last->mask + 1);
  auto grown = std::make_unique<Slots>(count);
  if (last != nullptr) {
    for (uint32_t i : last->taken) {
      grown->Put(last->pages[i].load(std::memory_order_relaxed), last->entries[i]);
    }
  }
  Slots* raw = grown.get();
  arrays_.push_back(std::move(grown));
  slots_.store(raw, std::memory_order_release);  // H4: after every entry it holds
  return raw;
}

void HotPages::Add(uint32_t page_no, std::shared_ptr<const PageBuffer> buffer, Kind kind) {
  const uint8_t* bytes = buffer->bytes.get();
  AddEntry(page_no, Entry{std::move(buffer), bytes}, kind);
}

void HotPages::AddMapped(uint32_t page_no, const uint8_t* bytes) {
  AddEntry(page_no, Entry{nullptr, bytes}, Kind::kAny);
}

void HotPages::AddEntry(uint32_t page_no, Entry entry, Kind kind) {
  // A table already full for `kind` takes no lock (the common case once a snapshot's pages are
  // all in it, or when it holds as many as it may).
  if (!HasRoom(kind)) return;
  base::MutexLock lock(&mu_);
  const uint32_t n = used_.load(std::memory_order_relaxed);
  if (n >= RoomFor(kind)) return;
  Slots* slots = arrays_.empty() ? nullptr : arrays_.back().get();
  if (slots != nullptr) {
    for (uint32_t i = slots->Home(page_no);; i = (i + 1) & slots->mask) {
      const uint32_t p = slots->pages[i].load(std::memory_order_relaxed);
      if (p == page_no) return;  // the first image of a page stays
      if (p == 0) break;
    }
  }
  // At most half the slots taken, so that every probe ends at an empty slot; at max_slots_
  // (>= twice the limit) that always holds.
  if (slots == nullptr || 2 * (n + 1) > slots->mask + 1) slots = Grow();
  slots->Put(page_no, std::move(entry));
  used_.store(n + 1, std::memory_order_relaxed);
}

}  // namespace journalkv::pager
