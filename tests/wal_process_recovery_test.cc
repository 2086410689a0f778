// WAL mode with real processes, continued (see wal_multiprocess_test.cc): recovery of what dead
// processes leave, the last close, and a torn index header under live readers. Every case runs
// in journal mode wal and wal2 (where the commits go to both logs: wal2_switch_pages is 100).
//   - DeadProcessShmAndLogAreRecovered: a process killed after its commits leaves -wal and -shm
//     behind; the next opener (alone) rebuilds the index from the log and finds every commit.
//   - LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen.
//   - TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole: a writer killed in the middle of
//     publishing the index header leaves it torn (emulated after the SIGKILL by damaging copy
//     A's checksum in the -shm, the state such a kill leaves); the connection that repairs the
//     index must not disturb the read transactions other processes have open.
#include "tests/wal_process_testing.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::ScaledForSanitizer;
using namespace ::journalkv::wal_process_testing;  // the helpers of this pair of tests

class WalMultiProcessTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  JournalMode mode() const { return GetParam(); }
  bool wal2() const { return GetParam() == JournalMode::kWal2; }
};

// ---------------------------------------------------------------------------------------------
// DeadProcessShmAndLogAreRecovered

struct CommitShared {
  std::atomic<int> acked{0};  // keys 0 .. acked-1 are committed (Put returned OK)
  std::atomic<int> ready{0};  // the child is done and waits to be killed
};

std::string RoundKey(int round, int i) { return absl::StrFormat("r%02d_k%05d", round, i); }
std::string RoundValue(int round, int i) {
  return absl::StrCat("value of ", round, "/", i, std::string(40 + i % 100, 'v'));
}

// Commits keys of `round` one per transaction (sync FULL) until `commits` (or forever when 0),
// with a PASSIVE checkpoint half way. Then, when `commits` > 0, leaves a pinned read snapshot
// and a large spilled write transaction open, says so and waits to be killed.
int CommitterMain(const std::string& path, JournalMode mode, CommitShared* shared, int round,
                  int commits) {
  Options o = WalOptions(mode, SyncLevel::kFull);
  o.checkpoint_policy = "manual";  // the log keeps the commits: the opener must recover them from it
  o.cache_pages = 16;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  for (int i = 0; commits == 0 || i < commits; ++i) {
    absl::Status s = (*db)->Put(RoundKey(round, i), RoundValue(round, i));
    if (!s.ok()) return StatusFail(s, "committer put");
    shared->acked.store(i + 1);
    if (i == commits / 2) {
      absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kPassive);
      if (!r.ok()) return StatusFail(r.status(), "committer checkpoint");
    }
  }
  absl::StatusOr<std::unique_ptr<ReadTransaction>> reader = (*db)->BeginRead();
  if (!reader.ok()) return StatusFail(reader.status(), "committer BeginRead");
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
  if (!w.ok()) return StatusFail(w.status(), "committer BeginWrite");
  for (int i = 0; i < kSpillKeys; ++i) {
    absl::Status s = (*w)->Put(SpillKey(i), std::string(kSpillValueBytes, 'S'));
    if (!s.ok()) return StatusFail(s, "committer spill put");
  }
  if ((*db)->Stats().spills == 0) return ChildFail(kExitNoSpill, "no spill");
  shared->ready.store(1);
  for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return ChildFail(kExitNotKilled, "not killed");
}

