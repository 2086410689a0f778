// The FLUSH word's parity (wal/group_flush.h Z1, Z2): a committer that finds a flush under way
// sleeps without trying the FLUSH lock byte, and nothing stays stuck when a holder dies.
//   - Z1: the word is odd while a connection holds FLUSH (paused at "flush:synced") and even
//     once it let go; a committer of another connection that waits for that flush sleeps
//     without a failed try of the lock byte first (its flush_lock_misses are one fewer than its
//     sleeps; before Z1 every sleep followed a failed try).
//   - Z1's release: a committer that arrives between the release's mark and its unlock
//     ("flush:releasing") tries the byte, misses, sleeps, and is woken by the release.
//   - Z2 with real processes: a process killed holding FLUSH leaves the word odd; the next
//     commit of another process still completes (a sleep that ended with the word unchanged is
//     followed by a real try, which the dead holder's freed byte grants), and publishes the
//     killed flusher's appended commit. A process killed asleep waiting for a flush leaves
//     nothing stuck either, and its appended commit is published by the next flush.
// The tests read the words straight from the -shm file (shm/wal_index.h's layout).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "base/hook_gate.h"
#include "vfs/file_system_testing.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

// The FLUSH kind's wake word (seq, then its sleepers), read from a read-only map of the -shm.
class FlushWord {
 public:
  explicit FlushWord(const std::string& shm_path) {
    const int fd = open(shm_path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << shm_path;
    if (fd < 0) return;
    void* p = mmap(nullptr, shm::kWakeOffset + 16, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT_NE(p, MAP_FAILED);
    if (p != MAP_FAILED) base_ = static_cast<uint8_t*>(p);
  }
  ~FlushWord() {
    if (base_ != nullptr) munmap(base_, shm::kWakeOffset + 16);
  }
  uint32_t seq() const { return Load(shm::kWakeOffset + 8); }
  uint32_t sleepers() const { return Load(shm::kWakeOffset + 12); }
  bool ok() const { return base_ != nullptr; }

 private:
  uint32_t Load(size_t offset) const {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_ + offset)).load();
  }
  uint8_t* base_ = nullptr;
};

struct ScopedHook {
  explicit ScopedHook(wal::WalHook hook) { wal::SetWalHookForTesting(hook); }
  ~ScopedHook() { wal::SetWalHookForTesting(nullptr); }
};

Options FullWal() {
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kFull;
  o.page_size = 1024;
  o.checkpoint_policy = "manual";
  return o;
}

// Waits (up to 30 s) until `done` holds.
template <typename F>
bool Eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

bool Has(Db& db, const std::string& key) {
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = db.BeginRead();
  if (!r.ok()) return false;
  absl::StatusOr<std::optional<std::string>> v = (*r)->Get(key);
  return v.ok() && v->has_value();
}

// Z1, Z2: a, paused at "flush:synced", holds FLUSH; b's commit, appended after a's flush read
// the appended header, waits for a flush. b sleeps without trying the lock byte first.
TEST(FlushWordTest, ACommitterSleepsThroughAFlushUnderWayWithoutTryingTheLock) {
  vfs::ScopedTempDir dir;
  const std::string path = dir.path() + "/z.db";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> a, Db::Open(path, FullWal()));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> b, Db::Open(path, FullWal()));
  ASSERT_THAT(a->Put("warm", "x"), IsOk());
  FlushWord word(path + "-shm");
  ASSERT_TRUE(word.ok());
  const uint32_t before = word.seq();
  EXPECT_EQ(before % 2, 0u) << "no flush under way";

  testing::HookGate& gate = testing::HookGate::Get();
  gate.Arm("flush:synced");
  ScopedHook hook(+[](const char* point) { testing::HookGate::Get().At(point); });
  std::thread flusher([&] { EXPECT_THAT(a->Put("a", "1"), IsOk()); });
  ASSERT_TRUE(gate.WaitUntilReached());
  EXPECT_EQ(word.seq() % 2, 1u) << "Z1: odd while a holds FLUSH";
  const uint32_t sleepers = word.sleepers();

  std::thread committer([&] { EXPECT_THAT(b->Put("b", "1"), IsOk()); });
  ASSERT_TRUE(Eventually([&] { return word.sleepers() > sleepers; })) << "b never slept";
  // b's sleeps run out (1 ms each) while a stays paused: from its second turn on it tries.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gate.Release();
  flusher.join();
  committer.join();
  EXPECT_EQ(word.seq() % 2, 0u) << "Z1: even once FLUSH is let go";
  const DbStats s = b->Stats();
  EXPECT_GE(s.flush_sleeps, 1u);
  // Before Z1 each of b's sleeps followed a failed try of the byte; its first does not now.
  EXPECT_LT(s.flush_lock_misses, s.flush_sleeps);
  EXPECT_TRUE(Has(*a, "b"));
  EXPECT_TRUE(Has(*b, "a"));
}

