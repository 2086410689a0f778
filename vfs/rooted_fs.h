// RootedFileSystem: the real (POSIX) file system with every path placed under one folder, so
// that a test written for the in-memory file system's absolute paths ("/data/sweep.db") runs
// on real files without changing a path, and a FaultInjectingFileSystem over it models power
// loss and process crashes on files the kernel holds: files that can be memory-mapped (the read
// map, vfs/read_map.h, Options::mmap_size), whose -shm is a real shared mapping and whose locks
// are real OFD locks. The crash sweeps and the schedule explorer use it as their base when the
// map is on (JOURNALKV_TEST_MMAP_SIZE), since the in-memory file system has no map.
//
//  - A path `p` (absolute or not) names `root + "/" + p` on the POSIX file system; File::path()
//    and the paths in error messages are the caller's spelling (the root is taken out of them);
//    RealPath says where a file really is.
//  - Folders are made on demand: an Open that creates a file, a SyncDirectory, a Rename or a
//    MakeDirectory makes the folders above it (mkdir -p), as the in-memory file system's
//    implicit folders exist; IsDirectory is true only for folders that exist.
//  - Sync and SyncDirectory are counted but not made: this file system is for running under
//    FaultInjectingFileSystem, whose model decides what a power loss keeps, and a real flush
//    per sync made a crash sweep on it take minutes a configuration instead of seconds. Nothing
//    written here survives a real power loss for certain.
//  - Everything else is PosixFileSystem's (posix_fs.h), the read map included; the I/O counters
//    (stats()) count what succeeds through this wrapper, as the other file systems do.
//  - ResolveLinks is the identity (no test here makes links under the root).
//
// Thread-safety: as PosixFileSystem. The root folder must outlive the file system; it is not
// removed (tests put it in a ScopedTempDir).
#ifndef JOURNALKV_VFS_ROOTED_FS_H_
#define JOURNALKV_VFS_ROOTED_FS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vfs/posix_fs.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

class RootedFileSystem : public FileSystem {
 public:
  explicit RootedFileSystem(std::string root);  // root: an existing folder
  RootedFileSystem(const RootedFileSystem&) = delete;
  RootedFileSystem& operator=(const RootedFileSystem&) = delete;

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Delete(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status RenameNoReplace(const std::string& from, const std::string& to) override;
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir_path) override;

  // Makes the folder `path` (and those above it).
  absl::Status MakeDirectory(const std::string& path);
  // Where `path` is on the real file system.
  std::string RealPath(const std::string& path) const;
  const std::string& root() const { return root_; }
  // Reads served by the read map (ReadMapCounters::copies) of the Files of this file system
  // destroyed so far: whether a test's reads went through the map.
  uint64_t map_reads_of_closed_files() const { return map_reads_.load(std::memory_order_relaxed); }

 private:
  absl::Status MakeParents(const std::string& path);

  const std::string root_;
  PosixFileSystem posix_;
  std::atomic<uint64_t> map_reads_{0};
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_ROOTED_FS_H_
