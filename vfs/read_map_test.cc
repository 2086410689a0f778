// Tests of the read map (vfs/read_map.h, E3..E5, O1, O2, O3) on the real kernel: reads through the map
// equal preads, the file grows under the map, a file cut by another descriptor under the map
// reads as OutOfRange (a SIGBUS caught, not a crash), and a SIGBUS outside a guarded copy still
// takes the default action.
#include "vfs/read_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/posix_fs.h"

namespace journalkv::vfs {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;  // read_map.cc: no faults taken under TSan
#else
constexpr bool kTsan = false;
#endif

constexpr uint64_t kPage = 4096;

std::vector<uint8_t> Pattern(uint64_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + i / 4096);
  return v;
}

class ReadMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(dir_.path(), "/f.db");
    auto f = fs_.Open(path_, {OpenMode::kCreate, FileKind::kDatabase});
    JKV_ASSERT_OK(f.status());
    file_ = std::move(*f);
  }
  ScopedTempDir dir_;
  PosixFileSystem fs_;
  std::string path_;
  std::unique_ptr<File> file_;
};

TEST_F(ReadMapTest, ReadsThroughTheMapEqualTheFileAndFollowItsGrowth) {
  const std::vector<uint8_t> data = Pattern(4 * kPage, 3);
  JKV_ASSERT_OK(file_->Write(0, data));
  JKV_ASSERT_OK(file_->EnableReadMap(1 << 20));
  std::vector<uint8_t> out(kPage);
  JKV_ASSERT_OK(file_->Read(2 * kPage, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), data.data() + 2 * kPage, kPage));
  EXPECT_EQ(file_->read_map_counters().copies, 1u);

  // Another descriptor appends: the map reads the new page without a remap (E3).
  auto other = fs_.Open(path_, {OpenMode::kReadWrite, FileKind::kDatabase});
  JKV_ASSERT_OK(other.status());
  const std::vector<uint8_t> more = Pattern(kPage, 99);
  JKV_ASSERT_OK((*other)->Write(4 * kPage, more));
  JKV_ASSERT_OK(file_->Read(4 * kPage, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), more.data(), kPage));
  // An overwrite by the other descriptor is seen at the next read (E1).
  JKV_ASSERT_OK((*other)->Write(0, more));
  JKV_ASSERT_OK(file_->Read(0, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), more.data(), kPage));
  EXPECT_EQ(file_->read_map_counters().copies, 3u);

  // Past the end: OutOfRange as without the map (E4), and past the map: pread.
  EXPECT_TRUE(absl::IsOutOfRange(file_->Read(5 * kPage, absl::MakeSpan(out))));
  std::vector<uint8_t> tail(10);
  JKV_ASSERT_OK(file_->Read(5 * kPage - 10, absl::MakeSpan(tail)));
  EXPECT_EQ(0, std::memcmp(tail.data(), more.data() + kPage - 10, 10));
}

TEST_F(ReadMapTest, ReadsPastTheMapGoToPread) {
  const std::vector<uint8_t> data = Pattern(4 * kPage, 5);
  JKV_ASSERT_OK(file_->Write(0, data));
  JKV_ASSERT_OK(file_->EnableReadMap(2 * kPage));
  std::vector<uint8_t> out(kPage);
  JKV_ASSERT_OK(file_->Read(3 * kPage, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), data.data() + 3 * kPage, kPage));
  EXPECT_EQ(file_->read_map_counters().copies, 0u);
  EXPECT_EQ(file_->read_map_counters().fallbacks, 1u);
}

TEST_F(ReadMapTest, AFileCutByAnotherDescriptorFaultsIntoOutOfRange) {
  const std::vector<uint8_t> data = Pattern(8 * kPage, 9);
  JKV_ASSERT_OK(file_->Write(0, data));
  JKV_ASSERT_OK(file_->EnableReadMap(1 << 20));
  std::vector<uint8_t> out(kPage);
  JKV_ASSERT_OK(file_->Read(6 * kPage, absl::MakeSpan(out)));  // known size: 8 pages
  // Cut by someone else (not this File's Truncate, which would lower the known size).
  const int fd = ::open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2 * kPage), 0);
  ::close(fd);
  const absl::Status s = file_->Read(6 * kPage, absl::MakeSpan(out));
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(file_->read_map_counters().faults, kTsan ? 0u : 1u);
  // Below the cut the file still reads, through the map again.
  JKV_ASSERT_OK(file_->Read(kPage, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), data.data() + kPage, kPage));
  // Grown back, the pages read again.
  JKV_ASSERT_OK(file_->Write(6 * kPage, absl::MakeSpan(data).subspan(6 * kPage, kPage)));
  JKV_ASSERT_OK(file_->Read(6 * kPage, absl::MakeSpan(out)));
  EXPECT_EQ(0, std::memcmp(out.data(), data.data() + 6 * kPage, kPage));
  EXPECT_EQ(file_->read_map_counters().faults, kTsan ? 0u : 1u);
}

