// FaultInjectingFileSystem: a FileSystem wrapper for crash and error tests (and benchmarks that
// want its counters). It forwards every call to a base FileSystem (MemFileSystem or
// PosixFileSystem) and adds four things:
//
// 1. A power-loss model. For every file opened or created through it, it keeps in memory the
//    file's durable image (what a disk is guaranteed to hold after a power loss) and the writes
//    and truncates made since the file's last Sync; per directory, the creates and deletes made
//    since its last SyncDirectory, in order (a rename is one such change: undone, the file
//    has its old name again and the new name its old file, or none). A file that already exists when first opened
//    through the wrapper (or deleted through it) is taken to be durable as it is.
//    SimulatePowerLoss(seed) rewrites the base to one state a real disk could hold
//    (power_loss_model.h), drawn for the disk SetDiskModel describes (DiskModel{} by default):
//      - each unsynced write is kept, dropped, or torn into sectors of DiskModel::sector_size
//        bytes (512 by default; aligned to file offsets), a dropped sector sometimes holding
//        garbage (SetTornSectorGarbage). With DiskModel::size_without_data, a write that ends
//        past the end of the file (as replayed so far) has a fourth, equally likely outcome: the
//        file is extended to the write's end but none of its data survives (its new bytes read
//        as zeros, the bytes it overwrote keep their old value);
//      - each unsynced truncate is kept or dropped;
//      - every unsynced create is undone (the file disappears) and every unsynced delete is
//        undone (the file returns with its durable image plus a replay of its unsynced writes).
//        With DiskModel::unsynced_entries_may_survive, each directory instead keeps a prefix of
//        its unsynced creates and deletes, in the order they were made, whose length is drawn
//        uniformly from 0 to all of them (a metadata journal commits in order); the rest are
//        undone, newest first. A file whose create survives holds its durable image (empty
//        unless it was synced) plus a replay of its unsynced changes.
//    Strict POSIX: a file Sync makes the file's content and size durable, never its directory
//    entry; only SyncDirectory of the directory (DirName of the path, compared as spelled, so
//    spell paths consistently) does that. After the power loss the new state counts as durable,
//    and every File opened before it is dead: each call fails with FailedPrecondition ("file
//    handle invalidated by simulated power loss"). A dead File keeps its base File, and so its
//    base locks, until it is destroyed; the base files are deleted and recreated by the power
//    loss, so new Files never conflict with a dead File's locks on PosixFileSystem or
//    MemFileSystem. Files never opened or deleted through the wrapper are left untouched.
//    Shared-memory mappings are not modelled: a -shm file comes back with its last tracked
//    content (typically its content when first opened), which is a state a disk may hold.
//    The read map (File::EnableReadMap, vfs/read_map.h) is the base File's: over real files
//    (PosixFileSystem, RootedFileSystem) reads of a mapped file are copies out of the base's
//    map, which sees every write, truncate and power-loss rewrite of the base as pread would
//    (E1); over MemFileSystem there is none (Unimplemented) and reads stay reads.
//    The same seed, history and DiskModel give the same state; DiskModel{} draws exactly as the
//    model before DiskModel existed did, so old sweeps reproduce.
// 2. Process crashes. SimulateProcessCrash() models a SIGKILL of the process: every File opened
//    before it is dead (FailedPrecondition "file handle invalidated by simulated process
//    crash"), the crash point is cleared, and nothing else changes: the base is not rewritten,
//    unsynced changes stay in the base (the OS still holds them, so new Files read them) and in
//    the model (a later SimulatePowerLoss still decides what of them reaches the disk). As after
//    a power loss, a dead File keeps its base File and locks until destroyed, and here the base
//    files are the same ones, so destroy the crashed Files before opening new ones that lock.
// 3. Crash points. CrashAfterMutations(n): after n more mutating operations succeed, every
//    mutating operation fails with Internal ("simulated power loss: ...") without reaching the
//    base or the model, until SimulatePowerLoss or SimulateProcessCrash (which then sees exactly
//    the mutations made before the crash point). Mutating operations, each counted once by
//    mutation_count(): Write, Truncate, Sync, Delete, Rename, RenameNoReplace, SyncDirectory,
//    an Open that creates a file, and an
//    AtomicBatch Commit (one mutation for the whole batch; its writes into the batch are
//    none). Reads, Size, locks and opens of existing files still work.
// 4. Error injection. FailNth(op, n, err): the n-th operation of kind op counted from the call
//    fails with ErrnoToStatus(err, ...) — the code and message PosixFileSystem would return —
//    and is not applied; with persistent = true every later one fails too. ShortWriteNth: the
//    n-th write applies its first half, rounded down to a multiple of DiskModel::sector_size
//    (maybe nothing), then fails. A failed operation never counts as a mutation (a short write's
//    applied part is still tracked as unsynced data).
//    A failed File::Sync (FaultOp::kSync) behaves as Linux after a writeback error: at that
//    moment each of the file's unsynced changes, replayed in order, is either made durable or
//    lost (probability 1/2 each, drawn from one std::mt19937_64 seeded by SetSyncFailureSeed,
//    default 0, that runs on from one failed Sync to the next), and none stays pending. A lost
//    change is undone in the base too (the base file is rewritten to the new durable image), so
//    reads then see exactly what is durable, a later successful Sync does not bring a lost write
//    back, and a power loss keeps what was made durable. A failed SyncDirectory leaves the
//    directory's entry changes unsynced.
//    SkipSyncs(ordinals): sync calls (File::Sync and SyncDirectory together) are numbered 1, 2,
//    ... as they are attempted over the wrapper's whole life (across power losses and process
//    crashes); an attempt is what op_count counts: a call that gets past the dead-handle and
//    crash-point checks, whether or not it then fails or is skipped. A sync whose number is in
//    `ordinals` succeeds without doing anything: nothing is made durable and the base is not
//    synced. It still counts as a mutation, a sync (sync_count, sync_mutation_indexes) and in
//    stats(), and is in sync_log() marked skipped, so crash point numbering is that of a run
//    without skips. An injected fault on the same call wins: it fails as FailNth says.
//    sync_log() lists every sync that succeeded or was skipped, in order.
//
// 5. Atomic batches (vfs.h, AtomicBatch). Every writable File has one, kEmulated, of block size
//    1: the writes are buffered in memory (Read sees them over the file), and Commit applies
//    them to the base and adds them to the model as one pending change, which a power loss
//    keeps whole or drops whole (power_loss_model.h), never tears; the batches of a file are
//    kept in their commit order (a later one only with every earlier one). A commit with
//    BatchSync::kAtomicOnly stays droppable until a Sync of the file covers it; one with
//    kDurable survives every later power loss (earlier unsynced writes of the file still
//    draw as before: only the batch is flushed; and as after a Sync, a file whose create
//    no SyncDirectory covered may still disappear). A durable commit is also a sync attempt:
//    numbered as SkipSyncs numbers syncs (so a sync-removal sweep can take its flush away:
//    skipped, it is committed as kAtomicOnly), in sync_count() and sync_log() (marked
//    atomic_commit). A crash point before the commit, a dead File (power loss or process
//    crash before the commit) or a full disk (SetCapacity) refuses the whole batch: nothing
//    of it reaches the base or the model. Injected faults (FailNth) do not target batches.
//
// Counters: stats() counts like the other file systems (operations that succeed through the
// wrapper); the base counts its own I/O, including the reads that load a file's durable image
// and the rewrites done by SimulatePowerLoss and by a failed Sync.
//
// Thread-safety: thread-safe. Mutating operations are serialized by one mutex held across the
// base call, so the bookkeeping always matches the base; reads, Size, locks and mappings go to
// the base without it. The base must outlive the wrapper, and the wrapper its Files. Nothing
// else may change the tracked files in the base behind the wrapper's back. A File call racing
// with SimulatePowerLoss or SimulateProcessCrash acts wholly before it or fails as dead, except
// that a read already past its liveness check may still read the base while a power loss
// rewrites it.
#ifndef JOURNALKV_VFS_FAULT_INJECTING_FS_H_
#define JOURNALKV_VFS_FAULT_INJECTING_FS_H_

