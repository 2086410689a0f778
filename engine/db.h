// journalkv's public API: an ordered key-value store in one file.
//
//   auto db = journalkv::Db::Open("x.db", {});          // absl::StatusOr<std::unique_ptr<Db>>
//   JKV_RETURN_IF_ERROR((*db)->Put("key", "value"));     // autocommit
//   auto txn = (*db)->BeginWrite();                      // atomic multi-key transaction
//   ...
//
// Keys and values are byte strings (any bytes, the empty key included); keys are ordered by
// memcmp. Errors are absl::Status: InvalidArgument for bad input (an oversized key names the
// limit), Unavailable("busy: ...") after the busy timeout (worth retrying as it is),
// ResourceExhausted for a full disk (not worth retrying until space is freed), DataLoss for damaged data,
// FailedPrecondition for a call in the wrong state (a write on a read-only database, a call on
// an ended transaction, Close with transactions open). A missing key is std::nullopt.
//
// Thread-safety: a Db may be used from any number of threads at once, and several processes
// may open the same file. Transactions and iterators are used by one thread at a time, and
// must be destroyed before the Db. Read transactions see one snapshot for their whole life; one
// write transaction runs at a time across all threads and processes.
#ifndef JOURNALKV_ENGINE_DB_H_
#define JOURNALKV_ENGINE_DB_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include <utility>
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/counters.h"
#include "wal/checkpoint_types.h"
#include "engine/iterator.h"
#include "engine/options.h"
#include "engine/trace.h"
#include "engine/write_batch.h"
#include "vfs/vfs.h"

namespace journalkv {

namespace btree {
class AppendHint;
class TreeBuilder;
}  // namespace btree

namespace pager {
class CommitPromise;
class Pager;
class ReadTxn;
class WriteTxn;
struct CommitRecord;
}  // namespace pager

class Db;
class WriteAcross;

// What Db::Stats reports: one field per row of the counter table (base/counters.h, which
// describes each: stats.commits, stats.log_frames, stats.flush_wait_ms, ...; a row the mode does
// not count is zero), the I/O of each kind of file, and the few facts that are strings.
// Value(name) reads a row or an I/O count by its name; base::ForEachCounter iterates the rows,
// ForEachIo the I/O counts.
struct DbStats : base::CounterValues {
  vfs::IoCounts database_io;
  vfs::IoCounts journal_io;
  vfs::IoCounts wal_io;
  vfs::IoCounts shm_io;
  uint64_t dir_syncs = 0;

