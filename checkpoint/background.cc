#include "checkpoint/background.h"

#include <algorithm>
#include <utility>

#include "wal/checkpoint_copy.h"

namespace journalkv::checkpoint {

BackgroundCheckpointer::BackgroundCheckpointer(Step step, absl::Duration poll)
    : step_(std::move(step)), poll_(poll) {}

BackgroundCheckpointer::~BackgroundCheckpointer() { Stop(); }

void BackgroundCheckpointer::Wake() {
  {
    base::MutexLock lock(&mu_);
    RequestStepLocked();
  }
  // The schedule explorer's cue that the thread (started now, or asleep at "idle") is about to
  // run: it waits for it to reach a hook point before it picks the next thread, so that a seed
  // replays its schedule whatever the kernel's wake-up latency. Outside mu_, which the woken
  // thread needs.
  wal::CallCheckpointHook("wake");
}

void BackgroundCheckpointer::RequestStepLocked() {
  if (stopping_) return;
  pending_ = true;
  if (!started_) {
    started_ = true;
    stats_.running = true;
    thread_ = std::thread([this] { Run(); });
  }
  cv_.NotifyAll();
}

bool BackgroundCheckpointer::WaitUntil(const std::function<bool()>& done, absl::Time deadline) {
  base::MutexLock lock(&mu_);
  waiting_.fetch_add(1, std::memory_order_acq_rel);
  bool ok = done();
  while (!ok && !stopping_ && absl::Now() < deadline) {
    // Every look that finds the goal unmet asks for one more step, in the same critical
    // section as the look: a request made separately could be taken by a step that ends
    // before this wait begins, leaving the thread asleep and this writer polling forever.
    RequestStepLocked();
    // A step's end wakes us; the poll covers progress made elsewhere (another process).
    cv_.WaitUntil(&mu_, std::min(deadline, absl::Now() + poll_));
    ok = done();
  }
  waiting_.fetch_sub(1, std::memory_order_acq_rel);
  return ok;
}

void BackgroundCheckpointer::Stop() {
  std::thread thread;
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    stop_flag_.store(true, std::memory_order_release);
    cv_.NotifyAll();
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
  base::MutexLock lock(&mu_);
  stats_.running = false;
}

absl::Status BackgroundCheckpointer::TakeError() {
  base::MutexLock lock(&mu_);
  absl::Status s = std::move(unreported_);
  unreported_ = absl::OkStatus();
  has_error_.store(false, std::memory_order_release);
  return s;
}

BackgroundCheckpointer::Stats BackgroundCheckpointer::GetStats() {
  base::MutexLock lock(&mu_);
  return stats_;
}

void BackgroundCheckpointer::Run() {
  base::MutexLock lock(&mu_);
  while (true) {
    if (!pending_ && !stopping_) wal::CallCheckpointHook("idle");  // the schedule explorer's cue
    while (!pending_ && !stopping_) cv_.Wait(&mu_);  // a waiting writer asks every poll
    if (stopping_) break;
    pending_ = false;
    mu_.Unlock();
    const absl::Time start = absl::Now();
    absl::StatusOr<bool> more = step_(stop_flag_);
    const absl::Duration took = absl::Now() - start;
    mu_.Lock();
    ++stats_.steps;
    stats_.busy += took;
    if (!more.ok() && !stopping_) {
      ++stats_.errors;
      stats_.last_error = more.status().ToString();
      // A full disk (or busy) stays so across steps: reported once until a step succeeds,
      // or it would fail every other call while commits, which the log has room for, work.
      const bool exhausted =
          absl::IsResourceExhausted(more.status()) || absl::IsUnavailable(more.status());
      const bool repeat = exhausted && exhausted_reported_;
      if (exhausted) exhausted_reported_ = true;
      if (unreported_.ok() && !repeat) {
        unreported_ = absl::Status(more.status().code(),
                                   "background checkpoint: " + std::string(more.status().message()));
        has_error_.store(true, std::memory_order_release);
      }
    } else if (more.ok()) {
      exhausted_reported_ = false;
      if (*more) pending_ = true;
    }
    cv_.NotifyAll();
  }
}

}  // namespace journalkv::checkpoint
