// Real processes on a real file (PosixFileSystem):
//   - a writer process killed with SIGKILL at a random moment of its commit loop, and reader
//     processes that check every snapshot they see;
//   - several writer processes and reader processes at once: writers queue and commit promptly
//     (no busy errors at the default timeout) and no update is lost;
//   - a writer killed after spilling pages of an uncommitted transaction, next to a long-lived
//     connection with a warm cache: the survivor never sees the killed transaction's pages.
//
// Each transaction t rewrites all kPages pages with tag t and stores t in meta slot 0, so any
// snapshot whose pages disagree with each other or with meta(0) is a partial transaction.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/scratch_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

using pager::JournalMode;
using pager::Pager;
using pager::PagerOptions;

constexpr uint32_t kPages = 24;

// Where journal mode atomic's cases run: the test directory when its file system has atomic
// batches, else a scratch XFS with exchange-range (vfs/scratch_fs.h) made once for the whole
// test where root may (unmounted and removed at exit; the forked children _exit), else
// nowhere (empty).
const std::string& AtomicRoot() {
  static const std::string root = [] {
    std::string why;
    std::string folder = vfs::AtomicBatchFolder(::testing::TempDir(), &why);
    if (folder.empty()) std::printf("atomic cases: %s\n", why.c_str());
    return folder;
  }();
  return root;
}

std::string TempDir(JournalMode mode) {
  const std::string root =
      mode == JournalMode::kAtomic && !AtomicRoot().empty() ? AtomicRoot() : ::testing::TempDir();
  std::string tmpl = root + "/jkv_mp_XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

PagerOptions Options(JournalMode mode) {
  PagerOptions o;
  o.journal_mode = mode;
  o.sync = pager::SyncLevel::kNormal;
  // atomic: a page is whole file system blocks (A6), 4 KiB on the scratch XFS.
  o.page_size = mode == JournalMode::kAtomic ? 4096 : 1024;
  o.busy_timeout = absl::Seconds(20);
  return o;
}

// Journal mode atomic needs a file system with atomic batches (XFS with exchange-range, F2FS):
// its real-process tests run in AtomicRoot(), and are skipped, saying why, where there is
// none (not root, no loop devices, a kernel before 6.10). Its in-process concurrency is
// tested on MemFileSystem by pager/atomic_strategy_test.cc.
#define JKV_SKIP_WITHOUT_ATOMIC(mode, dir)                                             \
  if ((mode) == JournalMode::kAtomic && !vfs::HasAtomicBatches(dir)) {                 \
    GTEST_SKIP() << "no file system with atomic batches here (see the test's output)"; \
  }

// The writer's loop; never returns (the parent kills it). Exits 2 on any error.
[[noreturn]] void WriterProcess(const std::string& path, JournalMode mode) {
  vfs::PosixFileSystem fs;
  auto pager = Pager::Open(&fs, path, Options(mode));
  if (!pager.ok()) _exit(2);
  for (uint32_t t = 1;; ++t) {
    auto txn = (*pager)->BeginWrite();
    if (!txn.ok()) _exit(2);
    const uint32_t base_tag = (*txn)->meta(0) + 1;
    for (uint32_t p = 2; p < 2 + kPages; ++p) {
      absl::StatusOr<absl::Span<uint8_t>> span =
          p <= (*txn)->page_count() ? (*txn)->GetMutable(PageNo(p))
                                    : absl::StatusOr<absl::Span<uint8_t>>((*txn)->Allocate()->data);
      if (!span.ok()) _exit(2);
      base::EncodeFixed32(span->data(), base_tag);
    }
    (*txn)->set_meta(0, base_tag);
    if (!(*txn)->Commit().ok()) _exit(2);
  }
}

// Returns an empty string when the snapshot is whole, else what is wrong.
std::string CheckSnapshot(Pager& pager) {
  auto txn = pager.BeginRead();
  if (!txn.ok()) return std::string(txn.status().message());
  const uint32_t tag = (*txn)->meta(0);
  if (tag == 0) return "";
  for (uint32_t p = 2; p < 2 + kPages; ++p) {
    auto page = (*txn)->Get(PageNo(p));
    if (!page.ok()) return std::string(page.status().message());
    const uint32_t got = base::DecodeFixed32(page->data().data());
    if (got != tag) return absl::StrCat("page ", p, " has tag ", got, " in snapshot ", tag);
  }
  return "";
}

class MultiProcessTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(MultiProcessTest, KilledWriterNeverLeavesAPartialTransaction) {
  const std::string dir = TempDir(GetParam());
  JKV_SKIP_WITHOUT_ATOMIC(GetParam(), dir);
  const std::string path = dir + "/mp.db";
  std::mt19937 rng(7);
  uint32_t last_tag = 0;
  int recovered = 0;
  for (int round = 0; round < 12; ++round) {
    const pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) WriterProcess(path, GetParam());
    // A reader process checks snapshots while the writer runs.
    const pid_t reader = fork();
    ASSERT_GE(reader, 0);
    if (reader == 0) {
      vfs::PosixFileSystem fs;
      auto pager = Pager::Open(&fs, path, Options(GetParam()));
      if (!pager.ok()) _exit(3);
      for (int i = 0; i < 200000; ++i) {
        const std::string problem = CheckSnapshot(**pager);
        if (!problem.empty() && problem.find("busy") == std::string::npos) {
          std::fprintf(stderr, "reader: %s\n", problem.c_str());
          _exit(4);
        }
      }
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 60));
    ASSERT_EQ(kill(writer, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited by itself with " << WEXITSTATUS(status);
    kill(reader, SIGKILL);
    ASSERT_EQ(waitpid(reader, &status, 0), reader);
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) != 0)
        << "reader saw a partial transaction (exit " << WEXITSTATUS(status) << ")";

    vfs::PosixFileSystem fs;
    auto pager = Pager::Open(&fs, path, Options(GetParam()));
    ASSERT_THAT(pager, journalkv::testing::IsOk());
    recovered += (*pager)->Stats().recoveries > 0;
    EXPECT_EQ(CheckSnapshot(**pager), "") << "round " << round;
    auto txn = (*pager)->BeginRead();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    EXPECT_GE((*txn)->meta(0), last_tag) << "a committed transaction disappeared";
    last_tag = (*txn)->meta(0);
    auto problems = (*txn)->CheckPages();
    ASSERT_THAT(problems, journalkv::testing::IsOk());
    EXPECT_TRUE(problems->empty()) << (*problems)[0];
  }
  std::printf("%s: 12 kills, %d hot journals rolled back, %u transactions committed\n",
              std::string(pager::JournalModeName(GetParam())).c_str(), recovered, last_tag);
  EXPECT_GT(last_tag, 0u);
  std::string cmd = "rm -rf " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

