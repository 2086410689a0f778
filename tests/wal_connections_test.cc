// More connections than reader slots (wal/reader_pins.h M1..M5): a connection that finds
// every slot it may claim taken pins its snapshots under the shared overflow marks, and reads,
// writes and checkpoints go on. The checkpoint must honour those snapshots: the tests below
// read pages their snapshot has not cached after the writer changed them and a checkpoint ran,
// so a checkpoint that ignored a mark would show them the newer pages from the database file.
// In WAL and WAL2; in one process (600 connections) and across processes (slots limited with
// Options::reader_slots, a reader killed while pinned).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "tests/wal_process_testing.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::wal_process_testing::ChildGuard;
using ::journalkv::wal_process_testing::DescribeStatus;
using ::journalkv::wal_process_testing::ExitedOk;
using ::journalkv::wal_process_testing::KilledBySigkill;
using ::journalkv::wal_process_testing::MapShared;
using ::journalkv::wal_process_testing::Spawn;
using ::journalkv::wal_process_testing::TempDir;
using ::journalkv::wal_process_testing::UnmapShared;
using ::journalkv::wal_process_testing::WaitFor;

constexpr char kPath[] = "/x.db";
// Enough keys of 100-byte values for many leaves of 4 KiB: the first and the last key are on
// different pages.
constexpr int kKeys = 200;

// A Get that succeeded and found `value`.
MATCHER_P(Holds, value, "") {
  if (!arg.ok()) {
    *result_listener << arg.status();
    return false;
  }
  if (!arg->has_value()) {
    *result_listener << "missing";
    return false;
  }
  *result_listener << **arg;
  return **arg == value;
}

std::string Key(int i) { return absl::StrFormat("key%04d", i); }
std::string Value(absl::string_view tag) { return absl::StrCat(tag, std::string(100, '.')); }

class WalConnectionsTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  Options Base() {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = &fs_;
    o.checkpoint_policy = "manual";
    o.busy_timeout = absl::Milliseconds(200);
    return o;
  }
  std::unique_ptr<Db> Open(const Options& o) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
    EXPECT_THAT(db, IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  // Sets every key to Value(tag) in one transaction.
  void SetAll(Db* db, absl::string_view tag) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db->BeginWrite();
    ASSERT_THAT(w, IsOk());
    for (int i = 0; i < kKeys; ++i) ASSERT_THAT((*w)->Put(Key(i), Value(tag)), IsOk());
    ASSERT_THAT((*w)->Commit(), IsOk());
  }
  // Copies everything and lets the log(s) restart, so that the next snapshot reads its pages
  // from the database file.
  void CheckpointAll(Db* db) {
    absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kTruncate);
    ASSERT_THAT(r, IsOk());
    ASSERT_FALSE(r->blocked);
  }

  vfs::MemFileSystem fs_;
};

// The core guarantee: a reader with no slot keeps its snapshot while a writer rewrites every
// page and checkpoints run in every mode. (With the marks left out of the checkpoint's scan,
// the PASSIVE checkpoint copied the new pages and the reader read "new" from the file.)
TEST_P(WalConnectionsTest, ACheckpointHonoursTheSnapshotOfAReaderWithoutASlot) {
  std::unique_ptr<Db> writer = Open(Base());
  SetAll(writer.get(), "old");
  CheckpointAll(writer.get());
  Options no_slot = Base();
  no_slot.reader_slots = 0;
  std::unique_ptr<Db> reader = Open(no_slot);
  EXPECT_TRUE(reader->Stats().overflow_reader);
  EXPECT_FALSE(writer->Stats().overflow_reader);
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = reader->BeginRead();
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(writer->Stats().pinned_connections, 1);
  SetAll(writer.get(), "new");
  for (CheckpointMode mode : {CheckpointMode::kPassive, CheckpointMode::kFull,
                              CheckpointMode::kRestart, CheckpointMode::kTruncate}) {
    absl::StatusOr<CheckpointResult> c = writer->Checkpoint(mode);
    ASSERT_THAT(c, IsOk());
    // WAL2's PASSIVE copies only the log that is not current, which holds nothing new.
    if (GetParam() == JournalMode::kWal2 && mode == CheckpointMode::kPassive) continue;
    EXPECT_TRUE(c->blocked) << CheckpointModeName(mode);
  }
  for (int i = kKeys - 1; i >= 0; --i) {
    ASSERT_THAT((*r)->Get(Key(i)), Holds(Value("old")))
        << Key(i);
  }
  r->reset();
  EXPECT_EQ(writer->Stats().pinned_connections, 0);  // M4: a mark nobody holds pins nothing
  CheckpointAll(writer.get());
  absl::StatusOr<std::unique_ptr<ReadTransaction>> again = reader->BeginRead();
  ASSERT_THAT(again, IsOk());
  EXPECT_THAT((*again)->Get(Key(0)), Holds(Value("new")));
}

