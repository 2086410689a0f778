// The schedule explorer (tests/schedule_explorer.h) over WAL and WAL2: a writer, two readers on
// their own connections, a reader thread of the writer's own connection (at random times) and
// a checkpointer (PASSIVE, FULL, RESTART, TRUNCATE in turn, PASSIVE ones at random times
// between them), and in every other schedule the writer connection's background checkpointer
// (async:0/B, deferring its copies; the schedule adopts its thread), run over the in-memory
// file system, one at a time between two hook points, in an order drawn from a seed. Checked:
//   - every read transaction sees one committed state: the accounts sum to the bank's total,
//     and they are exactly what the writer committed at the version the transaction read (a
//     version map kept by the writer), read twice within the transaction;
//   - after every step, the published index is sane (the backfill is within the published
//     log, what a checkpoint copied is within what it may have written, a generation's
//     published end never moves back) and, in WAL, the database file keeps the backfill's
//     promise (World::FileCheck);
//   - at the end, after a final checkpoint and a reopen, the last acknowledged commit is there
//     and Check() passes; no schedule deadlocks (the controller aborts with the trace).
// A failing schedule prints its seed and its last steps; --test_env=JKV_SCHEDULE_SEED=N
// replays exactly that one. The default tier runs a few dozen schedules a mode, each from a
// seed drawn from the run seed (new each run, printed); the long tier runs thousands
// (JKV_SCHEDULES=N: N a mode). Four kinds of schedule (RunOne); JKV_SCHEDULE_KINDS=012 keeps
// those kinds only, JKV_SCHEDULE_DROPS=a,b>c gives every schedule those drops and holds, to
// look at one window (kKnownWindows lists the windows of the races found so far), and
// JKV_SCHEDULE_COUNT=a,b prints how often each schedule reached those points.
// docs/design-notes.md, "The schedule explorer", says what it finds with each fix undone.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "checkpoint/checkpointer.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "wal/wal_connection.h"
#include "shm/wal_index.h"
#include "tests/crash_sweep.h"
#include "tests/schedule_explorer.h"
#include "vfs/mem_fs.h"
#include "log/wal_format.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::Schedule;
using ::journalkv::testing::ScheduleOptions;
using ::journalkv::testing::TierScaled;
using ::journalkv::testing::UnderSanitizer;

// Two regions of accounts, each on pages of its own (about four accounts a page), and the
// writer's commits alternate between them: after a log restart a snapshot finds the region the
// last commits left alone in the database file, not in the log, so a checkpoint that put a
// later version of it there (race 2 of the WAL-races issue) shows as a torn snapshot.
constexpr int kRegions = 2;
constexpr int kRegionAccounts = 8;
constexpr int kAccounts = kRegions * kRegionAccounts;
constexpr int kInitial = 100;
constexpr int kCommits = 8;
constexpr int kReads = 4;
constexpr int kCheckpoints = 6;
const std::string kPad(200, '.');  // spreads the accounts over several 1 KiB pages

std::string AccountKey(int i) { return absl::StrCat("acct", 10 + i); }

using Accounts = std::array<int, kAccounts>;

// One schedule's world: the database, the version map and the first failure.
class World {
 public:
  World(JournalMode mode, uint64_t seed) : mode_(mode), rng_(seed), tear_rng_(~seed) {}

  Options Opts(uint32_t cache_pages = 2000, const char* policy = "manual") {
    Options o;
    o.cache_pages = cache_pages;
    o.journal_mode = mode_;
    o.file_system = &fs_;
    o.page_size = 1024;
    o.wal2_switch_pages = 8;
    o.checkpoint_policy = policy;
    // A torn header that stays so (set_tearing) holds a reader until its busy timeout: short
    // there, or each tear costs seconds of spinning.
    o.busy_timeout = tearing_ ? absl::Milliseconds(100) : absl::Seconds(2);
    return o;
  }
  std::unique_ptr<Db> Open(uint32_t cache_pages = 2000, const char* policy = "manual") {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/x.db", Opts(cache_pages, policy));
    if (!db.ok()) {
      Fail(absl::StrCat("open: ", db.status().ToString()));
      return nullptr;
    }
    return std::move(*db);
  }