  // Calls f(name, value) for each I/O count, named "<kind>_<count>" (database, journal, wal,
  // shm; reads, bytes_read, writes, bytes_written, syncs, truncates), then "dir_syncs": the
  // names `jkv stats` prints and jkv_stat_get takes.
  template <typename F>
  void ForEachIo(F&& f) const {
    for (const auto& [kind, io] : {std::pair{"database", &database_io},
                                   std::pair{"journal", &journal_io}, std::pair{"wal", &wal_io},
                                   std::pair{"shm", &shm_io}}) {
      for (const auto& [count, value] :
           {std::pair{"reads", io->reads}, std::pair{"bytes_read", io->bytes_read},
            std::pair{"writes", io->writes}, std::pair{"bytes_written", io->bytes_written},
            std::pair{"syncs", io->syncs}, std::pair{"truncates", io->truncates}}) {
        f(std::string(kind) + "_" + count, value);
      }
    }
    f(std::string("dir_syncs"), dir_syncs);
  }
  using base::CounterValues::Value;  // a row by id
  // A row of the counter table or an I/O count by its name; nullopt for an unknown name.
  std::optional<double> Value(absl::string_view name) const;
  // Every name Value takes, the table's rows first, then the I/O counts (ForEachIo's order).
  static const std::vector<std::string>& Names();
  // WAL: the checkpoint policy's name ("threshold:1000", "async:0/100", ...; README,
  // "Choosing a checkpoint policy"), and the last failure of a checkpoint the policy ran on a
  // committing thread and of a background step (empty: none).
  std::string checkpoint_policy;
  std::string policy_last_error;
  std::string background_last_error;
  // Atomic mode: the mechanism the commits' batches use ("xfs-exchange-range",
  // "f2fs-atomic-write", "emulated"; vfs::AtomicWriteKindName, docs/atomic.md); empty in the
  // other modes. The rows atomic_commits and durable_atomic_commits count the commits.
  std::string atomic_write_kind;
  // Why the connection runs in another mode than the atomic one asked for
  // (Options::atomic_fallback); empty when it does not.
  std::string atomic_fallback;
  // Options::record_path: the error that stopped the recording (empty: none, or no recording).
  std::string trace_error;
};

using CheckpointMode = wal::CheckpointMode;
using CheckpointResult = wal::CheckpointResult;
using wal::CheckpointModeName;
using wal::ParseCheckpointMode;

// What Db::Check reports.
struct CheckResult {
  std::vector<std::string> problems;  // one line each, naming the page; empty when all is well
  uint64_t keys = 0;
  int depth = 0;
  uint32_t pages = 0;
  uint32_t tree_pages = 0;
  uint32_t overflow_pages = 0;
  uint32_t free_pages = 0;
  bool ok() const { return problems.empty(); }
};

// How Db::Backup copies.
struct BackupOptions {
  // false: a page-for-page copy of the snapshot (free pages included, blank). true: the keys
  // rewritten into a new file of the same page size and journal family, with no free pages
  // (slower: every key is read and the tree built again, bottom-up: btree/builder.h).
  bool compact = false;
};

// What Db::Backup did.
struct BackupResult {
  uint64_t change_counter = 0;  // of the snapshot copied
  uint32_t source_pages = 0;    // the snapshot's page count
  uint32_t pages = 0;           // the copy's page count
  uint64_t bytes = 0;           // the copy's size
  uint64_t keys = 0;            // keys copied (compact only; a page copy does not count them)
};

// Where Db::Backup builds the copy before renaming it to DEST: DEST followed by this.
inline constexpr char kBackupTempSuffix[] = ".jkv-backup";

// What Db::Compact did.
struct CompactResult {
  uint32_t pages_before = 0;       // the database's page count before
  uint32_t free_pages_before = 0;  // of those, on the freelist
  uint32_t pages = 0;              // its page count after (no free pages)
  uint64_t keys = 0;               // keys rewritten (0 when there was nothing to compact)
  uint64_t bytes_before = 0;       // the database file's size before
  uint64_t bytes = 0;              // and after: WAL and WAL2 cut it at the checkpoint below
  // WAL and WAL2: the checkpoint Compact runs after its commit (PASSIVE, then TRUNCATE when
  // that copied everything). A snapshot older than the compaction holds it (blocked): the
  // file is cut by the first checkpoint that copies the whole log after that reader ends.
  CheckpointResult checkpoint;
};

// Where Db::Compact built a compacted image before it built straight into its transaction:
// the database's path followed by this. Compact removes one an interrupted run left.
inline constexpr char kCompactTempSuffix[] = ".jkv-compact";

// A read transaction: one consistent snapshot of the database.
class ReadTransaction {
 public:
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);
  // An iterator over this snapshot, within `options`' bounds (engine/iterator.h); it must be
  // destroyed before the transaction.
  std::unique_ptr<Iterator> NewIterator(IteratorOptions options = {});
  // Calls visit(key, value) for the pairs from the first key >= `from`, in key order, within
  // `options`' bounds, until `limit` pairs or visit returns false; returns how many it visited.
  // A scan's fast path: no Iterator, one call per pair. DataLoss for a damaged page (the pairs
  // visited before it were sound).
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor visit,
                                const IteratorOptions& options = {});
  // The number of keys (reads every leaf page).
  absl::StatusOr<uint64_t> Count();

 private:
  friend class Db;
  ReadTransaction(Db* db, std::unique_ptr<pager::ReadTxn> txn);
  Db* const db_;
  std::unique_ptr<pager::ReadTxn> txn_;
};

