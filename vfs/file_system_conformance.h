// The FileSystem conformance suite: the behaviour every vfs/ file system shares (POSIX
// semantics, as PosixFileSystem shows them), written once as a parameterized gtest suite. Each
// file system's test binary links //vfs:file_system_conformance and instantiates it:
//
//   INSTANTIATE_TEST_SUITE_P(Mem, FileSystemConformanceTest,
//                            ::testing::Values(FileSystemEnvFactory{"Mem", &MakeMemEnv}),
//                            FileSystemEnvFactoryName);
//
// Covers: read/write/size/truncate, short reads (OutOfRange), open modes, create-exclusive,
// delete (with open handles), rename (replacing, and only to a free name), read-only files,
// directories, byte-range locks between two Files of one path, shared regions, I/O counters,
// large transfers and concurrent use.
//
// Thread-safety: test-only; each test gets its own environment.
#ifndef JOURNALKV_VFS_FILE_SYSTEM_CONFORMANCE_H_
#define JOURNALKV_VFS_FILE_SYSTEM_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

struct FileSystemEnvFactory {
  std::string name;  // a gtest name: letters, digits and underscores
  std::function<std::unique_ptr<FileSystemEnv>()> make;
};

inline void PrintTo(const FileSystemEnvFactory& factory, std::ostream* os) { *os << factory.name; }

inline std::string FileSystemEnvFactoryName(
    const ::testing::TestParamInfo<FileSystemEnvFactory>& info) {
  return info.param.name;
}

class FileSystemConformanceTest : public ::testing::TestWithParam<FileSystemEnvFactory> {
 protected:
  void SetUp() override { env_ = GetParam().make(); }

  FileSystem& fs() { return env_->fs(); }
  std::string Path(absl::string_view name) const { return env_->Path(name); }

  std::unique_ptr<FileSystemEnv> env_;
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_FILE_SYSTEM_CONFORMANCE_H_
