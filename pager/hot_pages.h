// HotPages: the interior pages of the B+tree that the read transactions of one WAL snapshot
// have met, kept at hand so that the next descent through them skips the page's lookup in the
// wal-index and in the page cache.
//
// Every point read descends from the root through the interior pages to a leaf, and in a
// snapshot the root and the pages below it are the same for every read. Through the page cache
// each of them costs a wal-index lookup (where does this snapshot find the page?) and a cache
// lookup (shard mutex, hash probe, LRU move): most of a cached read's per-level cost, and what
// misses the CPU's caches most. A read transaction that finds its snapshot's table here skips
// both for the pages in it.
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
//       images it read at its own snapshot; it keeps the table alive until it ends. (A reader
//       of an older identity that adds after a newer table was made adds to its own old one:
//       hook point "read:hot_add", tests/hot_pages_test.cc.)
//   H3. A slot is written once, under the table's mutex, before `used_` covers it (release);
//       Find reads only slots below `used_` (acquire), so a lock-free reader sees them whole.
// The table holds at most kSlots images beyond the page cache's capacity, while one read of
// its identity is open or it is the newest.
//
// Thread-safety: Find is lock-free and safe beside Add from any thread (H3).
#ifndef JOURNALKV_PAGER_HOT_PAGES_H_
#define JOURNALKV_PAGER_HOT_PAGES_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "base/mutex.h"
#include "pager/page_access.h"

namespace journalkv::pager {

class HotPages {
 public:
  // Enough for the root and the level below it of a tree of a few million keys; the first
  // pages met stay (the root is always the first).
  static constexpr int kSlots = 32;

  // The image of `page_no`, or nullptr when the table does not hold it.
  const std::shared_ptr<const PageBuffer>* Find(uint32_t page_no) const {
    const int n = used_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      if (pages_[i] == page_no) return &buffers_[i];
    }
    return nullptr;
  }

  // Adds `page_no`'s image, unless the table holds it already or is full.
  void Add(uint32_t page_no, std::shared_ptr<const PageBuffer> buffer) ABSL_LOCKS_EXCLUDED(mu_) {
    // A tree with more interior pages than slots offers every descent's later ones: no lock
    // once full.
    if (size() == kSlots) return;
    base::MutexLock lock(&mu_);
    const int n = used_.load(std::memory_order_relaxed);
    if (n == kSlots) return;
    for (int i = 0; i < n; ++i) {
      if (pages_[i] == page_no) return;
    }
    pages_[n] = page_no;
    buffers_[n] = std::move(buffer);
    used_.store(n + 1, std::memory_order_release);  // H3: publishes slot n
  }

  int size() const { return used_.load(std::memory_order_acquire); }

 private:
  base::Mutex mu_;              // one Add at a time
  std::atomic<int> used_{0};    // slots [0, used_) are published and never change
  std::array<uint32_t, kSlots> pages_{};
  std::array<std::shared_ptr<const PageBuffer>, kSlots> buffers_;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_HOT_PAGES_H_
