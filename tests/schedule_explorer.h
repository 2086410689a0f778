// A deterministic schedule explorer for the WAL protocol's threads (issue 19, part 2).
//
// Threads of one process, each on its own connection (or a second thread of one), run under a
// controller that lets exactly one of them run between two hook points: the WAL hooks
// (wal/wal_connection.h), the checkpoint hooks (wal/checkpoint_copy.h) and the index hooks
// at every access of the -shm's shared words (shm/wal_index.h). Which thread runs next is the
// PCT rule (Burckhardt, Kothari, Musuvathi, Nagarakatte, "A randomized scheduler with
// probabilistic guarantees of finding bugs", ASPLOS 2010): every thread gets a random
// priority, the highest-priority thread that waits at a point runs, and at a few randomly
// drawn steps (the change points) the running thread drops below every other. A bug that
// needs d ordering constraints between n threads over k steps is found by one schedule with
// probability at least 1 / (n k^(d-1)); change_points is d - 1. Here k counts only the
// protocol's decision points: every store to the shared words and every named step of a
// reader, writer or checkpoint (a page read among them), but not the loads of the index
// (header reads, lookups, generation checks) nor the lock attempts (retried in every wait),
// which are most of the
// steps (or, with every_store_decides false, only the named steps); threads still
// switch at loads, by priority, but a change point lands on a store, where the windows of the
// protocol open and close, so the same few change points find a race many times as often.
//
// A thread at a "wait" point (it sleeps waiting for a lock or another connection) sits out
// until another thread takes a step, so that the one it waits for runs (dropping it below
// every other instead would undo the change points' drops). A running thread that the kernel
// shows asleep (state S or D in /proc) at three looks a millisecond apart (longer than any
// sleep of the engine outside a hook point), without reaching a
// point in between, is blocked outside the schedule (a mutex of its connection held by a
// thread stopped at a point); the controller counts a stall and runs another. Asking the
// kernel, rather than timing the thread, keeps a thread that is only descheduled (a loaded
// machine) from being taken for a blocked one, so a seed replays its schedule exactly as
// long as such blocking is (it is: the same schedule blocks at the same place). A thread that
// runs `stall` without reaching a point (a spin outside the hooks) is a stall too. All
// threads blocked outside the schedule for `deadlock` is a deadlock.
//
// Everything is drawn from `seed`: one seed is one schedule, and replays it.
#ifndef JOURNALKV_TESTS_SCHEDULE_EXPLORER_H_
#define JOURNALKV_TESTS_SCHEDULE_EXPLORER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace journalkv::testing {

struct ScheduleOptions {
  uint64_t seed = 0;
  int change_points = 4;           // PCT's d - 1
  // The change points are drawn from [1, expected_decisions], decision points (see above).
  uint64_t expected_decisions = 300;
  // Decision points: every store (true), or only the named steps of the WAL and checkpoint
  // hooks, not the index's own points (false: fewer, so each change point is likelier to
  // land in a window between two protocol steps).
  bool every_store_decides = true;
  // Instead of (or beside) change points at drawn step numbers: this many protocol steps are
  // drawn by name (kDropPoints), and a thread that reaches one drops below every other, at
  // each visit with probability one half. A race whose window lies between a few named
  // steps of different threads (a reader between its header read and its pin while a restart
  // stops between its clear and its publish) is then found once the right names are drawn,
  // whatever the step numbers (about one schedule in C(22, 3) = 1,540 draws them), where PCT
  // needs each change point on exactly one of a few hundred steps.
  int drop_points = 0;
  // The names to drop at, instead of drawing drop_points of them (for looking at one window).
  // "a>b" holds instead of dropping: a thread reaching a (at each visit with probability one
  // half) sits out until another thread reaches b (or every other thread sits out too), and
  // keeps its priority: a window between a and b of different threads, the rest of the
  // schedule drawn as ever. "p/a" (as a drop, or the a of a hold) names the step at a of a
  // thread whose previous step was at p: a checkpoint's first lock attempt after its thread
  // woke ("idle/shm:lock") or polled ("wait:poll/shm:lock"), where a plain "shm:lock" would
  // name every lock attempt of every thread.
  std::vector<std::string> drop_names;
  absl::Duration stall = absl::Milliseconds(500);
  absl::Duration deadlock = absl::Seconds(20);
  // More steps than this in one schedule is a livelock (threads that step at hook points and
  // never get anywhere, say two waiters each holding what the other waits for).
  uint64_t max_steps = 1'000'000;
  size_t trace_size = 200;  // steps kept for Trace()
  // Threads the engine starts itself (a background checkpointer) join the schedule at their
  // first hook point while Run runs, with a priority drawn then (in step order, so a seed
  // still replays its schedule); Run does not wait for them to end, and once it returns they
  // pass every point freely. A background thread about to sleep until woken ("idle") passes
  // its turn there; the thread that wakes it ("wake") waits, before the next thread is picked,
  // until it has reached a hook point (or been adopted), so that the kernel's wake-up latency
  // does not decide the schedule. Off: such threads pass every point freely.
  bool adopt_threads = false;
};

