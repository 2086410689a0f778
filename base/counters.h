// The counter table: every number a connection reports (Db::Stats, `jkv stats`, the C API's
// jkv_stat_get, jkvbench), one row each, in the style of RocksDB's tickers. A row is
// {id, name, type, unit, kind, scope, description}; the id is an enum value every layer
// increments by (base::Counters, one per connection), the name is what users see (the DbStats
// field, the `jkv stats` line, the C API's key, jkvbench's column), the type is the DbStats
// field's C++ type.
//
// Three kinds of rows share the table (CounterKind). Tickers are counted as things happen, by
// the layer where they happen (commits by the strategy that commits, flushes by the WAL's group
// flush, ...), into its connection's live array. Gauges (page_count, log_frames, ...) describe
// the state at the time of the snapshot and are filled in by the owner of that state when
// Stats() is called. Marks (max_log_frames) keep the largest value seen. All end up in one
// CounterValues snapshot; a consumer that reports a phase (jkvbench) takes tickers' differences
// and marks' and gauges' values at its end.
//
// A new counter is one row here and one Add at the place it counts; every consumer iterates
// the table (ForEachCounter) and so picks it up.
//
// The table is an X-macro so that the DbStats fields users and tests name (`stats.commits`)
// are generated from it, not kept in step by hand: the one macro beyond STYLE.md 3.8's list,
// kept because the alternative is a second list of the same names.
//
// Thread-safety: Counters is safe to use from any thread (relaxed atomics: a snapshot is not
// one instant across rows, each row is exact). CounterValues is a plain value.
#ifndef JOURNALKV_BASE_COUNTERS_H_
#define JOURNALKV_BASE_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace journalkv::base {

// Units: how a row's raw uint64_t reads. kNanos rows are shown in milliseconds (a double
// `_ms` field); the others as integers, kFlag as a bool.
enum class CounterUnit { kCount, kPages, kFrames, kBytes, kNanos, kFlag, kIndex };
// How a row changes: a ticker only grows (a difference of two snapshots is what happened
// between them), a gauge is the state at the snapshot, a mark is the largest value seen so far
// (a difference means nothing; of two connections, the larger).
enum class CounterKind { kTicker, kGauge, kMark };
// Which connections report a row: all, WAL and WAL2 ones (zero otherwise), WAL2 ones, or
// atomic-mode ones.
enum class CounterScope { kAll, kWal, kWal2, kAtomic };

