// A full disk on the real kernel: small tmpfs mounts (vfs::ScopedTmpfs; the cases skip with one
// line where the process may not mount). What must hold in every journal mode: no signal, a
// clear error (ResourceExhausted naming the full disk), every acknowledged commit present, the
// database opens and reads while the disk is full, and writes resume once space returns.
//
//   - A commit of one page into a new database needs the page, not the log's preallocation step
//     (a 2 MiB disk refused `put seed 1` in WAL: the first 1 MiB steps did not fit).
//   - A transaction larger than the disk: it fails or commits, and either way the database
//     answers reads on a new connection while the disk is full, and takes writes once a file is
//     removed (before, the -shm's pages were holes of a sparse file: the first store into one
//     raised SIGBUS in the close path, and in every later `get`).
//   - A database opened on a disk already full: it reads (WAL: through a private index, the
//     -shm having no blocks) and refuses writes naming the full disk; writes resume after.
//   - A Compact short of room, at rooms where it fails writing the rollback journal, growing
//     the log or the -shm, and then where it fits.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/file_system_testing.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

class FullDiskTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void Mount(uint64_t bytes) {
    absl::StatusOr<std::unique_ptr<vfs::ScopedTmpfs>> disk = vfs::ScopedTmpfs::Mount(bytes);
    if (!disk.ok()) GTEST_SKIP() << disk.status().message();
    disk_ = std::move(*disk);
    path_ = disk_->path() + "/x.db";
  }
  Options ModeOptions() const {
    Options o;
    o.journal_mode = GetParam();
    return o;
  }
  // The number of keys, read through a new connection.
  absl::StatusOr<uint64_t> Count() {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db->BeginRead());
    std::unique_ptr<Iterator> it = txn->NewIterator();
    uint64_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    JKV_RETURN_IF_ERROR(it->status());
    return n;
  }

  std::unique_ptr<vfs::ScopedTmpfs> disk_;
  std::string path_;
};

TEST_P(FullDiskTest, AOnePageCommitNeedsItsPageNotALogStep) {
  Mount(2 << 20);
  if (disk_ == nullptr) return;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
  ASSERT_THAT(db->Put("seed", "1"), IsOk());
  JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("seed"));
  EXPECT_EQ(v, "1");
}

TEST_P(FullDiskTest, ATransactionLargerThanTheDiskLeavesADatabaseThatReadsAndThenWrites) {
  Mount(8 << 20);
  if (disk_ == nullptr) return;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    ASSERT_THAT(db->Put("seed", "1"), IsOk());
  }
  // Room to give back later.
  const std::string spare = disk_->path() + "/spare";
  {
    const std::string mib(1 << 20, 's');
    FILE* f = std::fopen(spare.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(mib.data(), 1, mib.size(), f), mib.size());
    std::fclose(f);
  }
  absl::Status load;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, ModeOptions());
    ASSERT_THAT(db, IsOk());
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
    ASSERT_THAT(w, IsOk());
    const std::string value(100, 'v');
    for (int i = 0; i < 20000 && load.ok(); ++i) {
      load = (*w)->Put(absl::StrCat("key", 100000 + i), value);
    }
    if (load.ok()) load = (*w)->Commit();
    w->reset();  // a failed one rolls back
    // Closing reports what the last checkpoint met, and never crashes.
    absl::Status closed = (*db)->Close();
    if (!closed.ok()) {
      EXPECT_TRUE(absl::IsResourceExhausted(closed)) << closed;
    }
  }
  if (!load.ok()) {
    EXPECT_TRUE(absl::IsResourceExhausted(load)) << load;
    EXPECT_THAT(load.message(), ::testing::HasSubstr("No space left on device")) << load;
  }
  // While the disk is full (or nearly): a new connection reads every acknowledged commit.
  const uint64_t want = load.ok() ? 20001 : 1;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("seed"));
    EXPECT_EQ(v, "1");
  }
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t n, Count());
  EXPECT_EQ(n, want) << "load: " << load;
  // Space again: writes resume, and everything is still there.
  ASSERT_EQ(::unlink(spare.c_str()), 0);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    ASSERT_THAT(db->Put("after", "x"), IsOk());
    // WAL: its checkpoint may still not fit (the database file must grow by the log's pages
    // while the log keeps them): that error reaches the caller once, by the next call, and
    // later calls (and commits, which the log has room for) work.
    int reported = 0;
    for (int i = 0; i < 3; ++i) {
      absl::Status s = db->Put(absl::StrCat("after", i), "x");
      if (absl::StrContains(s.message(), "checkpoint after an earlier commit")) {
        EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
        ++reported;
        ASSERT_THAT(db->Put(absl::StrCat("after", i), "x"), IsOk());
      } else {
        ASSERT_THAT(s, IsOk());
      }
    }
    EXPECT_LE(reported, 1);
    JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
    EXPECT_TRUE(check.ok());
  }
  JKV_ASSERT_OK_AND_ASSIGN(n, Count());
  EXPECT_EQ(n, want + 4);
}

