// The crash harness shared by the crash sweeps (the pager's rollback journal today; WAL, its
// checkpoints and WAL2 reuse it): the kinds of crash, the choice of crash points and seeds, and
// the long-run switch.
//
// A sweep runs a deterministic workload on a FaultInjectingFileSystem, stops it after the k-th
// mutating operation (CrashAfterMutations), and then crashes in one of three ways:
//   kPowerLoss          the power fails: every unsynced change is kept, dropped or torn
//                       (SimulatePowerLoss), then a new connection recovers;
//   kProcessCrash       the process dies: its connections are gone but the OS keeps every
//                       write (SimulateProcessCrash), then a new connection recovers;
//   kCrashThenPowerLoss the process dies, a new connection recovers (and may commit a probe
//                       transaction), then the power fails and another connection recovers:
//                       what the first recovery saw must survive (it is the durable state).
// Recovery itself is swept too: after the first crash, the recovering connection is crashed
// again after each of the mutations a clean recovery makes, and recovering once more must give
// the state the clean recovery gave (sweeps call this "recovering twice").
//
// Seeds: every power loss draws its state from a seed. Each crash point uses two fixed seeds
// (the same every run, so CI failures reproduce) and, outside sanitizer builds, one more
// derived from a per-run seed that is new each run and printed; JKV_CRASH_SEED=N replays a
// run. JKV_LONG_SWEEP=1 crashes at every mutation index with more seeds and sweeps recovery
// at every point (README.md: over 100,000 crash states).
#ifndef JOURNALKV_TESTS_CRASH_SWEEP_H_
#define JOURNALKV_TESTS_CRASH_SWEEP_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"

namespace journalkv::testing {

enum class CrashKind { kPowerLoss, kProcessCrash, kCrashThenPowerLoss };

inline const char* CrashKindName(CrashKind kind) {
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

inline bool LongSweep() {
  const char* v = std::getenv("JKV_LONG_SWEEP");
  return v != nullptr && std::string(v) == "1";
}

// The per-run seed: JKV_CRASH_SEED when set, else new each run. Printed once per process.
inline uint64_t RunSeed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    const char* env = std::getenv("JKV_CRASH_SEED");
    if (env == nullptr || !absl::SimpleAtoi(env, &s)) {
      s = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    }
    std::printf("crash sweep run seed %llu (replay: --test_env=JKV_CRASH_SEED=%llu)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// The power-loss seeds of one crash point: two fixed ones, then (outside sanitizer builds, and
// more in the long sweep) ones derived from the run seed.
inline std::vector<uint64_t> PowerLossSeeds(uint64_t point) {
  std::vector<uint64_t> seeds = {point * 131, point * 131 + 1};
  const int random = LongSweep() ? 3 : ScaledForSanitizer(1, 0);
  std::mt19937_64 rng(RunSeed() ^ (point * 0x9E3779B97F4A7C15ull));
  for (int i = 0; i < random; ++i) seeds.push_back(rng());
  return seeds;
}

// The crash points of a sweep: every mutation index right after a sync and right after a
// transaction ended (a quarter of them under a sanitizer), plus `further` other indexes in
// [1, total] spread evenly; the long sweep takes every index.
inline std::vector<uint64_t> SweepPoints(const std::vector<uint64_t>& must, uint64_t total,
                                         size_t further) {
  // Sanitizer builds, many times slower, take every fourth of the `must` points.
  std::set<uint64_t> points;
  for (size_t i = 0; i < must.size(); i += UnderSanitizer() ? 4 : 1) points.insert(must[i]);
  if (LongSweep() || total <= points.size() + further) {
    for (uint64_t i = 1; i <= total; ++i) points.insert(i);
  } else {
    const size_t want = points.size() + further;
    for (uint64_t i = 0; points.size() < want; ++i) points.insert(1 + (i * 7919) % total);
  }
  return std::vector<uint64_t>(points.begin(), points.end());
}

// Every `step`-th element of `all` (all of them in the long sweep), at most `cap`.
inline std::vector<uint64_t> Sample(const std::vector<uint64_t>& all, size_t cap) {
  if (LongSweep() || all.size() <= cap) return all;
  std::vector<uint64_t> out;
  const double step = static_cast<double>(all.size()) / cap;
  for (size_t i = 0; i < cap; ++i) out.push_back(all[static_cast<size_t>(i * step)]);
  return out;
}

// What a sweep tried, to print and to assert that it did not pass vacuously.
struct SweepCounts {
  uint64_t states = 0;           // crash states verified
  uint64_t by_kind[3] = {0, 0, 0};
  uint64_t recovery_crashes = 0;  // states verified after a crash during recovery
  uint64_t rollbacks = 0;         // recoveries that rolled a hot journal back
  uint64_t in_flight_landed = 0;  // crashes mid-commit that recovered to the new transaction
  uint64_t lost_unsynced = 0;     // power losses that really dropped unsynced data

  std::string Summary() const {
    return absl::StrCat(states, " crash states (", by_kind[0], " power loss, ", by_kind[1],
                        " process crash, ", by_kind[2], " crash+recovery+power loss; ",
                        recovery_crashes, " after a crash during recovery), ", rollbacks,
                        " hot-journal rollbacks, ", in_flight_landed,
                        " in-flight commits found complete, ", lost_unsynced,
                        " power losses that dropped unsynced data");
  }
};

}  // namespace journalkv::testing

#endif  // JOURNALKV_TESTS_CRASH_SWEEP_H_
