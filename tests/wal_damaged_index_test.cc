// WAL and WAL2 with a -shm damaged under live connections: words of the wal-index overwritten
// while connections have it mapped, as a buggy process sharing the file could. The design
// trusts the index between cooperating processes, so reads through a damaged index may be
// wrong; what is asked here is what the fuzzer's findings broke (fuzz/shm_fuzzer.cc,
// fuzz/wal_fuzzer.cc): no frame lost from the log, no page written to the wrong place, no log
// or database file grown to a size a damaged word names, and a clear error where the damage
// cannot be worked around. Each case is one fuzzer finding, made by hand. (The fifth finding,
// wal/checkpoint-copies-frame-past-db-size, was not the engine's: a valid log naming a page
// gigabytes out is copied there, a sparse file on disk; the fuzz targets' in-memory files now
// end at 64 MiB with EFBIG, fuzz/fuzz_util.h.)
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

constexpr uint32_t kPageSize = 1024;
constexpr int kCommits = 20;
// A page number far past the database: written at its offset it would grow the file by
// about 100 MB (the fuzzer's inputs named pages gigabytes out).
constexpr uint32_t kFarPage = 100000;

std::string Key(int i) { return absl::StrFormat("key%03d", i); }
std::string Value(int i) { return absl::StrCat("value ", i, std::string(200, 'a' + i % 26)); }

class WalDamagedIndexTest : public ::testing::TestWithParam<bool> {
 protected:
  bool wal2() const { return GetParam(); }
  Options WalOptions() const {
    Options o;
    o.journal_mode = wal2() ? JournalMode::kWal2 : JournalMode::kWal;
    o.file_system = const_cast<vfs::MemFileSystem*>(&fs_);
    o.page_size = kPageSize;
    o.checkpoint_policy = "manual";  // the log keeps every commit until asked
    return o;
  }

  // A connection with kCommits commits in the log, none copied, and the test's own view of
  // the -shm it maps (no locks taken).
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(db_, Db::Open(path_, WalOptions()));
    for (int i = 0; i < kCommits; ++i) ASSERT_THAT(db_->Put(Key(i), Value(i)), IsOk());
    JKV_ASSERT_OK_AND_ASSIGN(shm_file_, fs_.Open(path_ + "-shm", {vfs::OpenMode::kReadWrite,
                                                                  vfs::FileKind::kOther}));
    JKV_ASSERT_OK_AND_ASSIGN(index_, shm::WalIndex::OpenShared(shm_file_.get(), false));
  }

  shm::IndexHeader Header() {
    shm::IndexHeader h;
    EXPECT_TRUE(index_->ReadHeader(&h));
    return h;
  }
  int Current() { return wal2() ? static_cast<int>(Header().current_log & 1) : 0; }
  std::string LogPath(int log) const { return path_ + (log == 0 ? "-wal" : "-wal2"); }
  uint64_t SizeOf(const std::string& path) {
    absl::StatusOr<std::unique_ptr<vfs::File>> f =
        fs_.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
    if (!f.ok()) return 0;
    absl::StatusOr<uint64_t> size = (*f)->Size();
    return size.ok() ? *size : 0;
  }

  // Closes every connection (the index goes with the last), opens the database again and
  // checks that it holds the commits 0..n-1 and nothing else.
  void ExpectReopenedHolds(int n) {
    index_.reset();
    shm_file_.reset();
    if (db_ != nullptr) {
      ASSERT_THAT(db_->Close(), IsOk());
    }
    db_.reset();
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(path_, WalOptions()));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db->BeginRead());
    EXPECT_EQ(*r->Count(), static_cast<uint64_t>(n));
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::optional<std::string>> v = r->Get(Key(i));
      ASSERT_THAT(v, IsOk()) << Key(i);
      ASSERT_TRUE(v->has_value()) << Key(i) << " is lost";
      EXPECT_EQ(**v, Value(i)) << Key(i);
    }
    r.reset();
    EXPECT_THAT(db->Check()->problems, ::testing::IsEmpty());
  }

  vfs::MemFileSystem fs_;
  const std::string path_ = "/x.db";
  std::unique_ptr<Db> db_;
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
};

// Finding shm/restart-with-backfill-short-of-mx. The backfill only moves under CKPT and mx
// only grows within a generation, so a backfill past mx is damage. Taken as "all copied" (it
// was clamped to mx), a RESTART checkpoint copied nothing and restarted the log: every commit
// in it was gone once the connections closed.
TEST_P(WalDamagedIndexTest, BackfillPastTheLastFrameIsNotTakenAsEverythingCopied) {
  const int cur = Current();
  ASSERT_GT(Header().logs[cur].mx_frame, 0u);
  index_->set_backfill(cur, Header().logs[cur].mx_frame + 7);
  absl::StatusOr<CheckpointResult> r = db_->Checkpoint(CheckpointMode::kRestart);
  EXPECT_THAT(r, IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits));
}

