// The wal-index: which frame of the log holds the newest version of a page, the published
// state of the log(s), the checkpoint progress and the readers' pinned snapshots, in memory
// shared by every connection of every process (`x.db-shm`, mapped with
// vfs::File::MapSharedRegion), or on the heap for a connection that is alone (exclusive
// locking) or cannot write the -shm file.
//
// This comment is the specification of the -shm layout; keep it exact. The file is an array of
// 32 KiB regions. All words are native-endian (the file is never moved between machines: a
// -shm found at open with no live connection is reinitialised) and accessed only through
// std::atomic_ref, with the memory order given at each accessor.
//
// Region 0:
//   offset | size  | field
//   -------+-------+-----------------------------------------------------------------------
//   0      | 4     | layout_version (kShmLayoutVersion; 0: not initialised yet)
//   4      | 4     | slots_used: one past the highest reader slot a connection of this life of
//          |       |   the file has claimed (only grows; S1 below)
//   8      | 80    | index header, copy A  (IndexHeader words, then its 8-byte checksum)
//   88     | 80    | index header, copy B
//   168    | 4     | sync_floor: the strongest sync level (vfs::SyncLevel) of any connection that
//          |       |   has joined this life of the file; only grows (wal/log_durability.h D1)
//   172    | 4     | append_epoch: how many times a writer has reset the appended header after
//          |       |   a failed log sync (wal/log_durability.h W13)
//   176    | 80    | sync failures: kFailureRecords records of 20 bytes, the one of epoch e at
//          |       |   176 + 20 * (e mod kFailureRecords): u32 e + 1 (0: none), then for log 0
//          |       |   and log 1: u32 ckpt_seq, u32 mx_frame of the published header when a log
//          |       |   sync failed in epoch e (W13). Written under FLUSH: the tag word is zeroed,
//          |       |   the words written, then the tag stored; a reader reads the tag before and
//          |       |   after the words and retries when they differ
//   256    | 64    | checkpoint info: per log L in {0,1} at 256 + 32*L:
//          |       |   +0  u32 backfill: frames of log L's current generation already copied
//          |       |       into the database file (and, at sync != OFF, synced)
//          |       |   +4  (log 0's record only, at 260) u32 db_epoch: O4 below; moved to an
//          |       |       odd value before every write or cut of the database file and to
//          |       |       the next even one after it (seq_cst)
//          |       |   +8  u64 ckpt_target: ckpt_seq << 32 | the frame a running checkpoint
//          |       |       may copy up to (readers retry when it is past their snapshot)
//          |       |   +16 u64 copied_through: ckpt_seq << 32 | F: for every page of the
//          |       |       frames up to F, the database file holds its newest version <= F
//          |       |       (copied, maybe not yet synced nor published as backfill)
//          |       |   +24 u64 written_through: ckpt_seq << 32 | W: the database file may hold
//          |       |       page versions of frames up to W, none later (W >= F; a copy that
//          |       |       stopped part way leaves W past F). Both are written under CKPT
//          |       |       (wal/checkpoint_copy.h C3, C4)
//   320    | 80    | appended header, copy C (IndexHeader words, then its checksum): the newest
//          |       |   commit appended to the log, which may not be durable nor published yet
//          |       |   (wal/wal_connection.h W12); the next writer's base
//   400    | 80    | appended header, copy D
//   480    | 16    | wake words, per kind K in {WRITE, FLUSH} at 480 + 8*K: u32 seq, bumped when
//          |       |   WRITE is released / a group flush has published; u32 waiters, the
//          |       |   connections' threads sleeping on seq (vfs/word_wait.h) until it changes.
//          |       |   FLUSH's seq is odd while a connection holds FLUSH, or one was killed
//          |       |   holding it (a hint: the lock byte decides; wal/group_flush.h Z1, Z2)
//   496    | 16    | synced_through, per log L at 496 + 8*L: u64 ckpt_seq << 32 | F: every frame
//          |       |   up to F of that generation of log L is durable (D2). Bit 63
//          |       |   (kSyncFailedBit): a sync of this generation failed (W13), so frames past F
//          |       |   may have been lost even if a later sync succeeds; they are written again
//          |       |   before a sync vouches for them. Written under FLUSH
//   512    | 16*kOverflowMarks | overflow pins: mark m at 512 + 16*m: u64 pin[0], u64 pin[1],
//          |       |       as a slot's. A connection that found no free slot pins its
//          |       |       snapshot by holding mark m's lock byte SHARED while it has a read
//          |       |       transaction open; the value changes only under that byte
//          |       |       EXCLUSIVE, so it stays at or below every holder's snapshot (several
//          |       |       connections may share one mark). A mark nobody holds pins nothing.
//   1024   | 32*kMaxSlots | reader slots: slot i at 1024 + 32*i:
//          |       |   +0  u64 pin[0]: the snapshot of log 0 the slot's connection still
//          |       |       needs (pins.h encodes it; 0 = none)
//          |       |   +8  u64 pin[1]: the same for log 1 (WAL2)
//          |       |   +16 u64 owner: a random id the owning connection drew when it
//          |       |       claimed the slot (diagnostics only: `jkv inspect shm` shows it)
//
// Regions 1, 2, ...: hash blocks. Block k of log L (frames [k*4096 + 1, (k+1)*4096] of that
// log) is region 1 + 2*k + L:
//   0      | 16384 | pages[4096]: u32 page_no of frame k*4096 + 1 + j at index j (0: none)
//   16384  | 16384 | hash[8192]: u16 slots, 0 = empty, else j + 1 for pages[j]; open
//          |       | addressing with linear probing from (page_no * 383) mod 8192
//
// The index header (IndexHeader, 72 bytes of words + 8-byte checksum XXH3-64 seed 0 of them):
//   change, page_size, page_count, current_log, then for log 0 and log 1: ckpt_seq, salt1,
//   salt2, mx_frame, last_checksum (u64 as low word then high word), reserved u32.
// The writer publishes by writing copy B and then copy A; a reader reads A then B and accepts
// them only when they are equal and the checksum matches (otherwise a writer is in the middle
// of publishing, or died there: retry, then recover). The appended header is written and read
// the same way, D then C and C then D. Published <= appended always: a header is written to
// the appended copies before (or when) it is published (W12).
//
// Hash entries only ever get added by the writer (release stores: the pages[] word before the
// hash slot) and removed for frames past the published mx_frame (Truncate), which no reader
// looks at; removing the newest entries keeps every older entry's probe chain intact, because
// an entry's chain only passes slots filled before it. A block's used pages[] words are a
// prefix of it (frames are appended in order, the first frame of a block clears all of it,
// and Truncate clears from the end), and a hash slot is set only while its pages[] word is:
// so Truncate finds the block empty past a frame whose word is zero without scanning it.
//
// Lock bytes on the -shm file (OFD byte-range locks through vfs::File::TryLock), at kLockBase:
//   +0 WRITE    exclusive: the one writer (and recovery)
//   +1 CKPT     exclusive: the one checkpointer (and recovery)
//   +2 RECOVER  exclusive: rebuilding the index from the log
//   +3 DMS      shared by every connection for its lifetime; exclusive only by a connection
//               that is alone, which may then reinitialise or remove the -shm file
//   +4 FLUSH    exclusive: the one group flush (sync the log, publish the appended header;
//               W12), and recovery
//   +16 + i     SLOT i: exclusive by the connection that owns reader slot i, for its lifetime;
//               a slot with a pin whose lock byte is free belongs to a dead connection
//   +16 + kMaxSlots + m
//               MARK m: shared by each overflow connection pinning under mark m while it
//               reads; exclusive only to set the mark's pin (then converted to shared)
// A heap index grants every lock at once: one connection is its only user.
//
// S1 (the slots a scan of the pins visits). Slots are claimed lowest first, so while few
// connections are open only the first few slots are in use; a scan of every pin (a
// checkpoint's safe frame, the policy's view after each commit, Stats) visits the slots below
// slots_used and then every mark, rather than all 512 slots. TryLockSlot raises slots_used
// (seq_cst) after it takes the slot's lock byte and before it returns, so before the owner
// can store a pin there; a scan loads it (seq_cst) before the pins. A scan that stops below a
// slot loaded slots_used before that slot was claimed, so before any pin in it was stored:
// it sees what a scan of every slot that read this slot at that moment (no pin) would see,
// and the readers' protocol already allows a pin stored after a scan read it (W3: a reader
// checks the checkpoint target again after its pin store).
//
// Thread-safety: all methods are safe to call from many threads and processes at once, within
// the rules above (one writer appends/truncates/publishes at a time; slots are written only by
// their owner or, once the owner is dead, by whoever clears them).
#ifndef JOURNALKV_SHM_WAL_INDEX_H_
#define JOURNALKV_SHM_WAL_INDEX_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "vfs/vfs.h"

