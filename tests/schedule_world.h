// The world the schedule explorer's tests run (tests/wal_schedule_test.cc,
// tests/wal_schedule_mixed_test.cc): a small bank of accounts over one database, the threads
// that use it (writers, readers, a checkpointer, a power loss), the checks each makes, and the
// loop that runs a tier's schedules a mode.
//
// Two regions of accounts, each on pages of its own (about four accounts a page), and the
// writers' commits alternate between them: after a log restart a snapshot finds the region the
// last commits left alone in the database file, not in the log, so a checkpoint that put a
// later version of it there shows as a torn snapshot.
//
// Thread-safety: World's bodies run on the schedule's threads at once; its state is guarded by
// mu_ or atomic. StepCheck runs under the schedule's lock, one step at a time.
#ifndef JOURNALKV_TESTS_SCHEDULE_WORLD_H_
#define JOURNALKV_TESTS_SCHEDULE_WORLD_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/db.h"
#include "engine/options.h"
#include "shm/wal_index.h"
#include "tests/schedule_explorer.h"
#include "tests/sweep_base.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::testing {

inline constexpr int kRegions = 2;
inline constexpr int kRegionAccounts = 8;
inline constexpr int kAccounts = kRegions * kRegionAccounts;
inline constexpr int kInitial = 100;
inline constexpr int kCommits = 8;  // by all writers together
inline constexpr int kReads = 4;
inline constexpr int kCheckpoints = 6;

using Accounts = std::array<int, kAccounts>;

// How one connection of a schedule is opened.
struct Connection {
  uint32_t cache_pages = 2000;
  const char* policy = "manual";
  SyncLevel sync = SyncLevel::kFull;
  int reader_slots = 512;  // 0: every read transaction pins under an overflow mark (M1..M5)
};

// One schedule's world: the database, the version map and the first failure.
class World {
 public:
  // power_loss: the files live on a FaultInjectingFileSystem over the in-memory one (real files
  // with the map on: tests/sweep_base.h), so that
  // PowerLoss can cut the power (every other seed, by bit 5, on a disk that may also keep
  // unsynced directory entries and sizes without data).
  World(JournalMode mode, uint64_t seed, bool power_loss = false);

  Options Opts(const Connection& c = {});
  std::unique_ptr<Db> Open(const Connection& c = {});

  // Version 0: every account at kInitial, copied into the database file by a TRUNCATE
  // checkpoint. Before the schedule starts.
  bool Create(Db& db);
  // Before the schedule: how many bodies run Writer (the readers' pacing and the checkpointer
  // go on until they have ended).
  void set_writers(int writers) { writers_left_.store(writers); }
  // RunInWorld's: how many bodies run before PowerLoss, and the end of each.
  void set_bodies(int bodies) { bodies_left_.store(bodies); }
  void BodyDone() { bodies_left_.fetch_sub(1); }

  // `commits` transfers between two accounts of one region, each with the next version. The
  // commits of a writer at `full` or `extra` are durable once acknowledged.
  void Writer(Db& db, int commits = kCommits, SyncLevel level = SyncLevel::kFull);
  // Read transactions, each reading every account twice and checking them against the map.
  // Paced: the r-th transaction once the writers have acknowledged r * kCommits / reads
  // commits. Polling instead: each at a random time ("wait:poll"), so that one may begin while
  // a writer is halfway through a commit (race 3 of the WAL-races issue).
  void Reader(Db& db, int reads, bool polling = false);
  // kCheckpoints of the four modes in turn, spread over the writers' run, and PASSIVE ones at
  // random times between them ("wait:poll"), as another process's checkpointer polling the log
  // would run.
  void Checkpointer(Db& db);
  // When the power goes in a power_loss world (set before the schedule): after `polls` waits
  // of PowerLoss's thread at "wait:poll" (each 1 to 64 of the other threads' steps); or, with
  // after_durable, at the first step after a writer acknowledged a version at or past it at
  // full (its next hook point: every acknowledged commit must be durable then); or, with
  // after_borrowed_flush, likewise after the first commit at full that another connection's
  // group flush published (W12: that flush's sync had to cover it); or, with none of these,
  // once every other body has ended (as well when they end first). The power loss is drawn
  // with `seed`.
  struct Cut {
    uint64_t seed = 0;
    int polls = 0;
    int after_durable = 0;
    bool after_borrowed_flush = false;
  };
  void set_cut(const Cut& cut) { cut_ = cut; }
  bool power_loss() const { return fault_ != nullptr; }
  // The body that cuts the power (RunInWorld adds it), with every other thread wherever the
  // schedule stopped it: the cut is the step check of a step of its own, "power:cut" (or of
  // the acknowledging writer's next step). From then on the other threads' calls fail (their
  // files are dead) and end them, and no error fails the schedule until Final; the step check
  // stops.
  void PowerLoss();
  // After the schedule, every handle closed: a final checkpoint by a new connection and a
  // reopen. Without a power loss the last acknowledged commit is there; after one, the state is
  // one the writers committed whole, at or after the last commit acknowledged at full or extra.
  void Final();

