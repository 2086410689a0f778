// HotPages: the pages that the read transactions of one WAL snapshot identity have met, kept at
// hand so that the next read of them skips the page's lookup in the wal-index and in the page
// cache.
//
// Every point read descends from the root through the interior pages to a leaf, and in a
// snapshot each page is the same image for every read. Through the page cache each page costs
// a wal-index lookup (where does this snapshot find the page?) and a cache lookup (shard mutex,
// hash probe, LRU bookkeeping): most of a cached read's per-level cost, and what misses the
// CPU's caches most. A read transaction that finds its page in its identity's table skips both:
// one probe of an open-addressed table without a lock.
//
// A table belongs to one snapshot identity: the generation and last frame of each log and the
// current log, every word of a snapshot that wal::WalConnection::Locate reads. Equal identities
// find every page at the same version (wal/wal_connection.h, "Page versions"), so the image one
// transaction of the identity read is the image every other one would read.
//
// Invariants (cited at their call sites in pager/wal_strategy.cc):
//   H1. WalStrategy hands a beginning read transaction, under the pager mutex, the table of
//       the last identity a read began at when its snapshot has that identity, else a new
//       table, which then becomes the one handed out. A table never changes identity.
//   H2. A transaction reads from and adds to only the table it was handed, and adds only
//       images it read at its own snapshot; the table lives until it ends (WalStrategy
//       counts the transactions using each table under the pager mutex, at their begin and
//       end, and frees a replaced table when its count reaches zero). (A reader
//       of an older identity that adds after a newer table was made adds to its own old one:
//       hook point "read:hot_add", tests/hot_pages_test.cc.)
//   H3. A slot is written once, under the table's mutex: its entry first, then its page number
//       (release). Find reads a slot's image only after loading the page number it wants
//       (acquire), so a lock-free reader sees the image whole; a slot never changes again.
//
//   H4. A table grows under its mutex by building a larger slot array with every entry of the
//       last, then publishing it whole (release); Find loads the newest array (acquire) and
//       probes only it. An array stays until the table goes: a reader may still be probing it,
//       or hold an entry of it.
//   H5. Nothing frees a table a read transaction was handed before that transaction ends.
//       Whatever stops WalStrategy handing its current table out moves it, with its count,
//       among the replaced tables while the count is not zero: a read at a new identity
//       (HotPagesLocked) and a clear of the page cache at a far generation (NoteGenerationLocked,
//       G1 in pager/wal_strategy.h) alike; a table leaves only at its count's zero. So the
//       address a transaction ends with names its own table, never a later one made at the
//       same address, whose count and images would otherwise be another identity's.
//       (tests/hot_pages_test.cc, HotPagesGenerationTest.)
//
// Size. A table takes at most `limit` pages (Options::cache_pages / 2, at most 65,536), and
// leaves only the first three quarters of them, so that the interior pages every descent
// passes find room after a scan has met many leaves. The images it holds stay in memory while
// one read of its identity is open or it is the newest, on top of the page cache's own pages:
// at most half the cache's capacity more. Its slots start at 64 and double whenever half are
// taken, up to twice the limit rounded up to a power of two (H4), 28 bytes each, with the
// smaller arrays kept until the table goes (at most as many slots again): a table per commit in
// a write-heavy mix costs what it held, and a table of a large cache can hold every page a
// read-mostly snapshot meets (at most 4,096 before, when the slots were all allocated at the
// first page: 8,192 slots, 228 KB, for every new snapshot).
//
// Thread-safety: Find is lock-free and safe beside Add from any thread (H3).
#ifndef JOURNALKV_PAGER_HOT_PAGES_H_
#define JOURNALKV_PAGER_HOT_PAGES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/mutex.h"
#include "pager/page_access.h"

namespace journalkv::pager {

class HotPages {
 public:
  // The largest limit; also the limit for caches of 131,072 pages (512 MiB of 4 KiB pages) or
  // more.
  static constexpr uint32_t kMaxLimit = 65536;

