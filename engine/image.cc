// Db::WriteImage: the keys of an iterator written, in key order, into a new database with no
// free pages: Backup's `compact` copy. (Compact builds straight into its own transaction:
// engine/compact.cc.)
//
// The keys arrive in order into an empty tree, so the transaction builds the tree bottom-up
// (btree/builder.h) at TreeBuilder::kFullFill; the pairs count in this connection's
// DbStats::built_pairs.
//
// The new database is filled without a journal and without a sync: it is scratch until its
// caller makes it durable (Backup syncs it before its rename, B1). A crash leaves a partial
// file under the temporary name, which the caller's next run refuses (Backup, B3).
#include <utility>

#include "base/status_macros.h"
#include "btree/builder.h"
#include "engine/db.h"

namespace journalkv {

absl::Status Db::WriteImage(const std::string& path, uint32_t page_size, Iterator& source,
                            ImageResult* result) {
  Options o;
  o.file_system = fs_;
  o.page_size = page_size;
  o.cache_pages = options_.cache_pages;
  o.journal_mode = JournalMode::kOff;
  o.sync = SyncLevel::kOff;
  o.error_if_exists = true;  // never over a file someone else may own
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> out, Db::Open(path, o));
  result->created = true;
  absl::Status s;
  {
    absl::StatusOr<std::unique_ptr<WriteTransaction>> fill = out->BeginWrite();
    s = fill.status();
    // The keys come in order into an empty tree: built bottom-up (WriteTransaction::Put), with
    // pages packed full, since the point of the image is the fewest pages.
    if (s.ok()) (*fill)->build_fill_ = btree::TreeBuilder::kFullFill;
    for (source.SeekToFirst(); s.ok() && source.Valid(); source.Next()) {
      absl::StatusOr<absl::string_view> value = source.value_view();
      s = value.ok() ? (*fill)->Put(source.key(), *value) : value.status();
      ++result->keys;
    }
    if (s.ok()) s = source.status();
    if (s.ok()) s = (*fill)->Commit();
  }  // the transaction ends before its database closes
  if (s.ok()) {
    const DbStats stats = out->Stats();
    result->pages = stats.page_count;
    result->built_pairs = stats.built_pairs;
    built_pairs_.fetch_add(stats.built_pairs, std::memory_order_relaxed);
  }
  const absl::Status closed = out->Close();
  return s.ok() ? closed : s;
}

}  // namespace journalkv