  // Version 0: every account at kInitial. Before the schedule starts.
  bool Create(Db& db) {
    Accounts start;
    start.fill(kInitial);
    {
      std::lock_guard<std::mutex> lock(mu_);
      versions_.push_back(start);
    }
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
    if (!Check(w.status(), "create: begin write")) return false;
    for (int i = 0; i < kAccounts; ++i) {
      if (!Check((*w)->Put(AccountKey(i), absl::StrCat(kInitial, kPad)), "create: put")) {
        return false;
      }
    }
    if (!Check((*w)->Put("version", "0"), "create: put") ||
        !Check((*w)->Commit(), "create: commit")) {
      return false;
    }
    // Into the database file, so that the schedule's snapshots read pages from it too.
    absl::StatusOr<CheckpointResult> r = db.Checkpoint(CheckpointMode::kTruncate);
    if (!Check(r.status(), "create: checkpoint")) return false;
    // With the background checkpointer, the log may be copied already when the checkpoint
    // takes the writer's lock, and restarts there (W7): the checkpoint then finds it empty.
    const bool copied = r->restarted || (r->log_frames == 0 && !r->blocked);
    if (!copied) {
      Fail(absl::StrCat("create: the TRUNCATE checkpoint left the log (backfilled ",
                        r->backfilled, " of ", r->log_frames, " frames, blocked ", r->blocked,
                        ")"));
    }
    return copied;
  }

