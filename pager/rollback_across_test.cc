// The rollback family's commit across databases (rollback_across.cc, super_journal.h): two
// and three databases commit together, roll back together, a busy commit is retried, a
// spilled transaction names the super-journal, failures undo every participant, and recovery
// follows J5 and J7. The crash sweeps are tests/across_crash_sweep_test.cc.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pager/across.h"
#include "pager/journal_format.h"
#include "pager/pager.h"
#include "pager/super_journal.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::pager {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;

class RollbackAcrossTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  PagerOptions Options() {
    PagerOptions o;
    o.journal_mode = GetParam();
    o.page_size = 512;
    o.cache_pages = 16;
    o.busy_timeout = absl::Milliseconds(50);
    return o;
  }
  std::unique_ptr<Pager> Open(const std::string& path) {
    auto pager = Pager::Open(&fs_, path, Options());
    EXPECT_THAT(pager, IsOk());
    return pager.ok() ? std::move(pager).value() : nullptr;
  }
  void OpenAll(int n) {
    pagers_.clear();
    for (int i = 0; i < n; ++i) pagers_.push_back(Open(paths_[i]));
  }
  // Begins a write on each open pager: `pages` new pages stamped with `tag`, meta 0 = tag.
  std::vector<std::unique_ptr<WriteTxn>> Write(uint32_t tag, int pages) {
    std::vector<std::unique_ptr<WriteTxn>> txns;
    for (auto& pager : pagers_) {
      auto txn = pager->BeginWrite();
      EXPECT_THAT(txn, IsOk());
      for (int i = 0; i < pages; ++i) {
        auto page = (*txn)->Allocate();
        EXPECT_THAT(page, IsOk());
        base::EncodeFixed32(page->data.data(), tag);
        EXPECT_THAT((*txn)->SpillIfNeeded(), IsOk());
      }
      (*txn)->set_meta(0, tag);
      txns.push_back(std::move(txn).value());
    }
    return txns;
  }
  static std::vector<WriteTxn*> Raw(std::vector<std::unique_ptr<WriteTxn>>& txns) {
    std::vector<WriteTxn*> raw;
    for (auto& t : txns) raw.push_back(t.get());
    return raw;
  }
  // meta 0 of the database at `path`, read by a new connection (which recovers).
  uint32_t TagOf(const std::string& path) {
    std::unique_ptr<Pager> pager = Open(path);
    if (pager == nullptr) return ~0u;
    auto read = pager->BeginRead();
    EXPECT_THAT(read, IsOk());
    auto problems = (*read)->CheckPages();
    EXPECT_THAT(problems, IsOk());
    EXPECT_TRUE(problems->empty()) << path << ": " << problems->front();
    for (uint32_t n = 2; n <= (*read)->page_count(); ++n) {
      auto page = (*read)->Get(PageNo(n));
      EXPECT_THAT(page, IsOk());
      EXPECT_LE(base::DecodeFixed32(page->data().data()), (*read)->meta(0)) << path << " " << n;
    }
    return (*read)->meta(0);
  }
  // The super-journals the run synced (J2), from the file system's log.
  std::vector<std::string> SuperJournals() {
    std::vector<std::string> out;
    for (const auto& r : fs_.sync_log()) {
      if (!r.directory && r.path.find("-super-") != std::string::npos) out.push_back(r.path);
    }
    return out;
  }
  bool Exists(const std::string& path) {
    auto e = fs_.Exists(path);
    EXPECT_THAT(e, IsOk());
    return e.ok() && *e;
  }
  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fs_{&mem_};
  std::vector<std::string> paths_ = {"/d1/a.db", "/d1/b.db", "/d2/c.db"};
  std::vector<std::unique_ptr<Pager>> pagers_;
};

TEST_P(RollbackAcrossTest, TwoAndThreeCommitTogether) {
  for (int n : {2, 3}) {
    OpenAll(n);
    auto txns = Write(/*tag=*/10 + n, /*pages=*/3);
    ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
    for (auto& t : txns) EXPECT_TRUE(t->finished());
    txns.clear();
    pagers_.clear();
    for (int i = 0; i < n; ++i) EXPECT_EQ(TagOf(paths_[i]), 10u + n) << paths_[i];
  }
  // Each commit made a super-journal durable (J2) and removed it (J4).
  std::vector<std::string> supers = SuperJournals();
  ASSERT_EQ(supers.size(), 2u);
  for (const std::string& s : supers) {
    EXPECT_THAT(s, HasSubstr("/d1/a.db-super-"));
    EXPECT_EQ(Exists(s), (false));
  }
}

