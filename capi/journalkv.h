/* journalkv's C API: the embedded key-value store for C programs and for other languages'
 * foreign-function interfaces. A thin layer over the C++ API (engine/db.h) with the same
 * semantics: ordered byte-string keys, snapshot reads, atomic write transactions, several
 * threads and processes on one database.
 *
 *   jkv_db* db;
 *   char* err = NULL;
 *   if (jkv_open("x.db", NULL, &db, &err) != JKV_OK) { fprintf(stderr, "%s\n", err); ... }
 *   jkv_put(db, "k", 1, "v", 1, &err);
 *   char* value; size_t len;
 *   if (jkv_get(db, "k", 1, &value, &len, &err) == JKV_OK) { ...; jkv_free(value); }
 *   jkv_close(db, &err);
 *
 * Errors: every call that can fail returns a jkv_code (JKV_OK is 0). When it is not JKV_OK and
 * `err` is not NULL, *err receives a message naming the problem (the C++ API's absl::Status
 * message), allocated with malloc: release it with jkv_free. A missing key is JKV_NOT_FOUND
 * with no message. Buffers the API returns (values, messages) are the caller's, released with
 * jkv_free; pointers into an iterator (its key and value) stay valid until it moves.
 *
 * Handles: a jkv_db may be used from any number of threads at once; a transaction and an
 * iterator belong to one thread at a time. Transactions and iterators must be ended (commit,
 * rollback/end, jkv_iter_free) before jkv_close; an iterator before its transaction.
 *
 * Compiles as C (C99 and later) and as C++. */
#ifndef JOURNALKV_CAPI_JOURNALKV_H_
#define JOURNALKV_CAPI_JOURNALKV_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum jkv_code {
  JKV_OK = 0,
  JKV_NOT_FOUND = 1,           /* a missing key (no message); a missing database when not created */
  JKV_INVALID_ARGUMENT = 2,    /* bad options, an oversized key, not a journalkv file */
  JKV_BUSY = 3,                /* another connection held a lock past the busy timeout: retry */
  JKV_FULL = 4,                /* the disk (or the log) is full: retry once there is space */
  JKV_CORRUPT = 5,             /* damaged data */
  JKV_FAILED_PRECONDITION = 6, /* a call in the wrong state: a write on a read-only database... */
  JKV_PERMISSION_DENIED = 7,
  JKV_ALREADY_EXISTS = 8,
  JKV_UNIMPLEMENTED = 9,       /* e.g. WAL on a file system without shared memory */
  JKV_IO_ERROR = 10            /* any other failure; the message says what */
} jkv_code;

typedef enum jkv_journal_mode {
  JKV_JOURNAL_DEFAULT = 0, /* wal for a new database, the database's own family otherwise */
  JKV_JOURNAL_DELETE,
  JKV_JOURNAL_TRUNCATE,
  JKV_JOURNAL_PERSIST,
  JKV_JOURNAL_MEMORY,
  JKV_JOURNAL_OFF,
  JKV_JOURNAL_WAL,
  JKV_JOURNAL_WAL2,
  JKV_JOURNAL_ATOMIC /* one atomic write of the file system per commit (docs/atomic.md) */
} jkv_journal_mode;

typedef enum jkv_sync_level {
  JKV_SYNC_OFF = 0,
  JKV_SYNC_NORMAL,
  JKV_SYNC_FULL,
  JKV_SYNC_EXTRA
} jkv_sync_level;

typedef enum jkv_checkpoint_mode {
  JKV_CHECKPOINT_PASSIVE = 0,
  JKV_CHECKPOINT_FULL,
  JKV_CHECKPOINT_RESTART,
  JKV_CHECKPOINT_TRUNCATE
} jkv_checkpoint_mode;

/* What a commit hook is told: after each commit that wrote something, once it is durable and
 * visible, before the commit returns, on the committing thread (C++ Options::commit_hook). */
typedef struct jkv_commit_info {
  uint64_t sequence;       /* this handle's commits, numbered 1, 2, ... as they reach the hook */
  uint32_t pages;          /* distinct pages the transaction wrote, the header page included */
  uint64_t change_counter; /* the database header's after the commit */
} jkv_commit_info;

/* What a WAL hook is told about each commit in wal and wal2 modes (C++ Options::wal_hook): the
 * frames a log shipper copies. */
