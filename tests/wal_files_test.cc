// WAL mode with damaged logs (-wal, -wal2), through the public API. Every case must end in a
// clear absl::Status error that names the file, or in a recovery whose data equals what was
// committed (never a crash, a hang or wrong data).
//
// Every case runs in wal and in wal2. The cases of a damaged log run in wal2 twice: with the
// commits the crash left, and the damage, in -wal, and in -wal2; the other log then holds an
// older generation, completely copied (the commits before the last FULL checkpoint), or
// nothing, and recovery must order the two by generation (a damaged header makes the log with
// the commits empty, and the older one the only log).
//
//   - The -wal, after a crash left committed frames in it: cut inside its last frame or inside
//     its header, a flipped byte in a frame or in the header, a header of another page size or
//     of a newer version, random bytes, a directory in its place.
//   (The -shm: wal_shm_files_test.cc. A pinned reader while the log grows to a million frames:
//   wal_big_log_test.cc.)
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
// 1. The -wal (wal2: the log the commits are in, -wal or -wal2)

// (a) A cut anywhere in the last transaction's frames loses that transaction only; a cut at
// the end of the last frame (the preallocated zeros gone) loses nothing.
TEST_P(WalFilesTest, LogCutInsideTheLastFrameLosesOnlyTheLastCommit) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const Saved saved = Save();
  const LogLayout log = ParseLog(saved.log, kPageSize);
  const std::vector<uint32_t>& commits = log.commit_frames;
  const uint32_t last = commits.back();
  const uint32_t last_txn_first = commits[kCommits - 2] + 1;
  struct Case {
    const char* what;
    uint64_t size;
    int present;
  };
  const std::vector<Case> cases = {
      {"end of the last frame", wal::LogEnd(last, kPageSize), kCommits},
      {"middle of the last frame's image", wal::FrameImageOffset(last, kPageSize) + kPageSize / 2,
       kCommits - 1},
      {"last frame's header", wal::FrameHeaderOffset(last, kPageSize) + 10, kCommits - 1},
      {"one byte short", wal::LogEnd(last, kPageSize) - 1, kCommits - 1},
      {"first frame of the last transaction",
       wal::FrameImageOffset(last_txn_first, kPageSize) + kPageSize / 2, kCommits - 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    ASSERT_THAT(Cut(log_path(), c.size), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectRecovers(c.present, kCommits, commits[c.present - 1]));
  }
}

// (b) A log cut inside its header is an empty log: the data is what the database file holds
// (the checkpointed commits; the empty database when nothing was checkpointed).
TEST_P(WalFilesTest, LogCutInsideItsHeaderIsAnEmptyLog) {
  for (int checkpointed : {0, 10}) {
    for (uint64_t size : {uint64_t{10}, uint64_t{0}, uint64_t{wal::kWalHeaderSize - 1}}) {
      SCOPED_TRACE(absl::StrCat(checkpointed, " checkpointed, log cut to ", size, " bytes"));
      ASSERT_NO_FATAL_FAILURE(RemoveAll());
      ASSERT_NO_FATAL_FAILURE(CommitAndCrash(checkpointed, kCommits - checkpointed));
      ASSERT_THAT(Cut(log_path(), size), IsOk());
      ASSERT_NO_FATAL_FAILURE(ExpectRecovers(checkpointed, kCommits, 0));
    }
  }
}

