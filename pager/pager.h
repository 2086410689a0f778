// The pager: page-level transactions over one database file, with a page cache, the freelist,
// the rollback journal and the database file locks.
//
// Users: the B+tree (through PageReader / PageWriter) and the engine (Open, transactions,
// stats). Thread-safety: a Pager is safe to use from many threads; each transaction object is
// used by one thread at a time. Any number of ReadTxn may be open at once, and at most one
// WriteTxn per database across all threads and processes (others wait up to the busy timeout,
// then get ResourceExhausted("busy: ...")).
//
// The pager's source files: pager.cc (transactions, cache, header, freelist, and the dispatch to
// how a transaction reaches the disk), pager_rollback.cc (the rollback journal's protocol,
// below) and pager_wal.cc with wal_strategy.{h,cc} (WAL mode, its own state table and W1..W7).
//
// States of a pager (rollback-journal modes; `readers_` counts open ReadTxn):
//
//      +--------+  BeginRead / BeginWrite   +--------+  BeginWrite     +----------+
//      |  IDLE  | ------------------------> | SHARED | --------------> | RESERVED |
//      | no lock| <------------------------ |        | <-------------- | writer   |
//      +--------+  last txn ends            +--------+  Commit/Rollback+----------+
//                                                ^                         | Commit, spill
//                                                |  commit done            v
//                                                |                   +-----------+
//                                                +------------------ | EXCLUSIVE |
//                                                                    +-----------+
//   transition                    | method
//   IDLE -> SHARED                | AcquireSharedLocked (BeginRead, BeginWrite)
//   SHARED -> RESERVED            | BeginWrite (AcquireReservedLocked; a waiter with no open
//                                 |   reader drops to IDLE between tries, see "Writers take
//                                 |   turns" in docs/design-notes.md)
//   RESERVED -> EXCLUSIVE         | AcquireExclusive (WriteTxn::Commit, WriteTxn::Spill)
//   any -> SHARED or IDLE         | EndWrite, EndRead
//   any -> ERROR (sticky)         | SetStickyError: a failure after the database file was
//                                 |   touched, or any failed sync (I7)
//
// Guarantees per state: SHARED: the database file does not change and the cache is valid.
// RESERVED: this pager's WriteTxn is the only writer; nothing but the journal has been written.
// EXCLUSIVE: no reader anywhere; the database file may hold the writer's pages.
//
// Invariants of the commit protocol (cited at each Sync call site):
//   I1. Journal records (and, for a new journal file, its directory entry) are durable before
//       the first database page of their transaction is overwritten.
//   I2. All database writes of a transaction are synced before its journal ends.
//   I3. A rollback restores the database durably before the journal is ended.
//   I4. The seal lists every page the transaction writes with its final trailer, so a journal
//       whose end was lost to a power loss is recognised as complete and not applied.
//   I5. Page 1 with a new change counter is written before any other page of a transaction,
//       at its first spill or else at commit, so another connection that sees an unchanged
//       change counter knows no transaction, committed, spilling or killed mid-spill, has
//       touched the file since it last looked (a spill writes start+1, the value the commit
//       writes too; a rollback restores page 1 with the rest).
//   I6. Recovery ends a journal only once the database file is durable: after a rollback (I3)
//       and also when the journal is complete, because a writer killed before its database
//       sync (I2) leaves its pages only in the OS cache.
//   I7. A failed sync is never retried, and nothing it covered is trusted: the transaction is
//       undone in-process by rewriting every page it touched from the journal (so the undo
//       depends only on writes made, and synced, after the failure), and the handle enters its
//       error state whether or not the undo succeeds; reopening recovers from the disk. The
//       failed transaction is then in the database or not (the sync may have reached the disk
//       before it failed, and in WAL mode its commit frame is in the log): a commit that
//       returned an error "may be present" after a crash, never half present. Checks that
//       can refuse a commit run before its first write (WAL: the frame limit and the -shm's
//       room, WalIndex::Reserve).
//   I8. Recovery makes a hot journal durable before it rewrites any database page, so a power
//       loss during a rollback leaves the journal to roll back again (recovery is idempotent).
//   I9. Creating the database is journaled like a transaction from the empty file, so a torn
//       page 1 of a new database is rolled back to the empty file, never left unopenable.
//   I10. A connection in MEMORY, OFF or WAL mode makes the end of any journal file durable at open,
//       so that no journal of an earlier journal-file-mode connection can come back after a
//       power loss and be rolled back over its commits.
#ifndef JOURNALKV_PAGER_PAGER_H_
#define JOURNALKV_PAGER_PAGER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/types.h"
#include "checkpoint/background.h"
#include "checkpoint/policy.h"
#include "pager/db_format.h"
#include "pager/db_lock.h"
#include "pager/journal.h"
#include "pager/page_access.h"
#include "pager/page_cache.h"
#include "pager/pager_options.h"
#include "wal/wal_connection.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