  // A transfer between two accounts and the next version, kCommits times.
  void Writer(Db& db) {
    std::mt19937_64 rng(rng_());
    for (int c = 0; c < kCommits && !failed(); ++c) {
      absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
      if (Busy(w.status(), "begin write")) {
        --c;
        continue;
      }
      if (!w.ok()) return;
      std::optional<int> version = ReadInt(**w, "version");
      if (!version) return;
      Accounts next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        next = versions_[*version];
      }
      const int region = (*version % kRegions) * kRegionAccounts;
      const int from = region + static_cast<int>(rng() % kRegionAccounts);
      const int to = region + static_cast<int>(rng() % kRegionAccounts);
      const int amount = 1 + static_cast<int>(rng() % 10);
      next[from] -= amount;
      next[to] += amount;
      for (int i : {from, to}) {
        if (!Check((*w)->Put(AccountKey(i), absl::StrCat(next[i], kPad)), "put")) return;
      }
      if (!Check((*w)->Put("version", absl::StrCat(*version + 1)), "put")) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (versions_.size() != static_cast<size_t>(*version) + 1) {
          FailLocked(absl::StrCat("the writer read version ", *version, " after committing ",
                                  versions_.size() - 1));
          return;
        }
        versions_.push_back(next);
      }
      if (!Check((*w)->Commit(), "commit")) return;
      acknowledged_.store(*version + 1);
      Yield();
    }
    writer_done_.store(true);
  }

  // Read transactions, each reading every account twice and checking them against the map.
  // Paced: the r-th transaction once the writer has acknowledged r * kCommits / reads commits.
  // Polling instead: each at a random time ("wait:poll"), so that one may begin while the
  // writer is halfway through a commit (a reader thread of the writer's own handle finding the
  // index header torn by it: race 3 of the WAL-races issue).
  void Reader(Db& db, int reads, bool polling = false) {
    for (int r = 0; r < reads && !failed(); ++r) {
      if (polling) {
        wal::CallWalHook("wait:poll");
      } else {
        Pace(r * kCommits / reads);
      }
      absl::StatusOr<std::unique_ptr<ReadTransaction>> t = db.BeginRead();
      if (Busy(t.status(), "begin read")) continue;
      if (!t.ok()) return;
      for (int pass = 0; pass < 2 && !failed(); ++pass) {
        std::optional<int> version = ReadInt(**t, "version");
        if (!version) return;
        Accounts expect;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (*version < 0 || static_cast<size_t>(*version) >= versions_.size()) {
            FailLocked(absl::StrCat("a reader saw version ", *version, ", never committed"));
            return;
          }
          expect = versions_[*version];
        }
        int sum = 0;
        for (int i = 0; i < kAccounts; ++i) {
          std::optional<int> v = ReadInt(**t, AccountKey(i));
          if (!v) return;
          sum += *v;
          if (*v != expect[i]) {
            Fail(absl::StrCat("a reader at version ", *version, " (pass ", pass + 1, ") read ",
                              AccountKey(i), " = ", *v, ", committed ", expect[i],
                              ": a torn snapshot"));
            return;
          }
        }
        if (sum != kAccounts * kInitial) Fail(absl::StrCat("the accounts sum to ", sum));
      }
    }
  }

  // kCheckpoints of the four modes in turn, spread over the writer's run, and between them
  // PASSIVE ones at random times ("wait:poll": after 1 to 64 of the other threads' steps), as
  // another process's checkpointer polling the log would run: in the windows between two of
  // another connection's steps too (a reader's pin and its re-check while the writer
  // connection's background copy is unpublished: race 2 of the WAL-races issue).
  void Checkpointer(Db& db) {
    const CheckpointMode modes[] = {CheckpointMode::kPassive, CheckpointMode::kFull,
                                    CheckpointMode::kRestart, CheckpointMode::kTruncate};
    for (int c = 0; c < kCheckpoints && !failed(); ++c) {
      Yield();
      const int due = 1 + c * kCommits / kCheckpoints;
      while (acknowledged_.load() < due && !writer_done_.load() && !failed()) {
        wal::CallWalHook("wait:poll");
        if (!Run(db, CheckpointMode::kPassive)) return;
      }
      if (!Run(db, modes[c % 4])) return;
    }
  }

  // One checkpoint: false if it failed (the schedule has failed).
  bool Run(Db& db, CheckpointMode mode) {
    absl::StatusOr<CheckpointResult> r = db.Checkpoint(mode);
    return r.ok() || Busy(r.status(), "checkpoint");
  }

  // After the schedule: every handle closed, a final checkpoint by a new connection, reopened.
  void Final() {
    if (failed()) return;
    for (int round = 0; round < 2; ++round) {
      std::unique_ptr<Db> db = Open();
      if (db == nullptr) return;
      if (round == 0) {
        absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kTruncate);
        if (!Check(r.status(), "final checkpoint")) return;
      }
      std::unique_ptr<ReadTransaction> t = *db->BeginRead();
      std::optional<int> version = ReadInt(*t, "version");
      if (!version) return;
      if (*version != acknowledged_.load()) {
        Fail(absl::StrCat("after a reopen the database is at version ", *version,
                          ", the last acknowledged commit was ", acknowledged_.load()));
        return;
      }
      Accounts expect;
      {
        std::lock_guard<std::mutex> lock(mu_);
        expect = versions_[*version];
      }
      for (int i = 0; i < kAccounts; ++i) {
        std::optional<int> v = ReadInt(*t, AccountKey(i));
        if (!v) return;
        if (*v != expect[i]) {
          Fail(absl::StrCat("after a reopen ", AccountKey(i), " = ", *v, ", committed ",
                            expect[i]));
        }
      }
      t.reset();
      absl::StatusOr<CheckResult> check = db->Check();
      if (!Check(check.status(), "check")) return;
      if (!check->ok()) Fail(absl::StrCat("Check(): ", check->problems.front()));
    }
  }

  // Tearing (a known window's fault): at each commit's "commit:appended" (frames in the log
  // and the index, the header not yet published), with probability one half, copy A of the
  // published header is damaged, as a publish under way or a process killed in one leaves
  // it; the writer's publish makes it whole again.
  void set_tearing(bool on) { tearing_ = on; }  // before Open

  // The per-step check, after the step at `point`: the published index over the -shm, read
  // without taking anything.
  std::string StepCheck(const char* point) {
    if (index_ == nullptr) {
      absl::StatusOr<std::unique_ptr<vfs::File>> f =
          fs_.Open("/x.db-shm", {vfs::OpenMode::kReadWrite, vfs::FileKind::kShm});
      if (!f.ok()) return "";
      absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
          shm::WalIndex::OpenShared(f->get(), /*initialize=*/false);
      if (!index.ok()) return "";
      shm_file_ = std::move(*f);
      index_ = std::move(*index);
    }
    if (tearing_ && std::string_view(point) == "commit:appended" && (tear_rng_() & 1)) {
      index_->CorruptHeaderForTesting();
      ++tears_;
    }
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return "";  // a writer is publishing
    const int logs = mode_ == JournalMode::kWal2 ? 2 : 1;
    for (int l = 0; l < logs; ++l) {
      const shm::LogState& log = h.logs[l];
      const uint32_t backfill = index_->backfill(l);
      if (backfill > log.mx_frame) {
        return absl::StrCat("log ", l, ": backfill ", backfill, " past the published end ",
                            log.mx_frame, " of generation ", log.ckpt_seq);
      }
      const uint64_t copied = index_->copied_through(l), written = index_->written_through(l);
      if ((copied >> 32) == (written >> 32) && static_cast<uint32_t>(copied) >
                                                   static_cast<uint32_t>(written)) {
        return absl::StrCat("log ", l, ": copied through ", static_cast<uint32_t>(copied),
                            " past written through ", static_cast<uint32_t>(written));
      }
      auto& [seq, mx] = last_[l];
      if (seq == log.ckpt_seq && log.mx_frame < mx) {
        return absl::StrCat("log ", l, ": generation ", seq, "'s published end went back from ",
                            mx, " to ", log.mx_frame);
      }
      seq = log.ckpt_seq;
      mx = log.mx_frame;
    }
    return FileCheck(h);
  }
  // WAL: the backfill's promise, checked against the files themselves. For every page with a
  // frame at or below the backfill B, the database file holds the version of its newest frame
  // <= B or of a later frame that a checkpoint may already have copied (up to written_through,
  // C3), never an older one: what a reader that finds a page in no frame of its snapshot reads,
  // and what a log restart keeps. (A checkpoint that copies older versions over another
  // connection's newer copies, race 2 of the WAL-races issue, breaks it as soon as a later
  // backfill is published over them, whatever the readers then read.)
  std::string FileCheck(const shm::IndexHeader& h) {
    if (mode_ != JournalMode::kWal) return "";
    const shm::LogState& log = h.logs[0];
    const uint32_t backfill = std::min(index_->backfill(0), log.mx_frame);
    if (backfill == 0) return "";
    uint32_t upper = backfill;
    if (const uint64_t w = index_->written_through(0); (w >> 32) == log.ckpt_seq) {
      upper = std::min(std::max(upper, static_cast<uint32_t>(w)), log.mx_frame);
    }
    if (log_file_ == nullptr || db_file_ == nullptr) {
      absl::StatusOr<std::unique_ptr<vfs::File>> l =
          fs_.Open("/x.db-wal", {vfs::OpenMode::kReadOnly, vfs::FileKind::kWal});
      absl::StatusOr<std::unique_ptr<vfs::File>> d =
          fs_.Open("/x.db", {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase});
      if (!l.ok() || !d.ok()) return "";
      log_file_ = std::move(*l);
      db_file_ = std::move(*d);
    }
    constexpr uint32_t kPage = 1024;
    uint8_t header[wal::kFrameHeaderSize];
    std::vector<uint8_t> image(kPage);
    // Each page's frames up to `upper`, in order: (frame, image).
    std::map<uint32_t, std::vector<std::pair<uint32_t, std::vector<uint8_t>>>> pages;
    for (uint32_t f = 1; f <= upper; ++f) {
      if (!log_file_->Read(wal::FrameHeaderOffset(f, kPage), absl::MakeSpan(header)).ok() ||
          !log_file_->Read(wal::FrameImageOffset(f, kPage), absl::MakeSpan(image)).ok()) {
        return absl::StrCat("the log cannot be read at published frame ", f);
      }
      pages[wal::DecodeFrameHeader(header).page_no].emplace_back(f, image);
    }
    absl::StatusOr<uint64_t> db_size = db_file_->Size();
    if (!db_size.ok()) return "the database file's size cannot be read";
    std::vector<uint8_t> page(kPage);
    for (const auto& [page_no, versions] : pages) {
      if (versions.front().first > backfill) continue;  // no frame at or below the backfill
      size_t lo = 0;  // the newest frame <= backfill
      while (lo + 1 < versions.size() && versions[lo + 1].first <= backfill) ++lo;
      const uint64_t offset = uint64_t{page_no - 1} * kPage;
      if (offset + kPage > *db_size) {
        return absl::StrCat("page ", page_no, " (frame ", versions[lo].first,
                            " is at or below the backfill ", backfill,
                            ") is past the end of the database file");
      }
      if (!db_file_->Read(offset, absl::MakeSpan(page)).ok()) {
        return absl::StrCat("page ", page_no, " of the database file cannot be read");
      }
      bool found = false;
      for (size_t i = lo; i < versions.size() && !found; ++i) found = versions[i].second == page;
      if (!found) {
        return absl::StrCat("page ", page_no, " of the database file holds neither frame ",
                            versions[lo].first, "'s version (the newest at or below the backfill ",
                            backfill, " of generation ", log.ckpt_seq,
                            ") nor a later one a checkpoint may have copied (through ", upper,
                            "): the file breaks the backfill's promise");
      }
    }
    return "";
  }

  void CloseIndex() {
    log_file_.reset();
    db_file_.reset();
    index_.reset();
    shm_file_.reset();
  }

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return !failure_.empty();
  }
  std::string failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }
  uint64_t busy() const { return busy_.load(); }
  uint64_t tears() const { return tears_; }
  int acknowledged() const { return acknowledged_.load(); }

 private:
  void Fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    FailLocked(what);
  }
  // With mu_ held. (Fail there deadlocked the thread on itself: the explorer reported a
  // writer that read a version it had not committed as every thread blocked.)
  void FailLocked(const std::string& what) {
    if (failure_.empty()) failure_ = what;
  }
  bool Check(const absl::Status& s, const char* what) {
    if (!s.ok()) Fail(absl::StrCat(what, ": ", s.ToString()));
    return s.ok();
  }
  // A busy answer is allowed (a busy timeout passed while the schedule ran someone else):
  // true, and the caller tries again. Any other error fails the schedule.
  bool Busy(const absl::Status& s, const char* what) {
    if (s.ok()) return false;
    // A torn header that stays torn (World::set_tearing) is answered "aborted: retry".
    if (s.code() == absl::StatusCode::kUnavailable ||
        (tearing_ && s.code() == absl::StatusCode::kAborted)) {
      ++busy_;
      return busy_.load() < 10000;
    }
    Fail(absl::StrCat(what, ": ", s.ToString()));
    return false;
  }
  // Between two operations a thread goes last (the schedule's "wait"), so that the threads'
  // operations interleave and the change points preempt them inside one.
  static void Yield() { wal::CallWalHook("wait"); }
  // Until the writer has acknowledged `commits` (or ended): readers and the checkpointer spread
  // over the writer's run instead of running before it.
  void Pace(int commits) {
    Yield();
    while (acknowledged_.load() < commits && !writer_done_.load() && !failed()) Yield();
  }
  template <typename Txn>
  std::optional<int> ReadInt(Txn& t, const std::string& key) {
    absl::StatusOr<std::optional<std::string>> v = t.Get(key);
    if (!Check(v.status(), "get")) return std::nullopt;
    int n;
    if (!v->has_value() || !absl::SimpleAtoi(absl::string_view(**v).substr(0, (*v)->find('.')), &n)) {
      Fail(absl::StrCat(key, " is missing or unreadable"));
      return std::nullopt;
    }
    return n;
  }

  const JournalMode mode_;
  std::mt19937_64 rng_;
  vfs::MemFileSystem fs_;
  std::mutex mu_;
  std::vector<Accounts> versions_;  // the state the writer committed at each version
  std::atomic<int> acknowledged_{0};
  std::atomic<bool> writer_done_{false};
  std::atomic<uint64_t> busy_{0};
  std::string failure_;
  std::unique_ptr<vfs::File> shm_file_;
  std::unique_ptr<shm::WalIndex> index_;
  std::unique_ptr<vfs::File> log_file_, db_file_;  // FileCheck's read-only handles
  bool tearing_ = false;
  std::mt19937_64 tear_rng_;  // drawn in step order (under the schedule's lock)
  uint64_t tears_ = 0;
  std::array<std::pair<uint32_t, uint32_t>, 2> last_{};
};

