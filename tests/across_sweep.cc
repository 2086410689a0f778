// The crash sweep across databases (across_sweep.h).
#include "tests/across_sweep.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/endian.h"
#include "base/test_scale.h"
#include "pager/across.h"
#include "pager/pager.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

namespace journalkv::testing {
namespace {

using pager::Pager;
using journalkv::PageNo;
using pager::WriteTxn;

const char* const kPaths[] = {"/d1/a.db", "/d1/b.db", "/d2/c.db"};

// One transaction of the workload: its participants and, per participant, the pages it
// rewrites (2..1+rewrite) and adds.
struct TxnSpec {
  std::vector<int> dbs;
  int rewrite = 0;
  int add = 0;
  int spill_db = -1;  // this participant adds 40 pages more (a spill: the cache holds 16)
  int rewrite_only_db = -1;  // this participant rewrites 34 pages, nothing else
};

std::vector<TxnSpec> Workload(int dbs) {
  const int last = dbs - 1;
  std::vector<TxnSpec> w = {
      {{0, 1, 2}, 0, 3, -1},
      {{0, 1}, 2, 1, -1},
      {{1, last}, 1, 2, 1},
      {{0, 1, 2}, 3, 0, -1},
      // b rewrites 34 pages and leaves its header alone: it spills them all, and its commit
      // writes page 1 as the spill did (J3: its seal alone would prove it complete).
      {{0, 1}, 1, 0, -1, /*rewrite_only_db=*/1},
      {{0}, 1, 0, -1},  // one database's commit after the others
  };
  for (TxnSpec& t : w) {
    std::erase_if(t.dbs, [&](int d) { return d >= dbs; });
    std::sort(t.dbs.begin(), t.dbs.end());
    t.dbs.erase(std::unique(t.dbs.begin(), t.dbs.end()), t.dbs.end());
  }
  return w;
}

struct DbState {
  uint32_t meta = 0;
  std::vector<uint32_t> tags;  // pages 2..page_count
  bool operator==(const DbState&) const = default;
};

std::string Describe(const DbState& s) {
  return absl::StrCat("meta ", s.meta, ", ", s.tags.size() + 1, " pages");
}

enum Kind { kPowerLoss = 0, kProcessCrash = 1, kCrashThenPowerLoss = 2 };
const char* const kKindNames[] = {"power loss", "process crash", "crash then power loss"};

// Sync removal: while a world with skip sites lives, the sync observer (vfs/sync.h) makes
// the file system skip the sync about to be made at any of them (SkipSyncs numbers the
// attempts: file syncs and directory syncs, op_count's kSync and kDirSync).
vfs::FaultInjectingFileSystem* skip_fs = nullptr;
const std::set<std::string>* skip_sites = nullptr;
uint64_t skips_made = 0;

void SkipAtSites(const char* site) {
  if (skip_fs == nullptr || !skip_sites->contains(site)) return;
  skip_fs->SkipSyncs({skip_fs->op_count(vfs::FaultOp::kSync) +
                      skip_fs->op_count(vfs::FaultOp::kDirSync) + 1});
  ++skips_made;
}

class World {
 public:
  explicit World(const AcrossConfig& config) : config_(config), fs_(&mem_) {
    vfs::FaultInjectingFileSystem::DiskModel disk;
    disk.unsynced_entries_may_survive = config.entries_may_survive;
    fs_.SetDiskModel(disk);
    if (!config_.skip_sites.empty()) {
      skip_fs = &fs_;
      skip_sites = &config_.skip_sites;
      vfs::SetSyncObserverForTesting(&SkipAtSites);
    }
  }
  ~World() {
    Close();
    if (skip_fs == &fs_) {
      vfs::SetSyncObserverForTesting(nullptr);
      skip_fs = nullptr;
    }
  }

  pager::PagerOptions Options() const {
    pager::PagerOptions o;
    o.journal_mode = config_.mode;
    o.sync = config_.sync;
    o.page_size = 512;
    o.cache_pages = 16;
    o.busy_timeout = absl::Milliseconds(10);
    return o;
  }