class Pager;

// What the checkpoint policy did, and where WAL writers spent their time (WAL mode).
struct PolicyStats {
  std::string name;                   // the policy's Name()
  uint64_t policy_checkpoints = 0;    // run on committing threads (kCheckpointNow)
  uint64_t policy_errors = 0;         // of those, failed (the commit stands); DeferError
  std::string policy_last_error;      // empty: none
  uint64_t background_checkpoints = 0;  // steps of the background checkpointer
  uint64_t background_errors = 0;
  std::string background_last_error;  // empty: none
  absl::Duration background_time;     // spent in background steps
  uint64_t blocked_commits = 0;       // commits a kBlockUnder decision blocked
  uint64_t blocked_timeouts = 0;      // of those, released by the busy timeout, not the log
  absl::Duration blocked_writer_time;  // committing threads blocked by the policy
  uint32_t max_log_frames = 0;        // the largest log this connection's commits left
  uint64_t write_txns = 0;            // write transactions ended (committed or rolled back)
  absl::Duration write_lock_wait;     // of those, waiting for the writer role and WRITE lock
  absl::Duration write_work;          // the rest, from the lock to the end (policy blocking too)
};

struct PagerStats {
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t commits = 0;
  uint64_t rollbacks = 0;
  uint64_t spills = 0;
  uint64_t recoveries = 0;  // hot journals rolled back by this pager
  uint64_t journal_end_failures = 0;  // commits whose journal could not be ended (harmless)
  uint32_t page_count = 0;
  uint32_t freelist_count = 0;
  uint64_t cached_pages = 0;
  uint32_t page_size = 0;
  bool wal_mode = false;
  wal::WalStats wal;  // WAL mode only
  PolicyStats policy;  // WAL mode only
};

// A read transaction: one snapshot of the database for its whole life.
class ReadTxn final : public PageReader {
 public:
  ~ReadTxn() override;
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

  absl::StatusOr<PageRef> Get(PageNo page_no) override;
  uint32_t page_count() const override { return header_.page_count; }
  uint32_t usable_size() const override { return UsableSize(header_.page_size); }
  uint32_t meta(int slot) const override { return header_.meta[slot]; }

  // Every page on the freelist (trunks and leaves). DataLoss when the freelist is damaged.
  absl::StatusOr<std::vector<PageNo>> FreelistPages();
  // Reads every page of the database from the file and checks its checksum and the freelist;
  // returns one line per problem found (empty: all good). Stops after kMaxPageProblems
  // unreadable pages, with a last line saying so: a damaged header or commit frame can claim
  // billions of pages that are not there, and listing each would take hours.
  static constexpr size_t kMaxPageProblems = 100;
  absl::StatusOr<std::vector<std::string>> CheckPages();
  const DbHeader& header() const { return header_; }

 private:
  friend class Pager;
  ReadTxn(Pager* pager, const DbHeader& header, const wal::WalSnapshot& snapshot)
      : pager_(pager), header_(header), snapshot_(snapshot) {}
  Pager* const pager_;
  const std::thread::id thread_ = std::this_thread::get_id();  // WAL: the thread that began it
  const DbHeader header_;
  const wal::WalSnapshot snapshot_;  // WAL mode: the snapshot this transaction reads
};

// The write transaction. Destroying it without Commit rolls back.
class WriteTxn final : public PageWriter {
 public:
  ~WriteTxn() override;
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;

  absl::StatusOr<PageRef> Get(PageNo page_no) override;
  uint32_t page_count() const override { return header_.page_count; }
  uint32_t usable_size() const override { return UsableSize(header_.page_size); }
  uint32_t meta(int slot) const override { return header_.meta[slot]; }

  absl::StatusOr<absl::Span<uint8_t>> GetMutable(PageNo page_no) override;
  absl::StatusOr<MutablePage> Allocate() override;
  absl::Status Free(PageNo page_no) override;
  void set_meta(int slot, uint32_t value) override { header_.meta[slot] = value; }