// Finding shm/checkpoint-copies-page-past-the-end. A hash entry naming another page for a
// frame sent that frame's image to the other page's offset (gigabytes out for the fuzzer's
// page numbers). The checkpoint now checks each frame's own header (checksummed when it was
// indexed) and refuses, naming the damage.
TEST_P(WalDamagedIndexTest, IndexEntryNamingAnotherPageIsRefusedByTheCheckpoint) {
  const int cur = Current();
  const uint32_t mx = Header().logs[cur].mx_frame;
  const uint64_t db_size = SizeOf(path_);
  ASSERT_THAT(index_->Truncate(cur, mx - 1), IsOk());
  ASSERT_THAT(index_->Append(cur, mx, kFarPage), IsOk());
  // FULL: in WAL2 a PASSIVE checkpoint copies only the log that is not current.
  absl::StatusOr<CheckpointResult> r = db_->Checkpoint(CheckpointMode::kFull);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kDataLoss, "wal-index (-shm) is damaged"));
  EXPECT_LE(SizeOf(path_), db_size + uint64_t{kCommits} * kPageSize)
      << "the checkpoint wrote where the damaged entry pointed";
  // The log is intact: once every connection is gone the index is rebuilt from it.
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits));
}

// Finding shm/append-grows-log-to-fuzzed-mx-frame. A header (whole, checksum and all) whose
// mx_frame lies past the log's last frame made the next commit append there, preallocating
// the log up to that frame (4 GB for the fuzzer's value), with a gap of frames no recovery
// reads past. The writer now checks the last frame the header names and, finding another,
// rebuilds the index from the log.
TEST_P(WalDamagedIndexTest, HeaderClaimingFramesTheLogLacksIsRebuiltByTheNextWriter) {
  const int cur = Current();
  shm::IndexHeader h = Header();
  h.logs[cur].mx_frame += kFarPage;
  ++h.change;
  index_->WriteHeader(h);
  const uint64_t log_size = SizeOf(LogPath(cur));
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> other, Db::Open(path_, WalOptions()));
  ASSERT_THAT(other->Put(Key(kCommits), Value(kCommits)), IsOk());
  EXPECT_LE(SizeOf(LogPath(cur)), log_size + (uint64_t{8} << 20))
      << "the commit appended at the damaged header's frame";
  EXPECT_LT(Header().logs[cur].mx_frame, kFarPage) << "the index was not rebuilt";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db_->BeginRead());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + 1));
  r.reset();
  ASSERT_THAT(other->Close(), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits + 1));
}

// Finding shm/writer-chain-seed-differs-from-header. In a generation with no frames the
// header's last_checksum is only a copy of the seed the log header gives; one that differs
// tripped a debug assertion in the first append. The chain starts from the header written,
// so the commit after it is one a recovery scan accepts. (Release builds never asserted; run
// under --config=debug this fails without the fix.)
TEST_P(WalDamagedIndexTest, EmptyGenerationWhoseSeedDiffersStillChainsItsFirstCommit) {
  ASSERT_THAT(db_->Checkpoint(CheckpointMode::kTruncate), IsOk());
  shm::IndexHeader h = Header();
  const int cur = wal2() ? static_cast<int>(h.current_log & 1) : 0;
  ASSERT_EQ(h.logs[cur].mx_frame, 0u);
  h.logs[cur].last_checksum ^= 0x5a5a;
  ++h.change;
  index_->WriteHeader(h);
  ASSERT_THAT(db_->Put(Key(kCommits), Value(kCommits)), IsOk());
  const int now = Current();
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<wal::WalLog> log,
                           wal::WalLog::Open(&fs_, LogPath(now), /*read_only=*/true));
  JKV_ASSERT_OK_AND_ASSIGN(wal::ScanResult scan, log->Scan(kPageSize));
  EXPECT_TRUE(scan.header_valid);
  EXPECT_EQ(scan.mx_frame, Header().logs[now].mx_frame) << "recovery would stop before it";
  EXPECT_EQ(scan.last_checksum, Header().logs[now].last_checksum);
  log.reset();
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits + 1));
}

// Not damage but a crash: a writer SIGKILLed while it wrote the appended header (copy D, then
// C; W12 e) leaves it torn. The next writer repairs it from the copy that is whole and goes on;
// it used to take it for damage and rebuild the index from the log under the open read
// transactions of other connections, whose lookups then missed the emptied hash tables and
// read pages from the database file (wal_multiprocess_test's readers saw their held snapshots
// change, now and then under TSan).
TEST_P(WalDamagedIndexTest, ATornAppendedHeaderIsRepairedNotRebuilt) {
  for (int copy : {0, 1}) {
    SCOPED_TRACE(copy == 0 ? "killed writing copy C" : "killed writing copy D");
    const int done = kCommits + copy;
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db_->BeginRead());
    index_->CorruptAppendedCopyForTesting(copy);
    shm::IndexHeader torn;
    ASSERT_FALSE(index_->ReadAppendedHeader(&torn));
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> other, Db::Open(path_, WalOptions()));
    ASSERT_THAT(other->Put(Key(done), Value(done)), IsOk());
    EXPECT_EQ(other->Stats().recoveries, 0u) << "the index was rebuilt from the log";
    shm::IndexHeader appended;
    ASSERT_TRUE(index_->ReadAppendedHeader(&appended));
    EXPECT_EQ(appended, Header());
    EXPECT_EQ(*r->Count(), static_cast<uint64_t>(done)) << "the open snapshot changed";
    r.reset();
    JKV_ASSERT_OK_AND_ASSIGN(r, db_->BeginRead());
    EXPECT_EQ(*r->Count(), static_cast<uint64_t>(done + 1));
    r.reset();
    ASSERT_THAT(other->Close(), IsOk());
  }
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits + 2));
}

