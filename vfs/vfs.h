// The file layer: the only seam between journalkv and the operating system.
//
// Everything above vfs/ does I/O through these interfaces, so that tests can run the engine on
// an in-memory file system or on one that simulates power loss and injects errors
// (fault_injecting_fs.h). Implementations: PosixFileSystem (posix_fs.h), MemFileSystem
// (mem_fs.h), FaultInjectingFileSystem (fault_injecting_fs.h).
//
// Thread-safety: a FileSystem is safe to use from many threads. A File may be used from many
// threads at once for Read/Write/Size/Sync/Lock on disjoint ranges (pread/pwrite semantics);
// callers serialize Truncate against other writers themselves.
//
// Crash guarantees (what each call promises across a power loss):
//  - Write: the bytes reach the OS. They survive a process crash, not a power loss: an unsynced
//    write may be kept, dropped, or torn at 512-byte sector granularity.
//  - Sync(kData) (fdatasync): every write and truncate of this file made before the call survives
//    power loss, including the file size. It does not make the file's directory entry durable.
//  - Sync(kAll) (fsync): as kData, plus all other metadata of the file.
//  - SyncDirectory: every create and delete of a file in that directory made before the call
//    survives power loss. Until then a create or delete may be undone by a power loss.
//  - Errors are reported once; after a failed Sync the caller must assume unsynced data is lost
//    and must not retry (the kernel may already have dropped the dirty pages).
//  - AtomicBatch::Commit (an optional capability, see AtomicBatch below): the batch's writes
//    reach the file all or none, across a process crash and a power loss; with
//    BatchSync::kDurable they also survive every later power loss once Commit returns.
#ifndef JOURNALKV_VFS_VFS_H_
#define JOURNALKV_VFS_VFS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "vfs/read_map.h"

namespace journalkv::vfs {

// What a file is used for; selects the I/O counters it adds to. Not stored anywhere.
enum class FileKind : int { kDatabase = 0, kJournal = 1, kWal = 2, kShm = 3, kOther = 4 };
inline constexpr int kNumFileKinds = 5;
absl::string_view FileKindName(FileKind kind);

enum class SyncKind { kData, kAll };  // fdatasync, fsync
enum class LockMode { kShared, kExclusive };

// How to open a file.
enum class OpenMode {
  kReadWrite,        // must exist
  kReadOnly,         // must exist; writes fail with FailedPrecondition
  kCreate,           // read-write; created (mode 0644) when missing
  kCreateExclusive,  // read-write; AlreadyExists when present
};

struct OpenOptions {
  OpenMode mode = OpenMode::kReadWrite;
  FileKind kind = FileKind::kOther;
};

// I/O counters of one file kind. Monotonic; read with Snapshot().
struct IoCounts {
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  uint64_t writes = 0;
  uint64_t bytes_written = 0;
  uint64_t syncs = 0;      // Sync calls of either kind on files of this kind
  uint64_t dir_syncs = 0;  // SyncDirectory calls (counted under kOther)
  uint64_t truncates = 0;
  // AtomicBatch commits on files of this kind (a sync-like counter: with BatchSync::kDurable
  // a commit is also a flush); the batch's writes count as writes.
  uint64_t atomic_commits = 0;
  uint64_t durable_atomic_commits = 0;  // of which BatchSync::kDurable
};

class IoStats {
 public:
  void AddRead(FileKind k, uint64_t n) {
    at(k).reads.fetch_add(1, std::memory_order_relaxed);
    at(k).bytes_read.fetch_add(n, std::memory_order_relaxed);
  }
  void AddWrite(FileKind k, uint64_t n) {
    at(k).writes.fetch_add(1, std::memory_order_relaxed);
    at(k).bytes_written.fetch_add(n, std::memory_order_relaxed);
  }
  void AddSync(FileKind k) { at(k).syncs.fetch_add(1, std::memory_order_relaxed); }
  void AddDirSync() { at(FileKind::kOther).dir_syncs.fetch_add(1, std::memory_order_relaxed); }
  void AddTruncate(FileKind k) { at(k).truncates.fetch_add(1, std::memory_order_relaxed); }
  void AddAtomicCommit(FileKind k, bool durable) {
    at(k).atomic_commits.fetch_add(1, std::memory_order_relaxed);
    if (durable) at(k).durable_atomic_commits.fetch_add(1, std::memory_order_relaxed);
  }

  IoCounts Snapshot(FileKind k) const;
  IoCounts Total() const;  // all kinds added up