  // Makes the transaction durable (as the sync level promises) and visible. On error the
  // transaction has been rolled back (or, when the database file was already touched, the pager
  // is in its sticky error state). FailedPrecondition after Commit or Rollback.
  absl::Status Commit();
  // Discards every change. Idempotent.
  absl::Status Rollback();

  // When the transaction holds more dirty pages than the cache capacity, writes them to the
  // database file (journaling their originals first) and drops them from memory, so that a
  // transaction larger than the cache still works. This takes the EXCLUSIVE lock until the
  // transaction ends. Every span returned by GetMutable or Allocate before this call is invalid
  // after it: call it only between operations (the engine does, after each Put and Delete).
  absl::Status SpillIfNeeded();

  absl::StatusOr<std::vector<PageNo>> FreelistPages();
  const DbHeader& header() const { return header_; }
  size_t dirty_pages() const { return dirty_.size(); }

 private:
  friend class Pager;
  struct DirtyPage {
    std::shared_ptr<PageBuffer> buffer;
    std::shared_ptr<const PageBuffer> original;  // null: nothing to journal for this page
  };

  WriteTxn(Pager* pager, const DbHeader& header, const wal::WalSnapshot& snapshot);
  absl::Status CheckUsable() const;
  // The committed image of a page this transaction has not dirtied (WAL: a frame it spilled).
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no);
  absl::Status SpillToLog();
  absl::Status CommitToLog();
  absl::Status CheckPageNo(PageNo page_no) const;
  absl::StatusOr<DirtyPage*> MakeDirty(PageNo page_no);
  DirtyPage* AddBlankPage(PageNo page_no);
  absl::Status Spill();
  absl::Status WritePages(std::vector<PageNo>& pages);
  absl::Status CommitToFile();
  void End(bool committed);

  Pager* const pager_;
  const DbHeader start_header_;
  DbHeader header_;
  bool finished_ = false;
  bool spilled_ = false;    // some pages of this transaction are in the database file
  bool exclusive_ = false;  // holds the EXCLUSIVE lock
  bool page1_marked_ = false;  // a spill wrote page 1 with the new change counter (I5)
  // What this transaction did to the database file, for the debug checks of I2 and I5.
  enum class DbWrites { kNone, kUnsynced, kSynced };
  DbWrites db_writes_ = DbWrites::kNone;
  absl::Status failed_;     // a failure that forces rollback
  uint64_t journal_end_failures_ = 0;
  absl::flat_hash_map<uint32_t, DirtyPage> dirty_;
  absl::flat_hash_set<uint32_t> journaled_;         // original already in the journal
  absl::flat_hash_set<uint32_t> freed_;             // freed by this transaction
  absl::flat_hash_map<uint32_t, uint64_t> spilled_trailers_;  // page -> trailer as spilled
  // WAL mode.
  const wal::WalSnapshot snapshot_;
  absl::Time locked_at_;        // when the writer role and WRITE lock were held
  absl::Duration lock_wait_;    // how long that took
  absl::flat_hash_map<uint32_t, uint32_t> log_frames_;  // spilled page -> its frame
};

// How many generations past the one it was last cleared at a WAL connection's page cache is
// cleared (Pager::NoteGenerationLocked): 2^29, or what a test sets (0: 2^29 again).
void SetCacheGenerationSpanForTesting(uint32_t span);

class Pager {
 public:
  // Opens (creating when missing, unless read-only) the database at `path`. Rolls back a hot
  // journal. InvalidArgument for a directory or a file that is not a journalkv database,
  // FailedPrecondition for a newer format, for a file that is not a regular file (a named
  // pipe, a device) and for one with a second name (a hard link), DataLoss for a truncated or
  // damaged header. A file that is refused is left untouched. A symbolic link is followed
  // (vfs::FileSystem::ResolveLinks), and the side files and messages name its target.
  // The journal mode of an opener that names none: wal for a database that does not exist yet
  // (or is empty), and for one whose header or log says it was last used in a WAL mode;
  // delete for one of the rollback family. A file that is not a journalkv database gets wal,
  // and Open then says what is wrong with it. Reads the header without locks: a family switch
  // racing it only means the opener switches the family back, under the usual locks.
  static absl::StatusOr<JournalMode> DefaultJournalMode(vfs::FileSystem* fs,
                                                        const std::string& path);
  static absl::StatusOr<std::unique_ptr<Pager>> Open(vfs::FileSystem* fs, const std::string& path,
                                                     const PagerOptions& options);
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginRead() ABSL_LOCKS_EXCLUDED(mu_);
  // FailedPrecondition on a read-only pager.
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWrite() ABSL_LOCKS_EXCLUDED(mu_);