typedef struct jkv_wal_commit_info {
  int log;              /* 0: x.db-wal, 1: x.db-wal2 */
  uint32_t generation;  /* the log's generation; a restart starts a new one at frame 1 */
  uint32_t first_frame; /* the transaction's frames, 1-based; last_frame is its commit frame */
  uint32_t last_frame;
  uint64_t log_bytes;   /* the log's length through the commit frame */
} jkv_wal_commit_info;

/* A hook gets the `arg` given with it. It may read the database but must not write through it. */
typedef void (*jkv_commit_hook)(void* arg, const jkv_commit_info* info);
typedef void (*jkv_wal_hook)(void* arg, const jkv_wal_commit_info* info);

/* Options for jkv_open; jkv_options_init fills in the defaults (those of the C++ Options). */
typedef struct jkv_options {
  jkv_journal_mode journal_mode;
  jkv_sync_level sync;          /* default JKV_SYNC_FULL */
  uint32_t page_size;           /* used when the database is created; default 4096 */
  uint32_t cache_pages;         /* default 2000 */
  int64_t busy_timeout_ms;      /* default 5000 */
  int read_only;                /* non-zero: no writes (also chosen by itself without write access) */
  int create_if_missing;        /* default 1 */
  int error_if_exists;          /* default 0 */
  const char* checkpoint_policy; /* NULL or "threshold:1000", "async:0/100", "manual", ... */
  jkv_commit_hook commit_hook;   /* NULL: none */
  void* commit_hook_arg;
  jkv_wal_hook wal_hook;         /* NULL: none */
  void* wal_hook_arg;
  int auto_vacuum; /* non-zero: commits give free pages at the end of the file back; default 0 */
  /* JKV_JOURNAL_ATOMIC on a file system without atomic writes: the mode to run in instead;
     JKV_JOURNAL_DEFAULT (the default): refuse (Options::atomic_fallback) */
  jkv_journal_mode atomic_fallback;
  /* Non-NULL: record every operation of the handle into this trace file (C++
     Options::record_path, docs/trace.md); jkv_open fails when it cannot be created. */
  const char* record_path;
  int record_keep_values; /* non-zero: keys and values as they are; 0 (default): synthetic */
} jkv_options;

/* What jkv_backup did. */
typedef struct jkv_backup_result {
  uint32_t source_pages; /* the snapshot's page count */
  uint32_t pages;        /* the copy's page count */
  uint64_t bytes;        /* the copy's size */
  uint64_t keys;         /* keys copied (compact only) */
} jkv_backup_result;

/* What jkv_compact did. */
typedef struct jkv_compact_result {
  uint32_t pages_before;      /* the database's page count before */
  uint32_t free_pages_before; /* of those, free */
  uint32_t pages;             /* its page count after */
  uint64_t keys;              /* keys rewritten (0: nothing to compact) */
  uint64_t bytes_before;      /* the database file's size before */
  uint64_t bytes;             /* and after */
  int checkpoint_blocked;     /* wal, wal2: older snapshots hold the file's cut */
} jkv_compact_result;

typedef struct jkv_checkpoint_result {
  uint32_t log_frames; /* committed frames in the log when the checkpoint looked */
  uint32_t copied;     /* frames copied into the database file */
  uint32_t backfilled; /* frames of the log in the database file afterwards */
  int blocked;         /* non-zero: could not copy every frame */
  int restarted;       /* non-zero: the log was restarted */
} jkv_checkpoint_result;

/* A few of the handle's counters (jkv_stat_get reads every one by name). */
typedef struct jkv_stats {
  uint32_t page_size;
  uint32_t page_count;
  uint32_t freelist_pages;
  uint64_t commits;
  uint64_t rollbacks;
  uint64_t cache_hits;
  uint64_t cache_misses;
  uint64_t syncs;       /* of the database file, the journal and the log, and directories */
  uint64_t bytes_written;
  int wal_mode;         /* non-zero in wal and wal2 */
  uint32_t log_frames;
  uint64_t checkpoints;
} jkv_stats;

typedef struct jkv_db jkv_db;
typedef struct jkv_txn jkv_txn;
typedef struct jkv_iter jkv_iter;
typedef struct jkv_across jkv_across;
typedef struct jkv_commit jkv_commit;

void jkv_options_init(jkv_options* options);
/* Releases what the API allocated (a value, a message). NULL is allowed. */
void jkv_free(void* p);
/* The code's name, "JKV_OK" and so on (a static string). */
const char* jkv_code_name(jkv_code code);

