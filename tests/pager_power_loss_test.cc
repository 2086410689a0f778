// Power-loss sweep of the pager's rollback journal.
//
// A deterministic workload of page-level write transactions runs on a fault-injecting file
// system that stops applying writes after the k-th mutating operation (write, truncate, sync,
// create, delete, directory sync); then a simulated power loss reduces every file to a state a
// disk could hold, and the database is reopened. For every crash point it checks:
//   - the structure: every page's checksum, the freelist, and every page 2..page_count either
//     live in the model or on the freelist (no page lost, none counted twice);
//   - atomicity: the database equals the model after some transaction t, exactly;
//   - durability: t is at least the last transaction whose Commit returned OK (the README says
//     every acknowledged commit survives at NORMAL, FULL and EXTRA in these modes), and at most
//     one more (the commit in flight may or may not have landed).
// Crash points: right after every sync of the workload, plus at least 500 further mutation
// indexes spread over the run, each with several power-loss seeds.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "tests/sweep_testing.h"
#include "gtest/gtest.h"
#include "pager/pager.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using pager::JournalMode;
using pager::Pager;
using pager::PagerOptions;
using pager::SyncLevel;

constexpr char kPath[] = "/data/sweep.db";
constexpr int kTransactions = 200;

// The model: which pages are live and which transaction last wrote each.
struct ModelState {
  std::map<uint32_t, uint32_t> live;  // page -> tag (transaction number)
  uint32_t page_count = 1;
};

void Stamp(absl::Span<uint8_t> page, uint32_t page_no, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  base::EncodeFixed32(page.data() + 4, page_no);
  for (size_t i = 8; i < 200 && i < page.size(); ++i) page[i] = static_cast<uint8_t>(tag + i);
}

struct RunResult {
  int acknowledged = 0;           // last transaction whose Commit returned OK
  std::vector<ModelState> after;  // with record_history: after[t] is the model after t
};

// Runs the workload until it finishes or the first error (the crash point). Transaction t
// stamps pages with tag t and records t in meta slot 0.
RunResult RunWorkload(vfs::FileSystem& fs, const PagerOptions& options, bool record_history) {
  RunResult result;
  if (record_history) result.after.push_back(ModelState{});
  auto pager_or = Pager::Open(&fs, kPath, options);
  if (!pager_or.ok()) return result;
  Pager& pager = **pager_or;
  std::mt19937 rng(12345);
  ModelState model;
  for (int t = 1; t <= kTransactions; ++t) {
    auto txn_or = pager.BeginWrite();
    if (!txn_or.ok()) return result;
    pager::WriteTxn& txn = **txn_or;
    ModelState& next = model;  // a failed transaction ends the run: no copy needed
    // Every 25th transaction is large enough to spill (the cache holds 16 pages).
    const int writes = (t % 25 == 0) ? 40 : 1 + static_cast<int>(rng() % 6);
    bool failed = false;
    for (int i = 0; i < writes && !failed; ++i) {
      const uint32_t op = rng() % 10;
      if (op < 4 || next.live.empty()) {
        auto page = txn.Allocate();
        if (!page.ok()) { failed = true; break; }
        Stamp(page->data, page->page_no.value(), t);
        next.live[page->page_no.value()] = t;
      } else if (op < 8) {
        auto it = next.live.begin();
        std::advance(it, rng() % next.live.size());
        auto span = txn.GetMutable(PageNo(it->first));
        if (!span.ok()) { failed = true; break; }
        Stamp(*span, it->first, t);
        it->second = t;
      } else {
        auto it = next.live.begin();
        std::advance(it, rng() % next.live.size());
        if (!txn.Free(PageNo(it->first)).ok()) { failed = true; break; }
        next.live.erase(it);
      }
      if (!txn.SpillIfNeeded().ok()) failed = true;
    }
    if (failed) return result;
    txn.set_meta(0, t);
    next.page_count = txn.page_count();
    if (!txn.Commit().ok()) return result;
    result.acknowledged = t;
    if (record_history) result.after.push_back(model);
  }
  return result;
}

