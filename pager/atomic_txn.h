// The atomic family's write transaction (atomic_strategy.h, A1..A6), declared here so that a
// commit across databases (atomic_across.h, Y1..Y7) can run its steps one participant at a
// time: StageBatch, AcquireExclusive, PrepareBatch, CommitPrepared, Publish. Its own commit
// (CommitPages) is the same steps without the prepare. Internal to pager/.
//
// Thread-safety: as every WriteTxn, used by one thread at a time.
#ifndef JOURNALKV_PAGER_ATOMIC_TXN_H_
#define JOURNALKV_PAGER_ATOMIC_TXN_H_

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "pager/atomic_strategy.h"
#include "pager/pager_core.h"
#include "pager/txn.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

class AtomicWriteTxn final : public WriteTxn {
 public:
  AtomicWriteTxn(AtomicStrategy* strategy, PagerCore* core, const DbHeader& header)
      : WriteTxn(core, header), strategy_(strategy) {}
  ~AtomicWriteTxn() override { Rollback().IgnoreError(); }  // a failure is sticky

  // --- A commit's steps (CommitPages runs them for one database; atomic_across.cc for many).
  // The change counter in page 1 before and after this transaction's commit (A2).
  uint64_t base_counter() const { return header_.change_counter; }
  uint64_t new_counter() const { return header_.change_counter + 1; }
  // Page 1 with the new header and every dirty page into the batch (A1, A2). Repeatable: a
  // commit retried after busy stages again.
  absl::Status StageBatch();
  // RESERVED -> EXCLUSIVE (busy: Unavailable, retryable, RESERVED kept); and back.
  absl::Status AcquireExclusive();
  absl::Status ReleaseExclusive() { return strategy_->ReleaseExclusive(); }
  // The staged batch prepared with `note` (vfs::AtomicBatch::Prepare; Y1).
  absl::Status PrepareBatch(absl::string_view note);
  // Commits the staged batch (`durable`: BatchSync::kDurable; `site`: the sync's reason). A
  // failure is A4's: the pager enters its error state; the batch, if prepared, stays for the
  // recovery (vfs.h).
  absl::Status CommitBatch(bool durable, const char* site);
  // After a commit whose batch is committed: the cache, the header and the counters take the
  // new state, the file is cut when the transaction shrank it (A5), and the transaction ends.
  void Publish(bool durable);
  // Whether the database file's batches are the emulated ones (MemFileSystem and the
  // fault-injecting file system: no flush to wait for, and a crash sweep that replays).
  bool emulated() const {
    return core_->db_file_->atomic_write_kind() == vfs::AtomicWriteKind::kEmulated;
  }
  // A commit across databases failed after its commit point for this participant before its
  // batch was committed: the batch is left prepared for the recovery (Y4) and the pager enters
  // its error state with `error`.
  void LeavePrepared(const absl::Status& error);

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) override;
  bool KeepsOriginal(PageNo) const override { return false; }  // a rollback drops the batch
  // L8: the file is untouched until the batch commits (A1), and the cache never holds a
  // spilled page (A3).
  absl::StatusOr<std::shared_ptr<const PageBuffer>> StartImage(PageNo page_no) override;
  bool HasWritten() const override { return !spilled_.empty(); }
  JournalFamily family() const override { return JournalFamily::kAtomic; }
  absl::Status SpillPages() override;
  absl::Status CommitPages() override;
  absl::Status UndoWrites(bool* clear_cache) override;
  void EndWrite(bool clear_cache) override { strategy_->EndWrite(clear_cache); }

  // The transaction's batch, begun at its first spill or at its commit.
  absl::Status EnsureBatch();
  // Seals every dirty page and writes it into the batch (page order).
  absl::Status WriteDirtyPages();

  AtomicStrategy* const strategy_;
  std::unique_ptr<vfs::AtomicBatch> batch_;
  absl::flat_hash_set<uint32_t> spilled_;  // pages whose image is in the batch, not in dirty_
  DbHeader new_header_;                     // StageBatch's
  bool batch_failed_ = false;               // the batch's commit failed (A4)
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_ATOMIC_TXN_H_