// Not damage either: a process killed inside WriteHeader between the appended header and the
// published one (W12 f), here a log restart (WAL2: a switch to the other log) whose new
// generation reached only the appended copies. The published header is the state; the next
// writer makes the appended one match it and goes on, instead of rebuilding the index under
// the open read transactions (which made wal_multiprocess_test's WAL2 readers go back).
TEST_P(WalDamagedIndexTest, AHeaderWriteCutBetweenItsHalvesIsRepairedNotRebuilt) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, db_->BeginRead());
  const shm::IndexHeader before = Header();
  shm::IndexHeader cut = before;
  const int cur = Current();
  const int next = wal2() ? 1 - cur : cur;  // WAL2: the switch to the other log
  cut.logs[next].ckpt_seq =
      (std::max(before.logs[0].ckpt_seq, before.logs[1].ckpt_seq) + 1) & 0x7fffffffu;
  cut.logs[next].mx_frame = 0;
  cut.logs[next].salt1 ^= 0x1234;
  cut.current_log = static_cast<uint32_t>(next);
  ++cut.change;
  index_->WriteAppendedHeader(cut);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> other, Db::Open(path_, WalOptions()));
  ASSERT_THAT(other->Put(Key(kCommits), Value(kCommits)), IsOk());
  EXPECT_EQ(other->Stats().recoveries, 0u) << "the index was rebuilt from the log";
  shm::IndexHeader appended;
  ASSERT_TRUE(index_->ReadAppendedHeader(&appended));
  EXPECT_EQ(appended, Header());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits)) << "the open snapshot changed";
  r.reset();
  JKV_ASSERT_OK_AND_ASSIGN(r, db_->BeginRead());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + 1));
  r.reset();
  ASSERT_THAT(other->Close(), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits + 1));
}

// W12 e with a commit pending: connection A has appended a commit at FULL and is flushing it
// (hook "flush:synced": synced, not yet published) when connection B becomes the writer and
// finds copy D torn, as a writer killed while it wrote D over A's header leaves it. C still
// holds A's appended header: B must build on it (its snapshot has A's commit, and it keeps A's
// index entries), so that A's flush publishes a commit whose entries are all there. Repaired
// to the published header instead, B would drop A's pending commit from under its flush.
struct PendingRepair {
  shm::WalIndex* index = nullptr;
  Db* other = nullptr;
  bool done = false;
  bool saw_pending = false;
  absl::Status status;
};
PendingRepair* pending_repair = nullptr;

void RepairUnderAPendingCommit(const char* point) {
  PendingRepair& p = *pending_repair;
  if (p.done || absl::string_view(point) != "flush:synced") return;
  p.done = true;
  p.index->CorruptAppendedCopyForTesting(1);  // D torn; C is A's appended header
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = p.other->BeginWrite();
  if (!w.ok()) {
    p.status = w.status();
    return;
  }
  absl::StatusOr<std::optional<std::string>> v = (*w)->Get(Key(kCommits));
  p.status = v.status();
  p.saw_pending = v.ok() && v->has_value() && **v == Value(kCommits);
  p.status.Update((*w)->Rollback());
}

TEST_P(WalDamagedIndexTest, ATornAppendedHeaderKeepsAPendingCommit) {
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> other, Db::Open(path_, WalOptions()));
  PendingRepair repair;
  repair.index = index_.get();
  repair.other = other.get();
  pending_repair = &repair;
  wal::SetWalHookForTesting(&RepairUnderAPendingCommit);
  const absl::Status put = db_->Put(Key(kCommits), Value(kCommits));
  wal::SetWalHookForTesting(nullptr);
  pending_repair = nullptr;
  ASSERT_TRUE(repair.done) << "no flush ran (is the default sync FULL?)";
  EXPECT_THAT(put, IsOk());
  EXPECT_THAT(repair.status, IsOk());
  EXPECT_TRUE(repair.saw_pending) << "the next writer's snapshot lost the pending commit";
  EXPECT_EQ(other->Stats().recoveries, 0u) << "the index was rebuilt from the log";
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReadTransaction> r, other->BeginRead());
  EXPECT_EQ(*r->Count(), static_cast<uint64_t>(kCommits + 1));
  r.reset();
  ASSERT_THAT(other->Close(), IsOk());
  ASSERT_NO_FATAL_FAILURE(ExpectReopenedHolds(kCommits + 1));
}

INSTANTIATE_TEST_SUITE_P(Modes, WalDamagedIndexTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "wal2" : "wal";
                         });

}  // namespace
}  // namespace journalkv