TEST_P(WalMultiProcessTest, DeadProcessShmAndLogAreRecovered) {
  const std::string dir = TempDir("jkv_wal_dead");
  const std::string path = dir + "/dead.db";
  std::mt19937_64 rng(Seed());
  CommitShared* shared = MapShared<CommitShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;
  const int rounds = ScaledForSanitizer(6, 4);
  std::vector<int> committed(rounds, 0);  // per round: keys the parent knows are committed
  for (int round = 0; round < rounds; ++round) {
    // Even rounds: commit 200 keys, then wait to be killed (pinned reader, spilled frames).
    // Odd rounds: commit in a loop and be killed at a random moment.
    const bool pause = round % 2 == 0;
    shared->acked.store(0);
    shared->ready.store(0);
    const pid_t child = guard.Add(
        Spawn([&] { return CommitterMain(path, mode(), shared, round, pause ? 200 : 0); }));
    ASSERT_GT(child, 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    if (pause) {
      while (shared->ready.load() == 0 && absl::Now() < deadline) {
        int status = 0;
        ASSERT_NE(waitpid(child, &status, WNOHANG), child)
            << "round " << round << ": the committer " << DescribeStatus(status);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      ASSERT_EQ(shared->ready.load(), 1) << "round " << round << ": the committer hangs";
    } else {
      while (shared->acked.load() < 20 && absl::Now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(KilledBySigkill(status)) << "round " << round << ": " << DescribeStatus(status);
    const int acked = shared->acked.load();
    committed[round] = acked;
    ASSERT_GT(acked, 0) << "round " << round;
    // The dead process could not remove its files.
    EXPECT_EQ(MissingLogs(mode(), path), "");
    EXPECT_TRUE(Exists(path + "-shm"));

    // Alone: the opener reinitialises the -shm and rebuilds the index from the log(s).
    {
      Options o = WalOptions(mode(), SyncLevel::kFull);
      o.checkpoint_policy = "manual";
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
      ASSERT_THAT(db, IsOk());
      const DbStats stats = (*db)->Stats();
      EXPECT_TRUE(stats.wal_mode);
      EXPECT_GT(stats.log_frames, 0u) << "round " << round << ": the commits were not in the log";
      if (wal2() && pause) {
        // 200 commits: the writer switched to -wal2 at 100 frames, the checkpoint half way
        // copied -wal, and the writer switched back to it: both logs hold frames.
        EXPECT_GT(stats.wal2_log_frames, 0u) << "round " << round << ": -wal2 holds no frame";
        EXPECT_GT(stats.log_frames - stats.wal2_log_frames, 0u)
            << "round " << round << ": -wal holds no frame";
      }
      EXPECT_EQ(stats.pinned_connections, 0) << "the dead process's pin survived";
      absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
      ASSERT_THAT(txn, IsOk());
      for (int r = 0; r <= round; ++r) {
        for (int i = 0; i < committed[r]; ++i) {
          absl::StatusOr<std::optional<std::string>> v = (*txn)->Get(RoundKey(r, i));
          ASSERT_THAT(v, IsOk());
          ASSERT_TRUE(v->has_value()) << "round " << r << ": acknowledged commit " << i
                                      << " of " << committed[r] << " is missing";
          ASSERT_EQ(**v, RoundValue(r, i));
        }
      }
      // The commit in flight at the kill may or may not be there; none after it can be.
      absl::StatusOr<std::optional<std::string>> after = (*txn)->Get(RoundKey(round, acked + 1));
      ASSERT_THAT(after, IsOk());
      EXPECT_FALSE(after->has_value());
      const Snapshot s = ReadSnapshot(**txn);
      EXPECT_EQ(s.error, "");
      EXPECT_EQ(s.spill_keys, 0) << "round " << round << ": the killed transaction is visible";
      txn->reset();
      // The in-flight commit, if it made it, counts from now on.
      absl::StatusOr<std::optional<std::string>> in_flight = (*db)->Get(RoundKey(round, acked));
      ASSERT_THAT(in_flight, IsOk());
      if (in_flight->has_value()) committed[round] = acked + 1;
      absl::StatusOr<CheckResult> check = (*db)->Check();
      ASSERT_THAT(check, IsOk());
      EXPECT_THAT(check->problems, ::testing::IsEmpty()) << "round " << round;
      // A checkpoint is not held back by the dead reader's pin.
      absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kFull);
      ASSERT_THAT(r, IsOk());
      EXPECT_FALSE(r->blocked);
      // And the database takes new commits on top of the recovered log.
      ASSERT_THAT((*db)->Put(absl::StrCat("after_round", round), "x"), IsOk());
    }
    // This opener was the last to close.
    EXPECT_EQ(ExistingLogs(mode(), path), "");
    EXPECT_FALSE(Exists(path + "-shm"));
    std::printf("round %d: %d commits acknowledged before the kill (%s)\n", round, acked,
                pause ? "paused" : "mid-loop");
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions(mode(), SyncLevel::kFull));
  ASSERT_THAT(db, IsOk());
  for (int r = 0; r < rounds; ++r) {
    EXPECT_EQ(**(*db)->Get(absl::StrCat("after_round", r)), "x");
    for (int i = 0; i < committed[r]; ++i) {
      absl::StatusOr<std::optional<std::string>> v = (*db)->Get(RoundKey(r, i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value()) << "round " << r << " key " << i;
    }
  }
  absl::StatusOr<CheckResult> check = (*db)->Check();
  ASSERT_THAT(check, IsOk());
  EXPECT_THAT(check->problems, ::testing::IsEmpty());
  db->reset();
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen

constexpr int kParentKeys = 300;

// Creates the database, keeps it open with a read snapshot taken before the parent writes, and
// checks what it reads after the parent closed. Steps are driven by bytes on two pipes.
int HolderMain(const std::string& path, JournalMode mode, int to_parent, int from_parent) {
  int code = kExitOk;
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions(mode));
    if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
    absl::Status s = (*db)->Put("k", "v0");
    if (!s.ok()) return StatusFail(s, "holder put");
    absl::StatusOr<std::unique_ptr<ReadTransaction>> old = (*db)->BeginRead();
    if (!old.ok()) return StatusFail(old.status(), "holder BeginRead");
    char c = 'o';
    if (write(to_parent, &c, 1) != 1) return ChildFail(kExitError, "pipe");
    // The parent opens, writes and closes.
    if (read(from_parent, &c, 1) != 1) return ChildFail(kExitError, "pipe");
    // The old snapshot is unchanged; a new one sees everything the parent wrote.
    absl::StatusOr<std::optional<std::string>> v = (*old)->Get("k");
    if (!v.ok() || !v->has_value() || **v != "v0") {
      return ChildFail(kExitBadSum, "the old snapshot does not read v0");
    }
    absl::StatusOr<std::optional<std::string>> p = (*old)->Get("p0");
    if (!p.ok() || p->has_value()) return ChildFail(kExitBadSum, "the old snapshot sees p0");
    old->reset();
    absl::StatusOr<std::unique_ptr<ReadTransaction>> now = (*db)->BeginRead();
    if (!now.ok()) return StatusFail(now.status(), "holder BeginRead");
    v = (*now)->Get("k");
    if (!v.ok() || !v->has_value() || **v != "v1") {
      return ChildFail(kExitMissing, "a new snapshot does not read the parent's v1");
    }
    for (int i = 0; i < kParentKeys; ++i) {
      p = (*now)->Get(absl::StrCat("p", i));
      if (!p.ok() || !p->has_value() || **p != std::string(100, 'p')) {
        return ChildFail(kExitMissing, absl::StrCat("the parent's p", i, " is missing"));
      }
    }
    now->reset();
    absl::StatusOr<CheckResult> check = (*db)->Check();
    if (!check.ok()) return StatusFail(check.status(), "holder Check");
    if (!check->ok()) code = ChildFail(kExitError, "holder Check: " + check->problems[0]);
    // And it still writes.
    s = (*db)->Put("k", "v2");
    if (!s.ok()) return StatusFail(s, "holder put");
    if (!MissingLogs(mode, path).empty() || !Exists(path + "-shm")) {
      return ChildFail(kExitError, "a log or -shm went away while the holder had them open");
    }
  }  // the last close
  return code;
}

TEST_P(WalMultiProcessTest, LastCloseRemovesWalAndShmUnlessAnotherProcessHasItOpen) {
  const std::string dir = TempDir("jkv_wal_last");
  const std::string path = dir + "/last.db";
  int up[2], down[2];
  ASSERT_EQ(pipe(up), 0);
  ASSERT_EQ(pipe(down), 0);
  ChildGuard guard;
  const pid_t child = guard.Add(Spawn([&] {
    close(up[0]);
    close(down[1]);
    return HolderMain(path, mode(), up[1], down[0]);
  }));
  ASSERT_GT(child, 0);
  close(up[1]);
  close(down[0]);
  char c = 0;
  ASSERT_EQ(read(up[0], &c, 1), 1) << "the holder failed before it was ready";
  ASSERT_EQ(MissingLogs(mode(), path), "");
  ASSERT_TRUE(Exists(path + "-shm"));
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions(mode()));
    ASSERT_THAT(db, IsOk());
    EXPECT_EQ(**(*db)->Get("k"), "v0");
    ASSERT_THAT((*db)->Put("k", "v1"), IsOk());
    {
      JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WriteTransaction> w, (*db)->BeginWrite());
      for (int i = 0; i < kParentKeys; ++i) {
        ASSERT_THAT(w->Put(absl::StrCat("p", i), std::string(100, 'p')), IsOk());
      }
      ASSERT_THAT(w->Commit(), IsOk());
    }
    if (wal2()) {
      // PASSIVE copies the log that is not current: commit until the writer switches, so that
      // -wal, which holds the frames past the holder's snapshot, is that log.
      for (int i = 0; i < 1000 && (*db)->Stats().current_log != 1; ++i) {
        ASSERT_THAT((*db)->Put(absl::StrCat("fill", i), std::string(100, 'f')), IsOk());
      }
      ASSERT_EQ((*db)->Stats().current_log, 1) << "the writer never switched to -wal2";
    }
    // A checkpoint cannot copy past the holder's old snapshot.
    absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(CheckpointMode::kPassive);
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->blocked);
  }
  // The holder still has them open: the parent's close is not the last.
  EXPECT_EQ(MissingLogs(mode(), path), "") << "the parent's close removed a log under the holder";
  EXPECT_TRUE(Exists(path + "-shm")) << "the parent's close removed the -shm under the holder";
  ASSERT_EQ(write(down[1], &c, 1), 1);
  int status = 0;
  ASSERT_TRUE(WaitFor(child, absl::Seconds(30), &status)) << "the holder hangs";
  EXPECT_TRUE(ExitedOk(status)) << "holder " << DescribeStatus(status);
  close(up[0]);
  close(down[1]);
  // The holder was the last to close.
  EXPECT_EQ(ExistingLogs(mode(), path), "");
  EXPECT_FALSE(Exists(path + "-shm"));
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, WalOptions(mode()));
    ASSERT_THAT(db, IsOk());
    EXPECT_EQ(**(*db)->Get("k"), "v2");
    EXPECT_EQ(**(*db)->Get(absl::StrCat("p", kParentKeys - 1)), std::string(100, 'p'));
    absl::StatusOr<CheckResult> check = (*db)->Check();
    ASSERT_THAT(check, IsOk());
    EXPECT_THAT(check->problems, ::testing::IsEmpty());
  }
  EXPECT_EQ(ExistingLogs(mode(), path), "");
  EXPECT_FALSE(Exists(path + "-shm"));
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole

