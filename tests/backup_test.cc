// Db::Backup (engine/backup.cc): the copy is the snapshot, whole, in every journal family,
// compacted on request, taken while a writer goes on, and never half there after a power loss
// (B1, B2), with each of its syncs shown necessary.
#include <atomic>
#include <map>
#include <set>
#include <tuple>
#include <vector>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr char kPath[] = "/d/x.db";
constexpr char kDest[] = "/d/copy.db";

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
std::string Value(int i) { return absl::StrCat("value-", i, std::string(i % 300, 'v')); }

// Every key and value of the database at `path` (opened in its own family), or the error.
absl::StatusOr<std::map<std::string, std::string>> Contents(vfs::FileSystem* fs,
                                                            const std::string& path) {
  Options o;
  o.file_system = fs;
  o.create_if_missing = false;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, o));
  JKV_ASSIGN_OR_RETURN(CheckResult check, db->Check());
  if (!check.ok()) return absl::DataLossError(check.problems.front());
  std::map<std::string, std::string> out;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db->BeginRead());
  std::unique_ptr<Iterator> it = txn->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    JKV_ASSIGN_OR_RETURN(std::string value, it->value());
    out[std::string(it->key())] = std::move(value);
  }
  JKV_RETURN_IF_ERROR(it->status());
  return out;
}

// 600 keys, two thirds of them (a run) deleted again: the file has free pages.
std::map<std::string, std::string> Fill(Db& db) {
  std::map<std::string, std::string> model;
  auto w = *db.BeginWrite();
  for (int i = 0; i < 600; ++i) {
    EXPECT_THAT(w->Put(Key(i), Value(i)), IsOk());
    model[Key(i)] = Value(i);
  }
  EXPECT_THAT(w->Commit(), IsOk());
  w = *db.BeginWrite();
  for (int i = 100; i < 500; ++i) {
    EXPECT_THAT(w->Delete(Key(i)), IsOk());
    model.erase(Key(i));
  }
  EXPECT_THAT(w->Commit(), IsOk());
  return model;
}

class BackupModeTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override { fs_.MakeDirectoryForTesting("/d"); }
  Options ModeOptions() {
    Options o;
    o.file_system = &fs_;
    o.journal_mode = GetParam();
    return o;
  }
  vfs::MemFileSystem fs_;
};

TEST_P(BackupModeTest, APageCopyIsTheSnapshotWithItsFreePagesAndFamily) {
  std::unique_ptr<Db> db = *Db::Open(kPath, ModeOptions());
  const std::map<std::string, std::string> model = Fill(*db);
  const DbStats source = db->Stats();
  ASSERT_GT(source.freelist_pages, 0u);
  absl::StatusOr<BackupResult> r = db->Backup(kDest);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->pages, source.page_count);
  EXPECT_EQ(r->bytes, uint64_t{source.page_count} * source.page_size);
  EXPECT_FALSE(*fs_.Exists(absl::StrCat(kDest, kBackupTempSuffix)));
  EXPECT_THAT(Contents(&fs_, kDest), IsOkAndHolds(model));
  // The copy is a database of its own, in the source's family, with the same free pages.
  Options o;
  o.file_system = &fs_;
  std::unique_ptr<Db> copy = *Db::Open(kDest, o);
  EXPECT_EQ(copy->Stats().wal_mode, source.wal_mode);
  EXPECT_EQ(copy->Stats().wal2, source.wal2);
  EXPECT_EQ(copy->Stats().atomic_write_kind, source.atomic_write_kind);  // atomic stays atomic
  EXPECT_EQ(copy->Stats().freelist_pages, source.freelist_pages);
  EXPECT_THAT(copy->Put("new", "in the copy only"), IsOk());
  EXPECT_THAT(db->Get("new"), IsOkAndHolds(std::nullopt));
}

