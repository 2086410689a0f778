// I/O errors during a commit: ENOSPC and EIO injected at every write, sync, directory sync,
// create, truncate and delete a commit performs, and short writes at every write.
//
// For each injection point: the commit either fails with a clear error (the code POSIX would
// give: ResourceExhausted for ENOSPC, Internal for EIO), or, when the failure hit the end of
// the journal after the commit was already durable, succeeds. After the handle is closed and the
// database reopened (no power loss: the process survives), the database holds exactly the state
// before the commit if it failed, after it if it succeeded, and passes the page check.
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using pager::JournalMode;
using pager::Pager;
using pager::PagerOptions;
using pager::SyncLevel;
using vfs::FaultOp;

constexpr char kPath[] = "/data/fault.db";

void Stamp(absl::Span<uint8_t> page, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  for (size_t i = 4; i < 64; ++i) page[i] = static_cast<uint8_t>(tag * 3 + i);
}

// The state as page -> tag for pages 2..page_count.
std::map<uint32_t, uint32_t> ReadState(vfs::FileSystem& fs, const PagerOptions& options,
                                       const std::string& context) {
  std::map<uint32_t, uint32_t> state;
  auto pager = Pager::Open(&fs, kPath, options);
  EXPECT_THAT(pager, journalkv::testing::IsOk()) << context;
  if (!pager.ok()) return state;
  auto txn = (*pager)->BeginRead();
  EXPECT_THAT(txn, journalkv::testing::IsOk()) << context;
  if (!txn.ok()) return state;
  auto problems = (*txn)->CheckPages();
  EXPECT_TRUE(problems.ok() && problems->empty()) << context;
  for (uint32_t p = 2; p <= (*txn)->page_count(); ++p) {
    auto page = (*txn)->Get(PageNo(p));
    EXPECT_THAT(page, journalkv::testing::IsOk()) << context;
    if (page.ok()) state[p] = base::DecodeFixed32(page->data().data());
  }
  return state;
}

// Builds the starting database: 30 pages with tag 1.
void BuildStartingDatabase(vfs::FileSystem& fs, const PagerOptions& options) {
  auto pager = Pager::Open(&fs, kPath, options);
  ASSERT_THAT(pager, journalkv::testing::IsOk());
  auto txn = (*pager)->BeginWrite();
  ASSERT_THAT(txn, journalkv::testing::IsOk());
  for (int i = 0; i < 30; ++i) {
    auto page = (*txn)->Allocate();
    ASSERT_THAT(page, journalkv::testing::IsOk());
    Stamp(page->data, 1);
  }
  ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
  // A second commit so TRUNCATE and PERSIST already have their journal file.
  auto txn2 = (*pager)->BeginWrite();
  ASSERT_THAT(txn2, journalkv::testing::IsOk());
  auto span = (*txn2)->GetMutable(PageNo(2));
  ASSERT_THAT(span, journalkv::testing::IsOk());
  Stamp(*span, 1);
  ASSERT_THAT((*txn2)->Commit(), journalkv::testing::IsOk());
}

// The commit under test: rewrites ten pages, frees two, grows the file by five.
absl::Status Change(pager::WriteTxn& txn) {
  for (uint32_t p = 3; p < 13; ++p) {
    auto span = txn.GetMutable(PageNo(p));
    if (!span.ok()) return span.status();
    Stamp(*span, 2);
  }
  if (absl::Status s = txn.Free(PageNo(20)); !s.ok()) return s;
  if (absl::Status s = txn.Free(PageNo(21)); !s.ok()) return s;
  for (int i = 0; i < 7; ++i) {
    auto page = txn.Allocate();
    if (!page.ok()) return page.status();
    Stamp(page->data, 2);
  }
  return absl::OkStatus();
}

struct FaultParam {
  JournalMode mode;
  SyncLevel sync;
};

class CommitFaultTest : public ::testing::TestWithParam<FaultParam> {
 protected:
  PagerOptions Options() const {
    PagerOptions o;
    o.journal_mode = GetParam().mode;
    o.sync = GetParam().sync;
    o.page_size = 1024;
    return o;
  }
};

