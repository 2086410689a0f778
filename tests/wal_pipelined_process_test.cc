// Pipelined commits (WriteTransaction::CommitAsync, pager/commit_pipeline.h N1-N5) in a real
// process killed with SIGKILL, WAL and WAL2 at sync FULL. A child pipelines commits (a window
// of 2 to 8 in flight; commit i writes key a<i>) and, each time a commit's Wait returns OK,
// writes i to a pipe. The parent kills it at a random moment, or once the child stopped one of
// its threads at a hook point (the point's n-th visit: the flusher before its flush, after its
// sync and before the publish, after it settled; the writer after an append, and in a large
// transaction whose pages spilled, before its commit: every 7th commit is larger than the
// cache and spills while earlier ones are pending), reads every
// acknowledgement the pipe still holds, and then opens the database:
//   - every acknowledged commit is there, with its value, and the keys there are a prefix of
//     the commit order (a0 .. a<n-1>, nothing after a gap);
//   - a large commit is there whole with its a-key or not at all (a spilled transaction that
//     never committed leaves nothing);
//   - Check() is clean;
//   - in some rounds two processes open it at once (both recover and check it, concurrently);
//   - in some rounds a second process commits meanwhile with the synchronous Commit at sync
//     NORMAL (keys b<j>, acknowledged through its own pipe), before, across and after the
//     kill: its commits go on past the dead writer's frames, and both processes'
//     acknowledged commits are there (a process kill loses nothing the OS was given, so
//     NORMAL's are kept too), each as a prefix.
// JKV_WAL_MP_SEED=n changes the random choices.
#include <poll.h>

#include <cstring>
#include <deque>

#include "tests/wal_process_testing.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::ScaledForSanitizer;
using namespace ::journalkv::wal_process_testing;  // NOLINT: the multi-process helpers

std::string AKey(int i) { return absl::StrFormat("a%06d", i); }
std::string BKey(int i) { return absl::StrFormat("b%06d", i); }
std::string AValue(int i) { return absl::StrCat("pipelined ", i, std::string(60 + i % 90, 'p')); }
std::string BValue(int i) { return absl::StrCat("normal ", i, std::string(40 + i % 50, 'n')); }
// Every kBigEvery-th pipelined commit also writes kBigKeys keys s<i>_<j>: larger than the
// 8-page cache, so it spills frames into the log while earlier commits are pending.
constexpr int kBigEvery = 7;
constexpr int kBigKeys = 40;
std::string SKey(int i, int j) { return absl::StrFormat("s%06d_%02d", i, j); }
std::string SValue(int i, int j) { return absl::StrCat(i, "/", j, std::string(200, 's')); }

constexpr int32_t kStopped = -1;  // the child stopped at its hook point
// Not a hook of the engine: the pipeliner's own stop, in a large transaction whose pages have
// spilled into the log, before its commit, with earlier commits pending.
constexpr char kSpilled[] = "test:spilled";

// The child's hook point, set before the child's database opens (one process each).
const char* stop_point = nullptr;
int stop_at = 0;
int stop_fd = -1;
std::atomic<int> stop_visits{0};

void StopHook(const char* point) {
  if (stop_point == nullptr || std::strcmp(point, stop_point) != 0) return;
  if (stop_visits.fetch_add(1) + 1 != stop_at) return;
  const int32_t marker = kStopped;
  (void)!write(stop_fd, &marker, sizeof(marker));
  while (true) pause();  // this thread stays here; the parent kills the process
}

bool WriteInt(int fd, int32_t v) { return write(fd, &v, sizeof(v)) == sizeof(v); }

