// The disk fills at every stage: the same workload (small commits, a transaction that spills,
// a checkpoint, commits that grow the log and switch WAL2's logs, deletes, the close) runs on
// a FaultInjectingFileSystem whose capacity is every 4 KiB step from what the database already
// holds up to what the workload needs, so the first failure lands in each stage and each file
// in turn (the -shm's regions, the log's growth, the journal, the database file). Each run
// then either closes the failed handle or crashes the process there (the next opener recovers
// on the full disk), and asserts, in every journal mode but `off`:
//   - no signal, and the first error is ResourceExhausted saying the disk is full;
//   - while the disk is still full, a new connection opens and reads every acknowledged
//     commit, and the failed transaction either whole or not at all;
//   - once space returns, writes resume, and the database checks out after a reopen.
// `off` is left out: it cannot undo a commit that fails half-way (README, "Journal modes").
// The same sweep runs on a real tmpfs mount (where the process may mount; skipped with one
// line otherwise), the free space set by a ballast file, each run in a child process: there a
// page of the -shm without a block would be a SIGBUS, and the crash is a real one (the child
// exits at the failure without closing). tests/full_disk_test.cc has the original
// reproductions.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/file_system_testing.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::IsOkAndHolds;
using ::journalkv::testing::StatusIs;

constexpr char kPath[] = "/x.db";
constexpr uint64_t kBlock = vfs::FaultInjectingFileSystem::kBlockSize;

std::string Key(int i) { return absl::StrFormat("key%04d", i); }
std::string Value(int i, int round, size_t size) {
  std::string v = absl::StrCat("r", round, "-", i, "-");
  v.resize(size, 'v');
  return v;
}

// The database's contents as the workload acknowledged them, and the one transaction that
// failed (its writes all visible or none).
struct Model {
  std::map<std::string, std::optional<std::string>> acked;
  std::map<std::string, std::optional<std::string>> failed;
};

// Where the first error happened: the workload step, and the file its message names.
struct Failure {
  std::string stage;
  absl::Status status;
};

// The file an error's message names: "-shm", "-wal2", "-wal", "-journal", "db", or "?".
std::string FileOf(absl::string_view message, const std::string& path) {
  for (const char* suffix : {"-shm", "-wal2", "-wal", "-journal"}) {
    if (absl::StrContains(message, absl::StrCat(path, suffix))) return suffix;
  }
  return absl::StrContains(message, path) ? "db" : "?";
}

bool SaysDiskFull(const absl::Status& s) {
  return absl::IsResourceExhausted(s) &&
         (absl::StrContains(s.message(), "No space left on device") ||
          absl::StrContains(s.message(), "disk is full"));
}

// What one run of the workload did, in a form a child process can send its parent: the model
// and the first error.
std::string Encode(const Model& model, const std::optional<Failure>& failure) {
  std::string out;
  for (const auto* part : {&model.acked, &model.failed}) {
    for (const auto& [k, v] : *part) {
      absl::StrAppend(&out, part == &model.acked ? "A" : "F", "\t", k, "\t",
                      v.has_value() ? absl::StrCat("=", *v) : "-", "\n");
    }
  }
  if (failure.has_value()) {
    std::string message(failure->status.message());
    std::replace(message.begin(), message.end(), '\n', ' ');
    absl::StrAppend(&out, "E\t", failure->stage, "\t",
                    static_cast<int>(failure->status.code()), "\t", message, "\n");
  }
  return out;
}

void Decode(absl::string_view text, Model* model, std::optional<Failure>* failure) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 3));
    if (f.size() == 3 && (f[0] == "A" || f[0] == "F")) {
      std::optional<std::string> v;
      if (f[2] != "-") v = f[2].substr(1);
      (f[0] == "A" ? model->acked : model->failed)[f[1]] = v;
    } else if (f.size() == 4 && f[0] == "E") {
      int code = 0;
      EXPECT_TRUE(absl::SimpleAtoi(f[2], &code)) << line;
      *failure = Failure{f[1], absl::Status(static_cast<absl::StatusCode>(code), f[3])};
    } else {
      ADD_FAILURE() << "bad line from the child: " << line;
    }
  }
}