TEST_P(BackupModeTest, ACompactCopyHasNoFreePagesAndTheSameKeys) {
  std::unique_ptr<Db> db = *Db::Open(kPath, ModeOptions());
  const std::map<std::string, std::string> model = Fill(*db);
  const DbStats source = db->Stats();
  BackupOptions b;
  b.compact = true;
  absl::StatusOr<BackupResult> r = db->Backup(kDest, b);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->keys, model.size());
  EXPECT_LT(r->pages, source.page_count);
  EXPECT_THAT(Contents(&fs_, kDest), IsOkAndHolds(model));
  Options o;
  o.file_system = &fs_;
  std::unique_ptr<Db> copy = *Db::Open(kDest, o);
  EXPECT_EQ(copy->Stats().freelist_pages, 0u);
  EXPECT_EQ(copy->Stats().wal_mode, source.wal_mode);
  EXPECT_EQ(copy->Stats().wal2, source.wal2);
  // The copy leaves no side files of its temporary name behind.
  for (const char* suffix : {"", "-journal", "-wal", "-wal2", "-shm"}) {
    EXPECT_FALSE(*fs_.Exists(absl::StrCat(kDest, kBackupTempSuffix, suffix))) << suffix;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BackupModeTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal,
                                           JournalMode::kWal2, JournalMode::kAtomic),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

TEST(BackupTest, RefusesAnExistingDestinationItsSideFilesAndItself) {
  vfs::MemFileSystem fs;
  fs.MakeDirectoryForTesting("/d");
  Options o;
  o.file_system = &fs;
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  ASSERT_THAT(db->Put("k", "v"), IsOk());
  EXPECT_THAT(db->Backup(kPath), StatusIs(absl::StatusCode::kInvalidArgument, "the database itself"));
  EXPECT_THAT(db->Backup(""), StatusIs(absl::StatusCode::kInvalidArgument, "empty"));
  ASSERT_THAT(db->Backup(kDest), IsOk());
  EXPECT_THAT(db->Backup(kDest), StatusIs(absl::StatusCode::kAlreadyExists, "never overwrites"));
  const std::string other = "/d/other.db";
  for (const char* suffix : {"-journal", "-wal", "-wal2", "-shm"}) {
    auto side = *fs.Open(other + suffix, vfs::OpenOptions{vfs::OpenMode::kCreate,
                                                          vfs::FileKind::kOther});
    EXPECT_THAT(db->Backup(other), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            absl::StrCat(other, suffix, " exists")));
    ASSERT_THAT(fs.Delete(other + suffix), IsOk());
  }
  {
    auto stale = *fs.Open(absl::StrCat(other, kBackupTempSuffix),
                          vfs::OpenOptions{vfs::OpenMode::kCreate, vfs::FileKind::kOther});
  }
  EXPECT_THAT(db->Backup(other), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          "or one was interrupted"));
  EXPECT_TRUE(*fs.Exists(absl::StrCat(other, kBackupTempSuffix)));  // not deleted: not ours
  EXPECT_FALSE(*fs.Exists(other));
}

// Issue 43, finding 7 (B4): another process creates DEST after the backup checked that DEST is
// missing, before the copy takes DEST's name (hook point "backup:renaming"). The backup fails
// with AlreadyExists naming DEST, DEST keeps the other process's bytes, the database is as it
// was, and the temporary file is gone. MemFileSystem and PosixFileSystem (in a temporary
// directory), page copy and compact copy.
struct RacingFile {
  vfs::FileSystem* fs = nullptr;
  std::string path;  // created at the hook point
};
RacingFile racing_file;
constexpr char kOtherProcessBytes[] = "another process's file";

void CreateRacingFile(const char* point) {
  if (std::string(point) != "backup:renaming") return;
  JKV_CHECK(vfs::WriteStringToFile(*racing_file.fs, racing_file.path, kOtherProcessBytes).ok());
}

using MakeEnv = std::unique_ptr<vfs::FileSystemEnv> (*)();
class BackupRaceTest : public ::testing::TestWithParam<MakeEnv> {};

