// Micro-benchmarks of the B+tree over the real pager: cursor seeks and scans, point reads,
// overflow reads and writes inside one write transaction, on trees of 100k and 1M keys that
// sit entirely in the page cache.
//
// Each tree is built once per process through Pager::Open on a MemFileSystem (journal OFF,
// sync OFF: only the build is affected, no benchmark here commits) with a cache large enough
// for every page, so after the build no page is read from the file. The "misses/op" counter
// reports the cache misses each operation met (0 means the tree really was cached).
//
// Keys are "user" + 12 decimal digits (16 bytes), values 100 bytes, inserted in key order (so
// leaves are nearly full, as after a bulk load). Random lookups cycle through a table of
// pre-made keys so that formatting a key is not measured.
//
// BM_*Flat run the same tree code over a FlatPages snapshot of the same pages (a PageReader
// that hands out PageRefs from a vector): the difference to the pager variant is the pager's
// per-page Get cost (mutex, hash lookup, LRU splice, stats).
//
// Run: ./bazelw run //bench:micro -- --benchmark_filter=Cursor
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "base/types.h"
#include "benchmark/benchmark.h"
#include "btree/btree.h"
#include "btree/btree_format.h"
#include "btree/builder.h"
#include "btree/cursor.h"
#include "pager/page_access.h"
#include "pager/pager.h"
#include "pager/pager_options.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using btree::BTree;
using btree::Cursor;

constexpr size_t kKeySize = 16;
constexpr size_t kValueSize = 100;
constexpr uint32_t kCachePages = 1u << 22;  // 16 GiB of 4 KiB pages: never the limit here
constexpr uint64_t kKeysPerBuildTxn = 100000;
constexpr size_t kLookupKeys = 1 << 18;  // random keys per table, cycled through

// Writes "user" + `i` as 12 zero-padded decimal digits to out[0, 16): keys sort as numbers do.
void FormatKey(uint64_t i, char* out) {
  std::memcpy(out, "user", 4);
  for (size_t d = kKeySize - 1; d >= 4; --d) {
    out[d] = static_cast<char>('0' + i % 10);
    i /= 10;
  }
}

std::string Key(uint64_t i) {
  std::string key(kKeySize, '\0');
  FormatKey(i, key.data());
  return key;
}

// kLookupKeys keys Key(r) with r uniform in [0, n), stored back to back.
class KeyTable {
 public:
  explicit KeyTable(uint64_t n) : bytes_(kLookupKeys * kKeySize, '\0') {
    std::mt19937_64 rng(n);
    for (size_t i = 0; i < kLookupKeys; ++i) FormatKey(rng() % n, &bytes_[i * kKeySize]);
  }
  absl::string_view operator[](size_t i) const {
    return absl::string_view(&bytes_[(i & (kLookupKeys - 1)) * kKeySize], kKeySize);
  }

 private:
  std::string bytes_;
};

// A PageReader over a snapshot of every page of a transaction, with no locking and no cache
// bookkeeping: what the tree code costs when fetching a page costs (almost) nothing.
class FlatPages final : public pager::PageReader {
 public:
  static absl::StatusOr<std::unique_ptr<FlatPages>> Snapshot(pager::PageReader& from) {
    auto flat = std::unique_ptr<FlatPages>(new FlatPages(from));
    for (uint32_t n = 2; n <= from.page_count(); ++n) {
      JKV_ASSIGN_OR_RETURN(pager::PageRef ref, from.Get(PageNo(n)));
      flat->refs_.push_back(std::move(ref));
    }
    return flat;
  }

  absl::StatusOr<pager::PageRef> Get(PageNo page_no) override {
    if (page_no.value() < 2 || page_no.value() > page_count_) {
      return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(), " out of range"));
    }
    return refs_[page_no.value() - 2];
  }
  uint32_t page_count() const override { return page_count_; }
  uint32_t usable_size() const override { return usable_size_; }
  uint32_t meta(int slot) const override { return meta_[slot]; }

 private:
  explicit FlatPages(const pager::PageReader& from)
      : page_count_(from.page_count()), usable_size_(from.usable_size()) {
    for (int i = 0; i < pager::kNumMetaSlots; ++i) meta_[i] = from.meta(i);
  }

  const uint32_t page_count_;
  const uint32_t usable_size_;
  uint32_t meta_[pager::kNumMetaSlots];
  std::vector<pager::PageRef> refs_;  // [i] is page i + 2
};

