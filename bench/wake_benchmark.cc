// The wake path of the group flush (wal/group_flush.h Z1, Z2; shm/wal_index.h's wake words),
// on a real -shm file in $TMPDIR:
//   BM_FlushLockMiss      a committer's try of the FLUSH lock byte while another connection
//                         holds it (an OFD byte-range lock system call that fails): what every
//                         committer paid before it slept, before Z1
//   BM_FlushWordParity    what it reads instead (Z2): the FLUSH word and its parity
//   BM_WakeHop/threads    one wake from a sleeper on a wake word to the waker and back (two
//   BM_WakeHop/processes  futex waits and wakes through WaitWake and Bump: an iteration's real
//                         time is two hops), between two threads
//                         of one process and between two processes sharing the -shm's mapping:
//                         the wakes a group flush makes (its publish to its committers, a
//                         writer's release of WRITE to the next writer)
// Run: bazel-bin/bench/wake_benchmark --benchmark_repetitions=3 (TMPDIR on the disk or tmpfs:
// no data is synced).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "shm/wal_index.h"
#include "vfs/posix_fs.h"
#include "vfs/vfs.h"
#include "wal/group_flush.h"

namespace journalkv {
namespace {

using Wake = shm::WalIndex::Wake;

// Two connections' views of one fresh -shm file: two Files (two open file descriptions, as two
// processes have), each with its index.
struct TwoIndexes {
  vfs::PosixFileSystem fs;
  std::string path;
  std::unique_ptr<vfs::File> file_a, file_b;
  std::unique_ptr<shm::WalIndex> a, b;

  bool Open(benchmark::State& state) {
    const char* tmp = getenv("TMPDIR");
    path = std::string(tmp != nullptr ? tmp : "/tmp") + "/wake_benchmark." +
           std::to_string(getpid()) + "-shm";
    unlink(path.c_str());
    absl::StatusOr<std::unique_ptr<vfs::File>> fa =
        fs.Open(path, {vfs::OpenMode::kCreate, vfs::FileKind::kOther});
    absl::StatusOr<std::unique_ptr<vfs::File>> fb =
        fa.ok() ? fs.Open(path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}) : fa.status();
    if (!fb.ok()) {
      state.SkipWithError(std::string(fb.status().message()).c_str());
      return false;
    }
    file_a = std::move(*fa);
    file_b = std::move(*fb);
    absl::StatusOr<std::unique_ptr<shm::WalIndex>> ia =
        shm::WalIndex::OpenShared(file_a.get(), /*initialize=*/true);
    absl::StatusOr<std::unique_ptr<shm::WalIndex>> ib =
        ia.ok() ? shm::WalIndex::OpenShared(file_b.get(), false) : ia.status();
    if (!ib.ok()) {
      state.SkipWithError(std::string(ib.status().message()).c_str());
      return false;
    }
    a = std::move(*ia);
    b = std::move(*ib);
    return true;
  }
  ~TwoIndexes() {
    a.reset();
    b.reset();
    file_a.reset();
    file_b.reset();
    if (!path.empty()) unlink(path.c_str());
  }
};

void BM_FlushLockMiss(benchmark::State& state) {
  TwoIndexes x;
  if (!x.Open(state)) return;
  absl::StatusOr<bool> held = x.a->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
  if (!held.ok() || !*held) {
    state.SkipWithError("could not take FLUSH");
    return;
  }
  int64_t misses = 0;
  for (auto _ : state) {
    absl::StatusOr<bool> got = x.b->TryLock(shm::ShmLock::kFlush, vfs::LockMode::kExclusive);
    misses += got.ok() && !*got;
  }
  if (misses != state.iterations()) state.SkipWithError("a try did not miss");
  x.a->Unlock(shm::ShmLock::kFlush).IgnoreError();
}
BENCHMARK(BM_FlushLockMiss);

void BM_FlushWordParity(benchmark::State& state) {
  TwoIndexes x;
  if (!x.Open(state)) return;
  x.a->MarkHeld(Wake::kFlush);
  int64_t under_way = 0;
  for (auto _ : state) {
    under_way += wal::GroupFlush::UnderWay(x.b->wake_seq(Wake::kFlush));
  }
  if (under_way != state.iterations()) state.SkipWithError("the word did not read held");
}
BENCHMARK(BM_FlushWordParity);

// The pong side: each change of the WRITE word (a ping) from `start` on is answered by a bump
// of the FLUSH word, until the WRITE word's value reaches `stop`. (`start` is read before the
// pong starts: a ping made before the pong's first look is answered too.)
void Pong(shm::WalIndex& index, uint32_t start, uint32_t stop) {
  uint32_t seen = start;
  while (seen != stop) {
    index.WaitWake(Wake::kWrite, seen, absl::Seconds(1));
    const uint32_t now = index.wake_seq(Wake::kWrite);
    if (now == seen) continue;
    seen = now;
    index.Bump(Wake::kFlush);
  }
}

void BM_WakeHop(benchmark::State& state) {
  const bool processes = state.range(0) != 0;
  TwoIndexes x;
  if (!x.Open(state)) return;
  // Pings are bumps of the WRITE word by 1; the last one moves it to `stop`.
  const uint32_t start = x.a->wake_seq(Wake::kWrite);
  const uint32_t stop = start - 1;  // never reached by pings (wraps only after 2^32)
  pid_t child = -1;
  std::thread pong;
  if (processes) {
    child = fork();
    if (child < 0) {
      state.SkipWithError("fork failed");
      return;
    }
    if (child == 0) {
      Pong(*x.b, start, stop);
      _exit(0);
    }
  } else {
    pong = std::thread([&] { Pong(*x.b, start, stop); });
  }
  for (auto _ : state) {
    const uint32_t seen = x.a->wake_seq(Wake::kFlush);
    x.a->Bump(Wake::kWrite);
    while (x.a->wake_seq(Wake::kFlush) == seen) {
      x.a->WaitWake(Wake::kFlush, seen, absl::Seconds(1));
    }
  }
  // The stop: the WRITE word moved straight to `stop`.
  const uint32_t now = x.a->wake_seq(Wake::kWrite);
  x.a->Bump(Wake::kWrite, stop - now);
  if (processes) {
    int status = 0;
    waitpid(child, &status, 0);
  } else {
    pong.join();
  }
}
BENCHMARK(BM_WakeHop)->ArgName("processes")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
