// Power cuts on the real kernel (issue 21, part 1): every durability claim elsewhere is tested
// against vfs/'s power-loss model; this checks the claims against what ext4 and xfs really keep.
//
// The disk: an xfs image with reflinks, loop-mounted as the host; on it the image of the file
// system under test (ext4 or xfs), attached with direct I/O (`losetup --direct-io=on`), so that
// every write the guest file system issues lands in the image file at once, and mounted. A
// reflink copy of that image (FICLONE, atomic) while a workload runs holds exactly what the
// guest had issued to its disk and none of its page cache: a power cut. The copy is then
// attached and mounted (the guest's journal replays), and the database opened and checked.
//
// The workload runs in a child process (or three taking turns: each transaction reads the
// last commit's number and makes the next, so the commits form one order): one-key commits, a
// spilling transaction every tenth commit, and in WAL modes a checkpoint every 25th (RESTART
// every 50th); a shared counter tells the parent which commits were acknowledged. The parent cuts at random moments. At each cut:
//   - Check() passes and the database holds exactly the state after some commit L, that is,
//     a prefix of the commit order (atomic);
//   - at `full` and `extra` (and in the rollback modes at `normal`), L is at least the last
//     commit acknowledged before the cut began (durable); WAL's `normal` may lose the newest
//     ones (README, "Journal modes");
//   - L is at most one past the last acknowledged after the cut ended (one per process).
// Every other cut (every one in the long tier) is also cut while its recovery runs: mounted
// with direct I/O in turn, opened by a child process (hot-journal rollback, or the WAL's index
// rebuilt and the log checkpointed at close), and copied again at a random moment in the
// first 20 ms before the child is killed; that cut of a cut must pass the same checks against
// the same commits (a recovery cut short loses nothing the first cut held durably).
// `off` is the negative control: it must lose acknowledged commits in some cut (here it
// loses them in every cut: nothing reaches the disk before the guest's writeback). SQLite is
// the harness's own control: the same workload in WAL at FULL and DELETE at EXTRA must pass
// (DELETE at FULL is run too and may lose the newest commit, as SQLite documents).
// `memory` and `off` journals are left out: they are not crash-atomic by design.
//
// Skips with one line where the process may not set up loop devices and mounts, or where
// mkfs.xfs is missing (Debian: xfsprogs). Prints cuts and commits checked per configuration.
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "pager/pager_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/crash_sweep.h"
#include "tests/cut_disk.h"
#include "vfs/scratch_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

constexpr int kKeys = 200;   // one-key commits rotate over these
constexpr int kSpill = 300;  // keys of the spilling transaction
std::string Key(int i) { return absl::StrFormat("k%04d", i); }
std::string SpillKey(int i) { return absl::StrFormat("s%04d", i); }
std::string Value(int commit, size_t size) {
  std::string v = absl::StrCat("c", commit, "-");
  v.resize(size, 'v');
  return v;
}

// Commit c (1, 2, ...): what it writes.
void Apply(int c, std::map<std::string, std::string>* state) {
  if (c % 10 == 0) {
    for (int i = 0; i < kSpill; ++i) (*state)[SpillKey(i)] = Value(c, 300);
  } else {
    (*state)[Key(c % kKeys)] = Value(c, 100);
  }
  (*state)["last"] = absl::StrCat(c);
}

struct Config {
  std::string guest_fs;
  JournalMode mode;
  SyncLevel sync;
  bool sqlite = false;  // the control: the same workload through SQLite (kWal or kDelete)
  int processes = 1;    // writer processes, each committing the next commit in turn
};

std::string Name(const Config& c) {
  return absl::StrCat(c.guest_fs, c.sqlite ? "_sqlite_" : "_", JournalModeName(c.mode), "_",
                      SyncLevelName(c.sync), c.processes > 1 ? absl::StrCat("_x", c.processes) : "");
}

bool Wal(JournalMode m) { return m == JournalMode::kWal || m == JournalMode::kWal2; }

Options Opts(const Config& c) {
  Options o;
  o.journal_mode = c.mode;
  o.sync = c.sync;
  o.cache_pages = 64;  // the 300-key transaction spills
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 40;
  return o;
}

