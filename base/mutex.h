// A std::mutex with Clang thread-safety annotations, and a condition variable over it. journalkv
// uses std::mutex rather than absl::Mutex because Debian's Abseil is not built with
// ThreadSanitizer: TSan understands pthread mutexes natively but not Abseil's futex-based one, and
// would report false races. tools/check_thread_safety.sh checks the annotations with clang.
#ifndef JOURNALKV_BASE_MUTEX_H_
#define JOURNALKV_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace journalkv::base {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A std::condition_variable that waits on a Mutex. A wait releases the mutex while it sleeps and
// holds it again when it returns, so to the analysis the caller holds it throughout. Wakeups may
// be spurious: callers wait in a loop on their condition.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still locked: the caller unlocks it
  }
  // std::cv_status::timeout once `deadline` has passed.
  std::cv_status WaitUntil(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, absl::ToChronoTime(deadline));
    lock.release();  // still locked: the caller unlocks it
    return status;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_MUTEX_H_