// The sweep over one disk: a FaultInjectingFileSystem with a capacity, or a real tmpfs with a
// ballast file taking all but the free bytes wanted.
class FullDiskSweepTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  bool wal() const {
    return GetParam() == JournalMode::kWal || GetParam() == JournalMode::kWal2;
  }
  Options ModeOptions() {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = tmpfs_ != nullptr ? nullptr : &fs_;
    o.page_size = 1024;
    o.cache_pages = 16;  // the 200-key transaction spills
    o.checkpoint_policy = "threshold:40";
    o.wal2_switch_pages = 20;
    o.busy_timeout = absl::Milliseconds(50);
    return o;
  }
  vfs::FileSystem& Files() {
    return tmpfs_ != nullptr ? static_cast<vfs::FileSystem&>(posix_) : fs_;
  }
  // Every file of the database.
  void RemoveAll() {
    for (const char* suffix : {"", "-shm", "-wal", "-wal2", "-journal"}) {
      const std::string p = path_ + suffix;
      if (*Files().Exists(p)) {
        ASSERT_THAT(Files().Delete(p), IsOk()) << p;
      }
    }
  }
  void Seed() {
    absl::StatusOr<std::unique_ptr<Db>> seed = Db::Open(path_, ModeOptions());
    ASSERT_THAT(seed, IsOk());
    ASSERT_THAT((*seed)->Put("seed", "1"), IsOk());
    ASSERT_THAT((*seed)->Close(), IsOk());
  }
  bool LogLeft() {
    return wal() && (*Files().Exists(path_ + "-wal") || *Files().Exists(path_ + "-wal2"));
  }

  // Runs the workload until its first error; nullopt when it all went through. *db_out is
  // left open: the caller closes it or crashes the process there.
  std::optional<Failure> RunWorkload(std::unique_ptr<Db>* db_out, Model* model) {
    std::string stage = "open";
    absl::Status s = [&]() -> absl::Status {
      JKV_ASSIGN_OR_RETURN(*db_out, Db::Open(path_, ModeOptions()));
      Db& db = **db_out;
      auto put = [&](int i, int round, size_t size) -> absl::Status {
        model->failed = {{Key(i), Value(i, round, size)}};
        JKV_RETURN_IF_ERROR(db.Put(Key(i), Value(i, round, size)));
        model->acked[Key(i)] = Value(i, round, size);
        model->failed.clear();
        return absl::OkStatus();
      };
      stage = "commit";
      for (int i = 0; i < 30; ++i) JKV_RETURN_IF_ERROR(put(i, 1, 40));
      stage = "spill";
      {
        JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> w, db.BeginWrite());
        for (int i = 100; i < 300; ++i) {
          model->failed[Key(i)] = Value(i, 2, 300);
          JKV_RETURN_IF_ERROR(w->Put(Key(i), Value(i, 2, 300)));
        }
        JKV_RETURN_IF_ERROR(w->Commit());
        for (const auto& [k, v] : model->failed) model->acked[k] = v;
        model->failed.clear();
      }
      if (wal()) {
        stage = "checkpoint";
        JKV_RETURN_IF_ERROR(db.Checkpoint(CheckpointMode::kTruncate).status());
      }
      stage = "grow";  // new keys: log growth, WAL2 switches, checkpoints that grow the file
      for (int i = 0; i < 40; ++i) JKV_RETURN_IF_ERROR(put(100 + (i * 7) % 200, 3, 300));
      for (int i = 300; i < 800; ++i) JKV_RETURN_IF_ERROR(put(i, 3, 300));
      stage = "delete";
      {
        JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> w, db.BeginWrite());
        for (int i = 0; i < 30; ++i) {
          model->failed[Key(i)] = std::nullopt;
          JKV_RETURN_IF_ERROR(w->Delete(Key(i)).status());
        }
        JKV_RETURN_IF_ERROR(w->Commit());
        for (const auto& [k, v] : model->failed) model->acked[k] = v;
        model->failed.clear();
      }
      stage = "close";
      return db.Close();
    }();
    if (s.ok()) return std::nullopt;
    return Failure{stage, s};
  }

  // Every acknowledged commit, and the failed transaction whole or not at all.
  void ExpectContents(Db& db, const Model& model, const std::string& where) {
    absl::StatusOr<std::unique_ptr<ReadTransaction>> r = db.BeginRead();
    ASSERT_THAT(r, IsOk()) << where;
    int failed_seen = 0;
    for (const auto& [key, value] : model.acked) {
      absl::StatusOr<std::optional<std::string>> got = (*r)->Get(key);
      ASSERT_THAT(got, IsOk()) << where << " " << key;
      auto f = model.failed.find(key);
      if (f != model.failed.end() && *got == f->second && f->second != value) {
        ++failed_seen;
        continue;
      }
      ASSERT_EQ(*got, value) << where << " " << key;
    }
    for (const auto& [key, value] : model.failed) {
      if (model.acked.count(key) != 0) continue;
      absl::StatusOr<std::optional<std::string>> got = (*r)->Get(key);
      ASSERT_THAT(got, IsOk()) << where << " " << key;
      if (got->has_value()) {
        ASSERT_EQ(*got, value) << where << " " << key;
        ++failed_seen;
      }
    }
    int failed_changes = 0;
    for (const auto& [key, value] : model.failed) {
      auto a = model.acked.find(key);
      if (a == model.acked.end() ? value.has_value() : a->second != value) ++failed_changes;
    }
    EXPECT_TRUE(failed_seen == 0 || failed_seen == failed_changes)
        << where << ": " << failed_seen << " of the failed transaction's " << failed_changes
        << " changes are visible";
  }

  // FaultInjectingFileSystem: the run in this process, the crash simulated.
  std::optional<Failure> RunInProcess(uint64_t free, bool crash, Model* model) {
    fs_.SetCapacity(fs_.used_bytes() + free);
    std::unique_ptr<Db> db;
    std::optional<Failure> failure = RunWorkload(&db, model);
    if (failure.has_value() && crash) {
      fs_.SimulateProcessCrash();  // the next opener recovers on the full disk
    } else if (failure.has_value() && db != nullptr) {
      db->Close().IgnoreError();  // whatever it says, it must not crash
    }
    db.reset();
    return failure;
  }

  // tmpfs: the run in a child process, which the kernel may kill (SIGBUS) and which, to crash,
  // exits at the failure without closing anything; it sends the model through a pipe.
  std::optional<Failure> RunInChild(uint64_t free, bool crash, Model* model) {
    EXPECT_THAT(tmpfs_->LeaveFree("ballast", free), IsOk());
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      Model m = *model;
      std::unique_ptr<Db> db;
      std::optional<Failure> failure = RunWorkload(&db, &m);
      if (failure.has_value() && !crash && db != nullptr) db->Close().IgnoreError();
      const std::string text = Encode(m, failure);
      for (size_t at = 0; at < text.size();) {
        const ssize_t n = ::write(fds[1], text.data() + at, text.size() - at);
        if (n <= 0) ::_exit(3);
        at += static_cast<size_t>(n);
      }
      ::_exit(0);  // crash or not: no destructor runs (a crash leaves `db` open)
    }
    ::close(fds[1]);
    std::string text;
    char buf[65536];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, n);
    ::close(fds[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (WIFSIGNALED(status) ? absl::StrCat("killed by signal ", WTERMSIG(status))
                                : absl::StrCat("exit status ", WEXITSTATUS(status)));
    model->acked.clear();
    model->failed.clear();
    std::optional<Failure> failure;
    Decode(text, model, &failure);
    return failure;
  }

  void Sweep(uint64_t step) {
    Seed();
    if (HasFatalFailure()) return;
    std::map<std::string, int> stages;  // "stage file" -> runs whose first error it was
    bool completed = false;
    int runs = 0;
    // Coarse steps until the workload fits, then (when the steps are coarser than a block, as
    // under a sanitizer) every block of the last step: the close's window is narrow.
    uint64_t free = 0;
    uint64_t refine_end = 0;  // while refining: the free space the workload first fit in
    for (; runs < 2000; ++runs) {
      const std::string where = absl::StrCat(JournalModeName(GetParam()), " with ", free,
                                             " bytes free");
      const bool crash = runs % 2 == 1;
      Model model;
      model.acked["seed"] = "1";
      std::optional<Failure> failure = tmpfs_ != nullptr ? RunInChild(free, crash, &model)
                                                         : RunInProcess(free, crash, &model);
      if (HasFatalFailure()) return;
      bool fit = false;
      if (!failure.has_value()) {
        // WAL: a close that could not copy the log for space succeeds and leaves the log for
        // the next opener (README, "Failures").
        const bool log_left = LogLeft();
        if (log_left) ++stages["close log left"];
        fit = !log_left;
      } else {
        ++stages[absl::StrCat(failure->stage, " ", FileOf(failure->status.message(), path_))];
        EXPECT_TRUE(SaysDiskFull(failure->status))
            << where << ", " << failure->stage << ": " << failure->status;
      }
      {
        // Still full (WAL: a read-write connection whose -shm cannot grow reads through a
        // private index and refuses writes).
        absl::StatusOr<std::unique_ptr<Db>> reader = Db::Open(path_, ModeOptions());
        ASSERT_THAT(reader, IsOk()) << where << ", opening while full";
        ExpectContents(**reader, model, absl::StrCat(where, ", while full"));
        (*reader)->Close().IgnoreError();  // may fail to checkpoint for space
      }
      if (tmpfs_ != nullptr) {
        ASSERT_THAT(Files().Delete(tmpfs_->path() + "/ballast"), IsOk());
      } else {
        fs_.SetCapacity(std::nullopt);
      }
      {
        absl::StatusOr<std::unique_ptr<Db>> writer = Db::Open(path_, ModeOptions());
        ASSERT_THAT(writer, IsOk()) << where;
        ExpectContents(**writer, model, absl::StrCat(where, ", space back"));
        ASSERT_THAT((*writer)->Put("resume", absl::StrCat(free)), IsOk()) << where;
        ASSERT_THAT((*writer)->Close(), IsOk()) << where;
      }
      {
        absl::StatusOr<std::unique_ptr<Db>> again = Db::Open(path_, ModeOptions());
        ASSERT_THAT(again, IsOk()) << where;
        absl::StatusOr<CheckResult> check = (*again)->Check();
        ASSERT_THAT(check, IsOk()) << where;
        EXPECT_TRUE(check->ok()) << where << ": " << absl::StrJoin(check->problems, "; ");
        ASSERT_THAT((*again)->Close(), IsOk());
      }
      RemoveAll();  // the next run starts from the seed again
      Seed();
      if (::testing::Test::HasFailure()) break;
      if (refine_end == 0 && fit && step > kBlock && free >= step) {
        refine_end = free;
        free = free - step + kBlock;
        continue;
      }
      if (refine_end == 0 && fit) {
        completed = true;
        break;
      }
      free += refine_end == 0 ? step : kBlock;
      if (refine_end != 0 && free >= refine_end) {
        completed = true;
        break;
      }
    }
    ++runs;
    EXPECT_TRUE(completed) << "the workload never fit in " << runs << " steps";
    std::string seen;
    for (const auto& [stage, n] : stages) absl::StrAppend(&seen, " [", stage, "] x", n);
    std::printf("%s on %s: %d runs, %llu bytes apart;%s\n", JournalModeName(GetParam()).data(),
                tmpfs_ != nullptr ? "tmpfs" : "a fault-injecting disk", runs,
                static_cast<unsigned long long>(step), seen.c_str());
    // The stages and files every mode's sweep must run out of space in (the line above shows
    // all it did). The deletes need no new space in any mode, and a rollback mode's close
    // writes nothing.
    std::vector<std::string> want_stages = {"commit", "spill", "grow"};
    std::vector<std::string> want_files = {"db"};
    if (wal()) {
      want_stages.insert(want_stages.end(), {"checkpoint", "close"});  // "close log left"
      want_files.insert(want_files.end(), {"-shm", "-wal"});
      if (GetParam() == JournalMode::kWal2) want_files.push_back("-wal2");
    } else if (GetParam() != JournalMode::kMemory) {
      want_files.push_back("-journal");
    }
    for (const std::string& w : want_stages) {
      bool found = false;
      for (const auto& [stage, n] : stages) found = found || absl::StartsWith(stage, w + " ");
      EXPECT_TRUE(found) << "no run ran out of space in stage " << w << ":" << seen;
    }
    for (const std::string& w : want_files) {
      bool found = false;
      for (const auto& [stage, n] : stages) found = found || absl::EndsWith(stage, " " + w);
      EXPECT_TRUE(found) << "no run ran out of space writing " << w << ":" << seen;
    }
  }

  std::string path_ = kPath;
  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fs_{&mem_};
  vfs::PosixFileSystem posix_;
  std::unique_ptr<vfs::ScopedTmpfs> tmpfs_;
};