  // A table of at most min(limit, kMaxLimit) pages (at least 8).
  explicit HotPages(uint32_t limit);
  ~HotPages();
  HotPages(const HotPages&) = delete;
  HotPages& operator=(const HotPages&) = delete;

  // The page limit a cache of `cache_pages` pages gets.
  static uint32_t LimitForCache(uint32_t cache_pages) { return cache_pages / 2; }

  // A page's image, and its bytes beside it, so that a reader of the table reaches the page
  // without touching the image's allocation (pager/page_access.h, PageRef::Borrowed).
  struct Entry {
    std::shared_ptr<const PageBuffer> image;  // null for a page read in place in the map
    const uint8_t* bytes;  // image->bytes, or the page's bytes in the memory map
  };

  // The entry of `page_no`, or nullptr when the table does not hold it. REQUIRES: page_no > 0.
  const Entry* Find(uint32_t page_no) const {
    const Slots* slots = slots_.load(std::memory_order_acquire);  // H4
    if (slots == nullptr) return nullptr;
    for (uint32_t i = slots->Home(page_no);; i = (i + 1) & slots->mask) {
      const uint32_t p = slots->pages[i].load(std::memory_order_acquire);
      if (p == page_no) return &slots->entries[i];  // H3: the entry was written before p
      if (p == 0) return nullptr;                   // at most half taken: a probe ends
    }
  }

  // What is being added, which decides how full the table may be for it.
  enum class Kind { kAny, kInterior };

  // Adds `page_no`'s image, unless the table holds it already or is full for `kind`: any page
  // while three quarters of the limit are free, interior pages up to the limit.
  void Add(uint32_t page_no, std::shared_ptr<const PageBuffer> buffer, Kind kind)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Adds a leaf read in place in the database file's memory map (pager/mapped_pages.h), as
  // kAny: no image, the map's bytes, which no write changes while the table's identity is
  // handed out (pager/mapped_pages.h O8).
  void AddMapped(uint32_t page_no, const uint8_t* bytes) ABSL_LOCKS_EXCLUDED(mu_);

  // Pages added.
  uint32_t size() const { return used_.load(std::memory_order_relaxed); }
  uint32_t limit() const { return limit_; }
  // Whether an Add of `kind` could still add a page (a hint: it is read without the lock).
  bool HasRoom(Kind kind) const { return size() < RoomFor(kind); }

 private:
  // One slot array: page numbers (0: empty) and their entries (raw storage until taken).
  struct Slots {
    explicit Slots(uint32_t count);
    ~Slots();
    Slots(const Slots&) = delete;
    Slots& operator=(const Slots&) = delete;
    uint32_t Home(uint32_t page_no) const { return (page_no * 0x9E3779B1u) >> shift; }
    // Takes a free slot for page_no (absent) and writes its entry, then the page number (H3).
    void Put(uint32_t page_no, Entry entry);

    const uint32_t mask;  // slots - 1, a power of two
    const int shift;      // 32 - log2(slots): Home keeps the hash's high bits
    std::atomic<uint32_t>* const pages;
    Entry* const entries;
    // The slots taken, so that the array's end costs what it held, not what it could hold.
    // Written under the table's mutex only.
    std::vector<uint32_t> taken;
  };

  void AddEntry(uint32_t page_no, Entry entry, Kind kind) ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t RoomFor(Kind kind) const { return kind == Kind::kAny ? limit_ - limit_ / 4 : limit_; }
  // A larger array with every entry of the newest, published (H4). REQUIRES: mu_ held.
  Slots* Grow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t limit_;      // pages at most
  const uint32_t max_slots_;  // >= 2 * limit_, a power of two
  base::Mutex mu_;            // one Add at a time
  std::atomic<uint32_t> used_{0};
  std::atomic<const Slots*> slots_{nullptr};  // the newest array, for Find (H4)
  // Every array made, the newest last; freed when the table goes.
  std::vector<std::unique_ptr<Slots>> arrays_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_HOT_PAGES_H_