  absl::Status Setup() {
    for (int d = 0; d < config_.dbs; ++d) {
      auto pager = Pager::Open(&fs_, kPaths[d], Options());
      if (!pager.ok()) return pager.status();
      pagers_.push_back(std::move(pager).value());
    }
    base_ = fs_.mutation_count();
    return absl::OkStatus();
  }

  // Runs the workload until done or a step fails; `snapshots`, when given, gets each
  // database's state after each transaction (index 0: before the first).
  void Run(std::vector<std::vector<DbState>>* snapshots) {
    const std::vector<TxnSpec> work = Workload(config_.dbs);
    if (snapshots != nullptr) snapshots->push_back(ReadAllOpen());
    for (size_t i = 0; i < work.size(); ++i) {
      const uint32_t t = static_cast<uint32_t>(i + 1);
      in_flight_ = t;
      if (!RunTxn(work[i], t).ok()) return;
      acked_ = t;
      in_flight_ = 0;
      if (snapshots != nullptr) snapshots->push_back(ReadAllOpen());
    }
  }

  void Close() { pagers_.clear(); }

  // The state of database d, opened alone (recovering it), read and closed.
  absl::StatusOr<DbState> Recover(int d) {
    auto pager = Pager::Open(&fs_, kPaths[d], Options());
    if (!pager.ok()) return pager.status();
    return ReadState(**pager, kPaths[d]);
  }

  vfs::FaultInjectingFileSystem& fs() { return fs_; }
  uint64_t base() const { return base_; }
  uint32_t acked() const { return acked_; }
  uint32_t in_flight() const { return in_flight_; }

 private:
  absl::Status RunTxn(const TxnSpec& spec, uint32_t t) {
    std::vector<std::unique_ptr<WriteTxn>> txns;
    for (int d : spec.dbs) {
      auto txn = pagers_[d]->BeginWrite();
      if (!txn.ok()) return txn.status();
      WriteTxn& w = **txn;
      txns.push_back(std::move(txn).value());
      const bool rewrite_only = d == spec.rewrite_only_db;
      const int rewrite = rewrite_only ? 34 : spec.rewrite;  // two spills of 17: none left
      for (int p = 0; p < rewrite && p + 2 <= static_cast<int>(w.page_count()); ++p) {
        auto page = w.GetMutable(PageNo(p + 2));
        if (!page.ok()) return page.status();
        base::EncodeFixed32(page->data(), t);
        if (absl::Status s = w.SpillIfNeeded(); !s.ok()) return s;
      }
      if (rewrite_only) continue;
      const int add = spec.add + (d == spec.spill_db ? 40 : 0);
      for (int p = 0; p < add; ++p) {
        auto page = w.Allocate();
        if (!page.ok()) return page.status();
        base::EncodeFixed32(page->data.data(), t);
        if (absl::Status s = w.SpillIfNeeded(); !s.ok()) return s;
      }
      w.set_meta(0, t);
    }
    std::vector<WriteTxn*> raw;
    for (auto& txn : txns) raw.push_back(txn.get());
    return pager::CommitAcross(raw);
  }

  std::vector<DbState> ReadAllOpen() {
    std::vector<DbState> out;
    for (int d = 0; d < config_.dbs; ++d) {
      absl::StatusOr<DbState> s = ReadState(*pagers_[d], kPaths[d]);
      out.push_back(s.ok() ? *s : DbState{~0u, {}});
    }
    return out;
  }

  static absl::StatusOr<DbState> ReadState(Pager& pager, const std::string& path) {
    auto read = pager.BeginRead();
    if (!read.ok()) return read.status();
    auto problems = (*read)->CheckPages();
    if (!problems.ok()) return problems.status();
    if (!problems->empty()) {
      return absl::DataLossError(absl::StrCat(path, ": ", absl::StrJoin(*problems, "; ")));
    }
    DbState s;
    s.meta = (*read)->meta(0);
    for (uint32_t n = 2; n <= (*read)->page_count(); ++n) {
      auto page = (*read)->Get(PageNo(n));
      if (!page.ok()) return page.status();
      s.tags.push_back(base::DecodeFixed32(page->data().data()));
    }
    return s;
  }

