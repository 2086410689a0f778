// Test support for vfs/ and the layers above it: a self-removing temporary directory, the
// environments a FileSystem test runs in (a file system plus an empty directory in it), and
// string helpers for File I/O. Test-only (//vfs:file_system_testing is testonly).
//
// Thread-safety: the helpers are as thread-safe as the File or FileSystem they are given; an
// environment is used by one test at a time.
#ifndef JOURNALKV_VFS_FILE_SYSTEM_TESTING_H_
#define JOURNALKV_VFS_FILE_SYSTEM_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// A fresh directory under $TEST_TMPDIR (or /tmp), removed with its content on destruction.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A tmpfs of `bytes` mounted on a fresh directory /tmp/jkv_tmpfs_XXXXXX, for tests of a full
// disk on the real kernel; unmounted (lazily) and removed on destruction. (Not under
// $TEST_TMPDIR: a test killed before its destructor would leave a mount inside Bazel's tree,
// which then fails every build.) Mount fails (FailedPrecondition naming why) where the process
// may not mount (not root, or a sandbox without the capability): such tests skip with one line.
class ScopedTmpfs {
 public:
  static absl::StatusOr<std::unique_ptr<ScopedTmpfs>> Mount(uint64_t bytes);
  ~ScopedTmpfs();
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;

  const std::string& path() const { return path_; }
  // Fills the mount with file `name` until a write fails with ENOSPC; returns the bytes written.
  absl::StatusOr<uint64_t> Fill(const std::string& name);
  // Grows or shrinks file `name` (fallocate, ftruncate) so that the mount has `bytes` free
  // (rounded down to its 4 KiB pages), whatever the other files hold.
  absl::Status LeaveFree(const std::string& name, uint64_t bytes);
  // The bytes free now.
  absl::StatusOr<uint64_t> FreeBytes() const;

 private:
  ScopedTmpfs() = default;
  std::string path_;
  bool mounted_ = false;
};

// A file system for one test, and an existing, empty directory in it for the test's files.
class FileSystemEnv {
 public:
  virtual ~FileSystemEnv() = default;
  virtual FileSystem& fs() = 0;
  virtual const std::string& dir() const = 0;
  // dir() + "/" + name.
  std::string Path(absl::string_view name) const;
};

// PosixFileSystem in a ScopedTempDir.
std::unique_ptr<FileSystemEnv> MakePosixEnv();
// MemFileSystem with dir() registered through MakeDirectoryForTesting.
std::unique_ptr<FileSystemEnv> MakeMemEnv();

absl::Status WriteString(File& file, uint64_t offset, absl::string_view bytes);
absl::StatusOr<std::string> ReadString(File& file, uint64_t offset, size_t length);
// The whole content of path, read through a read-only File.
absl::StatusOr<std::string> ReadFileToString(FileSystem& fs, const std::string& path);
// Creates or replaces path with content (not synced).
absl::Status WriteStringToFile(FileSystem& fs, const std::string& path, absl::string_view content);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_FILE_SYSTEM_TESTING_H_
