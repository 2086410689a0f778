#include "tests/schedule_world.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "log/wal_format.h"
#include "pager/pager_options.h"
#include "tests/crash_sweep.h"
#include "tests/schedule_explorer.h"
#include "wal/wal_connection.h"

namespace journalkv::testing {
namespace {

constexpr const char* kPath = "/x.db";
constexpr const char* kLogPaths[2] = {"/x.db-wal", "/x.db-wal2"};

std::string AccountKey(int i) { return absl::StrCat("acct", 10 + i); }

// Raises `a` to `v` unless it holds more already (writers acknowledge out of order).
void RaiseTo(std::atomic<int>& a, int v) {
  int seen = a.load();
  while (seen < v && !a.compare_exchange_weak(seen, v)) {
  }
}

}  // namespace

World::World(JournalMode mode, uint64_t seed, bool power_loss)
    : mode_(mode), rng_(seed), fs_(&files_), tear_rng_(~seed) {
  if (power_loss) {
    fault_ = std::make_unique<vfs::FaultInjectingFileSystem>(&files_);
    if ((seed >> 5) % 2 == 1) {
      fault_->SetDiskModel({.unsynced_entries_may_survive = true, .size_without_data = true});
    }
    fs_ = fault_.get();
  }
}

Options World::Opts(const Connection& c) {
  Options o;
  o.cache_pages = c.cache_pages;
  o.journal_mode = mode_;
  o.file_system = fs_;
  o.page_size = 1024;
  o.wal2_switch_pages = 8;
  o.checkpoint_policy = c.policy;
  o.sync = c.sync;
  o.reader_slots = c.reader_slots;
  // A torn header that stays so (set_tearing) holds a reader until its busy timeout: short
  // there, or each tear costs seconds of spinning.
  o.busy_timeout = tearing_ ? absl::Milliseconds(100) : absl::Seconds(2);
  return o;
}

std::unique_ptr<Db> World::Open(const Connection& c) {
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, Opts(c));
  if (!db.ok()) {
    Fail(absl::StrCat("open: ", db.status().ToString()));
    return nullptr;
  }
  return std::move(*db);
}

bool World::Create(Db& db) {
  Accounts start;
  start.fill(kInitial);
  {
    std::lock_guard<std::mutex> lock(mu_);
    versions_.push_back(start);
  }
  absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
  if (!Check(w.status(), "create: begin write")) return false;
  for (int i = 0; i < kAccounts; ++i) {
    if (!Check((*w)->Put(AccountKey(i), absl::StrCat(kInitial, pad_)), "create: put")) {
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
    Fail(absl::StrCat("create: the TRUNCATE checkpoint left the log (backfilled ", r->backfilled,
                      " of ", r->log_frames, " frames, blocked ", r->blocked, ")"));
  }
  return copied;
}

void World::Writer(Db& db, int commits, SyncLevel level) {
  std::mt19937_64 rng;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rng.seed(rng_());  // the writers start in the schedule's order
  }
  for (int c = 0; c < commits && !failed(); ++c) {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db.BeginWrite();
    if (Busy(w.status(), "begin write")) {
      --c;
      continue;
    }
    if (!w.ok()) break;
    std::optional<int> version = ReadInt(**w, "version");
    if (!version) break;
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
    bool put = true;
    for (int i : {from, to}) {
      put = put && Check((*w)->Put(AccountKey(i), absl::StrCat(next[i], pad_)), "put");
    }
    if (!put || !Check((*w)->Put("version", absl::StrCat(*version + 1)), "put")) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (versions_.size() != static_cast<size_t>(*version) + 1) {
        FailLocked(absl::StrCat("a writer read version ", *version, " after ", versions_.size() - 1,
                                " were committed"));
        break;
      }
      versions_.push_back(next);
    }
    const uint64_t borrowed = db.Stats().commits_flushed_by_others;
    if (!Check((*w)->Commit(), "commit")) break;
    RaiseTo(acknowledged_, *version + 1);
    if (level >= SyncLevel::kFull) {
      RaiseTo(durable_, *version + 1);
      // Published by another connection's flush (W12): its sync had to cover this commit.
      if (db.Stats().commits_flushed_by_others > borrowed) borrowed_flush_.store(true);
    }
    Yield();
  }
  writers_left_.fetch_sub(1);
}

