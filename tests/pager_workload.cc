#include "tests/pager_workload.h"

#include <malloc.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "pager/journal.h"

namespace journalkv::testing {
namespace {

// Every crash state reruns a workload whose log grows in zero-filled steps of 1 MiB, each copied
// by the fault-injecting file system: with glibc's default thresholds each such buffer is a new
// mapping whose pages fault in on first touch. Keeping large blocks on the heap makes the crash
// sweeps 2.4x faster (a WAL workload of 200 transactions: 72 ms -> 30 ms). Test-only.
[[maybe_unused]] const bool allocator_tuned = [] {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  return true;
}();

using pager::Pager;

void Stamp(absl::Span<uint8_t> page, uint32_t page_no, uint32_t tag) {
  base::EncodeFixed32(page.data(), tag);
  base::EncodeFixed32(page.data() + 4, page_no);
  for (size_t i = 8; i < 200 && i < page.size(); ++i) page[i] = static_cast<uint8_t>(tag + i);
}

enum class Shape {
  kSmallCommit,
  kSmallRollback,
  kSpillCommit,
  kSpillRollback,
  kRewriteCommit,
  kRewriteRollback,
};

Shape ShapeOf(int t, int rewrite_every) {
  if (rewrite_every > 0 && t % rewrite_every == 0) {
    return (t / rewrite_every) % 2 == 1 ? Shape::kRewriteCommit : Shape::kRewriteRollback;
  }
  if (t % 25 == 0) return Shape::kSpillCommit;
  if (t % 25 == 12) return Shape::kSpillRollback;
  if (t % 9 == 0) return Shape::kSmallRollback;
  return Shape::kSmallCommit;
}

// One transaction's page operations on `model`; false when an operation failed.
bool WritePages(pager::WriteTxn& txn, int t, int writes, std::mt19937& rng, ModelState& model) {
  for (int i = 0; i < writes; ++i) {
    const uint32_t op = rng() % 10;
    if (op < 4 || model.live.empty()) {
      auto page = txn.Allocate();
      if (!page.ok()) return false;
      Stamp(page->data, page->page_no.value(), t);
      model.live[page->page_no.value()] = t;
    } else if (op < 8) {
      auto it = model.live.begin();
      std::advance(it, rng() % model.live.size());
      auto span = txn.GetMutable(PageNo(it->first));
      if (!span.ok()) return false;
      Stamp(*span, it->first, t);
      it->second = t;
    } else {
      auto it = model.live.begin();
      std::advance(it, rng() % model.live.size());
      if (!txn.Free(PageNo(it->first)).ok()) return false;
      model.live.erase(it);
    }
    if (!txn.SpillIfNeeded().ok()) return false;
  }
  return true;
}

// Db::Compact's transaction on `model`: the live pages, in page order, become pages 2..n, each
// stamped with tag t; no page is free. False when an operation failed.
bool RewritePages(pager::WriteTxn& txn, int t, ModelState& model) {
  const uint32_t n = 1 + static_cast<uint32_t>(model.live.size());
  if (!txn.StartRewrite(n).ok()) return false;
  std::map<uint32_t, uint32_t> live;
  for (uint32_t p = 2; p <= n; ++p) {
    auto span = txn.RewritePage(PageNo(p));
    if (!span.ok()) return false;
    Stamp(*span, p, t);
    live[p] = t;
    if (!txn.SpillIfNeeded().ok()) return false;
  }
  model.live = std::move(live);
  return true;
}

std::string Compare(pager::ReadTxn& txn, const ModelState& want, const std::string& what) {
  if (txn.page_count() != want.page_count) {
    return absl::StrCat(what, ": page_count ", txn.page_count(), ", want ", want.page_count);
  }
  for (const auto& [page_no, tag] : want.live) {
    auto page = txn.Get(PageNo(page_no));
    if (!page.ok()) return absl::StrCat(what, ": ", page.status().ToString());
    const uint32_t got = base::DecodeFixed32(page->data().data());
    if (got != tag) {
      return absl::StrCat(what, ": page ", page_no, " has tag ", got, ", want ", tag,
                          " (partly another transaction)");
    }
  }
  auto free_pages = txn.FreelistPages();
  if (!free_pages.ok()) return absl::StrCat(what, ": ", free_pages.status().ToString());
  std::set<uint32_t> accounted;
  for (const auto& [page_no, tag] : want.live) accounted.insert(page_no);
  for (PageNo p : *free_pages) {
    if (!accounted.insert(p.value()).second) {
      return absl::StrCat(what, ": page ", p.value(), " both live and free");
    }
  }
  if (accounted.size() != want.page_count - 1) {
    return absl::StrCat(what, ": ", want.page_count - 1 - accounted.size(),
                        " pages unaccounted for");
  }
  return "";
}

}  // namespace

const char* ConnectionsName(Connections c) {
  switch (c) {
    case Connections::kOne:
      return "one";
    case Connections::kReopen:
      return "reopen";
    case Connections::kTwo:
      return "two";
  }
  return "?";
}

const pager::PagerOptions& ConnectionOptions(const WorkloadOptions& options, int i) {
  if (options.connections != Connections::kTwo || options.connection_pager.empty()) {
    return options.pager;
  }
  return options.connection_pager[static_cast<size_t>(i) % options.connection_pager.size()];
}

int ConnectionCount(const WorkloadOptions& options) {
  if (options.connections != Connections::kTwo) return 1;
  return std::max<int>(2, static_cast<int>(options.connection_pager.size()));
}

RunResult RunWorkload(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                      bool record) {
  RunResult result;
  if (record) result.after.push_back(ModelState{});
  const int n = ConnectionCount(options);
  std::vector<std::unique_ptr<Pager>> pagers(n);
  // Every return closes the connections in one order: the others, highest index first, then
  // the last closer (with two alike connections: 1, then 0, as before connections could differ).
  const int last = options.connections == Connections::kTwo ? options.last_closer : 0;
  absl::Cleanup close_all = [&] {
    for (int i = n - 1; i >= 0; --i) {
      if (i != last) pagers[i].reset();
    }
    pagers[last].reset();
  };
  auto tally = [&](int i) {
    if (pagers[i] == nullptr) return;
    const pager::PagerStats s = pagers[i]->Stats();
    result.checkpoints += s.checkpoints;
    result.log_restarts += s.log_restarts;
    result.log_switches += s.log_switches;
    result.frames_rewritten += s.frames_rewritten;
    result.max_log_frames = std::max(
        {result.max_log_frames, s.log_frames - s.wal2_log_frames, s.wal2_log_frames});
  };
  auto open = [&](int i) {
    tally(i);
    pagers[i].reset();
    auto p = Pager::Open(&fs, kSweepPath, ConnectionOptions(options, i));
    if (p.ok()) pagers[i] = std::move(p).value();
    return pagers[i] != nullptr;
  };
  for (int i = 0; i < n; ++i) {
    if (!open(i)) return result;
  }
  if (record) result.idle_points.push_back(fs.mutation_count());
  std::mt19937 rng(12345);
  ModelState model;
  for (int t = 1; t <= options.transactions; ++t) {
    int who = 0;
    if (options.connections == Connections::kReopen && t % 7 == 0 && !open(0)) return result;
    if (options.connections == Connections::kTwo) {
      who = options.turns.empty() ? t % n : options.turns[t % options.turns.size()];
    }
    auto txn_or = pagers[who]->BeginWrite();
    if (!txn_or.ok()) return result;
    pager::WriteTxn& txn = **txn_or;
    const Shape shape = ShapeOf(t, options.rewrite_every);
    const bool spill = shape == Shape::kSpillCommit || shape == Shape::kSpillRollback;
    const bool rewrite = shape == Shape::kRewriteCommit || shape == Shape::kRewriteRollback;
    const int writes = spill ? 40 : 1 + static_cast<int>(rng() % 6);
    if (shape == Shape::kSpillRollback || shape == Shape::kSmallRollback ||
        shape == Shape::kRewriteRollback) {
      ModelState scratch = model;
      if (rewrite ? !RewritePages(txn, t, scratch) : !WritePages(txn, t, writes, rng, scratch)) {
        return result;
      }
      if (!txn.Rollback().ok()) return result;
    } else {
      // A failed transaction ends the run, so the model may be changed in place.
      if (rewrite ? !RewritePages(txn, t, model) : !WritePages(txn, t, writes, rng, model)) {
        return result;
      }
      txn.set_meta(0, t);
      model.page_count = txn.page_count();
      result.in_flight = t;
      if (!txn.Commit().ok()) return result;
      result.in_flight = 0;
      result.acknowledged = t;
      if (ConnectionOptions(options, who).sync >= pager::SyncLevel::kFull) {
        result.acknowledged_durable = t;
      }
    }
    if (record) {
      result.after.push_back(model);
      result.idle_points.push_back(fs.mutation_count());
    }
    if (options.checkpoint_every > 0 && t % options.checkpoint_every == 0) {
      constexpr wal::CheckpointMode kModes[] = {wal::CheckpointMode::kFull,
                                                       wal::CheckpointMode::kRestart,
                                                       wal::CheckpointMode::kTruncate};
      const auto mode = kModes[(t / options.checkpoint_every) % 3];
      const int by = options.checkpointer >= 0 ? options.checkpointer : who;
      if (!pagers[by]->Checkpoint(mode).ok()) return result;
      ++result.explicit_checkpoints;
    }
  }
  for (int i = 0; i < n; ++i) tally(i);
  return result;
}

bool FileJournal(pager::JournalMode mode) {
  return mode != pager::JournalMode::kMemory && mode != pager::JournalMode::kOff;
}

std::unique_ptr<CrashWorld> RunTo(const WorkloadOptions& options,
                                  const vfs::FaultInjectingFileSystem::DiskModel& disk,
                                  uint64_t point, const std::set<uint64_t>& skip) {
  auto w = std::make_unique<CrashWorld>();
  w->fs = std::make_unique<vfs::FaultInjectingFileSystem>(&w->base);
  w->fs->SetDiskModel(disk);
  if (!skip.empty()) w->fs->SkipSyncs(skip);
  w->fs->CrashAfterMutations(point);
  w->run = RunWorkload(*w->fs, options, /*record=*/false);
  return w;
}

std::vector<int> Allowed(const RunResult& run) {
  std::vector<int> allowed = {run.acknowledged};
  if (run.in_flight != 0) allowed.push_back(run.in_flight);
  return allowed;
}

Recovered Verify(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                 const std::vector<ModelState>& history, const std::vector<int>& allowed,
                 const ModelState* expect_exact) {
  Recovered r;
  const uint64_t start = fs.mutation_count();
  auto pager_or = Pager::Open(&fs, kSweepPath, options.pager);
  if (!pager_or.ok()) {
    r.problem = absl::StrCat("open: ", pager_or.status().ToString());
    return r;
  }
  r.mutations = fs.mutation_count() - start;
  r.rolled_back = (*pager_or)->Stats().recoveries > 0;
  auto txn_or = (*pager_or)->BeginRead();
  if (!txn_or.ok()) {
    r.problem = absl::StrCat("begin read: ", txn_or.status().ToString());
    return r;
  }
  pager::ReadTxn& txn = **txn_or;
  auto problems = txn.CheckPages();
  if (!problems.ok()) {
    r.problem = absl::StrCat("check: ", problems.status().ToString());
    return r;
  }
  if (!problems->empty()) {
    r.problem = absl::StrCat("check: ", (*problems)[0]);
    return r;
  }
  r.t = static_cast<int>(txn.meta(0));
  if (expect_exact != nullptr) {
    if (txn.meta(1) != expect_exact->probe) {
      r.problem = absl::StrCat("probe mark ", txn.meta(1), ", want ", expect_exact->probe,
                               " (the probe transaction after recovery was lost)");
      return r;
    }
    r.problem = Compare(txn, *expect_exact, "after the probe");
    r.state = *expect_exact;
    return r;
  }
  if (r.t < 0 || r.t >= static_cast<int>(history.size())) {
    r.problem = absl::StrCat("meta(0) = ", r.t, " is no transaction of the workload");
    return r;
  }
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), r.t) == allowed.end()) {
    std::string want;
    const bool range = allowed.size() > 3 &&
                       allowed.back() - allowed.front() + 1 == static_cast<int>(allowed.size());
    if (range) {
      want = absl::StrCat(allowed.front(), " to ", allowed.back());
    } else {
      for (int a : allowed) absl::StrAppend(&want, want.empty() ? "" : " or ", a);
    }
    r.problem = absl::StrCat("recovered to transaction ", r.t, ", want ", want,
                             r.t < allowed.front() ? " (an acknowledged commit was lost)" : "");
    return r;
  }
  if (txn.meta(1) != 0) {
    r.problem = "a probe mark without a probe";
    return r;
  }
  r.state = history[r.t];
  r.problem = Compare(txn, history[r.t], absl::StrCat("transaction ", r.t));
  return r;
}

