// WalIndex's durability words (wal_index.h, region 0 at 168 and 496): the sync floor, the
// append epoch and its sync failures, and how far each log is known durable. What they mean
// and who writes them: wal/log_durability.h D1, D2 and W13.
#include <atomic>
#include <cstdint>

#include "base/check.h"
#include "shm/wal_index.h"
#include "shm/wal_index_internal.h"

namespace journalkv::shm {
namespace {

using internal::Word;

using internal::Point;

constexpr int kFailureWords = 5;  // the tag, then ckpt_seq and mx_frame of log 0 and log 1
static_assert(kFailureWords * 4 == kFailureStride);

std::atomic_ref<uint32_t> SyncFloor(uint8_t* r0) { return Word<uint32_t>(r0, kSyncFloorOffset); }
std::atomic_ref<uint32_t> DbEpoch(uint8_t* r0) { return Word<uint32_t>(r0, kDbEpochOffset); }
std::atomic_ref<uint32_t> AppendEpoch(uint8_t* r0) {
  return Word<uint32_t>(r0, kAppendEpochOffset);
}
// Word `w` of the failure record in ring position `r`.
std::atomic_ref<uint32_t> FailureWord(uint8_t* r0, int r, int w) {
  return Word<uint32_t>(r0, kFailuresOffset + kFailureStride * r + 4 * w);
}
std::atomic_ref<uint64_t> SyncedThrough(uint8_t* r0, int log) {
  return Word<uint64_t>(r0, kSyncedThroughOffset + 8 * log);
}
int Ring(uint32_t epoch) { return static_cast<int>(epoch % kFailureRecords); }

}  // namespace

void internal::InitializeDurabilityWords(uint8_t* r0) {
  SyncFloor(r0).store(0);
  AppendEpoch(r0).store(0);
  DbEpoch(r0).store(0);
  for (int r = 0; r < kFailureRecords; ++r) {
    for (int w = 0; w < kFailureWords; ++w) FailureWord(r0, r, w).store(0);
  }
  for (int log = 0; log < 2; ++log) SyncedThrough(r0, log).store(0);
}

uint32_t WalIndex::sync_floor() const { return SyncFloor(region0()).load(); }

uint32_t WalIndex::RaiseSyncFloor(uint32_t level) {
  std::atomic_ref<uint32_t> floor = SyncFloor(region0());
  uint32_t seen = floor.load();
  while (seen < level && !floor.compare_exchange_weak(seen, level)) {
  }
  return seen;
}

// O4 (wal_index.h).
uint32_t WalIndex::db_epoch() const { return DbEpoch(region0()).load(); }

uint32_t WalIndex::BeginDbWrite() {
  std::atomic_ref<uint32_t> epoch = DbEpoch(region0());
  const uint32_t seen = epoch.load();
  // Odd, and never a value a reader saw before: a writer that died while odd left it odd,
  // and the next one moves past it.
  const uint32_t odd = (seen & 1) != 0 ? seen + 2 : seen + 1;
  epoch.store(odd);
  Point("shm:db_epoch_odd");
  return odd;
}

void WalIndex::EndDbWrite(uint32_t odd) {
  Point("shm:db_epoch_even");
  DbEpoch(region0()).store(odd + 1);
}

uint32_t WalIndex::append_epoch() const { return AppendEpoch(region0()).load(); }

void WalIndex::set_append_epoch(uint32_t epoch) {
  Point("shm:set_append_epoch");
  AppendEpoch(region0()).store(epoch);
}

WalIndex::FailureLookup WalIndex::Failure(uint32_t epoch, SyncFailure* out) const {
  const int r = Ring(epoch);
  while (true) {
    const uint32_t tag = FailureWord(region0(), r, 0).load();
    if (tag == 0) return FailureLookup::kNone;
    SyncFailure f;
    for (int log = 0; log < 2; ++log) {
      f.ckpt_seq[log] = FailureWord(region0(), r, 1 + 2 * log).load();
      f.mx_frame[log] = FailureWord(region0(), r, 2 + 2 * log).load();
    }
    if (FailureWord(region0(), r, 0).load() != tag) continue;  // being rewritten: read it again
    // The tag is epoch + 1. Epochs compare in serial order, as generations do: a record of a
    // later epoch in this place overwrote this one's (if it had one).
    const uint32_t recorded = tag - 1;
    if (recorded == epoch) {
      *out = f;
      return FailureLookup::kRecorded;
    }
    return static_cast<int32_t>(recorded - epoch) > 0 ? FailureLookup::kForgotten
                                                       : FailureLookup::kNone;
  }
}

void WalIndex::RecordFailure(uint32_t epoch, const SyncFailure& failure) {
  Point("shm:record_failure");
  const int r = Ring(epoch);
  FailureWord(region0(), r, 0).store(0);
  for (int log = 0; log < 2; ++log) {
    FailureWord(region0(), r, 1 + 2 * log).store(failure.ckpt_seq[log]);
    FailureWord(region0(), r, 2 + 2 * log).store(failure.mx_frame[log]);
  }
  FailureWord(region0(), r, 0).store(epoch + 1);
}

uint64_t WalIndex::synced_through(int log) const {
  JKV_DCHECK(log == 0 || log == 1);
  return SyncedThrough(region0(), log).load();
}

void WalIndex::set_synced_through(int log, uint64_t word) {
  JKV_DCHECK(log == 0 || log == 1);
  Point("shm:set_synced_through");
  SyncedThrough(region0(), log).store(word);
}

}  // namespace journalkv::shm