TEST_P(RollbackAcrossTest, RollbackChangesNone) {
  OpenAll(2);
  {
    auto txns = Write(1, 2);
    ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  }
  {
    auto txns = Write(2, 40);  // spills in both
    for (auto& t : txns) EXPECT_THAT(t->Rollback(), IsOk());
  }
  pagers_.clear();
  EXPECT_EQ(TagOf(paths_[0]), 1u);
  EXPECT_EQ(TagOf(paths_[1]), 1u);
}

TEST_P(RollbackAcrossTest, BusyLeavesEveryTransactionOpenAndRetryable) {
  OpenAll(2);
  auto reader_pager = Open(paths_[1]);  // another connection reading b: b's EXCLUSIVE is busy
  auto reader = reader_pager->BeginRead();
  ASSERT_THAT(reader, IsOk());
  auto txns = Write(5, 3);
  absl::Status busy = CommitAcross(Raw(txns));
  EXPECT_THAT(busy, StatusIs(absl::StatusCode::kUnavailable, paths_[1]));
  for (auto& t : txns) EXPECT_FALSE(t->finished());
  EXPECT_TRUE(SuperJournals().empty());  // nothing written
  reader->reset();
  ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  txns.clear();
  pagers_.clear();
  reader_pager.reset();
  EXPECT_EQ(TagOf(paths_[0]), 5u);
  EXPECT_EQ(TagOf(paths_[1]), 5u);
}

vfs::FaultInjectingFileSystem* crash_fs = nullptr;
std::atomic<int> db_syncs{0};

TEST_P(RollbackAcrossTest, SpilledTransactionNamesTheSuperJournal) {
  OpenAll(3);
  auto txns = Write(7, 60);  // 60 pages, cache 16: every participant spilled
  // Crash right after the last database sync, before the commit point: each journal must name
  // the super-journal (in a super record after its spilled records, J3), so that each is
  // rolled back though its seal checks.
  crash_fs = &fs_;
  db_syncs = 0;
  vfs::SetSyncObserverForTesting([](const char* site) {
    if (std::strcmp(site, "I2 database") == 0 && ++db_syncs == 3) {
      crash_fs->CrashAfterMutations(1);
    }
  });
  EXPECT_FALSE(CommitAcross(Raw(txns)).ok());
  vfs::SetSyncObserverForTesting(nullptr);
  txns.clear();
  pagers_.clear();
  fs_.SimulateProcessCrash();
  for (const std::string& p : paths_) EXPECT_EQ(TagOf(p), 0u) << p;
  // And the same transaction committed.
  OpenAll(3);
  txns = Write(8, 60);
  ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  txns.clear();
  pagers_.clear();
  for (const std::string& p : paths_) EXPECT_EQ(TagOf(p), 8u) << p;
}

// A failure after the super-journal was written undoes every participant, and the
// super-journal goes (J6); the error names the file.
TEST_P(RollbackAcrossTest, FailuresUndoEveryParticipant) {
  OpenAll(2);
  {
    auto txns = Write(1, 2);
    ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  }
  // The commit's first write is the super-journal's; its first delete is the commit point's.
  for (vfs::FaultOp op : {vfs::FaultOp::kWrite, vfs::FaultOp::kDelete}) {
    auto txns = Write(2, 3);
    fs_.FailNth(op, 1, EIO);
    absl::Status s = CommitAcross(Raw(txns));
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal, "-super-"));
    for (auto& t : txns) EXPECT_TRUE(t->finished());
    fs_.ClearFaults();
    txns.clear();
  }
  std::vector<std::string> supers = SuperJournals();
  ASSERT_EQ(supers.size(), 2u);  // the first commit's, and the one that failed at its removal
  EXPECT_EQ(Exists(supers.back()), (false));  // J6
  for (auto& p : pagers_) EXPECT_THAT(p->sticky_error(), IsOk());
  pagers_.clear();
  EXPECT_EQ(TagOf(paths_[0]), 1u);
  EXPECT_EQ(TagOf(paths_[1]), 1u);
}