// Pipelines commits until killed: at most `window` in flight, each acknowledged on `fd` once
// its Wait returned OK.
int PipelinerMain(const std::string& path, JournalMode mode, int fd, int window) {
  Options o = WalOptions(mode, SyncLevel::kFull);
  o.page_size = 1024;
  o.cache_pages = 8;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  std::deque<std::pair<int, PendingCommit>> in_flight;
  for (int i = 0; i < 200000; ++i) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
    if (!w.ok()) return StatusFail(w.status(), "pipeliner BeginWrite");
    absl::Status s = (*w)->Put(AKey(i), AValue(i));
    for (int j = 0; s.ok() && i % kBigEvery == 0 && j < kBigKeys; ++j) {
      s = (*w)->Put(SKey(i, j), SValue(i, j));
    }
    if (!s.ok()) return StatusFail(s, "pipeliner put");
    if (i % kBigEvery == 0 && i > 0) StopHook(kSpilled);  // stops at its visit stop_at
    in_flight.emplace_back(i, (*w)->CommitAsync());
    while (static_cast<int>(in_flight.size()) >= window) {
      const auto [k, h] = in_flight.front();
      in_flight.pop_front();
      s = h.Wait();
      if (!s.ok()) return StatusFail(s, absl::StrCat("pipelined commit ", k));
      if (!WriteInt(fd, k)) return ChildFail(kExitError, "pipe");
    }
    if (i == 3 * kBigEvery && (*db)->Stats().spills == 0) {
      return ChildFail(kExitNoSpill, "the large commits did not spill");
    }
  }
  return ChildFail(kExitNotKilled, "not killed");
}

// Commits with the synchronous Commit at sync NORMAL until *stop, acknowledging on `fd`.
int NormalWriterMain(const std::string& path, JournalMode mode, int fd, std::atomic<int>* stop) {
  Options o = WalOptions(mode, SyncLevel::kNormal);
  o.page_size = 1024;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return ChildFail(kExitOpenFailed, db.status().ToString());
  for (int j = 0; stop->load() == 0; ++j) {
    absl::Status s = (*db)->Put(BKey(j), BValue(j));
    if (!s.ok()) return StatusFail(s, absl::StrCat("normal commit ", j));
    if (!WriteInt(fd, j)) return ChildFail(kExitError, "pipe");
  }
  absl::Status closed = (*db)->Close();
  if (!closed.ok()) return StatusFail(closed, "normal writer close");
  return kExitOk;
}

// Reads what `fd` holds now (up to `wait`, or to its end when `to_end`): the highest
// acknowledgement into *max, the stop marker into *stopped. Returns false at the pipe's end.
bool ReadAcks(int fd, absl::Duration wait, int* max, bool* stopped, std::string* partial) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(wait))) <= 0) return true;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n <= 0) return false;
  partial->append(buf, static_cast<size_t>(n));
  size_t used = 0;
  for (; used + sizeof(int32_t) <= partial->size(); used += sizeof(int32_t)) {
    int32_t v;
    std::memcpy(&v, partial->data() + used, sizeof(v));
    if (v == kStopped) {
      *stopped = true;
    } else {
      *max = std::max(*max, static_cast<int>(v));
    }
  }
  partial->erase(0, used);
  return true;
}

// Reads the rest of the pipe (its writers are dead or done).
void DrainAcks(int fd, int* max, bool* stopped) {
  std::string partial;
  while (ReadAcks(fd, absl::Seconds(5), max, stopped, &partial)) {
  }
}

// "" when the keys of `key` are exactly 0 .. n-1 with n > acked, with their values.
template <typename KeyFn, typename ValueFn>
std::string CheckPrefix(Db& db, const char* prefix, int acked, KeyFn key, ValueFn value,
                        int* found) {
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = db.BeginRead();
  if (!r.ok()) return r.status().ToString();
  std::unique_ptr<Iterator> it = (*r)->NewIterator();
  int n = 0;
  for (it->Seek(prefix); it->Valid() && absl::StartsWith(it->key(), prefix); it->Next(), ++n) {
    if (it->key() != key(n)) {
      return absl::StrCat("key ", it->key(), " where ", key(n), " was due: not a prefix of the ",
                          "commit order (", n, " keys before it)");
    }
    absl::StatusOr<absl::string_view> v = it->value_view();
    if (!v.ok()) return v.status().ToString();
    if (*v != value(n)) return absl::StrCat("wrong value of ", key(n));
  }
  if (!it->status().ok()) return it->status().ToString();
  *found = n;
  if (n <= acked) {
    return absl::StrCat("acknowledged commit ", acked, " lost: only ", n, " ", prefix,
                        " keys survive");
  }
  return "";
}