TEST_P(BackupRaceTest, ADestCreatedBeforeTheRenameIsNeverReplaced) {
  std::unique_ptr<vfs::FileSystemEnv> env = GetParam()();
  vfs::FileSystem& fs = env->fs();
  const std::string path = env->Path("x.db");
  const std::string dest = env->Path("copy.db");
  Options o;
  o.file_system = &fs;
  std::unique_ptr<Db> db = *Db::Open(path, o);
  const std::map<std::string, std::string> model = Fill(*db);
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "page copy");
    racing_file = {&fs, dest};
    wal::SetWalHookForTesting(&CreateRacingFile);
    BackupOptions b;
    b.compact = compact;
    absl::StatusOr<BackupResult> r = db->Backup(dest, b);
    wal::SetWalHookForTesting(nullptr);
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kAlreadyExists, dest));
    absl::StatusOr<std::string> dest_bytes = vfs::ReadFileToString(fs, dest);
    ASSERT_THAT(dest_bytes, IsOk());
    EXPECT_TRUE(*dest_bytes == kOtherProcessBytes)
        << dest << " was replaced: it holds " << dest_bytes->size() << " bytes now";
    for (const char* suffix : {"", "-journal", "-wal", "-wal2", "-shm"}) {
      EXPECT_FALSE(*fs.Exists(absl::StrCat(dest, kBackupTempSuffix, suffix))) << suffix;
    }
    // The database: its keys, whole, through this handle and a new one.
    absl::StatusOr<CheckResult> check = db->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_TRUE(check->ok());
    EXPECT_THAT(Contents(&fs, path), IsOkAndHolds(model));
    ASSERT_THAT(fs.Delete(dest), IsOk());
  }
  // With DEST gone, the backup goes through.
  ASSERT_THAT(db->Backup(dest), IsOk());
  EXPECT_THAT(Contents(&fs, dest), IsOkAndHolds(model));
}

INSTANTIATE_TEST_SUITE_P(FileSystems, BackupRaceTest,
                         ::testing::Values(&vfs::MakeMemEnv, &vfs::MakePosixEnv),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Mem" : "Posix");
                         });

// A writer commits k0, k1, ... in order, one per transaction, from before the backup starts to
// after it ends: the copy holds exactly a prefix of them (one snapshot), at least those
// committed before the backup began, and the writer never failed.
TEST(BackupTest, AWriterRunsThroughoutAndTheCopyIsOneSnapshot) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2, JournalMode::kDelete}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::MemFileSystem fs;
    fs.MakeDirectoryForTesting("/d");
    Options o;
    o.file_system = &fs;
    o.journal_mode = mode;
    o.busy_timeout = absl::Seconds(30);  // rollback: a commit waits for the copy's SHARED
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    {
      auto w = *db->BeginWrite();  // a database large enough that copying it takes a while
      for (int i = 0; i < 20000; ++i) ASSERT_THAT(w->Put(absl::StrCat("bulk", i), Value(i)), IsOk());
      ASSERT_THAT(w->Commit(), IsOk());
    }
    std::atomic<int> committed{0};
    std::atomic<bool> stop{false};
    absl::Status writer_status;
    std::thread writer([&] {
      for (int i = 0; !stop.load(); ++i) {
        writer_status = db->Put(Key(i), Value(i));
        if (!writer_status.ok()) return;
        committed.store(i + 1);
      }
    });
    while (committed.load() < 20) std::this_thread::yield();
    const int before = committed.load();
    absl::StatusOr<BackupResult> r = db->Backup(kDest);
    const int after_backup = committed.load();
    while (committed.load() < after_backup + 20 && writer_status.ok()) std::this_thread::yield();
    stop.store(true);
    writer.join();
    ASSERT_THAT(writer_status, IsOk());
    ASSERT_THAT(r, IsOk());
    absl::StatusOr<std::map<std::string, std::string>> copy = Contents(&fs, kDest);
    ASSERT_THAT(copy, IsOk());
    int prefix = 0;
    while (copy->count(Key(prefix)) != 0) ++prefix;
    EXPECT_GE(prefix, before);
    // The writer counts a commit once Put returns: the one in flight when the backup ended may
    // be in the snapshot already.
    EXPECT_LE(prefix, after_backup + 1);
    for (const auto& [key, value] : *copy) {
      if (key.rfind("key", 0) == 0) {
        EXPECT_LT(key, Key(prefix)) << "a key past the prefix";
      }
    }
    EXPECT_EQ(copy->size(), 20000u + prefix);
    std::printf("%s: writer committed %d before, %d during the backup\n",
                std::string(JournalModeName(mode)).c_str(), before, after_backup - before);
  }
}

// Power loss at every mutation of a backup (and with each of its syncs skipped): DEST is
// absent or whole, and present once Backup returned OK.
struct SweepOutcome {
  bool backup_ok = false;
  bool dest_exists = false;
  absl::Status dest;  // opening and reading DEST, when it exists
};