 private:
  struct Atomic {
    std::atomic<uint64_t> reads{0}, bytes_read{0}, writes{0}, bytes_written{0}, syncs{0},
        dir_syncs{0}, truncates{0}, atomic_commits{0}, durable_atomic_commits{0};
  };
  Atomic& at(FileKind k) { return counts_[static_cast<int>(k)]; }
  std::array<Atomic, kNumFileKinds> counts_;
};

// Which mechanism gives a file atomic batches (File::atomic_write_kind()).
enum class AtomicWriteKind {
  kNone,              // none: BeginAtomicBatch is Unimplemented
  kXfsExchangeRange,  // XFS with exchange-range (Linux 6.10+): vfs/xfs_exchange.h
  kF2fs,              // F2FS's atomic write ioctls: vfs/f2fs_atomic.h (untested on a real F2FS)
  kEmulated,          // MemFileSystem and FaultInjectingFileSystem: buffered, applied at once
};
// "none", "xfs-exchange-range", "f2fs-atomic-write", "emulated" (for `jkv info` and stats).
absl::string_view AtomicWriteKindName(AtomicWriteKind kind);

// Unimplemented: "<path>: atomic batch: not supported on this file system[ (<detail>)]; it
// needs XFS with the exchange-range feature on Linux 6.10+, or F2FS". `detail` says what the
// file system is (empty: nothing).
absl::Status AtomicBatchUnsupportedError(const std::string& path, absl::string_view detail);

// How durable an AtomicBatch commit is.
enum class BatchSync {
  kAtomicOnly,  // all or nothing, but a power loss before the file's next flush (a Sync, or a
                // later durable commit) may undo the whole batch
  kDurable,     // all or nothing, and durable when Commit returns
};

// "Write these bytes all or nothing": the writes of a batch reach the file as one change.
// Begin with File::BeginAtomicBatch, Write the pages, Read back what the batch holds (a
// transaction larger than its cache spills into the batch and re-reads its pages from it),
// then Commit or Abort. Nothing of the batch reaches the file before Commit, and after a
// process crash or a power loss the file holds the whole batch or none of it (a file extended
// by a batch may keep its new size, holding zeros, without the batch: see the implementation).
// Destroying a batch that was not committed aborts it.
//
// One batch at a time per File (BeginAtomicBatch fails with FailedPrecondition while one is
// open); across Files and processes the caller lets one writer at a time use batches of a
// database (the database's locks do). A batch must not outlive its File. Not thread-safe:
// one thread uses a batch at a time. Writes to the File outside the batch while it is open
// are the caller's bug: where they overlap the batch's pages, which one wins is unspecified.
class AtomicBatch {
 public:
  virtual ~AtomicBatch() = default;

  // Adds data at offset to the batch (later writes to the same bytes win). Where the file
  // has a block size above 1 (File::atomic_write_block_size()), offset and size must be
  // multiples of it: InvalidArgument naming the sizes otherwise.
  virtual absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) = 0;
  // Reads the file as the batch would leave it: the batch's bytes where it wrote, the file's
  // elsewhere, zeros in a gap between the file's end and a batch write past it. OutOfRange
  // past the end of both.
  virtual absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) = 0;
  // Applies every write of the batch as one change and ends the batch (also when it fails).
  // After a failed Commit the file holds its content from before the batch or, where the
  // failure came after the change (a failed flush of a durable commit), the whole batch;
  // never a part. The caller treats a failed commit like a failed Sync.
  virtual absl::Status Commit(BatchSync sync) = 0;
  // Drops the batch: the file is as before Begin. Ends the batch.
  virtual absl::Status Abort() = 0;

  // Prepares the batch for a commit across files (pager/atomic_across.h, Y1..Y7): makes every
  // write of the batch, and `note` (at most kMaxPreparedNote bytes, the caller's), durable
  // where only this file's recovery looks (XFS: in the shadow, past the batch's range; the
  // emulated batch: a side file `<path>-shadow` written and synced through its file system).
  // Once Prepare returns OK the batch is a *prepared batch*: it survives a process crash and
  // a power loss, File::PreparedBatch() of any File of this path (in any process) returns
  // `note`, and File::CommitPreparedBatch applies it (all or nothing, as Commit) or
  // File::DiscardPreparedBatch drops it. After Prepare the batch takes no more Writes
  // (FailedPrecondition); Read, Commit and Abort work as before: Commit applies the batch and
  // then clears the prepared batch (a crash between the two leaves it: the caller's recovery
  // must tell from the file that it was applied), Abort drops both. Destroying a prepared
  // batch without Commit or Abort leaves the prepared batch in place, as a crash does; so
  // does a failed Commit. Unimplemented where the mechanism has none (F2FS).
  static constexpr size_t kMaxPreparedNote = 16384;
  virtual absl::Status Prepare(absl::string_view note);
};