#include <array>
#include <cerrno>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/mutex.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// The kinds of operation FailNth can target and op_count counts.
enum class FaultOp { kRead, kWrite, kSync, kTruncate, kCreate, kDelete, kDirSync };
inline constexpr int kNumFaultOps = 7;

class FaultInjectingFile;  // fault_injecting_fs.cc
class BatchBuffer;         // batch_overlay.h

class FaultInjectingFileSystem : public FileSystem {
 public:
  explicit FaultInjectingFileSystem(FileSystem* base);  // base is not owned
  ~FaultInjectingFileSystem() override;
  FaultInjectingFileSystem(const FaultInjectingFileSystem&) = delete;
  FaultInjectingFileSystem& operator=(const FaultInjectingFileSystem&) = delete;

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Delete(const std::string& path) override;
  // A mutation (crash points count it) that a power loss undoes unless the directory was
  // synced after it; with DiskModel::unsynced_entries_may_survive it is one entry change, kept
  // or undone whole. Not a FaultOp: no error rule targets it.
  absl::Status Rename(const std::string& from, const std::string& to) override;
  // The base's RenameNoReplace (which refuses an existing `to` and then changes nothing),
  // modelled as Rename is: one entry change of a name that was free.
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override;
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir_path) override;
  absl::StatusOr<std::string> ResolveLinks(const std::string& path) override;

  // Power loss. Rewrites every tracked file in the base to a state drawn with
  // std::mt19937_64(seed) (the same seed and history give the same state), kills every open
  // File, and clears the crash point. Errors come from the base.
  absl::Status SimulatePowerLoss(uint64_t seed);
  // Whether a dropped sector of a torn write may hold random bytes (default true). With false,
  // every sector of a torn write holds either its old or its new bytes.
  void SetTornSectorGarbage(bool enabled);
  // Whether this layer's Files lend their base File's read map (File::read_map) to a reader
  // that takes pages out of it in place (pager/mapped_pages.h; default true, so the sweeps
  // over real files read as a mapped database does). Pages taken in place bypass this layer:
  // its liveness checks and injected read faults never reach them. With false every page is
  // a Read through this layer (a copy out of the map, E2). Set before the database is opened.
  void SetLendReadMap(bool lend) { lend_read_map_.store(lend, std::memory_order_relaxed); }
  bool lends_read_map() const { return lend_read_map_.load(std::memory_order_relaxed); }

  // Process crash (SIGKILL): every File opened before is dead from now on (each call fails with
  // FailedPrecondition "...: file handle invalidated by simulated process crash"), the crash
  // point is cleared, and every unsynced change stays as it is: the OS still holds it, so new
  // Files see it, and a later SimulatePowerLoss still decides what of it reaches the disk.
  // The base is not rewritten. (Dead Files keep their base locks until destroyed, as today:
  // tests destroy the crashed connections before opening new ones.)
  void SimulateProcessCrash();

  // The disk a power loss is drawn for.
  struct DiskModel {
    // Torn writes split into sectors of this many bytes, aligned to file offsets (a power of
    // two >= 512). 512 today; 4096 models 4K-sector disks. Short writes round to it too.
    uint64_t sector_size = 512;
    // When true, a power loss keeps a random prefix (possibly all, possibly none, each length
    // equally likely) of each directory's unsynced entry changes (creates and deletes), in the
    // order they were made (metadata journals commit in order), instead of undoing all of them.
    bool unsynced_entries_may_survive = false;
    // When true, a write that extended the file gets a fourth outcome (besides kept, dropped,
    // torn), drawn with equal probability: the size change survives but none of the data does
    // (the new bytes read as zeros).
    bool size_without_data = false;
  };
  // Applies from the next power loss (and short write) on. A sector_size that is not a power of
  // two >= 512 is a bug in the test and fails a JKV_CHECK.
  void SetDiskModel(const DiskModel& model);

  // A failed fsync (a FailNth(FaultOp::kSync, ...) rule firing on File::Sync) no longer just
  // leaves the changes unsynced: as Linux does after a writeback error, each of the file's
  // unsynced changes is at that moment either made durable or lost (probability 1/2 each,
  // replayed in order; a lost write is undone in the base too, so later reads see the bytes as
  // durable), and none stays pending, so a later successful Sync does NOT bring back what was
  // lost (a retry-and-trust bug then shows). Choices are drawn from std::mt19937_64 seeded by
  // this (default seed 0; reseeded by each call). Directory sync failures keep today's behaviour.
  void SetSyncFailureSeed(uint64_t seed);

  // Test-only: the sync calls (File::Sync and SyncDirectory together, numbered 1, 2, ... in the
  // order they are attempted through this file system, over its whole life, including skipped
  // ones and across power losses / process crashes) whose number is in `ordinals` succeed
  // without doing anything: nothing is made durable and the base is not synced. They still
  // count as one mutation each, and appear in sync_mutation_indexes() and sync_log(), so crash
  // point numbering matches a run without skips. Replaces the previous set. "Attempted" is as
  // op_count counts: refused calls (dead File, crash point) get no number; calls an injected
  // fault fails do, and the fault wins over the skip.
  void SkipSyncs(std::set<uint64_t> ordinals);

  struct SyncRecord {
    uint64_t ordinal;         // 1-based, as SkipSyncs numbers them
    uint64_t mutation_index;  // mutation_count() right after it
    std::string path;         // the file, or the directory for SyncDirectory (as passed)
    bool directory;           // SyncDirectory
    bool skipped;             // by SkipSyncs
    bool atomic_commit = false;  // a durable AtomicBatch commit on `path`
  };
  // Every sync that succeeded (or was skipped), in order.
  std::vector<SyncRecord> sync_log() const;

  uint64_t mutation_count() const;
  uint64_t sync_count() const;  // successful file syncs and directory syncs
  // mutation_count() right after each successful Sync or SyncDirectory, in order.
  std::vector<uint64_t> sync_mutation_indexes() const;

  // Crash point: lets n more mutating operations succeed, then fails all of them.
  void CrashAfterMutations(uint64_t n);

  // A disk of `bytes` (nullopt, the default: unlimited). Every file named in the file system
  // takes its size rounded up to kBlockSize (files here are never sparse: a write past the
  // end, a growing Truncate and MapSharedRegion all allocate up to their end); a Write that
  // needs more blocks than are free writes the bytes that fit and then fails with ENOSPC, as
  // pwrite(2) does (a short write, then the error); a growing Truncate fails with ENOSPC and
  // changes nothing, and so does MapSharedRegion, with the ResourceExhausted PosixFile gives when it
  // cannot allocate a region before mapping it (vfs.h: a mapped page is allocated for real,
  // so a full disk is an error, never a fault at a store). A deleted name's blocks are free at
  // once, even while a File keeps it open. Setting a capacity below what is used fails
  // nothing already written; only growth fails.
  static constexpr uint64_t kBlockSize = 4096;
  void SetCapacity(std::optional<uint64_t> bytes);
  uint64_t used_bytes() const;

  // Error injection; n is 1-based and counted from this call (0 is taken as 1).
  void FailNth(FaultOp op, uint64_t n, int err, bool persistent = false);
  void ShortWriteNth(uint64_t n, int err = ENOSPC);
  void ClearFaults();  // drops every FailNth and ShortWriteNth rule
  // Operations of kind op attempted so far, including those an injected fault failed (not those
  // refused earlier: on a dead or read-only File, or after a crash point).
  uint64_t op_count(FaultOp op) const;

 private:
  friend class FaultInjectingFile;
  struct Inode;  // the tracked state of one file: durable image and unsynced changes
  // An inode whose durable image and size are `content`.
  static std::shared_ptr<Inode> InodeHolding(std::vector<uint8_t> content);
  struct Epoch;  // the Files opened between two simulated crashes, and how the epoch ended

  // Rename and RenameNoReplace: whether a file at the new name is replaced or refused.
  enum class RenameMode { kReplace, kNoReplace };
  absl::Status RenameLocked(const std::string& from, const std::string& to, RenameMode mode)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // An unsynced create or delete of a directory entry.
  struct EntryOp {
    enum class Kind { kCreate, kDelete, kRename };
    Kind kind;
    std::string path;              // kRename: the new name
    std::shared_ptr<Inode> inode;  // kDelete: the file the name pointed to; kRename: the one renamed
    std::string from;              // kRename: the old name
    std::shared_ptr<Inode> replaced;  // kRename: the file `path` named before, or null
  };

  struct FaultRule {
    FaultOp op;
    uint64_t nth;  // fires when op_counts_[op] reaches nth (and beyond when persistent)
    int err;
    bool persistent;
    bool short_write;
  };

  // The File operations that touch the model; FaultInjectingFile forwards to them.
  absl::Status FileRead(FaultInjectingFile& file, uint64_t offset, absl::Span<uint8_t> out);
  absl::Status FileWrite(FaultInjectingFile& file, uint64_t offset, absl::Span<const uint8_t> data);
  absl::Status FileTruncate(FaultInjectingFile& file, uint64_t size_bytes);
  absl::Status FileSync(FaultInjectingFile& file, SyncKind kind);
  absl::StatusOr<uint8_t*> FileMap(FaultInjectingFile& file, uint32_t region, size_t region_size);
  // Commits an emulated batch (see 5. above).
  absl::Status FileCommitBatch(FaultInjectingFile& file, const BatchBuffer& batch,
                               BatchSync sync);
  static uint64_t RoundUpToBlock(uint64_t bytes) {
    return (bytes + kBlockSize - 1) / kBlockSize * kBlockSize;
  }
  uint64_t UsedBytesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether growing `inode` to `end` bytes fits the capacity.
  bool HasRoomFor(const Inode& inode, uint64_t end) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The size `inode` may grow to in the free blocks. REQUIRES: a capacity is set.
  uint64_t RoomEnd(const Inode& inode) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckAlive(const FaultInjectingFile& file) const;

  absl::Status CheckNotCrashed(absl::string_view context) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts one operation of kind op; returns the fault rule it triggers, if any.
  std::optional<FaultRule> CountOp(FaultOp op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddFaultRule(const FaultRule& rule);
  // Counts one attempted sync (FileSync or SyncDirectory that got past the crash point); returns
  // its ordinal.
  uint64_t CountSyncAttempt() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a sync that succeeded or was skipped: a mutation, an index, a sync_log() record.
  void CountSync(uint64_t ordinal, const std::string& path, bool directory, bool skipped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A failed fsync: resolves each unsynced change of file to durable or lost, rewriting the base.
  absl::Status ResolveFailedSync(FaultInjectingFile& file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the current epoch (killing every File opened in it) and starts a new one.
  void EndEpoch(int ended_by) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::StatusOr<std::unique_ptr<File>> CreateFile(const std::string& path,
                                                   const OpenOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tracked file path names, loaded from the base when untracked; nullptr when the base has
  // no regular file there.
  absl::StatusOr<std::shared_ptr<Inode>> InodeOf(const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::unique_ptr<File> Wrap(std::unique_ptr<File> base_file, std::shared_ptr<Inode> inode,
                             const OpenOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The names the directories hold after a power loss: every unsynced entry change undone, or
  // with unsynced_entries_may_survive a prefix per directory kept (drawn from rng).
  std::map<std::string, std::shared_ptr<Inode>> NamesAfterPowerLoss(std::mt19937_64& rng) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RewriteBase(const std::map<std::string, std::vector<uint8_t>>& images)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;

  std::atomic<bool> lend_read_map_{true};  // SetLendReadMap
  mutable base::Mutex mu_;
  // New Files join it; SimulatePowerLoss and SimulateProcessCrash end it and start another.
  std::shared_ptr<Epoch> epoch_ ABSL_GUARDED_BY(mu_);
  // Tracked files by their current name, and the unsynced entry changes per directory.
  std::map<std::string, std::shared_ptr<Inode>> names_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<EntryOp>> dir_ops_ ABSL_GUARDED_BY(mu_);
  bool garbage_in_torn_sectors_ ABSL_GUARDED_BY(mu_) = true;
  DiskModel disk_model_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> capacity_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 sync_failure_rng_ ABSL_GUARDED_BY(mu_){0};
  std::set<uint64_t> skipped_syncs_ ABSL_GUARDED_BY(mu_);
  uint64_t sync_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t mutation_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<SyncRecord> sync_log_ ABSL_GUARDED_BY(mu_);  // also gives sync_mutation_indexes()
  std::optional<uint64_t> crash_at_mutation_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, kNumFaultOps> op_counts_ ABSL_GUARDED_BY(mu_) = {};
  std::vector<FaultRule> fault_rules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_FAULT_INJECTING_FS_H_