// Leaves the index header as a writer SIGKILLed in the middle of publishing it does
// (shm/wal_index.h: it writes copy B, then copy A): copy A's checksum no longer matches copy B.
// The next connection that reads the header must rebuild the index from the log (W6).
bool TearIndexHeader(const std::string& shm_path) {
  const int fd = open(shm_path.c_str(), O_RDWR);
  if (fd < 0) return false;
  void* p = mmap(nullptr, shm::kRegionSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the children's locks are OFD locks: closing this descriptor drops none of them
  if (p == MAP_FAILED) return false;
  uint32_t& checksum_low = *reinterpret_cast<uint32_t*>(
      static_cast<uint8_t*>(p) + shm::kHeaderAOffset + shm::kHeaderBytes - 8);
  std::atomic_ref<uint32_t>(checksum_low).fetch_xor(0x5A5A5A5A);
  munmap(p, shm::kRegionSize);
  return true;
}

struct TornShared {
  std::atomic<int> ready{0};   // the reader holds its snapshot
  std::atomic<int> stop{0};
  std::atomic<uint64_t> scans{0};
  std::atomic<int> committed{0};  // the current writer's commits are done
};

std::string TornKey(int t, int i) {
  return absl::StrFormat("key%06d", (t * 7919 + i * 104729) % 100000);
}

// Ten keys per transaction, `transactions` transactions from `first`.
int CommitBatches(Db& db, int first, int transactions) {
  for (int t = first; t < first + transactions; ++t) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
    if (!w.ok()) return StatusFail(w.status(), "BeginWrite");
    for (int i = 0; i < 10; ++i) {
      absl::Status s = (*w)->Put(TornKey(t, i), std::string(100, 'a' + t % 26));
      if (!s.ok()) return StatusFail(s, "put");
    }
    absl::Status s = (*w)->Commit();
    if (!s.ok()) return StatusFail(s, "commit");
  }
  return kExitOk;
}