// Opens `path`, checks both writers' keys and Check(); "" when all holds.
std::string Verify(const std::string& path, JournalMode mode, int acked_a, int acked_b,
                   int* found_a) {
  Options o = WalOptions(mode, SyncLevel::kFull);
  o.page_size = 1024;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  if (!db.ok()) return absl::StrCat("open: ", db.status().ToString());
  int found_b = 0;
  std::string p = CheckPrefix(**db, "a", acked_a, AKey, AValue, found_a);
  if (!p.empty()) return p;
  p = CheckPrefix(**db, "b", acked_b, BKey, BValue, &found_b);
  if (!p.empty()) return p;
  // The large commits: all of one there with its a-key, none of one whose a-key is not (a
  // spilled transaction never committed leaves nothing).
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
  if (!r.ok()) return r.status().ToString();
  std::unique_ptr<Iterator> it = (*r)->NewIterator();
  it->Seek("s");
  for (int i = 0; i < *found_a; i += kBigEvery) {
    for (int j = 0; j < kBigKeys; ++j, it->Next()) {
      if (!it->Valid() || it->key() != SKey(i, j)) {
        return absl::StrCat("commit ", i, " is there without its key ", SKey(i, j));
      }
      absl::StatusOr<absl::string_view> v = it->value_view();
      if (!v.ok() || *v != SValue(i, j)) return absl::StrCat("wrong value of ", SKey(i, j));
    }
  }
  if (it->Valid() && absl::StartsWith(it->key(), "s")) {
    return absl::StrCat("key ", it->key(), " of a commit that is not there (", *found_a,
                        " pipelined commits are)");
  }
  if (!it->status().ok()) return it->status().ToString();
  it.reset();
  r->reset();
  absl::StatusOr<CheckResult> check = (*db)->Check();
  if (!check.ok()) return absl::StrCat("check: ", check.status().ToString());
  if (!check->ok()) return absl::StrCat("check: ", check->problems.front());
  return "";
}

class PipelinedKillTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  JournalMode mode() const { return GetParam(); }
};

