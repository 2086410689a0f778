// Options::commit_hook and Options::wal_hook (engine/options.h): called once per commit that
// wrote something, after it is durable and visible, never for a rollback or a failed commit;
// the WAL hook's frames are exactly the transaction's, so a shipper reading them from the log
// file finds the commit frame where it says.
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr char kPath[] = "/x.db";

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }

struct Seen {
  std::mutex mu;
  std::vector<CommitInfo> commits;
  std::vector<WalCommitInfo> wal;
};

Options HookedOptions(vfs::FileSystem* fs, JournalMode mode, Seen* seen) {
  Options o;
  o.file_system = fs;
  o.journal_mode = mode;
  o.commit_hook = [seen](const CommitInfo& info) {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->commits.push_back(info);
  };
  o.wal_hook = [seen](const WalCommitInfo& info) {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->wal.push_back(info);
  };
  return o;
}

class HooksTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(HooksTest, OnePerCommitThatWroteAndNoneForRollbacksOrEmptyOrFailedCommits) {
  vfs::MemFileSystem fs;
  Seen seen;
  std::unique_ptr<Db> db = *Db::Open(kPath, HookedOptions(&fs, GetParam(), &seen));
  const size_t at_open = seen.commits.size();  // creating the database is no commit of ours
  ASSERT_THAT(db->Put("a", "1"), IsOk());
  ASSERT_THAT(db->Put("b", "2"), IsOk());
  {
    auto w = *db->BeginWrite();
    ASSERT_THAT(w->Put("c", "3"), IsOk());
    ASSERT_THAT(w->Rollback(), IsOk());
  }
  {
    auto w = *db->BeginWrite();
    ASSERT_THAT(w->Commit(), IsOk());  // wrote nothing
  }
  {
    auto w = *db->BeginWrite();
    ASSERT_THAT(w->Put("d", "4"), IsOk());
  }  // destroyed without a commit
  EXPECT_FALSE(db->Put(std::string(100000, 'k'), "v").ok());  // refused: oversized key
  WriteBatch batch;
  batch.Put("e", "5");
  batch.Delete("a");
  ASSERT_THAT(db->Write(batch), IsOk());
  ASSERT_EQ(seen.commits.size(), at_open + 3);
  for (size_t i = at_open; i < seen.commits.size(); ++i) {
    EXPECT_EQ(seen.commits[i].sequence, i + 1);
    EXPECT_GE(seen.commits[i].pages, 1u);
  }
  const bool wal = GetParam() == JournalMode::kWal || GetParam() == JournalMode::kWal2;
  if (!wal) {
    // The rollback journal's header changes with every commit.
    EXPECT_EQ(seen.commits[at_open + 1].change_counter, seen.commits[at_open].change_counter + 1);
    EXPECT_TRUE(seen.wal.empty());
  } else {
    EXPECT_EQ(seen.wal.size(), seen.commits.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, HooksTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal,
                                           JournalMode::kWal2, JournalMode::kAtomic),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

// The hook sees the commit: a read from inside it finds the new value.
TEST(HooksTest, TheCommitIsVisibleWhenTheHookRuns) {
  vfs::MemFileSystem fs;
  Options o;
  o.file_system = &fs;
  Db* self = nullptr;
  std::vector<std::string> read_back;
  o.commit_hook = [&](const CommitInfo&) {
    absl::StatusOr<std::optional<std::string>> v = self->Get("k");
    read_back.push_back(v.ok() && v->has_value() ? **v : "?");
  };
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  self = db.get();
  read_back.clear();
  ASSERT_THAT(db->Put("k", "one"), IsOk());
  ASSERT_THAT(db->Put("k", "two"), IsOk());
  EXPECT_THAT(read_back, ::testing::ElementsAre("one", "two"));
}

// Log shipping: every commit's frames follow the previous commit's in the same generation, a
// spilled big transaction's included, and the frame the hook names as last is a commit frame
// of the log file on disk (its db_size field is set), the ones before it not.
TEST(HooksTest, TheWalHookNamesExactlyTheTransactionsFramesInTheLogFile) {
  vfs::MemFileSystem fs;
  Seen seen;
  Options o = HookedOptions(&fs, JournalMode::kWal, &seen);
  o.checkpoint_policy = "manual";  // one generation throughout
  o.cache_pages = 16;              // the big transaction spills
  std::unique_ptr<Db> db = *Db::Open(kPath, o);
  seen.wal.clear();
  for (int i = 0; i < 20; ++i) ASSERT_THAT(db->Put(Key(i), std::string(100, 'v')), IsOk());
  {
    auto w = *db->BeginWrite();
    for (int i = 0; i < 3000; ++i) ASSERT_THAT(w->Put(Key(1000 + i), std::string(200, 'b')), IsOk());
    ASSERT_THAT(w->Commit(), IsOk());
  }
  ASSERT_GT(db->Stats().spills, 0u);
  for (int i = 20; i < 30; ++i) ASSERT_THAT(db->Put(Key(i), "w"), IsOk());
  ASSERT_EQ(seen.wal.size(), 31u);
  auto log = *fs.Open(absl::StrCat(kPath, "-wal"),
                      vfs::OpenOptions{vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  const uint64_t log_size = *log->Size();
  const uint32_t page_size = db->page_size();
  for (size_t i = 0; i < seen.wal.size(); ++i) {
    const WalCommitInfo& c = seen.wal[i];
    SCOPED_TRACE(absl::StrCat("commit ", i));
    EXPECT_EQ(c.log, 0);
    EXPECT_LE(c.first_frame, c.last_frame);
    if (i > 0) {
      EXPECT_EQ(c.generation, seen.wal[i - 1].generation);
      EXPECT_EQ(c.first_frame, seen.wal[i - 1].last_frame + 1);
    }
    EXPECT_EQ(c.log_bytes, wal::LogEnd(c.last_frame, page_size));
    EXPECT_LE(c.log_bytes, log_size);
    for (uint32_t f = c.first_frame; f <= c.last_frame; ++f) {
      uint8_t header[wal::kFrameHeaderSize];
      ASSERT_THAT(log->Read(wal::FrameHeaderOffset(f, page_size), absl::MakeSpan(header)), IsOk());
      const uint32_t db_size = base::DecodeFixed32(header + 4);
      EXPECT_EQ(db_size != 0, f == c.last_frame) << "frame " << f;
    }
  }
  EXPECT_GT(seen.wal[20].last_frame - seen.wal[20].first_frame, 100u);  // the big one
}

// From several threads: one call per commit, numbered 1..N without gaps or repeats.
TEST(HooksTest, SequencesFromSeveralThreadsAreOneToN) {
  vfs::MemFileSystem fs;
  Seen seen;
  std::unique_ptr<Db> db = *Db::Open(kPath, HookedOptions(&fs, JournalMode::kWal, &seen));
  const size_t at_open = seen.commits.size();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) EXPECT_THAT(db->Put(Key(t * 1000 + i), "v"), IsOk());
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> sequences;
  for (size_t i = at_open; i < seen.commits.size(); ++i) sequences.insert(seen.commits[i].sequence);
  ASSERT_EQ(seen.commits.size() - at_open, 200u);
  EXPECT_EQ(sequences.size(), 200u);
  EXPECT_EQ(*sequences.begin(), at_open + 1);
  EXPECT_EQ(*sequences.rbegin(), at_open + 200);
}

}  // namespace
}  // namespace journalkv