TEST_P(FullDiskSweepTest, TheDiskFillsAtEveryStage) {
  Sweep(kBlock * testing::TierScaled(1, 8, 1));
}

// The same on the kernel's own full disk, where a page of a mapped file without a block is a
// SIGBUS at the first store, in whichever process stores: each run is a child process.
TEST_P(FullDiskSweepTest, OnATmpfsTheDiskFillsAtEveryStage) {
  absl::StatusOr<std::unique_ptr<vfs::ScopedTmpfs>> disk = vfs::ScopedTmpfs::Mount(16 << 20);
  if (!disk.ok()) GTEST_SKIP() << disk.status().message();
  tmpfs_ = std::move(*disk);
  path_ = tmpfs_->path() + "/x.db";
  Sweep(kBlock * testing::TierScaled(2, 16, 1));
}

// A log with commits in it and a -shm that has room for its first region but not for the
// log's index (the -shm was removed after a crash; the disk then filled): the opener, alone,
// starts the index afresh and cannot rebuild it. It reads through a private index (which
// takes the initialised, never-published -shm for none), refuses writes naming the full disk,
// and once there is space the next opener rebuilds the index. Both failed the open before
// (the rebuild's ResourceExhausted, then "the wal-index header ... is damaged").
TEST(FullDiskOpenTest, AnOpenerThatCannotIndexTheLogReadsThroughAPrivateIndex) {
  for (JournalMode mode : {JournalMode::kWal, JournalMode::kWal2}) {
    SCOPED_TRACE(JournalModeName(mode));
    vfs::MemFileSystem mem;
    vfs::FaultInjectingFileSystem fs(&mem);
    Options o;
    o.journal_mode = mode;
    o.file_system = &fs;
    o.checkpoint_policy = "manual";
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
      ASSERT_THAT(db, IsOk());
      for (int i = 0; i < 20; ++i) ASSERT_THAT((*db)->Put(Key(i), Value(i, 1, 100)), IsOk());
      fs.SimulateProcessCrash();
    }
    ASSERT_THAT(fs.Delete(std::string(kPath) + "-shm"), IsOk());
    fs.SetCapacity(fs.used_bytes() + shm::kRegionSize + kBlock);  // region 0, not region 1
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
      ASSERT_THAT(db, IsOk());
      for (int i = 0; i < 20; ++i) {
        EXPECT_THAT((*db)->Get(Key(i)), IsOkAndHolds(std::optional<std::string>(Value(i, 1, 100))));
      }
      EXPECT_THAT((*db)->Put("more", "1"),
                  StatusIs(absl::StatusCode::kResourceExhausted, "the disk is full"));
    }
    fs.SetCapacity(std::nullopt);
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put("more", "1"), IsOk());
    EXPECT_THAT((*db)->Get(Key(19)), IsOkAndHolds(std::optional<std::string>(Value(19, 1, 100))));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FullDiskSweepTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2,
                                           JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
