// WAL readers that may not write the wal-index: a read-only connection whose `-shm` cannot be
// opened for writing (no write permission on it or on the directory) keeps a private index on
// the heap (wal/private_index.h). It reads whole snapshots next to a live writer,
// sees that writer's later commits in its later read transactions, holds checkpoints and log
// restarts back while it is open (they would change the database file or the log under it),
// and works on a database whose -shm is gone (no other connection open).
//
// The denial is simulated by a file system wrapper (tests run as root, which ignores file
// permissions): it refuses to open any -shm for writing.
//
// Every test runs in wal and in wal2 mode. In wal2 the writer switches logs every 8 frames
// (when the other log is copied), so that the commits of a test spread over -wal and -wal2 and
// the private index is built from both.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::testing::HasSubstr;

// Forwards every call to a base file system; a test's wrapper overrides Open.
class ForwardingFileSystem : public vfs::FileSystem {
 public:
  explicit ForwardingFileSystem(vfs::FileSystem* base) : base_(base) {}
  absl::StatusOr<std::unique_ptr<vfs::File>> Open(const std::string& path,
                                                  const vfs::OpenOptions& options) override {
    return base_->Open(path, options);
  }
  absl::Status Delete(const std::string& path) override { return base_->Delete(path); }
  absl::StatusOr<bool> Exists(const std::string& path) override { return base_->Exists(path); }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return base_->IsDirectory(path);
  }
  absl::Status SyncDirectory(const std::string& dir) override {
    return base_->SyncDirectory(dir);
  }

 private:
  vfs::FileSystem* const base_;
};

// A -shm may only be opened read-only.
class NoShmWriteFileSystem final : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  absl::StatusOr<std::unique_ptr<vfs::File>> Open(const std::string& path,
                                                  const vfs::OpenOptions& options) override {
    if (absl::EndsWith(path, "-shm") && options.mode != vfs::OpenMode::kReadOnly) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": open: Permission denied"));
    }
    return ForwardingFileSystem::Open(path, options);
  }
};

std::string Key(int i) { return absl::StrCat("k", 10000 + i); }

constexpr uint32_t kWal2SwitchPages = 8;

class WalReadOnlyTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  bool wal2() const { return GetParam() == JournalMode::kWal2; }
  Options WriterOptions() {
    Options o;
    o.journal_mode = GetParam();
    o.wal2_switch_pages = kWal2SwitchPages;
    o.file_system = &mem_;
    o.checkpoint_policy = "manual";
    o.busy_timeout = absl::Milliseconds(300);  // FULL and RESTART wait this long for readers
    return o;
  }
  Options ReaderOptions() {
    Options o;
    o.journal_mode = GetParam();
    o.wal2_switch_pages = kWal2SwitchPages;
    o.file_system = &denied_;
    o.read_only = true;
    o.busy_timeout = absl::Milliseconds(200);
    return o;
  }
  // The logs of the mode: -wal, and in wal2 -wal2.
  std::vector<std::string> LogPaths() const {
    if (!wal2()) return {path_ + "-wal"};
    return {path_ + "-wal", path_ + "-wal2"};
  }
  // wal2: the commits so far went to both logs (the writer switched).
  void ExpectBothLogsHoldFrames(Db& writer) {
    if (!wal2()) return;
    const DbStats s = writer.Stats();
    EXPECT_GT(s.log_frames - s.wal2_log_frames, 0u) << "-wal holds no frame";
    EXPECT_GT(s.wal2_log_frames, 0u) << "-wal2 holds no frame: the writer never switched";
  }
  std::optional<std::string> Get(Db& db, int i) {
    absl::StatusOr<std::optional<std::string>> v = db.Get(Key(i));
    EXPECT_THAT(v, IsOk());
    return v.ok() ? *v : std::nullopt;
  }

  vfs::MemFileSystem mem_;
  NoShmWriteFileSystem denied_{&mem_};
  const std::string path_ = "/x.db";
};

