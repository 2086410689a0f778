// The crash sweep of the pager's rollback journal, through the driver of tests/crash_sweep.h
// (the crash kinds, crash points, seeds and tiers) over the workload of tests/pager_workload.h.
//
// For every configuration (journal mode, sync level, page and sector size, connections) the
// workload is cut at crash points (syncs, moments between transactions, and 300 more; every
// mutation in the long tier) and crashed by power loss, by a process crash, and by a process
// crash followed by recovery, a probe transaction and a power loss; a sample of the states
// whose recovery writes anything is crashed again at every mutation of the recovery. Each
// recovered database must pass the page check and equal the model after one transaction:
//   - crash-atomic and durable configurations (DELETE, TRUNCATE, PERSIST at sync NORMAL and
//     up, and against a process crash at every sync level): the last acknowledged commit or
//     the one in flight, nothing else;
//   - MEMORY and OFF, which are not crash-atomic: exactly the last acknowledged commit when the
//     crash falls between transactions (durability), at NORMAL and up for power loss;
//   - EXTRA also ends every journal durably: after a power loss between transactions no valid
//     journal is left;
//   - a state that recovery produced survives a later power loss (with or without a probe
//     transaction committed after it), and recovering twice gives the state of recovering once.
// The truer disks tear 4 KiB pages over 512-byte sectors, or use 4 KiB sectors, let unsynced
// creates and deletes survive (a prefix of them), and keep an append's size without its data.
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "tests/crash_sweep.h"
#include "tests/pager_workload.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

struct SweepConfig {
  JournalMode mode;
  SyncLevel sync;
  uint32_t page_size;
  uint64_t sector_size;
  bool truer_disk;  // unsynced entries may survive; an append may keep its size only
  Connections connections;
};

std::string Name(const SweepConfig& c) {
  return absl::StrCat(pager::JournalModeName(c.mode), "_", pager::SyncLevelName(c.sync), "_p",
                      c.page_size, "_s", c.sector_size, c.truer_disk ? "_truer" : "", "_",
                      ConnectionsName(c.connections));
}

// Every file-journal mode and sync level on three disks (512-byte pages; 4 KiB pages torn over
// 512-byte sectors, reopened; 4 KiB sectors, two connections). Under a sanitizer, which looks
// for memory errors rather than for configurations that break a guarantee (the optimized build
// runs them all, and so does the long tier), each mode and level takes one of the three in
// turn: every disk, connection kind, mode and level still runs, in half the configurations.
std::vector<SweepConfig> Configs() {
  std::vector<SweepConfig> out;
  int variant = 0;
  for (JournalMode mode : {JournalMode::kDelete, JournalMode::kTruncate, JournalMode::kPersist}) {
    for (SyncLevel sync : {SyncLevel::kNormal, SyncLevel::kFull, SyncLevel::kExtra}) {
      const SweepConfig disks[] = {{mode, sync, 512, 512, false, Connections::kOne},
                                   {mode, sync, 4096, 512, true, Connections::kReopen},
                                   {mode, sync, 4096, 4096, true, Connections::kTwo}};
      if (UnderSanitizer() && !LongTier()) {
        out.push_back(disks[variant++ % 3]);
      } else {
        out.insert(out.end(), std::begin(disks), std::end(disks));
      }
    }
    out.push_back({mode, SyncLevel::kOff, 4096, 512, true, Connections::kTwo});
  }
  for (JournalMode mode : {JournalMode::kMemory, JournalMode::kOff}) {
    for (SyncLevel sync : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull}) {
      out.push_back({mode, sync, 4096, 512, true, Connections::kReopen});
    }
  }
  // Atomic batches (emulated): each level once on a truer disk, FULL on all three disks
  // outside the sanitizers' default tier.
  for (SyncLevel sync : {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kExtra}) {
    out.push_back({JournalMode::kAtomic, sync, 4096, 512, true, Connections::kTwo});
  }
  const SweepConfig atomic_full[] = {
      {JournalMode::kAtomic, SyncLevel::kFull, 4096, 512, true, Connections::kReopen},
      {JournalMode::kAtomic, SyncLevel::kFull, 512, 512, false, Connections::kOne},
      {JournalMode::kAtomic, SyncLevel::kFull, 4096, 4096, true, Connections::kTwo}};
  out.insert(out.end(), std::begin(atomic_full),
             std::end(atomic_full) - (UnderSanitizer() && !LongTier() ? 2 : 0));
  return out;
}

class CrashSweepTest : public ::testing::TestWithParam<SweepConfig> {};

TEST_P(CrashSweepTest, EveryCrashRecoversToAWholeTransactionAsTheModeGuarantees) {
  const SweepConfig& c = GetParam();
  // With the read map on (tests/sweep_base.h): FULL with two connections in each file-journal
  // mode and atomic, and MEMORY at FULL.
  if (SkipOnRealFiles(c.sync == SyncLevel::kFull &&
                      (c.connections == Connections::kTwo || c.mode == JournalMode::kMemory))) {
    GTEST_SKIP() << "on real files outside the long tier: a sample of the configurations";
  }
  SweepSpec spec;
  spec.name = Name(c);
  spec.options.pager.journal_mode = c.mode;
  spec.options.pager.sync = c.sync;
  spec.options.pager.page_size = c.page_size;
  spec.options.pager.cache_pages = 16;
  spec.options.pager.busy_timeout = absl::Milliseconds(10);
  spec.options.connections = c.connections;
  spec.disk.sector_size = c.sector_size;
  spec.disk.unsynced_entries_may_survive = c.truer_disk;
  spec.disk.size_without_data = c.truer_disk;
  spec.guarantees.atomic = FileJournal(c.mode);
  spec.guarantees.power_loss = c.sync != SyncLevel::kOff;
  // Atomic at NORMAL: batches not yet flushed may be lost, whole and in order (A5).
  spec.guarantees.power_loss_durable =
      c.mode != JournalMode::kAtomic || c.sync == SyncLevel::kFull || c.sync == SyncLevel::kExtra;
  spec.guarantees.no_journal_after_idle_power_loss = c.sync == SyncLevel::kExtra;
  spec.guarantees.nothing_to_recover = c.mode == JournalMode::kAtomic;
  spec.further_points = static_cast<size_t>(SweepScaled(100, 10, 300));
  spec.recovery_crash_states = static_cast<size_t>(SweepScaled(4, 1, 250));
  RunCrashSweep(spec);
}

INSTANTIATE_TEST_SUITE_P(RollbackAndAtomic, CrashSweepTest, ::testing::ValuesIn(Configs()),
                         [](const auto& info) { return Name(info.param); });

}  // namespace
}  // namespace journalkv::testing
