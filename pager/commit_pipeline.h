// Pipelined commits (WriteTxn::CommitAsync): a commit appended to the WAL and not yet durable
// is a CommitPromise, settled later by the connection's flusher thread (CommitPipeline), so the
// writer can begin and append its next transaction while this one's group flush is in flight
// (wal/wal_connection.h W12: the next transaction builds on the appended header). Design and
// measurements: docs/performance-design.md, "Pipelined commits".
//
// Who flushes. One flusher thread per connection (WalStrategy), started by the first commit
// that needs a flush: it takes the queued commits in append order and waits for each one's flush
// (WalConnection::AwaitDurable), taking FLUSH and syncing itself when no other thread or
// connection holds it. The writer meanwhile holds WRITE for its next transaction, so the sync
// overlaps that append (a waiter that flushed in Wait would only batch, never overlap: the
// numbers are in bench/results-2026-12-07/pipelined/NOTES.md).
//
// Invariants (cited at their call sites; the hooks are wal::CallWalHook's points):
//   N1. Acknowledgements follow commit order. A commit is queued (Push) by its writer while it
//       still holds the writer role (WRITE and the handle's writer_active_), before End lets
//       the next writer of any thread of this handle append: the queue's order is the order of
//       the appends. The flusher settles the queue's front only, and pops it after settling, so
//       promise k is settled before promise k+1 (a waiter of k+1 that returns has k settled).
//   N2. A promise settles OK only after a published header covers its commit (AwaitDurable
//       returned OK: W1 durable, W12 visible) and after its on_durable callback (the engine's
//       commit hooks) returned: hooks fire on the flusher thread, in commit order, before the
//       commit's Wait returns. Readers, of this handle or another, see the commit only once
//       a flush that synced it published it: its own, or an earlier one of another writer
//       (W12 b, c: a WAL2 switch flushes what is pending), so possibly before its Wait
//       returns, never before it is durable (hook "pipeline:flushing" before the flusher
//       waits for it, "pipeline:settled" after it settles; tests/wal_pipelined_sweep_test).
//   N3. A failed flush fails every commit it covered and every later one built on it: the
//       wal layer drops them (W13: AwaitDurable returns the failure, or DataLoss for a commit
//       appended on top of a dropped one), and the finish step makes the failure the handle's
//       sticky error (I7) before it settles the promise, so a writer that saw the failure in
//       Wait finds its next BeginWrite failing with it. A commit appended after the failure
//       was recorded builds on the published state (the reset, W13 c) and is flushed as any.
//   N4. Nothing queued is lost at close: Drain returns only once the queue is empty and the
//       thread joined (each commit flushed or failed, its promise settled); WalStrategy::Close
//       drains before it stops the background checkpointer or lets the connection go.
//   N5. The queue and the thread's state change only under mu_; a promise's status is written
//       once, under its own mutex, before `settled_` is set (release), so Ready's acquire
//       load that sees true sees the status.
#ifndef JOURNALKV_PAGER_COMMIT_PIPELINE_H_
#define JOURNALKV_PAGER_COMMIT_PIPELINE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "pager/txn.h"

namespace journalkv::pager {

// The outcome of one commit made by WriteTxn::CommitAsync: settled once, with OK (durable and
// visible, as the sync level promises) or the commit's error. Any thread.
class CommitPromise {
 public:
  explicit CommitPromise(CommitRecord record) : record_(std::move(record)) {}
  CommitPromise(const CommitPromise&) = delete;
  CommitPromise& operator=(const CommitPromise&) = delete;

  // A promise settled now with `status`.
  static std::shared_ptr<CommitPromise> Settled(absl::Status status, CommitRecord record = {});

  // Blocks until settled; returns the status (every call the same).
  absl::Status Wait() const;
  // Whether it is settled (one acquire load, N5).
  bool Ready() const { return settled_.load(std::memory_order_acquire); }
  // Settles it; the first call only counts (N5).
  void Settle(absl::Status status);
  // What the commit wrote (fixed at construction).
  const CommitRecord& record() const { return record_; }

 private:
  const CommitRecord record_;
  mutable base::Mutex mu_;
  mutable base::CondVar cv_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> settled_{false};
};

// One connection's flusher: a FIFO of appended commits and the thread that settles them.
class CommitPipeline {
 public:
  // Runs on the flusher thread for one queued commit: waits for its flush and notes the result
  // (WalStrategy::FinishCommit); an error fails the commit.
  using FinishFn = std::function<absl::Status()>;
  // Runs on the flusher thread after a commit's finish succeeded, before its promise settles
  // (N2): the engine's commit hooks. May be empty.
  using DurableFn = std::function<void(const CommitRecord&)>;

  CommitPipeline() = default;
  ~CommitPipeline() { Drain(); }
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // N1: called by the writer holding the writer role, in append order. Starts the thread when
  // none runs. After Drain, the commit is finished on the calling thread at once (a close
  // under way: nothing may stay queued).
  void Push(std::shared_ptr<CommitPromise> promise, FinishFn finish, DurableFn on_durable);
  // N4: returns once every queued commit is settled and the thread has stopped. A later Push
  // starts it again.
  void Drain();
  // Commits queued and not yet settled (tests).
  size_t pending() const;

 private:
  struct Entry {
    std::shared_ptr<CommitPromise> promise;
    FinishFn finish;
    DurableFn on_durable;
  };
  static void Run(Entry& e);
  void Loop();

  mutable base::Mutex mu_;
  base::CondVar cv_;  // the queue changed, or stop_ was set
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;  // the flusher waits on cv_ for a commit
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_COMMIT_PIPELINE_H_
