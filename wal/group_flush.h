// wal::GroupFlush: the group-flush role of one WAL connection (W12, W14 in wal/wal_connection.h):
// the FLUSH lock (the -shm lock byte, which keeps other connections out, and a mutex, which keeps
// this connection's other threads out), the reads of the published and appended headers that a
// flush compares (Covers), the publish itself, and what this connection's last flush measured
// (its sync's duration, the commits it covered) for the next one's wait for joining writers
// (WaitForAppenders). WalConnection::AwaitDurable, FlushPendingAsWriter and FlushLocked
// (wal/wal_flush.cc) drive it; the sync and W13's failure records stay with the connection's
// durability role (wal/log_durability.h), which calls this role's Lock and Unlock around them.
//
// Invariants (cited at their call sites; CheckInvariants asserts them in debug builds):
//   F1. FLUSH is both locks or neither, and one thread holds it: the holder is recorded after
//       both are taken and cleared before either is let go, only the holder lets go, and the
//       role's state below (the publish, SyncTook) changes only under it.
//   F2. (W12 a, d) Under FLUSH the published header is never ahead of the appended one:
//       Covers(appended, published) whenever both read whole (published read first: the
//       appended header only grows but under FLUSH, W13 c, which the holder does not race).
//   F3. (W12 h) A flush publishes only a header newer than the published one it read: every
//       publish covers at least one commit, so the last group is at least 1.
//   F4. Writers waiting to become this connection's writer are counted in and out in pairs
//       (AddWaitingWriters): the count is never negative.
//
// The FLUSH word (shm/wal_index.h: the FLUSH kind's wake word, a futex every process shares)
// also tells whether someone holds FLUSH, so that a committer waiting for a flush under way
// need not ask the lock byte (a system call that fails) before it sleeps:
//   Z1. The FLUSH word's seq is odd from the moment a holder holds both locks (TryLock, Lock:
//       WalIndex::MarkHeld, after the lock byte is taken) until its Unlock starts letting them
//       go (MarkReleasing, before the lock byte is let go; hook "flush:releasing" in between),
//       and even otherwise, but after a holder killed in between, which leaves it odd until the
//       next holder's MarkHeld (+2 then). Every other change adds 2 (Unlock's Bump, after both
//       locks are let go, which wakes the sleepers): the parity moves only at a take and at a
//       release, and every take and release moves seq (W14's progress, the sleepers' wake).
//   Z2. A committer (WalConnection::AwaitDurable) that reads seq odd takes it for a flush under
//       way and sleeps on it without trying the lock byte; a sleep that ends with seq
//       unchanged (its bound ran out: the holder was killed or stopped; or a spurious wake) is
//       followed by a real try, which a killed holder's freed byte grants, so a stale odd seq
//       costs one bounded sleep, never a stuck commit. A seq read even while FLUSH is held
//       (between a release's MarkReleasing and its unlock, or a take and its MarkHeld) costs
//       the failed try every committer made before Z1; the release's Bump, after its unlock,
//       changes the value that committer then sleeps on, so it is woken.
//
// Thread-safety: the role is FLUSH to clang's analysis (a capability): TryLock acquires it,
// Unlock releases it, and a caller whose Lock returned OK says so with AssertHeld (a Status
// cannot carry a conditional acquire), so every REQUIRES(FLUSH) (Publish, SyncTook,
// WaitForAppenders, CheckInvariants, and the connection's functions that name flush_) is checked
// by tools/check_thread_safety.sh. Lock, TryLock and Unlock from any thread (F1); the reads and
// Covers from any thread.
#ifndef JOURNALKV_WAL_GROUP_FLUSH_H_
#define JOURNALKV_WAL_GROUP_FLUSH_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/check.h"
#include "base/mutex.h"
#include "shm/wal_index.h"

namespace journalkv::wal {

class ABSL_LOCKABLE GroupFlush {
 public:
  GroupFlush() = default;
  GroupFlush(const GroupFlush&) = delete;
  GroupFlush& operator=(const GroupFlush&) = delete;

