// ReadMap: a read-only shared memory map of a file (the database file; Options::mmap_size),
// from which File::Read copies bytes instead of calling pread(2), and out of which the WAL
// modes' read transactions take pages in place (Bytes, zero-copy: pager/mapped_pages.h); and
// the SIGBUS answers that make a fault on the map an ordinary fallback (a copy) or an error of
// the transactions reading it (a page in place), instead of a crash.
//
// What it is for: past the page cache, half of a point read was the pread system call and its
// copy (docs/performance-design.md, "The memory map"). A copy out of the map skips the system
// call; the bytes land in the caller's buffer (the pager's cache frame) exactly as a pread's
// would, and the caller checks them exactly as it checks a pread (the page checksum,
// PagerCore::CheckLoaded). After the guarded copy returns, nothing touches the map for that
// read. A page taken in place skips the copy and the page cache too, and may fault at any
// later access: O1, O2, O3 below.
//
// Invariants of the map (E for epoch: the design names the moves of the database file's
// writers; this build keeps them by never trusting a page of the map past one copy):
//   E1. The map is MAP_SHARED and PROT_READ over the file descriptor whose pread it replaces,
//       so it sees the same inode and (Linux's page cache is unified) the same bytes a pread at
//       the same instant would: the writes of this and every other process (rollback commits
//       and spills, WAL checkpoints' copies, recovery's rollbacks, XFS exchange-range batches,
//       which drop the file's cached pages) reach the map as they reach pread. A copy from
//       the map is therefore ordered with the file's writers by the same locks that order a
//       pread (SHARED against EXCLUSIVE in the rollback modes; the WAL's read marks and
//       backfill against a checkpoint's copy): nothing new is needed to read a page a
//       snapshot may read.
//   E2. Every page read through Copy is copied into the caller's buffer and verified by the
//       caller as a pread page is, once per copy: a page is trusted only in the frame it was
//       copied into, and the page cache's own rules (change counter, WAL epoch and generation)
//       decide as before how long that frame is used. (A page taken in place with Bytes and
//       trusted across reads needs the epoch each writer of the file moves: shm/wal_index.h
//       O4, pager/mapped_pages.h O5..O7; the rollback modes do not take pages in place.)
//   E3. The map is made once, when the file is opened for the pager, at its largest size
//       (mmap_size bytes, a reservation of address space, not of memory), and is never moved
//       or unmapped while the File lives: growth of the file needs no remap (bytes appended
//       past the old end become readable through the existing map), and no reader can hold a
//       pointer into an extent that goes away.
//   E4. A copy is served from the map only when its whole range lies below the file size last
//       seen (known_size, refreshed by fstat when a read reaches past it, lowered by this
//       File's own Truncate); otherwise, and for bytes past mmap_size, pread serves it, so a
//       short file reads as OutOfRange exactly as without the map.
//   E5. A fault during a copy (SIGBUS: the file was cut by another process below known_size,
//       or the disk failed to read the page) ends the copy (GuardedCopy returns false), and the
//       read is retried through pread, which reports the cut (OutOfRange: the pager's DataLoss
//       "past the end of the file") or the I/O error (EIO) as a Status of that read only;
//       known_size is dropped so that the next reads past the cut go to pread too. The SIGBUS
//       handler acts only while the faulting thread is inside GuardedCopy (a thread-local
//       flag); any other SIGBUS goes to the handler installed before ours, or to the default
//       action (the process dies, as it would without the map).
//
// Pages handed out of the map (zero-copy; the pager's WAL read transactions, pager/
// mapped_pages.h). Bytes() returns a pointer into the map that the caller reads directly, and
// keeps reading after the call returns (a B+tree page, a value view the user holds), where no
// guard can catch a fault. What a fault there does instead (O for the map's zero-copy side;
// the epoch that decides when a page handed out needs no new check is O4..O7, pager/
// mapped_pages.h and shm/wal_index.h):
//   O1. A SIGBUS whose address lies in a live ReadMap (every map registers its range at
//       Create and leaves the registry before it is unmapped) and outside a GuardedCopy is
//       answered by mapping one page of zeroed anonymous memory over the faulting page
//       (MAP_FIXED, read-only) and counting the map's damage (an atomic, async-signal-safe);
//       the handler then returns and the access that faulted reads zeros. So no access of a
//       page handed out of the map kills the process or jumps out of the code that made it:
//       the worst it reads is a page of zeros, which no page checksum accepts.
//   O2. Whoever reads pages handed out of a map loads damage() when it begins and again
//       before anything it read reaches its caller (the pager's read transaction at each page
//       it hands out and at CheckReads, which the engine calls before every read operation
//       returns): damage moved since its begin means some access of the map may have read
//       zeros, and the operation fails (DataLoss naming the file) whatever it computed. The
//       counter is the map's, not the thread's: every transaction open on the map when a page
//       of it faults fails its next operation, including ones that never touched that page
//       (a transaction may move between threads, and a user's value view is read by any).
//   O3. Repair() maps the file again over the whole map (MAP_FIXED, one call: no other
//       thread ever sees a hole) and moves repairs(); the zeroed pages are the file's again,
//       or fault again (O1) when the file is still short. It is called only when damage() has
//       moved since the last repair, before a transaction begins (the pager, under its
//       mutex). A damage also drops known_size (as E5 does), so the next Bytes() asks fstat
//       and hands out nothing past a cut.
//
// Thread-safety: Copy and Bytes may be called by any number of threads at once; the map's
// address range is fixed after Create (Repair maps the same range again); known_size and the
// counters are atomics.
#ifndef JOURNALKV_VFS_READ_MAP_H_
#define JOURNALKV_VFS_READ_MAP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace journalkv::vfs {

