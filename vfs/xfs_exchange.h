// The atomic batch of PosixFileSystem on XFS with the exchange-range feature (Linux 6.10+), and
// how PosixFileSystem finds which atomic batch a file has (DetectAtomicWrites).
//
// The batch (AtomicWriteKind::kXfsExchangeRange), for a database file <db>:
//  1. Begin opens (creating it) the shadow file `<db>-shadow` in the same directory. A shadow
//     that is not empty was left by a process that died mid-batch (or by a commit whose final
//     truncate failed): it is truncated to 0, never applied.
//  2. Write puts the pages into the shadow at their own offsets (a sparse file: only the
//     batch's blocks are allocated). Offsets and sizes must be whole file system blocks
//     (InvalidArgument naming both sizes otherwise): an exchange moves whole blocks, so a
//     smaller write would carry its block neighbours' stale bytes into the database. Read
//     takes the batch's pages from the shadow and the others from the database.
//  3. Commit is one ioctl(db, XFS_IOC_EXCHANGE_RANGE) over [lowest, end) of the batch's
//     writes with XFS_EXCHANGE_RANGE_FILE1_WRITTEN: only the shadow's written blocks change
//     places with the database's. XFS logs the exchange as an intent that log recovery
//     finishes, so after a crash it happened whole or not at all. The range must lie within
//     both files: the shadow reaches `end` through the batch's writes; a batch that writes past
//     the database's end extends the database first (ftruncate), so a crash between the two
//     leaves the database longer, the new blocks reading as zeros, without the batch (the
//     pager's page count, in page 1, says which pages are the database's). With
//     BatchSync::kDurable the flag XFS_EXCHANGE_RANGE_DSYNC makes the call durable when it
//     returns; without it the exchange is atomic but may be undone whole by a power loss
//     until XFS's next log force (a later Sync of the file, or a later durable commit).
//  4. After the exchange the shadow holds the database's old blocks: it is truncated to 0.
//     The empty shadow file stays next to the database (removing it is the caller's choice).
// One writer at a time per database is the caller's (the database's locks); two batches of
// one database at once would share the shadow. The shadow must be on the database's file
// system (it is, being in its directory; a bind mount could split them: FailedPrecondition).
// Limits: Linux 6.10+ and an XFS made with `mkfs.xfs -i exchange=1` (xfsprogs 6.10+), or
// given the feature by `xfs_repair -c exchange=1`. The exchange needs no reflink.
//
// Thread-safety: a batch is used by one thread at a time (vfs.h); DetectAtomicWrites is
// thread-safe.
#ifndef JOURNALKV_VFS_XFS_EXCHANGE_H_
#define JOURNALKV_VFS_XFS_EXCHANGE_H_

#include <sys/ioctl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// The XFS exchange-range UAPI of Linux 6.10 (include/uapi/linux/xfs_fs.h there; Debian 12's
// headers predate it): struct xfs_exchange_range and XFS_IOC_EXCHANGE_RANGE.
struct XfsExchangeRange {
  int32_t file1_fd;       // the file whose range moves into the file the ioctl is called on
  uint32_t pad;           // must be zero
  uint64_t file1_offset;  // bytes
  uint64_t file2_offset;  // bytes, in the ioctl's file
  uint64_t length;        // bytes
  uint64_t flags;         // kXfsExchangeRange* below
};
static_assert(sizeof(XfsExchangeRange) == 40, "the kernel's struct xfs_exchange_range");
inline constexpr unsigned long kXfsIocExchangeRange = _IOW('X', 129, XfsExchangeRange);
inline constexpr uint64_t kXfsExchangeRangeToEof = uint64_t{1} << 0;
inline constexpr uint64_t kXfsExchangeRangeDsync = uint64_t{1} << 1;
inline constexpr uint64_t kXfsExchangeRangeDryRun = uint64_t{1} << 2;
inline constexpr uint64_t kXfsExchangeRangeFile1Written = uint64_t{1} << 3;

// struct xfs_fsop_geom (version 5, 256 bytes) and XFS_IOC_FSGEOMETRY, for its flag
// XFS_FSOP_GEOM_FLAGS_EXCHANGE_RANGE (Linux 6.10).
struct XfsFsopGeom {
  uint32_t blocksize;
  uint32_t rtextsize, agblocks, agcount, logblocks, sectsize, inodesize, imaxpct;
  uint64_t datablocks, rtblocks, rtextents, logstart;
  uint8_t uuid[16];
  uint32_t sunit, swidth;
  int32_t version;
  uint32_t flags;
  uint32_t logsectsize, rtsectsize, dirblocksize, logsunit, sick, checked;
  uint64_t reserved[17];
};
static_assert(sizeof(XfsFsopGeom) == 256, "the kernel's struct xfs_fsop_geom (v5)");
inline constexpr unsigned long kXfsIocFsGeometry = _IOR('X', 126, XfsFsopGeom);
inline constexpr uint32_t kXfsGeomFlagExchangeRange = uint32_t{1} << 24;

// What a file's file system offers for atomic batches.
struct AtomicWriteSupport {
  AtomicWriteKind kind = AtomicWriteKind::kNone;
  uint64_t block_size = 1;  // AtomicBatch::Write's unit
  std::string detail;       // kNone: what the file system is, for the error message
};
// Asks the file system of the open file `fd` without changing anything: fstatfs, and on XFS
// the geometry's exchange-range flag. Never fails: a failed probe is kNone, saying why.
AtomicWriteSupport DetectAtomicWrites(int fd);

// Starts a kXfsExchangeRange batch of `db` (whose descriptor is db_fd, open read-write).
// `open` is db's one-batch flag, already set by the caller; the batch clears it when it ends.
// Writes and commits count into stats under `kind`.
absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginXfsExchangeBatch(File* db, int db_fd,
                                                                   uint64_t block_size,
                                                                   IoStats* stats, FileKind kind,
                                                                   std::atomic<bool>* open);

// The shadow file of the database at `db_path`.
std::string ShadowPath(const std::string& db_path);

// The prepared batch of a kXfsExchangeRange file (AtomicBatch::Prepare, vfs.h): the batch's
// blocks in the shadow at their own offsets, then a trailer past them (xfs_exchange.cc) with
// the note and the exchanged range [lowest, end).
struct PreparedTrailer {
  std::string note;
  uint64_t lowest = 0;
  uint64_t end = 0;
};
// The whole trailer ending the shadow open as `shadow_fd`, or nullopt.
absl::StatusOr<std::optional<PreparedTrailer>> ReadPreparedTrailer(int shadow_fd,
                                                                   const std::string& shadow_path,
                                                                   uint64_t block_size);
// File::PreparedBatch, CommitPreparedBatch and DiscardPreparedBatch of a kXfsExchangeRange
// file (PosixFile's).
absl::StatusOr<std::optional<std::string>> XfsPreparedNote(const std::string& db_path,
                                                           uint64_t block_size);
absl::Status CommitXfsPreparedBatch(File* db, int db_fd, uint64_t block_size, IoStats* stats,
                                    FileKind kind, BatchSync sync);
absl::Status DiscardXfsPreparedBatch(const std::string& db_path);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_XFS_EXCHANGE_H_