  // How many bytes pad each account's value (before Create): 200 by default, about four
  // accounts a 1 KiB page; 900 puts each on a page of its own, more pages than a one-page
  // cache holds (16, one a shard), so that readers read them from the files again and again.
  void set_pad(size_t bytes) { pad_.assign(bytes, '.'); }

  // Tearing (a known window's fault): at each commit's "commit:appended" (frames in the log
  // and the index, the header not yet published), with probability one half, copy A of the
  // published header is damaged, as a publish under way or a process killed in one leaves
  // it; the writer's publish makes it whole again.
  void set_tearing(bool on) { tearing_ = on; }  // before Open

  // The per-step check, after the step at `point`: the published index over the -shm, read
  // without taking anything; in WAL also the database file against the backfill (FileCheck).
  std::string StepCheck(const char* point);
  void CloseIndex();

  bool failed();
  std::string failure();
  uint64_t busy() const { return busy_.load(); }
  uint64_t tears() const { return tears_; }
  int acknowledged() const { return acknowledged_.load(); }
  int durable() const { return durable_.load(); }  // acknowledged at full or extra
  bool power_lost() const { return power_lost_.load(); }
  // The version Final found (-1: none read).
  int recovered() const { return recovered_; }

 private:
  void Fail(const std::string& what);
  // With mu_ held. (Fail there deadlocked the thread on itself: the explorer reported a
  // writer that read a version it had not committed as every thread blocked.)
  void FailLocked(const std::string& what);
  bool Check(const absl::Status& s, const char* what);
  // A busy answer is allowed (a busy timeout passed while the schedule ran someone else):
  // true, and the caller tries again. Any other error fails the schedule.
  bool Busy(const absl::Status& s, const char* what);
  // Between two operations a thread goes last (the schedule's "wait"), so that the threads'
  // operations interleave and the change points preempt them inside one.
  static void Yield();
  // Until the writers have acknowledged `commits` (or ended).
  void Pace(int commits);
  bool writers_done() const { return writers_left_.load() <= 0; }
  bool RunCheckpoint(Db& db, CheckpointMode mode);
  // The database at `version` as a reader of it sees it: false (and the schedule failed) when
  // an account differs from the map.
  template <typename Txn>
  bool CheckAccounts(Txn& t, int version, const std::string& who);
  template <typename Txn>
  std::optional<int> ReadInt(Txn& t, const std::string& key);
  // The step check at "power:cut" (PowerLoss) or after the acknowledgment awaited: the cut.
  void CutPower();
  // WAL: the backfill's promise, checked against the files themselves.
  std::string FileCheck(const shm::IndexHeader& h);

