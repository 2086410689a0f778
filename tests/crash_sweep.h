// The crash harness: one driver for every crash sweep (the rollback journal's, WAL's and WAL2's,
// and WAL under each checkpoint policy), and the choice of crash points and seeds.
//
// A sweep runs a workload (tests/pager_workload.h) on a FaultInjectingFileSystem, stops it
// after the k-th mutating operation (CrashAfterMutations), and then crashes in one of three
// ways:
//   kPowerLoss          the power fails: every unsynced change is kept, dropped or torn
//                       (SimulatePowerLoss), then a new connection recovers;
//   kProcessCrash       the process dies: its connections are gone but the OS keeps every
//                       write (SimulateProcessCrash), then a new connection recovers;
//   kCrashThenPowerLoss the process dies, a new connection recovers (and, for odd seeds,
//                       commits a probe transaction), then the power fails and another
//                       connection recovers: what the first recovery saw must survive.
// Recovery is what a new connection does: open, a read transaction with the page check, close
// (in WAL the close checkpoints and removes the log). Recovery itself is crashed too: after the
// first crash, the recovering connection is crashed again after each of the mutations a clean
// recovery makes, by a process crash and by a power loss, and recovering once more must give
// what the guarantees below allow ("recovering twice").
//
// What each state may recover to is the configuration's Guarantees: the last acknowledged
// commit or the one in flight (durable), or any whole transaction up to the one in flight
// (WAL at NORMAL after a power loss) and no earlier than the last one a connection at FULL or
// EXTRA acknowledged (WAL connections whose levels differ); configurations that are not
// crash-atomic (MEMORY, OFF) are crashed only between transactions.
//
// Crash points and seeds (base/test_scale.h has the tiers):
//   - crash points: every mutation index right after a sync and right after a transaction
//     ended (the "must" points), plus `further` other indexes. The default tier takes a random
//     sample of the must points (a third; a tenth under a sanitizer) and draws the further
//     ones at random; the long tier takes every mutation index.
//   - power-loss seeds: one fixed per crash point and one drawn at random (default tier; the
//     fixed one only under a sanitizer), five in the long tier.
//   - crashed recoveries: a random sample of the states whose recovery writes anything, a few
//     in the default tier, a few hundred in the long tier (SweepSpec::recovery_crash_states);
//     JKV_EVERY_RECOVERY=1 crashes the recovery of every such state (about 90% of a long WAL
//     sweep's states then: hours on two cores).
//   Every random choice comes from the per-run seed, new each run and printed at the start
//   ("crash sweep run seed N"); --test_env=JKV_CRASH_SEED=N replays a run exactly.
// Nondeterministic workloads (a background checkpointer's writes interleave with the writer's
// differently each run) judge every state against its own run, take crash points spread over
// the run with a random offset each, and are not crashed during recovery (the clean recovery to
// compare with would be of another run).
#ifndef JOURNALKV_TESTS_CRASH_SWEEP_H_
#define JOURNALKV_TESTS_CRASH_SWEEP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/test_scale.h"
#include "tests/pager_workload.h"
#include "vfs/fault_injecting_fs.h"

namespace journalkv::testing {

enum class CrashKind { kPowerLoss, kProcessCrash, kCrashThenPowerLoss };
const char* CrashKindName(CrashKind kind);

// The long tier (base/test_scale.h).
inline bool LongSweep() { return LongTier(); }

// The per-run seed: JKV_CRASH_SEED when set, else new each run. Printed once per process.
uint64_t RunSeed();
// A seed for one random choice of a sweep: the run seed mixed with `salt` (a configuration's
// name, a crash point), so that each configuration draws its own points.
uint64_t DrawSeed(const std::string& salt, uint64_t n = 0);

// The power-loss seeds of one crash point of the sweep named `salt` (see above).
std::vector<uint64_t> PowerLossSeeds(const std::string& salt, uint64_t point);

// The crash points of a sweep (see above): a sample of `must`, plus `further` other indexes in
// [1, total]; every index in the long tier.
std::vector<uint64_t> SweepPoints(const std::string& salt, const std::vector<uint64_t>& must,
                                  uint64_t total, size_t further);

// JKV_EVERY_RECOVERY=1: Sample() takes everything, so every recovery is crashed.
bool EveryRecoveryCrashed();

// At most `cap` elements of `all` (all of them under JKV_EVERY_RECOVERY=1): a random sample,
// in order.
std::vector<uint64_t> Sample(const std::string& salt, const std::vector<uint64_t>& all,
                             size_t cap);

// Any whole transaction up to the one in flight (what a power loss may leave at WAL NORMAL).
std::vector<int> UpTo(const RunResult& run);
// Any whole transaction from the last one acknowledged at sync FULL or EXTRA up to the one in
// flight (what a power loss may leave when the connections' levels differ: P1 of
// tests/counted_commits.h). With every connection at NORMAL (none acknowledged durably)
// this is UpTo.
std::vector<int> FromLastDurable(const RunResult& run);

// What a sweep tried, to print and to assert that it did not pass vacuously.
struct SweepCounts {
  uint64_t points = 0;            // crash points
  uint64_t states = 0;            // crash states verified
  uint64_t by_kind[3] = {0, 0, 0};
  uint64_t recovery_crashes = 0;  // states verified after a crash during recovery
  uint64_t rollbacks = 0;         // recoveries that found a hot journal or log frames
  uint64_t in_flight_landed = 0;  // crashes mid-commit that recovered to the new transaction
  uint64_t in_flight_undone = 0;  // crashes mid-commit that recovered to an earlier one
  uint64_t lost_unsynced = 0;     // power losses that really dropped unsynced data
  uint64_t probes = 0;            // probe transactions committed after a recovery

