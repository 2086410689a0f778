// file_system_testing.cc: test environments and helpers (see file_system_testing.h).
//
// Thread-safety: see file_system_testing.h.
#include "vfs/file_system_testing.h"

#include <stdlib.h>

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
