#include "tests/sync_sweep.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/mem_fs.h"
#include "vfs/sync.h"

namespace journalkv::testing {
namespace {

using SyncRecord = vfs::FaultInjectingFileSystem::SyncRecord;

std::vector<std::string>* recorded_sites = nullptr;
void RecordSite(const char* site) {
  if (recorded_sites != nullptr) recorded_sites->push_back(site);
}

// Records the site of every sync made while it lives.
class SiteRecorder {
 public:
  explicit SiteRecorder(std::vector<std::string>* sites) {
    recorded_sites = sites;
    vfs::SetSyncObserverForTesting(&RecordSite);
  }
  ~SiteRecorder() {
    vfs::SetSyncObserverForTesting(nullptr);
    recorded_sites = nullptr;
  }
};

std::string Describe(const SyncRecord& r, const std::string& site) {
  std::string what = r.path.substr(r.path.find_last_of('/') + 1);
  if (r.directory) what = "directory";
  return absl::StrCat("sync #", r.ordinal, " [", site, "] (", what, ", after mutation ",
                      r.mutation_index, ")");
}

const char* RoleNote(SyncRole role) {
  switch (role) {
    case SyncRole::kNeeded:
      return "";
    case SyncRole::kUnproven:
      return " (kept on reasoning or proven elsewhere: not asserted)";
    case SyncRole::kCovered:
      return " (another sync covers it in this workload: not asserted)";
    case SyncRole::kNeededAtSite:
      return " (another sync of its site may cover it: asserted per site)";
    case SyncRole::kNotTried:
      return " (not tried)";
  }
  return "";
}

// How far after it a sync that is not asserted one by one is searched in the default tier.
constexpr uint64_t kShortWindow = 30;
constexpr uint64_t kSiteWindow = 80;  // kNeededAtSite

}  // namespace

SyncSweep::SyncSweep(SyncSweepSpec spec) : spec_(std::move(spec)) {
  RunSeed();  // printed first
  SweepBase base;
  vfs::FaultInjectingFileSystem fs(&base.fs());
  fs.SetDiskModel(spec_.disk);
  RunResult clean;
  {
    SiteRecorder recorder(&sites_);
    clean = RunWorkload(fs, spec_.options, /*record=*/true);
  }
  if (clean.acknowledged != spec_.options.transactions) {
    ADD_FAILURE() << spec_.name << ": the clean run stopped after transaction "
                  << clean.acknowledged;
    return;
  }
  history_ = clean.after;
  idle_.insert(clean.idle_points.begin(), clean.idle_points.end());
  total_ = fs.mutation_count();
  log_ = fs.sync_log();
}

std::string SyncSweep::FirstProblem(uint64_t point, uint64_t seed,
                                    const std::set<uint64_t>& skip, bool via_recovery,
                                    uint64_t recovery_skip, uint64_t recovery_crash) {
  const Guarantees& g = spec_.guarantees;
  // Without crash atomicity only crashes between transactions (and during creation, I9) have
  // a defined outcome.
  if (!g.atomic && !idle_.contains(point) && point > *idle_.begin()) return "";
  ++states_;
  auto w = RunTo(spec_.options, spec_.disk, point, skip);
  if (!via_recovery) {
    if (!w->fs->SimulatePowerLoss(seed).ok()) return "power loss failed";
    if (g.no_journal_after_idle_power_loss && idle_.contains(point) &&
        HotJournalPresent(*w->fs)) {
      return "a journal is left after a power loss between transactions";
    }
    return Verify(*w->fs, spec_.options, history_, g.Outcomes(w->run, CrashKind::kPowerLoss))
        .problem;
  }
  w->fs->SimulateProcessCrash();
  if (recovery_skip != 0) {
    std::set<uint64_t> all = skip;
    all.insert(w->fs->sync_log().size() + recovery_skip);  // no sync failed: ordinals dense
    w->fs->SkipSyncs(all);
  }
  if (recovery_crash != kNoCrash) {
    w->fs->CrashAfterMutations(recovery_crash);
    {
      auto p = pager::Pager::Open(w->fs.get(), kSweepPath, spec_.options.pager);
      if (p.ok()) (*p)->BeginRead().IgnoreError();
    }
    if (!w->fs->SimulatePowerLoss(seed).ok()) return "power loss failed";
    return Verify(*w->fs, spec_.options, history_, g.Outcomes(w->run, CrashKind::kPowerLoss))
        .problem;
  }
  Recovered first = Verify(*w->fs, spec_.options, history_, Allowed(w->run));
  if (!first.problem.empty()) return first.problem;
  ModelState expect = first.state;
  bool probed = false;
  if (seed % 2 == 1) {
    expect = Probe(*w->fs, spec_.options, first.state, seed, &probed);
    if (!probed) return "the probe failed";
  }
  if (!w->fs->SimulatePowerLoss(seed).ok()) return "power loss failed";
  return probed ? Verify(*w->fs, spec_.options, history_, {}, &expect).problem
                : Verify(*w->fs, spec_.options, history_, {first.t}).problem;
}

std::string SyncSweep::Search(uint64_t from, uint64_t to, const std::set<uint64_t>& skip) {
  for (uint64_t point = from; point <= to; ++point) {
    // The states that need a sync lie mostly just after it: many seeds there, few later.
    const int seeds = point < from + 3 ? spec_.seeds_near : spec_.seeds_far;
    for (int seed = 0; seed < seeds; ++seed) {
      for (bool via_recovery : {false, true}) {
        std::string p = FirstProblem(point, point * 977 + seed, skip, via_recovery);
        if (!p.empty()) return absl::StrCat("crash after mutation ", point, ": ", p);
      }
    }
  }
  return "";
}

void SyncSweep::CommitSyncsAreNeeded() {
  ASSERT_FALSE(history_.empty()) << spec_.name << ": no clean run";
  ASSERT_FALSE(log_.empty()) << spec_.name;
  ASSERT_EQ(sites_.size(), log_.size()) << "a sync bypassed vfs/sync.h";
  // Without a skip the same states pass: a failure below is the skipped sync's.
  for (uint64_t point = 1; point <= total_; point += spec_.sanity_stride) {
    for (bool via_recovery : {false, true}) {
      ASSERT_EQ(FirstProblem(point, point, {}, via_recovery), "")
          << spec_.name << ": with no sync skipped, the crash after mutation " << point
          << (via_recovery ? " (process crash, recovery, power loss)" : " (power loss)")
          << " fails";
    }
  }
  std::map<std::string, std::vector<size_t>> by_site;
  for (size_t i = 0; i < log_.size(); ++i) by_site[sites_[i]].push_back(i);
  std::set<size_t> chosen;
  for (const auto& [site, indexes] : by_site) {
    if (LongTier() || spec_.every_sync_of_sites.contains(site)) {
      chosen.insert(indexes.begin(), indexes.end());
      continue;
    }
    chosen.insert(indexes.front());
    chosen.insert(indexes.back());
    if (indexes.size() > 2 && !UnderSanitizer()) {
      std::mt19937_64 rng(DrawSeed(spec_.name + "/" + site));
      chosen.insert(indexes[1 + rng() % (indexes.size() - 2)]);
    }
  }
  size_t noticed = 0, needed = 0;
  const uint64_t states_before = states_;
  std::map<std::string, bool> noticed_at_site;  // kNeededAtSite: whether one was noticed
  for (size_t i : chosen) {
    const SyncRecord& sync = log_[i];
    const SyncRole role = spec_.commit_role(sites_, log_, i);
    if (role == SyncRole::kNotTried) continue;
    // Under a sanitizer only what is asserted: the other searches print lines for people.
    if (UnderSanitizer() && (role == SyncRole::kCovered || role == SyncRole::kUnproven)) continue;
    // A site all of whose syncs are tried (every_sync_of_sites) needs one noticed: in the
    // default tier the search ends there.
    if (role == SyncRole::kNeededAtSite && !LongTier() &&
        spec_.every_sync_of_sites.contains(sites_[i]) && noticed_at_site[sites_[i]]) {
      continue;
    }
    // The syncs asserted one by one are searched to the end of the run; the others, in the
    // default tier, over a window after them (kNeededAtSite: a longer one).
    const bool full_search =
        role == SyncRole::kNeeded || (LongTier() && role != SyncRole::kUnproven);
    const uint64_t window =
        role == SyncRole::kNeededAtSite ? (UnderSanitizer() ? kSiteWindow / 2 : kSiteWindow)
                                        : kShortWindow;
    const uint64_t to = full_search ? total_ : std::min(total_, sync.mutation_index + window);
    const std::string found = Search(sync.mutation_index, to, {sync.ordinal});
    std::printf("%s %s: %s%s\n", spec_.name.c_str(), Describe(sync, sites_[i]).c_str(),
                found.empty() ? "NO crash state notices it" : found.c_str(), RoleNote(role));
    noticed += !found.empty();
    if (role == SyncRole::kNeeded) {
      ++needed;
      EXPECT_FALSE(found.empty()) << spec_.name << " " << Describe(sync, sites_[i])
                                  << " is never needed";
    }
    if (role == SyncRole::kNeededAtSite) noticed_at_site[sites_[i]] |= !found.empty();
  }
  for (const auto& [site, any] : noticed_at_site) {
    EXPECT_TRUE(any) << spec_.name << ": no sync of [" << site << "] is ever needed";
  }
  std::printf("%s: %zu syncs in the run at %zu sites; %zu skipped one at a time (%zu asserted "
              "needed), %zu noticed; %llu crash states\n",
              spec_.name.c_str(), log_.size(), by_site.size(), chosen.size(), needed, noticed,
              static_cast<unsigned long long>(states_ - states_before));
}

void SyncSweep::RecoverySyncsAreNeeded() {
  struct Point {
    uint64_t point;
    uint64_t mutations;  // the recovery's
  };
  ASSERT_FALSE(history_.empty()) << spec_.name << ": no clean run";
  std::map<std::vector<std::string>, std::vector<Point>> by_shape;
  for (uint64_t point = *idle_.begin() + 1; point <= total_; point += spec_.recovery_stride) {
    auto w = RunTo(spec_.options, spec_.disk, point);
    w->fs->SimulateProcessCrash();
    std::vector<std::string> shape;
    const uint64_t start = w->fs->mutation_count();
    Recovered r;
    {
      SiteRecorder recorder(&shape);
      r = Verify(*w->fs, spec_.options, history_, Allowed(w->run));
    }
    ASSERT_EQ(r.problem, "") << spec_.name << " point " << point;
    if (!shape.empty() && (!spec_.recovery_needs_rollback || r.rolled_back)) {
      by_shape[shape].push_back({point, w->fs->mutation_count() - start});
    }
  }
  ASSERT_FALSE(by_shape.empty()) << spec_.name << ": no crash state needed a recovery";
  // The commonest shapes first.
  std::vector<std::pair<std::vector<std::string>, std::vector<Point>>> shapes(by_shape.begin(),
                                                                              by_shape.end());
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return a.second.size() > b.second.size();
  });
  if (shapes.size() > spec_.recovery_shapes) shapes.resize(spec_.recovery_shapes);
  const uint64_t states_before = states_;
  size_t tried = 0;
  std::map<std::string, bool> noticed_at_site;  // kNeededAtSite: whether one was noticed
  for (const auto& [kinds, points] : shapes) {
    std::string shape;
    for (const std::string& k : kinds) absl::StrAppend(&shape, shape.empty() ? "" : ", ", k);
    for (uint64_t r = 1; r <= kinds.size(); ++r) {
      const SyncRole role = spec_.recovery_role(kinds[r - 1]);
      if (role == SyncRole::kNotTried) continue;
      ++tried;
      std::string found;
      for (size_t i = 0; i < points.size() && i < spec_.recovery_points_per_shape && found.empty();
           ++i) {
        const auto [point, mutations] = points[i];
        for (int seed = 0; seed < spec_.recovery_seeds && found.empty(); ++seed) {
          const uint64_t cuts = spec_.crash_recovery ? mutations : 0;
          for (uint64_t j = 0; j <= cuts && found.empty(); ++j) {
            const uint64_t crash = j < cuts ? j : kNoCrash;
            found = FirstProblem(point, point * 31 + seed, {}, true, r, crash);
            if (!found.empty()) {
              found = absl::StrCat("crash after mutation ", point,
                                   crash != kNoCrash ? absl::StrCat(", recovery cut after ", j)
                                                     : "",
                                   ": ", found);
            }
          }
        }
      }
      std::printf("%s: recovery syncing [%s] (%zu states), sync %llu [%s] skipped: %s%s\n",
                  spec_.name.c_str(), shape.c_str(), points.size(),
                  static_cast<unsigned long long>(r), kinds[r - 1].c_str(),
                  found.empty() ? "NO crash state notices it" : found.c_str(), RoleNote(role));
      if (role == SyncRole::kNeeded) {
        EXPECT_FALSE(found.empty()) << spec_.name << ": recovery sync " << r << " of [" << shape
                                    << "] is never needed";
      }
      if (role == SyncRole::kNeededAtSite) noticed_at_site[kinds[r - 1]] |= !found.empty();
    }
  }
  for (const auto& [site, any] : noticed_at_site) {
    EXPECT_TRUE(any) << spec_.name << ": no recovery sync of [" << site << "] is ever needed";
  }
  std::printf("%s: %zu shapes of recovery (%zu looked at), %zu recovery syncs skipped; %llu "
              "crash states\n",
              spec_.name.c_str(), by_shape.size(), shapes.size(), tried,
              static_cast<unsigned long long>(states_ - states_before));
}

}  // namespace journalkv::testing
