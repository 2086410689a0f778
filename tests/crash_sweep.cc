#include "tests/crash_sweep.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "pager/pager_options.h"
#include "tests/sweep_base.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

namespace journalkv::testing {

const char* CrashKindName(CrashKind kind) {
  switch (kind) {
    case CrashKind::kPowerLoss:
      return "power loss";
    case CrashKind::kProcessCrash:
      return "process crash";
    case CrashKind::kCrashThenPowerLoss:
      return "process crash, recovery, power loss";
  }
  return "?";
}

bool EveryRecoveryCrashed() {
  const char* env = std::getenv("JKV_EVERY_RECOVERY");
  return env != nullptr && std::string(env) == "1";
}

uint64_t RunSeed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    const char* env = std::getenv("JKV_CRASH_SEED");
    if (env == nullptr || !absl::SimpleAtoi(env, &s)) {
      s = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    }
    std::printf("crash sweep run seed %llu (replay: --test_env=JKV_CRASH_SEED=%llu), tier %s\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s),
                LongTier() ? (EveryRecoveryCrashed() ? "long, every recovery crashed" : "long")
                           : (UnderSanitizer() ? "default, sanitizer" : "default"));
    return s;
  }();
  return seed;
}

uint64_t DrawSeed(const std::string& salt, uint64_t n) {
  // A fixed mix (not absl::Hash, which is salted per process): the same run seed must give the
  // same choices in every process.
  uint64_t h = RunSeed() ^ 0x9E3779B97F4A7C15ull;
  for (unsigned char c : salt) h = (h ^ c) * 0x100000001B3ull;
  h ^= n * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}

std::vector<uint64_t> PowerLossSeeds(const std::string& salt, uint64_t point) {
  std::vector<uint64_t> seeds = {point * 131};
  const int random = TierScaled(1, 0, 4);
  std::mt19937_64 rng(DrawSeed(salt, point));
  for (int i = 0; i < random; ++i) seeds.push_back(rng());
  return seeds;
}

std::vector<uint64_t> SweepPoints(const std::string& salt, const std::vector<uint64_t>& must,
                                  uint64_t total, size_t further) {
  std::set<uint64_t> points;
  if (LongTier()) {
    for (uint64_t i = 1; i <= total; ++i) points.insert(i);
    return std::vector<uint64_t>(points.begin(), points.end());
  }
  std::mt19937_64 rng(DrawSeed(salt, ~uint64_t{0}));
  // A third of the must points (one in 25 under a sanitizer, where the optimized run has
  // already covered a third: there the sweep is for memory errors on these paths), each drawn
  // on its own.
  const uint64_t keep_one_in = UnderSanitizer() ? 25 : 3;
  std::set<uint64_t> unique_must(must.begin(), must.end());
  for (uint64_t p : unique_must) {
    if (rng() % keep_one_in == 0) points.insert(p);
  }
  const size_t want = std::min<size_t>(total, points.size() + further);
  while (points.size() < want) points.insert(1 + rng() % total);
  return std::vector<uint64_t>(points.begin(), points.end());
}

std::vector<uint64_t> Sample(const std::string& salt, const std::vector<uint64_t>& all,
                             size_t cap) {
  if (EveryRecoveryCrashed() || all.size() <= cap) return all;
  std::vector<uint64_t> out;
  std::mt19937_64 rng(DrawSeed(salt, cap));
  std::sample(all.begin(), all.end(), std::back_inserter(out), cap, rng);
  return out;
}

std::vector<int> UpTo(const RunResult& run) {
  std::vector<int> v;
  for (int t = 0; t <= std::max(run.acknowledged, run.in_flight); ++t) v.push_back(t);
  return v;
}

std::vector<int> FromLastDurable(const RunResult& run) {
  std::vector<int> v;
  for (int t = run.acknowledged_durable; t <= std::max(run.acknowledged, run.in_flight); ++t) {
    v.push_back(t);
  }
  return v;
}