// The windows of the races the explorer has found (with their fixes undone), as drops and
// holds ("a>b": a thread at a sits out until another reaches b; ScheduleOptions::drop_names).
// Measured with each fix undone by hand (docs/design-notes.md, "The schedule explorer").
struct KnownWindow {
  const char* race;
  const char* drops;
  bool background;  // needs the writer connection's background checkpointer
  bool tearing;     // World::set_tearing
};
constexpr KnownWindow kKnownWindows[] = {
    // Race 1: a reader between its header read and its pin while a restart stops between its
    // clear and its publish.
    {"restart publishing late", "begin_read:header,restart:midway,read:frame", false, false},
    // Race 2: a reader that read the header before a commit pins after the writer
    // connection's background copy of it, which waits unpublished until another
    // connection's checkpoint has run (and the reader re-checks only after that publishes).
    {"deferred copy overwritten",
     "begin_read:header>background:stepped,background:stepped>copy,"
     "begin_read:pinned>shm:set_backfill",
     true, false},
    // Race 3: a reader thread of the writer's own handle meets the header torn while the
    // writer holds WRITE between its index appends and its publish (the handle's mutex keeps
    // it out of the publish itself), and must not repair it under the writer's lock.
    {"own handle's reader repairing under its writer", "commit:appended>begin_read:done", false,
     true},
};