TEST_P(WalReadOnlyTest, AReaderThatMayNotWriteTheShmReadsNextToALiveWriter) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  for (int i = 0; i < 50; ++i) ASSERT_THAT(writer->Put(Key(i), "one"), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectBothLogsHoldFrames(*writer));

  // Without the private index this open fails: the -shm cannot be opened for writing.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> reader, Db::Open(path_, ReaderOptions()));
  EXPECT_EQ(Get(*reader, 7), "one");
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> snapshot, reader->BeginRead());

  // The writer goes on; checkpoints are held back while the private reader is open.
  for (int i = 0; i < 50; ++i) ASSERT_THAT(writer->Put(Key(i), "two"), IsOk());
  ASSERT_THAT(writer->Put(Key(99), "new"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult passive, writer->Checkpoint(CheckpointMode::kPassive));
  EXPECT_TRUE(passive.blocked);
  EXPECT_EQ(passive.copied, 0u);
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult restart, writer->Checkpoint(CheckpointMode::kRestart));
  EXPECT_TRUE(restart.blocked);  // waited the busy timeout for the reader, then gave up
  EXPECT_FALSE(restart.restarted);

  // The open snapshot still sees the first state; a new read transaction sees the newest.
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> old, snapshot->Get(Key(7)));
  EXPECT_EQ(old, "one");
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> none, snapshot->Get(Key(99)));
  EXPECT_EQ(none, std::nullopt);
  EXPECT_EQ(Get(*reader, 7), "two");
  EXPECT_EQ(Get(*reader, 99), "new");
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, reader->Check());
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.keys, 51u);

  // It may not write, nor checkpoint.
  absl::Status put = reader->Put(Key(1), "x");
  EXPECT_EQ(put.code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<CheckpointResult> ckpt = reader->Checkpoint(CheckpointMode::kPassive);
  ASSERT_FALSE(ckpt.ok());
  EXPECT_THAT(ckpt.status().message(), HasSubstr("cannot checkpoint"));

  // Once it is closed, checkpoints copy everything and the log restarts.
  snapshot.reset();
  ASSERT_THAT(reader->Close(), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult after, writer->Checkpoint(CheckpointMode::kRestart));
  EXPECT_FALSE(after.blocked);
  EXPECT_TRUE(after.restarted);
  EXPECT_EQ(Get(*writer, 99), "new");
}

TEST_P(WalReadOnlyTest, AReaderWorksWithoutAnyShm) {
  // A writer killed with its log in place: its -shm gone too (another machine, a cleanup).
  vfs::FaultInjectingFileSystem fault(&mem_);
  {
    Options o = WriterOptions();
    o.file_system = &fault;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, o));
    for (int i = 0; i < 30; ++i) ASSERT_THAT(writer->Put(Key(i), "logged"), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectBothLogsHoldFrames(*writer));
    fault.SimulateProcessCrash();  // its close below checkpoints nothing
  }
  ASSERT_THAT(mem_.Delete(path_ + "-shm"), IsOk());
  for (const std::string& log : LogPaths()) ASSERT_TRUE(*mem_.Exists(log)) << log;

  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> reader, Db::Open(path_, ReaderOptions()));
  EXPECT_EQ(Get(*reader, 0), "logged");
  EXPECT_EQ(Get(*reader, 29), "logged");
  EXPECT_FALSE(*mem_.Exists(path_ + "-shm"));  // it created nothing

  // A writer arrives (it recovers the index from the log), commits; the reader sees it, and
  // the writer's checkpoints wait for the reader.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  ASSERT_THAT(writer->Put(Key(100), "later"), IsOk());
  EXPECT_EQ(Get(*reader, 100), "later");
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult passive, writer->Checkpoint(CheckpointMode::kPassive));
  EXPECT_TRUE(passive.blocked);
  EXPECT_EQ(passive.copied, 0u);
  ASSERT_THAT(reader->Close(), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(passive, writer->Checkpoint(CheckpointMode::kPassive));
  EXPECT_FALSE(passive.blocked);
  EXPECT_GT(passive.copied, 0u);
}

TEST_P(WalReadOnlyTest, AReaderOfADatabaseWithNoLogReadsTheFile) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
    ASSERT_THAT(writer->Put(Key(1), "in the file"), IsOk());
  }  // the last close copies the log back and removes -wal (and -wal2) and -shm
  for (const std::string& log : LogPaths()) ASSERT_FALSE(*mem_.Exists(log)) << log;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> reader, Db::Open(path_, ReaderOptions()));
  EXPECT_EQ(Get(*reader, 1), "in the file");
  for (const std::string& log : LogPaths()) EXPECT_FALSE(*mem_.Exists(log)) << log;

  // A writer that opens later creates the log; the reader follows it there.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  ASSERT_THAT(writer->Put(Key(2), "in the log"), IsOk());
  EXPECT_EQ(Get(*reader, 2), "in the log");
  EXPECT_EQ(Get(*reader, 1), "in the file");
}

