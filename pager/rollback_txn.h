// The rollback journal's write transaction (rollback_strategy.cc), declared here for the
// commit across databases (rollback_across.cc, super_journal.h), which runs its commit's
// steps for every participant in turn. Internal to the pager.
#ifndef JOURNALKV_PAGER_ROLLBACK_TXN_H_
#define JOURNALKV_PAGER_ROLLBACK_TXN_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "pager/journal.h"
#include "pager/pager_internal.h"
#include "pager/rollback_strategy.h"
#include "pager/txn.h"

namespace journalkv::pager {

class RollbackWriteTxn final : public WriteTxn {
 public:
  RollbackWriteTxn(RollbackStrategy* strategy, PagerCore* core, const DbHeader& header)
      : WriteTxn(core, header), strategy_(strategy) {
    strategy_->journal_.Begin(header.page_count, header.change_counter);
  }
  ~RollbackWriteTxn() override { Rollback().IgnoreError(); }  // a failure is sticky

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) override {
    return strategy_->CleanPage(page_no);
  }
  bool KeepsOriginal(PageNo page_no) const override { return !journaled_.contains(page_no.value()); }
  // L8: a page spilled over its original is read back from the journal; any other page the
  // file still holds as the start had it (a spill writes only journaled pages, I1).
  absl::StatusOr<std::shared_ptr<const PageBuffer>> StartImage(PageNo page_no) override;
  bool HasWritten() const override { return spilled_; }
  JournalFamily family() const override { return JournalFamily::kRollback; }
  absl::Status SpillPages() override;
  // L11: one read of the run from its first page the cache lacks to its last, into the cache.
  void ReadAheadOriginals(PageNo first, uint32_t count) override;
  absl::Status CommitPages() override;
  absl::Status UndoWrites(bool* clear_cache) override;
  void EndWrite(bool clear_cache) override { strategy_->EndWrite(clear_cache); }
  void DropPagesPast(uint32_t page_count) override {
    // The seal lists only pages of the commit: a spilled page past its end, cut off by the
    // commit (I11), would make a complete journal look hot to recovery.
    absl::erase_if(spilled_trailers_, [&](const auto& e) { return e.first > page_count; });
  }

  absl::Status WritePages(std::vector<PageNo>& pages);
  // The commit's steps, which CommitPages runs in order and a commit across databases
  // (rollback_across.cc) runs for every participant before the next step.
  friend class RollbackAcross;
  // Page 1 with the new change counter, and EXCLUSIVE. Busy: retryable, nothing written.
  absl::Status LockForCommit();
  // A later participant was busy (J1's step 1): EXCLUSIVE given back, RESERVED kept, so this
  // database's readers go on while the transaction waits for a retry; kept when a spill wrote
  // the database file (its readers must not read it: the state table in pager.h).
  absl::Status ReleaseExclusiveForRetry();
  // The originals and the seal written and synced (I1); nothing in the database file yet.
  absl::Status FlushJournal();
  // The pages written and synced (I2), the file cut (I11).
  absl::Status WriteDatabase();
  // The journal ended by mode, the pages and header published, the transaction ended.
  void Publish();
  Journal& journal() { return strategy_->journal_; }
  SyncLevel sync() const { return core_->options_.sync; }
  // Page 1 with the header `header` as a dirty page, its original kept unless journaled.
  absl::Status DirtyPage1(const DbHeader& header);

  RollbackStrategy* const strategy_;
  bool spilled_ = false;    // some pages of this transaction are in the database file
  bool exclusive_ = false;  // holds the EXCLUSIVE lock
  bool page1_marked_ = false;  // a spill wrote page 1 with the new change counter (I5)
  // What this transaction did to the database file, for the debug checks of I2 and I5.
  enum class DbWrites { kNone, kUnsynced, kSynced };
  DbWrites db_writes_ = DbWrites::kNone;
  absl::flat_hash_set<uint32_t> journaled_;  // original already in the journal
  std::vector<uint8_t> read_ahead_;          // ReadAheadOriginals' run (L11)
  absl::flat_hash_map<uint32_t, uint64_t> spilled_trailers_;  // page -> trailer as spilled
  // Between the commit's steps: the header it commits, its seal, the pages it writes.
  DbHeader new_header_;
  Seal seal_;
  std::vector<PageNo> commit_pages_;
  std::vector<uint8_t> run_buffer_;  // WritePages: a run of consecutive pages, for one write
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ROLLBACK_TXN_H_
