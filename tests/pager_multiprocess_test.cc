// Real processes on a real file: a writer process killed with SIGKILL at a random moment of its
// commit loop, and reader processes that check every snapshot they see, on PosixFileSystem.
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

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

using pager::JournalMode;
using pager::Pager;
using pager::PagerOptions;

constexpr uint32_t kPages = 24;

std::string TempDir() {
  std::string tmpl = ::testing::TempDir() + "/jkv_mp_XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

PagerOptions Options(JournalMode mode) {
  PagerOptions o;
  o.journal_mode = mode;
  o.sync = pager::SyncLevel::kNormal;
  o.page_size = 1024;
  o.busy_timeout = absl::Seconds(20);
  return o;
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
  const std::string dir = TempDir();
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
                                           JournalMode::kPersist),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
