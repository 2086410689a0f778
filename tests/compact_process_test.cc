// Db::Compact with real separate processes on the database (each its own connection, file
// descriptions, locks and, in WAL, its own mapping of the -shm):
//
//   - CompactBesideProcesses: a writer process commits keys of its own throughout and a reader
//     process reads every key again and again (in WAL modes one of its read transactions spans
//     a whole Compact), while this process compacts three times. Every acknowledged commit is
//     there after, the reader never saw a key missing or a value changed, the check passes,
//     and the last compaction leaves no free page.
//   - CompactKilled: a child process compacts and is SIGKILLed at a random moment (during the
//     image, the rewrite or the commit, or after it), six times; each time a new connection in
//     this process (which recovers the hot journal or the log the dead one left) finds every
//     key and the check passes; a Compact of its own then works.
//
// Modes: wal, wal2, delete, persist. In the rollback modes the reader's transactions are short
// (a reader holding SHARED across a Compact would only make its commit wait until the busy
// timeout).
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "tests/wal_process_testing.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using namespace ::journalkv::wal_process_testing;  // NOLINT: the children's vocabulary

constexpr int kKeys = 3000;

std::string Key(int i) { return absl::StrCat("key", 10000 + i); }
std::string Value(int i) { return absl::StrCat("value", i, "|", std::string(120, 'v')); }
std::string WriterKey(int i) { return absl::StrCat("w", 100000 + i); }

// Shared between this process and its children.
struct Shared {
  std::atomic<bool> stop{false};
  std::atomic<int> acknowledged{0};  // the writer's commits that returned OK
  std::atomic<int> reader_passes{0};
  std::atomic<int> compacting{0};    // CompactKilled: the child has begun its Compact
};

Options ModeOptions(JournalMode mode) {
  Options o;
  o.journal_mode = mode;
  o.page_size = 1024;  // a tree of several levels
  o.cache_pages = 64;  // smaller than the rewrite: it spills
  o.busy_timeout = absl::Seconds(10);
  return o;
}

bool WalFamily(JournalMode mode) { return mode == JournalMode::kWal || mode == JournalMode::kWal2; }

// Every kept key with its value, and none of the deleted ones, in one read transaction.
// "" when so, else what differs.
std::string CheckKeys(ReadTransaction& txn) {
  for (int i = 0; i < kKeys; ++i) {
    absl::StatusOr<std::optional<std::string>> v = txn.Get(Key(i));
    if (!v.ok()) return absl::StrCat("get ", Key(i), ": ", v.status().ToString());
    if (i % 2 == 1 && *v != Value(i)) return absl::StrCat(Key(i), " missing or changed");
    if (i % 2 == 0 && v->has_value()) return absl::StrCat(Key(i), " is back");
  }
  return "";
}

class CompactProcessTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  void SetUp() override {
    dir_ = TempDir("compact_process");
    path_ = dir_ + "/x.db";
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(GetParam())));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
    for (int i = 0; i < kKeys; ++i) {
      const int k = (i * 7) % kKeys;  // not in key order
      ASSERT_THAT(w->Put(Key(k), Value(k)), IsOk());
    }
    ASSERT_THAT(w->Commit(), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(w, db->BeginWrite());
    for (int i = 0; i < kKeys; i += 2) ASSERT_THAT(w->Delete(Key(i)), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
    shared_ = MapShared<Shared>();
    ASSERT_NE(shared_, nullptr);
  }
  void TearDown() override {
    if (shared_ != nullptr) UnmapShared(shared_);
  }

  std::string dir_;
  std::string path_;
  Shared* shared_ = nullptr;
};