// (c) A flipped byte in frame K (its page image, or its header's checksum or salt): the valid
// prefix ends with the last commit frame before K.
TEST_P(WalFilesTest, FlippedByteInAFrameEndsTheValidPrefixBeforeItsTransaction) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const Saved saved = Save();
  const LogLayout log = ParseLog(saved.log, kPageSize);
  const std::vector<uint32_t>& commits = log.commit_frames;
  struct Case {
    uint32_t frame;
    bool image;       // a byte of its image, else of its header
    uint64_t offset;  // in the image or the header
  };
  std::vector<Case> cases;
  cases.push_back({1, true, kPageSize / 2});
  cases.push_back({commits[9], true, kPageSize / 2});      // a commit frame
  cases.push_back({commits[9] + 1, true, 7});              // the first frame after it
  cases.push_back({commits[9] + 1, false, 25});            // its checksum
  cases.push_back({commits[9] + 1, false, 17});            // its image_sum
  cases.push_back({commits[9] + 1, false, 9});             // its salt1
  cases.push_back({commits[9] + 1, false, 5});             // its db_size
  cases.push_back({commits[9] + 1, true, kPageSize - 3});  // its image's trailer
  cases.push_back({commits.back(), true, kPageSize - 1});  // the last frame's last byte
  for (uint32_t f = 2; f < commits.back(); ++f) {  // a frame that is not a commit frame
    if (std::find(commits.begin(), commits.end(), f) == commits.end()) {
      cases.push_back({f, true, 100});
      break;
    }
  }
  for (const Case& c : cases) {
    const uint32_t frame = c.frame;
    const int present = static_cast<int>(
        std::count_if(commits.begin(), commits.end(), [&](uint32_t k) { return k < frame; }));
    SCOPED_TRACE(absl::StrCat("byte ", c.offset, " of frame ", frame,
                              c.image ? "'s image" : "'s header", " flipped: expect ", present,
                              " commits"));
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    const uint64_t at = (c.image ? wal::FrameImageOffset(frame, kPageSize)
                                 : wal::FrameHeaderOffset(frame, kPageSize)) + c.offset;
    ASSERT_THAT(FlipByte(log_path(), at), IsOk());
    ASSERT_NO_FATAL_FAILURE(
        ExpectRecovers(present, kCommits, present == 0 ? 0 : commits[present - 1]));
  }
}

// (d) A flipped byte anywhere in the header (its checksum included) is an empty log; so is a
// header that checks out but carries other salts than its frames.
TEST_P(WalFilesTest, DamagedLogHeaderIsAnEmptyLog) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(10, kCommits - 10));
  const Saved saved = Save();
  for (uint64_t offset : {24, 31, 0, 12, 16, 20}) {
    SCOPED_TRACE(absl::StrCat("header byte ", offset, " flipped"));
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    ASSERT_THAT(FlipByte(log_path(), offset), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectRecovers(10, kCommits, 0));
  }
  {
    SCOPED_TRACE("salt2 changed, checksum recomputed");
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    std::string log = saved.log;
    EditLogHeader(log, [](uint8_t* p) { p[20] ^= 1; }, true);
    ASSERT_THAT(WriteAll(log_path(), log), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectRecovers(10, kCommits, 0));
  }
}

// (e) A header of another page size (a valid one, or not a page size at all) is an empty log.
TEST_P(WalFilesTest, LogHeaderWithAnotherPageSizeIsAnEmptyLog) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(10, kCommits - 10));
  const Saved saved = Save();
  for (uint32_t page_size : {2 * kPageSize, kPageSize / 2, 65536u, 1000u, 0u}) {
    for (bool fix_checksum : {true, false}) {
      SCOPED_TRACE(absl::StrCat("log page size ", page_size, fix_checksum ? "" : ", bad checksum"));
      ASSERT_NO_FATAL_FAILURE(Restore(saved));
      std::string log = saved.log;
      EditLogHeader(log, [&](uint8_t* p) { base::EncodeFixed32(p + 8, page_size); },
                    fix_checksum);
      ASSERT_THAT(WriteAll(log_path(), log), IsOk());
      ASSERT_NO_FATAL_FAILURE(ExpectRecovers(10, kCommits, 0));
    }
  }
}