std::string SweepCounts::Summary() const {
  return absl::StrCat(points, " crash points, ", states, " crash states (", by_kind[0],
                      " power loss, ", by_kind[1], " process crash, ", by_kind[2],
                      " crash+recovery+power loss with ", probes, " probe commits; ",
                      recovery_crashes, " after a crash during recovery), ", rollbacks,
                      " recoveries that found a journal or log, ", in_flight_landed,
                      " in-flight commits found complete, ", in_flight_undone,
                      " found undone, ", lost_unsynced,
                      " power losses that dropped unsynced data");
}

std::vector<int> Guarantees::Outcomes(const RunResult& run, CrashKind kind) const {
  if (kind == CrashKind::kPowerLoss && !power_loss_durable) return FromLastDurable(run);
  return Allowed(run);
}

namespace {

// The clean run's sync sites, counted by the sync observer. The observer is called by every
// thread that syncs: the workload's, and a background checkpointer's (async:N/B policies), so
// the map is guarded (TSan caught the two counting at once in wal_policy_crash_test).
std::mutex clean_sites_mu;
std::map<std::string, int>* clean_sites = nullptr;  // guarded by clean_sites_mu
void CountSite(const char* site) {
  std::lock_guard<std::mutex> lock(clean_sites_mu);
  if (clean_sites != nullptr) ++(*clean_sites)[site];
}
void CountSitesInto(std::map<std::string, int>* sites) {
  std::lock_guard<std::mutex> lock(clean_sites_mu);
  clean_sites = sites;
}

class Sweep {
 public:
  explicit Sweep(const SweepSpec& spec) : spec_(spec), g_(spec.guarantees) {}

  SweepCounts Run() {
    RunSeed();  // printed first
    start_ = absl::Now();
    map_reads_at_start_ = MapReadsSeen().load();
    if (!CleanRun()) return counts_;
    std::vector<uint64_t> points = Points();
    counts_.points = points.size();
    for (uint64_t point : points) {
      ++points_tried_;
      const std::vector<uint64_t> seeds = spec_.deterministic
                                              ? PowerLossSeeds(spec_.name, point)
                                              : std::vector<uint64_t>{DrawSeed(spec_.name, point)};
      for (size_t i = 0; i < seeds.size() && g_.power_loss; ++i) {
        if (!State(point, CrashKind::kPowerLoss, seeds[i], i == 0)) return Failed();
      }
      if (!State(point, CrashKind::kProcessCrash, 0, true)) return Failed();
      for (size_t i = 0; i < seeds.size() && g_.power_loss; ++i) {
        if (!State(point, CrashKind::kCrashThenPowerLoss, seeds[i], i == 0)) return Failed();
      }
    }
    if (spec_.deterministic && g_.atomic) {
      for (uint64_t point : Sample(spec_.name + "/recovery", recovering_after_process_crash_,
                                   spec_.recovery_crash_states)) {
        if (!RecoverTwice(point, /*power_loss_first=*/false)) return Failed();
      }
      for (uint64_t point : Sample(spec_.name + "/recovery after power loss",
                                   recovering_after_power_loss_, spec_.recovery_crash_states)) {
        if (!RecoverTwice(point, /*power_loss_first=*/true)) return Failed();
      }
    }
    std::printf("%s: over %llu mutations: %s\n", spec_.name.c_str(),
                static_cast<unsigned long long>(total_), counts_.Summary().c_str());
    if (SweepsOnRealFiles()) {
      // With the map on, the pager's reads of the database file (the workload's, recovery's
      // and the verification's) must have gone through it: else this run tests only pread.
      const uint64_t map_reads = MapReadsSeen().load() - map_reads_at_start_;
      std::printf("%s: on real files (tests/sweep_base.h), map %s: %llu reads served by it\n",
                  spec_.name.c_str(), pager::DefaultMmapSize() > 0 ? "on" : "off",
                  static_cast<unsigned long long>(map_reads));
      if (pager::DefaultMmapSize() > 0) {
        EXPECT_GT(map_reads, 0u) << spec_.name << ": the read map never served a read";
      }
    }
    // Not vacuous: states were verified, recoveries had something to do, and so on.
    EXPECT_GT(counts_.states, 0u) << spec_.name;
    if (g_.atomic && !g_.nothing_to_recover) {
      EXPECT_GT(counts_.rollbacks, 0u)
          << spec_.name << ": no crash left a journal or log frames: the sweep tests nothing";
    }
    if (g_.atomic && g_.nothing_to_recover) {
      // Recovery writes nothing but a creation's hot journal (and, at NORMAL, the close's
      // flush), and every durable commit survives a power loss whole: only the commits a power
      // loss may drop (not durable) must have been dropped somewhere.
      EXPECT_GT(counts_.in_flight_undone, 0u)
          << spec_.name << ": no crash fell in a commit: the sweep tests nothing";
      if (g_.power_loss && !g_.power_loss_durable) {
        EXPECT_GT(counts_.lost_unsynced, 0u) << spec_.name << ": no power loss dropped anything";
      }
    }
    if (g_.atomic && !g_.nothing_to_recover) {
      if (spec_.deterministic && spec_.recovery_crash_states > 0) {
        EXPECT_GT(counts_.recovery_crashes, 0u) << spec_.name << ": recovery was never crashed";
      }
      if (g_.power_loss) {
        EXPECT_GT(counts_.lost_unsynced, 0u) << spec_.name << ": no power loss dropped anything";
      }
    }
    return counts_;
  }