// The writer needs no slot: a connection without one commits, checkpoints and reads its own
// commits, while another one without a slot keeps its older snapshot.
TEST_P(WalConnectionsTest, AWriterWithoutASlotCommitsAndCheckpoints) {
  Options no_slot = Base();
  no_slot.reader_slots = 0;
  std::unique_ptr<Db> writer = Open(no_slot);
  std::unique_ptr<Db> reader = Open(no_slot);
  SetAll(writer.get(), "one");
  CheckpointAll(writer.get());
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = reader->BeginRead();
  ASSERT_THAT(r, IsOk());
  for (int round = 0; round < 3; ++round) {
    SetAll(writer.get(), absl::StrCat("two", round));
    absl::StatusOr<CheckpointResult> c = writer->Checkpoint(CheckpointMode::kFull);
    ASSERT_THAT(c, IsOk());
    EXPECT_TRUE(c->blocked);
    EXPECT_THAT(writer->Get(Key(kKeys - 1)),
                Holds(Value(absl::StrCat("two", round))));
  }
  EXPECT_THAT((*r)->Get(Key(kKeys - 1)), Holds(Value("one")));
  r->reset();
  CheckpointAll(writer.get());
}

// M3: with every mark held, a connection shares the newest mark at or below its snapshot, and
// that mark keeps protecting it after the connection that set it has ended its reads.
TEST_P(WalConnectionsTest, AConnectionSharingAMarkStaysProtectedAfterItsSetterLeaves) {
  Options no_slot = Base();
  no_slot.reader_slots = 0;
  std::unique_ptr<Db> writer = Open(Base());
  SetAll(writer.get(), "base");
  CheckpointAll(writer.get());
  std::vector<std::unique_ptr<Db>> setters;
  std::vector<std::unique_ptr<ReadTransaction>> setter_reads;
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    // Each one at its own snapshot, so that each sets a mark of its own (M2).
    ASSERT_THAT(writer->Put(Key(0), Value(absl::StrCat("s", m))), IsOk());
    setters.push_back(Open(no_slot));
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = setters.back()->BeginRead();
    ASSERT_THAT(r, IsOk());
    setter_reads.push_back(std::move(*r));
  }
  EXPECT_EQ(writer->Stats().pinned_connections, shm::kOverflowMarks);
  ASSERT_THAT(writer->Put(Key(0), Value("sharer")), IsOk());
  std::unique_ptr<Db> sharer = Open(no_slot);
  absl::StatusOr<std::unique_ptr<ReadTransaction>> shared = sharer->BeginRead();
  ASSERT_THAT(shared, IsOk());
  EXPECT_EQ(writer->Stats().pinned_connections, shm::kOverflowMarks);  // it shares one
  setter_reads.clear();
  EXPECT_EQ(writer->Stats().pinned_connections, 1);  // the shared mark alone
  SetAll(writer.get(), "after");
  absl::StatusOr<CheckpointResult> c = writer->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(c, IsOk());
  EXPECT_TRUE(c->blocked);
  EXPECT_THAT((*shared)->Get(Key(0)), Holds(Value("sharer")));
  for (int i = kKeys - 1; i >= 1; --i) {
    ASSERT_THAT((*shared)->Get(Key(i)), Holds(Value("base")))
        << Key(i);
  }
  shared->reset();
  CheckpointAll(writer.get());
}

// More connections than the -shm has slots: 600 connections each in a read transaction, then a
// new reader and a writer both work, every old snapshot stays whole across the commit and the
// checkpoints, and once they end the log is copied and restarted.
TEST_P(WalConnectionsTest, SixHundredReadingConnectionsLeaveANewReaderAndAWriterWorking) {
  constexpr int kConnections = 600;
  std::unique_ptr<Db> writer = Open(Base());
  SetAll(writer.get(), "v0");
  CheckpointAll(writer.get());
  std::vector<std::unique_ptr<Db>> dbs;
  std::vector<std::unique_ptr<ReadTransaction>> reads;
  int overflow = 0;
  for (int i = 0; i < kConnections; ++i) {
    dbs.push_back(Open(Base()));
    ASSERT_NE(dbs.back(), nullptr) << "connection " << i + 1;
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = dbs.back()->BeginRead();
    ASSERT_THAT(r, IsOk()) << "connection " << i + 1;
    ASSERT_THAT((*r)->Get(Key(0)), Holds(Value("v0")));
    reads.push_back(std::move(*r));
    if (dbs.back()->Stats().overflow_reader) ++overflow;
  }
  EXPECT_EQ(overflow, kConnections + 1 - shm::kMaxSlots);  // the writer holds a slot too
  std::unique_ptr<Db> late = Open(Base());
  ASSERT_NE(late, nullptr);
  EXPECT_THAT(late->Get(Key(1)), Holds(Value("v0")));
  SetAll(late.get(), "v1");
  EXPECT_THAT(late->Get(Key(1)), Holds(Value("v1")));
  absl::StatusOr<CheckpointResult> c = late->Checkpoint(CheckpointMode::kFull);
  ASSERT_THAT(c, IsOk());
  EXPECT_TRUE(c->blocked);
  for (int i = 0; i < kConnections; i += 7) {
    ASSERT_THAT(reads[i]->Get(Key(kKeys - 1)),
                Holds(Value("v0")))
        << "connection " << i + 1;
  }
  reads.clear();
  CheckpointAll(late.get());
  EXPECT_THAT(dbs.back()->Get(Key(kKeys - 1)),
              Holds(Value("v1")));
}