// O1, O2, O3: a page handed out of the map (Bytes) whose file was cut by someone else reads zeros
// instead of killing the process, and the map counts the damage; Repair maps the file back,
// and the page reads the file's bytes again once it is whole.
TEST_F(ReadMapTest, APageHandedOutOfACutFileReadsZerosCountsDamageAndIsRepaired) {
  const std::vector<uint8_t> data = Pattern(8 * kPage, 11);
  JKV_ASSERT_OK(file_->Write(0, data));
  JKV_ASSERT_OK(file_->EnableReadMap(1 << 20));
  ReadMap* map = file_->read_map();
  ASSERT_NE(map, nullptr);
  const uint8_t* page6 = map->Bytes(6 * kPage, kPage);
  ASSERT_NE(page6, nullptr);
  EXPECT_EQ(0, std::memcmp(page6, data.data() + 6 * kPage, kPage));
  EXPECT_EQ(map->Bytes(8 * kPage, kPage), nullptr);      // past the file (E4)
  EXPECT_EQ(map->Bytes((1 << 20) - 10, kPage), nullptr);  // past the map
  EXPECT_EQ(map->damage(), 0u);
  const int fd = ::open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2 * kPage), 0);
  // The access faults (SIGBUS) and reads zeros (O1); the process goes on.
  volatile const uint8_t* v = page6;
  uint32_t sum = 0;
  for (uint64_t i = 0; i < kPage; i += 64) sum += v[i];
  EXPECT_EQ(sum, 0u);
  EXPECT_EQ(map->damage(), 1u);
  EXPECT_EQ(map->counters().damage, 1u);
  // Known size dropped (O3): nothing is handed out past the cut.
  EXPECT_EQ(map->Bytes(6 * kPage, kPage), nullptr);
  ASSERT_NE(map->Bytes(kPage, kPage), nullptr);
  // Whole again, and repaired: the same address reads the file.
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  ::close(fd);
  EXPECT_EQ(0u, map->repairs());
  map->Repair();
  EXPECT_EQ(1u, map->repairs());
  ASSERT_EQ(map->Bytes(6 * kPage, kPage), page6);
  EXPECT_EQ(0, std::memcmp(page6, data.data() + 6 * kPage, kPage));
  EXPECT_EQ(map->damage(), 1u);
}

// A map only copied from (File::EnableCopyMap: the WAL's logs) reads like the other but hands
// no page out, and takes no slot of the handler's registry: with more such maps alive than the
// registry has slots, a map that hands pages out still gets its fault answered with zeros (O1)
// instead of the default action (which would end this test's process).
TEST_F(ReadMapTest, CopyOnlyMapsHandNothingOutAndLeaveTheRegistryToMapsThatDo) {
  const std::vector<uint8_t> data = Pattern(8 * kPage, 21);
  JKV_ASSERT_OK(file_->Write(0, data));
  std::vector<std::unique_ptr<File>> copiers;
  std::vector<uint8_t> out(kPage);
  for (int i = 0; i < 300; ++i) {  // more than read_map.cc's 256 registry slots
    auto f = fs_.Open(path_, {OpenMode::kReadOnly, FileKind::kWal});
    JKV_ASSERT_OK(f.status());
    JKV_ASSERT_OK((*f)->EnableCopyMap(1 << 20));
    copiers.push_back(std::move(*f));
  }
  for (auto& f : copiers) {
    JKV_ASSERT_OK(f->Read(3 * kPage, absl::MakeSpan(out)));
    ASSERT_EQ(0, std::memcmp(out.data(), data.data() + 3 * kPage, kPage));
    ASSERT_EQ(f->read_map_counters().copies, 1u);
    ASSERT_NE(f->read_map(), nullptr);
    ASSERT_EQ(f->read_map()->Bytes(3 * kPage, kPage), nullptr);  // nothing handed out
  }
  JKV_ASSERT_OK(file_->EnableReadMap(1 << 20));
  ReadMap* map = file_->read_map();
  ASSERT_NE(map, nullptr);
  const uint8_t* page6 = map->Bytes(6 * kPage, kPage);
  ASSERT_NE(page6, nullptr);
  const int fd = ::open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2 * kPage), 0);
  ::close(fd);
  volatile const uint8_t* v = page6;
  uint32_t sum = 0;
  for (uint64_t i = 0; i < kPage; i += 64) sum += v[i];
  EXPECT_EQ(sum, 0u);
  EXPECT_EQ(map->damage(), 1u);
  // The copiers' reads past the cut go to pread: OutOfRange, as without a map (E4, E5).
  EXPECT_TRUE(absl::IsOutOfRange(copiers[0]->Read(3 * kPage, absl::MakeSpan(out))));
}

TEST_F(ReadMapTest, GuardedCopyReportsAFaultAndLeavesTheThreadUsable) {
  if (kTsan) GTEST_SKIP() << "TSan does not follow a siglongjmp out of a signal handler";
  JKV_ASSERT_OK(file_->Write(0, Pattern(kPage, 1)));
  const int fd = ::open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, 4 * kPage, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::vector<uint8_t> out(kPage);
  const auto* base = static_cast<const uint8_t*>(p);
  EXPECT_TRUE(GuardedCopy(out.data(), base, kPage));
  for (int i = 0; i < 3; ++i) {  // a second fault after the first: SIGBUS was not left blocked
    EXPECT_FALSE(GuardedCopy(out.data(), base + 2 * kPage, kPage));
  }
  EXPECT_TRUE(GuardedCopy(out.data(), base, kPage));
  ::munmap(p, 4 * kPage);
  ::close(fd);
}

TEST_F(ReadMapTest, ASigbusOutsideAGuardedCopyKeepsTheDefaultAction) {
  if (kTsan) GTEST_SKIP() << "TSan does not follow a siglongjmp out of a signal handler";
  JKV_ASSERT_OK(file_->Write(0, Pattern(kPage, 1)));
  const int fd = ::open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* p = ::mmap(nullptr, 4 * kPage, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::vector<uint8_t> out(kPage);
  ASSERT_FALSE(GuardedCopy(out.data(), static_cast<const uint8_t*>(p) + 2 * kPage, kPage));
  EXPECT_DEATH(
      {
        volatile const uint8_t* q = static_cast<const uint8_t*>(p) + 2 * kPage;
        (void)*q;
      },
      "");
  ::munmap(p, 4 * kPage);
  ::close(fd);
}

}  // namespace
}  // namespace journalkv::vfs