namespace journalkv::shm {

// "JKS" + layout 8. Layout 8 is layout 7 with db_epoch (O4): a build of layout 7 would write
// the database file without moving it, and a mapped reader of this build would then trust its
// verification of a page that changed since (pager/mapped_pages.h O5). Layout 7 was layout 6 with the durability words (sync_floor, append_epoch,
// the sync failures, synced_through): a build of layout 6 would neither keep nor honour them
// (it would publish a commit whose log sync failed, or skip C1 for frames a NORMAL connection
// published), so it must not share a -shm with this one. Layout 6 was layout 5 (slots_used)
// for logs of format version 2 (log/wal_format.h).
inline constexpr uint32_t kShmLayoutVersion = 0x4A4B5308;
inline constexpr size_t kRegionSize = 32 * 1024;
inline constexpr uint32_t kFramesPerBlock = 4096;
inline constexpr uint32_t kHashSlots = 2 * kFramesPerBlock;
inline constexpr int kMaxSlots = 512;  // reader slots: one per connection, while they last
inline constexpr int kOverflowMarks = 32;  // pins the connections beyond the slots share
// The holders of pins, numbered for the scans: slots 0..kMaxSlots-1, then mark m as
// kMaxSlots + m.
inline constexpr int kPinHolders = kMaxSlots + kOverflowMarks;
// The holders a scan of the pins visits (S1 in the layout below): the slots below
// `slots_used`, then every mark.
inline int FirstHolder(int slots_used) { return slots_used > 0 ? 0 : kMaxSlots; }
inline int NextHolder(int holder, int slots_used) {
  return holder + 1 == slots_used ? kMaxSlots : holder + 1;
}
inline constexpr uint32_t kMaxBlocksPerLog = 16384;  // 64M frames per log
inline constexpr uint32_t kMaxLogFrames = kMaxBlocksPerLog * kFramesPerBlock;

// The most frames one generation of a log may hold: kMaxLogFrames, or the lower limit a test
// set. A commit that would pass it is refused before any of its frames is written, and
// recovery adopts no commit past it (wal/wal_connection.h W2).
uint32_t MaxLogFrames();
void SetMaxLogFramesForTesting(uint32_t frames);  // 0: kMaxLogFrames again

// Byte offsets in region 0.
inline constexpr size_t kLayoutVersionOffset = 0;
inline constexpr size_t kSlotsUsedOffset = 4;
inline constexpr size_t kHeaderAOffset = 8;
inline constexpr size_t kHeaderBOffset = 88;
inline constexpr size_t kHeaderBytes = 80;  // 18 words + checksum
inline constexpr size_t kSyncFloorOffset = 168;
inline constexpr size_t kAppendEpochOffset = 172;
inline constexpr size_t kFailuresOffset = 176;
inline constexpr int kFailureRecords = 4;
inline constexpr size_t kFailureStride = 20;
inline constexpr size_t kSyncedThroughOffset = 496;
inline constexpr size_t kCkptInfoOffset = 256;
inline constexpr size_t kCkptInfoStride = 32;
inline constexpr size_t kDbEpochOffset = kCkptInfoOffset + 4;  // log 0's gap (O4)
inline constexpr size_t kAppendedCOffset = 320;
inline constexpr size_t kAppendedDOffset = 400;
inline constexpr size_t kWakeOffset = 480;
inline constexpr size_t kMarksOffset = 512;
inline constexpr size_t kMarkStride = 16;
inline constexpr size_t kSlotsOffset = 1024;
inline constexpr size_t kSlotStride = 32;
static_assert(kHeaderAOffset + kHeaderBytes <= kHeaderBOffset);
static_assert(kHeaderBOffset + kHeaderBytes <= kSyncFloorOffset);
static_assert(kFailuresOffset + kFailureRecords * kFailureStride <= kCkptInfoOffset);
static_assert(kCkptInfoOffset + 2 * kCkptInfoStride <= kAppendedCOffset);
static_assert(kAppendedCOffset + kHeaderBytes <= kAppendedDOffset);
static_assert(kAppendedDOffset + kHeaderBytes <= kWakeOffset);
static_assert(kWakeOffset + 16 <= kSyncedThroughOffset);
static_assert(kSyncedThroughOffset + 16 <= kMarksOffset);
static_assert(kMarksOffset + kOverflowMarks * kMarkStride <= kSlotsOffset);
static_assert(kSlotsOffset + kMaxSlots * kSlotStride <= kRegionSize);
static_assert(kFramesPerBlock * 4 + kHashSlots * 2 == kRegionSize);

// Lock bytes on the -shm file.
inline constexpr uint64_t kLockBase = 1 << 20;
enum class ShmLock : uint64_t {
  kWrite = 0,
  kCkpt = 1,
  kRecover = 2,
  kDms = 3,
  kFlush = 4,
};
inline constexpr uint64_t kSlotLockBase = kLockBase + 16;
inline constexpr uint64_t kMarkLockBase = kSlotLockBase + kMaxSlots;

struct LogState {
  uint32_t ckpt_seq = 0;
  uint32_t salt1 = 0;
  uint32_t salt2 = 0;
  uint32_t mx_frame = 0;       // the last committed frame of this log's current generation
  uint64_t last_checksum = 0;  // the chain value after mx_frame
  bool operator==(const LogState&) const = default;
};

// The published state of the log(s). In WAL mode only logs[0] is used and current_log is 0;
// in WAL2 logs[0] is x.db-wal, logs[1] x.db-wal2, and current_log the one the writer appends
// to (wal/wal_connection.h, V1..V6).
struct IndexHeader {
  uint32_t change = 0;      // incremented by every publish
  uint32_t page_size = 0;
  uint32_t page_count = 0;  // database size in pages at the newest commit
  uint32_t current_log = 0;
  std::array<LogState, 2> logs;
  bool operator==(const IndexHeader&) const = default;
};

// Test hook: called before each access of the shared words the WAL protocol orders (header
// reads and writes, the generation check, hash appends, lookups and truncations, the
// checkpoint words, pin stores, lock takes and releases) with the access's name ("shm:..."),
// and with "wait" after a header read that found it torn (the caller retries); nullptr: none. The schedule explorer (tests/schedule_explorer.h) switches threads there.
// Set it while no connection is open.
using IndexHook = void (*)(const char* point);
void SetIndexHookForTesting(IndexHook hook);

class WalIndex {
 public:
  // Over the -shm file `file` (not owned; must outlive the index). Checks (and, when
  // `initialize`, first writes) the layout version: FailedPrecondition naming the file for an
  // unknown layout; Unavailable for a file nobody has initialised (layout version 0: an
  // initialiser died before it finished). `initialize` is for a connection holding DMS
  // exclusively (alone): it zeroes the header copies, the checkpoint info and every slot, so
  // the header reads as invalid and the first reader recovers it. Unimplemented (passed on)
  // when the file system has no shared memory.
  static absl::StatusOr<std::unique_ptr<WalIndex>> OpenShared(vfs::File* file, bool initialize);
  // A private index on the heap, initialised.
  static std::unique_ptr<WalIndex> OpenHeap();
  ~WalIndex();