// Z1's release: b arrives while a, at "flush:releasing", has marked the word released but still
// holds the lock byte. b's try misses, it sleeps on the even word, and a's release wakes it;
// b then flushes its own commit (a's flush did not cover it).
TEST(FlushWordTest, ACommitterArrivingAsAFlushLetsGoIsWoken) {
  vfs::ScopedTempDir dir;
  const std::string path = dir.path() + "/r.db";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> a, Db::Open(path, FullWal()));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> b, Db::Open(path, FullWal()));
  ASSERT_THAT(a->Put("warm", "x"), IsOk());
  FlushWord word(path + "-shm");
  ASSERT_TRUE(word.ok());

  testing::HookGate& gate = testing::HookGate::Get();
  gate.Arm("flush:releasing");
  ScopedHook hook(+[](const char* point) { testing::HookGate::Get().At(point); });
  std::thread flusher([&] { EXPECT_THAT(a->Put("a", "1"), IsOk()); });
  ASSERT_TRUE(gate.WaitUntilReached());
  EXPECT_EQ(word.seq() % 2, 0u) << "Z1: marked released before the byte is let go";
  const uint32_t sleepers = word.sleepers();
  const uint64_t flushes = b->Stats().group_flushes;
  std::thread committer([&] { EXPECT_THAT(b->Put("b", "1"), IsOk()); });
  ASSERT_TRUE(Eventually([&] { return word.sleepers() > sleepers; })) << "b never slept";
  gate.Release();
  flusher.join();
  committer.join();
  const DbStats s = b->Stats();
  EXPECT_GE(s.flush_lock_misses, 1u) << "b found the byte held";
  EXPECT_EQ(s.group_flushes, flushes + 1) << "b's commit was flushed by b";
  EXPECT_EQ(word.seq() % 2, 0u);
  EXPECT_TRUE(Has(*a, "b"));
}

// A child process that kills itself with SIGKILL at wal hook point `kill_at`, or 0.
const char* kill_point = nullptr;
void KillAt(const char* point) {
  if (kill_point != nullptr && std::string_view(point) == kill_point) raise(SIGKILL);
}

// Z2 with real processes: a child killed holding FLUSH (after its sync, before its publish)
// leaves the word odd. The parent's next commit completes well within W14's patience (3 s
// here: without Z2's try after an unchanged sleep it would sleep on the stale odd word until
// then and fail "busy"), and it publishes the child's commit too.
TEST(FlushWordTest, AProcessKilledHoldingFlushLeavesNothingStuck) {
  vfs::ScopedTempDir dir;
  const std::string path = dir.path() + "/k.db";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> parent, Db::Open(path, FullWal()));
  ASSERT_THAT(parent->Put("warm", "x"), IsOk());
  wal::SetMinFlushWaitForTesting(absl::Seconds(3));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Options o = FullWal();
    o.busy_timeout = absl::Seconds(3);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
    if (!db.ok()) _exit(2);
    kill_point = "flush:synced";
    wal::SetWalHookForTesting(&KillAt);
    (void)(*db)->Put("child", "1");
    _exit(3);  // not killed: the test tests nothing
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  FlushWord word(path + "-shm");
  ASSERT_TRUE(word.ok());
  EXPECT_EQ(word.seq() % 2, 1u) << "Z1: the killed holder left the word odd";
  EXPECT_FALSE(Has(*parent, "child")) << "killed before its publish";

  const absl::Time start = absl::Now();
  EXPECT_THAT(parent->Put("parent", "1"), IsOk());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "the commit waited for W14's patience";
  EXPECT_EQ(word.seq() % 2, 0u) << "Z1: the next holder's take and release";
  EXPECT_TRUE(Has(*parent, "parent"));
  EXPECT_TRUE(Has(*parent, "child")) << "the next flush publishes the killed flusher's commit";
  wal::SetMinFlushWaitForTesting(absl::Seconds(30));
}

// A child killed while it waits for a flush (the parent's, paused at "flush:synced"; asleep on
// the word nearly all of that time) leaves its commit appended, and maybe its count among the
// word's sleepers: the parent's flush and the next commits complete, and the next flush
// publishes the dead waiter's commit.
TEST(FlushWordTest, AProcessKilledAsleepWaitingForAFlushLeavesNothingStuck) {
  vfs::ScopedTempDir dir;
  const std::string path = dir.path() + "/s.db";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> parent, Db::Open(path, FullWal()));
  ASSERT_THAT(parent->Put("warm", "x"), IsOk());
  auto* go = static_cast<std::atomic<int>*>(mmap(nullptr, sizeof(std::atomic<int>),
                                                 PROT_READ | PROT_WRITE,
                                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(go, MAP_FAILED);
  new (go) std::atomic<int>(0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, FullWal());
    if (!db.ok()) _exit(2);
    go->store(1);
    while (go->load() != 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
    (void)(*db)->Put("child", "1");
    _exit(3);  // not killed: the test tests nothing
  }
  ASSERT_TRUE(Eventually([&] { return go->load() == 1; }));
  FlushWord word(path + "-shm");
  ASSERT_TRUE(word.ok());

  testing::HookGate& gate = testing::HookGate::Get();
  gate.Arm("flush:synced");
  std::thread flusher;
  {
    ScopedHook hook(+[](const char* point) { testing::HookGate::Get().At(point); });
    flusher = std::thread([&] { EXPECT_THAT(parent->Put("p1", "1"), IsOk()); });
    ASSERT_TRUE(gate.WaitUntilReached());
    const uint32_t sleepers = word.sleepers();
    go->store(2);
    ASSERT_TRUE(Eventually([&] { return word.sleepers() > sleepers; })) << "the child never slept";
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
    gate.Release();
    flusher.join();
  }
  // The dead sleeper's count stays among the word's sleepers when it was killed asleep (a hint:
  // releases then always make the wake call), and is gone when it was killed between sleeps.
  EXPECT_TRUE(Has(*parent, "p1"));
  const absl::Time start = absl::Now();
  for (int i = 0; i < 20; ++i) ASSERT_THAT(parent->Put("p2", std::to_string(i)), IsOk());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "commits stalled after the kill";
  EXPECT_TRUE(Has(*parent, "child")) << "the next flush publishes the dead sleeper's commit";
  EXPECT_EQ(word.seq() % 2, 0u);
  munmap(go, sizeof(std::atomic<int>));
}

}  // namespace
}  // namespace journalkv