 private:
  // A state failed (reported already): how far the sweep got, so that how quickly a
  // configuration finds a bug can be read off its log.
  SweepCounts Failed() {
    std::printf("%s: FAILED at crash point %llu of %llu, after %llu crash states passed, "
                "%.1f s into the sweep\n",
                spec_.name.c_str(), static_cast<unsigned long long>(points_tried_),
                static_cast<unsigned long long>(counts_.points),
                static_cast<unsigned long long>(counts_.states),
                absl::ToDoubleSeconds(absl::Now() - start_));
    return counts_;
  }

  bool CleanRun() {
    SweepBase base;
    vfs::FaultInjectingFileSystem fs(&base.fs());
    fs.SetDiskModel(spec_.disk);
    std::map<std::string, int> sites;
    CountSitesInto(&sites);
    vfs::SetSyncObserverForTesting(&CountSite);
    RunResult clean = spec_.workload ? spec_.workload->run(fs, /*record=*/true)
                                     : RunWorkload(fs, spec_.options, /*record=*/true);
    vfs::SetSyncObserverForTesting(nullptr);
    CountSitesInto(nullptr);
    if (clean.acknowledged != spec_.options.transactions) {
      ADD_FAILURE() << spec_.name << ": the clean run stopped after transaction "
                    << clean.acknowledged;
      return false;
    }
    if (spec_.options.pager.journal_mode == pager::JournalMode::kWal ||
        spec_.options.pager.journal_mode == pager::JournalMode::kWal2) {
      std::printf("%s: clean run: %llu checkpoints (%d called by the workload), %llu log "
                  "restarts, %llu log switches, largest log %u frames, %llu frames rewritten "
                  "by their transactions\n",
                  spec_.name.c_str(), static_cast<unsigned long long>(clean.checkpoints),
                  clean.explicit_checkpoints, static_cast<unsigned long long>(clean.log_restarts),
                  static_cast<unsigned long long>(clean.log_switches), clean.max_log_frames,
                  static_cast<unsigned long long>(clean.frames_rewritten));
    }
    if (spec_.check_clean_run) spec_.check_clean_run(clean, sites);
    history_ = clean.after;
    must_ = fs.sync_mutation_indexes();
    must_.insert(must_.end(), clean.idle_points.begin(), clean.idle_points.end());
    idle_.insert(clean.idle_points.begin(), clean.idle_points.end());
    total_ = fs.mutation_count();
    return !::testing::Test::HasFatalFailure();
  }

  std::vector<uint64_t> Points() {
    if (!spec_.deterministic) {
      // Spread over the run, each at a random place in its stretch (a run's length varies a
      // little with the interleaving; points past its end crash nothing and are verified too).
      std::vector<uint64_t> points;
      const uint64_t n = spec_.further_points;
      std::mt19937_64 rng(DrawSeed(spec_.name, ~uint64_t{0}));
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t from = 1 + total_ * i / n, to = 1 + total_ * (i + 1) / n;
        points.push_back(from + (to > from ? rng() % (to - from) : 0));
      }
      return points;
    }
    if (g_.atomic) return SweepPoints(spec_.name, must_, total_, spec_.further_points);
    // Without crash atomicity only a crash between transactions has a defined outcome, and one
    // while the database is created (I9: creation is atomic in every mode).
    std::vector<uint64_t> eligible(idle_.begin(), idle_.end());
    for (uint64_t p = 1; p < *idle_.begin(); ++p) eligible.push_back(p);
    std::vector<uint64_t> points = SweepPoints(spec_.name, eligible, total_, 0);
    std::erase_if(points, [&](uint64_t p) { return !idle_.contains(p) && p > *idle_.begin(); });
    return points;
  }