  bool shared() const { return file_ != nullptr; }

  // --- the index header
  // Reads copy A then copy B (acquire loads); true and *out when they agree and check out.
  bool ReadHeader(IndexHeader* out) const;
  // True when both header copies name generation `ckpt_seq` for log `log` (acquire loads, no
  // checksum): a reader's cheap check, after a lookup or frame read, that the log has not
  // restarted under it. A restart publishes its new generation before it clears any entry,
  // and a fence on each side (WriteHeader's release, this check's acquire) keeps a read made
  // before this check from seeing the next generation's entries or frames while this check
  // still sees the old generation, on weakly ordered CPUs too.
  bool GenerationIs(int log, uint32_t ckpt_seq) const;
  // One copy (0: A, 1: B) on its own, when its checksum matches: after a writer died between
  // the copies, B (written first) holds the newest header and A the one before.
  bool ReadHeaderCopy(int copy, IndexHeader* out) const;
  // The published header of a -shm read with pread rather than mapped (a connection that may
  // not map it): `prefix` holds the file's first kCkptInfoOffset bytes (or fewer: false). True
  // and *out when the layout version is this one's and both copies agree and check out.
  static bool ParseHeader(absl::Span<const uint8_t> prefix, IndexHeader* out);
  // Makes `header` both the appended and the published header (appended first). REQUIRES:
  // WRITE (or RECOVER) held, and nothing appended is unpublished, or FLUSH held too (W12).
  void WriteHeader(const IndexHeader& header);
  // Publishes `header` (copy B, then copy A; release stores), leaving the appended header as
  // it is. REQUIRES: FLUSH held, and `header` read from the appended copies (W12).
  void PublishHeader(const IndexHeader& header);
  // The appended header: the newest commit appended (W12). ReadAppendedHeader reads copy C
  // then D and accepts them as ReadHeader does; WriteAppendedHeader writes D then C.
  // REQUIRES for writing: WRITE held.
  bool ReadAppendedHeader(IndexHeader* out) const;
  void WriteAppendedHeader(const IndexHeader& header);
  // One appended copy (0: C, 1: D) on its own, when its checksum matches: after a writer died
  // between them, D (written first) holds the newest appended header and C the one before.
  bool ReadAppendedHeaderCopy(int copy, IndexHeader* out) const;
  // A published header whose copy A is torn while copy B is whole: a publisher between its two
  // copies (B is written first), alive or dead. Writes copy A from copy B and returns true;
  // false when copy B is not whole. Needs no lock (wal/wal_connection.h W12 h): it writes only
  // copy A, and only B's value, the newest published, so it never makes an older header whole:
  // racing a live publisher it writes the same words, and a late store of it over a later
  // publish leaves the copies different (torn, repaired to B), not an older header.
  bool CompletePublishFromB();
  // Test hook: damages copy A's checksum (as a writer killed mid-publish leaves it).
  void CorruptHeaderForTesting();
  // Test hook: damages appended copy `copy`'s checksum (0: C, as a writer killed writing C
  // leaves it; 1: D, killed writing D).
  void CorruptAppendedCopyForTesting(int copy);