/* Opens (creating unless options say otherwise) the database at `path`; `options` may be NULL
 * for the defaults. On success *db is the handle, to be closed with jkv_close. */
jkv_code jkv_open(const char* path, const jkv_options* options, jkv_db** db, char** err);
/* Closes the database and frees the handle, whatever the result (JKV_FAILED_PRECONDITION with
 * transactions still open: they are then invalid). NULL is allowed. */
jkv_code jkv_close(jkv_db* db, char** err);

/* Autocommit operations: each its own transaction. jkv_get's *value is malloc'd and the
 * caller's: *value_len bytes, then a NUL (for convenience; values may hold NULs themselves).
 * jkv_delete sets *existed (if not NULL) to whether the key was there. */
jkv_code jkv_get(jkv_db* db, const char* key, size_t key_len, char** value, size_t* value_len,
                 char** err);
jkv_code jkv_put(jkv_db* db, const char* key, size_t key_len, const char* value,
                 size_t value_len, char** err);
jkv_code jkv_delete(jkv_db* db, const char* key, size_t key_len, int* existed, char** err);

/* Transactions. A read transaction sees one snapshot; a write transaction sees its own writes
 * and is applied atomically by jkv_txn_commit. Commit and end free the transaction. */
jkv_code jkv_begin_read(jkv_db* db, jkv_txn** txn, char** err);
jkv_code jkv_begin_write(jkv_db* db, jkv_txn** txn, char** err);
jkv_code jkv_txn_get(jkv_txn* txn, const char* key, size_t key_len, char** value,
                     size_t* value_len, char** err);
jkv_code jkv_txn_put(jkv_txn* txn, const char* key, size_t key_len, const char* value,
                     size_t value_len, char** err);
jkv_code jkv_txn_delete(jkv_txn* txn, const char* key, size_t key_len, int* existed,
                        char** err);
/* Commits a write transaction (a read transaction just ends) and frees it; on failure nothing of
 * the transaction is applied. One exception: JKV_BUSY from a commit that waited past the busy
 * timeout for other connections' readers (the rollback journal modes) leaves the transaction
 * open and whole, not freed: call jkv_txn_commit again to retry, or jkv_txn_end. */
jkv_code jkv_txn_commit(jkv_txn* txn, char** err);
/* Ends the transaction without committing (a write transaction rolls back) and frees it. */
void jkv_txn_end(jkv_txn* txn);

/* Pipelined commits (the C++ WriteTransaction::CommitAsync): jkv_txn_commit_async appends the
 * commit, frees the transaction and returns at once with *commit, a handle to its outcome, so
 * that the caller can begin and write its next transaction while this one's flush is in flight
 * (wal and wal2 at sync full and extra; in every other mode and level the commit completes
 * before it returns and the handle is ready at once). An error before the append is returned
 * here as jkv_txn_commit's (*commit is then NULL; JKV_BUSY leaves the transaction open, as
 * there). jkv_commit_wait blocks until the commit is durable and visible (JKV_OK) or failed,
 * and may be called again (same result); jkv_commit_ready tells without blocking (non-zero:
 * ready). Handles of one database become ready in commit order; readers never see a commit
 * before it is ready; a failed flush fails every commit it covered and every later one (and the
 * database's next transactions: reopen it). jkv_commit_free releases the handle, ready or not:
 * the commit goes on all the same, unwaited. jkv_close waits for every pending commit to be
 * flushed or failed; the handles stay valid after it, until freed. NULL is allowed in
 * jkv_commit_free. On a read transaction it just ends it, with a ready handle. */
jkv_code jkv_txn_commit_async(jkv_txn* txn, jkv_commit** commit, char** err);
jkv_code jkv_commit_wait(jkv_commit* commit, char** err);
int jkv_commit_ready(const jkv_commit* commit);
void jkv_commit_free(jkv_commit* commit);