Options TornOptions(JournalMode mode) {
  Options o = WalOptions(mode);
  o.page_size = 1024;
  o.checkpoint_policy = "manual";  // every commit stays in the log: the database file is far behind
  return o;
}

// Creates the database, then holds one read snapshot and scans it over and over: every scan
// must read exactly what the first one read.
int HeldSnapshotReaderMain(const std::string& path, JournalMode mode, TornShared* shared) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions(mode));
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  if (int bad = CommitBatches(**db, 0, 200); bad != kExitOk) return bad;
  absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
  if (!txn.ok()) return StatusFail(txn.status(), "BeginRead");
  auto scan = [&](std::string* out) {
    out->clear();
    std::unique_ptr<Iterator> it = (*txn)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      absl::StatusOr<absl::string_view> v = it->value_view();
      if (!v.ok()) return v.status();
      absl::StrAppend(out, it->key(), "=", *v, ";");
    }
    return it->status();
  };
  std::string expected, got;
  if (absl::Status s = scan(&expected); !s.ok()) return StatusFail(s, "first scan");
  shared->ready.store(1);
  while (shared->stop.load() == 0) {
    absl::Status s = scan(&got);
    const uint64_t scans = shared->scans.fetch_add(1) + 1;
    if (!s.ok()) {
      return ChildFail(kExitError, absl::StrCat("scan ", scans, " of the held snapshot: ",
                                                s.ToString()));
    }
    if (got != expected) {
      return ChildFail(kExitBadSum, absl::StrCat("scan ", scans, " of the held snapshot read "
                                                 "something else than the first scan"));
    }
  }
  return kExitOk;
}

