// file_system_testing.cc: test environments and helpers (see file_system_testing.h).
//
// Thread-safety: see file_system_testing.h.
#include "vfs/file_system_testing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv::vfs {
namespace {

class PosixEnv final : public FileSystemEnv {
 public:
  FileSystem& fs() override { return fs_; }
  const std::string& dir() const override { return dir_.path(); }

 private:
  ScopedTempDir dir_;
  PosixFileSystem fs_;
};

class MemEnv final : public FileSystemEnv {
 public:
  MemEnv() { fs_.MakeDirectoryForTesting(dir_); }
  FileSystem& fs() override { return fs_; }
  const std::string& dir() const override { return dir_; }

 private:
  const std::string dir_ = "/mem";
  MemFileSystem fs_;
};

}  // namespace

ScopedTempDir::ScopedTempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/jkv_vfs_XXXXXX");
  // A test cannot run without its directory, and nothing outside the test controls this.
  JKV_CHECK(::mkdtemp(pattern.data()) != nullptr);
  path_ = std::move(pattern);
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ignored;  // best effort: the test's result does not depend on the cleanup
  std::filesystem::remove_all(path_, ignored);
}

absl::StatusOr<std::unique_ptr<ScopedTmpfs>> ScopedTmpfs::Mount(uint64_t bytes) {
  std::unique_ptr<ScopedTmpfs> t(new ScopedTmpfs());
  std::string pattern = "/tmp/jkv_tmpfs_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("mkdtemp: ", ::strerror(errno)));
  }
  t->path_ = std::move(pattern);
  const std::string options = absl::StrCat("size=", bytes);
  if (::mount("tmpfs", t->path().c_str(), "tmpfs", 0, options.c_str()) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot mount a tmpfs on ", t->path(), ": ", ::strerror(errno)));
  }
  t->mounted_ = true;
  return t;
}

ScopedTmpfs::~ScopedTmpfs() {
  // Best effort, as ScopedTempDir's.
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

absl::StatusOr<uint64_t> ScopedTmpfs::Fill(const std::string& name) {
  const std::string file = absl::StrCat(path(), "/", name);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat(file, ": open: ", ::strerror(errno)));
  static const char kChunk[4096] = {1};
  uint64_t written = 0;
  int err = 0;
  while (err == 0) {
    const ssize_t n = ::write(fd, kChunk, sizeof kChunk);
    if (n > 0) written += static_cast<uint64_t>(n);
    if (n < 0 && errno != EINTR) err = errno;
  }
  ::close(fd);
  if (err != ENOSPC) {
    return absl::InternalError(absl::StrCat(file, ": write: ", ::strerror(err)));
  }
  return written;
}

absl::StatusOr<uint64_t> ScopedTmpfs::FreeBytes() const {
  struct statvfs st;
  if (::statvfs(path_.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat(path_, ": statvfs: ", ::strerror(errno)));
  }
  return uint64_t{st.f_bavail} * st.f_frsize;
}

absl::Status ScopedTmpfs::LeaveFree(const std::string& name, uint64_t bytes) {
  const std::string file = absl::StrCat(path(), "/", name);
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat(file, ": open: ", ::strerror(errno)));
  absl::Status s;
  struct stat st;
  absl::StatusOr<uint64_t> free = FreeBytes();
  if (!free.ok()) {
    s = free.status();
  } else if (::fstat(fd, &st) != 0) {
    s = absl::InternalError(absl::StrCat(file, ": fstat: ", ::strerror(errno)));
  } else {
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t want = *free >= bytes ? size + (*free - bytes)
                                         : size - std::min<uint64_t>(size, bytes - *free);
    int r = 0;
    if (want > size) {
      r = ::fallocate(fd, 0, 0, static_cast<off_t>(want));
    } else if (want < size) {
      r = ::ftruncate(fd, static_cast<off_t>(want));
    }
    if (r != 0) {
      s = absl::InternalError(absl::StrCat(file, ": resize to ", want, ": ", ::strerror(errno)));
    }
  }
  ::close(fd);
  return s;
}

std::string FileSystemEnv::Path(absl::string_view name) const {
  return absl::StrCat(dir(), "/", name);
}

std::unique_ptr<FileSystemEnv> MakePosixEnv() { return std::make_unique<PosixEnv>(); }
std::unique_ptr<FileSystemEnv> MakeMemEnv() { return std::make_unique<MemEnv>(); }

absl::Status WriteString(File& file, uint64_t offset, absl::string_view bytes) {
  return file.Write(
      offset, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

absl::StatusOr<std::string> ReadString(File& file, uint64_t offset, size_t length) {
  std::string out(length, '\0');
  JKV_RETURN_IF_ERROR(
      file.Read(offset, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size())));
  return out;
}

absl::StatusOr<std::string> ReadFileToString(FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       fs.Open(path, OpenOptions{OpenMode::kReadOnly, FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  return ReadString(*file, 0, size);
}

absl::Status WriteStringToFile(FileSystem& fs, const std::string& path, absl::string_view content) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       fs.Open(path, OpenOptions{OpenMode::kCreate, FileKind::kOther}));
  JKV_RETURN_IF_ERROR(file->Truncate(0));
  return WriteString(*file, 0, content);
}

}  // namespace journalkv::vfs