INSTANTIATE_TEST_SUITE_P(RollbackModes, MultiProcessTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kAtomic),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });


// ---------------------------------------------------------------------------------------------
// Several writer processes

constexpr int kWriters = 2;
constexpr int kReaders = 2;

// Counts of one worker process, sent back over a pipe.
struct WorkerReport {
  uint64_t commits = 0;
  uint64_t busy = 0;
  uint64_t other_errors = 0;
  uint64_t bad_snapshots = 0;
};

// A read-modify-write loop for `seconds`: page 2 holds a counter that every commit increments,
// so the final counter equals the sum of all commits exactly when no update was lost.
WorkerReport WriterLoop(Pager& pager, absl::Duration seconds) {
  WorkerReport r;
  const absl::Time end = absl::Now() + seconds;
  while (absl::Now() < end) {
    auto txn = pager.BeginWrite();
    if (!txn.ok()) {
      (absl::IsUnavailable(txn.status()) ? r.busy : r.other_errors)++;
      continue;
    }
    auto span = (*txn)->GetMutable(PageNo(2));
    if (!span.ok()) {
      ++r.other_errors;
      continue;
    }
    base::EncodeFixed32(span->data(), base::DecodeFixed32(span->data()) + 1);
    (*txn)->set_meta(0, (*txn)->meta(0) + 1);
    absl::Status s = (*txn)->Commit();
    if (s.ok()) {
      ++r.commits;
    } else {
      (absl::IsUnavailable(s) ? r.busy : r.other_errors)++;
    }
  }
  return r;
}

WorkerReport ReaderLoop(Pager& pager, absl::Duration seconds) {
  WorkerReport r;
  const absl::Time end = absl::Now() + seconds;
  while (absl::Now() < end) {
    auto txn = pager.BeginRead();
    if (!txn.ok()) {
      (absl::IsUnavailable(txn.status()) ? r.busy : r.other_errors)++;
      continue;
    }
    auto page = (*txn)->Get(PageNo(2));
    if (!page.ok()) {
      ++r.other_errors;
      continue;
    }
    // The counter and meta(0) are written by the same transactions.
    if (base::DecodeFixed32(page->data().data()) != (*txn)->meta(0)) ++r.bad_snapshots;
    ++r.commits;  // snapshots read
  }
  return r;
}

class MultiWriterTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(MultiWriterTest, WriterProcessesQueueAndCommitPromptly) {
  const std::string dir = TempDir(GetParam());
  JKV_SKIP_WITHOUT_ATOMIC(GetParam(), dir);
  const std::string path = dir + "/writers.db";
  PagerOptions options = Options(GetParam());
  options.busy_timeout = absl::Seconds(5);  // the default
  {
    vfs::PosixFileSystem fs;
    auto pager = Pager::Open(&fs, path, options);
    ASSERT_THAT(pager, journalkv::testing::IsOk());
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    ASSERT_THAT((*txn)->Allocate(), journalkv::testing::IsOk());
    ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
  }
  const absl::Duration seconds = absl::Seconds(4);
  std::vector<std::pair<pid_t, int>> workers;  // pid, read end of its report pipe
  for (int i = 0; i < kWriters + kReaders; ++i) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      vfs::PosixFileSystem fs;
      auto pager = Pager::Open(&fs, path, options);
      WorkerReport r;
      if (!pager.ok()) {
        r.other_errors = 1;
      } else {
        r = i < kWriters ? WriterLoop(**pager, seconds) : ReaderLoop(**pager, seconds);
      }
      const bool sent = write(fds[1], &r, sizeof(r)) == sizeof(r);
      _exit(sent ? 0 : 5);
    }
    close(fds[1]);
    workers.push_back({pid, fds[0]});
  }
  WorkerReport writers, readers;
  std::vector<uint64_t> per_writer;
  for (size_t i = 0; i < workers.size(); ++i) {
    WorkerReport r;
    ASSERT_EQ(read(workers[i].second, &r, sizeof(r)), static_cast<ssize_t>(sizeof(r)));
    close(workers[i].second);
    int status = 0;
    ASSERT_EQ(waitpid(workers[i].first, &status, 0), workers[i].first);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    WorkerReport& sum = i < kWriters ? writers : readers;
    if (i < kWriters) per_writer.push_back(r.commits);
    sum.commits += r.commits;
    sum.busy += r.busy;
    sum.other_errors += r.other_errors;
    sum.bad_snapshots += r.bad_snapshots;
  }
  const double rate = writers.commits / absl::ToDoubleSeconds(seconds);
  std::printf("%s: %d writer processes committed %.0f/s (", 
              std::string(pager::JournalModeName(GetParam())).c_str(), kWriters, rate);
  for (uint64_t c : per_writer) std::printf(" %llu", static_cast<unsigned long long>(c));
  std::printf(" ), %d readers read %llu snapshots\n", kReaders,
              static_cast<unsigned long long>(readers.commits));
  EXPECT_EQ(writers.busy + readers.busy, 0u) << "busy errors at the default timeout";
  EXPECT_EQ(writers.other_errors + readers.other_errors, 0u);
  EXPECT_EQ(readers.bad_snapshots, 0u);
  // Stalled writers manage about one commit per busy timeout; 25/s is far above that and far
  // below what a loaded machine does (hundreds per second).
  EXPECT_GT(rate, 25.0);
  for (uint64_t c : per_writer) EXPECT_GT(c, 0u) << "a writer never got its turn";
  EXPECT_GT(readers.commits, 0u);

  vfs::PosixFileSystem fs;
  auto pager = Pager::Open(&fs, path, options);
  ASSERT_THAT(pager, journalkv::testing::IsOk());
  auto txn = (*pager)->BeginRead();
  ASSERT_THAT(txn, journalkv::testing::IsOk());
  auto page = (*txn)->Get(PageNo(2));
  ASSERT_THAT(page, journalkv::testing::IsOk());
  EXPECT_EQ(base::DecodeFixed32(page->data().data()), writers.commits) << "an update was lost";
  std::string cmd = "rm -rf " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

INSTANTIATE_TEST_SUITE_P(RollbackModes, MultiWriterTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory,
                                           JournalMode::kOff, JournalMode::kAtomic),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

// ---------------------------------------------------------------------------------------------
// A writer killed after spilling

constexpr uint32_t kSpillPages = 300;

// Tags of pages 2..kSpillPages+1 as `pager` sees them in one snapshot, or an error message.
absl::StatusOr<std::vector<uint32_t>> Tags(Pager& pager) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::ReadTxn> txn, pager.BeginRead());
  std::vector<uint32_t> tags;
  for (uint32_t p = 2; p < 2 + kSpillPages; ++p) {
    JKV_ASSIGN_OR_RETURN(pager::PageRef page, txn->Get(PageNo(p)));
    tags.push_back(base::DecodeFixed32(page.data().data()));
  }
  return tags;
}

class KilledSpillTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(KilledSpillTest, LongLivedConnectionNeverSeesAKilledWritersSpilledPages) {
  const JournalMode mode = GetParam();
  const bool atomic = mode != JournalMode::kMemory && mode != JournalMode::kOff;
  const std::string dir = TempDir(mode);
  JKV_SKIP_WITHOUT_ATOMIC(mode, dir);
  const std::string path = dir + "/spill.db";
  PagerOptions options = Options(mode);
  vfs::PosixFileSystem fs;
  auto survivor = Pager::Open(&fs, path, options);
  ASSERT_THAT(survivor, journalkv::testing::IsOk());
  {
    auto txn = (*survivor)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    for (uint32_t i = 0; i < kSpillPages; ++i) {
      auto page = (*txn)->Allocate();
      ASSERT_THAT(page, journalkv::testing::IsOk());
      base::EncodeFixed32(page->data.data(), 1);
    }
    ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
  }
  // A warm cache: every page read once.
  ASSERT_THAT(Tags(**survivor), journalkv::testing::IsOk());

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    close(fds[0]);
    vfs::PosixFileSystem child_fs;
    PagerOptions small = options;
    small.cache_pages = 16;
    auto pager = Pager::Open(&child_fs, path, small);
    if (!pager.ok()) _exit(2);
    auto txn = (*pager)->BeginWrite();
    if (!txn.ok()) _exit(3);
    for (uint32_t p = 2; p < 2 + kSpillPages; ++p) {
      auto span = (*txn)->GetMutable(PageNo(p));
      if (!span.ok()) _exit(4);
      base::EncodeFixed32(span->data(), 2);
      if (!(*txn)->SpillIfNeeded().ok()) _exit(5);
    }
    if ((*pager)->Stats().spills == 0) _exit(6);
    const char ready = 'r';
    if (write(fds[1], &ready, 1) != 1) _exit(7);
    pause();  // killed here, mid-transaction
    _exit(8);
  }
  close(fds[1]);
  char ready = 0;
  ASSERT_EQ(read(fds[0], &ready, 1), 1) << "the writer failed before spilling";
  close(fds[0]);
  ASSERT_EQ(kill(writer, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFSIGNALED(status));

  // The survivor's view must be the one a fresh connection gets, and in the crash-atomic modes
  // that is the state before the killed transaction.
  auto seen = Tags(**survivor);
  ASSERT_THAT(seen, journalkv::testing::IsOk());
  if (atomic) {
    for (uint32_t i = 0; i < kSpillPages; ++i) {
      ASSERT_EQ((*seen)[i], 1u) << "page " << i + 2 << " of the killed transaction is visible";
    }
  } else {
    vfs::PosixFileSystem fresh_fs;
    auto fresh = Pager::Open(&fresh_fs, path, options);
    ASSERT_THAT(fresh, journalkv::testing::IsOk());
    auto fresh_tags = Tags(**fresh);
    ASSERT_THAT(fresh_tags, journalkv::testing::IsOk());
    EXPECT_EQ(*seen, *fresh_tags) << "the survivor mixes its cache with the spilled pages";
    uint32_t spilled = 0;
    for (uint32_t t : *fresh_tags) spilled += t == 2;
    EXPECT_GT(spilled, 0u) << "the writer spilled nothing: the test tests nothing";
  }
  // The survivor writes; the killed transaction must not become permanent.
  {
    auto txn = (*survivor)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    auto span = (*txn)->GetMutable(PageNo(2));
    ASSERT_THAT(span, journalkv::testing::IsOk());
    base::EncodeFixed32(span->data(), 3);
    ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
  }
  survivor->reset();
  vfs::PosixFileSystem fresh_fs;
  auto fresh = Pager::Open(&fresh_fs, path, options);
  ASSERT_THAT(fresh, journalkv::testing::IsOk());
  auto after = Tags(**fresh);
  ASSERT_THAT(after, journalkv::testing::IsOk());
  EXPECT_EQ((*after)[0], 3u);
  if (atomic) {
    for (uint32_t i = 1; i < kSpillPages; ++i) {
      ASSERT_EQ((*after)[i], 1u) << "page " << i + 2 << " of the killed transaction is permanent";
    }
  }
  auto txn = (*fresh)->BeginRead();
  ASSERT_THAT(txn, journalkv::testing::IsOk());
  auto problems = (*txn)->CheckPages();
  ASSERT_THAT(problems, journalkv::testing::IsOk());
  EXPECT_TRUE(problems->empty()) << (*problems)[0];
  std::string cmd = "rm -rf " + dir;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

INSTANTIATE_TEST_SUITE_P(RollbackModes, KilledSpillTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory,
                                           JournalMode::kOff, JournalMode::kAtomic),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