TEST_P(CompactProcessTest, CompactBesideProcesses) {
  const JournalMode mode = GetParam();
  Shared* shared = shared_;
  const std::string path = path_;
  ChildGuard guard;
  const pid_t writer = guard.Add(Spawn([&] {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, ModeOptions(mode));
    if (!db.ok()) return StatusFail(db.status(), "writer open");
    for (int i = 0; !shared->stop.load(); ++i) {
      const absl::Status s = (*db)->Put(WriterKey(i), Value(i));
      if (!s.ok()) return StatusFail(s, absl::StrCat("writer put ", i));
      shared->acknowledged.store(i + 1);
    }
    const absl::Status closed = (*db)->Close();
    return closed.ok() ? static_cast<int>(kExitOk) : StatusFail(closed, "writer close");
  }));
  const pid_t reader = guard.Add(Spawn([&] {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, ModeOptions(mode));
    if (!db.ok()) return StatusFail(db.status(), "reader open");
    while (!shared->stop.load()) {
      absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
      if (!txn.ok()) return StatusFail(txn.status(), "reader begin");
      // WAL: the same snapshot read twice, 50 ms apart, spans compactions.
      for (int round = 0; round < (WalFamily(mode) ? 2 : 1); ++round) {
        const std::string bad = CheckKeys(**txn);
        if (!bad.empty()) return ChildFail(kExitMissing, bad);
        if (WalFamily(mode)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      txn->reset();
      shared->reader_passes.fetch_add(1);
    }
    const absl::Status closed = (*db)->Close();
    return closed.ok() ? static_cast<int>(kExitOk) : StatusFail(closed, "reader close");
  }));
  ASSERT_GT(writer, 0);
  ASSERT_GT(reader, 0);
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(mode)));
    for (int round = 0; round < 3; ++round) {
      while (shared->acknowledged.load() < 50 * (round + 1)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      absl::StatusOr<CompactResult> r = db->Compact();
      ASSERT_THAT(r, IsOk()) << "round " << round;
    }
    const int passes = shared->reader_passes.load();
    while (shared->reader_passes.load() < passes + 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  shared->stop.store(true);
  for (pid_t pid : {writer, reader}) {
    int status = 0;
    ASSERT_TRUE(WaitFor(pid, absl::Seconds(60), &status)) << "a child hung";
    EXPECT_TRUE(ExitedOk(status)) << DescribeStatus(status);
  }
  const int acknowledged = shared->acknowledged.load();
  EXPECT_GE(acknowledged, 150);
  // Alone now: every acknowledged commit, the kept keys, a sound tree; one more Compact (the
  // writer's last commits freed nothing, but the first rounds' leftovers are gone) leaves no
  // free page.
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(mode)));
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> txn, db->BeginRead());
    EXPECT_EQ(CheckKeys(*txn), "");
    for (int i = 0; i < acknowledged; ++i) {
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> v, txn->Get(WriterKey(i)));
      ASSERT_EQ(v, Value(i)) << WriterKey(i) << " was acknowledged";
    }
  }
  JKV_ASSERT_OK_AND_ASSIGN(CompactResult last, db->Compact());
  EXPECT_EQ(db->Stats().freelist_pages, 0u);
  EXPECT_EQ(db->Stats().page_count, last.pages);
  JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
  EXPECT_TRUE(check.ok());
}

TEST_P(CompactProcessTest, CompactKilled) {
  const JournalMode mode = GetParam();
  Shared* shared = shared_;
  const std::string path = path_;
  std::mt19937_64 rng(Seed());
  int killed_while_compacting = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    SCOPED_TRACE(absl::StrCat("attempt ", attempt));
    // Free pages again for the next Compact to give back: a batch of keys put and deleted.
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(mode)));
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, db->BeginWrite());
      for (int i = 0; i < 800; ++i) ASSERT_THAT(w->Put(absl::StrCat("tmp", i), Value(i)), IsOk());
      ASSERT_THAT(w->Commit(), IsOk());
      JKV_ASSERT_OK_AND_ASSIGN(w, db->BeginWrite());
      for (int i = 0; i < 800; ++i) ASSERT_THAT(w->Delete(absl::StrCat("tmp", i)), IsOk());
      ASSERT_THAT(w->Commit(), IsOk());
    }
    shared->compacting.store(0);
    ChildGuard guard;
    const pid_t child = guard.Add(Spawn([&] {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, ModeOptions(mode));
      if (!db.ok()) return StatusFail(db.status(), "open");
      shared->compacting.store(1);
      absl::StatusOr<CompactResult> r = (*db)->Compact();
      if (!r.ok()) return StatusFail(r.status(), "compact");
      shared->compacting.store(2);
      std::this_thread::sleep_for(std::chrono::seconds(30));  // killed before this ends
      return static_cast<int>(kExitNotKilled);
    }));
    ASSERT_GT(child, 0);
    while (shared->compacting.load() == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // A Compact here takes a few milliseconds: the ranges grow from half of one to 16 ms, so
    // that the early kills land in it and the late ones after it.
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (500u << attempt)));
    killed_while_compacting += shared->compacting.load() == 1;
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_TRUE(WaitFor(child, absl::Seconds(30), &status));
    EXPECT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
    // A new connection recovers what the dead one left (a hot journal, a log, its -shm).
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(mode)));
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> txn, db->BeginRead());
      EXPECT_EQ(CheckKeys(*txn), "");
      JKV_ASSERT_OK_AND_ASSIGN(std::optional<std::string> tmp, txn->Get("tmp1"));
      EXPECT_FALSE(tmp.has_value());
    }
    JKV_ASSERT_OK_AND_ASSIGN(CheckResult check, db->Check());
    EXPECT_TRUE(check.ok());
  }
  EXPECT_GE(killed_while_compacting, 1) << "every kill came after the Compact: nothing tested";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, ModeOptions(mode)));
  JKV_ASSERT_OK_AND_ASSIGN(CompactResult r, db->Compact());
  EXPECT_EQ(db->Stats().freelist_pages, 0u);
  EXPECT_EQ(db->Stats().page_count, r.pages);
}

INSTANTIATE_TEST_SUITE_P(Modes, CompactProcessTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2,
                                           JournalMode::kDelete, JournalMode::kPersist),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
