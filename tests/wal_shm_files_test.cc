// WAL mode with a damaged -shm, through the public API. Every case must end in a clear
// absl::Status error that names the file, or in a recovery whose data equals what was committed
// (never a crash, a hang or wrong data). Every case runs in wal and in wal2.
//
//   - The -shm left by a crashed process: garbage, a stale copy, cut or missing (the next opener
//     is alone and rebuilds it from the log); an unknown layout version or a torn index header
//     while another connection has it open.
//   (The logs: wal_files_test.cc.)
//
// Crashes are simulated with vfs::FaultInjectingFileSystem::SimulateProcessCrash over the base
// file system (MemFileSystem, or PosixFileSystem in TEST_TMPDIR): the dead connection neither
// checkpoints nor removes its files. The files are then damaged and reopened through the base.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/wal_files_testing.h"

namespace journalkv::wal_files {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

// ---------------------------------------------------------------------------------------------
// 2. The -shm

// (a) Random bytes over the whole -shm of a crashed process (and past it): the next opener is
// alone, reinitialises it and rebuilds the index from the log.
TEST_P(WalFilesTest, GarbageShmOfACrashedProcessIsRebuiltFromTheLog) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const uint32_t mx = ParseLog(*ReadAll(log_path()), kPageSize).mx_frame();
  absl::StatusOr<std::string> shm = ReadShmMapped(shm_path());
  ASSERT_THAT(shm, IsOk());
  ASSERT_GE(shm->size(), 2 * shm::kRegionSize);  // region 0 and a hash block
  ASSERT_THAT(WriteShmMapped(shm_path(), RandomBytes(std::max<size_t>(shm->size(),
                                                                      4 * shm::kRegionSize),
                                                     7)),
              IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectRecovers(kCommits, kCommits, mx));
}

// (a') A well-formed but stale -shm (as it was after 10 of the 20 commits, its layout version
// and header checksums all valid): an opener that is alone never trusts it.
TEST_P(WalFilesTest, StaleShmOfACrashedProcessIsNotTrusted) {
  std::string stale;
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits, [&](int committed) {
    if (committed != 10) return;
    absl::StatusOr<std::string> s = ReadShmMapped(shm_path());
    ASSERT_THAT(s, IsOk());
    stale = *s;
  }));
  ASSERT_FALSE(stale.empty());
  const uint32_t mx = ParseLog(*ReadAll(log_path()), kPageSize).mx_frame();
  ASSERT_THAT(WriteShmMapped(shm_path(), stale), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectRecovers(kCommits, kCommits, mx));
}

