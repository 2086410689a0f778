// CommitPromise and CommitPipeline (commit_pipeline.h, N1-N5).
#include "pager/commit_pipeline.h"

#include "wal/wal_connection.h"

namespace journalkv::pager {

std::shared_ptr<CommitPromise> CommitPromise::Settled(absl::Status status, CommitRecord record) {
  auto p = std::make_shared<CommitPromise>(std::move(record));
  p->Settle(std::move(status));
  return p;
}

absl::Status CommitPromise::Wait() const {
  base::MutexLock lock(&mu_);
  while (!settled_.load(std::memory_order_relaxed)) cv_.Wait(&mu_);
  return status_;
}

void CommitPromise::Settle(absl::Status status) {
  {
    base::MutexLock lock(&mu_);
    if (settled_.load(std::memory_order_relaxed)) return;
    status_ = std::move(status);
    settled_.store(true, std::memory_order_release);  // N5: after the status
  }
  cv_.NotifyAll();
}

void CommitPipeline::Push(std::shared_ptr<CommitPromise> promise, FinishFn finish,
                          DurableFn on_durable) {
  base::MutexLock lock(&mu_);
  queue_.push_back(Entry{std::move(promise), std::move(finish), std::move(on_durable)});  // N1
  if (!running_) {
    // A thread that set running_ false has left Loop (under mu_): joining it cannot wait long.
    if (thread_.joinable()) thread_.join();
    running_ = true;
    thread_ = std::thread([this] { Loop(); });
  }
  // A flusher busy flushing takes this commit with the next front: no wake (a system call
  // per commit, the commit's largest cost on a file system whose sync costs nothing).
  if (idle_) cv_.NotifyAll();
}

void CommitPipeline::Run(Entry& e) {
  wal::CallWalHook("pipeline:flushing");
  absl::Status s = e.finish();  // N2, N3: the flush, and on failure the sticky error
  if (s.ok() && e.on_durable) e.on_durable(e.promise->record());  // N2: hooks before the ack
  e.promise->Settle(std::move(s));
  wal::CallWalHook("pipeline:settled");
}

void CommitPipeline::Loop() {
  while (true) {
    Entry* front;
    {
      base::MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) {
        idle_ = true;
        cv_.Wait(&mu_);
        idle_ = false;
      }
      if (queue_.empty()) {  // N4: stops only with nothing queued
        running_ = false;
        cv_.NotifyAll();
        return;
      }
      // A deque's push_back keeps references to its elements: the front stays put while
      // writers queue more behind it.
      front = &queue_.front();
    }
    Run(*front);  // N1: the front only, settled before it is popped
    base::MutexLock lock(&mu_);
    queue_.pop_front();
    cv_.NotifyAll();
  }
}

void CommitPipeline::Drain() {
  while (true) {
    std::thread t;
    {
      base::MutexLock lock(&mu_);
      if (queue_.empty() && !running_) {
        if (thread_.joinable()) t = std::move(thread_);
        stop_ = false;
      } else {
        stop_ = true;
        cv_.NotifyAll();
        while (running_) cv_.Wait(&mu_);
        t = std::move(thread_);
      }
    }
    if (t.joinable()) t.join();
    base::MutexLock lock(&mu_);
    if (queue_.empty() && !running_) {
      stop_ = false;
      return;
    }
  }
}

size_t CommitPipeline::pending() const {
  base::MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace journalkv::pager
