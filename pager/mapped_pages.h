// MappedPages: pages of the database file handed to WAL read transactions straight out of the
// read map (vfs/read_map.h; Options::mmap_size), without a copy and without the page cache,
// each page checked once per epoch of the file's writers instead of at every read.
//
// Past the page cache, a point read's leaf was a copy out of the map, a checksum of the copy,
// and the cache's insert and eviction (bench/results-2026-12-07/mmap/NOTES.md). Here a WAL
// read transaction that finds a page in the database file (not in the log) takes a pointer into
// the map: the B+tree reads the page there, and a value it returns is copied from there.
//
// When a page of the map needs no check (O5..O7; O4, the epoch, is in shm/wal_index.h; the
// faults, O1, O2 and O3, in vfs/read_map.h):
//   O5. A read transaction's trust key is taken by WalStrategy::BeginRead under the pager
//       mutex, after its snapshot is pinned (wal::WalConnection::BeginRead returned) and after
//       any repair of the map (O3): the database file's write epoch (O4) and the map's
//       repairs. An odd epoch (a checkpoint is writing the file) gives key 0: the transaction
//       trusts no stamp and stamps nothing, so it checks every page it takes from the map,
//       every time.
//   O6. stamps[p] == key (non-zero) means a transaction of that key checked page p's bytes in
//       the map (the page checksum, as a read page's) and found them whole: such a page is
//       handed out unchecked to every transaction of the same key. Sound because while the
//       epoch stays at an even E nothing writes the file (O4), and a page a pinned snapshot
//       reads from the file is not written while it is pinned (a checkpoint copies only frames
//       every pinned snapshot has, so a page it writes such a reader finds in the log; a
//       reader that pinned after the checkpoint's scan takes a snapshot past its target, W3):
//       the bytes checked under a key are the bytes every reader of that key reads. The key
//       names the epoch it was taken at, so a transaction begun after a checkpoint wrote the
//       file checks each page again before it trusts it (mapped_pages_test: a page damaged in
//       the file and the epoch moved by a checkpoint is found damaged; without the move it is
//       trusted, which is why every writer must move it). A repair (O3) changes the key too:
//       the pages it maps back are checked again.
//   O7. A page whose check fails, or that lies past the map or the file size last seen (E4),
//       is not handed out of the map: the read goes the copying way (the page cache, then
//       pread or the guarded copy, E2), which reports a damaged page as without the map
//       (DataLoss naming the page), or finds it whole when the map had read zeros (O1).
//   O8. A leaf read in place enters the transaction's hot-page table (hot_pages.h) as its
//       address in the map, without an image (HotPages::AddMapped, from
//       PageReader::NoteLeaf), and the transactions handed that table take it from there
//       without a stamp. Sound because, for one snapshot identity, Locate sends the page to
//       the file, and the file's page does not change while the table can be handed out: a
//       checkpoint copies only frames at or below every pin, a frame of the page at or below
//       the identity's mx_frame would have sent the page to the log, a later frame exists only
//       once a later commit is published (then no new read begins at the identity: H1), and a
//       restart changes the generation, so the identity. The damage check (O2) still runs at
//       every page.
// Only pages the snapshot reads from the database file (Locate says frame 0, cacheable) are
// taken from the map: the log's frames are read from the log as before, and a read that W7
// sends back to the file after its frame was overwritten goes the copying way.
//
// Rollback modes and ATOMIC keep the copying map (E2): their reads take the change counter at
// begin (I5), which could key the stamps as the epoch does here, but each of their writers
// (commits, spills, hot-journal rollbacks, batches) would then need to be shown to move it
// before the file changes under a reader of the same process; not built.
//
// Thread-safety: Page and CheckDamage are safe from any thread; BeginRead requires the pager
// mutex (it repairs the map).
#ifndef JOURNALKV_PAGER_MAPPED_PAGES_H_
#define JOURNALKV_PAGER_MAPPED_PAGES_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "base/types.h"
#include "vfs/read_map.h"

namespace journalkv::pager {

class MappedPages {
 public:
  // Pages of a map of `map_bytes` (ReadMap::length) at `page_size`; `path` names the file in
  // errors.
  MappedPages(vfs::ReadMap* map, uint32_t page_size, std::string path);
  MappedPages(const MappedPages&) = delete;
  MappedPages& operator=(const MappedPages&) = delete;

  // What a read transaction keeps of the map from its begin (O2, O5).
  struct ReadStart {
    uint64_t key = 0;     // 0: trusts nothing
    uint64_t damage = 0;  // the map's damage at begin
  };
  // REQUIRES: the pager mutex (serializes repairs), the snapshot pinned; `db_epoch` loaded
  // after the pin (O5).
  ReadStart BeginRead(uint32_t db_epoch);

  // The page's bytes in the map (page_size bytes, the trailer included), checked now or
  // trusted (O6), or nullptr: read it the copying way (O7).
  const uint8_t* Page(PageNo page_no, uint64_t key);

  // O2: DataLoss naming the file when the map read zeros for a fault since `damage_at_begin`.
  absl::Status CheckDamage(uint64_t damage_at_begin) const {
    if (map_->damage() == damage_at_begin) return absl::OkStatus();
    return DamageError();
  }

  // Pages checked (their checksum computed) since the start, for tests and the notes.
  uint64_t checks() const { return checks_.load(std::memory_order_relaxed); }

 private:
  absl::Status DamageError() const;

  vfs::ReadMap* const map_;
  const uint32_t page_size_;
  const std::string path_;
  // stamps_[p]: the key page p was last found whole under (O6), 0: none. Pages past the
  // table's end are checked at every read. Zeroed lazily by the allocator (calloc).
  const uint64_t stamp_count_;
  std::unique_ptr<uint64_t, void (*)(void*)> stamps_;
  std::atomic<uint64_t> checks_{0};
  uint64_t repaired_damage_ = 0;  // the damage the last repair answered (pager mutex)
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_MAPPED_PAGES_H_
