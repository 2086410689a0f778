#include "base/counters.h"

#include <set>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace journalkv::base {
namespace {

TEST(CounterTableTest, RowsAreInIdOrderWithUniqueNames) {
  std::set<std::string> names;
  for (int i = 0; i < kNumCounters; ++i) {
    EXPECT_EQ(static_cast<int>(kCounterTable[i].id), i);
    EXPECT_FALSE(kCounterTable[i].description.empty()) << kCounterTable[i].name;
    EXPECT_TRUE(names.insert(std::string(kCounterTable[i].name)).second) << kCounterTable[i].name;
  }
}

TEST(CounterTableTest, FindsRowsByName) {
  EXPECT_EQ(FindCounter("commits"), Counter::kCommits);
  EXPECT_EQ(FindCounter("flush_wait_ms"), Counter::kFlushWait);
  EXPECT_EQ(FindCounter("no_such_counter"), std::nullopt);
  EXPECT_EQ(InfoOf(Counter::kLogFrames).name, "log_frames");
}

TEST(CountersTest, AddsAndSnapshotsEveryRow) {
  Counters c;
  c.Add(Counter::kCommits);
  c.Add(Counter::kCommits, 2);
  c.AddOwned(Counter::kSpills, 4);
  c.AddDuration(Counter::kFlushWait, absl::Milliseconds(3));
  c.MaxOwned(Counter::kMaxLogFrames, 7);
  c.MaxOwned(Counter::kMaxLogFrames, 5);
  EXPECT_EQ(c.Get(Counter::kCommits), 3u);
  const CounterArray raw = c.Snapshot();
  EXPECT_EQ(raw[Counter::kSpills], 4u);
  EXPECT_EQ(raw[Counter::kMaxLogFrames], 7u);
  EXPECT_EQ(raw[Counter::kRollbacks], 0u);
}

TEST(CounterValuesTest, FieldsFollowTheirUnits) {
  CounterArray raw;
  raw.Set(Counter::kCommits, 5);
  raw.SetDuration(Counter::kFlushWait, absl::Microseconds(1500));
  raw.Set(Counter::kWalMode, 1);
  raw.Set(Counter::kCurrentLog, 1);
  CounterArray more;
  more.Set(Counter::kCommits, 2);
  raw += more;
  const CounterValues v = CounterValues::From(raw);
  EXPECT_EQ(v.commits, 7u);
  EXPECT_DOUBLE_EQ(v.flush_wait_ms, 1.5);  // kNanos rows read in milliseconds
  EXPECT_TRUE(v.wal_mode);
  EXPECT_EQ(v.current_log, 1);
  EXPECT_EQ(v.Value("commits"), 7.0);
  EXPECT_EQ(v.Value(Counter::kFlushWait), 1.5);
  EXPECT_EQ(v.Value("no_such_counter"), std::nullopt);
  int rows = 0;
  ForEachCounter(v, [&](const CounterInfo& row, double value) {
    EXPECT_EQ(value, v.Value(row.id));
    ++rows;
  });
  EXPECT_EQ(rows, kNumCounters);
}

}  // namespace
}  // namespace journalkv::base