  // --- hash tables
  // Records that frame `frame` of log `log` holds page `page_no`. REQUIRES: WRITE held, and
  // frames appended in increasing order after Truncate(log, frame - 1).
  absl::Status Append(int log, uint32_t frame, uint32_t page_no);
  // Makes sure Append of frames `first_frame`..`last_frame` of log `log` can succeed: the frame
  // limit (MaxLogFrames) and the -shm regions of the blocks holding them (an
  // I/O error when the file cannot grow). A writer calls it before it writes frames, so that a
  // commit the index cannot take fails before the log holds it. REQUIRES: WRITE held.
  absl::Status Reserve(int log, uint32_t first_frame, uint32_t last_frame);
  // The newest frame <= mx_frame of log `log` that holds `page_no`, or 0 when none. Visits the
  // blocks from the one holding mx_frame down to block 0, one hash probe sequence each.
  absl::StatusOr<uint32_t> Lookup(int log, uint32_t page_no, uint32_t mx_frame);
  // The page_no recorded for frame `frame` of log `log` (0: none), for checkpoints.
  absl::StatusOr<uint32_t> PageOfFrame(int log, uint32_t frame);
  // Removes every entry of log `log` for frames > mx_frame (0: all). REQUIRES: WRITE held.
  absl::Status Truncate(int log, uint32_t mx_frame);