// A pipelined commit's outcome (WriteTransaction::CommitAsync). Copyable (copies share the one
// outcome) and usable from any thread; it may outlive the Db.
//   - Wait() blocks until the commit is durable and visible (OK) or has failed, and returns that;
//     every call returns the same. Pipelined commits of one Db become ready in commit order:
//     when Wait of one returns, every earlier pipelined commit of the Db is settled too.
//   - Ready() tells, without blocking, whether Wait would return at once.
//   - Dropping a handle without Wait neither waits nor cancels: the commit is flushed as any
//     (its hooks run), only its outcome goes unread. A failure is not lost even then: it fails
//     the Db's later commits and transactions (the sticky error below).
// A failed flush fails every commit it covered and every later commit built on it (each
// handle's Wait returns the error; DataLoss for those dropped with it), and the Db's next
// transactions fail with that error, as after a failed Commit: reopen the database.
// Db::Close waits for every pipelined commit to be flushed or failed before it returns.
class PendingCommit {
 public:
  // An empty handle: a commit with nothing in it, ready, its Wait OK.
  PendingCommit() = default;
  absl::Status Wait() const;
  bool Ready() const;

 private:
  friend class WriteTransaction;
  explicit PendingCommit(std::shared_ptr<const pager::CommitPromise> promise)
      : promise_(std::move(promise)) {}
  std::shared_ptr<const pager::CommitPromise> promise_;
};

// The write transaction. It sees its own writes. Destroying it without Commit rolls back.
class WriteTransaction {
 public:
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);
  // InvalidArgument, naming the limit, for an oversized key or value (nothing is written and
  // the transaction goes on). Any other error leaves the transaction failed: Commit then rolls
  // back and returns the error.
  absl::Status Put(absl::string_view key, absl::string_view value);
  // Returns whether the key existed.
  //
  // Bottom-up builds: while a transaction's operations so far are only Puts of strictly
  // ascending keys into a tree that was empty at its first Put, the pairs go to a bottom-up
  // builder (btree/builder.h) instead of through the tree: leaves filled left to right, the
  // interior levels above them. Any other operation (a Put of a key not past the last, Get,
  // Delete, Count, Scan, NewIterator, Commit) first finishes the build, which makes the tree
  // whole, and the transaction goes on as usual. The result is the same keys and values;
  // DbStats::built_pairs counts the pairs written this way. Not in a WriteAcross.
  absl::StatusOr<bool> Delete(absl::string_view key);
  // An iterator that sees this transaction's writes, also those made while it is open, within
  // `options`' bounds; it must be destroyed before the transaction ends.
  std::unique_ptr<Iterator> NewIterator(IteratorOptions options = {});
  // As ReadTransaction::Scan, over this transaction's writes. visit may write to the
  // transaction; the scan then goes on from the first key after the one visited, and the views
  // it was given end with the write.
  absl::StatusOr<uint64_t> Scan(absl::string_view from, uint64_t limit, ScanVisitor visit,
                                const IteratorOptions& options = {});
  absl::StatusOr<uint64_t> Count();

  // Makes every write durable (as the sync level promises) and visible, atomically. On error
  // nothing of the transaction is in the database, and the transaction has ended, except after
  // a busy error (Unavailable) that says "the transaction is still open": in the rollback
  // journal modes a commit waits up to the busy timeout for other connections' readers, and
  // when they outlast it the transaction stays whole and open: call Commit again to retry (or
  // Rollback). FailedPrecondition once ended.
  absl::Status Commit();
  // Commit, pipelined: appends the commit and ends the transaction without waiting for the
  // commit to become durable, so that this thread (or another) can begin and write the next
  // transaction while the flush is in flight (WAL and WAL2 at sync FULL and EXTRA: the next
  // transaction builds on this one; the connection's flusher thread syncs the log meanwhile).
  // The handle's Wait reports the outcome (PendingCommit). In the rollback journal modes and
  // at sync NORMAL and OFF the commit completes here and the handle is ready at once.
  // Visibility: readers, of this Db too, see the commit only once it is durable, never before
  // (a flush publishes it: by the time its handle is ready, or earlier when another flush, of
  // a later commit or a WAL2 log switch, synced it first); this Db's next write transaction
  // sees it at once.
  // Hooks (Options::commit_hook, wal_hook) run once the commit is durable and visible, before
  // its handle becomes ready, in commit order: on the Db's flusher thread for a pipelined
  // commit, on this thread for one completed here.
  // An error before the append (the same as Commit's, including a busy error that leaves the
  // transaction open) is the returned handle's, ready at once.
  PendingCommit CommitAsync();
  // Discards every write. Idempotent.
  absl::Status Rollback();
  // Commit, but a commit that would stay open after a busy error is rolled back instead (its
  // error says nothing was written): the transaction always ends. Db::Put, Delete and Write
  // commit this way.
  absl::Status CommitOrRollback();
  // False once the transaction has committed or rolled back (true after a busy Commit that
  // left it open).
  bool open() const;

 private:
  friend class Db;
  friend class WriteAcross;
  friend absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(
      absl::Span<Db* const> dbs);
  WriteTransaction(Db* db, std::unique_ptr<pager::WriteTxn> txn);
  absl::Status CheckOpen() const;
  // FailedPrecondition while the transaction is part of a WriteAcross (which commits it).
  absl::Status CheckNotAcross(absl::string_view op) const;
  absl::Status AfterWrite(absl::Status s);
  // Ends a bottom-up build, if one is under way, and allows none from now on; an error (the
  // pager's) fails the transaction.
  absl::Status EndBuild();
  // Commits (Commit's work, without its note on a transaction left open).
  absl::Status CommitPages();
  // Records the end of a commit attempt whose status is `s` (engine/db.cc).
  void TraceEnd(const absl::Status& s);

  Db* const db_;
  std::unique_ptr<pager::WriteTxn> txn_;
  // Put's way to the right-most leaf (btree::AppendHint), made at the first Put; Delete resets
  // it.
  std::unique_ptr<btree::AppendHint> append_hint_;
  // The bottom-up build of this transaction's first Puts (see Delete's comment), while one is
  // under way; `may_build_` is true until the first operation that is not such a Put.
  std::unique_ptr<btree::TreeBuilder> builder_;
  bool may_build_ = true;
  double build_fill_;  // TreeBuilder::kDefaultFill; kFullFill for WriteImage (Backup --compact)
  absl::Status failed_;
  bool across_ = false;  // part of a WriteAcross (engine/across.h)
  // Recorded (Options::record_path): its begin is in the trace and its end is not yet.
  bool traced_ = false;
};