TEST_P(CommitFaultTest, EveryFailedCommitLeavesTheStateBeforeIt) {
  const PagerOptions options = Options();
  // A clean run: the states before and after, and how many operations of each kind the commit
  // performs.
  std::map<uint32_t, uint32_t> before, after;
  std::map<FaultOp, uint64_t> ops;
  const FaultOp kinds[] = {FaultOp::kWrite,    FaultOp::kSync,   FaultOp::kDirSync,
                           FaultOp::kTruncate, FaultOp::kCreate, FaultOp::kDelete};
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    BuildStartingDatabase(fs, options);
    before = ReadState(fs, options, "before");
    auto pager = Pager::Open(&fs, kPath, options);
    ASSERT_THAT(pager, journalkv::testing::IsOk());
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    ASSERT_THAT(Change(**txn), journalkv::testing::IsOk());
    std::map<FaultOp, uint64_t> start;
    for (FaultOp k : kinds) start[k] = fs.op_count(k);
    ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
    for (FaultOp k : kinds) ops[k] = fs.op_count(k) - start[k];
    txn->reset();
    pager->reset();
    after = ReadState(fs, options, "after");
  }
  ASSERT_NE(before, after);
  ASSERT_GT(ops[FaultOp::kWrite], 0u);

  int points = 0, failed_commits = 0;
  auto run = [&](const std::string& context, auto inject) {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    BuildStartingDatabase(fs, options);
    absl::Status commit;
    {
      auto pager = Pager::Open(&fs, kPath, options);
      ASSERT_THAT(pager, journalkv::testing::IsOk()) << context;
      auto txn = (*pager)->BeginWrite();
      ASSERT_THAT(txn, journalkv::testing::IsOk()) << context;
      ASSERT_THAT(Change(**txn), journalkv::testing::IsOk()) << context;
      inject(fs);
      commit = (*txn)->Commit();
      fs.ClearFaults();
    }
    ++points;
    if (commit.ok()) {
      EXPECT_EQ(ReadState(fs, options, context), after) << context;
      return;
    }
    ++failed_commits;
    EXPECT_TRUE(commit.code() == absl::StatusCode::kResourceExhausted ||
                commit.code() == absl::StatusCode::kInternal)
        << context << ": " << commit;
    EXPECT_FALSE(commit.message().empty()) << context;
    EXPECT_EQ(ReadState(fs, options, context), before) << context << ": " << commit;
  };
  for (FaultOp kind : kinds) {
    for (uint64_t n = 1; n <= ops[kind]; ++n) {
      for (int err : {ENOSPC, EIO}) {
        run(absl::StrCat("op ", static_cast<int>(kind), " #", n, " errno ", err),
            [&](vfs::FaultInjectingFileSystem& fs) { fs.FailNth(kind, n, err); });
        if (HasFatalFailure()) return;
      }
    }
  }
  for (uint64_t n = 1; n <= ops[FaultOp::kWrite]; ++n) {
    run(absl::StrCat("short write #", n),
        [&](vfs::FaultInjectingFileSystem& fs) { fs.ShortWriteNth(n, ENOSPC); });
    if (HasFatalFailure()) return;
  }
  std::printf("%s/%s: %d injection points, %d commits failed cleanly\n",
              std::string(pager::JournalModeName(options.journal_mode)).c_str(),
              std::string(pager::SyncLevelName(options.sync)).c_str(), points, failed_commits);
  EXPECT_GT(failed_commits, points / 2);
}

