// What the tests of damaged WAL files share (wal_files_test.cc: the logs;
// wal_shm_files_test.cc: the -shm): the workload they commit, a decoder of the log independent
// of log/wal_log.cc, and the fixture that commits, crashes, damages and reopens.
#ifndef JOURNALKV_TESTS_WAL_FILES_TESTING_H_
#define JOURNALKV_TESTS_WAL_FILES_TESTING_H_

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

namespace journalkv::wal_files {

inline constexpr uint32_t kPageSize = 1024;
inline constexpr int kCommits = 20;
inline constexpr char kAfterKey[] = "zz after recovery";

inline std::string Key(int i) { return absl::StrFormat("key%03d", i); }
// Long enough that 20 of them split the tree over several 1 KiB leaves: some transactions
// write several frames.
inline std::string Value(int i) {
  return absl::StrCat("value of ", i, ":",
                      std::string(150 + (i * 37) % 100, static_cast<char>('a' + i % 26)));
}

inline double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The log as the spec (log/wal_format.h) describes it, decoded independently of wal_log.cc.
struct LogLayout {
  bool header_valid = false;
  wal::WalHeader header;
  std::vector<uint32_t> commit_frames;  // the commit frames of the valid prefix, in order
  uint32_t mx_frame() const { return commit_frames.empty() ? 0 : commit_frames.back(); }
};

inline LogLayout ParseLog(const std::string& bytes, uint32_t page_size) {
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
inline void EditLogHeader(std::string& log, const std::function<void(uint8_t*)>& edit,
                   bool fix_checksum) {
  auto* p = reinterpret_cast<uint8_t*>(log.data());
  edit(p);
  if (fix_checksum) base::EncodeFixed64(p + 24, base::Xxh3(p, 24, 0));
}

inline std::string RandomBytes(size_t n, uint64_t seed) {
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

inline std::string LogsName(Logs logs) {
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

inline constexpr char kPrimeKey[] = "prime";  // written and deleted again: moves wal2 to the other log

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
      ASSERT_THAT(fs_->Delete(path), ::journalkv::testing::IsOk());
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
    ASSERT_THAT(WriteAll(db, s.db), ::journalkv::testing::IsOk());
    ASSERT_THAT(WriteAll(log_path(db), s.log), ::journalkv::testing::IsOk());
    if (wal2()) {
      ASSERT_THAT(WriteAll(other_log_path(db), s.other), ::journalkv::testing::IsOk());
    }
    ASSERT_THAT(WriteAll(shm_path(db), s.shm), ::journalkv::testing::IsOk());
  }
  void Restore(const Saved& s) { Restore(s, path_); }

  // A FULL checkpoint that copies everything.
  static void FullCheckpoint(Db& db) {
    absl::StatusOr<CheckpointResult> r = db.Checkpoint(CheckpointMode::kFull);
    ASSERT_THAT(r, ::journalkv::testing::IsOk());
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
      ASSERT_THAT(db, ::journalkv::testing::IsOk());
      // A new database starts in -wal; every FULL checkpoint below switches logs once.
      const int switches = checkpointed > 0 ? 1 : 0;
      if (wal2() && switches % 2 != target_log()) {
        ASSERT_THAT((*db)->Put(kPrimeKey, "x"), ::journalkv::testing::IsOk());
        ASSERT_THAT((*db)->Delete(kPrimeKey), ::journalkv::testing::IsOk());
        ASSERT_NO_FATAL_FAILURE(FullCheckpoint(**db));
      }
      for (int i = 0; i < checkpointed + logged; ++i) {
        ASSERT_THAT((*db)->Put(Key(i), Value(i)), ::journalkv::testing::IsOk());
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
    ASSERT_THAT(log, ::journalkv::testing::IsOk());
    const LogLayout layout = ParseLog(*log, kPageSize);
    ASSERT_TRUE(layout.header_valid);
    // One transaction, one commit frame.
    ASSERT_EQ(layout.commit_frames.size(), static_cast<size_t>(logged));
    other_frames_ = 0;
    if (wal2()) {
      absl::StatusOr<std::string> other = ReadAll(other_log_path());
      ASSERT_THAT(other, ::journalkv::testing::IsOk());
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
      ASSERT_THAT(v, ::journalkv::testing::IsOk()) << Key(i);
      if (i < present) {
        ASSERT_TRUE(v->has_value()) << Key(i) << " (committed) is missing";
        EXPECT_EQ(**v, Value(i)) << Key(i);
      } else {
        EXPECT_FALSE(v->has_value()) << Key(i) << " (of a commit the log lost) is visible";
      }
    }
    absl::StatusOr<std::optional<std::string>> after = r->Get(kAfterKey);
    ASSERT_THAT(after, ::journalkv::testing::IsOk());
    EXPECT_EQ(after->has_value(), with_after);
    absl::StatusOr<uint64_t> count = r->Count();
    ASSERT_THAT(count, ::journalkv::testing::IsOk());
    EXPECT_EQ(*count, static_cast<uint64_t>(present + (with_after ? 1 : 0)));
    r.reset();
    absl::StatusOr<CheckResult> check = db.Check();
    ASSERT_THAT(check, ::journalkv::testing::IsOk());
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
      ASSERT_THAT(db, ::journalkv::testing::IsOk());
      const DbStats s = (*db)->Stats();
      EXPECT_TRUE(s.wal_mode);
      EXPECT_EQ(s.pinned_connections, 0) << "a dead connection's pin survived";
      if (log_frames >= 0) {
        EXPECT_EQ(s.log_frames, static_cast<uint32_t>(log_frames) + other_frames_);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectHolds(**db, present, total, false));
      ASSERT_THAT((*db)->Put(kAfterKey, "1"), ::journalkv::testing::IsOk());
      ASSERT_NO_FATAL_FAILURE(ExpectHolds(**db, present, total, true));
    }
    for (const std::string& p : log_paths(db_path)) EXPECT_FALSE(Exists(p)) << p;
    EXPECT_FALSE(Exists(shm_path(db_path)));
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(db_path, WalOptions(fs_));
    ASSERT_THAT(db, ::journalkv::testing::IsOk());
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

}  // namespace journalkv::wal_files

#endif  // JOURNALKV_TESTS_WAL_FILES_TESTING_H_