// A database on a MemFileSystem whose pages are all in the pager's cache.
struct CachedDb {
  vfs::MemFileSystem fs;
  std::unique_ptr<pager::Pager> pager;
  std::unique_ptr<pager::ReadTxn> flat_txn;  // keeps the snapshot's transaction open
  std::unique_ptr<FlatPages> flat;
  btree::CheckReport shape;
};

absl::StatusOr<std::unique_ptr<CachedDb>> OpenCachedDb() {
  auto db = std::make_unique<CachedDb>();
  pager::PagerOptions options;
  options.journal_mode = pager::JournalMode::kOff;
  options.sync = pager::SyncLevel::kOff;
  options.cache_pages = kCachePages;
  JKV_ASSIGN_OR_RETURN(db->pager, pager::Pager::Open(&db->fs, "/bench.db", options));
  return db;
}

// Takes the snapshot for the Flat variants and the tree's shape for the counters.
absl::Status Finish(CachedDb& db) {
  JKV_ASSIGN_OR_RETURN(db.flat_txn, db.pager->BeginRead());
  JKV_ASSIGN_OR_RETURN(db.flat, FlatPages::Snapshot(*db.flat_txn));
  JKV_ASSIGN_OR_RETURN(db.shape, BTree::Check(*db.flat, {}));
  if (!db.shape.ok()) return absl::InternalError("tree check: " + db.shape.ToString());
  return absl::OkStatus();
}

// The tree of `n_keys` keys Key(0) .. Key(n_keys - 1), built on first use and kept for the
// life of the process.
absl::StatusOr<CachedDb*> Tree(uint64_t n_keys) {
  static auto* trees = new std::map<uint64_t, std::unique_ptr<CachedDb>>();
  if (auto it = trees->find(n_keys); it != trees->end()) return it->second.get();
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<CachedDb> db, OpenCachedDb());
  const std::string value(kValueSize, 'v');
  for (uint64_t begin = 0; begin < n_keys; begin += kKeysPerBuildTxn) {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::WriteTxn> txn, db->pager->BeginWrite());
    for (uint64_t i = begin; i < n_keys && i < begin + kKeysPerBuildTxn; ++i) {
      JKV_RETURN_IF_ERROR(BTree::Put(*txn, Key(i), value));
    }
    JKV_RETURN_IF_ERROR(txn->Commit());
  }
  JKV_RETURN_IF_ERROR(Finish(*db));
  CachedDb* raw = db.get();
  (*trees)[n_keys] = std::move(db);
  return raw;
}

// A database of kOverflowKeys values of `value_size` random bytes, under keys Key(0) ...
constexpr uint64_t kOverflowKeys = 8;

absl::StatusOr<CachedDb*> OverflowTree(uint32_t value_size) {
  static auto* trees = new std::map<uint32_t, std::unique_ptr<CachedDb>>();
  if (auto it = trees->find(value_size); it != trees->end()) return it->second.get();
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<CachedDb> db, OpenCachedDb());
  std::mt19937_64 rng(value_size);
  std::string value(value_size, '\0');
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::WriteTxn> txn, db->pager->BeginWrite());
  for (uint64_t i = 0; i < kOverflowKeys; ++i) {
    for (char& c : value) c = static_cast<char>(rng());
    JKV_RETURN_IF_ERROR(BTree::Put(*txn, Key(i), value));
  }
  JKV_RETURN_IF_ERROR(txn->Commit());
  JKV_RETURN_IF_ERROR(Finish(*db));
  CachedDb* raw = db.get();
  (*trees)[value_size] = std::move(db);
  return raw;
}

// Reports a failed status as the benchmark's error; true when it did.
bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(status.ToString().c_str());
  return true;
}