  const AcrossConfig& config_;
  vfs::MemFileSystem mem_;
  vfs::FaultInjectingFileSystem fs_;
  std::vector<std::unique_ptr<Pager>> pagers_;
  uint64_t base_ = 0;
  uint32_t acked_ = 0;
  uint32_t in_flight_ = 0;
};

uint64_t RunSeedOnce() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("JKV_CRASH_SEED");
    const uint64_t s = env != nullptr ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::cout << "across crash sweep run seed " << s << " (JKV_CRASH_SEED=" << s
              << " replays it)\n";
    return s;
  }();
  return seed;
}

class Sweep {
 public:
  explicit Sweep(const AcrossConfig& config)
      : config_(config), rng_(RunSeedOnce() ^ std::hash<std::string>()(config.name)) {}

  AcrossCounts Run();

 private:
  // A world run to crash point `point` (mutations past setup); nullptr if setup failed.
  std::unique_ptr<World> RunTo(uint64_t point) {
    auto w = std::make_unique<World>(config_);
    if (!w->Setup().ok()) {
      Fail(absl::StrCat("setup failed at point ", point));
      return nullptr;
    }
    w->fs().CrashAfterMutations(point);
    w->Run(nullptr);
    w->Close();
    return w;
  }
  void Crash(World& w, Kind kind, uint64_t seed) {
    if (kind == kProcessCrash || kind == kCrashThenPowerLoss) {
      w.fs().SimulateProcessCrash();
    } else {
      (void)w.fs().SimulatePowerLoss(seed);
    }
  }
  // Recovers in `order` (a leading -1-d: database d alone first) and returns the states, or
  // records a failure.
  std::optional<std::vector<DbState>> Recover(World& w, const std::vector<int>& order,
                                              const std::string& where) {
    std::vector<std::optional<DbState>> states(config_.dbs);
    for (int d : order) {
      absl::StatusOr<DbState> s = w.Recover(d);
      if (!s.ok()) {
        Fail(absl::StrCat(where, ": recovering ", kPaths[d], ": ", s.status().ToString()));
        return std::nullopt;
      }
      if (states[d].has_value() && *states[d] != *s) {
        // Opened alone first, it recovered to one state; the others' recovery moved it.
        Fail(absl::StrCat(where, ": ", kPaths[d], " recovered alone to ", Describe(*states[d]),
                          ", then read ", Describe(*s), " after the others' recovery"));
        return std::nullopt;
      }
      states[d] = *s;
    }
    std::vector<DbState> out;
    for (auto& s : states) out.push_back(s.value_or(DbState{~0u, {}}));
    return out;
  }
  // The transactions every database's state matches, among `allowed`; a failure when none.
  std::vector<uint32_t> Judge(const std::vector<DbState>& states,
                              const std::vector<uint32_t>& allowed, const std::string& where) {
    std::vector<uint32_t> common;
    for (uint32_t t : allowed) {
      bool all = true;
      for (int d = 0; d < config_.dbs; ++d) all = all && snapshots_[t][d] == states[d];
      if (all) common.push_back(t);
    }
    if (common.empty()) {
      std::string got;
      for (int d = 0; d < config_.dbs; ++d) {
        absl::StrAppend(&got, " ", kPaths[d], ": ", Describe(states[d]), ";");
      }
      Fail(absl::StrCat(where, ": not all at one of the transactions {",
                        absl::StrJoin(allowed, ","), "}:", got));
    }
    return common;
  }
  void Fail(const std::string& what) {
    if (counts_.failure.empty()) counts_.failure = absl::StrCat(config_.name, ": ", what);
  }
  bool failed() const { return !counts_.failure.empty(); }
  std::vector<uint32_t> Allowed(const World& w) const {
    std::vector<uint32_t> a = {w.acked()};
    if (w.in_flight() != 0) a.push_back(w.in_flight());
    return a;
  }
  // One state: crash at `point` by `kind`, recover in `order`, judge.
  void CheckState(uint64_t point, Kind kind, uint64_t seed, const std::vector<int>& order);
  // Crashes the recovery of the state (point, kind) after each of its mutations.
  void CrashRecovery(uint64_t point, Kind kind, uint64_t seed);