  std::unique_ptr<CrashWorld> RunTo(uint64_t point) {
    auto w = std::make_unique<CrashWorld>();
    w->fs = std::make_unique<vfs::FaultInjectingFileSystem>(&w->base);
    w->fs->SetDiskModel(spec_.disk);
    if (spec_.before_run) spec_.before_run(*w);
    w->fs->CrashAfterMutations(point);
    w->run = spec_.workload ? spec_.workload->run(*w->fs, /*record=*/false)
                            : RunWorkload(*w->fs, spec_.options, /*record=*/false);
    if (spec_.after_run) spec_.after_run(*w, point);
    return w;
  }

  void PowerLoss(CrashWorld& w, uint64_t seed) {
    const uint64_t before = FilesDigest(w.base);
    const absl::Status s = w.fs->SimulatePowerLoss(seed);
    EXPECT_TRUE(s.ok()) << s;
    counts_.lost_unsynced += FilesDigest(w.base) != before;
  }

  // Recovery as a new connection makes it (open, read, close), counting every mutation it made.
  Recovered Recover(CrashWorld& w, const std::vector<int>& allowed,
                    const ModelState* exact = nullptr) {
    const uint64_t start = w.fs->mutation_count();
    Recovered r = spec_.workload ? spec_.workload->verify(*w.fs, allowed)
                                 : Verify(*w.fs, spec_.options, history_, allowed, exact);
    r.mutations = w.fs->mutation_count() - start;
    return r;
  }

  bool Check(const Recovered& r, const std::string& context) {
    EXPECT_EQ(r.problem, "") << context;
    if (!r.problem.empty()) return false;
    ++counts_.states;
    counts_.rollbacks += r.rolled_back;
    return true;
  }

  // One crash state; false when it failed (the failure is reported).
  bool State(uint64_t point, CrashKind kind, uint64_t seed, bool first_seed) {
    const std::string context =
        absl::StrCat(spec_.name, ": crash after mutation ", point, " of ", total_, ", ",
                     CrashKindName(kind), kind == CrashKind::kProcessCrash
                                              ? std::string()
                                              : absl::StrCat(", seed ", seed));
    auto w = RunTo(point);
    switch (kind) {
      case CrashKind::kPowerLoss: {
        PowerLoss(*w, seed);
        if (g_.no_journal_after_idle_power_loss && idle_.contains(point) &&
            HotJournalPresent(*w->fs)) {
          ADD_FAILURE() << context << ": a journal is left after a power loss between "
                        << "transactions";
          return false;
        }
        Recovered r = Recover(*w, g_.Outcomes(w->run, kind));
        if (!Check(r, context)) return false;
        ++counts_.by_kind[0];
        counts_.in_flight_landed += r.t == w->run.in_flight && r.t != 0;
        counts_.in_flight_undone += w->run.in_flight != 0 && r.t != w->run.in_flight;
        if (r.mutations > 0 && first_seed) recovering_after_power_loss_.push_back(point);
        return true;
      }
      case CrashKind::kProcessCrash: {
        w->fs->SimulateProcessCrash();
        Recovered r = Recover(*w, g_.Outcomes(w->run, kind));
        if (!Check(r, context)) return false;
        ++counts_.by_kind[1];
        counts_.in_flight_undone += w->run.in_flight != 0 && r.t != w->run.in_flight;
        if (r.mutations > 0) recovering_after_process_crash_.push_back(point);
        return true;
      }
      case CrashKind::kCrashThenPowerLoss: {
        w->fs->SimulateProcessCrash();
        Recovered first = Recover(*w, g_.Outcomes(w->run, kind));
        if (!Check(first, context + " (first recovery)")) return false;
        ModelState expect = first.state;
        bool probed = false;
        if (seed % 2 == 1 && !spec_.workload) {
          expect = Probe(*w->fs, spec_.options, first.state, seed, &probed);
          if (!probed) {
            ADD_FAILURE() << context << ": the probe transaction failed";
            return false;
          }
          ++counts_.probes;
        }
        PowerLoss(*w, seed);
        // What the recovery reached is durable (rollback modes sync it; in WAL the closing
        // connection checkpointed it, syncing the log first at NORMAL, C1), and so is the probe.
        Recovered second = probed ? Recover(*w, {}, &expect) : Recover(*w, {first.t});
        if (!Check(second, absl::StrCat(context, probed ? ", probe" : ""))) return false;
        ++counts_.by_kind[2];
        return true;
      }
    }
    return false;
  }