// Copies n bytes from src to dst; false when the copy faulted (SIGBUS) part way, dst then
// holding some of the bytes. Safe to call from any thread; installs the process-wide SIGBUS
// handler at its first use (E5).
bool GuardedCopy(void* dst, const void* src, size_t n);

struct ReadMapCounters {
  uint64_t copies = 0;     // reads served from the map
  uint64_t fallbacks = 0;  // reads past known_size or past the map, served by pread
  uint64_t faults = 0;     // copies that faulted (E5) and went to pread
  uint64_t damage = 0;     // faults on pages handed out, answered with zeros (O1)
};

class ReadMap {
 public:
  // Maps `length` bytes of `fd` (read-only, shared) whatever the file's size now (E3).
  // `in_place` false: a map only copied from (the WAL's logs, wal/wal_connection.h Q1): it
  // takes no slot of the handler's registry (O1 is for pages handed out; a fault inside a copy
  // is the guard's, E5), so the slots stay for the maps that hand pages out, and Bytes hands
  // out nothing.
  static absl::StatusOr<std::unique_ptr<ReadMap>> Create(int fd, uint64_t length,
                                                         const std::string& path,
                                                         bool in_place = true);
  ~ReadMap();
  ReadMap(const ReadMap&) = delete;
  ReadMap& operator=(const ReadMap&) = delete;

  // Copies out.size() bytes at offset into out and returns true, or returns false when the
  // read must go to pread instead (E4, E5): past the map, past the file size, or a fault.
  bool Copy(uint64_t offset, absl::Span<uint8_t> out);
  // This File cut the file (E4).
  void NoteTruncate(uint64_t size);

  // Zero-copy: the map's bytes [offset, offset + n), or nullptr when they must be read
  // another way (past the map or past known_size, E4). The pointer stays valid while the
  // ReadMap lives (E3); a fault on it reads zeros and counts damage (O1).
  const uint8_t* Bytes(uint64_t offset, size_t n);
  // Faults on pages handed out, answered with zeros (O1), since Create; acquire.
  uint64_t damage() const { return damage_.load(std::memory_order_acquire); }
  // Maps the file again over the whole map (O3); the number of repairs made.
  void Repair();
  uint64_t repairs() const { return repairs_.load(std::memory_order_acquire); }
  // For the SIGBUS handler only: a fault at `address` (inside the map) was answered (O1).
  void NoteDamage();

  uint64_t length() const { return length_; }
  ReadMapCounters counters() const;

 private:
  ReadMap(int fd, const uint8_t* base, uint64_t length, bool in_place)
      : fd_(fd), base_(base), length_(length), in_place_(in_place) {}
  uint64_t RefreshSize();
  bool Below(uint64_t end);  // E4: end within the map and below the file size last seen

  const int fd_;
  const uint8_t* const base_;
  const uint64_t length_;
  const bool in_place_;  // false: copies only, never in the registry (Create)
  std::atomic<uint64_t> known_size_{0};
  std::atomic<uint64_t> copies_{0};
  std::atomic<uint64_t> fallbacks_{0};
  std::atomic<uint64_t> faults_{0};
  std::atomic<uint64_t> damage_{0};
  std::atomic<uint64_t> repairs_{0};
  int registry_slot_ = -1;  // O1: this map's entry in the handler's registry
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_READ_MAP_H_