// (b) An unknown layout version in a -shm another connection has open: the new opener fails
// with FailedPrecondition naming x.db-shm (after its busy timeout: it cannot tell a foreign
// layout from one being initialised), and the open connection goes on working.
TEST_P(WalShmFilesTest, ShmWithAnUnknownLayoutVersionIsRefusedWhileAnotherConnectionHasItOpen) {
  absl::StatusOr<std::unique_ptr<Db>> a = Db::Open(path_, WalOptions(fs_));
  ASSERT_THAT(a, IsOk());
  for (int i = 0; i < kCommits; ++i) ASSERT_THAT((*a)->Put(Key(i), Value(i)), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> shm_file,
                           fs_->Open(shm_path(), {vfs::OpenMode::kReadWrite,
                                                  vfs::FileKind::kOther}));
  JKV_ASSERT_OK_AND_ASSIGN(uint8_t * region0, shm_file->MapSharedRegion(0, shm::kRegionSize));
  int extra = 0;
  for (uint32_t version : {0xDEADBEEFu, shm::kShmLayoutVersion + 1, 0u}) {
    SCOPED_TRACE(absl::StrFormat("layout version 0x%08x", version));
    // Through the file too: on POSIX it is the same memory; on MemFileSystem the mapping is
    // what connections read.
    uint8_t word[4];
    std::memcpy(word, &version, 4);  // native-endian, as the layout says
    ASSERT_THAT(shm_file->Write(0, absl::MakeConstSpan(word, 4)), IsOk());
    std::memcpy(region0, word, 4);
    Options ob = WalOptions(fs_);
    ob.busy_timeout = absl::Milliseconds(300);
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<Db>> b = Db::Open(path_, ob);
    const double took = Seconds(std::chrono::steady_clock::now() - t0);
    std::printf("layout version 0x%08x: open took %.3f s: %s\n", version, took,
                b.status().ToString().c_str());
    EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition, shm_path()));
    EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition, "layout version"));
    EXPECT_LT(took, 5.0) << "the refused open waited far past its busy timeout";
    b = absl::UnknownError("closed");
    // A keeps working: reads, writes, read transactions, checkpoints.
    ASSERT_THAT((*a)->Put(absl::StrCat(kAfterKey, extra), "1"), IsOk());
    ++extra;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*a)->BeginRead());
    for (int i = 0; i < kCommits; ++i) {
      absl::StatusOr<std::optional<std::string>> v = r->Get(Key(i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value());
      EXPECT_EQ(**v, Value(i));
    }
    EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + extra));
    r.reset();
    ASSERT_THAT((*a)->Checkpoint(CheckpointMode::kPassive), IsOk());
    EXPECT_THAT((*a)->Check()->problems, ::testing::IsEmpty());
  }
  shm_file.reset();
  a = absl::UnknownError("closed");  // the last close: copies the log back, removes the files
  for (const std::string& p : log_paths(path_)) EXPECT_FALSE(Exists(p)) << p;
  EXPECT_FALSE(Exists(shm_path()));
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, WalOptions(fs_));
  ASSERT_THAT(db, IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*db)->BeginRead());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + extra));
  EXPECT_EQ(**r->Get(Key(kCommits - 1)), Value(kCommits - 1));
}

// (c) A -shm cut to 0 bytes, to a few bytes, or missing, with no other connection open: the
// opener reinitialises it and recovers every commit from the log.
TEST_P(WalFilesTest, CutOrMissingShmOfACrashedProcessIsRebuiltFromTheLog) {
  for (int64_t size : {int64_t{0}, int64_t{100}, int64_t{-1}}) {
    SCOPED_TRACE(size < 0 ? std::string("missing") : absl::StrCat("cut to ", size, " bytes"));
    ASSERT_NO_FATAL_FAILURE(RemoveAll());
    ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
    const uint32_t mx = ParseLog(*ReadAll(log_path()), kPageSize).mx_frame();
    if (size < 0) {
      ASSERT_THAT(fs_->Delete(shm_path()), IsOk());
    } else {
      ASSERT_THAT(Cut(shm_path(), static_cast<uint64_t>(size)), IsOk());
    }
    ASSERT_NO_FATAL_FAILURE(ExpectRecovers(kCommits, kCommits, mx));
  }
}