// An I/O error at each operation of a spilled commit across three databases, of every kind
// (a failed sync as Linux's: each unsynced change made durable or lost): the commit either
// succeeds, or fails with every participant undone, and a new connection finds every
// database at the same transaction (the failed one in none).
TEST_P(RollbackAcrossTest, EveryFaultLeavesAllOrNone) {
  int failed = 0;
  for (vfs::FaultOp op : {vfs::FaultOp::kWrite, vfs::FaultOp::kSync, vfs::FaultOp::kDirSync,
                          vfs::FaultOp::kDelete, vfs::FaultOp::kCreate}) {
    for (uint64_t n = 1;; ++n) {
      vfs::MemFileSystem mem;
      vfs::FaultInjectingFileSystem fs(&mem);
      auto open = [&](const std::string& path) {
        auto pager = Pager::Open(&fs, path, Options());
        EXPECT_THAT(pager, IsOk());
        return pager.ok() ? std::move(pager).value() : nullptr;
      };
      for (const std::string& p : paths_) pagers_.push_back(open(p));
      {
        auto txns = Write(1, 2);
        ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
      }
      auto txns = Write(2, 20);  // spills in each (cache 16)
      const uint64_t before = fs.op_count(op);
      fs.FailNth(op, n, EIO);
      const absl::Status s = CommitAcross(Raw(txns));
      const bool fired = fs.op_count(op) - before >= n;
      fs.ClearFaults();
      txns.clear();
      pagers_.clear();
      const std::string where =
          absl::StrCat("op ", static_cast<int>(op), " n ", n, ": ", s.ToString());
      if (!s.ok()) ++failed;
      uint32_t tags[3];
      for (int d = 0; d < 3; ++d) {
        auto pager = open(paths_[d]);
        ASSERT_NE(pager, nullptr) << where;
        auto read = pager->BeginRead();
        ASSERT_THAT(read, IsOk()) << where;
        auto problems = (*read)->CheckPages();
        ASSERT_THAT(problems, IsOk()) << where;
        EXPECT_TRUE(problems->empty()) << where;
        tags[d] = (*read)->meta(0);
      }
      EXPECT_EQ(tags[0], tags[1]) << where;
      EXPECT_EQ(tags[0], tags[2]) << where;
      EXPECT_EQ(tags[0], s.ok() ? 2u : 1u) << where;
      if (!fired) break;  // the commit made fewer such operations: every one was tried
    }
  }
  EXPECT_GT(failed, 10);
}

TEST_P(RollbackAcrossTest, TooLongPathIsRefusedBeforeAnythingIsWritten) {
  paths_[0] = "/d1/" + std::string(kMaxSuperPathSize, 'x') + ".db";
  OpenAll(2);
  auto txns = Write(3, 1);
  EXPECT_THAT(CommitAcross(Raw(txns)),
              StatusIs(absl::StatusCode::kInvalidArgument, "too long"));
  for (auto& t : txns) EXPECT_TRUE(t->finished());
  EXPECT_TRUE(SuperJournals().empty());
}

// Recovery (J5, J7): a crash after every database was synced but before the commit point
// rolls every participant back, even though each seal checks; opening one database first
// rolls it back and leaves the super-journal for the others, whose journals still name it.
TEST_P(RollbackAcrossTest, CrashBeforeCommitPointRollsBackEach) {
  OpenAll(3);
  {
    auto txns = Write(1, 2);
    ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  }
  {
    // Crash right after the third database sync (the last participant's, I2): the commit
    // point (J4) is refused.
    auto txns = Write(3, 3);
    crash_fs = &fs_;
    db_syncs = 0;
    vfs::SetSyncObserverForTesting([](const char* site) {
      if (std::strcmp(site, "I2 database") == 0 && ++db_syncs == 3) {
        crash_fs->CrashAfterMutations(1);
      }
    });
    EXPECT_FALSE(CommitAcross(Raw(txns)).ok());
    vfs::SetSyncObserverForTesting(nullptr);
    EXPECT_EQ(db_syncs.load(), 3);
    txns.clear();
    pagers_.clear();
  }
  fs_.SimulateProcessCrash();
  std::vector<std::string> supers = SuperJournals();
  ASSERT_FALSE(supers.empty());
  const std::string super = supers.back();
  ASSERT_TRUE(Exists(super));
  EXPECT_EQ(TagOf(paths_[1]), 1u);  // b alone first: rolled back, super-journal kept (J7)
  EXPECT_EQ(Exists(super), (true));
  EXPECT_EQ(TagOf(paths_[0]), 1u);
  EXPECT_EQ(Exists(super), (true));
  EXPECT_EQ(TagOf(paths_[2]), 1u);  // the last one removes it
  EXPECT_EQ(Exists(super), (false));
}

// Two recoverers of different participants at once (J7): whatever the interleaving, both
// databases are rolled back and one of them removes the super-journal.
TEST_P(RollbackAcrossTest, ConcurrentRecoverersRemoveTheSuperJournal) {
  for (int round = 0; round < 20; ++round) {
    OpenAll(2);
    {
      auto txns = Write(1, 2);
      ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
    }
    {
      auto txns = Write(2, 3);
      crash_fs = &fs_;
      db_syncs = 0;
      vfs::SetSyncObserverForTesting([](const char* site) {
        if (std::strcmp(site, "I2 database") == 0 && ++db_syncs == 2) {
          crash_fs->CrashAfterMutations(1);
        }
      });
      EXPECT_FALSE(CommitAcross(Raw(txns)).ok());
      vfs::SetSyncObserverForTesting(nullptr);
      txns.clear();
      pagers_.clear();
    }
    fs_.SimulateProcessCrash();
    const std::string super = SuperJournals().back();
    ASSERT_TRUE(Exists(super));
    uint32_t tags[2] = {0, 0};
    std::thread other([&] { tags[1] = TagOf(paths_[1]); });
    tags[0] = TagOf(paths_[0]);
    other.join();
    EXPECT_EQ(tags[0], 1u);
    EXPECT_EQ(tags[1], 1u);
    EXPECT_FALSE(Exists(super)) << "round " << round;
    // Start over on fresh files.
    for (const std::string& p : paths_) {
      for (const std::string& f : {p, p + "-journal"}) (void)fs_.Delete(f);
    }
  }
}