// A database opened on a disk already full: in WAL the -shm cannot get its blocks, so the
// connection reads through a private index and refuses writes, naming the full disk (before,
// opening failed, and earlier still the first store into the -shm raised SIGBUS).
TEST_P(FullDiskTest, ADatabaseOpenedOnAFullDiskReadsAndRefusesWritesClearly) {
  Mount(2 << 20);
  if (disk_ == nullptr) return;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    ASSERT_THAT(db->Put("seed", "1"), IsOk());
    ASSERT_THAT(db->Put("k2", "2"), IsOk());
  }
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t filled, disk_->Fill("filler"));
  EXPECT_GT(filled, 0u);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("seed"));
    EXPECT_EQ(v, "1");
    absl::Status put = db->Put("k3", std::string(8000, 'x'));
    EXPECT_TRUE(absl::IsResourceExhausted(put)) << put;
    EXPECT_THAT(put.message(), ::testing::AnyOf(::testing::HasSubstr("the disk is full"),
                                                ::testing::HasSubstr("No space left on device")))
        << put;
    JKV_ASSERT_OK_AND_ASSIGN(v, db->Get("k2"));  // the failed write changed nothing
    EXPECT_EQ(v, "2");
  }
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t n, Count());
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(::unlink((disk_->path() + "/filler").c_str()), 0);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    ASSERT_THAT(db->Put("k3", "3"), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
    EXPECT_TRUE(check.ok());
  }
  JKV_ASSERT_OK_AND_ASSIGN(n, Count());
  EXPECT_EQ(n, 3u);
}

// Db::Compact on a disk with less room than it needs (the journal of the pages in use it
// overwrites, or the log of every page of the result): at each room from almost none up to
// what it needs, it fails with ResourceExhausted or compacts, and either way every key is
// there, the check passes and no scratch image is left behind (Compact wrote one before it
// built straight into its transaction); once it compacts, the file is smaller.
TEST_P(FullDiskTest, ACompactShortOfRoomLeavesEveryKeyAndNoImage) {
  Mount(24 << 20);
  if (disk_ == nullptr) return;
  constexpr int kKeys = 12000;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
    const std::string value(100, 'v');
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_THAT(w->Put(absl::StrCat("key", 100000 + (i * 7919) % kKeys), value), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(w, db->BeginWrite());
    for (int i = 0; i < kKeys; i += 2) {
      ASSERT_THAT(w->Delete(absl::StrCat("key", 100000 + i)), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
  }
  if (GetParam() == JournalMode::kPersist) {
    // PERSIST keeps the deletes' journal file (its header zeroed: not hot), which has room for
    // every original the compaction journals; without it the journal needs room of its own.
    ASSERT_EQ(std::remove((path_ + "-journal").c_str()), 0);
  }
  const std::string image = path_ + kCompactTempSuffix;
  bool compacted = false;
  int refused = 0;
  for (uint64_t room : {16u << 10, 256u << 10, 768u << 10, 1280u << 10, 2u << 20, 3u << 20,
                        5u << 20, 8u << 20}) {
    SCOPED_TRACE(absl::StrCat("room ", room));
    ASSERT_THAT(disk_->LeaveFree("filler", room), IsOk());
    absl::StatusOr<CompactResult> r;
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
      r = db->Compact();
      const absl::Status closed = db->Close();
      EXPECT_TRUE(closed.ok() || absl::IsResourceExhausted(closed)) << closed;
    }
    if (r.ok()) {
      compacted = compacted || r->pages < r->pages_before;
    } else {
      ++refused;
      EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
    }
    EXPECT_FALSE(std::ifstream(image).good()) << "the scratch image was left behind";
    ASSERT_THAT(disk_->LeaveFree("filler", 16u << 20), IsOk());  // room to read and check
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t n, Count());
    EXPECT_EQ(n, static_cast<uint64_t>(kKeys / 2));
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions()));
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, db->Get("key100001"));
      EXPECT_EQ(v, std::string(100, 'v'));
      JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
      EXPECT_TRUE(check.ok());
    }
    if (compacted) break;
  }
  EXPECT_GE(refused, 1) << "no room was too small: the case tested nothing";
  EXPECT_TRUE(compacted) << "no room was enough to compact";
}

