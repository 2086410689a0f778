// What the transactions of every journaling mode share: the range checks, the dirty pages,
// the freelist (Allocate, Free), CheckPages, and the order of SpillIfNeeded, Commit and
// Rollback around the strategy's hooks (journal_strategy.h).
#include "pager/txn.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "pager/freelist.h"
#include "pager/commit_pipeline.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

using vfs::IsSyncFailure;

// ---------------------------------------------------------------------------------------------
// Read transactions

absl::Status ReadTxn::CheckPageNo(PageNo page_no) const {
  if (page_no.value() < 2 || page_no.value() > header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(),
                                                   " out of range [2, ", header_.page_count, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PageNo>> ReadTxn::FreelistPages() {
  return WalkFreelist(*this, header_);
}

absl::StatusOr<std::vector<std::string>> ReadTxn::CheckPages() {
  std::vector<std::string> problems;
  absl::StatusOr<std::vector<PageNo>> free_pages = FreelistPages();
  absl::flat_hash_set<uint32_t> leaves;
  if (free_pages.ok()) {
    for (PageNo p : *free_pages) leaves.insert(p.value());
    // Trunks are read (and checked) like any page; only leaves are exempt (freelist.h).
    for (PageNo p = header_.freelist_head; p.value() != 0;) {
      leaves.erase(p.value());
      JKV_ASSIGN_OR_RETURN(PageRef trunk, Get(p));
      p = PageNo(base::DecodeFixed32(trunk.data().data()));
    }
  } else {
    problems.push_back(std::string(free_pages.status().message()));
  }
  for (uint32_t n = 1; n <= header_.page_count; ++n) {
    if (leaves.contains(n)) continue;
    absl::StatusOr<std::shared_ptr<const PageBuffer>> page = LoadUncached(PageNo(n));
    if (!page.ok()) problems.push_back(std::string(page.status().message()));
    if (problems.size() == kMaxPageProblems && n < header_.page_count) {
      problems.push_back(absl::StrCat("stopped after ", kMaxPageProblems,
                                      " problems; pages ", n + 1, "..", header_.page_count,
                                      " not checked"));
      break;
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Write transactions: pages

// The subclass's destructor rolls back (its hooks are gone by the time this one runs).
WriteTxn::~WriteTxn() { JKV_DCHECK(finished_); }

absl::Status WriteTxn::CheckUsable() const {
  if (finished_) return absl::FailedPreconditionError("write transaction already ended");
  if (!failed_.ok()) {
    return absl::Status(failed_.code(), absl::StrCat("write transaction failed earlier and "
                                                     "must be rolled back: ",
                                                     failed_.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteTxn::CheckPageNo(PageNo page_no) const {
  if (page_no.value() < 2 || page_no.value() > header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(),
                                                   " out of range [2, ", header_.page_count, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PageRef> WriteTxn::Get(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) {
    return PageRef(page_no, it->second.buffer, usable_size(), PageRef::Bytes::kChanging);
  }
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer, CleanPage(page_no));
  return PageRef(page_no, std::move(buffer), usable_size(), PageRef::Bytes::kFixed);
}

absl::StatusOr<WriteTxn::DirtyPage*> WriteTxn::MakeDirty(PageNo page_no) {
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) return &it->second;
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(page_no));
  auto copy = std::make_shared<PageBuffer>(clean->size);
  std::memcpy(copy->bytes.get(), clean->bytes.get(), clean->size);
  DirtyPage& dirty = dirty_[page_no.value()];
  dirty.buffer = std::move(copy);
  if (page_no.value() <= start_header_.page_count && KeepsOriginal(page_no)) {
    dirty.original = std::move(clean);
  }
  return &dirty;
}

// A dirty page whose bytes the caller fills (Allocate zero-fills it).
WriteTxn::DirtyPage* WriteTxn::AddBlankPage(PageNo page_no) {
  DirtyPage& dirty = dirty_[page_no.value()];
  dirty.buffer = std::make_shared<PageBuffer>(header_.page_size);
  dirty.original = nullptr;
  return &dirty;
}

absl::StatusOr<absl::Span<uint8_t>> WriteTxn::GetMutable(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  JKV_ASSIGN_OR_RETURN(DirtyPage * dirty, MakeDirty(page_no));
  return absl::Span<uint8_t>(dirty->buffer->bytes.get(), usable_size());
}

absl::StatusOr<MutablePage> WriteTxn::Allocate() {
  JKV_RETURN_IF_ERROR(CheckUsable());
  DirtyPage* page = nullptr;
  PageNo page_no;
  if (header_.freelist_head.value() != 0) {
    const PageNo trunk_no = header_.freelist_head;
    JKV_ASSIGN_OR_RETURN(DirtyPage * trunk, MakeDirty(trunk_no));
    uint8_t* t = trunk->buffer->bytes.get();
    const uint32_t n = base::DecodeFixed32(t + 4);
    if (n > TrunkCapacity(usable_size())) {
      return absl::DataLossError(absl::StrCat("freelist trunk page ", trunk_no.value(),
                                              ": impossible leaf count ", n));
    }
    if (n > 0) {
      page_no = PageNo(base::DecodeFixed32(t + kTrunkHeaderSize + 4 * (n - 1)));
      JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
      base::EncodeFixed32(t + 4, n - 1);
      if (freed_.erase(page_no.value()) > 0) {
        // Freed by this transaction: it was in use when the transaction began, so a rollback
        // must restore it and it is journaled like any other page.
        JKV_ASSIGN_OR_RETURN(page, MakeDirty(page_no));
      } else {
        page = AddBlankPage(page_no);  // free at the start: nothing to journal (freelist.h)
      }
    } else {
      page_no = trunk_no;
      header_.freelist_head = PageNo(base::DecodeFixed32(t));
      freed_.erase(page_no.value());
      page = trunk;
    }
    --header_.freelist_count;
  } else {
    page_no = PageNo(++header_.page_count);
    if (rebuilding_ && page_no.value() <= start_header_.page_count &&
        !rewrite_blank_.contains(page_no.value()) && KeepsOriginal(page_no)) {
      // L7: a page in use at the start, overwritten by a rebuild: its original is kept, and
      // journaled (durably) before the page reaches the file (I1), as any first write's is.
      // The page's bytes start blank (zeroed below), so they are not copied from the original
      // as MakeDirty's are.
      if (dirty_.contains(page_no.value())) {
        JKV_ASSIGN_OR_RETURN(page, MakeDirty(page_no));
      } else {
        if (page_no.value() >= read_ahead_end_) {  // L11: the next run of originals
          constexpr uint32_t kReadAheadPages = 32;
          const uint32_t run = std::min<uint32_t>(
              {kReadAheadPages, std::max<uint32_t>(1, core_->options_.cache_pages / 4),
               start_header_.page_count - page_no.value() + 1});
          ReadAheadOriginals(page_no, run);
          read_ahead_end_ = page_no.value() + run;
        }
        JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> clean, CleanPage(page_no));
        page = AddBlankPage(page_no);
        page->original = std::move(clean);
      }
    } else {
      page = AddBlankPage(page_no);  // new, free at the start (L7), or the WAL: nothing to keep
    }
  }
  std::memset(page->buffer->bytes.get(), 0, page->buffer->size);
  return MutablePage{page_no, absl::Span<uint8_t>(page->buffer->bytes.get(), usable_size())};
}

absl::Status WriteTxn::Free(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  const PageNo head = header_.freelist_head;
  if (head.value() != 0) {
    JKV_ASSIGN_OR_RETURN(DirtyPage * trunk, MakeDirty(head));
    uint8_t* t = trunk->buffer->bytes.get();
    const uint32_t n = base::DecodeFixed32(t + 4);
    if (n < TrunkCapacity(usable_size())) {
      base::EncodeFixed32(t + kTrunkHeaderSize + 4 * n, page_no.value());
      base::EncodeFixed32(t + 4, n + 1);
      ++header_.freelist_count;
      freed_.insert(page_no.value());
      return absl::OkStatus();
    }
  }
  JKV_ASSIGN_OR_RETURN(DirtyPage * page, MakeDirty(page_no));
  uint8_t* p = page->buffer->bytes.get();
  std::memset(p, 0, page->buffer->size);
  base::EncodeFixed32(p, head.value());
  header_.freelist_head = page_no;
  ++header_.freelist_count;
  freed_.insert(page_no.value());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PageNo>> WriteTxn::FreelistPages() {
  return WalkFreelist(*this, header_);
}

absl::Status WriteTxn::StartRewrite(uint32_t page_count) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  if (page_count < 1 || page_count > header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("rewrite to ", page_count,
                                                   " pages: out of range [1, ",
                                                   header_.page_count, "]"));
  }
  return BeginRewrite(page_count);
}

absl::Status WriteTxn::StartRebuild() {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(BeginRewrite(1));
  rebuilding_ = true;  // L7
  return absl::OkStatus();
}

absl::Status WriteTxn::BeginRewrite(uint32_t page_count) {
  if (!dirty_.empty() || HasWritten() || !freed_.empty() || !rewrite_blank_.empty() ||
      rebuilding_) {
    return absl::FailedPreconditionError(
        "a rewrite must start before the transaction writes any page");
  }
  // The leaves: free when the transaction began, so nothing of them is journaled (freelist.h).
  JKV_ASSIGN_OR_RETURN(std::vector<PageNo> free_pages, FreelistPages());
  for (PageNo p : free_pages) rewrite_blank_.insert(p.value());
  for (PageNo p = header_.freelist_head; p.value() != 0;) {
    rewrite_blank_.erase(p.value());
    JKV_ASSIGN_OR_RETURN(PageRef trunk, Get(p));
    p = PageNo(base::DecodeFixed32(trunk.data().data()));
  }
  header_.page_count = page_count;
  header_.freelist_head = PageNo(0);
  header_.freelist_count = 0;
  shrunk_ = true;
  return absl::OkStatus();
}

absl::Status WriteTxn::ReleaseFreeTail() {
  JKV_ASSIGN_OR_RETURN(std::vector<PageNo> free_pages, FreelistPages());
  absl::flat_hash_set<uint32_t> free;
  for (PageNo p : free_pages) free.insert(p.value());
  uint32_t end = header_.page_count;
  while (end > 1 && free.contains(end)) --end;
  if (end == header_.page_count) return absl::OkStatus();
  // The freelist is rebuilt from the free pages before `end`: its trunks first from the pages
  // that are trunks now (their content is a valid page: a committed trunk, or a page this
  // transaction freed), then from leaves, taken like Allocate takes them (a page free when the
  // transaction began is not journaled; one this transaction freed is, freelist.h).
  absl::flat_hash_set<uint32_t> trunks;
  for (PageNo p = header_.freelist_head; p.value() != 0;) {
    trunks.insert(p.value());
    JKV_ASSIGN_OR_RETURN(PageRef trunk, Get(p));
    p = PageNo(base::DecodeFixed32(trunk.data().data()));
  }
  std::vector<uint32_t> kept_trunks, kept_leaves;
  for (uint32_t p : free) {
    if (p > end) continue;
    (trunks.contains(p) ? kept_trunks : kept_leaves).push_back(p);
  }
  std::sort(kept_trunks.begin(), kept_trunks.end());
  std::sort(kept_leaves.begin(), kept_leaves.end());
  const uint32_t total = static_cast<uint32_t>(kept_trunks.size() + kept_leaves.size());
  const uint32_t capacity = TrunkCapacity(usable_size());
  const uint32_t needed = (total + capacity) / (capacity + 1);  // each trunk: itself + leaves
  std::vector<uint32_t> chain, leaves;
  for (uint32_t p : kept_trunks) (chain.size() < needed ? chain : leaves).push_back(p);
  for (uint32_t p : kept_leaves) (chain.size() < needed ? chain : leaves).push_back(p);
  size_t next_leaf = 0;
  for (size_t i = 0; i < chain.size(); ++i) {
    const PageNo page_no(chain[i]);
    DirtyPage* page = nullptr;
    if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) {
      page = &it->second;
    } else if (trunks.contains(page_no.value()) || freed_.contains(page_no.value())) {
      JKV_ASSIGN_OR_RETURN(page, MakeDirty(page_no));
    } else {
      page = AddBlankPage(page_no);
    }
    uint8_t* t = page->buffer->bytes.get();
    std::memset(t, 0, page->buffer->size);
    base::EncodeFixed32(t, i + 1 < chain.size() ? chain[i + 1] : 0);
    const uint32_t n = std::min<uint32_t>(capacity, leaves.size() - next_leaf);
    base::EncodeFixed32(t + 4, n);
    for (uint32_t k = 0; k < n; ++k) {
      base::EncodeFixed32(t + kTrunkHeaderSize + 4 * k, leaves[next_leaf++]);
    }
  }
  JKV_DCHECK(next_leaf == leaves.size());
  header_.freelist_head = PageNo(chain.empty() ? 0 : chain.front());
  header_.freelist_count = total;
  header_.page_count = end;
  absl::erase_if(dirty_, [&](const auto& e) { return e.first > end; });
  absl::erase_if(freed_, [&](uint32_t p) { return p > end; });
  DropPagesPast(end);
  shrunk_ = true;
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<uint8_t>> WriteTxn::RewritePage(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
  DirtyPage* page = nullptr;
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end()) {
    page = &it->second;
  } else if (rewrite_blank_.contains(page_no.value()) || !KeepsOriginal(page_no)) {
    page = AddBlankPage(page_no);  // nothing to keep: a free leaf, or the WAL
  } else {
    JKV_ASSIGN_OR_RETURN(page, MakeDirty(page_no));  // its original journaled (I1)
  }
  return absl::Span<uint8_t>(page->buffer->bytes.get(), usable_size());
}

namespace {

// L9: the transaction's start as a PageReader; every page an image of its own.
class StartView final : public PageReader {
 public:
  StartView(WriteTxn& txn, const DbHeader& start) : txn_(txn), start_(start) {}
  absl::StatusOr<PageRef> Get(PageNo page_no) override { return txn_.GetAtStart(page_no); }
  uint32_t page_count() const override { return start_.page_count; }
  uint32_t usable_size() const override { return UsableSize(start_.page_size); }
  uint32_t meta(int slot) const override { return start_.meta[slot]; }

 private:
  WriteTxn& txn_;
  const DbHeader start_;
};

}  // namespace

absl::StatusOr<PageRef> WriteTxn::GetAtStart(PageNo page_no) {
  JKV_RETURN_IF_ERROR(CheckUsable());
  if (page_no.value() < 2 || page_no.value() > start_header_.page_count) {
    return absl::InvalidArgumentError(absl::StrCat("page ", page_no.value(),
                                                   " out of range [2, ",
                                                   start_header_.page_count, "] at the start"));
  }
  // L8: the original while the page is dirty, else the strategy's start image.
  std::shared_ptr<const PageBuffer> image;
  if (auto it = dirty_.find(page_no.value()); it != dirty_.end() && it->second.original) {
    image = it->second.original;
  } else {
    JKV_ASSIGN_OR_RETURN(image, StartImage(page_no));
  }
  return PageRef(page_no, std::move(image), UsableSize(start_header_.page_size),
                 PageRef::Bytes::kFixed);
}

std::unique_ptr<PageReader> WriteTxn::AtStart() {
  return std::make_unique<StartView>(*this, start_header_);
}

// ---------------------------------------------------------------------------------------------
// Write transactions: spill, commit, rollback

absl::Status WriteTxn::SpillIfNeeded() {
  JKV_RETURN_IF_ERROR(CheckUsable());
  if (dirty_.size() <= core_->options_.cache_pages) return absl::OkStatus();
  // L10: the held pages sit out the spill, in memory with their originals, and go back into
  // dirty_ after it whatever it returned (a failed spill fails the transaction anyway).
  std::vector<std::pair<uint32_t, DirtyPage>> held;
  for (uint32_t p : held_) {
    if (auto node = dirty_.extract(p); !node.empty()) {
      held.emplace_back(p, std::move(node.mapped()));
    }
  }
  absl::Status s = SpillPages();
  for (auto& [p, page] : held) dirty_[p] = std::move(page);
  if (!s.ok()) {
    if (failed_.ok()) failed_ = s;
    return s;
  }
  base::MutexLock lock(&core_->mu_);
  core_->counters_.AddOwned(base::Counter::kSpills);
  return absl::OkStatus();
}

absl::Status WriteTxn::Commit() {
  JKV_ASSIGN_OR_RETURN(const bool go_on, StartCommit());
  if (!go_on) return absl::OkStatus();
  return FinishCommit(CommitPages());
}

absl::StatusOr<std::shared_ptr<CommitPromise>> WriteTxn::CommitAsync(
    std::function<void(const CommitRecord&)> on_durable) {
  JKV_ASSIGN_OR_RETURN(const bool go_on, StartCommit());
  if (!go_on) return CommitPromise::Settled(absl::OkStatus());
  std::shared_ptr<CommitPromise> promise;
  JKV_RETURN_IF_ERROR(FinishCommit(CommitPagesAsync(std::move(on_durable), &promise)));
  return promise;
}

absl::Status WriteTxn::CommitPagesAsync(std::function<void(const CommitRecord&)> on_durable,
                                        std::shared_ptr<CommitPromise>* promise) {
  JKV_RETURN_IF_ERROR(CommitPages());
  if (on_durable) on_durable(commit_record_);
  *promise = CommitPromise::Settled(absl::OkStatus(), commit_record_);
  return absl::OkStatus();
}

absl::StatusOr<bool> WriteTxn::StartCommit() {
  JKV_RETURN_IF_ERROR(finished_ ? CheckUsable() : absl::OkStatus());
  if (!failed_.ok()) {
    const absl::Status failure = CheckUsable();
    Rollback().IgnoreError();  // the failure that forced it is what the caller needs
    return failure;
  }
  if (dirty_.empty() && !HasWritten() && header_ == start_header_) {
    End(/*clear_cache=*/false);
    return false;
  }
  if (core_->options_.auto_vacuum && header_.freelist_count > 0 &&
      (header_.freelist_head != start_header_.freelist_head ||
       header_.freelist_count != start_header_.freelist_count)) {
    if (absl::Status s = ReleaseFreeTail(); !s.ok()) {
      Rollback().IgnoreError();  // nothing was written for it; the caller needs its error
      return s;
    }
  }
  commit_retryable_ = false;
  return true;
}

absl::Status WriteTxn::FinishCommit(absl::Status s) {
  if (s.ok()) return s;
  if (commit_retryable_ && absl::IsUnavailable(s)) return s;  // still open: see Commit
  // Undo in this process. When the database file was touched this restores the originals from
  // the journal; if that fails too, the journal is unsealed (I12), the pager enters its error
  // state and the next opener rolls the hot journal back. Either way the caller's error is the
  // commit's.
  Rollback().IgnoreError();
  if (IsSyncFailure(s)) {
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(s);  // I7
  }
  return s;
}

JournalMode WriteTxn::journal_mode() const { return core_->options_.journal_mode; }
const std::string& WriteTxn::path() const { return core_->path_; }

absl::Status WriteTxn::Rollback() {
  if (finished_) return absl::OkStatus();
  bool clear_cache = false;
  absl::Status s = UndoWrites(&clear_cache);
  {
    base::MutexLock lock(&core_->mu_);
    if (!s.ok()) core_->SetStickyError(s);
    if (IsSyncFailure(failed_)) core_->SetStickyError(failed_);  // a spill's sync failed: I7
    core_->counters_.AddOwned(base::Counter::kRollbacks);
  }
  End(clear_cache);
  return s;
}

void WriteTxn::End(bool clear_cache) {
  finished_ = true;
  dirty_.clear();
  EndWrite(clear_cache);
}

}  // namespace journalkv::pager
