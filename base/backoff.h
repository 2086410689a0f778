// Backoff: waiting for another connection or process without blocking in the kernel. It sleeps
// `first`, then twice that, up to `max`, until a deadline. Every wait of the engine on another
// holder (a file lock, a -shm lock, a torn wal-index header, a checkpoint, readers' pins) is one
// Backoff; the caps differ by what is waited for, and each says why where it is defined
// (pager/pager_internal.h, wal/wal_connection.cc, wal/checkpoint_copy.cc).
//
//   base::Backoff wait(deadline, kMaxBusySleep);
//   while (!TryLock()) {
//     if (wait.Expired()) return absl::UnavailableError("busy: ...");
//     wait.Sleep();
//   }
//
// Thread-safety: one Backoff per waiting thread.
#ifndef JOURNALKV_BASE_BACKOFF_H_
#define JOURNALKV_BASE_BACKOFF_H_

#include <algorithm>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace journalkv::base {

class Backoff {
 public:
  static constexpr absl::Duration kFirst = absl::Microseconds(20);

  Backoff(absl::Time deadline, absl::Duration max, absl::Duration first = kFirst)
      : deadline_(deadline), max_(max), next_(std::min(first, max)) {}

  // Whether the deadline has passed: the caller gives up with its "busy" error.
  bool Expired() const { return absl::Now() >= deadline_; }

  // The next sleep, advancing the back-off: for a caller that sleeps itself (with a mutex
  // released around the sleep, say).
  absl::Duration Step() {
    const absl::Duration d = next_;
    next_ = std::min(next_ * 2, max_);
    return d;
  }
  // Sleeps the next step.
  void Sleep() { std::this_thread::sleep_for(absl::ToChronoMicroseconds(Step())); }
  // Makes the next sleep `d` (a writer yielding to one that waited first); the doubling goes
  // on from there, capped as before.
  void SetNext(absl::Duration d) { next_ = d; }

 private:
  const absl::Time deadline_;
  const absl::Duration max_;
  absl::Duration next_;
};

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_BACKOFF_H_
