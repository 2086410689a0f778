// RootedFileSystem (rooted_fs.h): the conformance suite of every file system, the caller's
// paths kept, and the read map reachable through it and through the fault-injecting file system
// over it (the crash sweeps' base when the map is on).
#include "vfs/rooted_fs.h"

#include <filesystem>
#include <memory>
#include <string>

#include "base/check.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_conformance.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"

namespace journalkv::vfs {
namespace {

class RootedEnv : public FileSystemEnv {
 public:
  RootedEnv() : fs_(temp_.path()) { JKV_CHECK(fs_.MakeDirectory(dir_).ok()); }
  FileSystem& fs() override { return fs_; }
  const std::string& dir() const override { return dir_; }

 private:
  ScopedTempDir temp_;
  RootedFileSystem fs_;
  std::string dir_ = "/data";
};

std::unique_ptr<FileSystemEnv> MakeRootedEnv() { return std::make_unique<RootedEnv>(); }

INSTANTIATE_TEST_SUITE_P(Rooted, FileSystemConformanceTest,
                         ::testing::Values(FileSystemEnvFactory{"Rooted", &MakeRootedEnv}),
                         FileSystemEnvFactoryName);

constexpr OpenOptions kCreateDb{OpenMode::kCreate, FileKind::kDatabase};

TEST(RootedFileSystemTest, PathsAreTheCallersAndFilesLiveUnderTheRoot) {
  ScopedTempDir temp;
  RootedFileSystem fs(temp.path());
  auto file = fs.Open("/a/b/x.db", kCreateDb);  // the folders are made
  JKV_ASSERT_OK(file.status());
  EXPECT_EQ((*file)->path(), "/a/b/x.db");
  JKV_ASSERT_OK(WriteString(**file, 0, "hello"));
  EXPECT_TRUE(std::filesystem::exists(temp.path() + "/a/b/x.db"));
  EXPECT_EQ(fs.RealPath("/a/b/x.db"), temp.path() + "/a/b/x.db");
  EXPECT_FALSE(std::filesystem::exists("/a/b/x.db"));
  auto dir = fs.IsDirectory("/a/b");
  JKV_ASSERT_OK(dir.status());
  EXPECT_TRUE(*dir);
  JKV_ASSERT_OK(fs.SyncDirectory("/a/b"));
  JKV_ASSERT_OK(fs.Rename("/a/b/x.db", "/a/c/y.db"));
  auto exists = fs.Exists("/a/c/y.db");
  JKV_ASSERT_OK(exists.status());
  EXPECT_TRUE(*exists);
}

// The map is the POSIX file's: reads below the file's size are copies out of it, through the
// rooted file and through a FaultInjectingFileSystem over the rooted one; over the in-memory
// file system there is none.
TEST(RootedFileSystemTest, TheReadMapEngagesThroughTheFaultInjectingFileSystem) {
  ScopedTempDir temp;
  RootedFileSystem rooted(temp.path());
  FaultInjectingFileSystem fault(&rooted);
  auto file = fault.Open("/data/m.db", kCreateDb);
  JKV_ASSERT_OK(file.status());
  const std::string page(4096, 'p');
  JKV_ASSERT_OK(WriteString(**file, 0, page));
  JKV_ASSERT_OK((*file)->EnableReadMap(1 << 20));
  auto read = ReadString(**file, 0, page.size());
  JKV_ASSERT_OK(read.status());
  EXPECT_EQ(*read, page);
  EXPECT_EQ((*file)->read_map_counters().copies, 1u);
  EXPECT_EQ(rooted.map_reads_of_closed_files(), 0u);
  // Injected read errors still fail the read (before the map is reached).
  fault.FailNth(FaultOp::kRead, 1, EIO);
  EXPECT_FALSE(ReadString(**file, 0, 16).ok());
  // A power loss kills the File (and its map) like any other.
  JKV_ASSERT_OK(fault.SimulatePowerLoss(1));
  EXPECT_FALSE(ReadString(**file, 0, 16).ok());
  file->reset();
  EXPECT_EQ(rooted.map_reads_of_closed_files(), 1u);

  MemFileSystem mem;
  FaultInjectingFileSystem over_mem(&mem);
  auto in_memory = over_mem.Open("/m.db", kCreateDb);
  JKV_ASSERT_OK(in_memory.status());
  EXPECT_TRUE(absl::IsUnimplemented((*in_memory)->EnableReadMap(1 << 20)));
  EXPECT_EQ((*in_memory)->read_map_counters().copies, 0u);
}

}  // namespace
}  // namespace journalkv::vfs
