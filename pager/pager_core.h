// The pager's core: what a journaling strategy (journal_strategy.h) may use of the pager, and
// nothing else of it. The database file and its lock, the mutex and condition variable that
// guard the connection's shared state, the page cache, the header as last committed, the
// count of open readers, the writer role, the sticky error and the counters; and the database
// file's own services that every mode needs: retrying a lock until the busy timeout, waiting
// on the condition variable, reading and checking a page, and at open the creation of a new
// database (I9) and the rollback of a hot journal (I6, I8), which a WAL opener of a
// rollback-family database needs as much as a rollback-mode one.
//
// Pager derives from it; the strategies get a pointer to it. Its fields are public to them by
// design (a struct of the connection's state with the rules written at each field), guarded by
// mu_ as annotated.
#ifndef JOURNALKV_PAGER_PAGER_CORE_H_
#define JOURNALKV_PAGER_PAGER_CORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "base/mutex.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/db_lock.h"
#include "pager/page_access.h"
#include "pager/page_cache.h"
#include "pager/pager_options.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

// A snapshot of the connection's counters (base/counters.h: one row each, whatever the mode;
// the rows a mode does not count stay zero) and the few facts that are strings.
struct PagerStats : base::CounterValues {
  std::string checkpoint_policy;      // WAL: the policy's Name()
  std::string policy_last_error;      // WAL: the last failed policy checkpoint (empty: none)
  std::string background_last_error;  // WAL: the last failed background step (empty: none)
  // ATOMIC: the mechanism of the commits' batches (vfs::AtomicWriteKindName: "emulated",
  // "xfs-exchange-range", "f2fs-atomic-write"); empty in the other modes.
  std::string atomic_write_kind;
  // Why the connection runs in another mode than the atomic one asked for (PagerOptions::
  // atomic_fallback_reason); empty when it does not.
  std::string atomic_fallback;
};

class PagerCore {
 public:
  PagerCore(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
            std::unique_ptr<vfs::File> db_file);
  PagerCore(const PagerCore&) = delete;
  PagerCore& operator=(const PagerCore&) = delete;

  absl::Time Deadline() const { return absl::Now() + options_.busy_timeout; }
  absl::Duration busy_timeout() const { return options_.busy_timeout; }
  // The first error that put the pager in its error state (OK when none).
  absl::Status sticky_error() ABSL_LOCKS_EXCLUDED(mu_);
  // Enters the error state (I7); the first error is the one kept.
  void SetStickyError(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lock held on the database file, for debug checks of the state tables.
  LockLevel lock_level() ABSL_LOCKS_EXCLUDED(mu_);

  // Methods annotated ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) hold it on entry and on return, but
  // SleepUnlocked and Retry with unlock_while_sleeping (and their callers) release it
  // while they sleep: guarded state read before such a call may change across it.
  //
  // Retries `attempt` (one try of a file lock: &DbLock::TryShared, ...) with growing sleeps
  // until it succeeds or `deadline` passes (Unavailable "busy: <what>"). With
  // `unlock_while_sleeping`, mu_ is released during each sleep.
  absl::Status Retry(absl::Time deadline, bool unlock_while_sleeping, absl::string_view what,
                     absl::StatusOr<bool> (DbLock::*attempt)()) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SleepUnlocked(absl::Duration duration) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Reads (uncached) and checks page `page_no` of the database file.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadPage(PageNo page_no);
  // Checks a page image read from the file (or log) and turns short reads into DataLoss.
  absl::Status CheckLoaded(PageNo page_no, const absl::Status& read, const PageBuffer& buffer);
  absl::StatusOr<DbHeader> ReadHeaderFromFile();

  // The database file at open and whenever a rollback-mode connection finds it changed.
  // REQUIRES: SHARED held. Rolls back a hot journal if there is one, then (re)reads the
  // header and empties the cache.
  absl::Status RecoverLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RollBackHotJournalLocked(absl::Time deadline, std::optional<uint32_t> db_page_size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates the database in an empty file (I9). REQUIRES: SHARED held.
  absl::Status InitializeNewLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Immutable after Open.
  vfs::FileSystem* const fs_;
  const std::string path_;
  const std::string journal_path_;
  const PagerOptions options_;
  const std::unique_ptr<vfs::File> db_file_;
  uint32_t page_size_ = 0;  // set during Open
  bool opening_ = false;    // Open is running: accept either journal family in page 1

  base::Mutex mu_;
  base::CondVar cv_;  // signalled when readers_, writer_active_ or a strategy's wait changes
  DbLock lock_ ABSL_GUARDED_BY(mu_);
  DbHeader header_ ABSL_GUARDED_BY(mu_);  // as last committed (WAL: as last read or published)
  PageCache cache_;  // thread-safe on its own
  int readers_ ABSL_GUARDED_BY(mu_) = 0;  // open read transactions of this pager
  // The writer role: this pager's one write transaction is open (or being begun). The one
  // flag for it in every mode; the WAL's WRITE lock and the rollback journal's RESERVED are
  // taken by whoever set it.
  bool writer_active_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status sticky_ ABSL_GUARDED_BY(mu_);
  // This connection's tickers (base/counters.h), counted by the pager and its strategy. Rows
  // written only under mu_ use AddOwned; cache hits and misses, counted without it, use Add.
  base::Counters counters_;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGER_CORE_H_
