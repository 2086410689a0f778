// WAL mode with damaged -wal and -shm files, through the public API. Every case must end in a
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
//   - The -shm left by a crashed process: garbage, a stale copy, cut or missing (the next opener
//     is alone and rebuilds it from the log); an unknown layout version or a torn index header
//     while another connection has it open.
//   (A pinned reader while the log grows to a million frames: wal_big_log_test.cc.)
//
// Crashes are simulated with vfs::FaultInjectingFileSystem::SimulateProcessCrash over the base
// file system (MemFileSystem, or PosixFileSystem in TEST_TMPDIR): the dead connection neither
// checkpoints nor removes its files. The files are then damaged and reopened through the base.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"
#include "log/wal_format.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

constexpr uint32_t kPageSize = 1024;
constexpr int kCommits = 20;
constexpr char kAfterKey[] = "zz after recovery";

std::string Key(int i) { return absl::StrFormat("key%03d", i); }
// Long enough that 20 of them split the tree over several 1 KiB leaves: some transactions
// write several frames.
std::string Value(int i) {
  return absl::StrCat("value of ", i, ":",
                      std::string(150 + (i * 37) % 100, static_cast<char>('a' + i % 26)));
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The log as the spec (log/wal_format.h) describes it, decoded independently of wal_log.cc.
struct LogLayout {
  bool header_valid = false;
  wal::WalHeader header;
  std::vector<uint32_t> commit_frames;  // the commit frames of the valid prefix, in order
  uint32_t mx_frame() const { return commit_frames.empty() ? 0 : commit_frames.back(); }
};

LogLayout ParseLog(const std::string& bytes, uint32_t page_size) {
  LogLayout layout;
  if (bytes.size() < wal::kWalHeaderSize) return layout;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  absl::StatusOr<wal::WalHeader> header =
      wal::DecodeWalHeader(absl::MakeConstSpan(p, wal::kWalHeaderSize));
  if (!header.ok() || header->page_size != page_size) return layout;
  layout.header_valid = true;
  layout.header = *header;
  uint64_t chain = header->checksum;
  for (uint32_t f = 1; wal::LogEnd(f, page_size) <= bytes.size(); ++f) {
    const wal::FrameHeader h = wal::DecodeFrameHeader(
        absl::MakeConstSpan(p + wal::FrameHeaderOffset(f, page_size), wal::kFrameHeaderSize));
    if (!wal::FrameValid(h, *header, chain,
                         absl::MakeConstSpan(p + wal::FrameImageOffset(f, page_size), page_size))) {
      break;
    }
    chain = h.checksum;
    if (h.db_size != 0) layout.commit_frames.push_back(f);
  }
  return layout;
}

// Rewrites the log header in `log` (its first 32 bytes): `edit` changes the raw bytes, then the
// checksum is recomputed as the spec says (XXH3-64 of [0, 24), seed 0) when `fix_checksum`.
void EditLogHeader(std::string& log, const std::function<void(uint8_t*)>& edit,
                   bool fix_checksum) {
  auto* p = reinterpret_cast<uint8_t*>(log.data());
  edit(p);
  if (fix_checksum) base::EncodeFixed64(p + 24, base::Xxh3(p, 24, 0));
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// The journal mode, and in wal2 the log that holds the commits of the crashed process and that
// the test damages.
enum class Logs {
  kWal,       // wal: -wal
  kWal2Wal,   // wal2: -wal (log 0)
  kWal2Wal2,  // wal2: -wal2 (log 1)
};

std::string LogsName(Logs logs) {
  switch (logs) {
    case Logs::kWal:
      return "wal";
    case Logs::kWal2Wal:
      return "wal2_wal";
    case Logs::kWal2Wal2:
      return "wal2_wal2";
  }
  return "?";
}

constexpr char kPrimeKey[] = "prime";  // written and deleted again: moves wal2 to the other log

// Param: the logs, and whether the file system is POSIX's (else MemFileSystem).
class WalFilesTest : public ::testing::TestWithParam<std::tuple<Logs, bool>> {
 protected:
  void SetUp() override {
    if (posix()) {
      temp_dir_ = std::make_unique<vfs::ScopedTempDir>();
      dir_ = temp_dir_->path();
      fs_ = &posix_;
    } else {
      dir_ = "";
      fs_ = &mem_;
    }
    path_ = dir_ + "/x.db";
  }

  Logs logs() const { return std::get<0>(GetParam()); }
  bool posix() const { return std::get<1>(GetParam()); }
  bool wal2() const { return logs() != Logs::kWal; }
  // The log the crashed process's commits are in (CommitAndCrash), which the tests damage.
  int target_log() const { return logs() == Logs::kWal2Wal2 ? 1 : 0; }
  std::string log_path(const std::string& db) const {
    return db + (target_log() == 1 ? "-wal2" : "-wal");
  }
  // wal2: the other log.
  std::string other_log_path(const std::string& db) const {
    return db + (target_log() == 1 ? "-wal" : "-wal2");
  }
  // Every log file of the mode.
  std::vector<std::string> log_paths(const std::string& db) const {
    if (!wal2()) return {db + "-wal"};
    return {db + "-wal", db + "-wal2"};
  }
  std::string shm_path(const std::string& db) const { return db + "-shm"; }
  std::string log_path() const { return log_path(path_); }
  std::string other_log_path() const { return other_log_path(path_); }
  std::string shm_path() const { return shm_path(path_); }

  Options WalOptions(vfs::FileSystem* fs) const {
    Options o;
    o.journal_mode = wal2() ? JournalMode::kWal2 : JournalMode::kWal;
    o.file_system = fs;
    o.page_size = kPageSize;
    o.checkpoint_policy = "manual";  // the log keeps every commit until asked
    return o;
  }

  bool Exists(const std::string& p) { return *fs_->Exists(p); }

  // --- files of the base file system
  absl::StatusOr<std::string> ReadAll(const std::string& path) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
    JKV_ASSIGN_OR_RETURN(uint64_t size, f->Size());
    std::string bytes(size, '\0');
    if (size > 0) {
      JKV_RETURN_IF_ERROR(
          f->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), size)));
    }
    return bytes;
  }
  absl::Status WriteAll(const std::string& path, const std::string& bytes) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kCreate, vfs::FileKind::kOther}));
    JKV_RETURN_IF_ERROR(f->Truncate(0));
    if (bytes.empty()) return absl::OkStatus();
    return f->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                           bytes.size()));
  }
  absl::Status Cut(const std::string& path, uint64_t size) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}));
    return f->Truncate(size);
  }
  absl::Status FlipByte(const std::string& path, uint64_t offset) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}));
    uint8_t b = 0;
    JKV_RETURN_IF_ERROR(f->Read(offset, absl::MakeSpan(&b, 1)));
    b ^= 0x10;
    return f->Write(offset, absl::MakeConstSpan(&b, 1));
  }
  void RemoveIfPresent(const std::string& path) {
    if (Exists(path)) {
      ASSERT_THAT(fs_->Delete(path), IsOk());
    }
  }
  void RemoveAll() {
    for (const char* suffix : {"", "-wal", "-wal2", "-shm", "-journal"}) {
      ASSERT_NO_FATAL_FAILURE(RemoveIfPresent(path_ + suffix));
    }
  }
  // A directory where a file belongs. MemFileSystem cannot remove it again.
  void MakeDirectory(const std::string& path) {
    ASSERT_NO_FATAL_FAILURE(RemoveIfPresent(path));
    if (posix()) {
      ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
    } else {
      mem_.MakeDirectoryForTesting(path);
    }
  }

  // --- the -shm as every connection sees it: through MapSharedRegion (on MemFileSystem the
  // mapping and the file content are independent; on POSIX they are the same bytes).
  absl::Status WriteShmMapped(const std::string& path, const std::string& bytes) {
    if (bytes.size() % shm::kRegionSize != 0) return absl::InvalidArgumentError("not regions");
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}));
    JKV_RETURN_IF_ERROR(f->Write(
        0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    for (uint32_t r = 0; r * shm::kRegionSize < bytes.size(); ++r) {
      JKV_ASSIGN_OR_RETURN(uint8_t * region, f->MapSharedRegion(r, shm::kRegionSize));
      std::memcpy(region, bytes.data() + uint64_t{r} * shm::kRegionSize, shm::kRegionSize);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ReadShmMapped(const std::string& path) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                         fs_->Open(path, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther}));
    JKV_ASSIGN_OR_RETURN(uint64_t size, f->Size());
    const uint32_t regions = static_cast<uint32_t>(size / shm::kRegionSize);
    std::string bytes(uint64_t{regions} * shm::kRegionSize, '\0');
    for (uint32_t r = 0; r < regions; ++r) {
      JKV_ASSIGN_OR_RETURN(uint8_t * region, f->MapSharedRegion(r, shm::kRegionSize));
      std::memcpy(bytes.data() + uint64_t{r} * shm::kRegionSize, region, shm::kRegionSize);
    }
    return bytes;
  }

  struct Saved {
    std::string db, log, other, shm;  // other: wal2's other log
  };
  Saved Save() {
    Saved s;
    s.db = *ReadAll(path_);
    s.log = *ReadAll(log_path());
    if (wal2()) s.other = *ReadAll(other_log_path());
    s.shm = *ReadAll(shm_path());
    return s;
  }
  // Writes the saved files under `db` (by default their own name).
  void Restore(const Saved& s, const std::string& db) {
    ASSERT_THAT(WriteAll(db, s.db), IsOk());
    ASSERT_THAT(WriteAll(log_path(db), s.log), IsOk());
    if (wal2()) {
      ASSERT_THAT(WriteAll(other_log_path(db), s.other), IsOk());
    }
    ASSERT_THAT(WriteAll(shm_path(db), s.shm), IsOk());
  }
  void Restore(const Saved& s) { Restore(s, path_); }

  // A FULL checkpoint that copies everything.
  static void FullCheckpoint(Db& db) {
    absl::StatusOr<CheckpointResult> r = db.Checkpoint(CheckpointMode::kFull);
    ASSERT_THAT(r, IsOk());
    ASSERT_FALSE(r->blocked);
  }

  // Commits keys [0, checkpointed) and copies them into the database file (FULL checkpoint),
  // then commits keys [checkpointed, checkpointed + logged) into the log (which restarts at the
  // first of them), one transaction each, and crashes: the process dies with -wal and -shm in
  // place. `on_commit(n)` runs after the n-th commit, with the database still open.
  // wal2: the logged commits go to target_log(), the newest generation (the writer switches to
  // the other log at the first commit after a FULL checkpoint); the other log holds the
  // checkpointed commits, or, when that alone would not end in target_log(), the commits of a
  // prime key written and deleted again, copied by a FULL checkpoint before the rest (or is
  // empty: wal2_wal with nothing checkpointed).
  void CommitAndCrash(int checkpointed, int logged,
                      const std::function<void(int)>& on_commit = nullptr) {
    vfs::FaultInjectingFileSystem crash_fs(fs_);
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, WalOptions(&crash_fs));
      ASSERT_THAT(db, IsOk());
      // A new database starts in -wal; every FULL checkpoint below switches logs once.
      const int switches = checkpointed > 0 ? 1 : 0;
      if (wal2() && switches % 2 != target_log()) {
        ASSERT_THAT((*db)->Put(kPrimeKey, "x"), IsOk());
        ASSERT_THAT((*db)->Delete(kPrimeKey), IsOk());
        ASSERT_NO_FATAL_FAILURE(FullCheckpoint(**db));
      }
      for (int i = 0; i < checkpointed + logged; ++i) {
        ASSERT_THAT((*db)->Put(Key(i), Value(i)), IsOk());
        if (i + 1 == checkpointed) {
          ASSERT_NO_FATAL_FAILURE(FullCheckpoint(**db));
        }
        if (on_commit) on_commit(i + 1);
      }
      const DbStats stats = (*db)->Stats();
      ASSERT_GE(stats.log_frames, static_cast<uint32_t>(logged));
      if (wal2()) {
        ASSERT_EQ(stats.current_log, target_log());
      }
      crash_fs.SimulateProcessCrash();
    }  // the dead connection closes without a checkpoint and removes nothing
    for (const std::string& p : log_paths(path_)) ASSERT_TRUE(Exists(p)) << p;
    ASSERT_TRUE(Exists(shm_path()));
    absl::StatusOr<std::string> log = ReadAll(log_path());
    ASSERT_THAT(log, IsOk());
    const LogLayout layout = ParseLog(*log, kPageSize);
    ASSERT_TRUE(layout.header_valid);
    // One transaction, one commit frame.
    ASSERT_EQ(layout.commit_frames.size(), static_cast<size_t>(logged));
    other_frames_ = 0;
    if (wal2()) {
      absl::StatusOr<std::string> other = ReadAll(other_log_path());
      ASSERT_THAT(other, IsOk());
      const LogLayout older = ParseLog(*other, kPageSize);
      // V1: the other log is the older generation (or empty).
      if (older.header_valid) {
        ASSERT_LT(older.header.ckpt_seq, layout.header.ckpt_seq);
      }
      other_frames_ = older.mx_frame();
    }
  }

  // The database holds keys [0, present) with their values, none of [present, total), and
  // kAfterKey when `with_after`; Check passes.
  void ExpectHolds(Db& db, int present, int total, bool with_after) {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db.BeginRead());
    for (int i = 0; i < total; ++i) {
      absl::StatusOr<std::optional<std::string>> v = r->Get(Key(i));
      ASSERT_THAT(v, IsOk()) << Key(i);
      if (i < present) {
        ASSERT_TRUE(v->has_value()) << Key(i) << " (committed) is missing";
        EXPECT_EQ(**v, Value(i)) << Key(i);
      } else {
        EXPECT_FALSE(v->has_value()) << Key(i) << " (of a commit the log lost) is visible";
      }
    }
    absl::StatusOr<std::optional<std::string>> after = r->Get(kAfterKey);
    ASSERT_THAT(after, IsOk());
    EXPECT_EQ(after->has_value(), with_after);
    absl::StatusOr<uint64_t> count = r->Count();
    ASSERT_THAT(count, IsOk());
    EXPECT_EQ(*count, static_cast<uint64_t>(present + (with_after ? 1 : 0)));
    r.reset();
    absl::StatusOr<CheckResult> check = db.Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_THAT(check->problems, ::testing::IsEmpty());
    EXPECT_EQ(check->keys, static_cast<uint64_t>(present + (with_after ? 1 : 0)));
  }

  // Opens `db_path` (alone: it rebuilds the index from whatever log there is), expects keys
  // [0, present) of [0, total), and `log_frames` committed frames in the log when >= 0 (wal2:
  // in the damaged log; the other log's frames, untouched, are added); commits one more key,
  // closes (the last close checkpoints and removes -wal, -wal2 and -shm) and expects all of it
  // again after reopening.
  void ExpectRecovers(const std::string& db_path, int present, int total,
                      int64_t log_frames = -1) {
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(db_path, WalOptions(fs_));
      ASSERT_THAT(db, IsOk());
      const DbStats s = (*db)->Stats();
      EXPECT_TRUE(s.wal_mode);
      EXPECT_EQ(s.pinned_connections, 0) << "a dead connection's pin survived";
      if (log_frames >= 0) {
        EXPECT_EQ(s.log_frames, static_cast<uint32_t>(log_frames) + other_frames_);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectHolds(**db, present, total, false));
      ASSERT_THAT((*db)->Put(kAfterKey, "1"), IsOk());
      ASSERT_NO_FATAL_FAILURE(ExpectHolds(**db, present, total, true));
    }
    for (const std::string& p : log_paths(db_path)) EXPECT_FALSE(Exists(p)) << p;
    EXPECT_FALSE(Exists(shm_path(db_path)));
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(db_path, WalOptions(fs_));
    ASSERT_THAT(db, IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectHolds(**db, present, total, true));
  }
  void ExpectRecovers(int present, int total, int64_t log_frames = -1) {
    ExpectRecovers(path_, present, total, log_frames);
  }

  vfs::MemFileSystem mem_;
  vfs::PosixFileSystem posix_;
  vfs::FileSystem* fs_ = nullptr;
  std::unique_ptr<vfs::ScopedTempDir> temp_dir_;  // POSIX: removed with its content
  std::string dir_;
  std::string path_;
  uint32_t other_frames_ = 0;  // wal2: the frames CommitAndCrash left in the other log
};

// The cases that damage no log of a crashed process (the -shm of live connections): in wal2
// once, not once per log.
class WalShmFilesTest : public WalFilesTest {};

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
}  // namespace journalkv