// X(id, name, type, unit, kind, scope, description)
#define JKV_COUNTERS(X)                                                                            \
  X(kPageSize, page_size, uint32_t, kBytes, kGauge, kAll, "the database's page size")              \
  X(kPageCount, page_count, uint32_t, kPages, kGauge, kAll,                                        \
    "pages in the database file, header page included")                                            \
  X(kFreelistPages, freelist_pages, uint32_t, kPages, kGauge, kAll, "of those, free")              \
  X(kCacheHits, cache_hits, uint64_t, kCount, kTicker, kAll,                                       \
    "pages found cached (WAL: counted when a read transaction ends)")                              \
  X(kCacheMisses, cache_misses, uint64_t, kCount, kTicker, kAll, "pages read from a file")         \
  X(kCachedPages, cached_pages, uint64_t, kPages, kGauge, kAll, "pages in the cache now")          \
  X(kMapReads, map_reads, uint64_t, kCount, kTicker, kAll,                                         \
    "reads of the database file served by the memory map (Options::mmap_size), not pread")         \
  X(kMapFaults, map_faults, uint64_t, kCount, kTicker, kAll,                                       \
    "of the map's reads, those that faulted (SIGBUS: a cut file, an I/O error) and went to pread") \
  X(kMapPages, map_pages, uint64_t, kCount, kTicker, kAll,                                         \
    "WAL: pages read in place in the memory map, no copy (counted when a read transaction ends)") \
  X(kMapChecks, map_checks, uint64_t, kCount, kTicker, kAll,                                       \
    "WAL: checksums of pages in the map; a page is trusted without one until the file is written")\
  X(kMapDamage, map_damage, uint64_t, kCount, kTicker, kAll,                                       \
    "faults on pages read in place, answered with zeros; each fails the open read transactions")  \
  X(kCommits, commits, uint64_t, kCount, kTicker, kAll, "write transactions committed")            \
  X(kRollbacks, rollbacks, uint64_t, kCount, kTicker, kAll, "write transactions rolled back")      \
  X(kSpills, spills, uint64_t, kCount, kTicker, kAll,                                              \
    "times a write transaction spilled pages before its commit")                                   \
  X(kRecoveries, recoveries, uint64_t, kCount, kTicker, kAll,                                      \
    "hot journals rolled back, and wal-indexes rebuilt from frames, by this connection")           \
  X(kJournalEndFailures, journal_end_failures, uint64_t, kCount, kTicker, kAll,                    \
    "rollback commits whose journal could not be ended (harmless: the next writer ends it)")       \
  X(kAtomicCommits, atomic_commits, uint64_t, kCount, kTicker, kAtomic,                            \
    "commits made as one atomic batch of the file system (atomic mode)")                           \
  X(kDurableAtomicCommits, durable_atomic_commits, uint64_t, kCount, kTicker, kAtomic,             \
    "of those, durable when they returned (sync full or extra)")                                   \
  X(kWriteTxns, write_txns, uint64_t, kCount, kTicker, kAll, "WAL write transactions ended")       \
  X(kWriteLockWait, write_lock_wait_ms, double, kNanos, kTicker, kAll,                             \
    "their time waiting for the writer role and the WRITE lock")                                   \
  X(kWriteWork, write_work_ms, double, kNanos, kTicker, kAll,                                      \
    "and working, to the end of commit or rollback (policy blocking too)")                         \
  X(kBuiltPairs, built_pairs, uint64_t, kCount, kTicker, kAll,                                     \
    "pairs written by the bottom-up builder (sorted loads, compaction)")                           \
  X(kWalMode, wal_mode, bool, kFlag, kGauge, kAll, "the connection is in wal or wal2 mode")        \
  X(kWal2, wal2, bool, kFlag, kGauge, kWal, "the connection is in wal2 mode")                      \
  X(kLogFrames, log_frames, uint32_t, kFrames, kGauge, kWal, "committed frames in the log(s)")     \
  X(kLogUnbackfilled, log_unbackfilled, uint32_t, kFrames, kGauge, kWal,                           \
    "of those, not yet copied into the database file")                                             \
  X(kLogBytes, log_bytes, uint64_t, kBytes, kGauge, kWal, "size of the log file(s)")               \
  X(kCurrentLog, current_log, int, kIndex, kGauge, kWal2,                                          \
    "the log the writer appends to (0: -wal, 1: -wal2)")                                           \
  X(kWal2LogFrames, wal2_log_frames, uint32_t, kFrames, kGauge, kWal2,                             \
    "x.db-wal2's committed frames")                                                                \
  X(kWal2LogUnbackfilled, wal2_log_unbackfilled, uint32_t, kFrames, kGauge, kWal2,                 \
    "of those, not yet copied")                                                                    \
  X(kWal2LogBytes, wal2_log_bytes, uint64_t, kBytes, kGauge, kWal2, "size of x.db-wal2")           \
  X(kLogSwitches, log_switches, uint64_t, kCount, kTicker, kWal2,                                  \
    "switches from one log to the other by this connection")                                       \
  X(kLogMapReads, log_map_reads, uint64_t, kCount, kTicker, kWal,                                  \
    "reads of the log file(s) served by their memory map (Options::mmap_size), not pread")         \
  X(kLogMapFaults, log_map_faults, uint64_t, kCount, kTicker, kWal,                                \
    "reads of the log(s) whose copy out of the map faulted (a log cut by another): pread instead") \
  X(kCheckpoints, checkpoints, uint64_t, kCount, kTicker, kWal,                                    \
    "checkpoints run by this connection")                                                          \
  X(kFramesCopied, frames_copied, uint64_t, kFrames, kTicker, kWal,                                \
    "frames its checkpoints copied")                                                               \
  X(kLogRestarts, log_restarts, uint64_t, kCount, kTicker, kWal,                                   \
    "logs restarted by this connection")                                                           \
  X(kFramesRewritten, frames_rewritten, uint64_t, kFrames, kTicker, kWal,                          \
    "frames its transactions wrote over their own earlier frames (W11)")                           \
  X(kLogSizeCuts, log_size_cuts, uint64_t, kCount, kTicker, kWal,                                  \
    "logs it cut back to the size limit when they restarted")                                      \
  X(kLogZeroBytes, log_zero_bytes, uint64_t, kBytes, kTicker, kWal,                                \
    "zero bytes it wrote preallocating the log(s): part of wal_bytes_written, no frame's")         \
  X(kGroupFlushes, group_flushes, uint64_t, kCount, kTicker, kWal,                                 \
    "syncs of the log it made for a group of commits (W12)")                                       \
  X(kFlushedCommits, flushed_commits, uint64_t, kCount, kTicker, kWal,                             \
    "its commits a flush made durable (its own or another's)")                                     \
  X(kCommitsFlushedByOthers, commits_flushed_by_others, uint64_t, kCount, kTicker, kWal,           \
    "of those, the ones another connection's or thread's flush covered")                           \
  X(kFlushWait, flush_wait_ms, double, kNanos, kTicker, kWal,                                      \
    "time its commits waited for a flush")                                                         \
  X(kFlushSyncTime, flush_sync_ms, double, kNanos, kTicker, kWal,                                 \
    "of its group flushes, the time in the log's sync")                                            \
  X(kFlushJoinWait, flush_join_ms, double, kNanos, kTicker, kWal,                                  \
    "of its group flushes, the time waiting for writers on their way to join (W12)")               \
  X(kFlushSleeps, flush_sleeps, uint64_t, kCount, kTicker, kWal,                                   \
    "times its committers slept on the flush word waiting for another's flush")                    \
  X(kFlushSleepTime, flush_sleep_ms, double, kNanos, kTicker, kWal,                                \
    "their time asleep there")                                                                     \
  X(kFlushLockMisses, flush_lock_misses, uint64_t, kCount, kTicker, kWal,                          \
    "its committers' tries of the FLUSH lock byte (a system call) that found it held")             \
  X(kOldestPinnedFrame, oldest_pinned_frame, uint32_t, kFrames, kGauge, kWal,                      \
    "the oldest snapshot any reader pins (0: none)")                                               \
  X(kPinnedConnections, pinned_connections, int, kCount, kGauge, kWal,                             \
    "pinned snapshots of all processes: reader slots, and overflow pins in use")                   \
  X(kOverflowReader, overflow_reader, bool, kFlag, kGauge, kWal,                                   \
    "this connection found no free reader slot (README, Limits)")                                  \
  X(kCheckpointTime, checkpoint_ms, double, kNanos, kTicker, kWal,                                 \
    "its checkpoints' time copying, syncing and restarting")                                       \
  X(kCheckpointLockWait, checkpoint_lock_wait_ms, double, kNanos, kTicker, kWal,                   \
    "and waiting for the CKPT lock and for readers")                                               \
  X(kCheckpointSyncs, checkpoint_syncs, uint64_t, kCount, kTicker, kWal,                           \
    "their flushes (the durability point at sync NORMAL)")                                         \
  X(kPolicyCheckpoints, policy_checkpoints, uint64_t, kCount, kTicker, kWal,                       \
    "checkpoints the policy ran on committing threads")                                            \
  X(kPolicyErrors, policy_errors, uint64_t, kCount, kTicker, kWal,                                 \
    "of those, failed (the commit stands; policy_last_error says why)")                            \
  X(kBackgroundCheckpoints, background_checkpoints, uint64_t, kCount, kTicker, kWal,               \
    "steps of the background checkpointer")                                                        \
  X(kBackgroundErrors, background_errors, uint64_t, kCount, kTicker, kWal,                         \
    "its failed steps (each reported by one later call)")                                          \
  X(kBackgroundTime, background_ms, double, kNanos, kTicker, kWal, "time in background steps")     \
  X(kBlockedCommits, blocked_commits, uint64_t, kCount, kTicker, kWal,                             \
    "commits the policy held until the log was copied")                                            \
  X(kBlockedTimeouts, blocked_timeouts, uint64_t, kCount, kTicker, kWal,                           \
    "of those, released by the busy timeout instead")                                              \
  X(kBlockedWriterTime, blocked_writer_ms, double, kNanos, kTicker, kWal,                          \
    "time committing threads spent blocked by the policy")                                         \
  X(kMaxLogFrames, max_log_frames, uint32_t, kFrames, kMark, kWal,                                 \
    "the largest log this connection's commits left (WAL2: both)")

