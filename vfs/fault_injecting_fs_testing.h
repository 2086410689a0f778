// What the tests of FaultInjectingFileSystem share (fault_injecting_fs_test.cc,
// fault_injecting_fs_faults_test.cc): the file system over MemFileSystem or PosixFileSystem
// as a test environment, and a fixture parameterized by the base.
#ifndef JOURNALKV_VFS_FAULT_INJECTING_FS_TESTING_H_
#define JOURNALKV_VFS_FAULT_INJECTING_FS_TESTING_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"

namespace journalkv::vfs {

inline constexpr OpenOptions kCreate{OpenMode::kCreate, FileKind::kOther};
inline constexpr OpenOptions kReadWrite{OpenMode::kReadWrite, FileKind::kOther};
inline constexpr int kSeeds = 100;

// A FaultInjectingFileSystem over another environment's file system.
class FaultInjectingEnv final : public FileSystemEnv {
 public:
  explicit FaultInjectingEnv(std::unique_ptr<FileSystemEnv> base)
      : base_(std::move(base)), fs_(&base_->fs()) {}
  FaultInjectingFileSystem& fs() override { return fs_; }
  FileSystem& base_fs() { return base_->fs(); }
  const std::string& dir() const override { return base_->dir(); }

 private:
  std::unique_ptr<FileSystemEnv> base_;  // declared first: outlives fs_
  FaultInjectingFileSystem fs_;
};

inline std::unique_ptr<FaultInjectingEnv> MakeFaultOnMemEnv() {
  return std::make_unique<FaultInjectingEnv>(MakeMemEnv());
}
inline std::unique_ptr<FaultInjectingEnv> MakeFaultOnPosixEnv() {
  return std::make_unique<FaultInjectingEnv>(MakePosixEnv());
}

struct BaseParam {
  std::string name;
  std::unique_ptr<FaultInjectingEnv> (*make)();
};
inline void PrintTo(const BaseParam& param, std::ostream* os) { *os << param.name; }

class FaultInjectingFsTest : public ::testing::TestWithParam<BaseParam> {
 protected:
  void SetUp() override { env_ = GetParam().make(); }

  FaultInjectingFileSystem& fs() { return env_->fs(); }
  std::string Path(absl::string_view name) const { return env_->Path(name); }

  // Creates or replaces name with content and makes both content and name durable.
  absl::Status WriteDurably(absl::string_view name, absl::string_view content) {
    JKV_RETURN_IF_ERROR(WriteStringToFile(fs(), Path(name), content));
    JKV_ASSIGN_OR_RETURN(auto file, fs().Open(Path(name), kReadWrite));
    JKV_RETURN_IF_ERROR(file->Sync(SyncKind::kData));
    return fs().SyncDirectory(env_->dir());
  }
  // Writes without any sync through a File that is closed again.
  absl::Status WriteUnsynced(absl::string_view name, uint64_t offset, absl::string_view bytes) {
    JKV_ASSIGN_OR_RETURN(auto file, fs().Open(Path(name), kCreate));
    return WriteString(*file, offset, bytes);
  }
  absl::StatusOr<std::string> Content(absl::string_view name) {
    return ReadFileToString(fs(), Path(name));
  }
  bool Exists(absl::string_view name) {
    absl::StatusOr<bool> exists = fs().Exists(Path(name));
    EXPECT_THAT(exists, ::journalkv::testing::IsOk());
    return exists.value_or(false);
  }

  std::unique_ptr<FaultInjectingEnv> env_;
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_FAULT_INJECTING_FS_TESTING_H_
