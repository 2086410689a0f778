// What the files of WalConnection (wal_*.cc) share and nothing else includes.
#ifndef JOURNALKV_WAL_WAL_INTERNAL_H_
#define JOURNALKV_WAL_WAL_INTERNAL_H_

#include <cstdint>

#include "absl/time/time.h"
#include "base/backoff.h"

namespace journalkv::wal::internal {

// A wait for another connection's step in the WAL protocol (a -shm lock, a torn header, a
// reader mark, the WRITE or CKPT lock) sleeps from 20 us doubling up to this: those steps take
// microseconds, and a commit that waits longer than its own flush for one is time lost.
inline constexpr absl::Duration kMaxWait = absl::Microseconds(250);
// A reader that finds the two header copies different retries this often before it suspects
// that the publishing writer died (the copies differ for the few nanoseconds of a publish).
inline constexpr int kTornHeaderSpins = 1000;

// One sleep of `wait`, after the hook point "wait" (where a schedule explorer runs another
// connection).
void Sleep(base::Backoff& wait);
// 64 random bits (a process's slot owner tag, a rebuilt index's first change word).
uint64_t RandomId();
// SetFirstGenerationForTesting's value (0 unless a test set it).
uint32_t FirstGeneration();
// W12 g: a WAL log copied up to a few frames of its published end and at least this long is
// restarted by a writer, also one that finds commits pending, after it flushes and copies
// them: a few syncs in one writer's BeginWrite, worth it once per this many frames, and the
// default policy's checkpoints (at 1000 frames) reach it. Shorter logs wait for a writer that
// finds everything copied and nothing pending, so that a background checkpointer that catches
// up after every few commits never sends a writer into the database file's sync.
inline constexpr uint32_t kRestartThroughPendingFrames = 1000;
uint32_t RestartThroughPendingFrames();
// ... and when at most this many of its published frames are still to copy: the writer copies
// them too (the policy's checkpoints, after each commit, keep it that close; requiring none
// left let 50 of them run, one per commit, before a writer happened to begin right after one).
inline constexpr uint32_t kRestartCopyFrames = 64;

// W14: a wait for FLUSH, or for a flush to publish, gives up only after this long without a
// flush that published (or the busy timeout, when longer): a flush is one sync, and a disk
// under load can take seconds for one, which must not fail commits whose outcome would then
// be unknown; only a holder that stopped (a debugger, SIGSTOP) makes no progress for this
// long. 30 s unless a test sets it.
inline constexpr absl::Duration kMinFlushWait = absl::Seconds(30);
absl::Duration FlushWait(absl::Duration busy_timeout);
}  // namespace journalkv::wal::internal

#endif  // JOURNALKV_WAL_WAL_INTERNAL_H_