// A writer that dies in the middle of publishing the index header leaves it torn, and the next
// connection that reads it rebuilds the index from the log (wal/wal_connection.h W6), while
// other processes have read transactions open on snapshots that live in the log. Each round: a
// writer process commits and is SIGKILLed, the header is left torn as a kill in
// WalIndex::WriteHeader leaves it, and a new connection reads (and so recovers). The process
// holding an old snapshot must keep reading exactly that snapshot.
TEST_P(WalMultiProcessTest, TornHeaderRecoveryKeepsOtherProcessesSnapshotsWhole) {
  const std::string dir = TempDir("jkv_wal_torn");
  const std::string path = dir + "/torn.db";
  TornShared* shared = MapShared<TornShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;
  const pid_t reader =
      guard.Add(Spawn([&] { return HeldSnapshotReaderMain(path, mode(), shared); }));
  ASSERT_GT(reader, 0);
  const absl::Time ready_by = absl::Now() + absl::Seconds(60);
  while (shared->ready.load() == 0 && absl::Now() < ready_by) {
    int status = 0;
    ASSERT_NE(waitpid(reader, &status, WNOHANG), reader) << "reader " << DescribeStatus(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(shared->ready.load(), 1) << "the reader hangs";

  const int rounds = ScaledForSanitizer(400, 150);
  int round = 0;
  int status = 0;
  bool reader_ended = false;
  for (; round < rounds && !reader_ended; ++round) {
    shared->committed.store(0);
    const pid_t writer = guard.Add(Spawn([&] {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions(mode()));
      if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
      if (int bad = CommitBatches(**db, 1000 + 5 * round, 5); bad != kExitOk) return bad;
      shared->committed.store(1);
      for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return ChildFail(kExitNotKilled, "not killed");
    }));
    ASSERT_GT(writer, 0);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (shared->committed.load() == 0 && absl::Now() < deadline) {
      ASSERT_NE(waitpid(writer, &status, WNOHANG), writer)
          << "round " << round << ": writer " << DescribeStatus(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(shared->committed.load(), 1) << "round " << round << ": the writer hangs";
    ASSERT_EQ(kill(writer, SIGKILL), 0);
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
    ASSERT_TRUE(TearIndexHeader(path + "-shm"));
    {
      // Not alone (the reader has the database open): this connection finds the header torn
      // and rebuilds the index from the log.
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, TornOptions(mode()));
      ASSERT_THAT(db, IsOk());
      absl::StatusOr<std::optional<std::string>> v = (*db)->Get(TornKey(1000 + 5 * round + 4, 9));
      ASSERT_THAT(v, IsOk());
      EXPECT_TRUE(v->has_value()) << "round " << round << ": the killed writer's last commit";
    }
    reader_ended = waitpid(reader, &status, WNOHANG) == reader;
  }
  shared->stop.store(1);
  if (!reader_ended) {
    ASSERT_TRUE(WaitFor(reader, absl::Seconds(30), &status)) << "reader hangs";
  }
  std::printf("%d writers killed and headers torn; the reader scanned its snapshot %llu times\n",
              round, static_cast<unsigned long long>(shared->scans.load()));
  EXPECT_TRUE(ExitedOk(status)) << "the process holding a snapshot through the recoveries "
                                << DescribeStatus(status) << " after " << round << " rounds";
  // The reader closed last.
  EXPECT_EQ(ExistingLogs(mode(), path), "");
  EXPECT_FALSE(Exists(path + "-shm"));
  UnmapShared(shared);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

// A reader process SIGKILLed with a snapshot pinned leaves its pin in the -shm. Checkpoints
// skip it (its slot's lock is free); the reader counts Stats and the checkpoint policy see must
// skip it too, or a policy that waits for readers to go waits for a dead one, and `jkv info`
// shows a reader that is not there.
struct PinnedShared {
  std::atomic<int> ready{0};
};

int PinnedReaderMain(const std::string& path, JournalMode mode, PinnedShared* shared) {
  Options o = WalOptions(mode);
  o.checkpoint_policy = "manual";
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  absl::StatusOr<std::unique_ptr<ReadTransaction>> txn = (*db)->BeginRead();
  if (!txn.ok()) return StatusFail(txn.status(), "BeginRead");
  shared->ready.store(1);
  for (int i = 0; i < 6000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return ChildFail(kExitNotKilled, "not killed");
}

// Records the readers the policy is told of at each commit.
class ReaderCountingPolicy final : public CheckpointPolicy {
 public:
  PolicyDecision AfterCommit(const LogSnapshot& log) override {
    last_readers.store(log.active_readers);
    return PolicyDecision::None();
  }
  std::string Name() const override { return "reader-counting"; }
  std::atomic<int> last_readers{0};
};

TEST_P(WalMultiProcessTest, ADeadProcesssPinIsNoReader) {
  const std::string dir = TempDir("jkv_wal_deadpin");
  const std::string path = dir + "/deadpin.db";
  auto policy = std::make_shared<ReaderCountingPolicy>();
  Options o = WalOptions(mode());
  o.custom_checkpoint_policy = policy;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);  // stays open: the -shm survives
  ASSERT_THAT(db, IsOk());
  ASSERT_THAT((*db)->Put("k", "0"), IsOk());
  PinnedShared* shared = MapShared<PinnedShared>();
  ASSERT_NE(shared, nullptr);
  ChildGuard guard;
  const pid_t reader = guard.Add(Spawn([&] { return PinnedReaderMain(path, mode(), shared); }));
  ASSERT_GT(reader, 0);
  const absl::Time ready_by = absl::Now() + absl::Seconds(60);
  while (shared->ready.load() == 0 && absl::Now() < ready_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(shared->ready.load(), 1) << "the reader hangs";
  ASSERT_THAT((*db)->Put("k", "1"), IsOk());
  EXPECT_EQ((*db)->Stats().pinned_connections, 1);  // alive, it is a reader
  EXPECT_EQ(policy->last_readers.load(), 1);
  ASSERT_EQ(kill(reader, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
  ASSERT_THAT((*db)->Put("k", "2"), IsOk());
  const DbStats stats = (*db)->Stats();
  std::printf("after the reader's SIGKILL: %d pinned connections, the policy told of %d readers\n",
              stats.pinned_connections, policy->last_readers.load());
  EXPECT_EQ(stats.pinned_connections, 0) << "the dead process's pin is counted";
  EXPECT_EQ(policy->last_readers.load(), 0) << "the policy is told of a dead reader";
  // And it holds no checkpoint back.
  JKV_ASSERT_OK_AND_ASSIGN(CheckpointResult r, (*db)->Checkpoint(CheckpointMode::kPassive));
  EXPECT_FALSE(r.blocked);
  // (WAL2 copies the non-current log only; the current one holds the last commits.)
  if (!wal2()) {
    EXPECT_EQ((*db)->Stats().log_unbackfilled, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, WalMultiProcessTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return ModeName(info.param);
                         });

}  // namespace
}  // namespace journalkv