  const AcrossConfig& config_;
  std::mt19937_64 rng_;
  std::vector<std::vector<DbState>> snapshots_;
  std::set<uint64_t> landed_points_;
  AcrossCounts counts_;
};

void Sweep::CheckState(uint64_t point, Kind kind, uint64_t seed, const std::vector<int>& order) {
  std::unique_ptr<World> w = RunTo(point);
  if (w == nullptr) return;
  const std::string where = absl::StrCat("point ", point, " ", kKindNames[kind], " seed ", seed,
                                         " order ", absl::StrJoin(order, ","), " (acked ",
                                         w->acked(), ", in flight ", w->in_flight(), ")");
  const std::vector<uint32_t> allowed = Allowed(*w);
  Crash(*w, kind, seed);
  std::vector<int> forward;
  for (int d = 0; d < config_.dbs; ++d) forward.push_back(d);
  if (kind == kCrashThenPowerLoss) {
    std::optional<std::vector<DbState>> first = Recover(*w, order, where + " first recovery");
    if (!first.has_value()) return;
    if (Judge(*first, allowed, where + " first recovery").empty()) return;
    (void)w->fs().SimulatePowerLoss(seed);
    std::optional<std::vector<DbState>> second = Recover(*w, forward, where + " after power loss");
    if (!second.has_value()) return;
    if (*second != *first) {
      Fail(absl::StrCat(where, ": a power loss after recovery changed what it recovered"));
      return;
    }
  }
  std::optional<std::vector<DbState>> states =
      kind == kCrashThenPowerLoss ? Recover(*w, forward, where) : Recover(*w, order, where);
  if (!states.has_value()) return;
  std::vector<uint32_t> common = Judge(*states, allowed, where);
  if (common.empty()) return;
  ++counts_.states;
  ++counts_.by_kind[kind];
  if (order.size() == 1 + static_cast<size_t>(config_.dbs)) ++counts_.lone_first;
  if (w->in_flight() != 0 && common.size() == 1) {
    (common.front() == w->in_flight() ? counts_.landed : counts_.undone)++;
    // A crash past the commit point: its recovery is crashed too, every one (these few
    // states are where a recoverer decides "committed" from the super-journal's absence).
    if (common.front() == w->in_flight()) landed_points_.insert(point);
  }
}

void Sweep::CrashRecovery(uint64_t point, Kind kind, uint64_t seed) {
  std::vector<int> forward;
  for (int d = 0; d < config_.dbs; ++d) forward.push_back(d);
  uint64_t recovery_mutations = 0;
  {
    std::unique_ptr<World> w = RunTo(point);
    if (w == nullptr) return;
    Crash(*w, kind, seed);
    const uint64_t before = w->fs().mutation_count();
    if (!Recover(*w, forward, "clean recovery").has_value()) return;
    recovery_mutations = w->fs().mutation_count() - before;
  }
  for (uint64_t m = 1; m < recovery_mutations && !failed(); ++m) {
    for (Kind second : {kProcessCrash, kPowerLoss}) {
      if (second == kPowerLoss && !config_.power_loss) continue;
      std::unique_ptr<World> w = RunTo(point);
      if (w == nullptr) return;
      const std::vector<uint32_t> allowed = Allowed(*w);
      Crash(*w, kind, seed);
      w->fs().CrashAfterMutations(m);
      for (int d : forward) (void)w->Recover(d);  // stops at the crash point
      const uint64_t seed2 = rng_();
      Crash(*w, second, seed2);
      const std::string where =
          absl::StrCat("point ", point, " ", kKindNames[kind], " seed ", seed,
                       ", recovery crashed after ", m, " by ", kKindNames[second], " seed ",
                       seed2);
      std::optional<std::vector<DbState>> states = Recover(*w, forward, where);
      if (!states.has_value() || Judge(*states, allowed, where).empty()) return;
      ++counts_.states;
      ++counts_.recovery_crashes;
    }
  }
}