// (f) A directory where the -wal (or the -shm) belongs: the open fails with an error naming
// it, and changes nothing; with the log in place every commit is still there. (Each case on a
// copy of the crashed files: MemFileSystem cannot remove a directory.)
TEST_P(WalFilesTest, LogOrShmThatIsADirectoryIsAnErrorNamingIt) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const Saved saved = Save();
  const uint32_t mx = ParseLog(saved.log, kPageSize).mx_frame();
  for (bool log : {true, false}) {
    const std::string db_path = absl::StrCat(dir_, "/dir_", log ? "wal" : "shm", ".db");
    const std::string victim = log ? log_path(db_path) : shm_path(db_path);
    SCOPED_TRACE(victim);
    ASSERT_NO_FATAL_FAILURE(Restore(saved, db_path));
    ASSERT_NO_FATAL_FAILURE(MakeDirectory(victim));
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(db_path, WalOptions(fs_));
    ASSERT_FALSE(db.ok()) << "opened with a directory at " << victim;
    std::printf("%s is a directory: %s\n", victim.c_str(), db.status().ToString().c_str());
    EXPECT_TRUE(absl::StrContains(db.status().message(), victim)) << db.status();
    EXPECT_EQ(db.status().code(), absl::StatusCode::kInvalidArgument) << db.status();
    db = absl::UnknownError("closed");
    EXPECT_EQ(*ReadAll(db_path), saved.db);
    if (!log) {
      EXPECT_EQ(*ReadAll(log_path(db_path)), saved.log);
    }
    if (wal2()) {
      EXPECT_EQ(*ReadAll(other_log_path(db_path)), saved.other);
    }
    if (posix()) {
      // The directory gone again, the log in place: every commit is there.
      ASSERT_EQ(::rmdir(victim.c_str()), 0);
      if (log) {
        ASSERT_THAT(WriteAll(victim, saved.log), IsOk());
      }
      ASSERT_NO_FATAL_FAILURE(ExpectRecovers(db_path, kCommits, kCommits, mx));
    }
  }
  // The same files, untouched, under their own name.
  ASSERT_NO_FATAL_FAILURE(ExpectRecovers(kCommits, kCommits, mx));
}

// (g) Random bytes in the log (as large as the log was), random frames under the real header,
// or a log of zeros: an empty log.
TEST_P(WalFilesTest, GarbageLogIsAnEmptyLog) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(10, kCommits - 10));
  const Saved saved = Save();
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind == 0 ? "random bytes" : kind == 1 ? "random frames" : "zeros");
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    std::string log = kind == 2 ? std::string(saved.log.size(), '\0')
                                : RandomBytes(saved.log.size(), 42 + kind);
    if (kind == 1) std::memcpy(log.data(), saved.log.data(), wal::kWalHeaderSize);
    ASSERT_THAT(WriteAll(log_path(), log), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectRecovers(10, kCommits, 0));
  }
}

// (h) A log of a newer version (its checksum recomputed, or not) is refused with
// FailedPrecondition, not taken as empty and overwritten: the database file and the log are
// left as they were, and with the version put back every commit is there.
TEST_P(WalFilesTest, LogOfANewerVersionIsRefusedAndLeftUntouched) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const Saved saved = Save();
  for (bool fix_checksum : {true, false}) {
    SCOPED_TRACE(fix_checksum ? "checksum recomputed" : "old checksum");
    ASSERT_NO_FATAL_FAILURE(Restore(saved));
    std::string log = saved.log;
    EditLogHeader(log, [](uint8_t* p) { base::EncodeFixed32(p + 4, wal::kWalVersion + 1); },
                  fix_checksum);
    ASSERT_THAT(WriteAll(log_path(), log), IsOk());
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, WalOptions(fs_));
    std::printf("a log of version 3: %s\n", db.status().ToString().c_str());
    EXPECT_THAT(db, StatusIs(absl::StatusCode::kFailedPrecondition, "version 3"));
    EXPECT_TRUE(absl::StrContains(db.status().message(), log_path()))
        << "the error does not name the log: " << db.status();
    db = absl::UnknownError("closed");
    EXPECT_EQ(*ReadAll(path_), saved.db);
    EXPECT_EQ(*ReadAll(log_path()), log);
    if (wal2()) {
      EXPECT_EQ(*ReadAll(other_log_path()), saved.other);
    }
    // A second opener is refused the same way (nothing was "repaired" in between).
    EXPECT_THAT(Db::Open(path_, WalOptions(fs_)),
                StatusIs(absl::StatusCode::kFailedPrecondition, "version 3"));
    ASSERT_THAT(WriteAll(log_path(), saved.log), IsOk());
    ASSERT_NO_FATAL_FAILURE(
        ExpectRecovers(kCommits, kCommits, ParseLog(saved.log, kPageSize).mx_frame()));
  }
}

