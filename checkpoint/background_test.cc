#include "checkpoint/background.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::checkpoint {
namespace {

using ::testing::HasSubstr;

TEST(BackgroundCheckpointerTest, NoThreadUntilWoken) {
  std::atomic<int> steps{0};
  BackgroundCheckpointer b([&](const std::atomic<bool>&) -> absl::StatusOr<bool> {
    ++steps;
    return false;
  }, absl::Milliseconds(1));
  EXPECT_FALSE(b.GetStats().running);
  b.Stop();
  EXPECT_EQ(steps.load(), 0);
  b.Wake();  // after Stop: no thread
  EXPECT_FALSE(b.GetStats().running);
}

TEST(BackgroundCheckpointerTest, WaitUntilReturnsOnceAStepMadeItTrue) {
  std::atomic<int> copied{0};
  BackgroundCheckpointer b([&](const std::atomic<bool>&) -> absl::StatusOr<bool> {
    ++copied;
    return false;
  }, absl::Milliseconds(1));
  EXPECT_TRUE(b.WaitUntil([&] { return copied.load() >= 3; }, absl::InfiniteFuture()));
  EXPECT_GE(b.GetStats().steps, 3u);  // polls keep stepping while a writer waits
  EXPECT_TRUE(b.GetStats().running);
}

TEST(BackgroundCheckpointerTest, WaitUntilGivesUpAtTheDeadline) {
  BackgroundCheckpointer b([](const std::atomic<bool>&) -> absl::StatusOr<bool> { return false; },
                           absl::Milliseconds(1));
  EXPECT_FALSE(b.WaitUntil([] { return false; }, absl::Now() + absl::Milliseconds(20)));
}

TEST(BackgroundCheckpointerTest, StopInterruptsARunningStep) {
  std::atomic<bool> in_step{false};
  std::atomic<bool> saw_stop{false};
  BackgroundCheckpointer b([&](const std::atomic<bool>& stop) -> absl::StatusOr<bool> {
    in_step = true;
    while (!stop.load()) std::this_thread::yield();  // a copy that checks between pages
    saw_stop = true;
    return false;
  }, absl::Milliseconds(1));
  b.Wake();
  while (!in_step.load()) std::this_thread::yield();
  b.Stop();  // returns only once the step has seen the flag and the thread ended
  EXPECT_TRUE(saw_stop.load());
  EXPECT_FALSE(b.GetStats().running);
}

TEST(BackgroundCheckpointerTest, AnErrorIsReportedOnceAndCounted) {
  std::atomic<int> calls{0};
  BackgroundCheckpointer b([&](const std::atomic<bool>&) -> absl::StatusOr<bool> {
    if (++calls == 1) return absl::DataLossError("db: page 7 torn");
    return false;
  }, absl::Milliseconds(1));
  EXPECT_FALSE(b.has_error());
  EXPECT_TRUE(b.WaitUntil([&] { return calls.load() >= 2; }, absl::InfiniteFuture()));
  EXPECT_TRUE(b.has_error());
  absl::Status s = b.TakeError();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("background checkpoint: db: page 7 torn"));
  EXPECT_FALSE(b.has_error());
  JKV_EXPECT_OK(b.TakeError());  // once
  const BackgroundCheckpointer::Stats stats = b.GetStats();
  EXPECT_EQ(stats.errors, 1u);
  EXPECT_THAT(stats.last_error, HasSubstr("page 7 torn"));  // kept for Stats
}

// A disk that stays full fails every step: one report until a step succeeds (each step's
// error kept, as before, failed every other call of the handle while commits worked).
TEST(BackgroundCheckpointerTest, AFullDiskIsReportedOnceUntilAStepSucceeds) {
  std::atomic<int> calls{0};
  std::atomic<bool> full{true};
  BackgroundCheckpointer b([&](const std::atomic<bool>&) -> absl::StatusOr<bool> {
    ++calls;
    if (full.load()) return absl::ResourceExhaustedError("db: pwrite: No space left on device");
    return false;
  }, absl::Milliseconds(1));
  // n more steps ended (Stats count a step once its error, if any, is kept).
  auto steps = [&](uint64_t n) {
    const uint64_t until = b.GetStats().steps + n;
    while (b.GetStats().steps < until) {
      b.Wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  steps(1);
  EXPECT_TRUE(absl::IsResourceExhausted(b.TakeError()));
  steps(3);  // still full
  JKV_EXPECT_OK(b.TakeError());
  EXPECT_GE(b.GetStats().errors, 4u);  // counted all the same
  full = false;
  steps(2);  // a step succeeds
  full = true;
  steps(2);
  EXPECT_TRUE(absl::IsResourceExhausted(b.TakeError()));  // full again: told again
}

TEST(BackgroundCheckpointerTest, AStepThatReportsMoreRunsAgain) {
  std::atomic<int> calls{0};
  BackgroundCheckpointer b([&](const std::atomic<bool>&) -> absl::StatusOr<bool> {
    return ++calls < 5;
  }, absl::Hours(1));
  b.Wake();
  while (calls.load() < 5) std::this_thread::yield();
  b.Stop();
  EXPECT_EQ(calls.load(), 5);  // then it sleeps: no poll without a waiter
}

}  // namespace
}  // namespace journalkv::checkpoint