INSTANTIATE_TEST_SUITE_P(Modes, WalConnectionsTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

// Across processes, two slots for six readers: each child pins a snapshot, reads the first
// key, tells the parent, and after the parent has rewritten every key and checkpointed, reads
// the rest, which must all be the old values. One child is killed while pinned: its mark's lock
// goes with the process, and the last checkpoint restarts the log.
class WalConnectionsProcessTest : public ::testing::TestWithParam<JournalMode> {};

struct Board {
  std::atomic<int> pinned{0};
  std::atomic<int> overflow{0};  // children that found no slot
  std::atomic<bool> go{false};
};

TEST_P(WalConnectionsProcessTest, ReadersBeyondTheSlotsKeepTheirSnapshotsAcrossProcesses) {
  constexpr int kChildren = 6;
  const std::string dir = TempDir("wal_connections");
  const std::string path = dir + "/x.db";
  Options o;
  o.journal_mode = GetParam();
  o.checkpoint_policy = "manual";
  o.busy_timeout = absl::Milliseconds(300);
  o.reader_slots = 2;
  absl::StatusOr<std::unique_ptr<Db>> writer = Db::Open(path, o);
  ASSERT_THAT(writer, IsOk());
  {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*writer)->BeginWrite();
    ASSERT_THAT(w, IsOk());
    for (int i = 0; i < kKeys; ++i) ASSERT_THAT((*w)->Put(Key(i), Value("old")), IsOk());
    ASSERT_THAT((*w)->Commit(), IsOk());
    absl::StatusOr<CheckpointResult> c = (*writer)->Checkpoint(CheckpointMode::kTruncate);
    ASSERT_THAT(c, IsOk());
    ASSERT_FALSE(c->blocked);
  }
  Board* board = MapShared<Board>();
  ASSERT_NE(board, nullptr);
  ChildGuard guard;
  std::vector<pid_t> children;
  for (int k = 0; k < kChildren; ++k) {
    children.push_back(guard.Add(Spawn([&]() -> int {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
      if (!db.ok()) return 10;
      absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
      if (!r.ok()) return 11;
      absl::StatusOr<std::optional<std::string>> first = (*r)->Get(Key(0));
      if (!first.ok() || *first != Value("old")) return 12;
      board->pinned.fetch_add(1);
      while (!board->go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (int i = kKeys - 1; i >= 1; --i) {
        absl::StatusOr<std::optional<std::string>> v = (*r)->Get(Key(i));
        if (!v.ok()) return 13;
        if (*v != Value("old")) {
          std::fprintf(stderr, "[pid %d] %s: %s\n", static_cast<int>(getpid()), Key(i).c_str(),
                       v->value_or("(missing)").c_str());
          return 14;
        }
      }
      r->reset();
      if ((*db)->Stats().overflow_reader) board->overflow.fetch_add(1);
      return 0;
    })));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (board->pinned.load() < kChildren && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(board->pinned.load(), kChildren);
  // The parent's slot, one child's slot, and the overflow children's marks.
  EXPECT_GE((*writer)->Stats().pinned_connections, 2);
  ASSERT_EQ(kill(children.back(), SIGKILL), 0);
  int status = 0;
  ASSERT_TRUE(WaitFor(children.back(), absl::Seconds(30), &status));
  EXPECT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*writer)->BeginWrite();
    ASSERT_THAT(w, IsOk());
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_THAT((*w)->Put(Key(i), Value(absl::StrCat("new", round))), IsOk());
    }
    ASSERT_THAT((*w)->Commit(), IsOk());
    absl::StatusOr<CheckpointResult> c = (*writer)->Checkpoint(CheckpointMode::kPassive);
    ASSERT_THAT(c, IsOk());
    c = (*writer)->Checkpoint(CheckpointMode::kFull);
    ASSERT_THAT(c, IsOk());
    EXPECT_TRUE(c->blocked);
  }
  board->go = true;
  for (int k = 0; k + 1 < kChildren; ++k) {
    ASSERT_TRUE(WaitFor(children[k], absl::Seconds(60), &status));
    EXPECT_TRUE(ExitedOk(status)) << "child " << k << " " << DescribeStatus(status);
  }
  // The parent holds one slot and one child the other; the killed one did not report.
  EXPECT_GE(board->overflow.load(), kChildren - 2);
  absl::StatusOr<CheckpointResult> c = (*writer)->Checkpoint(CheckpointMode::kTruncate);
  ASSERT_THAT(c, IsOk());
  EXPECT_FALSE(c->blocked);  // the killed child's pin went with it
  EXPECT_TRUE(c->restarted);
  UnmapShared(board);
}

INSTANTIATE_TEST_SUITE_P(Modes, WalConnectionsProcessTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