struct Outcome {
  std::string failure;  // "" when the schedule passed
  uint64_t steps = 0;
  uint64_t decisions = 0;
  uint64_t restarts = 0;
  uint64_t stalls = 0;
  uint64_t late = 0;  // wakes whose thread did not arrive in time (Schedule::late_arrivals)
  uint64_t tears = 0;  // headers damaged (World::set_tearing)
  uint64_t busy = 0;
  int adopted = 0;  // background threads the schedule adopted
  // Checkpoints held back (C3) by a reader pinned below another connection's copy: race 2's
  // window reached.
  uint64_t held_back = 0;
  std::string trace;
  std::string drops;  // the steps drawn by name, if any
};

Outcome RunOne(JournalMode mode, uint64_t seed, uint64_t expected_decisions,
               bool whole_trace) {
  World world(mode, seed);
  Outcome out;
  // One reader with the smallest page cache (16 pages, one a shard; the pager keeps at least
  // that many): it reads most pages from the log or the database file, where a torn snapshot
  // shows (a cached page of its generation would not).
  // Four kinds of schedule, by seed: PCT change points at any store or named step, PCT
  // change points at the named steps only, drops at three protocol steps drawn by name, and
  // the windows of the races found so far (kKnownWindows: their drops and holds, the rest of
  // the order drawn), so that a change that reopens one is found in the default tier.
  const int kind = static_cast<int>(seed % 4);
  const KnownWindow& window = kKnownWindows[(seed / 4) % std::size(kKnownWindows)];
  // Every other schedule of the first three kinds, and wherever a known window needs it, the
  // writer's connection checkpoints in the background after every commit (async:0/B at sync
  // FULL: its copies are deferred, unpublished, C3), a thread the schedule adopts: the
  // background checkpointer beside another connection's checkpoints (race 2).
  const bool background = kind == 3 ? window.background : (seed / 4) % 2 == 1;
  world.set_tearing(kind == 3 && window.tearing);  // before the opens: it sets their timeout
  std::unique_ptr<Db> writer = world.Open(2000, background ? "async:0/1000000" : "manual"),
                      reader = world.Open(/*cache_pages=*/1), other = world.Open(),
                      checkpointer = world.Open();
  if (writer == nullptr || reader == nullptr || other == nullptr || checkpointer == nullptr ||
      !world.Create(*writer)) {
    out.failure = world.failed() ? world.failure() : "could not create the database";
    return out;
  }
  ScheduleOptions options;
  options.seed = seed;
  options.expected_decisions = expected_decisions;
  if (whole_trace) options.trace_size = 1 << 20;
  options.every_store_decides = kind == 0;
  if (kind == 2) {
    options.change_points = 0;
    options.drop_points = 3;
  } else if (kind == 3) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(window.drops, ',');
  }
  // JKV_SCHEDULE_DROPS=a,b,c: every schedule drops at these steps (and has no change points),
  // to look at one window.
  if (const char* drops = std::getenv("JKV_SCHEDULE_DROPS"); drops != nullptr) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(drops, ',');
  }
  options.adopt_threads = background;
  {
    Schedule schedule(options);
    schedule.SetStepCheck([&](const char* point) { return world.StepCheck(point); });
    schedule.Run({
        [&] { world.Writer(*writer); },
        [&] { world.Reader(*reader, kReads); },
        [&] { world.Reader(*other, kReads); },
        // A reader thread of the writer's handle, at random times.
        [&] { world.Reader(*writer, kReads, /*polling=*/true); },
        [&] { world.Checkpointer(*checkpointer); },
    });
    out.restarts = writer->Stats().log_restarts + checkpointer->Stats().log_restarts;
    out.steps = schedule.steps();
    out.decisions = schedule.decisions();
    out.stalls = schedule.stalls();
    out.late = schedule.late_arrivals();
    out.adopted = schedule.adopted();
    out.held_back = schedule.visits("held_back");
    // JKV_SCHEDULE_COUNT=a,b: each schedule's seed and how often it reached those points (to
    // see which schedules reach a window).
    if (const char* names = std::getenv("JKV_SCHEDULE_COUNT"); names != nullptr) {
      std::string line = absl::StrCat("seed ", seed, background ? " (background)" : "", ":");
      for (absl::string_view point : absl::StrSplit(names, ',')) {
        absl::StrAppend(&line, " ", point, "=", schedule.visits(std::string(point)));
      }
      std::printf("%s\n", line.c_str());
    }
    out.trace = schedule.Trace();
    out.drops = schedule.DropNames();
    if (!schedule.step_failure().empty()) out.failure = schedule.step_failure();
    // Before the schedule goes: the writer's background checkpointer thread, which the
    // schedule adopted, calls its hooks until its database is closed.
    world.CloseIndex();
    writer.reset();
    reader.reset();
    other.reset();
    checkpointer.reset();
  }
  if (out.failure.empty()) world.Final();
  if (out.failure.empty()) out.failure = world.failure();
  out.busy = world.busy();
  out.tears = world.tears();
  return out;
}

class WalScheduleTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(WalScheduleTest, EveryScheduleReadsWholeSnapshotsAndLosesNoCommit) {
  const char* name = GetParam() == JournalMode::kWal2 ? "wal2" : "wal";
  std::vector<uint64_t> seeds;
  const char* env = std::getenv("JKV_SCHEDULE_SEED");
  uint64_t replay = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &replay)) {
    seeds.push_back(replay);
  } else {
    // JKV_SCHEDULES=N runs N schedules a mode instead of the tier's number.
    int n = TierScaled(40, 10, 2000);
    if (const char* count = std::getenv("JKV_SCHEDULES"); count != nullptr) {
      EXPECT_TRUE(absl::SimpleAtoi(count, &n) && n > 0) << "JKV_SCHEDULES=" << count;
    }
    // JKV_SCHEDULE_KINDS=0,1,2: only schedules of these kinds (see RunOne).
    std::string kinds = "0123";
    if (const char* k = std::getenv("JKV_SCHEDULE_KINDS"); k != nullptr) kinds = k;
    for (int i = 0; static_cast<int>(seeds.size()) < n; ++i) {
      const uint64_t seed = testing::DrawSeed(absl::StrCat("schedule/", name), i) >> 1;
      if (kinds.find(static_cast<char>('0' + seed % 4)) != std::string::npos) seeds.push_back(seed);
    }
  }
  // The change points span a run's decision points (about 240 a run at every store, 80 at the
  // named steps; fixed, so that a seed alone replays its schedule).
  const uint64_t expected[4] = {250, 80, 0, 0};
  Outcome total;
  uint64_t held_back = 0;  // schedules that reached race 2's window
  for (size_t i = 0; i < seeds.size(); ++i) {
    const uint64_t seed = seeds[i];
    Outcome o = RunOne(GetParam(), seed, expected[seed % 4], /*whole_trace=*/replay != 0);
    if (replay != 0) std::printf("%s: schedule seed %llu:\n%s", name,
                                 static_cast<unsigned long long>(seed), o.trace.c_str());
    ASSERT_EQ(o.failure, "") << name << ": schedule " << i + 1 << " of " << seeds.size()
                             << ", seed " << seed
                             << " (replay: --test_env=JKV_SCHEDULE_SEED=" << seed << ")"
                             << (o.drops.empty() ? "" : ", drops at: ") << o.drops << "\n"
                             << "the last steps:\n"
                             << o.trace;
    total.steps += o.steps;
    total.decisions += o.decisions;
    total.restarts += o.restarts;
    total.stalls += o.stalls;
    total.late += o.late;
    total.tears += o.tears;
    total.busy += o.busy;
    total.adopted += o.adopted;
    held_back += o.held_back > 0;
  }
  auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  const uint64_t steps = total.steps;
  std::printf("schedule explorer (%s): %zu schedules, %llu steps (%llu a schedule, %llu of them "
              "decision points), %llu log restarts, %llu stalls outside hook points, %llu busy "
              "answers retried, %llu background checkpointer threads adopted (%llu wakes not "
              "followed in time), %llu schedules with a checkpoint held back by a reader pinned "
              "below another connection's copy (race 2's window), %llu headers damaged\n",
              name, seeds.size(), n(steps), n(steps / seeds.size()),
              n(total.decisions / seeds.size()), n(total.restarts), n(total.stalls),
              n(total.busy), n(total.adopted), n(total.late), n(held_back), n(total.tears));
  EXPECT_GT(steps, seeds.size() * 100) << "the schedules ran almost nothing";
}

INSTANTIATE_TEST_SUITE_P(Modes, WalScheduleTest,
                         ::testing::Values(JournalMode::kWal, JournalMode::kWal2),
                         [](const ::testing::TestParamInfo<JournalMode>& info) {
                           return info.param == JournalMode::kWal2 ? "Wal2" : "Wal";
                         });

}  // namespace
}  // namespace journalkv
