// What the tests of WalIndex share (wal_index_test.cc, wal_index_hash_test.cc): the backends
// they run over (the heap, and the -shm file of the in-memory and the POSIX file systems), a
// fixture that opens connections on them, and the reference answer of a lookup.
#ifndef JOURNALKV_SHM_WAL_INDEX_TESTING_H_
#define JOURNALKV_SHM_WAL_INDEX_TESTING_H_

#include <algorithm>
#include <cstring>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"
#include "vfs/vfs.h"

namespace journalkv::shm::testing {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;
using vfs::LockMode;

constexpr vfs::OpenOptions kShmOpen{vfs::OpenMode::kCreate, vfs::FileKind::kShm};
constexpr uint32_t kB = kFramesPerBlock;

enum class Backend { kMem, kPosix, kHeap };

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kMem:
      return "Mem";
    case Backend::kPosix:
      return "Posix";
    case Backend::kHeap:
      return "Heap";
  }
  return "Unknown";
}

// The newest frame <= mx of the log whose frame f holds pages[f - 1], 0 when none: what Lookup
// must return.
inline uint32_t Expected(const std::vector<uint32_t>& pages, uint32_t page, uint32_t mx) {
  for (uint32_t f = std::min<uint32_t>(mx, pages.size()); f > 0; --f) {
    if (pages[f - 1] == page) return f;
  }
  return 0;
}

// The one page number in [1, kHashSlots] whose probe sequence starts at `slot` (383 is odd, so
// page -> page * 383 is a bijection modulo 8192).
inline uint32_t PageWithSlot(uint32_t slot) {
  for (uint32_t p = 1; p <= kHashSlots; ++p) {
    if (p * 383 % kHashSlots == slot) return p;
  }
  return 0;
}

// The value of a lock call, which must succeed.
inline bool Ok(absl::StatusOr<bool> r) {
  EXPECT_THAT(r, IsOk());
  return r.ok() && *r;
}

inline IndexHeader SampleHeader(uint32_t change) {
  IndexHeader h;
  h.change = change;
  h.page_size = 4096;
  h.page_count = 77 + change;
  h.current_log = 1;
  h.logs[0] = LogState{3, 0x11111111, 0x22222222, 500 + change, 0x0123456789ABCDEF};
  h.logs[1] = LogState{4, 5, 6, 7, 0xFEDCBA9876543210};
  return h;
}

// Parameterized by backend. For the shared backends every Open is another connection: a new
// File object (its own lock owner) on the one -shm path.
class WalIndexTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kMem) env_ = vfs::MakeMemEnv();
    if (GetParam() == Backend::kPosix) env_ = vfs::MakePosixEnv();
  }

  bool heap() const { return GetParam() == Backend::kHeap; }
  std::string ShmPath(absl::string_view name = "x.db-shm") const { return env_->Path(name); }

  absl::StatusOr<std::unique_ptr<vfs::File>> OpenFile(absl::string_view name = "x.db-shm") {
    return env_->fs().Open(ShmPath(name), kShmOpen);
  }
  // A new File, kept until the test ends (it must outlive the indexes over it).
  absl::StatusOr<vfs::File*> KeptFile(absl::string_view name = "x.db-shm") {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file, OpenFile(name));
    files_.push_back(std::move(file));
    return files_.back().get();
  }
  // A heap index, or a connection to the shared one (`initialize`: as the first connection).
  absl::StatusOr<std::unique_ptr<WalIndex>> Open(bool initialize) {
    if (heap()) return WalIndex::OpenHeap();
    JKV_ASSIGN_OR_RETURN(vfs::File* file, KeptFile());
    return WalIndex::OpenShared(file, initialize);
  }

  static uint32_t Find(WalIndex& index, int log, uint32_t page, uint32_t mx) {
    absl::StatusOr<uint32_t> frame = index.Lookup(log, page, mx);
    EXPECT_THAT(frame, IsOk());
    return frame.ok() ? *frame : ~uint32_t{0};
  }
  // Appends frames pages->size() + 1, ... holding `more`, and records them in *pages.
  static void AppendPages(WalIndex& index, int log, std::vector<uint32_t>* pages,
                          const std::vector<uint32_t>& more) {
    for (uint32_t page : more) {
      pages->push_back(page);
      ASSERT_THAT(index.Append(log, pages->size(), page), IsOk());
    }
  }
  // Appends frames first, ..., pages.size() of `pages` (frame f holds pages[f - 1]).
  static void AppendFrames(WalIndex& index, int log, const std::vector<uint32_t>& pages,
                           uint32_t first = 1) {
    for (uint32_t f = first; f <= pages.size(); ++f) {
      ASSERT_THAT(index.Append(log, f, pages[f - 1]), IsOk()) << "frame " << f;
    }
  }
  // Checks Lookup against Expected for `probes` at each mx in `mxs`.
  static void CheckLookups(WalIndex& index, int log, const std::vector<uint32_t>& pages,
                           const std::vector<uint32_t>& probes, const std::vector<uint32_t>& mxs) {
    for (uint32_t mx : mxs) {
      for (uint32_t page : probes) {
        ASSERT_EQ(Find(index, log, page, mx), Expected(pages, page, mx))
            << "page " << page << " mx " << mx;
      }
    }
  }

  std::unique_ptr<vfs::FileSystemEnv> env_;  // null for the heap
  std::vector<std::unique_ptr<vfs::File>> files_;  // destroyed before env_
};

// The tests that need two connections on one -shm file.
class SharedWalIndexTest : public WalIndexTest {};


}  // namespace journalkv::shm::testing

#endif  // JOURNALKV_SHM_WAL_INDEX_TESTING_H_