void World::Reader(Db& db, int reads, bool polling) {
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
      if (!CheckAccounts(
              **t, *version,
              absl::StrCat("a reader at version ", *version, " (pass ", pass + 1, ")"))) {
        return;
      }
    }
  }
}

template <typename Txn>
bool World::CheckAccounts(Txn& t, int version, const std::string& who) {
  Accounts expect;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (version < 0 || static_cast<size_t>(version) >= versions_.size()) {
      FailLocked(absl::StrCat(who, ": version ", version, " was never committed"));
      return false;
    }
    expect = versions_[version];
  }
  int sum = 0;
  for (int i = 0; i < kAccounts; ++i) {
    std::optional<int> v = ReadInt(t, AccountKey(i));
    if (!v) return false;
    sum += *v;
    if (*v != expect[i]) {
      Fail(absl::StrCat(who, " read ", AccountKey(i), " = ", *v, ", committed ", expect[i],
                        ": a torn snapshot"));
      return false;
    }
  }
  if (sum != kAccounts * kInitial) {
    Fail(absl::StrCat(who, ": the accounts sum to ", sum));
    return false;
  }
  return true;
}

void World::Checkpointer(Db& db) {
  const CheckpointMode modes[] = {CheckpointMode::kPassive, CheckpointMode::kFull,
                                  CheckpointMode::kRestart, CheckpointMode::kTruncate};
  for (int c = 0; c < kCheckpoints && !failed(); ++c) {
    Yield();
    const int due = 1 + c * kCommits / kCheckpoints;
    while (acknowledged_.load() < due && !writers_done() && !failed()) {
      wal::CallWalHook("wait:poll");
      if (!RunCheckpoint(db, CheckpointMode::kPassive)) return;
    }
    if (!RunCheckpoint(db, modes[c % 4])) return;
  }
}

bool World::RunCheckpoint(Db& db, CheckpointMode mode) {
  absl::StatusOr<CheckpointResult> r = db.Checkpoint(mode);
  return r.ok() || Busy(r.status(), "checkpoint");
}

void World::PowerLoss() {
  const int polls = cut_.polls;
  for (int i = 0; i < polls && bodies_left_.load() > 0 && !power_lost_.load(); ++i) {
    wal::CallWalHook("wait:poll");
  }
  while (bodies_left_.load() > 0 && polls == 0 && !power_lost_.load()) Yield();
  // The cut itself is made by the step check of this step (CutPower), where every other thread
  // stands at a hook point and the index can be read without taking a step.
  if (fault_ != nullptr && !power_lost_.load()) wal::CallWalHook("power:cut");
}

void World::CutPower() {
  dark_.store(true);
  power_lost_.store(true);  // from here the step check reads nothing
  // Every power loss is checked: an `off` connection's shared work (a new generation's log
  // header, W4; checkpoints) syncs at the sync floor (wal/wal_connection.h D1), so it no
  // longer leaves the old header to come back under a `full` writer's commits (before D1 a
  // scripted run lost `full` commits so in 4 of 3,000 power losses, and this check skipped
  // such losses).
  const absl::Status s = fault_->SimulatePowerLoss(cut_.seed);
  if (!s.ok()) Fail(absl::StrCat("power loss: ", s.ToString()));
}

