// Tests of WaitForWordChange / WakeWordWaiters: a waiter returns when the word changes and is
// woken, returns at once when the word already differs, times out when no one wakes it, and is
// woken by another process through a MAP_SHARED mapping (the -shm's case).
#include "vfs/word_wait.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace journalkv::vfs {
namespace {

void Bump(uint32_t* word) {
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_release);
  WakeWordWaiters(word);
}

TEST(WordWaitTest, ReturnsAtOnceWhenTheWordAlreadyDiffers) {
  alignas(4) uint32_t word = 7;
  const absl::Time start = absl::Now();
  WaitForWordChange(&word, 6, absl::Seconds(10));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(WordWaitTest, TimesOutWhenNoOneWakes) {
  alignas(4) uint32_t word = 1;
  const absl::Time start = absl::Now();
  WaitForWordChange(&word, 1, absl::Milliseconds(30));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(25));  // the kernel may round down a little, never to 0
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(WordWaitTest, AnotherThreadWakesTheWaiter) {
  alignas(4) uint32_t word = 0;
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    // Spurious wakeups are allowed: wait until the word really changed.
    while (std::atomic_ref<uint32_t>(word).load(std::memory_order_acquire) == 0) {
      WaitForWordChange(&word, 0, absl::Seconds(30));
    }
    woke = true;
  });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(woke.load());
  const absl::Time start = absl::Now();
  Bump(&word);
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));  // woken, not timed out at 30 s
}

TEST(WordWaitTest, AnotherProcessWakesTheWaiterThroughSharedMemory) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* word = static_cast<uint32_t*>(mem);
  *word = 0;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const absl::Time start = absl::Now();
    while (std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire) == 0 &&
           absl::Now() - start < absl::Seconds(20)) {
      WaitForWordChange(word, 0, absl::Seconds(30));
    }
    _exit(absl::Now() - start < absl::Seconds(10) ? 0 : 1);
  }
  absl::SleepFor(absl::Milliseconds(20));
  Bump(word);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  munmap(mem, 4096);
}

}  // namespace
}  // namespace journalkv::vfs
