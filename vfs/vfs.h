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
#ifndef JOURNALKV_VFS_VFS_H_
#define JOURNALKV_VFS_VFS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

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

  IoCounts Snapshot(FileKind k) const;
  IoCounts Total() const;  // all kinds added up

 private:
  struct Atomic {
    std::atomic<uint64_t> reads{0}, bytes_read{0}, writes{0}, bytes_written{0}, syncs{0},
        dir_syncs{0}, truncates{0};
  };
  Atomic& at(FileKind k) { return counts_[static_cast<int>(k)]; }
  std::array<Atomic, kNumFileKinds> counts_;
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

  // How many directory entries name this file (st_nlink). A database with a second name (a
  // hard link) would get a second -wal, -shm and -journal under it, so the pager refuses one.
  // 0 once the file was deleted while open (the WAL opener checks that the -shm it locked is
  // still the one its path names). 1 on file systems without hard links.
  virtual absl::StatusOr<uint64_t> LinkCount() { return 1; }

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