  // --- checkpoint info (seq_cst: readers and checkpointers use Dekker-style store-then-load)
  uint32_t backfill(int log) const;
  void set_backfill(int log, uint32_t frames);
  uint64_t ckpt_target(int log) const;
  void set_ckpt_target(int log, uint64_t target);
  uint64_t copied_through(int log) const;
  void set_copied_through(int log, uint64_t value);
  uint64_t written_through(int log) const;
  void set_written_through(int log, uint64_t value);

  // --- durability (wal/log_durability.h D1, D2, W13; seq_cst)
  // The strongest sync level any connection of this life of the file joined with (D1).
  uint32_t sync_floor() const;
  // Raises it to `level` when lower; returns the value it had.
  uint32_t RaiseSyncFloor(uint32_t level);
  // The current append epoch (W13), and its successor. REQUIRES for setting: WRITE and FLUSH.
  uint32_t append_epoch() const;
  void set_append_epoch(uint32_t epoch);

  // --- the database file's write epoch (seq_cst)
  //   O4. Every write and every cut of the database file by a connection in a WAL mode is a
  //       checkpoint's (wal/checkpoint_copy.cc: its copy of frames, C5's cut back after a
  //       full disk, C7's cut past the newest commit, recovery's none: the index is rebuilt
  //       from the log, the file untouched), made under CKPT. Before its first write or cut
  //       the checkpointer moves db_epoch to an odd value no reader has seen (BeginDbWrite),
  //       after its last one returns to the next even one (EndDbWrite); both stores are
  //       seq_cst and only a CKPT holder makes them. So while db_epoch reads the same even
  //       value E, nothing wrote the file: a page checked at E is the page a reader at E
  //       reads (the mapped reader's trust, pager/mapped_pages.h O5..O7). A checkpointer
  //       that dies while odd leaves it odd (readers then trust nothing) until the next one
  //       moves past it. Hook points "shm:db_epoch_odd" (after the odd store) and
  //       "shm:db_epoch_even" (before the even store).
  uint32_t db_epoch() const;
  // REQUIRES: CKPT held. Returns the odd value stored, for EndDbWrite.
  uint32_t BeginDbWrite();
  void EndDbWrite(uint32_t odd);
  // What the published header held of each log when a log sync failed (W13).
  struct SyncFailure {
    std::array<uint32_t, 2> ckpt_seq{};
    std::array<uint32_t, 2> mx_frame{};
  };
  enum class FailureLookup {
    kNone,       // no log sync failed in that epoch (yet)
    kRecorded,   // *out: what it recorded
    kForgotten,  // the record was overwritten by a later epoch's (kFailureRecords later)
  };
  FailureLookup Failure(uint32_t epoch, SyncFailure* out) const;
  // Records the first failure of epoch `epoch`. REQUIRES: FLUSH held.
  void RecordFailure(uint32_t epoch, const SyncFailure& failure);
  // synced_through of log `log` (D2; pins.h SyncedSeq, SyncedFrame, SyncFailed read it).
  // REQUIRES for setting: FLUSH held.
  uint64_t synced_through(int log) const;
  void set_synced_through(int log, uint64_t word);