// Measures cache misses over the timed loop and publishes the tree's shape.
class MissCounter {
 public:
  MissCounter(benchmark::State& state, CachedDb& db)
      : state_(state), db_(db), start_(db.pager->Stats().cache_misses) {}
  ~MissCounter() {
    const uint64_t misses = db_.pager->Stats().cache_misses - start_;
    state_.counters["misses/op"] =
        benchmark::Counter(static_cast<double>(misses), benchmark::Counter::kAvgIterations);
    state_.counters["depth"] = db_.shape.depth;
    state_.counters["leaf_pages"] = db_.shape.leaf_pages;
  }

 private:
  benchmark::State& state_;
  CachedDb& db_;
  const uint64_t start_;
};

enum class Reader { kPager, kFlat };

// Runs `body(reader)` over a read transaction of the tree of state.range(0) keys (kPager) or
// over its FlatPages snapshot (kFlat).
template <typename Body>
void WithReader(benchmark::State& state, Reader which, Body body) {
  absl::StatusOr<CachedDb*> db = Tree(static_cast<uint64_t>(state.range(0)));
  if (Failed(state, db.status())) return;
  absl::StatusOr<std::unique_ptr<pager::ReadTxn>> txn = (*db)->pager->BeginRead();
  if (Failed(state, txn.status())) return;
  MissCounter misses(state, **db);
  if (which == Reader::kPager) {
    body(static_cast<pager::PageReader&>(**txn));
  } else {
    body(static_cast<pager::PageReader&>(*(*db)->flat));
  }
}

void TreeSizes(benchmark::internal::Benchmark* b) { b->Arg(100000)->Arg(1000000); }

// --- Cursors -------------------------------------------------------------------------------

// Cursor::Seek to a random existing key: one descent from the root, reusing the cursor.
void BM_CursorSeek(benchmark::State& state, Reader which) {
  const KeyTable keys(static_cast<uint64_t>(state.range(0)));
  WithReader(state, which, [&](pager::PageReader& pages) {
    Cursor cursor(pages);
    size_t i = 0;
    for (auto _ : state) {
      if (Failed(state, cursor.Seek(keys[i++]))) break;
      benchmark::DoNotOptimize(cursor.key());
    }
  });
}
BENCHMARK_CAPTURE(BM_CursorSeek, pager, Reader::kPager)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_CursorSeek, flat, Reader::kFlat)->Apply(TreeSizes);

// Cursor::Next over the whole tree, wrapping around at the end: the cost per key of a scan.
void BM_CursorNext(benchmark::State& state) {
  WithReader(state, Reader::kPager, [&](pager::PageReader& pages) {
    Cursor cursor(pages);
    if (Failed(state, cursor.SeekToFirst())) return;
    for (auto _ : state) {
      benchmark::DoNotOptimize(cursor.key());
      if (Failed(state, cursor.Next())) break;
      if (!cursor.Valid() && Failed(state, cursor.SeekToFirst())) break;
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  });
}
BENCHMARK(BM_CursorNext)->Apply(TreeSizes);

// As BM_CursorNext, reading each value into a reused string too.
void BM_CursorNextReadValue(benchmark::State& state) {
  WithReader(state, Reader::kPager, [&](pager::PageReader& pages) {
    Cursor cursor(pages);
    std::string value;
    if (Failed(state, cursor.SeekToFirst())) return;
    for (auto _ : state) {
      if (Failed(state, cursor.ReadValue(&value))) break;
      benchmark::DoNotOptimize(value.data());
      if (Failed(state, cursor.Next())) break;
      if (!cursor.Valid() && Failed(state, cursor.SeekToFirst())) break;
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (kKeySize + kValueSize)));
  });
}
BENCHMARK(BM_CursorNextReadValue)->Apply(TreeSizes);

// --- Point reads ---------------------------------------------------------------------------

// BTree::Get of a random existing key: descent, leaf search, and a new string for the value.
void BM_Get(benchmark::State& state) {
  const KeyTable keys(static_cast<uint64_t>(state.range(0)));
  WithReader(state, Reader::kPager, [&](pager::PageReader& pages) {
    size_t i = 0;
    for (auto _ : state) {
      absl::StatusOr<std::optional<std::string>> value = BTree::Get(pages, keys[i++]);
      if (Failed(state, value.status())) break;
      benchmark::DoNotOptimize(*value);
    }
  });
}
BENCHMARK(BM_Get)->Apply(TreeSizes);