AcrossCounts Sweep::Run() {
  // The clean run: the states after each transaction, the mutations.
  uint64_t total = 0;
  skips_made = 0;
  {
    World w(config_);
    absl::Status setup = w.Setup();
    w.Run(&snapshots_);
    if (!setup.ok() || w.in_flight() != 0) {
      Fail(absl::StrCat("the clean run failed at transaction ", w.in_flight()));
      return counts_;
    }
    total = w.fs().mutation_count() - w.base();
  }
  // Orders: forward, reverse, each database alone first.
  std::vector<std::vector<int>> orders(2);
  for (int d = 0; d < config_.dbs; ++d) orders[0].push_back(d);
  orders[1].assign(orders[0].rbegin(), orders[0].rend());
  for (int d = 0; d < config_.dbs; ++d) {
    std::vector<int> o = {d};
    for (int e = 0; e < config_.dbs; ++e) o.push_back(e);  // d again: already recovered
    orders.push_back(o);
  }
  // Default tier: every point, every order (a random one of them under a sanitizer, and
  // half the points); long tier: three power-loss seeds per point and kind.
  const bool long_tier = LongTier();
  const bool all_orders = (long_tier || !UnderSanitizer()) && !config_.one_order;
  std::vector<uint64_t> points;
  const int keep_in = config_.all_points ? 1 : TierScaled(1, 2, 1);
  for (uint64_t p = 1; p <= total; ++p) {
    if (rng_() % keep_in == 0) points.push_back(p);
  }
  std::vector<uint64_t> recovery_candidates;
  for (uint64_t point : points) {
    if (failed()) break;
    ++counts_.points;
    for (Kind kind : {kPowerLoss, kProcessCrash, kCrashThenPowerLoss}) {
      if (kind != kProcessCrash && !config_.power_loss) continue;
      const int seeds =
          kind == kProcessCrash ? 1 : std::max(config_.power_loss_seeds, long_tier ? 3 : 1);
      for (int s = 0; s < seeds && !failed(); ++s) {
        const uint64_t seed = rng_();
        if (all_orders) {
          for (const auto& order : orders) CheckState(point, kind, seed, order);
        } else {
          CheckState(point, kind, seed, orders[rng_() % orders.size()]);
        }
      }
    }
    recovery_candidates.push_back(point);
  }
  // Crashed recoveries: a sample of the states per first crash kind (all of them in the long
  // tier).
  const size_t n = TierScaled(10, 2, 1 << 20);
  for (Kind kind : {kProcessCrash, kPowerLoss}) {
    if (kind == kPowerLoss && !config_.power_loss) continue;
    std::vector<uint64_t> c;
    for (uint64_t p : recovery_candidates) {
      if (!landed_points_.contains(p)) c.push_back(p);
    }
    std::shuffle(c.begin(), c.end(), rng_);
    if (c.size() > n) c.resize(n);
    c.insert(c.end(), landed_points_.begin(), landed_points_.end());
    for (size_t i = 0; i < c.size() && !failed(); ++i) CrashRecovery(c[i], kind, rng_());
  }
  if (!config_.skip_sites.empty() && skips_made == 0) Fail("no sync made at the sites to skip");
  return counts_;
}

}  // namespace

std::string AcrossCounts::Summary() const {
  return absl::StrCat(points, " crash points, ", states, " states checked (", by_kind[0],
                      " power loss, ", by_kind[1], " process crash, ", by_kind[2],
                      " crash then power loss; ", lone_first, " recovered one database first; ",
                      recovery_crashes, " after a crashed recovery); in flight: ", landed,
                      " landed, ", undone, " undone");
}

AcrossCounts RunAcrossSweep(const AcrossConfig& config) {
  AcrossCounts counts = Sweep(config).Run();
  std::cout << config.name << ": " << counts.Summary()
            << (counts.failure.empty() ? "" : "\n  FAILED: " + counts.failure) << "\n";
  return counts;
}

}  // namespace journalkv::testing
