// I/O errors during a commit: ENOSPC and EIO injected at every write, sync, directory sync,
// create, truncate and delete a commit performs, and short writes at every write.
//
// For each injection point: the commit either fails with a clear error (the code POSIX would
// give: ResourceExhausted for ENOSPC, Internal for EIO), or, when the failure hit the end of
// the journal after the commit was already durable, succeeds. After the handle is closed and the
// database reopened (no power loss: the process survives), the database holds exactly the state
// before the commit if it failed, after it if it succeeded, and passes the page check.
//
// Two faults in one commit of the rollback modes (issue 43): the commit's database sync fails,
// and then its in-process undo fails too (reading the journal, at its first rewrite of a page,
// or at its sync). The reopened database still holds the state before the commit (pager I12).
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

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

// ---------------------------------------------------------------------------------------------
// The commit's database sync fails, and then so does its undo (issue 43)

// The commit of the double-fault tests: two pages rewritten, so that the database file holds
// three unsynced writes (page 1 and these two) when the commit's sync fails, and a failed sync
// keeps all of them (the commit whole in the file) for about one seed in eight.
absl::Status SmallChange(pager::WriteTxn& txn) {
  for (uint32_t p = 3; p < 5; ++p) {
    auto span = txn.GetMutable(PageNo(p));
    if (!span.ok()) return span.status();
    Stamp(*span, 2);
  }
  return absl::OkStatus();
}

// Operations of each kind a file system had counted when the commit's database sync ("I2
// database") began; recorded by the sync observer.
struct OpCounts {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t syncs = 0;
};
OpCounts Counts(const vfs::FaultInjectingFileSystem& fs) {
  return {fs.op_count(FaultOp::kRead), fs.op_count(FaultOp::kWrite), fs.op_count(FaultOp::kSync)};
}
vfs::FaultInjectingFileSystem* observed_fs = nullptr;
std::optional<OpCounts> at_db_sync;
void RecordDatabaseSync(const char* site) {
  if (std::string_view(site) == "I2 database" && !at_db_sync.has_value()) {
    at_db_sync = Counts(*observed_fs);
  }
}

std::vector<uint8_t> FileBytes(vfs::FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  EXPECT_THAT(file, journalkv::testing::IsOk()) << path;
  if (!file.ok()) return {};
  auto size = (*file)->Size();
  EXPECT_THAT(size, journalkv::testing::IsOk()) << path;
  if (!size.ok()) return {};
  std::vector<uint8_t> bytes(*size);
  EXPECT_THAT((*file)->Read(0, absl::MakeSpan(bytes)), journalkv::testing::IsOk()) << path;
  return bytes;
}

class DoubleFaultTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  PagerOptions Options() const {
    PagerOptions o;
    o.journal_mode = GetParam();
    o.sync = SyncLevel::kFull;
    o.page_size = 1024;
    return o;
  }

  // A clean run of the commit: the states before and after, the database file right after the
  // commit, and the ordinals (counted from just before Commit, as FailNth counts) of the
  // commit's database sync and of the first read and the first write after it: the undo's read
  // of the journal and its first rewrite of a database page when that sync fails.
  void SetUp() override {
    const PagerOptions options = Options();
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    BuildStartingDatabase(fs, options);
    before_ = ReadState(fs, options, "before");
    {
      auto pager = Pager::Open(&fs, kPath, options);
      ASSERT_THAT(pager, journalkv::testing::IsOk());
      auto txn = (*pager)->BeginWrite();
      ASSERT_THAT(txn, journalkv::testing::IsOk());
      ASSERT_THAT(SmallChange(**txn), journalkv::testing::IsOk());
      const OpCounts start = Counts(fs);
      observed_fs = &fs;
      at_db_sync.reset();
      vfs::SetSyncObserverForTesting(&RecordDatabaseSync);
      const absl::Status commit = (*txn)->Commit();
      vfs::SetSyncObserverForTesting(nullptr);
      observed_fs = nullptr;
      ASSERT_THAT(commit, journalkv::testing::IsOk());
      ASSERT_TRUE(at_db_sync.has_value());
      db_sync_ = at_db_sync->syncs - start.syncs + 1;
      undo_read_ = at_db_sync->reads - start.reads + 1;
      undo_write_ = at_db_sync->writes - start.writes + 1;
      committed_image_ = FileBytes(base, kPath);
    }
    after_ = ReadState(fs, options, "after");
    ASSERT_NE(before_, after_);
  }

  // Runs the commit with its database sync failing (a failed sync keeps or loses each unsynced
  // write, drawn from `seed`) and `second` failing after it; then closes the handle and expects
  // the reopened database to hold the state before the commit. Returns whether the handle left
  // the whole commit in the database file (the case the seal check took as complete).
  bool RunDoubleFault(uint64_t seed, FaultOp second, uint64_t second_nth, bool persistent,
                      const std::string& context) {
    const PagerOptions options = Options();
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    fs.SetSyncFailureSeed(seed);
    BuildStartingDatabase(fs, options);
    bool whole = false;
    {
      auto pager = Pager::Open(&fs, kPath, options);
      EXPECT_THAT(pager, journalkv::testing::IsOk()) << context;
      if (!pager.ok()) return false;
      auto txn = (*pager)->BeginWrite();
      EXPECT_THAT(txn, journalkv::testing::IsOk()) << context;
      if (!txn.ok()) return false;
      EXPECT_THAT(SmallChange(**txn), journalkv::testing::IsOk()) << context;
      const OpCounts start = Counts(fs);
      fs.FailNth(FaultOp::kSync, db_sync_, EIO);
      fs.FailNth(second, second_nth, EIO, persistent);
      const absl::Status commit = (*txn)->Commit();
      const OpCounts end = Counts(fs);
      fs.ClearFaults();
      // The error is the commit's: its failed sync, whatever the undo met.
      EXPECT_THAT(commit, journalkv::testing::StatusIs(absl::StatusCode::kInternal,
                                                       "fault.db: fdatasync"))
          << context;
      EXPECT_TRUE(vfs::IsSyncFailure(commit)) << context << ": " << commit;
      // Both faults fired: the sync's and the undo's.
      EXPECT_GE(end.syncs - start.syncs, db_sync_) << context;
      const uint64_t seconds = second == FaultOp::kRead    ? end.reads - start.reads
                               : second == FaultOp::kWrite ? end.writes - start.writes
                                                           : end.syncs - start.syncs;
      EXPECT_GE(seconds, second_nth) << context;
      EXPECT_FALSE((*pager)->sticky_error().ok()) << context;
      txn->reset();
      whole = FileBytes(base, kPath) == committed_image_;
    }
    const std::map<uint32_t, uint32_t> state = ReadState(fs, options, context);
    if (persistent) {
      // The write that unseals the journal failed too: the next opener may find the commit
      // whole (README, "Failures"), never part of it.
      EXPECT_TRUE(state == before_ || state == after_) << context;
    } else {
      EXPECT_EQ(state, before_) << context << (whole ? ": the failed commit was whole in the "
                                                       "database file the handle left"
                                                     : "");
    }
    return whole;
  }

  std::map<uint32_t, uint32_t> before_, after_;
  std::vector<uint8_t> committed_image_;
  uint64_t db_sync_ = 0, undo_read_ = 0, undo_write_ = 0;
};

