// Db::Compact: the database rewritten in place with no free pages and its leaves packed full,
// in one write transaction. It runs when there are free pages or when the live cells, packed
// as the bottom-up builder packs them, need fewer pages than the tree has
// (TreeBuilder::EstimateRebuild).
//
// Under the write lock throughout, in one transaction (WriteTxn::StartRebuild, pager/txn.h):
//   1. StartRebuild: the freelist emptied, the database one page long; the builder's Allocate
//      then hands out pages 2, 3, ... in order (L7).
//   2. The old tree is read in key order through the transaction's start (AtStart, L8 and L9:
//      a page the new tree has already overwritten is read from its original, in memory or
//      read back from the rollback journal; in WAL from the writer's start snapshot) and built
//      bottom-up (btree/builder.h, full fill) straight into the transaction's pages, spilling
//      as any big transaction does: no image, no second copy of the database.
//   3. The commit when the new tree is smaller (else a rollback): the pages past the new end
//      are gone (the rollback modes cut the file after its sync, pager.h I11; WAL and WAL2
//      when a checkpoint has copied the whole log, wal/checkpoint_copy.h C7, which Compact
//      then tries).
// The keys are the same before and after, so a crash anywhere leaves every key: the
// transaction is atomic like any other (L7; tests/compact_sweep_test.cc sweeps the power loss,
// tests/builder_sweep_test.cc crashes it and its recovery on the tests/crash_sweep.h driver).
// Compact before this wrote an image file (PATH.jkv-compact) first; one a crash left behind is
// removed.
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/btree_format.h"
#include "btree/builder.h"
#include "btree/cursor.h"
#include "engine/db.h"
#include "pager/db_format.h"
#include "pager/pager.h"

namespace journalkv {
namespace {

constexpr const char* kImageSideSuffixes[] = {"-journal", "-wal", "-wal2", "-shm"};

absl::StatusOr<uint64_t> SizeOf(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  return file->Size();
}

void RemoveImage(vfs::FileSystem& fs, const std::string& image) {
  (void)fs.Delete(image);
  for (const char* suffix : kImageSideSuffixes) (void)fs.Delete(image + suffix);
}

}  // namespace

absl::StatusOr<uint64_t> Db::EstimateReclaimableBytes() {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<pager::ReadTxn> txn, pager_->BeginRead());
  JKV_ASSIGN_OR_RETURN(btree::TreeBuilder::RebuildEstimate e,
                       btree::TreeBuilder::EstimateRebuild(*txn));
  txn.reset();
  JKV_ASSIGN_OR_RETURN(const uint64_t file_size, SizeOf(*fs_, path_));
  const uint64_t pages = 1 + e.overflow_pages + e.tree_pages;
  const uint64_t compacted = pages * page_size();
  return file_size > compacted ? file_size - compacted : 0;
}

absl::Status Db::Rebuild(WriteTransaction& w, uint32_t pages_before, CompactResult* result) {
  pager::WriteTxn& txn = *w.txn_;
  // 1. L7: from here the transaction's Allocate hands out pages 2, 3, ... in order.
  JKV_RETURN_IF_ERROR(txn.StartRebuild());
  txn.set_meta(btree::kRootMetaSlot, 0);  // the new tree starts empty; the old one is read
                                          // through AtStart, whose meta slots are the start's
  // 2. The old tree, read at the start (L8, L9), built into the transaction.
  std::unique_ptr<pager::PageReader> old = txn.AtStart();
  auto cursor = std::make_unique<btree::Cursor>(*old);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<btree::TreeBuilder> builder,
                       btree::TreeBuilder::Create(txn, btree::TreeBuilder::kFullFill));
  absl::Status s = cursor->SeekToFirst();
  while (s.ok() && cursor->Valid()) {
    absl::StatusOr<absl::string_view> value = cursor->ValueView();
    s = value.ok() ? builder->Add(cursor->key(), *value) : value.status();
    // The rest of the leaf's pairs whose values lie in it, without a copy.
    if (s.ok()) {
      cursor->ScanInLeaf([&](absl::string_view key, absl::string_view v) {
        s = builder->Add(key, v);
        return s.ok();
      });
    }
    // Between pairs the builder holds no span of the transaction (L5), and the cursor holds
    // only images of the start (L9): a spill here is safe for both.
    if (s.ok()) s = txn.SpillIfNeeded();
    if (s.ok()) s = cursor->Next();
  }
  if (s.ok()) s = cursor->status();
  cursor.reset();  // the start's pages let go of before the commit
  if (s.ok()) s = builder->Finish().status();
  built_pairs_.fetch_add(builder->pairs(), std::memory_order_relaxed);
  JKV_RETURN_IF_ERROR(s);
  // 3. Only a smaller database is committed.
  const uint32_t pages = txn.page_count();
  if (pages >= pages_before) return w.Rollback();
  result->keys = builder->pairs();
  // A busy commit (rollback modes: readers of this or another handle outlast the busy
  // timeout) is rolled back, its error saying so.
  JKV_RETURN_IF_ERROR(w.CommitOrRollback());
  result->pages = pages;
  return absl::OkStatus();
}

absl::StatusOr<CompactResult> Db::Compact() {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> w, BeginWrite());
  pager::WriteTxn& txn = *w->txn_;
  const pager::DbHeader before = txn.header();
  CompactResult result;
  result.pages_before = before.page_count;
  result.free_pages_before = before.freelist_count;
  result.pages = before.page_count;
  JKV_ASSIGN_OR_RETURN(result.bytes_before, SizeOf(*fs_, path_));

  const std::string image = path_ + kCompactTempSuffix;
  absl::Status s;
  // Worth rewriting when there are free pages, or when the live cells packed at full fill
  // would take fewer pages than the tree has (every other key deleted leaves half-empty leaves
  // and no free page).
  bool worth = before.freelist_count > 0;
  if (!worth) {
    absl::StatusOr<btree::TreeBuilder::RebuildEstimate> e =
        btree::TreeBuilder::EstimateRebuild(txn);
    if (!e.ok()) {
      return absl::Status(e.status().code(), absl::StrCat("compact: ", e.status().message()));
    }
    worth = 1 + e->overflow_pages + e->tree_pages < before.page_count;
  }
  if (worth) {
    RemoveImage(*fs_, image);  // an interrupted Compact of an older version left it
    s = Rebuild(*w, before.page_count, &result);
  }
  if (s.ok() && w->open()) s = w->Rollback();  // nothing to rewrite
  w.reset();
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("compact: ", s.message()));
  if (pager_->wal_mode()) {
    // C7: the checkpoint that copies the whole log cuts the file. TRUNCATE only once nothing
    // is left to copy, so that a reader of an older snapshot costs no wait.
    JKV_ASSIGN_OR_RETURN(result.checkpoint, Checkpoint(CheckpointMode::kPassive));
    if (!result.checkpoint.blocked) {
      JKV_ASSIGN_OR_RETURN(result.checkpoint, Checkpoint(CheckpointMode::kTruncate));
    }
  }
  JKV_ASSIGN_OR_RETURN(result.bytes, SizeOf(*fs_, path_));
  return result;
}

}  // namespace journalkv
