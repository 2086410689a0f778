// vfs::ScratchFs: a throwaway file system made for a test or a benchmark run, so that the same
// work can run on XFS and ext4 side by side on any Linux machine where root may attach loop
// devices: an image file (sparse, `size_mb`) made with mkfs, attached with
// `losetup --direct-io=on` (so the loop device writes to the disk below without a second page
// cache, and its flushes reach it) and mounted. Everything is undone by the destructor (umount,
// losetup -d, the image and the folder removed), also after a failure.
//
//   absl::StatusOr<std::unique_ptr<ScratchFs>> xfs = ScratchFs::Make(ScratchFs::Kind::kXfs);
//   ... databases under (*xfs)->mount() ...
//
// XFS is made with the exchange-range feature (journal mode atomic's mechanism, Linux 6.10+).
// Debian 12's xfsprogs (6.1) cannot set it (`mkfs.xfs -i exchange=1` needs 6.10), so Make sets
// the feature bit in the new image's superblock itself (SetExchangeRangeFeature): fine for a
// scratch image, not a way to treat a file system that holds data (docs/atomic.md says how).
//
// Also: DeviceStatPath and DeviceBytesWritten, the bytes a block device has written (its
// sectors written, /sys/dev/block/MAJ:MIN/stat), for any directory on a block device: what
// reaches the disk, the file system's own journal included.
//
// Thread-safety: a ScratchFs is used by one thread; the free functions are safe anywhere.
#ifndef JOURNALKV_VFS_SCRATCH_FS_H_
#define JOURNALKV_VFS_SCRATCH_FS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace journalkv::vfs {

class ScratchFs {
 public:
  enum class Kind {
    kXfs,             // XFS with the exchange-range feature
    kXfsNoExchange,   // XFS as mkfs.xfs makes it here (without the feature)
    kExt4,
  };
  // "xfs", "xfs-noexchange", "ext4"; and back (InvalidArgument naming the choices).
  static absl::string_view KindName(Kind kind);
  static absl::StatusOr<Kind> ParseKind(absl::string_view name);

  // Why a ScratchFs cannot be made here (not root, mkfs/losetup/mount missing), or empty.
  // Make may still fail where the kernel refuses loop devices or mounts (a sandbox).
  static std::string CannotMakeReason(Kind kind);

  // Makes, attaches and mounts a file system of `kind` in a fresh folder under `parent` (not
  // under a test's tmpdir: a test killed before its cleanup would leave a mount there).
  // FailedPrecondition naming the step that failed.
  static absl::StatusOr<std::unique_ptr<ScratchFs>> Make(Kind kind,
                                                         const std::string& parent = "/tmp",
                                                         uint64_t size_mb = 300);
  ~ScratchFs();
  ScratchFs(const ScratchFs&) = delete;
  ScratchFs& operator=(const ScratchFs&) = delete;

  Kind kind() const { return kind_; }
  // The mounted file system's root.
  const std::string& mount() const { return mount_; }
  // The loop device (/dev/loopN).
  const std::string& device() const { return loop_; }

  // Sets the exchange-range feature (incompat bit 0x40) in the primary superblock of the
  // unmounted XFS image `image`, as `xfs_repair -c exchange=1` of xfsprogs 6.10+ would: the
  // big-endian incompat word at byte 216, then the superblock's CRC32C over its sector
  // (sb_sectsize bytes, big-endian at byte 102) with the CRC field zeroed, stored
  // little-endian at byte 224.
  static absl::Status SetExchangeRangeFeature(const std::string& image);

 private:
  explicit ScratchFs(Kind kind) : kind_(kind) {}

  const Kind kind_;
  std::string dir_;     // holds the image and the mount point
  std::string image_;
  std::string mount_;
  std::string loop_;
  bool mounted_ = false;
};

// Whether files made in `dir` (a POSIX folder) get atomic batches (File::atomic_write_kind,
// vfs/vfs.h): journal mode atomic can run there. Makes and removes a probe file.
bool HasAtomicBatches(const std::string& dir);

// For tests and benchmarks that need real atomic batches: `dir` when its file system has them,
// else the mount of a scratch XFS with exchange-range made at the first call and kept for the
// process (removed at its exit; a forked child that _exits leaves it to its parent), else ""
// with *why_not saying why (not root, no loop devices, a kernel before 6.10). Thread-safe.
std::string AtomicBatchFolder(const std::string& dir, std::string* why_not = nullptr);

// The stat file of the block device that holds `path` (/sys/dev/block/MAJ:MIN/stat; a
// partition's has the same layout), or NotFound when it is not on a block device (tmpfs,
// overlay).
absl::StatusOr<std::string> DeviceStatPath(const std::string& path);
// The bytes the device whose stat file is `stat_path` has written since it appeared: its
// sectors written (the 7th field) times 512, whatever its sector size.
absl::StatusOr<uint64_t> DeviceBytesWritten(const std::string& stat_path);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_SCRATCH_FS_H_
