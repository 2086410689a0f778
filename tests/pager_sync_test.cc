// Every sync of the rollback journal is proven necessary, through the sync-removal driver of
// tests/sync_sweep.h: the crash sweep's workload (tests/pager_workload.h, 30 transactions with
// spills, rollbacks of spilled transactions and two connections taking turns) runs with one
// sync skipped at a time, and some crash state must then fail. Recovery's syncs are skipped
// the same way, with the recovery also cut after each of its mutations.
//
// Configurations: the default tier runs one of each mode (delete_full, truncate_extra,
// persist_full, memory_full, off_full, atomic_full), which between them make every site of
// commit, rollback, creation and recovery; the long tier adds delete_extra, truncate_full,
// persist_extra and atomic_normal (the EXTRA journal end of DELETE and PERSIST, the FULL commit
// of TRUNCATE, atomic's flush at close, searched and printed). In atomic the batch's durable commit is a sync the
// sweep can take away (it becomes an atomic-only commit) and must find needed at FULL.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "tests/pager_workload.h"
#include "tests/sync_sweep.h"

namespace journalkv::testing {
namespace {

using pager::JournalMode;
using pager::SyncLevel;

struct SyncConfig {
  JournalMode mode;
  SyncLevel sync;
};

std::string Name(const SyncConfig& c) {
  return absl::StrCat(pager::JournalModeName(c.mode), "_", pager::SyncLevelName(c.sync));
}

std::vector<SyncConfig> Configs() {
  std::vector<SyncConfig> out = {{JournalMode::kDelete, SyncLevel::kFull},
                                 {JournalMode::kTruncate, SyncLevel::kExtra},
                                 {JournalMode::kPersist, SyncLevel::kFull},
                                 {JournalMode::kMemory, SyncLevel::kFull},
                                 {JournalMode::kOff, SyncLevel::kFull},
                                 {JournalMode::kAtomic, SyncLevel::kFull}};
  if (LongTier()) {
    out.push_back({JournalMode::kAtomic, SyncLevel::kNormal});
    out.push_back({JournalMode::kDelete, SyncLevel::kExtra});
    out.push_back({JournalMode::kTruncate, SyncLevel::kFull});
    out.push_back({JournalMode::kPersist, SyncLevel::kExtra});
  }
  return out;
}

// The commit syncs no state of this harness has needed yet, kept on reasoning
// (docs/testing.md, "Syncs the harness has not needed"):
//   - the placement sync makes a journal left by another connection durable before this one
//     writes its records where that journal's may lie; the states that need it (that
//     journal's truncate or zeroing lost, this transaction's new header lost, its records kept
//     over the old seal) have not come up here;
//   - the journal end a recovery makes (see RecoveryRole).
// And one that another sync covers in this workload: a TRUNCATE or PERSIST connection syncs
// the directory at its first use of the journal file; when another connection created the
// file, that one already made the entry durable, unless it crashed before its own directory
// sync, which a clean run never does (the first such sync is the creation's, the second the
// first connection's).
SyncRole CommitRole(JournalMode mode, const std::vector<std::string>& sites, size_t i) {
  const std::string& site = sites[i];
  if (site == "placement: journal of another connection" || site == "recovery: journal end") {
    return SyncRole::kUnproven;
  }
  // Atomic's open makes the end of a rollback-mode connection's journal durable (I10) before
  // its batches may land; in this workload the only journal is the creation's, sealed and
  // complete, which recovery discards whether or not its unlink survives.
  if (mode == JournalMode::kAtomic && site.rfind("I10 ", 0) == 0) return SyncRole::kUnproven;
  // Atomic at NORMAL flushes at close (A5) so that what a connection saw survives a power
  // loss: the close a recovery makes needs it (pager_crash_sweep_test's atomic_normal fails
  // without it); a writer's own close promises its NORMAL commits nothing.
  if (site == "A5 atomic close") return SyncRole::kUnproven;
  if (site == "I1 journal directory" && mode != JournalMode::kDelete &&
      std::count(sites.begin(), sites.begin() + i, "I1 journal directory") >= 2) {
    return SyncRole::kCovered;
  }
  return SyncRole::kNeeded;
}

// Recovery's syncs, by their place in a recovery: a rollback makes the hot journal durable
// (file, directory: I8), restores the database and syncs it (I3), then ends the journal
// durably; a complete journal's recovery syncs the database (I6) and ends the journal. The
// last one, ending the journal, no state of this workload can notice: rolling a journal back
// twice is harmless, and every later writer makes the journal's state durable before it writes
// the database (I1; I10 for MEMORY and OFF at open). It is kept for a MEMORY or OFF connection
// that recovers a journal left by a crashed connection of another mode while it stays open
// (no later sync of its own would cover it).
SyncRole RecoveryRole(const std::string& site) {
  return site == "recovery: journal end" ? SyncRole::kUnproven : SyncRole::kNeeded;
}

class SyncNecessityTest : public ::testing::TestWithParam<SyncConfig> {
 protected:
  SyncSweepSpec Spec() {
    const SyncConfig& c = GetParam();
    SyncSweepSpec spec;
    spec.name = Name(c);
    spec.options.pager.journal_mode = c.mode;
    spec.options.pager.sync = c.sync;
    spec.options.pager.page_size = 4096;  // over 512-byte sectors: pages tear
    spec.options.pager.cache_pages = 16;
    spec.options.pager.busy_timeout = absl::Milliseconds(10);
    // Two connections take turns in the journal-file modes. MEMORY and OFF run one: each open
    // makes the end of any journal durable (I10), so a second connection's open would cover
    // for the first's and neither could be shown needed alone.
    spec.options.connections = FileJournal(c.mode) ? Connections::kTwo : Connections::kOne;
    spec.options.transactions = 30;
    spec.disk.unsynced_entries_may_survive = true;
    spec.disk.size_without_data = true;
    spec.guarantees.atomic = FileJournal(c.mode);
    spec.guarantees.no_journal_after_idle_power_loss = c.sync == SyncLevel::kExtra;
    spec.guarantees.nothing_to_recover = c.mode == JournalMode::kAtomic;
    // Atomic at NORMAL: unflushed batches may be lost, whole and in order.
    spec.guarantees.power_loss_durable =
        c.mode != JournalMode::kAtomic || c.sync != SyncLevel::kNormal;
    spec.commit_role = [mode = c.mode](const std::vector<std::string>& sites,
                                       const std::vector<vfs::FaultInjectingFileSystem::SyncRecord>&,
                                       size_t i) { return CommitRole(mode, sites, i); };
    spec.recovery_role = &RecoveryRole;
    spec.seeds_near = 32;
    spec.seeds_far = ScaledForSanitizer(12, 4);
    spec.sanity_stride = ScaledForSanitizer(7, 13);
    spec.recovery_seeds = ScaledForSanitizer(12, 4);
    spec.crash_recovery = true;
    return spec;
  }
};

TEST_P(SyncNecessityTest, EverySyncOfCommitAndRollbackIsNeeded) {
  SyncSweep sweep(Spec());
  sweep.CommitSyncsAreNeeded();
}

// MEMORY and OFF have no journal file: their recovery writes nothing.
class RecoverySyncNecessityTest : public SyncNecessityTest {};

TEST_P(RecoverySyncNecessityTest, EverySyncOfRecoveryIsNeeded) {
  SyncSweep sweep(Spec());
  sweep.RecoverySyncsAreNeeded();
}

std::vector<SyncConfig> FileJournalConfigs() {
  std::vector<SyncConfig> out = Configs();
  // Atomic's recovery writes nothing but a hot journal of the database's creation, which the
  // rollback configurations cover.
  std::erase_if(out, [](const SyncConfig& c) {
    return !FileJournal(c.mode) || c.mode == JournalMode::kAtomic;
  });
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, SyncNecessityTest, ::testing::ValuesIn(Configs()),
                         [](const auto& info) { return Name(info.param); });
INSTANTIATE_TEST_SUITE_P(Modes, RecoverySyncNecessityTest,
                         ::testing::ValuesIn(FileJournalConfigs()),
                         [](const auto& info) { return Name(info.param); });

}  // namespace
}  // namespace journalkv::testing