class Db {
 public:
  // Opens the database at `path`, creating it unless it exists or options.read_only (or it
  // exists and may not be written: then read-only, see Options::read_only). Rolls
  // back a transaction a crash left half-done. InvalidArgument for bad options, a directory,
  // or a file that is not a journalkv database (left untouched).
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const Options& options = Options());
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Autocommit operations: each is its own transaction.
  absl::StatusOr<std::optional<std::string>> Get(absl::string_view key);
  absl::Status Put(absl::string_view key, absl::string_view value);
  absl::StatusOr<bool> Delete(absl::string_view key);
  // Applies every operation of `batch` in one write transaction, atomically: all, or none on
  // any error (an oversized key or value is refused, naming the operation, before the write
  // lock is taken). An empty batch commits nothing.
  absl::Status Write(const WriteBatch& batch);

  absl::StatusOr<std::unique_ptr<ReadTransaction>> BeginRead();
  absl::StatusOr<std::unique_ptr<WriteTransaction>> BeginWrite();

  // Checks every page checksum, the freelist and the B+tree structure.
  absl::StatusOr<CheckResult> Check();
  DbStats Stats();
  // WAL mode: copies the log back into the database file (PASSIVE, FULL, RESTART, TRUNCATE
  // as SQLite defines them; wal/checkpoint_copy.h). FailedPrecondition in the rollback
  // modes, which have no log.
  absl::StatusOr<CheckpointResult> Checkpoint(CheckpointMode mode = CheckpointMode::kPassive);

  // Copies one snapshot of the database to a new file `dest` while writers go on (WAL and
  // WAL2: the snapshot is pinned like any reader's; rollback modes: it holds SHARED, so a
  // writer's commit waits for the copy, up to its busy timeout). The copy is built as
  // DEST.jkv-backup, synced, and renamed to DEST, so DEST is either absent or whole, even
  // across a power loss (engine/backup.cc, B1-B4); it opens as a database of its own in the
  // source's journal family. AlreadyExists when DEST exists, also when another process
  // creates it while the copy is made (never overwritten: the copy is removed);
  // FailedPrecondition when DEST-journal, DEST-wal, DEST-wal2 or DEST-shm exists (opening
  // the copy would take it for its own) or DEST.jkv-backup does (another backup's, or one a
  // crash interrupted: remove it); InvalidArgument when DEST is the database itself.
  absl::StatusOr<BackupResult> Backup(const std::string& dest,
                                      const BackupOptions& options = BackupOptions());

  // Rewrites the database in place with no free pages, in one write transaction, and gives
  // the space back to the file system: the keys are read in order and the tree built again
  // bottom-up straight into the database's pages 2..N (the rollback journal keeps the
  // originals of the pages it overwrites, as any transaction's; the WAL logs the new ones),
  // and the file is cut to N pages (the
  // rollback modes at commit, after the database sync; WAL and WAL2 at the first checkpoint
  // that copies the whole log, which Compact tries at once). Crash-safe like any transaction:
  // a crash leaves the database as it was or compacted, with the same keys either way.
  // Writers wait for it (it holds the write lock throughout, up to their busy timeout);
  // WAL readers go on, each on its snapshot. A database with no free pages whose live cells
  // would not fit in fewer pages (EstimateReclaimableBytes 0) is left as it is.
  // Not on a read-only connection (FailedPrecondition).
  absl::StatusOr<CompactResult> Compact();
  // What Compact (or Backup with compaction) would give back, estimated from one snapshot: the
  // file's bytes past the pages a compacted copy would take (its header page, the overflow
  // pages as they are, and the leaf and interior pages the bottom-up builder would write for
  // the live cells' bytes at full fill). Reads every leaf. `jkv info`'s reclaimable_bytes.
  absl::StatusOr<uint64_t> EstimateReclaimableBytes();

  // Releases the file. FailedPrecondition while transactions are open. Pipelined commits
  // (WriteTransaction::CommitAsync) are not transactions: Close first waits for each to be
  // flushed (or failed), its hooks run and its handle settled. When recording
  // (Options::record_path), then ends the trace; an error of the recording is returned after
  // the database itself has closed (the message says so). The destructor closes
  // too (and requires that no transaction is open). REQUIRES: no other call on this Db runs
  // meanwhile (a Get in another thread is not a transaction Close can see).
  absl::Status Close();

  const std::string& path() const { return path_; }
  const Options& options() const { return options_; }
  uint32_t page_size() const;

 private:
  friend class ReadTransaction;
  friend class WriteTransaction;
  friend class WriteAcross;
  friend absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(
      absl::Span<Db* const> dbs);
  // Options::commit_hook and wal_hook, after a successful commit.
  void CallHooks(const pager::CommitRecord& record);
  // BeginWrite, recorded or not (a transaction across databases is not: engine/across.cc).
  absl::StatusOr<std::unique_ptr<WriteTransaction>> BeginWriteImpl(bool record);
  // engine/image.cc: every key of `source`, from its first, put in order into a new database
  // at `path` (journal and sync OFF, error_if_exists). `created` is set once the file exists:
  // the caller's to remove if this fails.
  struct ImageResult {
    bool created = false;
    uint64_t keys = 0;
    uint32_t pages = 0;
    uint64_t built_pairs = 0;  // of `keys`, those the bottom-up builder wrote
  };
  absl::Status WriteImage(const std::string& path, uint32_t page_size, Iterator& source,
                          ImageResult* result);
  // engine/compact.cc: Compact's transaction `w` rebuilt bottom-up straight into its pages
  // (pager L7-L9), committed when it ends under `pages_before` pages, else rolled back.
  absl::Status Rebuild(WriteTransaction& w, uint32_t pages_before, CompactResult* result);
  Db(std::string path, const Options& options, std::unique_ptr<vfs::FileSystem> owned_fs,
     std::unique_ptr<pager::Pager> pager);

  const std::string path_;
  const Options options_;
  std::unique_ptr<vfs::FileSystem> owned_fs_;  // the POSIX file system when none was given
  vfs::FileSystem* fs_;
  std::unique_ptr<pager::Pager> pager_;
  std::atomic<int> open_transactions_{0};
  std::atomic<uint64_t> commit_sequence_{0};  // CommitInfo::sequence
  std::atomic<uint64_t> built_pairs_{0};      // DbStats::built_pairs
  // Options::record_path's recording; null when not recording (each operation checks it).
  std::unique_ptr<TraceWriter> trace_;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_DB_H_