// An opener that did not ask for read-only but may not write the -shm reads anyway, as a
// read-only connection with a private index, and its writes fail naming why.
TEST_P(WalReadOnlyTest, AReadWriteOpenerThatMayNotWriteTheShmFallsBackToReadOnly) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  ASSERT_THAT(writer->Put(Key(1), "one"), IsOk());
  Options o = ReaderOptions();
  o.read_only = false;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, o));
  EXPECT_TRUE(db->options().read_only);
  EXPECT_EQ(Get(*db, 1), "one");
  ASSERT_THAT(writer->Put(Key(1), "two"), IsOk());
  EXPECT_EQ(Get(*db, 1), "two");  // the live writer's later commit
  const absl::Status put = db->Put(Key(2), "x");
  EXPECT_EQ(put.code(), absl::StatusCode::kFailedPrecondition) << put;
  EXPECT_THAT(put.message(), HasSubstr("open read-only because writing it is not allowed"));
  EXPECT_THAT(put.message(), HasSubstr("cannot open the wal-index for writing"));
}

// A read-only connection that may write the -shm creates it to open a database whose last
// connection removed it; the last one to close removes it again, while no log exists (W10).
TEST_P(WalReadOnlyTest, ReadOnlyConnectionsLeaveNoShmBehind) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
    ASSERT_THAT(writer->Put(Key(1), "v"), IsOk());
  }
  const std::string shm = path_ + "-shm";
  ASSERT_FALSE(*mem_.Exists(shm));
  Options o = ReaderOptions();
  o.file_system = &mem_;  // may write the -shm
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> a, Db::Open(path_, o));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> b, Db::Open(path_, o));
    EXPECT_EQ(Get(*a, 1), "v");
    EXPECT_TRUE(*mem_.Exists(shm));
    a.reset();
    EXPECT_TRUE(*mem_.Exists(shm)) << "removed while another connection has it open";
    EXPECT_EQ(Get(*b, 1), "v");
  }
  EXPECT_FALSE(*mem_.Exists(shm)) << "the last read-only connection left the -shm behind";

  // Next to a writer, the log exists: the read-only close leaves both to the writer's.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> reader, Db::Open(path_, o));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
  ASSERT_THAT(writer->Put(Key(2), "w"), IsOk());
  EXPECT_EQ(Get(*reader, 2), "w");
  reader.reset();
  EXPECT_TRUE(*mem_.Exists(shm));
  EXPECT_EQ(Get(*writer, 2), "w");
  writer.reset();
  EXPECT_FALSE(*mem_.Exists(shm));
  for (const std::string& log : LogPaths()) EXPECT_FALSE(*mem_.Exists(log)) << log;
}

// An opener that opened the -shm just before the last read-only connection removed it, and
// locks it just after, finds it unlinked and opens the path again (W10): a writer that kept
// the removed file would index its commits where no later connection looks.
TEST_P(WalReadOnlyTest, AnOpenerOfARemovedShmOpensItAgain) {
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, WriterOptions()));
    ASSERT_THAT(writer->Put(Key(1), "v"), IsOk());
  }
  Options o = ReaderOptions();
  o.file_system = &mem_;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> reader, Db::Open(path_, o));
  EXPECT_EQ(Get(*reader, 1), "v");
  // The writer opens the -shm, then the reader closes (and removes it) before the writer
  // locks it: the file system's open is where the writer is stopped.
  class CloseOnShmOpen final : public ForwardingFileSystem {
   public:
    CloseOnShmOpen(vfs::FileSystem* base, std::unique_ptr<Db>* reader)
        : ForwardingFileSystem(base), reader_(reader) {}
    absl::StatusOr<std::unique_ptr<vfs::File>> Open(const std::string& path,
                                                    const vfs::OpenOptions& options) override {
      absl::StatusOr<std::unique_ptr<vfs::File>> f = ForwardingFileSystem::Open(path, options);
      if (absl::EndsWith(path, "-shm") && *reader_ != nullptr) reader_->reset();
      return f;
    }

   private:
    std::unique_ptr<Db>* const reader_;
  } racing(&mem_, &reader);
  Options w = WriterOptions();
  w.file_system = &racing;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> writer, Db::Open(path_, w));
  ASSERT_EQ(reader, nullptr);  // it closed in between
  ASSERT_TRUE(*mem_.Exists(path_ + "-shm")) << "the writer works on a -shm no one else finds";
  ASSERT_THAT(writer->Put(Key(2), "w"), IsOk());
  // Another writer opening now must see the first one's commit and its write lock.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> second, Db::Open(path_, WriterOptions()));
  EXPECT_EQ(Get(*second, 2), "w");
}

INSTANTIATE_TEST_SUITE_P(Modes, WalReadOnlyTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
