// The options of a journalkv database (public API).
//
// Thread-safety: a plain value type.
#ifndef JOURNALKV_ENGINE_OPTIONS_H_
#define JOURNALKV_ENGINE_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "checkpoint/policy.h"
#include "engine/trace.h"
#include "pager/journal_mode.h"
#include "vfs/vfs.h"

namespace journalkv {

namespace vfs {
class FileSystem;
}  // namespace vfs

// How commits protect the database against a crash. README.md gives the exact guarantee of
// every mode and sync level; ParseJournalMode / ParseSyncLevel read their lower-case names.
using JournalMode = pager::JournalMode;
using SyncLevel = pager::SyncLevel;
using pager::JournalModeName;
using pager::ParseJournalMode;
using pager::ParseSyncLevel;
using pager::SyncLevelName;

// Checkpoint policies (checkpoint/policy.h): the interface a policy of your own implements,
// what it is told after each commit and what it may answer.
using CheckpointPolicy = checkpoint::CheckpointPolicy;
using wal::LogSnapshot;
using checkpoint::PolicyAction;
using checkpoint::PolicyDecision;
using checkpoint::ParseCheckpointPolicy;

// What Options::commit_hook is told about each commit.
struct CommitInfo {
  uint64_t sequence = 0;        // this handle's commits, numbered 1, 2, ... as they reach the hook
  uint32_t pages = 0;           // distinct pages the transaction wrote, the header page included
  uint64_t change_counter = 0;  // the database header's after the commit (pager/db_format.h; in
                                // WAL modes it advances only when the commit changed the header)
};

// What Options::wal_hook is told about each commit in WAL and WAL2 modes.
struct WalCommitInfo {
  int log = 0;               // the log file: 0 is x.db-wal, 1 is x.db-wal2 (WAL2)
  uint32_t generation = 0;   // the log's generation; a restart starts a new one at frame 1
  uint32_t first_frame = 0;  // the transaction's frames are first_frame..last_frame (1-based),
  uint32_t last_frame = 0;   // last_frame its commit frame
  uint64_t log_bytes = 0;    // the log's length through the commit frame
};

// Options::mmap_size's default: 0 (off), or JOURNALKV_TEST_MMAP_SIZE's bytes when that is set
// (docs/testing.md: how the existing test suites run with the map on). Defined in db.cc, over
// the pager's, so that this public header does not include the pager's.
uint64_t DefaultMmapSize();

struct Options {
  // Unset (the default): a new database is created in wal mode, and an existing one opens in
  // the family it was last used in (wal, or delete for a rollback-family database), so an
  // opener that names no mode never switches a database. Set: that mode, switching the
  // database's family when it differs (refused while other connections have it open).
  // Db::options() reports the mode in use.
  std::optional<JournalMode> journal_mode;
  // Whether an opener whose journal_mode is of another family than the existing database's
  // (a rollback mode on a wal or wal2 database, wal on a rollback one, wal2 on wal) switches the
  // database to it (true, the default) or opens it in its own family (false; options()
  // .journal_mode then says which): what a reader that must not change the database wants.
  bool switch_family = true;
  SyncLevel sync = SyncLevel::kFull;
  // Used when the database is created; an existing database keeps its own page size.
  uint32_t page_size = 4096;
  // Clean pages kept in memory; also how many dirty pages a write transaction holds before it
  // spills them to the database file.
  uint32_t cache_pages = 2000;
  // The most bytes of the database file read through a read-only memory map instead of
  // pread; 0: off (the default: see docs/api.md, "mmap_size"). WAL modes read the file's
  // pages in place in the map, each checked once until a checkpoint writes the file again,
  // and copy the log's frames out of a map of each log (as many bytes per log); the other
  // modes copy each page into the page cache and check it there. An I/O error or a
  // file cut by another process while mapped (SIGBUS) becomes an error of the read
  // transactions open on the handle, not a crash. Has no effect on file systems without a map
  // (the in-memory one, the fault-injecting wrapper).
  uint64_t mmap_size = DefaultMmapSize();
  // At each commit that changed the freelist, the free pages at the end of the database file
  // are taken off the freelist and the file is cut before them (the rollback modes at the
  // commit, WAL and WAL2 at the next checkpoint that copies the whole log, as for Compact).
  // Pages in use are never moved: only a free tail goes (deleting the newest keys of a
  // sequential load frees one; Compact gives back free pages anywhere). Off by default: it
  // costs a walk of the freelist at such commits, and a file that shrinks must grow again.
  bool auto_vacuum = false;
  // How long a call waits for a lock held by another transaction before it fails with
  // Unavailable("busy: ...").
  absl::Duration busy_timeout = absl::Seconds(5);
  // WAL: when the log is copied back into the database file, and on which thread (README,
  // "Choosing a checkpoint policy"): "threshold:N" (a PASSIVE checkpoint on the committing
  // thread once the log holds N frames; 1000 is SQLite's default, 100 Android's), "async:N/B"
  // (a background thread woken at N frames; a commit that leaves B frames or more blocks until
  // the log is copied, as WeChat's WCDB does), or "manual" (only Db::Checkpoint).
  std::string checkpoint_policy = std::string(checkpoint::kDefaultCheckpointPolicy);
  // WAL: a policy of your own (checkpoint/policy.h); when set, checkpoint_policy is ignored.
  // This Db calls it after each commit, from one thread at a time; an object shared by several
  // Dbs is called by each of them and must be thread-safe.
  std::shared_ptr<CheckpointPolicy> custom_checkpoint_policy;
  // WAL: keep the database to this one handle for its whole life: its wal-index lives on the
  // heap (no -shm file, no shared memory needed) and other openers fail with busy errors.
  bool exclusive_locking = false;
  // WAL2: the writer moves to the other log once the current one holds this many frames and
  // the other one has been copied into the database file completely (README, "WAL2").
  uint32_t wal2_switch_pages = 1000;
  // WAL: when a log restarts, a log file longer than this many bytes is cut back to it, so that
  // a big transaction (or a checkpoint held back by a reader) does not leave the log at its
  // peak size for good; below it the file is kept, and reused without growing. 0: never cut
  // (SQLite's journal_size_limit; its default keeps every log at its peak).
  uint64_t wal_size_limit = 64ull << 20;
  // WAL: the log file is preallocated with zeros, in steps that start at this many bytes and
  // double with the file up to 8 MiB, so that a commit in steady state overwrites bytes that
  // exist and its data-only flush (fdatasync) is enough. A power of two, 4 KiB to 8 MiB.
  // Smaller suits many tiny databases (each log starts this big); the crash sweeps use 64 KiB.
  uint64_t wal_grow_bytes = uint64_t{1} << 20;
  // WAL: the reader slots in the -shm this connection may claim, 0 to 512 (the -shm holds
  // 512). A slot makes starting and ending a read transaction free of system calls. A
  // connection that finds every slot it may claim taken (more than 512 connections open at
  // once, all processes) still reads and writes: its read transactions pin their snapshots
  // under 32 shared overflow pins, at two or three lock calls each (README, "Limits").
  int reader_slots = 512;
  // Journal mode atomic (docs/atomic.md) needs a file system with atomic batches (XFS with
  // exchange-range on Linux 6.10+, or F2FS); elsewhere (ext4, tmpfs, ...) Open refuses it
  // (FailedPrecondition naming what is needed), unless this names the mode to run in instead
  // (any mode but atomic; `jkv --atomic-fallback=MODE`). Then the connection runs in that mode,
  // Db::options().journal_mode names it and DbStats::atomic_fallback says why.
  std::optional<JournalMode> atomic_fallback;
  // Whether Open creates a database that does not exist (or a file that is empty). Off, a
  // missing path is NotFound and an empty file FailedPrecondition, and nothing is created:
  // what a reader wants (`jkv x.db get k` does not make a typo into a database).
  bool create_if_missing = true;
  // Whether Open refuses a path that already exists (AlreadyExists): for a caller that means
  // to start a new database.
  bool error_if_exists = false;
  // Open without write access; write transactions fail with FailedPrecondition. A connection
  // that may not write the database (no write permission on the file, its folder, the -wal or
  // the -shm, or a read-only file system) is opened read-only without being asked, in every
  // journal mode, and Db::options().read_only then says so; its writes fail with
  // FailedPrecondition naming the reason.
  bool read_only = false;
  // Recording (docs/trace.md): when set, Open creates (or replaces) a trace file here and every
  // operation of this handle is written to it with its time and thread (engine/trace.h: gets,
  // puts, deletes and scans, autocommit or in a transaction, begin, commit, rollback,
  // checkpoint; not iterators, Count, Backup, Compact, nor transactions across databases).
  // Open fails when the file cannot be created; a later write error stops the recording, not
  // the database: DbStats::trace_error and Close report it. Empty (the default): nothing is
  // recorded, at the cost of one pointer check per operation.
  std::string record_path;
  // Whether the trace keeps keys and values as they are, or same-length synthetic stand-ins
  // (the default, so a trace can be shared: equal keys stay equal, distinct ones distinct).
  TraceValues record_values = TraceValues::kSynthetic;
  // Keys the synthetic mapping; 0 (the default) draws a random one, so keys cannot be mapped
  // back. Set it for a reproducible trace.
  uint64_t record_seed = 0;

  // The file system to use; nullptr means the operating system's (POSIX). Not owned.
  vfs::FileSystem* file_system = nullptr;

  // Hooks, the seam for replication (log shipping) and for checkpointing of your own. Each is
  // called on the committing thread after every commit of this handle that wrote something,
  // once the commit is durable (as `sync` promises) and visible to other readers, before the
  // commit returns; never for a rollback, a failed commit or one that wrote nothing. Calls
  // from several threads may overlap. A hook may read this Db (its own thread's read
  // transaction included) but must not write through it: that commit would call it again.
  // A pipelined commit's (WriteTransaction::CommitAsync at WAL FULL and EXTRA) run on the
  // handle's flusher thread instead, in commit order, before its PendingCommit is ready: a
  // hook that blocks there holds up the handle's later pipelined commits (and one that waits
  // for a PendingCommit of this handle waits for itself).
  std::function<void(const CommitInfo&)> commit_hook;
  // WAL and WAL2 only: where the commit's frames are in the log (log/wal_format.h), so that a
  // shipper can copy exactly them.
  std::function<void(const WalCommitInfo&)> wal_hook;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_OPTIONS_H_
