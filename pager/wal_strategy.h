// WAL and WAL2 as a journaling strategy (journal_strategy.h): transactions over one
// connection of the WAL protocol (wal::WalConnection, wal/wal_connection.h, which owns the log,
// the wal-index and this connection's reader slot, and states the invariants W1..W14, V1..V6
// and M1..M5 in wal/reader_pins.h). This side adds what the pager's page cache and header
// need (page versions, the header of a snapshot) and the checkpoint policy that runs after
// commits (wal_policy.cc, checkpoint/policy.h, checkpoint/background.h).
//
// A commit, top to bottom: WalWriteTxn::CommitPages in wal_strategy.cc.
#ifndef JOURNALKV_PAGER_WAL_STRATEGY_H_
#define JOURNALKV_PAGER_WAL_STRATEGY_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "base/check.h"
#include "checkpoint/background.h"
#include "checkpoint/policy.h"
#include "pager/commit_pipeline.h"
#include "pager/hot_pages.h"
#include "pager/journal_strategy.h"
#include "pager/mapped_pages.h"
#include "pager/pager_core.h"
#include "wal/wal_connection.h"

namespace journalkv::pager {

class WalStrategy final : public JournalStrategy {
 public:
  // Joins the WAL protocol (the caller holds the database file SHARED for the connection's
  // life, and EXCLUSIVE too with exclusive locking) and sets up the checkpoint policy.
  static absl::StatusOr<std::unique_ptr<WalStrategy>> Open(PagerCore* core)
      ABSL_LOCKS_EXCLUDED(core->mu_);

  JournalFamily family() const override {
    return wal_->wal2() ? JournalFamily::kWal2 : JournalFamily::kWal;
  }
  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() override ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite() override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::StatusOr<wal::CheckpointResult> Checkpoint(wal::CheckpointMode mode) override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  void AddStats(base::CounterArray& counters, PagerStats& stats) override
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  void Close() override ABSL_LOCKS_EXCLUDED(core_->mu_);

 private:
  friend class WalReadTxn;
  friend class WalWriteTxn;

  WalStrategy(PagerCore* core, std::unique_ptr<wal::WalConnection> wal)
      : JournalStrategy(core), wal_(std::move(wal)) {}

  // wal_'s pin mutex is core_->mu_ (Open gives it): tells the thread-safety analysis that
  // holding the one is holding the other, and checks it in debug builds.
  void PinMutexHeld() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_)
      ABSL_ASSERT_EXCLUSIVE_LOCK(wal_->pin_mu()) {
    JKV_DCHECK(wal_->pin_mu() == &core_->mu_);
  }