void World::Final() {
  dark_.store(false);
  if (failed()) return;
  const bool lost = power_lost_.load();
  int first = -1;
  for (int round = 0; round < 2; ++round) {
    std::unique_ptr<Db> db = Open();
    if (db == nullptr) return;
    if (round == 0) {
      absl::StatusOr<CheckpointResult> r = db->Checkpoint(CheckpointMode::kTruncate);
      if (!Check(r.status(), "final checkpoint")) return;
    }
    {
      absl::StatusOr<std::unique_ptr<ReadTransaction>> t = db->BeginRead();
      if (!Check(t.status(), "final read")) return;
      const std::string after = lost ? "after the power loss and a reopen" : "after a reopen";
      std::optional<int> version = ReadInt(**t, "version");
      if (!version) return;
      if (round == 0) first = recovered_ = *version;
      if (!lost && *version != acknowledged_.load()) {
        Fail(absl::StrCat(after, " the database is at version ", *version,
                          ", the last acknowledged commit was ", acknowledged_.load()));
        return;
      }
      if (lost && *version < durable_.load()) {
        Fail(absl::StrCat(after, " the database is at version ", *version, ", but version ",
                          durable_.load(), " was acknowledged at full: a durable commit lost"));
        return;
      }
      if (*version != first) {
        Fail(absl::StrCat("the final checkpoint moved the database from version ", first, " to ",
                          *version));
        return;
      }
      if (!CheckAccounts(**t, *version, absl::StrCat(after, " version ", *version))) return;
    }
    absl::StatusOr<CheckResult> check = db->Check();
    if (!Check(check.status(), "check")) return;
    if (!check->ok()) Fail(absl::StrCat("Check(): ", check->problems.front()));
  }
}