enum class Counter : int {
#define JKV_COUNTER_ENUM(id, name, type, unit, kind, scope, description) id,
  JKV_COUNTERS(JKV_COUNTER_ENUM)
#undef JKV_COUNTER_ENUM
};

inline constexpr int kNumCounters = 0
#define JKV_COUNTER_ONE(id, name, type, unit, kind, scope, description) +1
    JKV_COUNTERS(JKV_COUNTER_ONE)
#undef JKV_COUNTER_ONE
    ;

struct CounterInfo {
  Counter id;
  absl::string_view name;
  CounterUnit unit;
  CounterKind kind;
  CounterScope scope;
  absl::string_view description;
};

// The table, in id order (kCounterTable[static_cast<int>(id)].id == id).
inline constexpr std::array<CounterInfo, kNumCounters> kCounterTable = {{
#define JKV_COUNTER_ROW(id, name, type, unit, kind, scope, description) \
  {Counter::id, #name, CounterUnit::unit, CounterKind::kind, CounterScope::scope, description},
    JKV_COUNTERS(JKV_COUNTER_ROW)
#undef JKV_COUNTER_ROW
}};

constexpr const CounterInfo& InfoOf(Counter id) { return kCounterTable[static_cast<int>(id)]; }
// The row named `name`, if any.
std::optional<Counter> FindCounter(absl::string_view name);

// A snapshot of every row's raw value, indexed by id.
class CounterArray {
 public:
  uint64_t operator[](Counter id) const { return raw_[static_cast<int>(id)]; }
  uint64_t& operator[](Counter id) { return raw_[static_cast<int>(id)]; }
  void Set(Counter id, uint64_t value) { (*this)[id] = value; }
  void SetDuration(Counter id, absl::Duration d) { (*this)[id] = ToRaw(d); }
  // Adds every row of `other` (another layer's array of the same connection).
  CounterArray& operator+=(const CounterArray& other) {
    for (int i = 0; i < kNumCounters; ++i) raw_[i] += other.raw_[i];
    return *this;
  }
  static uint64_t ToRaw(absl::Duration d) {
    return static_cast<uint64_t>(absl::ToInt64Nanoseconds(d));
  }

 private:
  std::array<uint64_t, kNumCounters> raw_{};
};

// A connection's live tickers, one per layer that counts (the pager's core, the WAL
// connection). Increments are relaxed atomics, as cheap as the plain fields they replace:
// Add is one uncontended read-modify-write; AddOwned is a plain load and store, for rows only
// one thread writes at a time (the caller holds the mutex that serializes their writers).
class Counters {
 public:
  void Add(Counter id, uint64_t n = 1) {
    cell(id).fetch_add(n, std::memory_order_relaxed);
  }
  void AddOwned(Counter id, uint64_t n = 1) {
    std::atomic<uint64_t>& c = cell(id);
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void AddDuration(Counter id, absl::Duration d) { Add(id, CounterArray::ToRaw(d)); }
  void AddDurationOwned(Counter id, absl::Duration d) { AddOwned(id, CounterArray::ToRaw(d)); }
  // High-water mark (single writer: the caller serializes, as for AddOwned).
  void MaxOwned(Counter id, uint64_t value) {
    std::atomic<uint64_t>& c = cell(id);
    if (value > c.load(std::memory_order_relaxed)) c.store(value, std::memory_order_relaxed);
  }
  uint64_t Get(Counter id) const {
    return cells_[static_cast<int>(id)].load(std::memory_order_relaxed);
  }
  CounterArray Snapshot() const {
    CounterArray out;
    for (const CounterInfo& row : kCounterTable) out[row.id] = Get(row.id);
    return out;
  }

 private:
  std::atomic<uint64_t>& cell(Counter id) { return cells_[static_cast<int>(id)]; }
  std::array<std::atomic<uint64_t>, kNumCounters> cells_{};
};

// The snapshot as users read it: one typed field per row, generated from the table
// (stats.commits, stats.flush_wait_ms). DbStats and PagerStats derive from it.
struct CounterValues {
#define JKV_COUNTER_FIELD(id, name, type, unit, kind, scope, description) type name = 0;
  JKV_COUNTERS(JKV_COUNTER_FIELD)
#undef JKV_COUNTER_FIELD

  // Every row's field from the raw array (kNanos rows become milliseconds).
  static CounterValues From(const CounterArray& raw);
  // A row's value as a double: milliseconds for kNanos rows, 0/1 for flags.
  double Value(Counter id) const;
  // By name (the table's, which is the field's); nullopt for an unknown name.
  std::optional<double> Value(absl::string_view name) const;
};

// Calls f(info, value) for every row, in table order, with Value(info.id).
template <typename F>
void ForEachCounter(const CounterValues& values, F&& f) {
  for (const CounterInfo& row : kCounterTable) f(row, values.Value(row.id));
}

}  // namespace journalkv::base

#endif  // JOURNALKV_BASE_COUNTERS_H_