SweepOutcome BackupThenPowerLoss(bool compact, JournalMode mode, int64_t crash_after,
                                 const std::set<uint64_t>& skip_kinds, uint64_t seed,
                                 std::vector<vfs::FaultInjectingFileSystem::SyncRecord>* log,
                                 std::map<std::string, std::string>* model) {
  vfs::MemFileSystem base;
  base.MakeDirectoryForTesting("/d");
  vfs::FaultInjectingFileSystem fs(&base);
  SweepOutcome out;
  {
    Options o;
    o.file_system = &fs;
    o.journal_mode = mode;
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    *model = Fill(*db);
    const uint64_t syncs_before = fs.sync_log().size();
    std::set<uint64_t> skip;
    for (uint64_t k : skip_kinds) skip.insert(syncs_before + k);
    fs.SkipSyncs(skip);
    if (crash_after >= 0) fs.CrashAfterMutations(crash_after);
    BackupOptions b;
    b.compact = compact;
    out.backup_ok = db->Backup(kDest, b).ok();
    if (log != nullptr) {
      std::vector<vfs::FaultInjectingFileSystem::SyncRecord> all = fs.sync_log();
      log->assign(all.begin() + syncs_before, all.end());
    }
    db.reset();
  }
  JKV_CHECK(fs.SimulatePowerLoss(seed).ok());
  out.dest_exists = *fs.Exists(kDest);
  if (out.dest_exists) {
    absl::StatusOr<std::map<std::string, std::string>> got = Contents(&fs, kDest);
    out.dest = !got.ok() ? got.status()
               : *got == *model ? absl::OkStatus()
                                : absl::DataLossError("the copy differs from the snapshot");
  }
  return out;
}

class BackupCrashTest : public ::testing::TestWithParam<std::tuple<bool, JournalMode>> {};

TEST_P(BackupCrashTest, APowerLossAtEveryMutationLeavesDestAbsentOrWhole) {
  const auto [compact, mode] = GetParam();
  std::map<std::string, std::string> model;
  int completed = 0;
  for (int64_t n = 0;; ++n) {
    SweepOutcome o = BackupThenPowerLoss(compact, mode, n, {}, n, nullptr, &model);
    if (o.dest_exists) {
      EXPECT_THAT(o.dest, IsOk()) << "crash after " << n << " mutations";
    }
    if (o.backup_ok) {
      EXPECT_TRUE(o.dest_exists) << "crash after " << n << ": a finished backup was lost";
      if (++completed == 2) {  // past the last mutation: the sweep covered them all
        std::printf("compact %d, %s: %lld crash points\n", compact ? 1 : 0,
                    std::string(JournalModeName(mode)).c_str(), static_cast<long long>(n - 1));
        break;
      }
    }
    ASSERT_LT(n, 5000) << "the backup never completed";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, BackupCrashTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(JournalMode::kDelete,
                                                              JournalMode::kWal)));

// Each sync of the backup has a crash state that fails without it: skipping the copy's sync
// (B1) lets a power loss keep the rename and drop pages; skipping the directory's (B2) lets it
// undo a backup reported done.
TEST(BackupTest, EachSyncIsNeeded) {
  std::map<std::string, std::string> model;
  std::vector<vfs::FaultInjectingFileSystem::SyncRecord> log;
  SweepOutcome clean = BackupThenPowerLoss(false, JournalMode::kWal, -1, {}, 0, &log, &model);
  ASSERT_TRUE(clean.backup_ok);
  ASSERT_TRUE(clean.dest_exists);
  ASSERT_THAT(clean.dest, IsOk());
  ASSERT_EQ(log.size(), 2u) << "the copy's sync, then the directory's";
  EXPECT_EQ(log[0].path, absl::StrCat(kDest, kBackupTempSuffix));
  EXPECT_TRUE(log[1].directory);

  // B2 skipped: the backup says done, and a power loss takes it back.
  SweepOutcome no_dir = BackupThenPowerLoss(false, JournalMode::kWal, -1, {2}, 0, nullptr, &model);
  EXPECT_TRUE(no_dir.backup_ok);
  EXPECT_FALSE(no_dir.dest_exists) << "B2 skipped, yet the rename survived";

  // B1 skipped: the rename reaches the disk (the directory is synced) before the pages do.
  int damaged = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SweepOutcome no_data =
        BackupThenPowerLoss(false, JournalMode::kWal, -1, {1}, seed, nullptr, &model);
    EXPECT_TRUE(no_data.dest_exists);
    if (no_data.dest_exists && !no_data.dest.ok()) ++damaged;
  }
  EXPECT_GT(damaged, 0) << "B1 skipped, yet every power loss kept the copy whole";
}

}  // namespace
}  // namespace journalkv
