// Db::Compact: the database rewritten in place with no free pages and its leaves packed full,
// in one write transaction. It runs when there are free pages or when the live cells, packed
// as the bottom-up builder packs them, need fewer pages than the tree has
// (TreeBuilder::EstimateRebuild).
//
// Under the write lock throughout (no commit lands between the image and the rewrite):
//   1. The keys, read through the write transaction, are built in key order (bottom-up:
//      btree/builder.h, through WriteImage) into a new database
//      PATH.jkv-compact (journal OFF, sync OFF: it is scratch, and a crash leaves it for the
//      next Compact to remove; only a Compact, holding the write lock, writes that name).
//   2. StartRewrite(N) for the image's page count N; each page 2..N of the image replaces the
//      database's page of that number (pager/pager.h: the rollback journal keeps the originals
//      of the pages in use, the WAL logs the new ones), spilling as any big transaction does;
//      the meta slots (the B+tree's root) are the image's.
//   3. The commit: the pages past N are gone (the rollback modes cut the file after its sync,
//      pager.h I11; WAL and WAL2 when a checkpoint has copied the whole log, wal/checkpoint_copy.h
//      C7, which Compact then tries).
// The keys are the same before and after, so a crash anywhere leaves every key: the
// transaction is atomic like any other (tests/compact_test.cc sweeps the power loss).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "btree/builder.h"
#include "engine/db.h"
#include "pager/db_format.h"
#include "pager/pager.h"

namespace journalkv {
namespace {

constexpr const char* kImageSideSuffixes[] = {"-journal", "-wal", "-wal2", "-shm"};

// Pages read from the image per call, and put into the transaction between spills.
constexpr uint32_t kPagesPerRead = 64;

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
    // 1. The image. A leftover one is an interrupted Compact's (only Compact writes the name,
    // under the write lock this one holds).
    RemoveImage(*fs_, image);
    std::unique_ptr<Iterator> it = w->NewIterator();
    ImageResult built;
    s = WriteImage(image, before.page_size, *it, &built);
    it.reset();
    result.keys = built.keys;
    // 2. The rewrite, when the image is smaller.
    std::unique_ptr<vfs::File> file;
    pager::DbHeader compact;
    if (s.ok()) {
      absl::StatusOr<std::unique_ptr<vfs::File>> opened =
          fs_->Open(image, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
      s = opened.status();
      if (s.ok()) file = *std::move(opened);
    }
    std::vector<uint8_t> buffer(static_cast<size_t>(kPagesPerRead) * before.page_size);
    if (s.ok()) {
      absl::Span<uint8_t> page1(buffer.data(), before.page_size);
      s = file->Read(0, page1);
      if (s.ok()) {
        absl::StatusOr<pager::DbHeader> h = pager::DecodeDbHeader(page1, image);
        s = h.status();
        if (s.ok()) compact = *h;
      }
    }
    const bool smaller = s.ok() && compact.page_count < before.page_count;
    if (s.ok() && !smaller) result.keys = 0;  // the image is no smaller: nothing rewritten
    if (smaller) s = txn.StartRewrite(compact.page_count);
    for (uint32_t first = 2; smaller && s.ok() && first <= compact.page_count;
         first += kPagesPerRead) {
      const uint32_t last =
          std::min<uint64_t>(compact.page_count, uint64_t{first} + kPagesPerRead - 1);
      const size_t len = static_cast<size_t>(last - first + 1) * before.page_size;
      s = file->Read(uint64_t{first - 1} * before.page_size, absl::MakeSpan(buffer.data(), len));
      for (uint32_t n = first; s.ok() && n <= last; ++n) {
        absl::Span<const uint8_t> page(
            buffer.data() + static_cast<size_t>(n - first) * before.page_size, before.page_size);
        if (!pager::PageChecksumOk(PageNo(n), page)) {
          s = absl::DataLossError(absl::StrCat(image, ": page ", n, " fails its checksum"));
          break;
        }
        absl::StatusOr<absl::Span<uint8_t>> dest = txn.RewritePage(PageNo(n));
        s = dest.status();
        if (s.ok()) std::memcpy(dest->data(), page.data(), dest->size());
      }
      if (s.ok()) s = txn.SpillIfNeeded();
    }
    if (smaller && s.ok()) {
      for (int slot = 0; slot < pager::kNumMetaSlots; ++slot) {
        txn.set_meta(slot, compact.meta[slot]);
      }
      // 3. The commit; a busy one (rollback modes: readers of this or another handle outlast
      // the busy timeout) is rolled back, its error saying so.
      s = w->CommitOrRollback();
      if (s.ok()) result.pages = compact.page_count;
    }
    file.reset();
    RemoveImage(*fs_, image);
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