// The background checkpointer (async:N/B) on a disk too full for its copies: commits go on,
// its error reaches the caller once (every step failed, and each was reported, so every other
// call failed), and Stats count the failed steps.
TEST(FullDiskBackgroundTest, ABackgroundCheckpointerThatCannotCopyIsReportedOnce) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2}) {
    SCOPED_TRACE(JournalModeName(mode));
    absl::StatusOr<std::unique_ptr<vfs::ScopedTmpfs>> disk = vfs::ScopedTmpfs::Mount(16 << 20);
    if (!disk.ok()) GTEST_SKIP() << disk.status().message();
    const std::string path = (*disk)->path() + "/x.db";
    Options manual;
    manual.journal_mode = mode;
    manual.checkpoint_policy = "manual";
    // A log of about 6 MiB that nothing copies (this handle stays open, so no close copies it
    // either), preallocated to 8 MiB, then a full disk: room in the log's tail for small
    // commits, none for the database file to take the log's pages.
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> holder, Db::Open(path, manual));
    const std::string value(1000, 'v');
    for (int t = 0; t < 10; ++t) {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, holder->BeginWrite());
      for (int i = 0; i < 300; ++i) {
        ASSERT_THAT(w->Put(absl::StrCat("key", t * 1000 + i), value), IsOk());
      }
      ASSERT_THAT(w->Commit(), IsOk());
    }
    JKV_ASSERT_OK_AND_ASSIGN(uint64_t filled, (*disk)->Fill("filler"));
    EXPECT_GT(filled, 0u);
    Options async = manual;
    async.checkpoint_policy = "async:0/1000000";  // wakes its thread after every commit
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path, async));
    // Small commits, each waking the thread, until it has failed three steps (its steps run
    // beside the commits).
    int reported = 0, committed = 0, attempts = 0;
    for (; attempts < 400 && db->Stats().background_errors < 3; ++attempts) {
      absl::Status s = db->Put(absl::StrCat("small", attempts), "x");
      if (s.ok()) {
        ++committed;
      } else {
        EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
        if (absl::StrContains(s.message(), "background checkpoint")) ++reported;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GE(db->Stats().background_errors, 3u);
    EXPECT_LE(reported, 1);
    EXPECT_GE(committed, attempts - 1) << "a full disk failed commits the log had room for";
    EXPECT_THAT(db->Stats().background_last_error, ::testing::HasSubstr("No space left"));
    for (Db* d : {db.get(), holder.get()}) {
      const absl::Status closed = d->Close();  // never crashes; the log stays if it cannot copy
      EXPECT_TRUE(closed.ok() || absl::IsResourceExhausted(closed)) << closed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FullDiskTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2,
                                           JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