  const JournalMode mode_;
  std::mt19937_64 rng_;
  // In memory, or real files when the read map is on (tests/sweep_base.h).
  SweepBase base_;
  vfs::FileSystem& files_ = base_.fs();
  std::unique_ptr<vfs::FaultInjectingFileSystem> fault_;  // power_loss worlds only
  vfs::FileSystem* fs_;                                   // fault_ or files_
  std::mutex mu_;
  std::vector<Accounts> versions_;  // the state the writers committed at each version
  std::atomic<int> acknowledged_{0};
  std::atomic<int> durable_{0};
  std::atomic<bool> borrowed_flush_{false};  // a commit at full another connection flushed
  std::atomic<int> writers_left_{1};
  std::atomic<int> bodies_left_{0};
  std::atomic<uint64_t> busy_{0};
  std::string failure_;
  // The power went: the step check stops (every file is dead).
  std::atomic<bool> power_lost_{false};
  // From the power loss to Final: the schedule's threads run on, and their errors are expected.
  std::atomic<bool> dark_{false};
  int recovered_ = -1;
  Cut cut_;
  // The step check's own handles, on the in-memory file system itself (never the fault
  // injecting one, whose power loss would kill them).
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
  std::unique_ptr<vfs::File> log_file_, db_file_;  // FileCheck's read-only handles
  std::string pad_ = std::string(200, '.');
  bool tearing_ = false;
  std::mt19937_64 tear_rng_;  // drawn in step order (under the schedule's lock)
  uint64_t tears_ = 0;
  std::array<std::pair<uint32_t, uint32_t>, 2> last_{};
};

// What one schedule did.
struct Outcome {
  std::string failure;  // "" when the schedule passed
  uint64_t steps = 0;
  uint64_t decisions = 0;
  uint64_t restarts = 0;
  uint64_t stalls = 0;
  uint64_t late = 0;   // wakes whose thread did not arrive in time (Schedule::late_arrivals)
  uint64_t tears = 0;  // headers damaged (World::set_tearing)
  uint64_t busy = 0;
  int adopted = 0;  // background threads the schedule adopted
  // Checkpoints held back (C3) by a reader pinned below another connection's copy: race 2's
  // window reached.
  uint64_t held_back = 0;
  bool power_lost = false;
  int durable = 0;         // commits acknowledged at full or extra
  int recovered = -1;      // the version found after the power loss
  std::string trace;
  std::string drops;  // the steps drawn by name, if any
};

// Runs `bodies` (and, in a power_loss world, World::PowerLoss on a thread of its own) under a
// schedule of `options` (JKV_SCHEDULE_DROPS=a,b>c replaces its change points by those drops
// and holds) with the world's step check, closes `dbs` in order before the schedule goes (an
// adopted background checkpointer calls its hooks until its database is closed), and runs
// World::Final. `what` names the schedule's variant for JKV_SCHEDULE_COUNT.
Outcome RunInWorld(World& world, ScheduleOptions options, const std::string& what,
                   std::vector<std::unique_ptr<Db>>& dbs,
                   std::vector<std::function<void()>> bodies);

// A family of schedule kinds: `kinds` kinds numbered first_kind.., the kind of a seed being
// first_kind + seed % kinds.
struct ScheduleFamily {
  const char* salt;   // the run seed's salt ("schedule" -> "schedule/wal")
  const char* label;  // before the mode in the summary line ("mixed, ": "(mixed, wal)")
  int first_kind;
  int kinds;
  int default_count;  // schedules a mode: default tier, sanitizers, long tier
  int sanitizer_count;
  int long_count;
  std::function<Outcome(JournalMode mode, uint64_t seed, bool whole_trace)> run_one;
};

// Runs a tier's schedules of `family` in `mode` (gtest assertions; a failure prints the seed and
// the trace): JKV_SCHEDULE_SEED=N replays one with its whole trace, JKV_SCHEDULES=N sets the
// number, JKV_SCHEDULE_KINDS=45 keeps those kinds only.
void RunSchedules(JournalMode mode, const ScheduleFamily& family);

// JKV_SCHEDULE_COUNT=a,b: a line with the seed and how often the schedule reached those points.
void PrintCounts(const Schedule& schedule, uint64_t seed, const std::string& what);

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SCHEDULE_WORLD_H_
