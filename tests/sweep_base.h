// The file system under the crash sweeps (tests/crash_sweep.h, tests/pager_workload.h) and the
// schedule explorer (tests/schedule_world.h): the in-memory one, fast; or, when the read map is
// on for the whole test process (JOURNALKV_TEST_MMAP_SIZE, pager::DefaultMmapSize() > 0), real
// files in a fresh folder under $TEST_TMPDIR (vfs/rooted_fs.h, the same absolute paths), since
// only a file the kernel holds can be mapped: the pager's reads of the database file are then
// copies out of the map (vfs/read_map.h) and, in WAL modes, pages taken in place from it (the
// fault layer lends its base's map: pager/mapped_pages.h, O5..O8), under the fault-injecting
// file system's power losses,
// process crashes and injected errors, which the map sees as it sees another process's writes
// (E1: a power loss rewrites the base files; a failed sync rewrites what it lost).
// JKV_SWEEP_REAL_FILES=1 takes the real files without the map (to compare the two).
//
// MapReadsSeen counts what the map served, so that a sweep run with the map on can show that
// it engaged (a sweep whose reads all went to pread would test nothing new).
//
// Thread-safety: one per world; used by the world's threads as its file system is.
#ifndef JOURNALKV_TESTS_SWEEP_BASE_H_
#define JOURNALKV_TESTS_SWEEP_BASE_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "base/test_scale.h"
#include "pager/pager_options.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/rooted_fs.h"
#include "vfs/vfs.h"

namespace journalkv::testing {

// Whether the sweeps of this process run on real files (see above).
inline bool SweepsOnRealFiles() {
  const char* real = std::getenv("JKV_SWEEP_REAL_FILES");
  return pager::DefaultMmapSize() > 0 || (real != nullptr && std::string(real) == "1");
}

// On real files each crash state costs several times what it costs in memory (files made,
// rewritten and removed by the kernel), so outside the long tier a sweep on real files runs
// the configurations its test picks (a few, of every kind: the in-memory run of the same
// target covers all of them) at the sanitizers' reduced number of points; the long tier runs
// every configuration in full. True when this configuration is to be skipped.
inline bool SkipOnRealFiles(bool picked) {
  return SweepsOnRealFiles() && !LongTier() && !picked;
}
// TierScaled, with the reduced amount on real files outside the long tier.
inline int SweepScaled(int normal, int reduced, int long_tier) {
  if (SweepsOnRealFiles() && !LongTier()) return reduced;
  return TierScaled(normal, reduced, long_tier);
}

// Reads of database files served by the map in this process so far, over every sweep world
// (each SweepBase adds the map reads of its files when it goes).
inline std::atomic<uint64_t>& MapReadsSeen() {
  static std::atomic<uint64_t> seen{0};
  return seen;
}
inline void NoteMapReads(uint64_t n) { MapReadsSeen().fetch_add(n, std::memory_order_relaxed); }

class SweepBase {
 public:
  SweepBase() {
    if (SweepsOnRealFiles()) {
      dir_ = std::make_unique<vfs::ScopedTempDir>();
      auto rooted = std::make_unique<vfs::RootedFileSystem>(dir_->path());
      rooted_ = rooted.get();
      fs_ = std::move(rooted);
    } else {
      fs_ = std::make_unique<vfs::MemFileSystem>();
    }
  }
  // The world's Files are closed by now (the world destroys its file systems after them).
  ~SweepBase() {
    if (rooted_ != nullptr) NoteMapReads(rooted_->map_reads_of_closed_files());
  }
  vfs::FileSystem& fs() { return *fs_; }
  bool real_files() const { return dir_ != nullptr; }

 private:
  std::unique_ptr<vfs::ScopedTempDir> dir_;  // before fs_: removed after it
  std::unique_ptr<vfs::FileSystem> fs_;
  vfs::RootedFileSystem* rooted_ = nullptr;
};

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SWEEP_BASE_H_