constexpr uint64_t kDoubleFaultSeeds = 32;

TEST_P(DoubleFaultTest, UndoFailingAtItsFirstDatabaseWriteLeavesTheStateBeforeTheCommit) {
  int whole = 0;
  for (uint64_t seed = 0; seed < kDoubleFaultSeeds; ++seed) {
    whole += RunDoubleFault(seed, FaultOp::kWrite, undo_write_, /*persistent=*/false,
                            absl::StrCat("seed ", seed, ": db sync #", db_sync_,
                                         " and undo write #", undo_write_, " fail"));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(whole, 0) << "no seed left the commit whole in the database file";
}

TEST_P(DoubleFaultTest, UndoFailingToReadTheJournalLeavesTheStateBeforeTheCommit) {
  int whole = 0;
  for (uint64_t seed = 0; seed < kDoubleFaultSeeds; ++seed) {
    whole += RunDoubleFault(seed, FaultOp::kRead, undo_read_, /*persistent=*/false,
                            absl::StrCat("seed ", seed, ": db sync #", db_sync_,
                                         " and undo read #", undo_read_, " fail"));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(whole, 0) << "no seed left the commit whole in the database file";
}

// The undo rewrites every page and then its database sync fails: a failed sync may lose the
// rewrites (vfs::FaultInjectingFileSystem::SetSyncFailureSeed), leaving the database file as the
// failed commit's sync left it, whole for some seeds (about one in 64: more seeds here).
TEST_P(DoubleFaultTest, UndoFailingToSyncTheDatabaseLeavesTheStateBeforeTheCommit) {
  int whole = 0;
  for (uint64_t seed = 0; seed < 8 * kDoubleFaultSeeds; ++seed) {
    whole += RunDoubleFault(seed, FaultOp::kSync, db_sync_ + 1, /*persistent=*/false,
                            absl::StrCat("seed ", seed, ": db sync #", db_sync_,
                                         " and the undo's sync #", db_sync_ + 1, " fail"));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(whole, 0) << "no seed left the commit whole in the database file";
}

// Every write fails from the undo's first on, the one that would unseal the journal included:
// the error is still the commit's, and the reopened database holds the commit whole or not at
// all.
TEST_P(DoubleFaultTest, UnsealFailingTooStillReturnsTheCommitsError) {
  for (uint64_t seed = 0; seed < kDoubleFaultSeeds; ++seed) {
    RunDoubleFault(seed, FaultOp::kWrite, undo_write_, /*persistent=*/true,
                   absl::StrCat("seed ", seed, ": db sync #", db_sync_, " and every write from #",
                                undo_write_, " fail"));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(RollbackModes, DoubleFaultTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist),
                         [](const auto& info) {
                           return std::string(pager::JournalModeName(info.param));
                         });

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
