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
// The real kernel's side (sparse -shm pages, SIGBUS) is tests/full_disk_test.cc on tmpfs.
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
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;

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

std::string FileOf(const absl::Status& s) {
  for (const char* suffix : {"-shm", "-wal2", "-wal", "-journal"}) {
    if (absl::StrContains(s.message(), absl::StrCat(kPath, suffix))) return suffix;
  }
  return absl::StrContains(s.message(), kPath) ? "db" : "?";
}

class FullDiskSweepTest : public ::testing::TestWithParam<JournalMode> {
 protected:
  bool wal() const {
    return GetParam() == JournalMode::kWal || GetParam() == JournalMode::kWal2;
  }
  Options ModeOptions() {
    Options o;
    o.journal_mode = GetParam();
    o.file_system = &fs_;
    o.page_size = 1024;
    o.cache_pages = 16;  // the 200-key transaction spills
    o.checkpoint_policy = "threshold:40";
    o.wal2_switch_pages = 20;
    o.busy_timeout = absl::Milliseconds(50);
    return o;
  }

  // Runs the workload until its first error; nullopt when it all went through.
  std::optional<Failure> RunWorkload(std::unique_ptr<Db>* db_out, Model* model) {
    std::string stage = "open";
    absl::Status s = [&]() -> absl::Status {
      JKV_ASSIGN_OR_RETURN(*db_out, Db::Open(kPath, ModeOptions()));
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

  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fs_{&mem_};
};

TEST_P(FullDiskSweepTest, TheDiskFillsAtEveryStage) {
  {
    absl::StatusOr<std::unique_ptr<Db>> seed = Db::Open(kPath, ModeOptions());
    ASSERT_THAT(seed, IsOk());
    ASSERT_THAT((*seed)->Put("seed", "1"), IsOk());
    ASSERT_THAT((*seed)->Close(), IsOk());
  }
  const std::vector<std::string> seeded = mem_.ListFiles();
  const uint64_t base = fs_.used_bytes();
  const uint64_t step = kBlock * testing::TierScaled(1, 4, 1);
  std::map<std::string, int> stages;  // "stage file" -> runs whose first error it was
  bool completed = false;
  int runs = 0;
  for (uint64_t capacity = base; !completed && runs < 2000; capacity += step, ++runs) {
    const std::string where = absl::StrCat(JournalModeName(GetParam()), " at ", capacity,
                                           " bytes (", (capacity - base) / kBlock,
                                           " blocks free)");
    // Every run starts from the seeded database, with nothing else on the disk.
    for (const std::string& p : mem_.ListFiles()) {
      if (std::find(seeded.begin(), seeded.end(), p) == seeded.end()) {
        ASSERT_THAT(fs_.Delete(p), IsOk());
      }
    }
    Model model;
    model.acked["seed"] = "1";
    std::unique_ptr<Db> db;
    fs_.SetCapacity(capacity);
    std::optional<Failure> failure = RunWorkload(&db, &model);
    if (!failure.has_value()) {
      // WAL: a close that could not copy the log for space succeeds and leaves the log for the
      // next opener (README, "Failures").
      const bool log_left = wal() && (*mem_.Exists(std::string(kPath) + "-wal") ||
                                      *mem_.Exists(std::string(kPath) + "-wal2"));
      if (log_left) ++stages["close log left"];
      completed = !log_left;
    } else {
      ++stages[absl::StrCat(failure->stage, " ", FileOf(failure->status))];
      EXPECT_TRUE(absl::IsResourceExhausted(failure->status) &&
                  (absl::StrContains(failure->status.message(), "No space left on device") ||
                   absl::StrContains(failure->status.message(), "disk is full")))
          << where << ", " << failure->stage << ": " << failure->status;
      const bool crash = runs % 2 == 1;
      if (crash) {
        fs_.SimulateProcessCrash();  // the next opener recovers on the full disk
        db.reset();
      } else if (db != nullptr) {
        db->Close().IgnoreError();  // whatever it says, it must not crash
        db.reset();
      }
    }
    {
      // Still full (WAL: a read-write connection whose -shm cannot grow reads through a private
      // index and refuses writes).
      absl::StatusOr<std::unique_ptr<Db>> reader = Db::Open(kPath, ModeOptions());
      ASSERT_THAT(reader, IsOk()) << where << ", opening while full";
      ExpectContents(**reader, model, absl::StrCat(where, ", while full"));
      (*reader)->Close().IgnoreError();  // may fail to checkpoint for space
    }
    fs_.SetCapacity(std::nullopt);
    {
      absl::StatusOr<std::unique_ptr<Db>> writer = Db::Open(kPath, ModeOptions());
      ASSERT_THAT(writer, IsOk()) << where;
      ExpectContents(**writer, model, absl::StrCat(where, ", space back"));
      ASSERT_THAT((*writer)->Put("resume", absl::StrCat(capacity)), IsOk()) << where;
      ASSERT_THAT((*writer)->Close(), IsOk()) << where;
    }
    absl::StatusOr<std::unique_ptr<Db>> again = Db::Open(kPath, ModeOptions());
    ASSERT_THAT(again, IsOk()) << where;
    absl::StatusOr<CheckResult> check = (*again)->Check();
    ASSERT_THAT(check, IsOk()) << where;
    EXPECT_TRUE(check->ok()) << where << ": " << absl::StrJoin(check->problems, "; ");
    // Undo this run: the next starts from the seed again.
    ASSERT_THAT((*again)->Close(), IsOk());
    for (const std::string& p : mem_.ListFiles()) ASSERT_THAT(fs_.Delete(p), IsOk());
    absl::StatusOr<std::unique_ptr<Db>> reseed = Db::Open(kPath, ModeOptions());
    ASSERT_THAT(reseed, IsOk());
    ASSERT_THAT((*reseed)->Put("seed", "1"), IsOk());
    ASSERT_THAT((*reseed)->Close(), IsOk());
    if (HasFatalFailure() || ::testing::Test::HasFailure()) break;
  }
  EXPECT_TRUE(completed) << "the workload never fit in " << runs << " steps";
  std::string seen;
  for (const auto& [stage, n] : stages) absl::StrAppend(&seen, " [", stage, "] x", n);
  std::printf("%s: %d capacities from %llu bytes;%s\n", JournalModeName(GetParam()).data(), runs,
              static_cast<unsigned long long>(base), seen.c_str());
  // The stages and files every mode's sweep must run out of space in (the line above shows
  // all it did). The deletes need no new space in any mode, and a rollback mode's close writes
  // nothing.
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

INSTANTIATE_TEST_SUITE_P(Modes, FullDiskSweepTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2,
                                           JournalMode::kDelete, JournalMode::kTruncate,
                                           JournalMode::kPersist, JournalMode::kMemory),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return std::string(JournalModeName(info.param));
                         });

}  // namespace
}  // namespace journalkv