// (d) A torn index header (copy A's checksum damaged, as a writer killed while publishing
// leaves it) while connections are open: the next reader rebuilds the index under the
// recovery lock and reads correct data; read transactions open across the rebuild keep their
// snapshot; the next writer finds a good header. A torn header met by a writer is rebuilt too.
TEST_P(WalShmFilesTest, TornIndexHeaderIsRebuiltWhileOtherConnectionsStayCorrect) {
  Options o = WalOptions(fs_);
  absl::StatusOr<std::unique_ptr<Db>> a = Db::Open(path_, o);
  ASSERT_THAT(a, IsOk());
  for (int i = 0; i < kCommits; ++i) ASSERT_THAT((*a)->Put(Key(i), Value(i)), IsOk());
  absl::StatusOr<std::unique_ptr<Db>> b = Db::Open(path_, o);
  ASSERT_THAT(b, IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> a_old, (*a)->BeginRead());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> b_old, (*b)->BeginRead());
  ASSERT_THAT((*a)->Put(Key(kCommits), Value(kCommits)), IsOk());

  // An index of our own over the same -shm (no locks taken): the test's view of the header.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<vfs::File> shm_file,
                           fs_->Open(shm_path(), {vfs::OpenMode::kReadWrite,
                                                  vfs::FileKind::kOther}));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<shm::WalIndex> index,
                           shm::WalIndex::OpenShared(shm_file.get(), false));
  shm::IndexHeader before;
  ASSERT_TRUE(index->ReadHeader(&before));
  index->CorruptHeaderForTesting();
  shm::IndexHeader h;
  ASSERT_FALSE(index->ReadHeader(&h)) << "the header is not torn";

  auto expect_reader_holds = [&](ReadTransaction& r, int present) {
    for (int i = 0; i <= kCommits + 1; ++i) {
      absl::StatusOr<std::optional<std::string>> v = r.Get(Key(i));
      ASSERT_THAT(v, IsOk()) << Key(i);
      if (i < present) {
        ASSERT_TRUE(v->has_value()) << Key(i);
        EXPECT_EQ(**v, Value(i)) << Key(i);
      } else {
        EXPECT_FALSE(v->has_value()) << Key(i);
      }
    }
    EXPECT_EQ(*r.Count(), static_cast<uint64_t>(present));
  };
  {
    SCOPED_TRACE("a reader of B meets the torn header");
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*b)->BeginRead());
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*r, kCommits + 1));
  }
  ASSERT_TRUE(index->ReadHeader(&h)) << "the header was not rebuilt";
  for (int l = 0; l < (wal2() ? 2 : 1); ++l) {
    EXPECT_EQ(h.logs[l].mx_frame, before.logs[l].mx_frame) << "log " << l;
    EXPECT_EQ(h.logs[l].ckpt_seq, before.logs[l].ckpt_seq) << "log " << l;
    EXPECT_EQ(h.logs[l].last_checksum, before.logs[l].last_checksum) << "log " << l;
  }
  EXPECT_EQ(h.current_log, before.current_log);
  EXPECT_EQ(h.page_count, before.page_count);
  {
    SCOPED_TRACE("snapshots taken before the rebuild");
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*a_old, kCommits));
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*b_old, kCommits));
  }
  {
    SCOPED_TRACE("A reads and writes after the rebuild");
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*a)->BeginRead());
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*r, kCommits + 1));
    r.reset();
    ASSERT_THAT((*a)->Put(Key(kCommits + 1), Value(kCommits + 1)), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(r, (*b)->BeginRead());
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*r, kCommits + 2));
  }
  {
    SCOPED_TRACE("a writer of B meets a torn header");
    index->CorruptHeaderForTesting();
    ASSERT_FALSE(index->ReadHeader(&h));
    ASSERT_THAT((*b)->Put(Key(kCommits + 2), Value(kCommits + 2)), IsOk());
    ASSERT_TRUE(index->ReadHeader(&h));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*a)->BeginRead());
    for (int i = 0; i <= kCommits + 2; ++i) EXPECT_EQ(**r->Get(Key(i)), Value(i)) << Key(i);
    ASSERT_NO_FATAL_FAILURE(expect_reader_holds(*b_old, kCommits));
  }
  a_old.reset();
  b_old.reset();
  EXPECT_THAT((*a)->Check()->problems, ::testing::IsEmpty());
  EXPECT_THAT((*b)->Check()->problems, ::testing::IsEmpty());
  index.reset();
  shm_file.reset();
  b = absl::UnknownError("closed");
  a = absl::UnknownError("closed");
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, o);
  ASSERT_THAT(db, IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, (*db)->BeginRead());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + 3));
  for (int i = 0; i < kCommits + 3; ++i) EXPECT_EQ(**r->Get(Key(i)), Value(i)) << Key(i);
}

INSTANTIATE_TEST_SUITE_P(
    LogsFs, WalFilesTest,
    ::testing::Combine(::testing::Values(Logs::kWal, Logs::kWal2Wal, Logs::kWal2Wal2),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<Logs, bool>>& info) {
      return absl::StrCat(LogsName(std::get<0>(info.param)), "_",
                          std::get<1>(info.param) ? "posix" : "mem");
    });

INSTANTIATE_TEST_SUITE_P(
    ModeFs, WalShmFilesTest,
    ::testing::Combine(::testing::Values(Logs::kWal, Logs::kWal2Wal), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<Logs, bool>>& info) {
      return absl::StrCat(std::get<0>(info.param) == Logs::kWal ? "wal" : "wal2", "_",
                          std::get<1>(info.param) ? "posix" : "mem");
    });

}  // namespace
}  // namespace journalkv::wal_files