ModelState Probe(vfs::FaultInjectingFileSystem& fs, const WorkloadOptions& options,
                 const ModelState& before, uint64_t seed, bool* ok) {
  *ok = false;
  ModelState after = before;
  after.probe = static_cast<uint32_t>(seed % 0xFFFFFFF0u) + 1;
  auto pager_or = Pager::Open(&fs, kSweepPath, options.pager);
  if (!pager_or.ok()) return after;
  auto txn = (*pager_or)->BeginWrite();
  if (!txn.ok()) return after;
  std::mt19937_64 rng(seed);
  const uint32_t tag = 1000000 + after.probe % 1000000;
  for (auto& [page_no, page_tag] : after.live) {
    if (rng() % 2 != 0) continue;
    auto span = (*txn)->GetMutable(PageNo(page_no));
    if (!span.ok()) return after;
    Stamp(*span, page_no, tag);
    page_tag = tag;
  }
  (*txn)->set_meta(1, after.probe);
  *ok = (*txn)->Commit().ok();
  return after;
}

bool HotJournalPresent(vfs::FaultInjectingFileSystem& fs) {
  auto valid = pager::JournalHeaderValid(&fs, absl::StrCat(kSweepPath, "-journal"));
  return !valid.ok() || *valid;
}

uint64_t FilesDigest(vfs::FileSystem& base) {
  uint64_t digest = 0;
  for (const std::string& path :
       {std::string(kSweepPath), absl::StrCat(kSweepPath, "-journal"),
        absl::StrCat(kSweepPath, "-wal"), absl::StrCat(kSweepPath, "-wal2")}) {
    std::string content = "absent";
    auto exists = base.Exists(path);
    if (exists.ok() && *exists) {
      auto file = base.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
      if (file.ok()) {
        auto size = (*file)->Size();
        content.assign(size.ok() ? *size : 0, '\0');
        if (!(*file)->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(content.data()),
                                            content.size())).ok()) {
          content = "unreadable";
        }
      }
    }
    digest = digest * 1000003 ^ std::hash<std::string>()(content);
  }
  return digest;
}

}  // namespace journalkv::testing