/* A write transaction across several databases (docs/across.md): writes to `count` open
 * databases, committed as one. Atomic across them after any crash in delete, truncate, persist
 * and atomic; per database only in wal and wal2; databases of different journal families, and
 * memory or off, are refused (JKV_FAILED_PRECONDITION). The locks are taken in one order (by
 * the files' identity, not the order of `dbs`), each waiting up to its busy timeout.
 * jkv_across_txn gives database i's part (the order of `dbs`), owned by `across`: use it with
 * jkv_txn_get, jkv_txn_put, jkv_txn_delete and the iterators; jkv_txn_commit on it is refused
 * and jkv_txn_end does nothing. jkv_across_commit commits every part and frees `across`, also
 * on failure (then nothing is applied; in wal and wal2 the databases before the one that
 * failed may have committed, as the message says), except for JKV_BUSY that leaves it open
 * (retry, or jkv_across_end). jkv_across_end rolls every part back and frees `across`. */
jkv_code jkv_begin_write_across(jkv_db* const* dbs, size_t count, jkv_across** across,
                                char** err);
jkv_txn* jkv_across_txn(jkv_across* across, size_t i); /* NULL past the last */
jkv_code jkv_across_commit(jkv_across* across, char** err);
void jkv_across_end(jkv_across* across);

/* Iterators over a transaction's view, in key order. */
jkv_code jkv_iter_new(jkv_txn* txn, jkv_iter** iter, char** err);
/* An iterator that sees only keys in [lower, upper): a NULL bound is no bound. Seeks start at
 * the lower bound at the earliest; it stops being valid where the keys leave the range. */
jkv_code jkv_iter_new_bounded(jkv_txn* txn, const char* lower, size_t lower_len,
                              const char* upper, size_t upper_len, jkv_iter** iter, char** err);
void jkv_iter_seek(jkv_iter* iter, const char* key, size_t key_len); /* first key >= key */
void jkv_iter_seek_to_first(jkv_iter* iter);
void jkv_iter_seek_to_last(jkv_iter* iter);
int jkv_iter_valid(jkv_iter* iter);
void jkv_iter_next(jkv_iter* iter); /* requires jkv_iter_valid */
void jkv_iter_prev(jkv_iter* iter); /* requires jkv_iter_valid */
/* The current key and value (requires jkv_iter_valid); valid until the iterator moves. */
const char* jkv_iter_key(jkv_iter* iter, size_t* key_len);
jkv_code jkv_iter_value(jkv_iter* iter, const char** value, size_t* value_len, char** err);
/* The first error the iterator met (JKV_OK if none): a scan ends early on one. */
jkv_code jkv_iter_status(jkv_iter* iter, char** err);
void jkv_iter_free(jkv_iter* iter);

/* Copies the log into the database file (wal and wal2 only; a rollback mode is
 * JKV_FAILED_PRECONDITION). `result` may be NULL. */
jkv_code jkv_checkpoint(jkv_db* db, jkv_checkpoint_mode mode, jkv_checkpoint_result* result,
                        char** err);
/* Fills the few counters of jkv_stats (for existing callers; jkv_stat_get reads any of them). */
jkv_code jkv_stats_get(jkv_db* db, jkv_stats* stats, char** err);
/* One of the handle's counters by its name: any row of the counter table, under the names the
 * C++ DbStats fields and `jkv stats` use ("commits", "log_frames", "flush_wait_ms", ...; the
 * WAL's are 0 in a rollback mode), or an I/O count of one kind of file ("database_writes",
 * "wal_syncs", "journal_bytes_written", ..., "dir_syncs"). Times are in milliseconds, flags 0
 * or 1. An unknown name is JKV_INVALID_ARGUMENT. */
jkv_code jkv_stat_get(jkv_db* db, const char* name, double* value, char** err);
/* The name of counter `index` (0, 1, ...), or NULL past the last one: to list them all for
 * jkv_stat_get. A static string. */
const char* jkv_stat_name(int index);

/* Copies one snapshot of the database to the new file `dest` while writers go on (C++
 * Db::Backup): built beside it, synced and renamed, so `dest` is absent or whole after a crash.
 * `compact` non-zero rewrites the keys into a file with no free pages. An existing `dest` is
 * JKV_ALREADY_EXISTS; a leftover of another backup beside it JKV_FAILED_PRECONDITION. `result`
 * may be NULL. */
jkv_code jkv_backup(jkv_db* db, const char* dest, int compact, jkv_backup_result* result,
                    char** err);

/* Rewrites the database in place with no free pages and cuts the file (C++ Db::Compact): one
 * write transaction, crash-safe; writers wait for it. `result` may be NULL. */
jkv_code jkv_compact(jkv_db* db, jkv_compact_result* result, char** err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JOURNALKV_CAPI_JOURNALKV_H_ */
