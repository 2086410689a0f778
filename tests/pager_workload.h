// The pager-level workload of the crash sweeps (pager_crash_sweep_test, pager_sync_test): a
// deterministic sequence of write transactions and the model of what each leaves, and the
// check of a recovered database against that model.
//
// Transaction t stamps every page it writes with tag t and sets meta slot 0 to t when it
// commits. Its shape depends on t: one in 25 writes 40 pages (more than the 16-page cache, so
// it spills) and commits; one in 25 does the same and then rolls back (a rollback of spilled
// pages from the journal); one in 9 writes a few pages and rolls back; the rest write 1-6
// pages (allocations, overwrites, frees) and commit; with WorkloadOptions::rewrite_every, some
// rewrite the whole database compacted. Connections: one pager for the whole run,
// a pager reopened every 7 transactions, or two (or more) pagers on the one file system taking
// turns, so the paths for a journal left by another connection run under the sweep. The pagers
// taking turns may differ (WorkloadOptions::connection_pager: each its own sync level, reader
// slots, checkpoint policy), with the explicit checkpoints and the last close given to any one
// of them, so that one connection's shared work (a checkpoint, a restart, the last close) runs
// over commits another connection made at another level (issue 43).
#ifndef JOURNALKV_TESTS_PAGER_WORKLOAD_H_
#define JOURNALKV_TESTS_PAGER_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pager/pager.h"
#include "tests/sweep_base.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::testing {

enum class Connections { kOne, kReopen, kTwo };
const char* ConnectionsName(Connections c);

inline constexpr char kSweepPath[] = "/data/sweep.db";

// The crash sweeps' log preallocation step (PagerOptions::wal_grow_bytes): 64 KiB instead of
// the default 1 MiB. The logs still grow through the same code, more often; each crash state
// copies far fewer bytes of zeros (under AddressSanitizer each such copy of more than 128 KiB
// is a fresh mapping, page-faulted in: 1 MiB steps made the WAL crash sweeps about four times
// slower there). The sync-removal sweeps keep the default: whether a sync is needed depends on
// whether a commit's write extends the file or overwrites preallocated bytes.
inline constexpr uint64_t kSweepWalGrowBytes = uint64_t{64} << 10;

struct WorkloadOptions {
  pager::PagerOptions pager;
  Connections connections = Connections::kOne;
  int transactions = 200;
  // WAL modes: after every N-th transaction (0: never) the connection that ran it checkpoints,
  // FULL, RESTART and TRUNCATE in turn (WAL2: the phases that hold the writer only to switch
  // logs); one that fails ends the run, as a failed transaction does.
  int checkpoint_every = 0;
  // Every N-th transaction (0: never) rewrites the database compacted, as Db::Compact does
  // (WriteTxn::StartRewrite: the live pages moved to 2..n, each stamped anew, the freelist
  // empty, the file cut at commit, pager I11 and checkpoint C7); every other such one rolls
  // back instead. The rewrites write every live page, so the runs get longer.
  int rewrite_every = 0;

  // Connections that differ (Connections::kTwo only): connection i opens with
  // connection_pager[i], and there are as many connections as entries (at least two); empty:
  // two connections, both with `pager`. `pager` stays what a recovery, a probe and a
  // verification open with (a new connection after the crash).
  std::vector<pager::PagerOptions> connection_pager;
  // Connections::kTwo: transaction t runs on connection turns[t % turns.size()] (empty: on
  // t % the number of connections).
  std::vector<int> turns;
  // The connection that runs the explicit checkpoints of checkpoint_every (-1: the one that ran
  // the transaction).
  int checkpointer = -1;
  // Connections::kTwo: the connection that closes last (its close is the last close: a
  // checkpoint and the log's removal); the others close before it, highest index first.
  int last_closer = 0;
};

// The options connection `i` of the workload opens with.
const pager::PagerOptions& ConnectionOptions(const WorkloadOptions& options, int i);
// The number of connections the workload keeps open at once.
int ConnectionCount(const WorkloadOptions& options);

