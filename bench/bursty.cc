// The bursty workload: an app's writes, which come in bursts with idle time between them, the
// setting of WCDB's article on WAL and asynchronous checkpoints (a background thread copies the
// log back while the app is idle, so that commits need not wait for it).
//
// The measured phase makes --num commits in bursts of --burst (the last burst may be shorter).
// Each commit is one write transaction putting one new key (the next key index, so the table
// grows as a message store does; keys are BenchKey's, so they land at random places in the
// tree) with a --value-size value. Between two bursts the thread sleeps for a gap drawn from
// --gap (gaps.h) with its own PRNG seeded from --seed, so every engine sleeps the same
// sequence of gaps; no gap before the first burst or after the last.
//
// Measured, beside the harness's usual figures:
//   - each commit's latency, from BeginWrite to the end of Commit (the histogram);
//   - write_ns: the sum of those latencies, the write time WCDB's A/B test compared (time in
//     write operations, idle time not included);
//   - idle_ns: the time actually slept (the sleeps overshoot their gaps a little);
//   - bursts: the bursts run.
// `seconds` is the write time (not the wall time, which is mostly idle), so ops/s is commits
// per second of write time: 1e6 / the mean commit latency in microseconds. The engine's
// counters (checkpoints, frames copied, background steps, blocked writers) cover the whole
// phase, idle gaps included, since that is when a background checkpointer works. The log size
// is sampled at the end of each burst (its largest) besides every 64 commits.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "bench/harness.h"

namespace journalkv::bench {
namespace {

// Seeds the gaps' PRNG apart from the keys' and values'.
constexpr uint64_t kGapSeedSalt = 0x67617073ULL;  // "gaps"

// Sleeps `ms` milliseconds; returns the nanoseconds actually slept.
uint64_t Idle(double ms) {
  const uint64_t t0 = NowNs();
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6)));
  return NowNs() - t0;
}

}  // namespace

absl::Status Bursty(Ctx& c) {
  const uint64_t n = c.params.num;
  const uint64_t burst = std::max<uint64_t>(1, c.params.burst);
  Rng gap_rng(c.params.seed ^ kGapSeedSalt);
  StartPhase(c, n);
  for (uint64_t i = 0; i < n;) {
    if (i > 0) {
      const uint64_t slept = Idle(c.params.gap.NextMs(gap_rng));
      c.result.idle_ns += slept;
      c.excluded_ns += slept;
    }
    ++c.result.bursts;
    for (uint64_t j = 0; j < burst && i < n; ++j, ++i) {
      JKV_ASSIGN_OR_RETURN(uint64_t ns,
                           TimedPutCommit(c.session, c.Key(i), c.values.Next(c.rng)));
      RecordOp(c, ns);
      AfterCommit(c);
      c.result.write_ns += ns;
    }
    SampleLog(c);
  }
  EndPhase(c);
  c.result.seconds = static_cast<double>(c.result.write_ns) / 1e9;
  return absl::OkStatus();
}

}  // namespace journalkv::bench