// After the commit point, a journal that names the gone super-journal is discarded without
// touching its database (J5), even when it does not look complete by its seal.
TEST_P(RollbackAcrossTest, JournalNamingAGoneSuperJournalIsCommitted) {
  OpenAll(2);
  {
    auto txns = Write(1, 2);
    ASSERT_THAT(CommitAcross(Raw(txns)), IsOk());
  }
  pagers_.clear();
  // In the database's directory, and in one that does not exist (moved away: nothing there
  // to come back after a power loss either).
  for (const char* super_path :
       {"/d1/a.db-super-0000000000000001", "/gone/a.db-super-0000000000000001"}) {
    // A journal for a whose header names a super-journal that does not exist, holding a record
    // of page 2 with garbage: rolled back it would break page 2.
    JournalHeader h;
    h.page_size = 512;
    h.nonce = 99;
    h.orig_pages = 1;
    h.super_path = super_path;
    h.super_nonce = 5;
    std::string bytes(kJournalHeaderSize, '\0');
    EncodeJournalHeader(h, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
    std::vector<uint8_t> garbage(512, 0xab);
    AppendRecord(h.nonce, PageNo(2), garbage, &bytes);
    {
      auto f = fs_.Open(paths_[0] + "-journal", {vfs::OpenMode::kCreate, vfs::FileKind::kJournal});
      ASSERT_THAT(f, IsOk());
      ASSERT_THAT((*f)->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                     bytes.size())),
                  IsOk());
    }
    EXPECT_EQ(TagOf(paths_[0]), 1u);  // not rolled back (and the page check passed)
    EXPECT_EQ(Exists(paths_[0] + "-journal"), GetParam() != JournalMode::kDelete);
  }
}

TEST_P(RollbackAcrossTest, DamagedSuperFieldsAreRefused) {
  OpenAll(1);
  pagers_.clear();
  JournalHeader h;
  h.page_size = 512;
  h.nonce = 1;
  h.orig_pages = 1;
  h.super_path = "/d1/a.db-super-0000000000000001";
  h.super_nonce = 5;
  std::string bytes(kJournalHeaderSize, '\0');
  EncodeJournalHeader(h, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
  bytes[70] ^= 1;  // a byte of the path: the super checksum fails, the header's does not
  auto decoded = DecodeJournalHeader(
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_TRUE(decoded->super_damaged);
  {
    auto f = fs_.Open(paths_[0] + "-journal", {vfs::OpenMode::kCreate, vfs::FileKind::kJournal});
    ASSERT_THAT(f, IsOk());
    ASSERT_THAT((*f)->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                   bytes.size())),
                IsOk());
  }
  EXPECT_THAT(Pager::Open(&fs_, paths_[0], Options()).status(),
              StatusIs(absl::StatusCode::kDataLoss, "super-journal fields"));
}

TEST(SuperJournalFormat, RoundTripsAndRejectsDamage) {
  SuperJournal s;
  s.nonce = 0x1234;
  s.paths = {"/a.db", "/dir/b.db", "c.db"};
  std::string bytes = EncodeSuperJournal(s);
  auto span = [](const std::string& b) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  };
  auto decoded = DecodeSuperJournal(span(bytes));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->nonce, 0x1234u);
  EXPECT_EQ(decoded->paths, s.paths);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    EXPECT_FALSE(DecodeSuperJournal(span(bad)).has_value()) << i;
  }
  EXPECT_FALSE(DecodeSuperJournal(span(bytes.substr(0, bytes.size() - 1))).has_value());
  // Old journals (zeros after byte 48) name no super-journal.
  JournalHeader h;
  h.page_size = 512;
  std::string header(kJournalHeaderSize, '\0');
  EncodeJournalHeader(h, absl::MakeSpan(reinterpret_cast<uint8_t*>(header.data()), header.size()));
  auto old = DecodeJournalHeader(span(header));
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->super_path.empty());
  EXPECT_FALSE(old->super_damaged);
}

INSTANTIATE_TEST_SUITE_P(Modes, RollbackAcrossTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

}  // namespace
}  // namespace journalkv::pager