class Schedule {
 public:
  // A thread at "wait:poll" sits out for 1 to kPollSteps of the other threads' steps.
  static constexpr int kPollSteps = 64;

  // Installs the WAL, checkpoint and index hooks (and removes them when destroyed). One
  // Schedule at a time; threads not started by Run pass every point freely.
  explicit Schedule(const ScheduleOptions& options);
  ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // Called after every step, with the controller's lock held and the hooks off for the
  // calling thread (it may read the index): returns "" or what is wrong.
  void SetStepCheck(std::function<std::string(const char* point)> check) {
    step_check_ = std::move(check);
  }

  // Runs each body on its own thread under the schedule; returns when every one has ended.
  // Aborts the process, printing the trace, on a deadlock.
  void Run(std::vector<std::function<void()>> bodies);

  uint64_t steps() const { return steps_; }
  uint64_t decisions() const { return decisions_; }
  // A load of the shared words, not a decision point (see above).
  static bool IsLoad(const char* point);
  // The protocol steps drop_points draws from: the named steps and the stores.
  static const std::vector<std::string>& DropCandidates();
  // The names drawn ("" if none), for the failure report.
  std::string DropNames() const;
  bool IsDecision(const char* point) const;
  uint64_t stalls() const { return stalls_; }
  // Wakes after which no thread arrived within the bound (AwaitWokenLocked): each may have
  // made the schedule depend on timing.
  uint64_t late_arrivals() const { return late_arrivals_; }
  // How many times the schedule's threads reached the point `name`.
  uint64_t visits(std::string_view name) const;
  int adopted() const { return adopted_; }  // threads adopted (adopt_threads)
  // The first failed step check ("" if none).
  const std::string& step_failure() const { return step_failure_; }
  // The last trace_size steps, one per line: "step thread point".
  std::string Trace() const;

 private:
  enum class State { kStarting, kWaiting, kRunning, kStalled, kDone };
  static void HookPoint(const char* point);
  void Point(int id, const char* point);
  // adopt_threads: the id of a new scheduled thread for the calling one, or -1 (not running).
  int Adopt();
  void Enter(int id);
  void Exit(int id);
  // The highest-priority waiting thread that is not sitting out a wait, else the waiting one
  // that stepped least recently; -1: none.
  int PickLocked();
  // Whether the kernel shows thread `tid` of this process asleep (blocked).
  static bool Sleeping(int tid);
  void RecordLocked(int id, const char* point);
  // At "wake": until the background thread it woke has reached a hook point (adopt_threads).
  void AwaitWokenLocked(std::unique_lock<std::mutex>& lock);

  const ScheduleOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;          // a thread's turn
  std::condition_variable monitor_cv_;  // a thread ended
  std::vector<State> states_;
  std::vector<int> priorities_;
  std::vector<bool> yielding_;  // at a "wait", until another thread steps
  std::vector<int> countdown_;     // at a "wait:poll": other threads' steps still to sit out
  std::vector<uint64_t> last_step_;  // each thread's last step
  std::vector<int> tids_;            // each thread's kernel id (Sleeping)
  // An adopted thread asleep at "idle" (idle_), or woken and not yet at a point (arriving_);
  // arrivals_ counts those, and a thread not yet adopted that a "wake" started.
  std::vector<bool> idle_;
  std::vector<bool> arriving_;
  int arrivals_ = 0;
  bool adoption_expected_ = false;
  std::set<uint64_t> change_steps_;
  std::set<std::string, std::less<>> drop_names_;
  std::map<std::string, std::string, std::less<>> hold_names_;  // "a>b": a -> b
  std::vector<std::string> held_until_;  // a held thread's release point ("" none)
  std::vector<const char*> last_point_;   // each thread's previous step ("" none)
  bool pair_names_ = false;               // a drop or hold names "prev/point"
  std::mt19937_64 rng_;  // drop_points' coin, drawn in step order (one thread runs at a time)
  int next_low_ = 0;  // the priority a thread gets at a change point (then decremented)
  int token_ = -1;    // the thread allowed to run; -1: none (the holder stalled or ended)
  int bodies_ = 0;      // threads Run started: ids 0 .. bodies_-1; adopted ones follow
  int adopted_ = 0;
  bool started_ = false;   // the first turn was given: threads may be adopted
  bool released_ = false;  // Run returned: every point passes freely
  uint64_t steps_ = 0;
  uint64_t decisions_ = 0;
  uint64_t stalls_ = 0;
  uint64_t late_arrivals_ = 0;
  uint64_t progress_ = 0;
  std::map<std::string, uint64_t, std::less<>> visits_;  // by point
  std::vector<std::pair<int, const char*>> trace_;  // a ring of the last trace_size steps
  std::function<std::string(const char* point)> step_check_;
  std::string step_failure_;
};

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_SCHEDULE_EXPLORER_H_