// Which pages are live and which transaction last wrote each.
struct ModelState {
  std::map<uint32_t, uint32_t> live;  // page -> tag
  uint32_t page_count = 1;
  uint32_t probe = 0;  // meta slot 1: a probe transaction's mark (Probe below), 0 when none
};

struct RunResult {
  int acknowledged = 0;  // last transaction whose Commit returned OK
  // The last transaction whose Commit returned OK on a connection at sync FULL or EXTRA: what
  // a power loss must keep in WAL whatever the other connections' levels (P1 of tests/counted_commits.h).
  int acknowledged_durable = 0;
  int in_flight = 0;     // the transaction whose Commit was under way when the run stopped
  // Recorded runs only: after[t] is the model after transaction t (a rolled-back t leaves the
  // model of t-1), and idle_points the mutation counts at which no transaction was open.
  std::vector<ModelState> after;
  std::vector<uint64_t> idle_points;
  // WAL and WAL2, runs that finished: the WAL counters of every connection the run closed or
  // reopened (read just before each close), so that a sweep can show its clean run switched
  // logs (WAL2), checkpointed and restarted them.
  uint64_t checkpoints = 0;
  uint64_t log_restarts = 0;
  uint64_t log_switches = 0;
  uint64_t frames_rewritten = 0;  // spilled frames written over by their transaction (W11)
  uint32_t max_log_frames = 0;  // the most frames one log held when a connection closed
  int explicit_checkpoints = 0;  // WorkloadOptions::checkpoint_every's that succeeded
};

// Runs the workload until it finishes or the first error (the crash point). With `record`,
// fills after and idle_points (fs's mutation counts).
RunResult RunWorkload(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                      bool record);

// DELETE, TRUNCATE and PERSIST write a journal file and are crash-atomic; MEMORY and OFF not.
bool FileJournal(pager::JournalMode mode);

// A fresh disk with the workload run on it up to a crash point: in memory, or real files when
// the read map is on (tests/sweep_base.h).
struct CrashWorld {
  SweepBase sweep_base;
  vfs::FileSystem& base = sweep_base.fs();
  std::unique_ptr<vfs::FaultInjectingFileSystem> fs;
  RunResult run;
};
// Runs the workload on a new CrashWorld with `disk`, the syncs in `skip` skipped (SkipSyncs),
// until the crash point `point` (CrashAfterMutations) stops it.
std::unique_ptr<CrashWorld> RunTo(const WorkloadOptions& options,
                                  const vfs::FaultInjectingFileSystem::DiskModel& disk,
                                  uint64_t point, const std::set<uint64_t>& skip = {});

// The transactions a crash state of `run` may hold: the last acknowledged one, and the one
// whose commit was under way.
std::vector<int> Allowed(const RunResult& run);

// The state a verification found, or the problem.
struct Recovered {
  std::string problem;  // empty: the database is whole and equals the model after `t`
  int t = -1;
  bool rolled_back = false;   // the opener rolled a hot journal back
  uint64_t mutations = 0;     // mutations the opening (recovery) made
  ModelState state;
};

// Opens the database (recovering it), checks every page, the freelist and the model, and
// returns which transaction it holds. `allowed` lists the transactions it may hold (empty: any
// in history). `probe_over`: the state must be history[*probe_over] changed by Probe.
Recovered Verify(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                 const std::vector<ModelState>& history, const std::vector<int>& allowed,
                 const ModelState* expect_exact = nullptr);

// A transaction after recovery that rewrites about half of the live pages (chosen by seed)
// with a tag of its own and sets meta slot 1: it exposes a journal that comes back and is
// applied a second time, or a recovery that left pages only in the OS cache. Returns the model
// after it; `ok` false when the commit failed.
ModelState Probe(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                 const ModelState& before, uint64_t seed, bool* ok);

// True when a journal with a valid header is present (the EXTRA sync level ends journals
// durably, so after a power loss between transactions there must be none).
bool HotJournalPresent(vfs::FaultInjectingFileSystem& fs);

// A digest of the database and journal files (the rollback journal, -wal and -wal2) as the base
// file system holds them: a power loss that changes it dropped or tore unsynced data.
uint64_t FilesDigest(vfs::FileSystem& base);

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_PAGER_WORKLOAD_H_