  // --- reader slots (pin loads and stores are seq_cst, but for release_pin)
  uint64_t pin(int slot, int log) const;
  void set_pin(int slot, int log, uint64_t value);
  // A pin that asks for no older snapshot than the one it replaces (0, or a later snapshot):
  // a release store, as a read transaction's end makes (wal/wal_connection.h W3).
  void release_pin(int slot, int log, uint64_t value);
  uint64_t owner(int slot) const;
  void set_owner(int slot, uint64_t owner);

  // --- overflow marks (pin loads and stores are seq_cst)
  uint64_t mark_pin(int mark, int log) const;
  // REQUIRES: mark `mark` locked exclusively by the caller.
  void set_mark_pin(int mark, int log, uint64_t value);

  // --- every pin holder (kPinHolders: the slots, then the marks)
  // One past the highest slot claimed in this life of the file (S1), at most kMaxSlots. A
  // scan of the pins visits holders FirstHolder(used), NextHolder(h, used), ... below
  // kPinHolders, with `used` loaded once before it.
  int slots_used() const;
  uint64_t holder_pin(int holder, int log) const;
  // True when nobody but perhaps the caller holds holder `holder`: a slot whose owner died, a
  // mark no connection reads under. Its pin holds nothing back. One lock test (no system call
  // on a heap index, where every mark reads as gone).
  absl::StatusOr<bool> HolderGone(int holder);