// The log `v2` (format version 2) rewritten in version 1's layout (log/wal_format.h), as an
// earlier build would have left it: its valid frames, each 24-byte header right before its
// image, chained over header bytes [0, 16) and the image. `frames` of them (all when 0).
std::string AsVersionOne(const std::string& v2, uint32_t page_size, uint32_t frames = 0) {
  const auto* p = reinterpret_cast<const uint8_t*>(v2.data());
  wal::WalHeader header = *wal::DecodeWalHeader(absl::MakeConstSpan(p, wal::kWalHeaderSize));
  std::string v1(wal::kWalHeaderSize, '\0');
  auto* out = reinterpret_cast<uint8_t*>(v1.data());
  wal::EncodeWalHeader(header, absl::MakeSpan(out, wal::kWalHeaderSize));
  base::EncodeFixed32(out + 4, 1);
  uint64_t chain = base::Xxh3(out, 24, 0);
  base::EncodeFixed64(out + 24, chain);
  const uint32_t last = frames != 0 ? frames : ParseLog(v2, page_size).mx_frame();
  for (uint32_t f = 1; f <= last; ++f) {
    const wal::FrameHeader h = wal::DecodeFrameHeader(
        absl::MakeConstSpan(p + wal::FrameHeaderOffset(f, page_size), wal::kFrameHeaderSize));
    std::string frame(wal::kV1FrameHeaderSize + page_size, '\0');
    auto* q = reinterpret_cast<uint8_t*>(frame.data());
    base::EncodeFixed32(q, h.page_no);
    base::EncodeFixed32(q + 4, h.db_size);
    base::EncodeFixed32(q + 8, h.salt1);
    base::EncodeFixed32(q + 12, h.salt2);
    std::memcpy(q + wal::kV1FrameHeaderSize, p + wal::FrameImageOffset(f, page_size), page_size);
    chain = base::Xxh3Pair(q, 16, q + wal::kV1FrameHeaderSize, page_size, chain);
    base::EncodeFixed64(q + 16, chain);
    v1 += frame;
  }
  return v1;
}

// (i) A log of format version 1, left by an earlier build, that holds commits: this build
// cannot recover them and must not take the log for empty and restart it over them. The open
// is refused with FailedPrecondition naming the log and the remedy, and both files are left as
// they were. A version-1 log without a commit frame is empty: the database opens with what
// its file holds.
TEST_P(WalFilesTest, ALogOfFormatVersionOneIsRefusedWhenItHoldsCommits) {
  ASSERT_NO_FATAL_FAILURE(CommitAndCrash(0, kCommits));
  const Saved saved = Save();
  const std::string v1 = AsVersionOne(saved.log, kPageSize);
  ASSERT_THAT(WriteAll(log_path(), v1), IsOk());
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, WalOptions(fs_));
  std::printf("a log of version 1: %s\n", db.status().ToString().c_str());
  EXPECT_THAT(db, StatusIs(absl::StatusCode::kFailedPrecondition,
                           "open the database once with the build that wrote it"));
  EXPECT_TRUE(absl::StrContains(db.status().message(), log_path())) << db.status();
  db = absl::UnknownError("closed");
  EXPECT_EQ(*ReadAll(path_), saved.db);
  EXPECT_EQ(*ReadAll(log_path()), v1);

  // Only the frames before the first commit frame: an empty log. (In wal2 the other log
  // holds commits of its own, so the count of what is present differs; the mode's log format
  // is the same, and the refusal above ran in it.)
  if (wal2()) return;
  const uint32_t first_commit = ParseLog(saved.log, kPageSize).commit_frames.front();
  ASSERT_GT(first_commit, 1u);
  ASSERT_NO_FATAL_FAILURE(Restore(saved));
  ASSERT_THAT(WriteAll(log_path(), AsVersionOne(saved.log, kPageSize, first_commit - 1)), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectRecovers(0, kCommits, int64_t{0}));
}

INSTANTIATE_TEST_SUITE_P(
    LogsFs, WalFilesTest,
    ::testing::Combine(::testing::Values(Logs::kWal, Logs::kWal2Wal, Logs::kWal2Wal2),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<Logs, bool>>& info) {
      return absl::StrCat(LogsName(std::get<0>(info.param)), "_",
                          std::get<1>(info.param) ? "posix" : "mem");
    });

}  // namespace
}  // namespace journalkv::wal_files