// The SQLite control: a table of the same keys, the same commits, PRAGMA synchronous=FULL
// (EXTRA for kExtra).
class Sqlite {
 public:
  static std::unique_ptr<Sqlite> Open(const std::string& path, const Config& c, bool create) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      return nullptr;
    }
    auto s = std::unique_ptr<Sqlite>(new Sqlite(db));
    const std::string mode = c.mode == JournalMode::kWal ? "wal" : "delete";
    if (!s->Exec(c.sync == SyncLevel::kExtra ? "PRAGMA synchronous=EXTRA"
                                              : "PRAGMA synchronous=FULL") ||
        (create && (!s->Exec(absl::StrCat("PRAGMA journal_mode=", mode)) ||
                    !s->Exec("CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v TEXT)")))) {
      return nullptr;
    }
    return s;
  }
  ~Sqlite() { sqlite3_close(db_); }
  bool Exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  bool Commit(const std::map<std::string, std::string>& writes) {
    if (!Exec("BEGIN")) return false;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO kv VALUES(?, ?)", -1, &st, nullptr) !=
        SQLITE_OK) {
      return false;
    }
    bool ok = true;
    for (const auto& [k, v] : writes) {
      sqlite3_bind_text(st, 1, k.data(), static_cast<int>(k.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 2, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
      ok = ok && sqlite3_step(st) == SQLITE_DONE;
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return ok && Exec("COMMIT");
  }
  // Every row, or "" and *rows when integrity_check passes; otherwise what is wrong.
  std::string ReadAll(std::map<std::string, std::string>* rows) {
    std::string integrity;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA integrity_check", -1, &st, nullptr) != SQLITE_OK) {
      return absl::StrCat("integrity_check: ", sqlite3_errmsg(db_));
    }
    if (sqlite3_step(st) == SQLITE_ROW) {
      integrity = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    if (integrity != "ok") return absl::StrCat("integrity_check: ", integrity);
    if (sqlite3_prepare_v2(db_, "SELECT k, v FROM kv", -1, &st, nullptr) != SQLITE_OK) {
      return absl::StrCat("select: ", sqlite3_errmsg(db_));
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      (*rows)[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] =
          reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? "" : absl::StrCat("select: ", sqlite3_errmsg(db_));
  }

 private:
  explicit Sqlite(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

struct Cut {
  std::string name;
  int before = 0;  // acknowledged when the cut began
  int after = 0;   // and when it ended
};

// What a cut's database holds: exactly the state after some commit *last, no later than the
// cut allows, and (durable) no earlier than the last acknowledged before it.
std::string CheckState(std::map<std::string, std::string>& got, const Cut& cut, bool durable,
                       int processes, int* last) {
  if (!absl::SimpleAtoi(got["last"], last)) return "no commit number";
  std::map<std::string, std::string> expect = {{"last", "0"}};
  for (int c = 1; c <= *last; ++c) Apply(c, &expect);
  if (got != expect) {
    return absl::StrCat("not the state after commit ", *last, " (", got.size(), " keys, ",
                        expect.size(), " expected)");
  }
  // Each writer process may have committed one more than it acknowledged when the cut ended.
  if (*last > cut.after + processes) {
    return absl::StrCat("commit ", *last, " is from the future");
  }
  if (durable && *last < cut.before) {
    return absl::StrCat("an acknowledged commit is lost: it holds commit ", *last);
  }
  return "";
}

// Reads of the checked databases served by the read map (JOURNALKV_TEST_MMAP_SIZE, the target
// power_cut_mmap_test), in this process.
std::atomic<uint64_t>& MapReadsOfChecks() {
  static std::atomic<uint64_t> reads{0};
  return reads;
}

// Opens the database of a mounted cut and checks it: "" or what is wrong; *last is the commit
// whose state it holds (-1 if none could be read). The control (`off`) checks nothing.
std::string Verify(const Config& config, const std::string& path, const Cut& cut, bool durable,
                   int* last) {
  *last = -1;
  std::map<std::string, std::string> got;
  if (config.sqlite) {
    std::unique_ptr<Sqlite> db = Sqlite::Open(path, config, /*create=*/false);
    if (db == nullptr) return "SQLite cannot open it";
    if (std::string problem = db->ReadAll(&got); !problem.empty()) return problem;
    return CheckState(got, cut, durable, config.processes, last);
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, Opts(config));
  if (config.sync == SyncLevel::kOff) {
    if (db.ok()) {
      absl::StatusOr<std::optional<std::string>> v = (*db)->Get("last");
      if (v.ok() && v->has_value()) (void)absl::SimpleAtoi(**v, last);
    }
    return "";
  }
  if (!db.ok()) return absl::StrCat("open: ", db.status().ToString());
  absl::StatusOr<CheckResult> check = (*db)->Check();
  if (!check.ok()) return absl::StrCat("check: ", check.status().ToString());
  if (!check->ok()) return absl::StrCat("Check(): ", check->problems.front());
  MapReadsOfChecks().fetch_add((*db)->Stats().map_reads);  // power_cut_mmap_test's
  {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = (*db)->BeginRead();
    if (!r.ok()) return absl::StrCat("begin read: ", r.status().ToString());
    std::unique_ptr<Iterator> it = (*r)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      absl::StatusOr<std::string> value = it->value();
      if (!value.ok()) return absl::StrCat("read: ", value.status().ToString());
      got[std::string(it->key())] = *value;
    }
    if (!it->status().ok()) return absl::StrCat("scan: ", it->status().ToString());
  }
  if (std::string problem = CheckState(got, cut, durable, config.processes, last);
      !problem.empty()) {
    return problem;
  }
  if (absl::Status s = (*db)->Close(); !s.ok()) return absl::StrCat("close: ", s.ToString());
  return "";
}

class PowerCutTest : public ::testing::TestWithParam<Config> {};

TEST_P(PowerCutTest, EveryCutHoldsAPrefixOfTheCommitsAndEveryAcknowledgedOneWhereDurable) {
  const Config& config = GetParam();
  // With the read map on (power_cut_mmap_test) outside the long tier: journalkv with one writer
  // on ext4, every mode and level (the map is a reader's path; xfs, three writers and SQLite's
  // control run in power_cut_test without it).
  const bool mapped = pager::DefaultMmapSize() > 0;
  if (mapped && !testing::LongTier() &&
      !(config.guest_fs == "ext4" && !config.sqlite && config.processes == 1)) {
    GTEST_SKIP() << "with the map on outside the long tier: a sample of the configurations";
  }
  const uint64_t map_reads_before = MapReadsOfChecks().load();
  std::unique_ptr<CutDisk> disk;
  const std::string why = CutDisk::Make(config.guest_fs, &disk);
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string path = disk->guest() + "/x.db";
  if (config.mode == JournalMode::kAtomic && !vfs::HasAtomicBatches(disk->guest())) {
    GTEST_SKIP() << "the xfs guest has no exchange-range (Linux 6.10+)";
  }
  if (config.sqlite) {
    std::unique_ptr<Sqlite> db = Sqlite::Open(path, config, /*create=*/true);
    ASSERT_NE(db, nullptr) << "SQLite cannot create " << path;
    ASSERT_TRUE(db->Commit({{"last", "0"}}));
  } else {
    Options o = Opts(config);
    o.sync = SyncLevel::kFull;  // the starting state is on the disk whatever the level
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put("last", "0"), IsOk());
    ASSERT_THAT((*db)->Close(), IsOk());
  }
  ASSERT_TRUE(Shell(absl::StrCat("sync -f ", path)));
  auto* acked = static_cast<std::atomic<int>*>(::mmap(nullptr, sizeof(std::atomic<int>),
                                                      PROT_READ | PROT_WRITE,
                                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(acked, MAP_FAILED);
  new (acked) std::atomic<int>(0);
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  pid_t child = 1;
  for (int p = 0; p < config.processes && child > 0; ++p) {
    child = ::fork();
    if (child > 0) children.push_back(child);
  }
  if (child == 0 && config.sqlite) {
    std::unique_ptr<Sqlite> db = Sqlite::Open(path, config, /*create=*/false);
    if (db == nullptr) ::_exit(10);
    for (int c = 1;; ++c) {
      std::map<std::string, std::string> writes;
      Apply(c, &writes);
      if (!db->Commit(writes)) ::_exit(13);
      acked->store(c);
      if (config.mode == JournalMode::kWal && c % 25 == 0) {
        db->Exec(c % 50 == 0 ? "PRAGMA wal_checkpoint(RESTART)" : "PRAGMA wal_checkpoint(PASSIVE)");
      }
    }
  }
  if (child == 0) {
    // Several processes take turns: each transaction reads the last commit's number and
    // commits the next one, so the commits form one order whatever process makes each.
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, Opts(config));
    if (!db.ok()) ::_exit(10);
    while (true) {
      absl::StatusOr<std::unique_ptr<WriteTransaction>> w = (*db)->BeginWrite();
      if (absl::IsUnavailable(w.status())) continue;  // busy: another one writes
      if (!w.ok()) ::_exit(11);
      absl::StatusOr<std::optional<std::string>> last = (*w)->Get("last");
      int c = 0;
      if (!last.ok() || !last->has_value() || !absl::SimpleAtoi(**last, &c)) ::_exit(15);
      ++c;
      std::map<std::string, std::string> writes;
      Apply(c, &writes);
      for (const auto& [k, v] : writes) {
        if (!(*w)->Put(k, v).ok()) ::_exit(12);
      }
      if (!(*w)->Commit().ok()) ::_exit(13);
      for (int seen = acked->load(); seen < c && !acked->compare_exchange_weak(seen, c);) {
      }
      if (Wal(config.mode) && c % 25 == 0) {
        const CheckpointMode m = c % 50 == 0 ? CheckpointMode::kRestart : CheckpointMode::kPassive;
        absl::StatusOr<CheckpointResult> r = (*db)->Checkpoint(m);
        if (!r.ok() && !absl::IsUnavailable(r.status()) && !absl::IsResourceExhausted(r.status())) {
          ::_exit(14);  // only busy or a full disk is allowed
        }
      }
    }
  }
  ASSERT_GT(child, 0);
  std::vector<Cut> cuts;
  std::mt19937_64 rng(testing::DrawSeed(absl::StrCat("power_cut/", Name(config)), 0));
  const int n = testing::TierScaled(6, 3, 60);
  while (acked->load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 40));
    Cut cut{absl::StrCat("cut", i, ".img"), acked->load(), 0};
    ASSERT_TRUE(disk->Cut(cut.name)) << "reflink copy failed";
    cut.after = acked->load();
    cuts.push_back(cut);
  }
  for (pid_t c : children) ::kill(c, SIGKILL);
  int status = 0;
  for (pid_t c : children) {
    ::waitpid(c, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "a workload process ended by itself: exit " << WEXITSTATUS(status);
  }
  const int commits = acked->load();
  // SQLite's DELETE mode at FULL does not sync the folder after it deletes the journal, its
  // commit point, so the journal can come back and roll the newest commit back (SQLite's
  // documentation of PRAGMA synchronous: EXTRA adds that sync); it is run to show that loss.
  const bool durable =
      config.sqlite ? !(config.mode == JournalMode::kDelete && config.sync == SyncLevel::kFull)
                    : config.sync == SyncLevel::kFull || config.sync == SyncLevel::kExtra ||
                          (config.sync == SyncLevel::kNormal && !Wal(config.mode) &&
                           config.mode != JournalMode::kAtomic);
  int lost = 0;  // cuts that lost an acknowledged commit
  uint64_t checked = 0;
  int recovery_cuts = 0;  // cuts taken while a cut's recovery ran
  int cut_short = 0;      // of those, recoveries still running when killed
  for (size_t i = 0; i < cuts.size(); ++i) {
    const Cut& cut = cuts[i];
    const std::string where = absl::StrCat(Name(config), ", ", cut.name, " (acknowledged ",
                                           cut.before, " before it, ", cut.after, " after)");
    // Every other cut (every one in the long tier) is cut again while its recovery runs: the
    // recovering process is killed at a random moment and the copy taken then is checked in
    // turn, against the same commits (recovery may lose nothing the cut held durably).
    const bool again = config.sync != SyncLevel::kOff && (i % 2 == 1 || testing::LongTier());
    int last = -1;
    bool killed = false;
    const std::string problem = disk->CheckCut(
        cut.name, again, rng() % 20000,
        [&](const std::string& folder, bool in_child) {
          int ignored;
          return Verify(config, folder + "/x.db", cut, durable, in_child ? &ignored : &last);
        },
        &killed);
    ASSERT_EQ(problem, "") << where;
    // With `again`, the first cut's own state is checked from the second: a recovery cut short
    // must leave it (or, where nothing is lost, a later state the first held too).
    recovery_cuts += again ? 1 : 0;
    cut_short += killed ? 1 : 0;
    if (last < cut.before) ++lost;
    if (config.sync != SyncLevel::kOff) checked += static_cast<uint64_t>(last);
    disk->UnmountCut(cut.name);
  }
  std::printf("%s: %zu cuts over %d commits (%d of them cut again during their recovery, %d "
              "of those recoveries killed before they ended); %d lost acknowledged commits; "
              "%llu commits checked\n",
              Name(config).c_str(), cuts.size(), commits, recovery_cuts, cut_short, lost,
              static_cast<unsigned long long>(checked));
  if (config.sync == SyncLevel::kOff) {
    EXPECT_GT(lost, 0) << "sync off lost nothing: the cuts are not power cuts";
  }
  if (mapped && !config.sqlite && config.sync != SyncLevel::kOff) {
    const uint64_t map_reads = MapReadsOfChecks().load() - map_reads_before;
    std::printf("%s: the checks read %llu pages through the read map\n", Name(config).c_str(),
                static_cast<unsigned long long>(map_reads));
    EXPECT_GT(map_reads, 0u) << "the read map served none of the checks' reads";
  }
  ::munmap(acked, sizeof(std::atomic<int>));
}

// The long tier: every mode and level on ext4 and xfs. The default tier: every mode and level
// on ext4, and on xfs the WAL modes and delete at full, with the two controls.
std::vector<Config> Configs() {
  std::vector<Config> out;
  for (const char* fs : {"ext4", "xfs"}) {
    const bool all = std::string(fs) == "ext4" || testing::LongTier();
    for (JournalMode m : {JournalMode::kWal, JournalMode::kWal2, JournalMode::kDelete,
                          JournalMode::kTruncate, JournalMode::kPersist}) {
      for (SyncLevel s : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
        const bool sample = s == SyncLevel::kFull &&
                            (Wal(m) || m == JournalMode::kDelete);
        if (all || sample) out.push_back({fs, m, s});
      }
    }
    out.push_back({fs, JournalMode::kWal, SyncLevel::kOff});
    out.push_back({fs, JournalMode::kDelete, SyncLevel::kOff});
    // Three writer processes taking turns, in the WAL modes and the journal modes that
    // keep a file (the default tier on ext4 at full; the long tier every level on both).
    for (JournalMode m : {JournalMode::kWal, JournalMode::kWal2, JournalMode::kDelete,
                          JournalMode::kPersist}) {
      for (SyncLevel s : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
        if (testing::LongTier() || (std::string(fs) == "ext4" && s == SyncLevel::kFull)) {
          out.push_back({fs, m, s, /*sqlite=*/false, /*processes=*/3});
        }
      }
    }
    // Journal mode atomic (no journal, no log: XFS's exchange-range) on the xfs guest: full in
    // the default tier, every level and three writer processes in the long tier. On ext4 it
    // is refused (AtomicIsRefusedOnExt4 below).
    if (std::string(fs) == "xfs") {
      for (SyncLevel s : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
        if (testing::LongTier() || s == SyncLevel::kFull) {
          out.push_back({fs, JournalMode::kAtomic, s});
        }
        if (testing::LongTier()) out.push_back({fs, JournalMode::kAtomic, s, false, 3});
      }
    }
    // The harness's own control: SQLite must pass it too, or the harness is wrong.
    out.push_back({fs, JournalMode::kWal, SyncLevel::kFull, /*sqlite=*/true});
    out.push_back({fs, JournalMode::kDelete, SyncLevel::kExtra, /*sqlite=*/true});
    out.push_back({fs, JournalMode::kDelete, SyncLevel::kFull, /*sqlite=*/true});
  }
  return out;
}

// Journal mode atomic on a real ext4: refused at open with an error naming what it needs, and
// the file left as it was (no database created).
TEST(PowerCutDiskTest, AtomicIsRefusedOnExt4) {
  std::unique_ptr<CutDisk> disk;
  const std::string why = CutDisk::Make("ext4", &disk);
  if (!why.empty()) GTEST_SKIP() << why;
  const std::string path = disk->guest() + "/x.db";
  Options o;
  o.journal_mode = JournalMode::kAtomic;
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, o);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition) << db.status();
  EXPECT_THAT(std::string(db.status().message()), ::testing::HasSubstr("XFS"));
  EXPECT_THAT(std::string(db.status().message()), ::testing::HasSubstr("exchange-range"));
}

INSTANTIATE_TEST_SUITE_P(Disks, PowerCutTest, ::testing::ValuesIn(Configs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return Name(info.param);
                         });

}  // namespace
}  // namespace journalkv
