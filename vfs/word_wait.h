// Waiting for a 32-bit word of shared memory to change: Linux futexes, which work across
// processes on a MAP_SHARED mapping (the -shm) and within one on any memory (a heap wal-index).
// A process waiting for another's step (a group flush, the WRITE lock) sleeps in the kernel and
// wakes when the other bumps the word, instead of polling with sleeps whose timer slack alone is
// tens of microseconds. Every wait is bounded: a process that dies before it bumps the word
// wakes no one, and the waiter then looks again on its own.
//
// Thread-safety: any thread, any process.
#ifndef JOURNALKV_VFS_WORD_WAIT_H_
#define JOURNALKV_VFS_WORD_WAIT_H_

#include <cstdint>

#include "absl/time/time.h"

namespace journalkv::vfs {

// Returns when *word no longer holds `expected` (at once if it does not now), when woken by
// WakeWordWaiters (maybe spuriously), or after `timeout`. `word` is 4-byte aligned.
void WaitForWordChange(const uint32_t* word, uint32_t expected, absl::Duration timeout);
// Wakes every thread of every process waiting on `word`.
void WakeWordWaiters(const uint32_t* word);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_WORD_WAIT_H_