  std::string Summary() const;
};

// What a configuration promises after a crash.
struct Guarantees {
  // Every crash recovers to a whole transaction. False (MEMORY, OFF): only crashes between
  // transactions, and while the database is created (I9), have a defined outcome and are made.
  bool atomic = true;
  // Power losses are swept. False at sync OFF, which promises nothing against one.
  bool power_loss = true;
  // After a power loss: the last acknowledged commit or the one in flight. False (WAL at
  // NORMAL, or WAL connections at different levels): any whole transaction from the last one
  // a connection at FULL or EXTRA acknowledged (RunResult::acknowledged_durable; none at
  // NORMAL) up to the one in flight: the guarantee is each transaction's, by the level of the
  // connection that committed it, whoever flushed or checkpointed it later.
  bool power_loss_durable = true;
  // Rollback EXTRA: a power loss between transactions leaves no valid journal.
  bool no_journal_after_idle_power_loss = false;
  // Atomic batches: no crash leaves a journal or log to recover (but the database's creation's
  // journal), so the sweep asks instead that some crashes fell in a commit and found it undone
  // (and, where commits are not durable, that some power loss dropped one), not that recovery
  // rolled back, was crashed or lost unsynced data.
  bool nothing_to_recover = false;

  // What a state may recover to after a crash of `kind` (its first recovery).
  std::vector<int> Outcomes(const RunResult& run, CrashKind kind) const;
};

// A workload of a test's own in place of the pager workload (tests/pager_workload.h), for
// layers above the pager (the engine's bottom-up loads and compaction: builder_sweep_test).
// It must be deterministic, run options.transactions transactions on kSweepPath and return
// what RunWorkload returns (acknowledged, in_flight, acknowledged_durable; recorded: after[t]
// for t = 0..transactions, whose contents only the workload reads, and idle_points).
struct SweepWorkload {
  std::function<RunResult(vfs::FaultInjectingFileSystem& fs, bool record)> run;
  // Recovers and checks the database as a new connection does (open, read and check it,
  // close), and says which transaction it holds, as Verify does; `allowed` empty: any.
  std::function<Recovered(vfs::FaultInjectingFileSystem& fs, const std::vector<int>& allowed)>
      verify;
  // The recovering connection that the sweep crashes after each of its mutations (open and a
  // read: what a new connection does first).
  std::function<void(vfs::FaultInjectingFileSystem& fs)> recover;
};

// One sweep: a configuration, what it promises, and the hooks a test adds.
struct SweepSpec {
  std::string name;  // printed, and the salt of every random choice
  WorkloadOptions options;
  vfs::FaultInjectingFileSystem::DiskModel disk;
  Guarantees guarantees;
  // Crash points beyond the must points (deterministic workloads), or in all
  // (nondeterministic ones, spread evenly with a random offset each).
  size_t further_points = 150;
  // The workload does the same every run (false: a background checkpointer runs).
  bool deterministic = true;
  // Crash recovery at each of its mutations, for at most this many states per first crash
  // kind (a process crash, a power loss) whose recovery writes anything.
  size_t recovery_crash_states = 12;
  // Called once with the clean run and the sites of its syncs (vfs/sync.h) counted; a test
  // checks there that the run did what the sweep is for (checkpoints, restarts, switches).
  std::function<void(const RunResult& clean, const std::map<std::string, int>& sync_sites)>
      check_clean_run;
  // Called around each run to a crash point: before with the new world (nothing run yet), after
  // with the world stopped at `point`.
  std::function<void(CrashWorld& world)> before_run;
  std::function<void(CrashWorld& world, uint64_t point)> after_run;
  // Set: the sweep runs, verifies and recovers this workload instead of the pager workload
  // (`options` then only gives options.transactions and the journal mode), and commits no
  // probe transaction after a first recovery (kCrashThenPowerLoss then asks the second
  // recovery for the first one's transaction).
  std::optional<SweepWorkload> workload;
};

// Runs the sweep, adding a gtest failure for the first state that breaks the guarantees (and
// stopping there) and for a sweep that tested nothing; prints what it checked.
SweepCounts RunCrashSweep(const SweepSpec& spec);

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_CRASH_SWEEP_H_
