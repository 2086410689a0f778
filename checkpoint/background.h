// The background checkpointer: one thread per open database that runs checkpoint steps when a
// policy wakes it (checkpoint/policy.h, kWakeBackground and kBlockUnder).
//
//   +---------+ first Wake      +----------+ woken, or a writer waits  +---------+
//   | UNBORN  | --------------> | SLEEPING | ------------------------> | RUNNING | step()
//   | no      |                 |          | <------------------------ |         |
//   | thread  |                 +----------+  step done, nothing more  +---------+
//   +---------+                      |  Stop (sets the stop flag: a running step       |
//        | Stop                      v  returns at its next page, then the thread ends)|
//        +----------------------> STOPPED <--------------------------------------------+
//
// A step that reports more work runs again at once. While a writer waits in WaitUntil, it asks
// for another step each time it looks (after each step, and every `poll`: another process's
// checkpointer, or readers ending, may be what it needs). A step's error is kept, the
// first one until TakeError reports it, and counted; the thread goes on. A ResourceExhausted
// (a full disk, busy) is kept only once until a step succeeds; the later ones are counted.
//
// Thread-safety: every method may be called from any thread; Stop is idempotent and must not
// be called from within a step.
#ifndef JOURNALKV_CHECKPOINT_BACKGROUND_H_
#define JOURNALKV_CHECKPOINT_BACKGROUND_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace journalkv::checkpoint {

class BackgroundCheckpointer {
 public:
  // Runs one checkpoint and returns whether another one right away could copy more. `stop` is
  // set by Stop: the step should return soon (Checkpoint checks it between pages).
  using Step = std::function<absl::StatusOr<bool>(const std::atomic<bool>& stop)>;

  struct Stats {
    uint64_t steps = 0;
    uint64_t errors = 0;
    absl::Duration busy;      // time spent in steps
    std::string last_error;   // empty: none
    bool running = false;     // the thread exists
  };

  BackgroundCheckpointer(Step step, absl::Duration poll);
  ~BackgroundCheckpointer();  // Stop()
  BackgroundCheckpointer(const BackgroundCheckpointer&) = delete;
  BackgroundCheckpointer& operator=(const BackgroundCheckpointer&) = delete;

  // Asks for a step soon; starts the thread on first use. No-op once stopped.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes the thread and blocks until `done()` returns true, `deadline` passes or the
  // checkpointer stops; returns done()'s last answer. `done` is re-checked after each step and
  // every poll, with this object's mutex held (it must not call back into this object).
  bool WaitUntil(const std::function<bool()>& done, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the thread: a running step is told to stop and waited for. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The first error no call has reported yet (OK: none); reporting clears it.
  absl::Status TakeError() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether TakeError would return an error (a cheap check for every API call).
  bool has_error() const { return has_error_.load(std::memory_order_acquire); }
  // Whether a writer is waiting in WaitUntil (a step may then want to finish its work now).
  bool writers_waiting() const { return waiting_.load(std::memory_order_acquire) > 0; }
  Stats GetStats() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks for a step and starts the thread on first use (no-op once stopping).
  void RequestStepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Step step_;
  const absl::Duration poll_;
  std::atomic<bool> stop_flag_{false};
  std::atomic<bool> has_error_{false};
  std::atomic<int> waiting_{0};

  base::Mutex mu_;
  base::CondVar cv_;  // pending_, stopping_, a step's end
  std::thread thread_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status unreported_ ABSL_GUARDED_BY(mu_);
  // A ResourceExhausted was kept for TakeError since the last step that succeeded.
  bool exhausted_reported_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::checkpoint

#endif  // JOURNALKV_CHECKPOINT_BACKGROUND_H_