TEST_P(PipelinedKillTest, KilledPipelinerKeepsEveryAcknowledgedCommitAsAPrefix) {
  const std::string dir = TempDir("jkv_pipelined_kill");
  std::mt19937_64 rng(Seed() * 31 + static_cast<uint64_t>(mode()));
  // Odd rounds stop at these in turn (a stop in a spilled transaction twice: once recovered
  // by one opener, once by two at once; rounds 5 and 11 have the NORMAL writer alongside).
  const char* const kPoints[] = {"pipeline:flushing", kSpilled,           "flush:synced",
                                 kSpilled,            "pipeline:settled", "commit:appended",
                                 "sync:done"};
  const int rounds = ScaledForSanitizer(14, 8);
  int stopped_rounds = 0, live_rounds = 0, beyond_acked = 0;
  for (int round = 0; round < rounds && !HasFailure(); ++round) {
    const std::string path = absl::StrCat(dir, "/r", round, ".db");
    const bool at_hook = round % 2 == 1;
    const bool live = round % 3 == 2;
    const bool two_openers = round % 3 == 1;
    const int window = 2 + static_cast<int>(rng() % 7);
    const char* point = kPoints[(round / 2) % 7];
    const int visit =
        point == kSpilled ? 2 + static_cast<int>(rng() % 4) : 5 + static_cast<int>(rng() % 40);
    SCOPED_TRACE(absl::StrCat("round ", round, " window ", window,
                              at_hook ? absl::StrCat(" stopped at ", point, " #", visit)
                                      : std::string(" random kill"),
                              live ? ", a NORMAL writer alongside" : ""));
    ChildGuard guard;
    std::atomic<int>* stop_b = MapShared<std::atomic<int>>();
    ASSERT_NE(stop_b, nullptr);
    // The database exists (and is in WAL mode) before either child opens it.
    {
      Options o = WalOptions(mode(), SyncLevel::kFull);
      o.page_size = 1024;
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
      ASSERT_THAT(db, IsOk());
    }
    int a_pipe[2], b_pipe[2] = {-1, -1};
    ASSERT_EQ(pipe(a_pipe), 0);
    const pid_t a = guard.Add(Spawn([&] {
      close(a_pipe[0]);
      if (at_hook) {
        stop_point = point;
        stop_at = visit;
        stop_fd = a_pipe[1];
        wal::SetWalHookForTesting(&StopHook);
      }
      return PipelinerMain(path, mode(), a_pipe[1], window);
    }));
    ASSERT_GT(a, 0);
    close(a_pipe[1]);
    pid_t b = -1;
    if (live) {
      ASSERT_EQ(pipe(b_pipe), 0);
      b = guard.Add(Spawn([&] {
        close(a_pipe[0]);
        close(b_pipe[0]);
        return NormalWriterMain(path, mode(), b_pipe[1], stop_b);
      }));
      ASSERT_GT(b, 0);
      close(b_pipe[1]);
    }
    // Until the kill: enough acknowledgements, then a random delay, or the stop marker.
    int acked_a = -1, acked_b = -1;
    bool stopped = false;
    std::string partial_a, partial_b;
    const int want = 10 + static_cast<int>(rng() % 60);
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      ASSERT_TRUE(ReadAcks(a_pipe[0], absl::Milliseconds(2), &acked_a, &stopped, &partial_a))
          << "the pipeliner ended before it was killed";
      if (live) {
        bool ignored = false;
        ReadAcks(b_pipe[0], absl::Milliseconds(0), &acked_b, &ignored, &partial_b);
      }
      if (at_hook ? stopped : acked_a >= want) break;
    }
    ASSERT_TRUE(at_hook ? stopped : acked_a >= want) << "the pipeliner made no progress";
    if (!at_hook) absl::SleepFor(absl::Microseconds(rng() % 20000));
    ASSERT_EQ(kill(a, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(a, &status, 0), a);
    ASSERT_TRUE(KilledBySigkill(status)) << DescribeStatus(status);
    DrainAcks(a_pipe[0], &acked_a, &stopped);
    close(a_pipe[0]);
    stopped_rounds += stopped;
    if (live) {
      // The NORMAL writer goes on past the dead one's frames for a while, then stops.
      const int at_kill = acked_b;
      const absl::Time until = absl::Now() + absl::Seconds(20);
      while (acked_b < at_kill + 20 && absl::Now() < until) {
        ASSERT_TRUE(ReadAcks(b_pipe[0], absl::Milliseconds(2), &acked_b, &stopped, &partial_b))
            << "the NORMAL writer ended early";
      }
      stop_b->store(1);
      bool ignored = false;
      DrainAcks(b_pipe[0], &acked_b, &ignored);
      close(b_pipe[0]);
      ASSERT_TRUE(WaitFor(b, absl::Seconds(30), &status));
      ASSERT_TRUE(ExitedOk(status)) << "the NORMAL writer " << DescribeStatus(status);
      EXPECT_GT(acked_b, at_kill) << "the NORMAL writer made no commit after the kill";
      ++live_rounds;
    }
    if (two_openers) {
      // Two processes recover at once; each checks what it finds.
      pid_t openers[2];
      for (pid_t& p : openers) {
        p = guard.Add(Spawn([&] {
          int found = 0;
          const std::string problem = Verify(path, mode(), acked_a, acked_b, &found);
          return problem.empty() ? kExitOk : ChildFail(kExitMissing, problem);
        }));
        ASSERT_GT(p, 0);
      }
      for (pid_t p : openers) {
        ASSERT_TRUE(WaitFor(p, absl::Seconds(30), &status));
        EXPECT_TRUE(ExitedOk(status)) << "a concurrent opener " << DescribeStatus(status);
      }
    }
    int found_a = 0;
    EXPECT_EQ(Verify(path, mode(), acked_a, acked_b, &found_a), "");
    beyond_acked += found_a - 1 > acked_a;
    std::printf("round %d: %d pipelined commits acknowledged, %d there%s%s\n", round,
                acked_a + 1, found_a, stopped ? absl::StrCat(", stopped at ", point).c_str() : "",
                live ? absl::StrCat(", ", acked_b + 1, " NORMAL commits").c_str() : "");
    UnmapShared(stop_b);
  }
  EXPECT_GT(stopped_rounds, 0);
  EXPECT_GT(live_rounds, 0);
  std::printf("%d rounds found commits past the last acknowledged one\n", beyond_acked);
  if (!HasFailure()) {
    const std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelinedKillTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const auto& info) { return ModeName(info.param); });

}  // namespace
}  // namespace journalkv