  // W12. Whether published header `p` covers the commit whose header is `h` (its log's
  // generation is `h`'s with mx_frame at least `h`'s, or a later generation).
  static bool Covers(const shm::IndexHeader& p, const shm::IndexHeader& h);
  // The published (appended) header of `index`, waiting out a publish (an append) under way;
  // false when it stays torn (ReadWholeHeader, wal/index_recovery.h).
  static bool ReadPublished(const shm::WalIndex& index, shm::IndexHeader* out);
  static bool ReadAppended(const shm::WalIndex& index, shm::IndexHeader* out);
  // Z1: whether FLUSH word value `seq` says a flush is under way (someone holds FLUSH, or was
  // killed holding it).
  static bool UnderWay(uint32_t seq) { return (seq & 1) != 0; }

  // FLUSH on `index` (the connection's; the same one until Unlock). TryLock takes both locks
  // or neither (false: another thread of this connection or another connection holds FLUSH,
  // or the lock call failed, then *error). Lock waits for both (a holder that dies frees the
  // -shm byte): W14, it gives up (Unavailable "busy", naming `what`) only once no flush has
  // published for `patience`, and not before `deadline`; on OK the caller holds FLUSH and
  // calls AssertHeld. Both mark the FLUSH word held once they hold FLUSH (Z1). Unlock marks
  // it released, lets both locks go, then wakes the waiters (Z1).
  bool TryLock(shm::WalIndex& index, absl::Status* error) ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true)
      ABSL_NO_THREAD_SAFETY_ANALYSIS;
  absl::Status Lock(shm::WalIndex& index, absl::Time deadline, absl::Duration patience,
                    const std::string& what) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  void Unlock(shm::WalIndex& index) ABSL_UNLOCK_FUNCTION() ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // After a Lock that returned OK: FLUSH is held, by this thread (F1, checked in debug builds).
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { JKV_DCHECK(HeldHere()); }
  // A connection alone at open (the -shm's DMS byte exclusive, or a private heap index) needs
  // no FLUSH to recover: no one else flushes. Tells the analysis so; checks nothing.
  void AssumeAlone() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}
  // True when the calling thread holds FLUSH (F1).
  bool HeldHere() const {
    return holder_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

  // Holding FLUSH: publishes `appended`, made durable, over `published` (what the flush read
  // before its wait and sync; W12 h: older than `appended`), and counts the group (F3).
  void Publish(shm::WalIndex& index, const shm::IndexHeader& published,
               const shm::IndexHeader& appended) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this);
  // Holding FLUSH: this flush's sync took `took` (the bound of the next flush's wait).
  void SyncTook(absl::Duration took) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    last_sync_ns_.store(absl::ToInt64Nanoseconds(took), std::memory_order_relaxed);
  }
  // Group commit's convoy (wal_flush.cc): before its sync, a flush waits for as many commits
  // past `published` as its last flush covered, and while `appending_here` (this connection's
  // writer holds WRITE), a writer waits to (AddWaitingWriters) or another connection's writer
  // sleeps waiting for WRITE, for at most its last sync's duration (within 20 us and 1 ms).
  // `on_wait` runs at each turn (a test hook).
  void WaitForAppenders(const shm::WalIndex& index, const shm::IndexHeader& published,
                        absl::FunctionRef<bool()> appending_here,
                        absl::FunctionRef<void()> on_wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this);

  // The caller's threads that wait to become this connection's writer (+1 when one starts
  // waiting, -1 when it stops), which a flush waits for (F4).
  void AddWaitingWriters(int delta) {
    waiting_writers_.fetch_add(delta, std::memory_order_acq_rel);
  }

  // Debug builds, holding FLUSH: asserts F1-F4 over `index`. A no-op under NDEBUG.
  void CheckInvariants(const shm::WalIndex& index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(this);

  // Test hooks.
  uint32_t last_group() const { return last_group_.load(std::memory_order_relaxed); }
  int waiting_writers() const { return waiting_writers_.load(std::memory_order_relaxed); }

 private:
  // This connection's threads, one FLUSH at a time: the -shm's byte is per File. It guards no
  // memory. Taken after the writer role's mutex (Writer::role_mu), never before it.
  base::Mutex mu_;
  std::atomic<std::thread::id> holder_{};  // F1: the thread holding FLUSH, or none
  std::atomic<int64_t> last_sync_ns_{0};   // this connection's last group flush's sync
  std::atomic<int> waiting_writers_{0};    // AddWaitingWriters (F4)
  std::atomic<uint32_t> last_group_{1};    // commits this connection's last flush covered (F3)
  std::atomic<uint32_t> ignored_write_waiters_{0};  // see WaitForAppenders
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_GROUP_FLUSH_H_