TEST_P(CommitFaultTest, HandleKeepsWorkingAfterAFailedCommit) {
  const PagerOptions options = Options();
  vfs::MemFileSystem base;
  vfs::FaultInjectingFileSystem fs(&base);
  BuildStartingDatabase(fs, options);
  auto pager = Pager::Open(&fs, kPath, options);
  ASSERT_THAT(pager, journalkv::testing::IsOk());
  {
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    ASSERT_THAT(Change(**txn), journalkv::testing::IsOk());
    fs.FailNth(FaultOp::kWrite, 2, ENOSPC);  // a journal or database write
    EXPECT_THAT((*txn)->Commit(),
                journalkv::testing::StatusIs(absl::StatusCode::kResourceExhausted, ""));
    fs.ClearFaults();
  }
  // The in-process undo succeeded, so the handle is not in its error state.
  auto txn = (*pager)->BeginWrite();
  ASSERT_THAT(txn, journalkv::testing::IsOk());
  ASSERT_THAT(Change(**txn), journalkv::testing::IsOk());
  ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
}

// After a failed fsync the kernel may have dropped the data it covered while a later fsync
// reports success, so the handle must not go on writing (pager I7): every sync of the commit
// fails in turn, and each time the handle refuses further transactions until reopened, and the
// reopened database holds the state before the commit.
TEST_P(CommitFaultTest, HandleRefusesWritesAfterAFailedSyncUntilReopened) {
  const PagerOptions options = Options();
  uint64_t syncs = 0;
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    BuildStartingDatabase(fs, options);
    auto pager = Pager::Open(&fs, kPath, options);
    ASSERT_THAT(pager, journalkv::testing::IsOk());
    auto txn = (*pager)->BeginWrite();
    ASSERT_THAT(txn, journalkv::testing::IsOk());
    ASSERT_THAT(Change(**txn), journalkv::testing::IsOk());
    const uint64_t start = fs.op_count(FaultOp::kSync);
    ASSERT_THAT((*txn)->Commit(), journalkv::testing::IsOk());
    syncs = fs.op_count(FaultOp::kSync) - start;
  }
  ASSERT_GT(syncs, 0u);
  for (uint64_t n = 1; n <= syncs; ++n) {
    const std::string context = absl::StrCat("sync #", n, " of the commit fails");
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    BuildStartingDatabase(fs, options);
    const std::map<uint32_t, uint32_t> before = ReadState(fs, options, context);
    {
      auto pager = Pager::Open(&fs, kPath, options);
      ASSERT_THAT(pager, journalkv::testing::IsOk());
      auto txn = (*pager)->BeginWrite();
      ASSERT_THAT(txn, journalkv::testing::IsOk());
      ASSERT_THAT(Change(**txn), journalkv::testing::IsOk());
      fs.FailNth(FaultOp::kSync, n, EIO);
      absl::Status commit = (*txn)->Commit();
      fs.ClearFaults();
      if (commit.ok()) {
        // Only a sync that ends the journal after the commit is durable may fail harmlessly.
        EXPECT_EQ(options.sync, SyncLevel::kExtra) << context;
        continue;
      }
      EXPECT_THAT(commit, journalkv::testing::StatusIs(absl::StatusCode::kInternal, ""))
          << context;
      txn->reset();
      auto again = (*pager)->BeginWrite();
      EXPECT_FALSE(again.ok()) << context << ": the handle writes on after a failed sync";
      if (!again.ok()) {
        EXPECT_NE(again.status().message().find("error state"), std::string::npos)
            << context << ": " << again.status();
      }
      EXPECT_EQ((*pager)->sticky_error().code(), absl::StatusCode::kInternal) << context;
    }
    EXPECT_EQ(ReadState(fs, options, context), before) << context;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, CommitFaultTest,
    ::testing::Values(FaultParam{JournalMode::kDelete, SyncLevel::kFull},
                      FaultParam{JournalMode::kDelete, SyncLevel::kExtra},
                      FaultParam{JournalMode::kTruncate, SyncLevel::kFull},
                      FaultParam{JournalMode::kTruncate, SyncLevel::kExtra},
                      FaultParam{JournalMode::kPersist, SyncLevel::kFull},
                      FaultParam{JournalMode::kPersist, SyncLevel::kExtra},
                      FaultParam{JournalMode::kMemory, SyncLevel::kFull}),
    [](const auto& info) {
      return absl::StrCat(pager::JournalModeName(info.param.mode), "_",
                          pager::SyncLevelName(info.param.sync));
    });

}  // namespace
}  // namespace journalkv