  // Crashes the recovery of the state at `point` after each of its mutations, by a process
  // crash and by a power loss, and recovers again.
  bool RecoverTwice(uint64_t point, bool power_loss_first) {
    const uint64_t seed = PowerLossSeeds(spec_.name, point).front();
    auto first_crash = [&](CrashWorld& w) {
      if (power_loss_first) {
        PowerLoss(w, seed);
      } else {
        w.fs->SimulateProcessCrash();
      }
    };
    const CrashKind first_kind = power_loss_first ? CrashKind::kPowerLoss
                                                  : CrashKind::kProcessCrash;
    auto clean = RunTo(point);
    first_crash(*clean);
    Recovered once = Recover(*clean, g_.Outcomes(clean->run, first_kind));
    if (!Check(once, absl::StrCat(spec_.name, ": crash after mutation ", point, ", ",
                                  CrashKindName(first_kind), ": clean recovery"))) {
      return false;
    }
    for (uint64_t j = 0; j < once.mutations; ++j) {
      for (bool second_power_loss : {false, true}) {
        if (second_power_loss && !g_.power_loss) continue;
        const std::string context = absl::StrCat(
            spec_.name, ": crash after mutation ", point, ", ", CrashKindName(first_kind),
            ", recovery crashed after its mutation ", j, " of ", once.mutations, " by ",
            second_power_loss ? "power loss" : "process crash");
        auto w = RunTo(point);
        first_crash(*w);
        w->fs->CrashAfterMutations(j);  // j more mutations succeed: counted from here
        if (spec_.workload) {
          spec_.workload->recover(*w->fs);  // the crash point stops it
        } else {
          auto p = pager::Pager::Open(w->fs.get(), kSweepPath, spec_.options.pager);
          if (p.ok()) (*p)->BeginRead().IgnoreError();  // the crash point stops it
        }
        if (second_power_loss) {
          PowerLoss(*w, seed + j + 1);
        } else {
          w->fs->SimulateProcessCrash();
        }
        // After a power loss first, what is on disk is fixed: recovery must reach the same
        // transaction however often it is cut. After a process crash first, a power loss
        // during recovery may still drop the crashed writer's unsynced changes (a recovery
        // cut before it made them durable, W6 in WAL, leaves them as unsynced as it found
        // them), so what a power loss may leave of that run is allowed, no less.
        const bool same = power_loss_first || !second_power_loss;
        Recovered again = Recover(*w, same ? std::vector<int>{once.t}
                                           : g_.Outcomes(clean->run, CrashKind::kPowerLoss));
        if (!Check(again, context)) return false;
        ++counts_.recovery_crashes;
      }
    }
    return true;
  }

  const SweepSpec& spec_;
  const Guarantees& g_;
  std::vector<ModelState> history_;
  std::vector<uint64_t> must_;
  std::set<uint64_t> idle_;
  uint64_t total_ = 0;
  // Crash points whose recovery wrote something, by the first crash.
  std::vector<uint64_t> recovering_after_process_crash_, recovering_after_power_loss_;
  SweepCounts counts_;
  uint64_t points_tried_ = 0;  // crash points begun (the recovery crashes count as none)
  absl::Time start_;
  uint64_t map_reads_at_start_ = 0;
};

}  // namespace

SweepCounts RunCrashSweep(const SweepSpec& spec) { return Sweep(spec).Run(); }

}  // namespace journalkv::testing