  // --- wake words: a waiter for another connection's release of WRITE or for a group flush
  // sleeps in the kernel until the releaser bumps the word (or `timeout`: a releaser that died
  // wakes no one). The release costs a wake system call only while someone waits.
  enum class Wake { kWrite = 0, kFlush = 1 };
  uint32_t wake_seq(Wake w) const;
  uint32_t wake_waiters(Wake w) const;  // how many sleep on it now (a hint: a dead one stays)
  void WaitWake(Wake w, uint32_t seen, absl::Duration timeout);
  // Adds `step` to seq, then wakes its sleepers (if any).
  void Bump(Wake w, uint32_t step = 1);
  // The parity of seq as a holder's mark (wal/group_flush.h Z1), without a wake: MarkHeld
  // makes seq odd (+1 from even, +2 from odd, which a holder killed holding it left);
  // MarkReleasing adds 1 (odd to even).
  void MarkHeld(Wake w);
  void MarkReleasing(Wake w);

  // --- locks on the -shm file (always granted on a heap index). `lock` is a ShmLock or a slot.
  absl::StatusOr<bool> TryLock(ShmLock lock, vfs::LockMode mode);
  absl::Status Unlock(ShmLock lock);

  absl::StatusOr<bool> TryLockSlot(int slot);
  absl::Status UnlockSlot(int slot);
  // True when slot `slot`'s lock byte is free (its owner, if any, is dead). False on a heap
  // index for a slot this index handed out.
  absl::StatusOr<bool> SlotOwnerGone(int slot);
  // Mark `mark`'s lock byte in `mode` (converting a lock the caller holds; always granted on
  // a heap index), and its release.
  absl::StatusOr<bool> TryLockMark(int mark, vfs::LockMode mode);
  absl::Status UnlockMark(int mark);

 private:
  WalIndex(vfs::File* file);
  // The start of region `region`, mapping it on first use (mapping is guarded by map_mu_;
  // mapped pointers are published through the atomic array).
  absl::StatusOr<uint8_t*> Region(uint32_t region);
  // As Region, but null instead of creating a region that does not exist yet (not in the -shm
  // file, or never allocated on the heap): Truncate must not grow the file.
  absl::StatusOr<uint8_t*> ExistingRegion(uint32_t region);
  uint8_t* region0() const { return region0_; }
  // Reads two copies of a header (the published A and B, or the appended C and D), with the
  // hook point `between` between them.
  bool ReadCopies(size_t first, size_t second, const char* between, IndexHeader* out) const;
  // One copy at `offset`, when its checksum matches and it is plausible.
  bool ReadOneCopy(size_t offset, IndexHeader* out) const;

  vfs::File* const file_;  // null: heap index
  uint8_t* region0_ = nullptr;
  base::Mutex map_mu_;
  std::unique_ptr<std::atomic<uint8_t*>[]> regions_;  // 1 + 2 * kMaxBlocksPerLog entries
  std::vector<std::unique_ptr<uint8_t[]>> heap_ ABSL_GUARDED_BY(map_mu_);  // heap regions
  std::array<bool, kMaxSlots> heap_slots_ ABSL_GUARDED_BY(map_mu_) = {};  // heap: slots handed out
};

}  // namespace journalkv::shm

#endif  // JOURNALKV_SHM_WAL_INDEX_H_