// BTree::GetInto a reused string: Get without the allocation.
void BM_GetInto(benchmark::State& state, Reader which) {
  const KeyTable keys(static_cast<uint64_t>(state.range(0)));
  WithReader(state, which, [&](pager::PageReader& pages) {
    std::string value;
    size_t i = 0;
    for (auto _ : state) {
      absl::StatusOr<bool> found = BTree::GetInto(pages, keys[i++], &value);
      if (Failed(state, found.status())) break;
      benchmark::DoNotOptimize(*found);
    }
  });
}
BENCHMARK_CAPTURE(BM_GetInto, pager, Reader::kPager)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_GetInto, flat, Reader::kFlat)->Apply(TreeSizes);

// PageReader::Get of a random page of the tree (already cached): the per-page cost every
// descent level pays. Pager: ReadTxn::Get takes the pager mutex, looks the page up in the
// cache's hash map, moves it to the front of the LRU list and copies a shared_ptr.
void BM_PageGet(benchmark::State& state, Reader which) {
  WithReader(state, which, [&](pager::PageReader& pages) {
    std::mt19937_64 rng(1);
    std::vector<PageNo> page_nos;
    for (size_t i = 0; i < kLookupKeys; ++i) {
      page_nos.push_back(PageNo(2 + static_cast<uint32_t>(rng() % (pages.page_count() - 1))));
    }
    size_t i = 0;
    for (auto _ : state) {
      absl::StatusOr<pager::PageRef> ref = pages.Get(page_nos[i++ & (kLookupKeys - 1)]);
      if (Failed(state, ref.status())) break;
      benchmark::DoNotOptimize(ref->data().data());
    }
  });
}
BENCHMARK_CAPTURE(BM_PageGet, pager, Reader::kPager)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_PageGet, flat, Reader::kFlat)->Apply(TreeSizes);

// BTree::GetInto of a value of state.range(0) bytes: a leaf cell plus an overflow chain of
// ceil(size / 4080) pages, copied into a reused string. Bytes/s count the value.
void BM_OverflowRead(benchmark::State& state) {
  const uint32_t value_size = static_cast<uint32_t>(state.range(0));
  absl::StatusOr<CachedDb*> db = OverflowTree(value_size);
  if (Failed(state, db.status())) return;
  absl::StatusOr<std::unique_ptr<pager::ReadTxn>> txn = (*db)->pager->BeginRead();
  if (Failed(state, txn.status())) return;
  MissCounter misses(state, **db);
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < kOverflowKeys; ++i) keys.push_back(Key(i));
  std::string value;
  uint64_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<bool> found = BTree::GetInto(**txn, keys[i++ % kOverflowKeys], &value);
    if (Failed(state, found.status())) break;
    benchmark::DoNotOptimize(value.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * value_size);
  state.counters["overflow_pages/value"] =
      static_cast<double>((*db)->shape.overflow_pages) / kOverflowKeys;
}
BENCHMARK(BM_OverflowRead)->RangeMultiplier(4)->Range(16 << 10, 1 << 20);

// --- Writes inside one transaction ---------------------------------------------------------

enum class PutKind {
  kOverwrite,  // a random existing key, a value of the same size
  kInsert,     // a random new key between existing ones (20 bytes: Key(r) + 4 digits)
  kAppend,     // increasing new keys after the last one
  kAppendHinted,  // the same, through a btree::AppendHint (no descent per key)
};

// Formats the key of Put number `i` of a run into `key`.
void PutKey(PutKind kind, uint64_t n_keys, uint64_t i, std::mt19937_64& rng, std::string* key) {
  switch (kind) {
    case PutKind::kOverwrite:
      key->resize(kKeySize);
      FormatKey(rng() % n_keys, key->data());
      break;
    case PutKind::kInsert: {
      key->resize(kKeySize + 4);
      FormatKey(rng() % n_keys, key->data());
      uint64_t suffix = rng() % 10000;
      for (size_t d = kKeySize + 3; d >= kKeySize; --d) {
        (*key)[d] = static_cast<char>('0' + suffix % 10);
        suffix /= 10;
      }
      break;
    }
    case PutKind::kAppend:
    case PutKind::kAppendHinted:
      key->resize(kKeySize);
      FormatKey(n_keys + i, key->data());
      break;
  }
}