  // --- Reads (wal_strategy.cc).
  // `hot` is the table HotPagesLocked handed the transaction.
  void EndRead(const wal::WalSnapshot& snapshot, std::thread::id thread, HotPages* hot)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The committed image of a page as `snapshot` sees it, through the page cache.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(const wal::WalSnapshot& snapshot,
                                                              PageNo page_no)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The same, the page's version already located.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPageAt(const wal::WalSnapshot& snapshot,
                                                                PageNo page_no,
                                                                wal::PageVersion version)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // The pages read at `snapshot`'s identity (hot_pages.h), counted as used by one more read
  // transaction until its EndRead: the table of the last read begun, or a new one when
  // `snapshot` is at another identity. A replaced table no read uses goes to *retired, for the
  // caller to let go of after the mutex.
  HotPages* HotPagesLocked(const wal::WalSnapshot& snapshot, std::unique_ptr<HotPages>* retired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // Reads (uncached) and checks the version `version` of a page.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadPage(const wal::WalSnapshot& snapshot,
                                                             PageNo page_no,
                                                             wal::PageVersion* version);
  // The header of `snapshot` (page 1 as the snapshot sees it).
  absl::StatusOr<DbHeader> HeaderLocked(const wal::WalSnapshot& snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // A snapshot is about to be read through the page cache (BeginRead, BeginWrite), or a
  // commit's published snapshot is about to set the header (CommitPages). The cache's keys
  // name a log generation by its 31 bits, so they repeat 2^31 generations apart, and so does a
  // hot-page identity (hot_pages.h, H1):
  //   G1. Every generation the cache holds pages of, and hot_'s, lies in [cache_oldest_,
  //       cache_newest_] in serial order (modulo 2^31), and those are fewer than the span
  //       (2^29) apart. A generation noted inside the range changes nothing; one that leaves
  //       the range narrower than the span widens it, before it (a commit's snapshot taken
  //       before a restart that a read of another thread noted first) or after it; any other
  //       clears the cache, stops handing out hot_ (H5) and starts the range at itself. So no
  //       key or identity names two generations unless the connection notes nothing while
  //       about 3 * 2^29 generations pass (README.md, "Limits").
  void NoteGenerationLocked(const wal::WalSnapshot& snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  //   G2. A failed log sync lets later commits reuse the frames of the commits it dropped
  //       (wal/log_durability.h W13), and this handle may hold images under those frames'
  //       versions: its own dropped commit's pages and spills, pages one of its writers read
  //       from another connection's commit that was dropped with them, and the header of such
  //       a state (header_key_). So a transaction that begins after the append epoch moved
  //       (it reads the epoch after its snapshot: a snapshot that holds a reused frame was
  //       published after the move) clears the cache and forgets the header first. Hot-page
  //       tables need nothing: they are made only for published snapshots (H1), and no
  //       dropped commit was ever published. (Before, a writer of the same handle as a
  //       dropped commit read "last" as the dropped commit wrote it and built on it:
  //       wal_group_fault_test, the failing syncs of wal_full_3_handles.)
  void NoteEpochLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  // H5 (hot_pages.h): hot_ is no longer handed out. Kept among replaced_hot_ with its count
  // while read transactions use it, else moved to *retired for the caller to let go of.
  void RetireHotLocked(std::unique_ptr<HotPages>* retired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);

  // --- The writer role (wal_strategy.cc).
  // Waits for this handle's writer role and the WRITE lock (mu_ released while waiting).
  absl::StatusOr<wal::WalSnapshot> AcquireWriterLocked(absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_);
  void ReleaseWriter() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // After the append and End: waits for the commit's flush (AwaitDurable, W12) and notes the
  // published state (G1, the header); on failure makes it the sticky error (I7, N3). On the
  // committing thread (Commit) or the flusher (CommitAsync, N2).
  absl::Status FinishCommit(const wal::WalConnection::CommitTicket& ticket,
                            const DbHeader& new_header) ABSL_LOCKS_EXCLUDED(core_->mu_);

  // --- Checkpoints and the policy (wal_policy.cc).
  void StartPolicy() ABSL_LOCKS_EXCLUDED(core_->mu_);
  // Asks the checkpoint policy what to do after a commit that appended `commit_frames`, and
  // does it (checkpoint/policy.h).
  void AfterCommit(uint32_t commit_frames) ABSL_LOCKS_EXCLUDED(core_->mu_);
  // Runs a checkpoint of `mode` (WAL: FULL, RESTART, TRUNCATE as the writer; WAL2: as the
  // writer only to switch logs, V4); a failed sync puts the handle in its error state (I7).
  absl::StatusOr<wal::CheckpointResult> RunCheckpoint(wal::CheckpointMode mode,
                                                             const std::atomic<bool>* stop,
                                                             bool defer = false)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // WAL2's FULL, RESTART and TRUNCATE: V4's phases, this handle's writer role taken and given
  // back here around the switches.
  absl::StatusOr<wal::CheckpointResult> RunWal2Checkpoint(wal::CheckpointMode mode)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // One step of the background checkpointer (checkpoint/background.h).
  absl::StatusOr<bool> BackgroundStep(const std::atomic<bool>& stop)
      ABSL_LOCKS_EXCLUDED(core_->mu_);
  // An error a policy's checkpoint met after its commit had succeeded, reported (once) by the
  // next call that begins a transaction or a checkpoint; ResourceExhausted (a full disk) or
  // Unavailable (busy)
  // only the first time until a checkpoint succeeds (a disk that stays full would otherwise
  // fail every other commit, which the log has room for), the rest counted (policy_errors, policy_last_error).
  void DeferError(const absl::Status& status) ABSL_LOCKS_EXCLUDED(core_->mu_);
  absl::Status TakeDeferredError() ABSL_LOCKS_EXCLUDED(core_->mu_);

  const std::unique_ptr<wal::WalConnection> wal_;
  // Pipelined commits' flusher (commit_pipeline.h, N1-N5); drained by Close. Declared after
  // wal_, so that it is destroyed (drained) before the connection.
  CommitPipeline pipeline_;
  // Pages read in place in the database file's memory map (mapped_pages.h O5..O7); null
  // without a map. Set at Open.
  std::unique_ptr<MappedPages> mapped_;
  std::shared_ptr<checkpoint::CheckpointPolicy> policy_;  // immutable after Open
  // Its thread starts when the policy first wakes it, and stops before the pager closes
  // anything.
  std::unique_ptr<checkpoint::BackgroundCheckpointer> background_;
  std::atomic<int64_t> last_checkpoint_ns_{0};  // when this handle's last checkpoint ended
  std::atomic<bool> has_deferred_{false};
  std::string policy_name_ ABSL_GUARDED_BY(core_->mu_);        // the policy's Name()
  std::string policy_last_error_ ABSL_GUARDED_BY(core_->mu_);  // empty: none failed

  // The published state core_->header_ belongs to (change, current generation, frame, log).
  std::optional<std::array<uint32_t, 4>> header_key_ ABSL_GUARDED_BY(core_->mu_);
  // The generations the cache may hold pages of (G1, NoteGenerationLocked).
  uint32_t cache_oldest_ ABSL_GUARDED_BY(core_->mu_) = 0;
  uint32_t cache_newest_ ABSL_GUARDED_BY(core_->mu_) = 0;
  uint32_t cache_epoch_ ABSL_GUARDED_BY(core_->mu_) = 0;  // the append epoch last seen (G2)
  // The pages met at the identity of the last read begun (HotPagesLocked), and how many read
  // transactions use it; the tables it replaced that reads still use, with their counts (H2,
  // H5). hot_readers_ is 0 while hot_ is null.
  // Plain counts under the mutex BeginRead and EndRead hold anyway: a shared_ptr's two atomic
  // adds were about 3% of a cached point read.
  std::unique_ptr<HotPages> hot_ ABSL_GUARDED_BY(core_->mu_);
  int hot_readers_ ABSL_GUARDED_BY(core_->mu_) = 0;
  absl::InlinedVector<std::pair<std::unique_ptr<HotPages>, int>, 2> replaced_hot_
      ABSL_GUARDED_BY(core_->mu_);
  std::array<uint32_t, 5> hot_identity_ ABSL_GUARDED_BY(core_->mu_) = {};
  absl::Status deferred_ ABSL_GUARDED_BY(core_->mu_);           // see DeferError
  // A ResourceExhausted deferred since the last checkpoint that succeeded (DeferError).
  bool exhausted_deferred_ ABSL_GUARDED_BY(core_->mu_) = false;
  // Threads with a read transaction of this handle open, and how many each: a blocking policy
  // never blocks them. A short list searched in order (a thread or a few read at once), not a
  // hash map, whose insert and erase were a tenth of a cached point read's begin and end.
  absl::InlinedVector<std::pair<std::thread::id, int>, 4> reading_threads_
      ABSL_GUARDED_BY(core_->mu_);
  // `thread`'s entry in reading_threads_, or end().
  auto FindReadingThreadLocked(std::thread::id thread)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) {
    return std::find_if(reading_threads_.begin(), reading_threads_.end(),
                        [&](const auto& entry) { return entry.first == thread; });
  }
  bool IsReadingThreadLocked(std::thread::id thread)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_->mu_) {
    return FindReadingThreadLocked(thread) != reading_threads_.end();
  }
};

// The WAL and WAL2 family's steps of Pager::Open (journal_strategy.h, JournalFamilyOps;
// wal_family.cc): adopting the log's page size when page 1 is torn, leaving the WAL for
// another mode when no other connection has it open, and switching a database into it.
const JournalFamilyOps& WalFamily();

// The WAL protocol's options of a connection with these (wal/wal_connection.h).
wal::WalOptions WalOptionsOf(const PagerOptions& options);

// The span of G1 (pager.h declares it for the tests that set it).
void SetCacheGenerationSpanForTesting(uint32_t span);

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_WAL_STRATEGY_H_
