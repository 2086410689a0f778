// The sync-removal sweep: one driver for proving that every sync a journal mode makes is needed
// (pager_sync_test for the rollback journal, wal_sync_test for WAL and WAL2).
//
// A clean run of the crash sweep's workload (tests/pager_workload.h) records every sync and the
// site it was made for (vfs/sync.h names each by the invariant it keeps). Then, for a sync of
// the run, the fault-injecting file system turns just that one sync into a no-op (SkipSyncs)
// and the workload is crashed at every later mutation, until some crash state fails the
// configuration's Guarantees (tests/crash_sweep.h): by a power loss, and by a process crash
// followed by recovery, a probe transaction (odd seeds) and a power loss. Recovery's own syncs
// are treated alike: each sync of a recovery after a process crash is skipped in turn (and, for
// the rollback journal, the recovery is also cut after each of its mutations), and some state
// must fail after the power loss that follows.
//
// Which syncs are skipped: in the long tier every sync of the run; in the default tier, per
// site, the first, the last and one drawn at random in between (from the run seed the crash
// sweeps print; under a sanitizer the first and the last only), and every one of a site the
// spec names in every_sync_of_sites (until one is noticed). A sync whose removal no state
// notices is either unneeded (then it goes, and its saving is measured) or a hole in the
// harness (then the harness is fixed); the sweep prints a line per skipped sync, so the next
// engineer sees which state catches which sync.
// Power-loss seeds here are fixed (the same every run): the sweep asserts that a failing state
// exists, and a search that found one yesterday finds it today.
#ifndef JOURNALKV_TESTS_SYNC_SWEEP_H_
#define JOURNALKV_TESTS_SYNC_SWEEP_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"

namespace journalkv::testing {

// What a skipped sync must show.
enum class SyncRole {
  kNeeded,    // some crash state must fail without it (asserted)
  kUnproven,  // kept on reasoning, or proven on a state built for it elsewhere: searched over
              // 30 mutations after it and printed, not asserted
  kCovered,   // another sync of this workload covers for it: searched (to the end of the run
              // in the long tier, 30 mutations in the default tier) and printed, not asserted
  kNeededAtSite,  // this one may be covered by another sync of its site in this workload
                  // (WAL2 recovers and checkpoints two logs in a row): searched (80 mutations
                  // after it in the default tier, to the end in the long tier) and printed;
                  // some sync of the site must be needed (asserted once per site)
  kNotTried,      // not skipped (recovery: syncs another test proves, such as the creation's)
};

struct SyncSweepSpec {
  std::string name;  // printed
  WorkloadOptions options;
  vfs::FaultInjectingFileSystem::DiskModel disk;
  Guarantees guarantees;
  // The role of sync `i` of the clean run, given the sites and records of all of its syncs.
  std::function<SyncRole(const std::vector<std::string>& sites,
                         const std::vector<vfs::FaultInjectingFileSystem::SyncRecord>& log,
                         size_t i)>
      commit_role;
  // The role of a recovery's sync, by its site.
  std::function<SyncRole(const std::string& site)> recovery_role;
  // Sites whose every sync is skipped in turn in the default tier too (the others: the first,
  // the last and one at random), for sites where only some syncs of the run are needed and
  // those few must not be left out by the draw.
  std::set<std::string> every_sync_of_sites;
  // Power-loss seeds per crash point: on the three points right after the skipped sync, and
  // on the later ones.
  int seeds_near = 24;
  int seeds_far = 6;
  // The sanity pass (no sync skipped: every state passes) takes every `sanity_stride`-th
  // crash point.
  uint64_t sanity_stride = 5;
  // Recovery syncs: the crash points looked at (every `recovery_stride`-th), only recoveries
  // that found a journal or log frames, at most this many shapes (the commonest; a shape is the
  // list of sites a recovery syncs) and points per shape, these seeds per point, and whether
  // the recovery is also cut after each of its mutations.
  uint64_t recovery_stride = 1;
  bool recovery_needs_rollback = false;
  size_t recovery_shapes = 1000;
  size_t recovery_points_per_shape = 1000;
  int recovery_seeds = 12;
  bool crash_recovery = false;
};

class SyncSweep {
 public:
  // Makes the clean run (a failed one is a gtest failure, and the sweeps then stop at once).
  explicit SyncSweep(SyncSweepSpec spec);

  // Skips the syncs of commit, rollback, checkpoint and restart one at a time.
  void CommitSyncsAreNeeded();
  // Skips each sync of each shape of recovery in turn.
  void RecoverySyncsAreNeeded();

  // The problem of the state after crashing at `point` with power loss `seed`, with the syncs
  // in `skip` skipped (empty: it passes). `via_recovery`: a process crash first, then a
  // recovery (whose `recovery_skip`-th sync is skipped when nonzero, and which is itself cut
  // after `recovery_crash` mutations when given), a probe transaction for odd seeds, then the
  // power loss and the check.
  static constexpr uint64_t kNoCrash = ~uint64_t{0};
  std::string FirstProblem(uint64_t point, uint64_t seed, const std::set<uint64_t>& skip,
                           bool via_recovery, uint64_t recovery_skip = 0,
                           uint64_t recovery_crash = kNoCrash);

  uint64_t total_mutations() const { return total_; }
  const std::vector<vfs::FaultInjectingFileSystem::SyncRecord>& syncs() const { return log_; }
  const std::vector<std::string>& sites() const { return sites_; }

 private:
  // A failing state with the syncs `skip` skipped, from mutation `from` to `to`, or "".
  std::string Search(uint64_t from, uint64_t to, const std::set<uint64_t>& skip);

  SyncSweepSpec spec_;
  std::vector<ModelState> history_;
  std::set<uint64_t> idle_;
  uint64_t total_ = 0;
  std::vector<vfs::FaultInjectingFileSystem::SyncRecord> log_;
  std::vector<std::string> sites_;  // sites_[i] is the site of log_[i]
  uint64_t states_ = 0;              // crash states checked
};

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SYNC_SWEEP_H_