  // WAL mode: runs a checkpoint (checkpoint/checkpointer.h). Rollback modes have no log:
  // OK with nothing to report.
  absl::StatusOr<checkpoint::CheckpointResult> Checkpoint(checkpoint::CheckpointMode mode)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool wal_mode() const { return wal_ != nullptr; }

  uint32_t page_size() const { return page_size_; }
  const PagerOptions& options() const { return options_; }
  const std::string& path() const { return path_; }
  const std::string& journal_path() const { return journal_path_; }
  vfs::FileSystem* fs() const { return fs_; }
  PagerStats Stats() ABSL_LOCKS_EXCLUDED(mu_);
  // The first error that put the pager in its error state (OK when none).
  absl::Status sticky_error() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class ReadTxn;
  friend class WriteTxn;

  Pager(vfs::FileSystem* fs, std::string path, const PagerOptions& options,
        std::unique_ptr<vfs::File> db_file);
  // Methods annotated ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) hold it on entry and on return, but
  // AcquireReservedLocked, WaitFor and Retry with unlock_while_sleeping (and their callers)
  // release it while they sleep: guarded state read before such a call may change across it.
  absl::Status OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WAL: a page 1 that does not decode may be a checkpoint's torn copy of a page the log still
  // holds (C1: the log was durable before the checkpoint wrote it): take the page size from
  // the log's header and read page 1 from the log. `failure` is returned when there is no
  // valid log.
  absl::Status AdoptLogPageSizeLocked(const absl::Status& failure)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a WAL database's log into the database file so a rollback mode can open it.
  absl::Status LeaveWalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the journal family in page 1 through a rollback-journaled write transaction.
  absl::Status SetFamily(JournalFamily family) ABSL_LOCKS_EXCLUDED(mu_);
  // WAL: the header of `snapshot` (page 1 as the snapshot sees it).
  absl::StatusOr<DbHeader> WalHeaderLocked(const wal::WalSnapshot& snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WAL: a snapshot is about to be read through the page cache. The cache's keys name a log
  // generation by its 31 bits, so they repeat 2^31 generations apart: the cache is cleared
  // whenever this connection sees a generation 2^29 or more past the one it was last cleared
  // at (or before it), long before any key can name two page versions.
  void NoteGenerationLocked(const wal::WalSnapshot& snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::unique_ptr<ReadTxn>> BeginWalRead() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::unique_ptr<WriteTxn>> BeginWalWrite() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for this handle's writer role and the WRITE lock (mu_ released while waiting).
  absl::StatusOr<wal::WalSnapshot> AcquireWalWriterLocked(absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseWalWriter() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the checkpoint policy what to do after a commit that appended `commit_frames`, and
  // does it (checkpoint/policy.h).
  void AfterWalCommit(uint32_t commit_frames) ABSL_LOCKS_EXCLUDED(mu_);
  // Sets up the policy and the (not yet started) background checkpointer. Called by Open.
  void StartPolicy();
  // Runs a checkpoint of `mode` (WAL: FULL, RESTART, TRUNCATE as the writer; WAL2: as the
  // writer only to switch logs, V4); a failed sync puts the handle in its error state (I7).
  absl::StatusOr<checkpoint::CheckpointResult> RunCheckpoint(checkpoint::CheckpointMode mode,
                                                             const std::atomic<bool>* stop,
                                                             bool defer = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One step of the background checkpointer (checkpoint/background.h).
  absl::StatusOr<bool> BackgroundStep(const std::atomic<bool>& stop) ABSL_LOCKS_EXCLUDED(mu_);
  // An error a policy's checkpoint met after its commit had succeeded, reported (once) by the
  // next call that begins a transaction or a checkpoint; ResourceExhausted (a full disk, busy)
  // only the first time until a checkpoint succeeds (a disk that stays full would otherwise
  // fail every other commit, which the log has room for), the rest counted in PolicyStats.
  void DeferError(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status TakeDeferredError() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status EndForeignJournalDurably() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InitializeNewLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<DbHeader> ReadHeaderFromFile();
  bool opening_ = false;  // Open is running: accept either journal family in page 1
  // Retries `attempt` (one try of a file lock: &DbLock::TryShared, ...) with growing sleeps
  // until it succeeds or `deadline` passes (ResourceExhausted "busy: <what>"). With
  // `unlock_while_sleeping`, mu_ is released during each sleep.
  absl::Status Retry(absl::Time deadline, bool unlock_while_sleeping, absl::string_view what,
                     absl::StatusOr<bool> (DbLock::*attempt)()) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sleeps with mu_ released.
  void SleepUnlocked(absl::Duration duration) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits on cv_ until `done()` or the deadline (ResourceExhausted "busy: <what>"). `done` is
  // called with mu_ held (a lambda annotated ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)).
  template <typename F>
  absl::Status WaitFor(absl::Time deadline, absl::string_view what, F done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AcquireSharedLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AcquireReservedLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ValidateCacheLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RecoverLocked(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RollBackHotJournalLocked(absl::Time deadline, std::optional<uint32_t> db_page_size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Used by the transactions.
  // The committed image of a page as `snapshot` sees it (WAL; ignored in rollback modes).
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(const wal::WalSnapshot& snapshot,
                                                              PageNo page_no)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadPage(PageNo page_no);
  // WAL: reads (uncached) and checks the version `version` of a page.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadWalPage(const wal::WalSnapshot& snapshot,
                                                                PageNo page_no,
                                                                wal::PageVersion* version);
  // Checks a page image read from the file (or log) and turns short reads into DataLoss.
  absl::Status CheckLoaded(PageNo page_no, const absl::Status& read, const PageBuffer& buffer);
  void EndRead(const wal::WalSnapshot& snapshot, std::thread::id thread) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AcquireExclusive() ABSL_LOCKS_EXCLUDED(mu_);
  void Publish(WriteTxn& txn, const DbHeader& header) ABSL_LOCKS_EXCLUDED(mu_);
  void CacheSpilled(PageNo page_no, std::shared_ptr<const PageBuffer> buffer)
      ABSL_LOCKS_EXCLUDED(mu_);
  void EndWrite(bool clear_cache) ABSL_LOCKS_EXCLUDED(mu_);
  void SetStickyError(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lock held on the database file, for debug checks of the state table.
  LockLevel lock_level() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Time Deadline() const { return absl::Now() + options_.busy_timeout; }

  // Immutable after Open().
  vfs::FileSystem* const fs_;
  const std::string path_;
  const std::string journal_path_;
  const PagerOptions options_;
  const std::unique_ptr<vfs::File> db_file_;
  uint32_t page_size_ = 0;
  std::unique_ptr<Journal> journal_;  // used by the writer only (rollback modes)
  std::unique_ptr<wal::WalConnection> wal_;  // WAL mode (set during Open, then immutable)
  std::shared_ptr<checkpoint::CheckpointPolicy> policy_;  // WAL mode (immutable after Open)
  // WAL mode: its thread starts when the policy first wakes it, and stops before the pager
  // closes anything.
  std::unique_ptr<checkpoint::BackgroundCheckpointer> background_;
  std::atomic<int64_t> last_checkpoint_ns_{0};  // when this handle's last checkpoint ended
  std::atomic<bool> has_deferred_{false};

  // State below is guarded by mu_.
  base::Mutex mu_;
  base::CondVar cv_;  // signalled when readers_, writer_active_ or exclusive change
  DbLock lock_ ABSL_GUARDED_BY(mu_);
  DbHeader header_ ABSL_GUARDED_BY(mu_);  // as last committed
  PageCache cache_;  // thread-safe on its own
  std::atomic<uint64_t> cache_hits_{0};
  std::atomic<uint64_t> cache_misses_{0};
  int readers_ ABSL_GUARDED_BY(mu_) = 0;
  bool writer_active_ ABSL_GUARDED_BY(mu_) = false;
  bool writer_exclusive_ ABSL_GUARDED_BY(mu_) = false;  // new readers wait
  absl::Status sticky_ ABSL_GUARDED_BY(mu_);
  // WAL: the published state header_ belongs to (change, current generation, frame, log).
  std::optional<std::array<uint32_t, 4>> wal_header_key_ ABSL_GUARDED_BY(mu_);
  uint32_t cache_generation_ ABSL_GUARDED_BY(mu_) = 0;  // see NoteGenerationLocked
  PagerStats stats_ ABSL_GUARDED_BY(mu_);
  absl::Status deferred_ ABSL_GUARDED_BY(mu_);  // see DeferError
  // A ResourceExhausted deferred since the last checkpoint that succeeded (DeferError).
  bool exhausted_deferred_ ABSL_GUARDED_BY(mu_) = false;
  // Threads with a read transaction of this handle open: a blocking policy never blocks them.
  absl::flat_hash_map<std::thread::id, int> reading_threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGER_H_
