// HookGate: pauses the first thread that reaches an armed test hook point (any layer's hook:
// wal::SetWalHookForTesting, wal::SetCheckpointHookForTesting, shm::SetIndexHookForTesting)
// until the test releases it, so that a test runs two threads' steps in an exact order.
// In base/ so the tests of every layer can use it.
#ifndef JOURNALKV_BASE_HOOK_GATE_H_
#define JOURNALKV_BASE_HOOK_GATE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

namespace journalkv::testing {

// Pauses the first thread that reaches the armed point, until released. Armed by the test's
// main thread before it starts the thread to pause.
class HookGate {
 public:
  static HookGate& Get() {
    static HookGate gate;
    return gate;
  }
  void Arm(std::string point) {
    std::lock_guard<std::mutex> lock(mu_);
    point_ = std::move(point);
    reached_ = released_ = false;
  }
  void At(const char* point) {
    std::unique_lock<std::mutex> lock(mu_);
    if (point_ != point || reached_) return;
    reached_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  // False when no thread reached the point in 30 s (the test would hang).
  [[nodiscard]] bool WaitUntilReached() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return reached_; });
  }
  bool reached() {
    std::lock_guard<std::mutex> lock(mu_);
    return reached_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string point_;
  bool reached_ = false;
  bool released_ = false;
};

}  // namespace journalkv::testing

#endif  // JOURNALKV_BASE_HOOK_GATE_H_