class File {
 public:
  virtual ~File() = default;

  // Reads exactly out.size() bytes at offset. OutOfRange when the file ends first (the message
  // gives the path, offset and the number of bytes available); callers above vfs/ turn that into
  // DataLoss where a short file means damage.
  virtual absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) = 0;

  // Writes all of data at offset, extending the file when needed (a gap reads as zeros).
  virtual absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) = 0;

  virtual absl::Status Sync(SyncKind kind) = 0;
  virtual absl::Status Truncate(uint64_t size_bytes) = 0;
  virtual absl::StatusOr<uint64_t> Size() = 0;

  // Byte-range locks, owned by this File object (open-file-description semantics: two File
  // objects for one path conflict with each other even inside one process, and closing one
  // never drops the locks of another). Never blocks: returns false when another owner holds a
  // conflicting lock. Taking a lock over a range this File already holds converts it.
  virtual absl::StatusOr<bool> TryLock(uint64_t offset, uint64_t length, LockMode mode) = 0;
  virtual absl::Status Unlock(uint64_t offset, uint64_t length) = 0;
  // Whether TryLock(offset, length, mode) would succeed now, taking and changing nothing (one
  // F_OFD_GETLK). The answer may be stale by the time the caller acts on it.
  virtual absl::StatusOr<bool> CanLock(uint64_t offset, uint64_t length, LockMode mode) = 0;

  // Shared memory: maps region `region` (bytes [region*region_size, (region+1)*region_size)) of
  // this file into memory shared with every other File of the same path, in this process and
  // others, growing the file when needed. The mapping stays valid until the File is destroyed.
  // Unimplemented on file systems without shared memory. Every page of the region has its
  // storage allocated before the call returns (on a POSIX file system that cannot allocate
  // ahead, EOPNOTSUPP, the file stays sparse), so that no store into the mapping faults for
  // want of a block; when the disk has no room the call fails with ResourceExhausted
  // (MappingAllocationError).
  virtual absl::StatusOr<uint8_t*> MapSharedRegion(uint32_t region, size_t region_size) = 0;

  // The read map (vfs/read_map.h, E1..E5): from now on, Read serves bytes below `max_bytes`
  // by a guarded copy out of a read-only shared map of the file instead of pread, falling back
  // to pread past the file's end and on a fault. Call before the File is shared between
  // threads. Unimplemented on file systems without one (the in-memory one, the fault-injecting
  // wrapper): reads then stay preads.
  virtual absl::Status EnableReadMap(uint64_t max_bytes) {
    (void)max_bytes;
    return absl::UnimplementedError(absl::StrCat(path(), ": no read map on this file system"));
  }
  // The same for a file only ever copied from (the WAL's logs): the map hands no page out
  // (read_map() of such a File returns a map whose Bytes gives nothing) and takes no slot of
  // the SIGBUS handler's registry (ReadMap::Create's in_place).
  virtual absl::Status EnableCopyMap(uint64_t max_bytes) {
    (void)max_bytes;
    return absl::UnimplementedError(absl::StrCat(path(), ": no read map on this file system"));
  }
  // The read map's counters (all zero without one).
  virtual ReadMapCounters read_map_counters() const { return {}; }
  // The read map itself, for reads that take pages out of it without a copy (vfs/read_map.h
  // O1, O2, O3); nullptr without one. Lives as long as the File.
  virtual ReadMap* read_map() { return nullptr; }

  // How many directory entries name this file (st_nlink). A database with a second name (a
  // hard link) would get a second -wal, -shm and -journal under it, so the pager refuses one.
  // 0 once the file was deleted while open (the WAL opener checks that the -shm it locked is
  // still the one its path names). 1 on file systems without hard links.
  virtual absl::StatusOr<uint64_t> LinkCount() { return 1; }
  // What names this file whichever path opened it, for ordering files (the locks of a
  // transaction across databases are taken in this order): "<device>:<inode>" on a POSIX file
  // system, the path on file systems without links.
  virtual absl::StatusOr<std::string> Identity() { return path(); }

  // Atomic batches (see AtomicBatch): which mechanism this file has, found when it was opened
  // (kNone by default, and for files opened read-only).
  virtual AtomicWriteKind atomic_write_kind() const { return AtomicWriteKind::kNone; }
  // The unit a batch writes in: offsets and sizes of AtomicBatch::Write must be multiples of
  // it (XFS exchanges whole file system blocks). 1 where any write will do. A database whose
  // page size is below it cannot use batches (a page would carry its block neighbours' bytes).
  virtual uint64_t atomic_write_block_size() const { return 1; }
  // Starts a batch. Unimplemented where the file has none (AtomicBatchUnsupportedError),
  // FailedPrecondition on a read-only File or while another batch of this File is open.
  // FailedPrecondition too while a prepared batch is left (PreparedBatch below): a batch
  // would empty the shadow that holds it before its recovery decided.
  virtual absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginAtomicBatch() {
    return AtomicBatchUnsupportedError(path(), "");
  }
  // A prepared batch (AtomicBatch::Prepare) left by a batch that was neither committed nor
  // aborted (its process died, or its commit failed): its note, or nullopt when there is none
  // (also for a prepared batch that is not whole: a crash during Prepare). Cheap when there is
  // none (one stat of the shadow), since readers ask at every read transaction from idle.
  // nullopt where the file has no batches.
  virtual absl::StatusOr<std::optional<std::string>> PreparedBatch() { return std::nullopt; }
  // Applies the prepared batch as AtomicBatch::Commit would (all or nothing; durable when it
  // returns with kDurable) and then clears it (a crash between leaves it, as above).
  // FailedPrecondition when there is none or a batch of this File is open.
  virtual absl::Status CommitPreparedBatch(BatchSync /*sync*/) {
    return absl::FailedPreconditionError(absl::StrCat(path(), ": no prepared atomic batch"));
  }
  // Drops the prepared batch, if any (not made durable: a power loss may bring it back, so
  // the caller's decision must not depend on its being gone).
  virtual absl::Status DiscardPreparedBatch() { return absl::OkStatus(); }

  virtual const std::string& path() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                                     const OpenOptions& options) = 0;
  // NotFound when the file does not exist.
  virtual absl::Status Delete(const std::string& path) = 0;
  virtual absl::StatusOr<bool> Exists(const std::string& path) = 0;
  // True when path names a directory (used to refuse a directory as a database path).
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;
  // Makes the creates and deletes of entries of the directory `dir_path` durable.
  virtual absl::Status SyncDirectory(const std::string& dir_path) = 0;
  // Gives the file `from` the name `to` atomically (rename(2)): `to`, replaced if it exists,
  // names either its old file or `from`'s, never neither. Durable once SyncDirectory of the
  // directory has returned. Both names in one directory (the only use: a backup's temporary
  // file becoming the backup). Unimplemented on file systems that cannot.
  virtual absl::Status Rename(const std::string& from, const std::string& /*to*/) {
    return absl::UnimplementedError(absl::StrCat(from, ": rename: not supported here"));
  }
  // As Rename, but only to a free name: when `to` exists (a file or a directory) it fails with
  // AlreadyExists naming both names and changes nothing. The check and the rename are one
  // step (renameat2 RENAME_NOREPLACE), so a file another process creates at `to` after any
  // earlier check is never replaced. Where the file system refuses that flag, a link(2) of
  // `to` then an unlink(2) of `from`: a crash between them leaves both names on the file
  // (`to` still never names neither file nor another one). Unimplemented where unsupported.
  virtual absl::Status RenameNoReplace(const std::string& from, const std::string& /*to*/) {
    return absl::UnimplementedError(
        absl::StrCat(from, ": rename without replacing: not supported here"));
  }
  // `path` with every symbolic link in its last component followed (the target of a link that
  // names a missing file too), so that side files named after the result sit next to the file
  // itself whichever name it was opened by; `path` unchanged when it is not a link. Links in
  // the directory part are left: they reach the same directory, and so the same side files.
  // The identity on file systems without links.
  virtual absl::StatusOr<std::string> ResolveLinks(const std::string& path) { return path; }

  // The I/O counters of every file this file system opened.
  IoStats& stats() { return stats_; }

 private:
  IoStats stats_;
};

// The directory part of a path ("." when the path has no slash).
std::string DirName(const std::string& path);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_VFS_H_
