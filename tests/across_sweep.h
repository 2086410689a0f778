// The crash sweep of transactions across databases in the rollback journal modes (the
// super-journal protocol, pager/super_journal.h): a small dedicated driver, since the
// single-database harness (tests/crash_sweep.h) judges one file.
//
// The workload: two or three databases (/d1/a.db, /d1/b.db, /d2/c.db: the third in another
// directory, so that no journal's directory sync covers the super-journal's) get six
// transactions with different sets of participants, two of them spilling (more dirty pages
// than the cache) in one database (one growing it, one rewriting pages only, so that its
// commit writes page 1 as its spill did), and the last a single database's commit. Each transaction
// t stamps the pages it writes with t and sets meta 0 to t in each participant.
//
// A sweep stops the workload after its k-th mutation (FaultInjectingFileSystem::
// CrashAfterMutations), for every k (half of them under a sanitizer), and then:
//   power loss          SimulatePowerLoss(seed), then recovery;
//   process crash       SimulateProcessCrash, then recovery;
//   crash, power loss   a process crash, a clean recovery, a power loss, a second recovery,
//                       which must find exactly what the first recovery found (I6, J5, J7).
// Recovery opens the databases in the forward order, the reverse order, or one database alone
// first (opened, read, closed) and then the others. After every crash, every database must be
// at the same transaction, and that transaction must be the last acknowledged one or the one
// in flight ("all or none", and every acknowledged commit survives). Recovery itself is
// crashed too: for a sample of the states whose recovery writes anything, after each of the
// mutations a clean recovery makes, by a process crash and by a power loss, and recovering
// once more must still give all or none. Default tier: every crash point with one power-loss
// seed, every recovery order, and the recoveries crashed of every state past a commit point
// (one that recovered to the transaction in flight) and of ten other states per first crash
// kind (a
// sanitizer build: half the points, one order each, two states). Long tier (--config=long):
// three power-loss seeds per point and kind, and every state's recovery crashed.
//
// Sync removal: `skip_sites` names sync call sites (vfs/sync.h `site`) whose syncs are made
// to do nothing, in the workload and in recovery (the sync observer has the file system skip
// each one, FaultInjectingFileSystem::SkipSyncs); such a sweep is expected to find a state
// that breaks the guarantee.
#ifndef JOURNALKV_TESTS_ACROSS_SWEEP_H_
#define JOURNALKV_TESTS_ACROSS_SWEEP_H_

#include <cstdint>
#include <set>
#include <string>

#include "pager/journal_mode.h"
#include "pager/pager_options.h"

namespace journalkv::testing {

struct AcrossConfig {
  std::string name;
  pager::JournalMode mode = pager::JournalMode::kDelete;
  vfs::SyncLevel sync = vfs::SyncLevel::kFull;
  int dbs = 2;
  std::set<std::string> skip_sites;  // sync removal (see above)
  bool power_loss = true;            // sweep power losses (not at sync OFF)
  bool all_points = false;           // every crash point in every tier (sync removal)
  int power_loss_seeds = 1;          // per point and kind, at least (the long tier: 3)
  bool one_order = false;            // a random recovery order per state, in every tier
  // DiskModel::unsynced_entries_may_survive: a power loss keeps a prefix of each directory's
  // unsynced creates and deletes (a metadata journal) instead of undoing them all.
  bool entries_may_survive = false;
};

struct AcrossCounts {
  uint64_t points = 0;            // crash points
  uint64_t states = 0;            // crash states verified
  uint64_t by_kind[3] = {0, 0, 0};  // power loss, process crash, crash then power loss
  uint64_t lone_first = 0;        // of them, recovered one database alone first
  uint64_t recovery_crashes = 0;  // states verified after a crash during recovery
  uint64_t landed = 0;            // crashes mid-commit that recovered to the new transaction
  uint64_t undone = 0;            // crashes mid-commit that recovered to the earlier one
  std::string failure;            // the first state that broke the guarantee (empty: none)

  std::string Summary() const;
};

// Runs the sweep of `config` and returns what it checked; stops at the first failure.
AcrossCounts RunAcrossSweep(const AcrossConfig& config);

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_ACROSS_SWEEP_H_