std::string World::StepCheck(const char* point) {
  if (power_lost_.load()) return "";
  // The acknowledging writer has reached its next point: every commit acknowledged at full
  // must be durable now.
  if (std::string_view(point) == "power:cut" ||
      (cut_.after_durable > 0 && durable_.load() >= cut_.after_durable) ||
      (cut_.after_borrowed_flush && borrowed_flush_.load())) {
    CutPower();
    return "";
  }
  if (index_ == nullptr) {
    absl::StatusOr<std::unique_ptr<vfs::File>> f =
        files_.Open("/x.db-shm", {vfs::OpenMode::kReadWrite, vfs::FileKind::kShm});
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
    if ((copied >> 32) == (written >> 32) &&
        static_cast<uint32_t>(copied) > static_cast<uint32_t>(written)) {
      return absl::StrCat("log ", l, ": copied through ", static_cast<uint32_t>(copied),
                          " past written through ", static_cast<uint32_t>(written));
    }
    auto& [seq, mx] = last_[l];
    if (seq == log.ckpt_seq && log.mx_frame < mx) {
      return absl::StrCat("log ", l, ": generation ", seq, "'s published end went back from ", mx,
                          " to ", log.mx_frame);
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
std::string World::FileCheck(const shm::IndexHeader& h) {
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
        files_.Open(kLogPaths[0], {vfs::OpenMode::kReadOnly, vfs::FileKind::kWal});
    absl::StatusOr<std::unique_ptr<vfs::File>> d =
        files_.Open(kPath, {vfs::OpenMode::kReadOnly, vfs::FileKind::kDatabase});
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
    size_t lo = 0;                                    // the newest frame <= backfill
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

void World::CloseIndex() {
  log_file_.reset();
  db_file_.reset();
  index_.reset();
  shm_file_.reset();
}

bool World::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !failure_.empty();
}

std::string World::failure() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void World::Fail(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  FailLocked(what);
}

void World::FailLocked(const std::string& what) {
  if (failure_.empty()) failure_ = what;
}

bool World::Check(const absl::Status& s, const char* what) {
  if (!s.ok() && !dark_.load()) Fail(absl::StrCat(what, ": ", s.ToString()));
  return s.ok();
}

bool World::Busy(const absl::Status& s, const char* what) {
  if (s.ok()) return false;
  if (dark_.load()) return false;  // after the power loss: the caller stops
  // A torn header that stays torn (World::set_tearing) is answered "aborted: retry".
  if (s.code() == absl::StatusCode::kUnavailable ||
      (tearing_ && s.code() == absl::StatusCode::kAborted)) {
    ++busy_;
    return busy_.load() < 10000;
  }
  Fail(absl::StrCat(what, ": ", s.ToString()));
  return false;
}

void World::Yield() { wal::CallWalHook("wait"); }

void World::Pace(int commits) {
  Yield();
  while (acknowledged_.load() < commits && !writers_done() && !failed()) Yield();
}

template <typename Txn>
std::optional<int> World::ReadInt(Txn& t, const std::string& key) {
  absl::StatusOr<std::optional<std::string>> v = t.Get(key);
  if (!Check(v.status(), "get")) return std::nullopt;
  int n;
  if (!v->has_value() || !absl::SimpleAtoi(absl::string_view(**v).substr(0, (*v)->find('.')), &n)) {
    Fail(absl::StrCat(key, " is missing or unreadable"));
    return std::nullopt;
  }
  return n;
}

void PrintCounts(const Schedule& schedule, uint64_t seed, const std::string& what) {
  const char* names = std::getenv("JKV_SCHEDULE_COUNT");
  if (names == nullptr) return;
  std::string line =
      absl::StrCat("seed ", seed, what.empty() ? "" : " (", what, what.empty() ? "" : ")", ":");
  for (absl::string_view point : absl::StrSplit(names, ',')) {
    absl::StrAppend(&line, " ", point, "=", schedule.visits(std::string(point)));
  }
  std::printf("%s\n", line.c_str());
}

Outcome RunInWorld(World& world, ScheduleOptions options, const std::string& what,
                   std::vector<std::unique_ptr<Db>>& dbs,
                   std::vector<std::function<void()>> bodies) {
  Outcome out;
  // JKV_SCHEDULE_DROPS=a,b,c: every schedule drops at these steps (and has no change points),
  // to look at one window.
  if (const char* drops = std::getenv("JKV_SCHEDULE_DROPS"); drops != nullptr) {
    options.change_points = 0;
    options.drop_names = absl::StrSplit(drops, ',');
  }
  world.set_bodies(static_cast<int>(bodies.size()));
  for (std::function<void()>& body : bodies) {
    body = [&world, inner = std::move(body)] {
      inner();
      world.BodyDone();
    };
  }
  if (world.power_loss()) {
    bodies.push_back([&world] { world.PowerLoss(); });
  }
  {
    Schedule schedule(options);
    schedule.SetStepCheck([&](const char* point) { return world.StepCheck(point); });
    schedule.Run(std::move(bodies));
    for (const std::unique_ptr<Db>& db : dbs) out.restarts += db->Stats().log_restarts;
    out.steps = schedule.steps();
    out.decisions = schedule.decisions();
    out.stalls = schedule.stalls();
    out.late = schedule.late_arrivals();
    out.adopted = schedule.adopted();
    out.held_back = schedule.visits("held_back");
    PrintCounts(schedule, options.seed, what);
    out.trace = schedule.Trace();
    out.drops = schedule.DropNames();
    if (!schedule.step_failure().empty()) out.failure = schedule.step_failure();
    world.CloseIndex();
    for (std::unique_ptr<Db>& db : dbs) db.reset();
  }
  if (out.failure.empty()) world.Final();
  if (out.failure.empty()) out.failure = world.failure();
  out.busy = world.busy();
  out.tears = world.tears();
  out.power_lost = world.power_lost();
  out.durable = world.durable();
  out.recovered = world.recovered();
  return out;
}

void RunSchedules(JournalMode mode, const ScheduleFamily& family) {
  const char* name = mode == JournalMode::kWal2 ? "wal2" : "wal";
  std::vector<uint64_t> seeds;
  const char* env = std::getenv("JKV_SCHEDULE_SEED");
  uint64_t replay = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &replay)) {
    seeds.push_back(replay);
  } else {
    int n = TierScaled(family.default_count, family.sanitizer_count, family.long_count);
    if (const char* count = std::getenv("JKV_SCHEDULES"); count != nullptr) {
      EXPECT_TRUE(absl::SimpleAtoi(count, &n) && n > 0) << "JKV_SCHEDULES=" << count;
    }
    std::string kinds;
    for (int k = 0; k < family.kinds; ++k) kinds += static_cast<char>('0' + family.first_kind + k);
    if (const char* k = std::getenv("JKV_SCHEDULE_KINDS"); k != nullptr) kinds = k;
    const bool any = std::any_of(kinds.begin(), kinds.end(), [&](char c) {
      return c >= '0' + family.first_kind && c < '0' + family.first_kind + family.kinds;
    });
    ASSERT_TRUE(any) << "JKV_SCHEDULE_KINDS=" << kinds << " names no kind of this test ("
                     << family.first_kind << " to " << family.first_kind + family.kinds - 1 << ")";
    for (int i = 0; static_cast<int>(seeds.size()) < n; ++i) {
      const uint64_t seed = DrawSeed(absl::StrCat(family.salt, "/", name), i) >> 1;
      const char kind = static_cast<char>('0' + family.first_kind + seed % family.kinds);
      if (kinds.find(kind) != std::string::npos) seeds.push_back(seed);
    }
  }
  const uint64_t map_reads_before = MapReadsSeen().load();
  Outcome total;
  uint64_t held_back = 0;  // schedules that reached race 2's window
  uint64_t power_losses = 0, durable_checked = 0, newer = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const uint64_t seed = seeds[i];
    Outcome o = family.run_one(mode, seed, /*whole_trace=*/replay != 0);
    if (replay != 0) {
      std::printf("%s: schedule seed %llu:\n%s", name, static_cast<unsigned long long>(seed),
                  o.trace.c_str());
    }
    ASSERT_EQ(o.failure, "") << name << ": schedule " << i + 1 << " of " << seeds.size()
                             << ", seed " << seed << ", kind "
                             << family.first_kind + seed % family.kinds
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
    power_losses += o.power_lost;
    durable_checked += o.power_lost && o.durable > 0;
    newer += o.power_lost && o.recovered > o.durable;
  }
  auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "schedule explorer (%s%s): %zu schedules, %llu steps (%llu a schedule, %llu of "
      "them decision points), %llu log restarts, %llu stalls outside hook points, %llu "
      "busy answers retried, %llu background checkpointer threads adopted (%llu wakes "
      "not followed in time), %llu schedules with a checkpoint held back by a reader "
      "pinned below another connection's copy (race 2's window), %llu headers "
      "damaged\n",
      family.label, name, seeds.size(), n(total.steps), n(total.steps / seeds.size()),
      n(total.decisions / seeds.size()), n(total.restarts), n(total.stalls), n(total.busy),
      n(total.adopted), n(total.late), n(held_back), n(total.tears));
  if (power_losses > 0) {
    std::printf(
        "schedule explorer (%s%s): %llu power losses, %llu of them checked for a "
        "durable commit, %llu recovered past the last durable commit\n",
        family.label, name, n(power_losses), n(durable_checked), n(newer));
  }
  EXPECT_GT(total.steps, seeds.size() * 100) << "the schedules ran almost nothing";
  if (SweepsOnRealFiles()) {
    const uint64_t map_reads = MapReadsSeen().load() - map_reads_before;
    std::printf("schedule explorer (%s%s): on real files (tests/sweep_base.h), map %s: %llu "
                "reads served by it\n",
                family.label, name, pager::DefaultMmapSize() > 0 ? "on" : "off", n(map_reads));
    if (pager::DefaultMmapSize() > 0) {
      EXPECT_GT(map_reads, 0u) << "the read map never served a read of the schedules";
    }
  }
}

}  // namespace journalkv::testing