// BTree::Put in one write transaction that is never committed (rolled back after the run, so
// the cached tree is the same for every run). The first Put that touches a page copies it
// (WriteTxn::MakeDirty), so the cost includes making the transaction's working set dirty.
void BM_TxnPut(benchmark::State& state, PutKind kind) {
  const uint64_t n_keys = static_cast<uint64_t>(state.range(0));
  absl::StatusOr<CachedDb*> db = Tree(n_keys);
  if (Failed(state, db.status())) return;
  absl::StatusOr<std::unique_ptr<pager::WriteTxn>> txn = (*db)->pager->BeginWrite();
  if (Failed(state, txn.status())) return;
  std::mt19937_64 rng(7);
  std::string key;
  const std::string value(kValueSize, 'w');
  uint64_t i = 0;
  btree::AppendHint hint;
  btree::AppendHint* const use_hint = kind == PutKind::kAppendHinted ? &hint : nullptr;
  {
    MissCounter misses(state, **db);
    for (auto _ : state) {
      PutKey(kind, n_keys, i++, rng, &key);
      if (Failed(state, BTree::Put(**txn, key, value, use_hint))) break;
    }
  }
  state.counters["dirty_pages"] = static_cast<double>((*txn)->dirty_pages());
  Failed(state, (*txn)->Rollback());  // after the timed loop: not measured
}
BENCHMARK_CAPTURE(BM_TxnPut, overwrite, PutKind::kOverwrite)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_TxnPut, insert, PutKind::kInsert)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_TxnPut, append, PutKind::kAppend)->Apply(TreeSizes);
BENCHMARK_CAPTURE(BM_TxnPut, append_hinted, PutKind::kAppendHinted)->Apply(TreeSizes);

// --- Building a tree from sorted keys --------------------------------------------------------

// N sorted pairs (Key(i), kValueSize-byte values) into an empty tree in one write transaction
// (rolled back, outside the timing): through btree::TreeBuilder (at its default fill, and
// full), or through BTree::Put with an AppendHint (the path a sorted load took before it).
enum class BuildKind { kBuilder, kBuilderFull, kAppendHinted };

void BM_BuildSorted(benchmark::State& state, BuildKind kind) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  absl::StatusOr<std::unique_ptr<CachedDb>> db = OpenCachedDb();
  if (Failed(state, db.status())) return;
  std::vector<std::string> keys;
  keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) keys.push_back(Key(i));
  const std::string value(kValueSize, 'v');
  uint64_t pages = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<pager::WriteTxn>> txn = (*db)->pager->BeginWrite();
    if (Failed(state, txn.status())) return;
    if (kind == BuildKind::kAppendHinted) {
      btree::AppendHint hint;
      for (const std::string& k : keys) {
        if (Failed(state, BTree::Put(**txn, k, value, &hint))) return;
      }
    } else {
      absl::StatusOr<std::unique_ptr<btree::TreeBuilder>> b = btree::TreeBuilder::Create(
          **txn, kind == BuildKind::kBuilder ? btree::TreeBuilder::kDefaultFill
                                             : btree::TreeBuilder::kFullFill);
      if (Failed(state, b.status())) return;
      for (const std::string& k : keys) {
        if (Failed(state, (*b)->Add(k, value))) return;
      }
      if (Failed(state, (*b)->Finish().status())) return;
    }
    state.PauseTiming();
    pages = (*txn)->page_count();
    if (Failed(state, (*txn)->Rollback())) return;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["pages"] = static_cast<double>(pages);
}
BENCHMARK_CAPTURE(BM_BuildSorted, builder, BuildKind::kBuilder)->Arg(10000)->Arg(100000);
BENCHMARK_CAPTURE(BM_BuildSorted, builder_full, BuildKind::kBuilderFull)->Arg(10000)->Arg(100000);
BENCHMARK_CAPTURE(BM_BuildSorted, append_hinted, BuildKind::kAppendHinted)
    ->Arg(10000)
    ->Arg(100000);

}  // namespace
}  // namespace journalkv

BENCHMARK_MAIN();