// Reopens after the power loss and checks the invariants; returns the transaction found.
void Verify(vfs::FileSystem& fs, const PagerOptions& options, const RunResult& run,
            const std::vector<ModelState>& full_history, const std::string& context,
            int* recovered_to, bool* rolled_back) {
  auto pager_or = Pager::Open(&fs, kPath, options);
  ASSERT_THAT(pager_or, journalkv::testing::IsOk()) << context;
  *rolled_back = (*pager_or)->Stats().recoveries > 0;
  auto txn_or = (*pager_or)->BeginRead();
  ASSERT_THAT(txn_or, journalkv::testing::IsOk()) << context;
  pager::ReadTxn& txn = **txn_or;
  auto problems = txn.CheckPages();
  ASSERT_THAT(problems, journalkv::testing::IsOk()) << context;
  ASSERT_TRUE(problems->empty()) << context << ": " << (*problems)[0];

  const int t = static_cast<int>(txn.meta(0));
  *recovered_to = t;
  ASSERT_LE(t, static_cast<int>(full_history.size()) - 1) << context;
  ASSERT_GE(t, run.acknowledged) << context << ": acknowledged commit lost";
  ASSERT_LE(t, run.acknowledged + 1) << context;
  const ModelState& want = full_history[t];
  ASSERT_EQ(txn.page_count(), want.page_count) << context << " at transaction " << t;
  for (const auto& [page_no, tag] : want.live) {
    auto page = txn.Get(PageNo(page_no));
    ASSERT_THAT(page, journalkv::testing::IsOk()) << context;
    ASSERT_EQ(base::DecodeFixed32(page->data().data()), tag)
        << context << ": page " << page_no << " partly from another transaction";
  }
  auto free_pages = txn.FreelistPages();
  ASSERT_THAT(free_pages, journalkv::testing::IsOk()) << context;
  std::set<uint32_t> accounted;
  for (const auto& [page_no, tag] : want.live) accounted.insert(page_no);
  for (PageNo p : *free_pages) {
    ASSERT_TRUE(accounted.insert(p.value()).second) << context << ": page " << p.value()
                                                    << " both live and free";
  }
  ASSERT_EQ(accounted.size(), want.page_count - 1) << context << ": pages unaccounted for";
}

class PowerLossSweepTest : public ::testing::TestWithParam<journalkv::testing::ModeAndSync> {};

TEST_P(PowerLossSweepTest, EveryCrashPointRecoversToAWholeDurableTransaction) {
  PagerOptions options;
  options.journal_mode = GetParam().mode;
  options.sync = GetParam().sync;
  options.page_size = 512;
  options.cache_pages = 16;
  options.busy_timeout = absl::Milliseconds(10);

  // A clean run gives the model history and the mutation indexes of every sync.
  std::vector<ModelState> history;
  std::vector<uint64_t> sync_points;
  uint64_t total_mutations = 0;
  {
    vfs::MemFileSystem base;
    vfs::FaultInjectingFileSystem fs(&base);
    RunResult clean = RunWorkload(fs, options, /*record_history=*/true);
    ASSERT_EQ(clean.acknowledged, kTransactions);
    history = clean.after;
    sync_points = fs.sync_mutation_indexes();
    total_mutations = fs.mutation_count();
  }
  const std::vector<uint64_t> points =
      journalkv::testing::CrashPoints(sync_points, total_mutations);
  ASSERT_FALSE(points.empty());
  int tried = 0, rollbacks = 0, landed_in_flight = 0;
  const int kSeeds = journalkv::testing::ScaledForSanitizer(3, 1);
  for (uint64_t point : points) {
    for (int seed = 0; seed < kSeeds; ++seed) {
      vfs::MemFileSystem base;
      vfs::FaultInjectingFileSystem fs(&base);
      fs.CrashAfterMutations(point);
      RunResult run = RunWorkload(fs, options, /*record_history=*/false);
      ASSERT_THAT(fs.SimulatePowerLoss(point * 131 + seed), journalkv::testing::IsOk());
      const std::string context =
          absl::StrCat("crash after mutation ", point, " of ", total_mutations, ", seed ", seed,
                       ", acknowledged ", run.acknowledged);
      int recovered_to = 0;
      bool rolled_back = false;
      Verify(fs, options, run, history, context, &recovered_to, &rolled_back);
      if (::testing::Test::HasFatalFailure()) return;
      ++tried;
      rollbacks += rolled_back;
      landed_in_flight += recovered_to > run.acknowledged;
    }
  }
  std::printf("%s/%s: %zu crash points (%zu after syncs), %d crash runs, %d hot-journal "
              "rollbacks, %d in-flight commits found complete\n",
              std::string(pager::JournalModeName(options.journal_mode)).c_str(),
              std::string(pager::SyncLevelName(options.sync)).c_str(), points.size(),
              sync_points.size(), tried, rollbacks, landed_in_flight);
  EXPECT_GT(rollbacks, 0) << "no crash point left a hot journal: the sweep tests nothing";
}

INSTANTIATE_TEST_SUITE_P(RollbackModes, PowerLossSweepTest, journalkv::testing::DurableRollbackModes(),
                         journalkv::testing::ModeAndSyncName);

}  // namespace
}  // namespace journalkv
