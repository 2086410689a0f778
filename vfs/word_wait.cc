#include "vfs/word_wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace journalkv::vfs {

void WaitForWordChange(const uint32_t* word, uint32_t expected, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return;
  const timespec ts = absl::ToTimespec(timeout);
  // Not FUTEX_PRIVATE_FLAG: the word may be shared with other processes. The kernel compares
  // *word with `expected` atomically with queueing this waiter, so a bump made after the
  // caller's read is never missed: either the compare fails or the wake finds the waiter.
  syscall(SYS_futex, const_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void WakeWordWaiters(const uint32_t* word) {
  syscall(SYS_futex, const_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace journalkv::vfs
