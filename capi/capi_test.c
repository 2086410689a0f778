/* The C API from C (compiled as C, not C++): open with options, autocommit put/get/delete, a
 * missing key, a write transaction committed and one rolled back, a read snapshot that does not
 * see a later commit, ordered iteration with seek, checkpoint and stats in WAL, and errors with
 * their codes and messages (bad options, a write on a read-only handle, a busy writer, a
 * missing database not created), the commit and WAL hooks, a backup, and a busy commit
 * retried, and a transaction across two databases (committed, ended, refused for mixed
 * families). Prints one line per failed check; exits non-zero if any. */
#include "capi/journalkv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                    \
    }                                                                \
  } while (0)

static char* err = NULL;

/* Whether `code` is JKV_OK; otherwise prints it with the message (and frees it). */
static int ok(jkv_code code, const char* what) {
  if (code == JKV_OK) return 1;
  fprintf(stderr, "%s: %s: %s\n", what, jkv_code_name(code), err != NULL ? err : "(no message)");
  jkv_free(err);
  err = NULL;
  ++failures;
  return 0;
}

/* The value of `key` through `db`, or NULL if missing (caller frees). */
static char* get(jkv_db* db, const char* key) {
  char* value = NULL;
  size_t len = 0;
  jkv_code code = jkv_get(db, key, strlen(key), &value, &len, &err);
  if (code == JKV_NOT_FOUND) return NULL;
  if (!ok(code, key)) return NULL;
  CHECK(strlen(value) == len);
  return value;
}

static int value_is(jkv_db* db, const char* key, const char* want) {
  char* v = get(db, key);
  int same = v != NULL && strcmp(v, want) == 0;
  if (!same) fprintf(stderr, "%s: got %s, want %s\n", key, v != NULL ? v : "(missing)", want);
  jkv_free(v);
  return same;
}

static char path[4096];

static void test_basics(void) {
  jkv_options options;
  jkv_options_init(&options);
  options.journal_mode = JKV_JOURNAL_WAL;
  options.sync = JKV_SYNC_NORMAL;
  options.checkpoint_policy = "manual";
  jkv_db* db = NULL;
  if (!ok(jkv_open(path, &options, &db, &err), "open")) return;

  CHECK(ok(jkv_put(db, "apple", 5, "red", 3, &err), "put apple"));
  CHECK(ok(jkv_put(db, "banana", 6, "yellow", 6, &err), "put banana"));
  CHECK(value_is(db, "apple", "red"));
  CHECK(get(db, "cherry") == NULL);
  char* missing = NULL;
  CHECK(jkv_get(db, "cherry", 6, &missing, NULL, &err) == JKV_NOT_FOUND && err == NULL);

  /* Binary keys and values, NULs included. */
  CHECK(ok(jkv_put(db, "b\0in", 4, "v\0v", 3, &err), "put binary"));
  size_t len = 0;
  char* bin = NULL;
  CHECK(ok(jkv_get(db, "b\0in", 4, &bin, &len, &err), "get binary"));
  CHECK(len == 3 && memcmp(bin, "v\0v", 3) == 0);
  jkv_free(bin);
  int existed = -1;
  CHECK(ok(jkv_delete(db, "b\0in", 4, &existed, &err), "delete binary") && existed == 1);
  CHECK(ok(jkv_delete(db, "b\0in", 4, &existed, &err), "delete again") && existed == 0);

  /* A snapshot taken now does not see the commit that follows it. */
  jkv_txn* snapshot = NULL;
  CHECK(ok(jkv_begin_read(db, &snapshot, &err), "begin read"));

  jkv_txn* txn = NULL;
  if (ok(jkv_begin_write(db, &txn, &err), "begin write")) {
    CHECK(ok(jkv_txn_put(txn, "cherry", 6, "dark red", 8, &err), "txn put"));
    CHECK(ok(jkv_txn_delete(txn, "apple", 5, &existed, &err), "txn delete") && existed == 1);
    char* own = NULL;
    CHECK(ok(jkv_txn_get(txn, "cherry", 6, &own, NULL, &err), "txn sees its own write"));
    CHECK(own != NULL && strcmp(own, "dark red") == 0);
    jkv_free(own);
    CHECK(ok(jkv_txn_commit(txn, &err), "commit"));
  }
  CHECK(value_is(db, "cherry", "dark red"));
  CHECK(get(db, "apple") == NULL);

  if (snapshot != NULL) {
    char* old = NULL;
    CHECK(ok(jkv_txn_get(snapshot, "apple", 5, &old, NULL, &err), "snapshot get"));
    CHECK(old != NULL && strcmp(old, "red") == 0);
    jkv_free(old);
    CHECK(jkv_txn_get(snapshot, "cherry", 6, &old, NULL, &err) == JKV_NOT_FOUND);
    CHECK(jkv_txn_put(snapshot, "x", 1, "y", 1, &err) == JKV_FAILED_PRECONDITION && err != NULL);
    jkv_free(err);
    err = NULL;
    jkv_txn_end(snapshot);
  }

  /* A rolled-back transaction leaves nothing. */
  if (ok(jkv_begin_write(db, &txn, &err), "begin write 2")) {
    CHECK(ok(jkv_txn_put(txn, "date", 4, "brown", 5, &err), "txn put date"));
    jkv_txn_end(txn);
  }
  CHECK(get(db, "date") == NULL);

  /* Iteration in key order, from a seek and backwards. */
  for (int i = 0; i < 50; ++i) {
    char key[16], value[16];
    snprintf(key, sizeof key, "k%03d", i);
    snprintf(value, sizeof value, "v%d", i);
    CHECK(ok(jkv_put(db, key, strlen(key), value, strlen(value), &err), "put k"));
  }
  jkv_txn* reader = NULL;
  jkv_iter* it = NULL;
  if (ok(jkv_begin_read(db, &reader, &err), "begin read 2") &&
      ok(jkv_iter_new(reader, &it, &err), "iter")) {
    int n = 0;
    char prev[16] = "";
    for (jkv_iter_seek(it, "k010", 4); jkv_iter_valid(it); jkv_iter_next(it)) {
      size_t klen = 0;
      const char* key = jkv_iter_key(it, &klen);
      CHECK(klen == 4 && key[0] == 'k');
      CHECK(strncmp(prev, key, klen) < 0);
      memcpy(prev, key, klen);
      prev[klen] = '\0';
      const char* value = NULL;
      size_t vlen = 0;
      CHECK(ok(jkv_iter_value(it, &value, &vlen, &err), "iter value"));
      char want[16];
      snprintf(want, sizeof want, "v%d", atoi(key + 1));
      CHECK(vlen == strlen(want) && memcmp(value, want, vlen) == 0);
      ++n;
    }
    CHECK(n == 40);
    CHECK(ok(jkv_iter_status(it, &err), "iter status"));
    jkv_iter_seek_to_last(it);
    CHECK(jkv_iter_valid(it));
    size_t klen = 0;
    CHECK(strncmp(jkv_iter_key(it, &klen), "k049", 4) == 0);
    jkv_iter_prev(it);
    CHECK(strncmp(jkv_iter_key(it, &klen), "k048", 4) == 0);
    jkv_iter_free(it);
    /* Bounded: [k010, k020) forward and backward. */
    if (ok(jkv_iter_new_bounded(reader, "k010", 4, "k020", 4, &it, &err), "bounded iter")) {
      n = 0;
      for (jkv_iter_seek_to_first(it); jkv_iter_valid(it); jkv_iter_next(it)) ++n;
      CHECK(n == 10);
      jkv_iter_seek_to_last(it);
      CHECK(jkv_iter_valid(it) && strncmp(jkv_iter_key(it, &klen), "k019", 4) == 0);
      jkv_iter_seek(it, "k000", 4); /* before the range: starts at its lower bound */
      CHECK(jkv_iter_valid(it) && strncmp(jkv_iter_key(it, &klen), "k010", 4) == 0);
      jkv_iter_free(it);
    }
    jkv_txn_end(reader);
  }

  /* Checkpoint and stats in WAL. */
  jkv_stats stats;
  CHECK(ok(jkv_stats_get(db, &stats, &err), "stats"));
  CHECK(stats.wal_mode && stats.page_size == 4096 && stats.commits >= 50 && stats.log_frames > 0);
  jkv_checkpoint_result result;
  CHECK(ok(jkv_checkpoint(db, JKV_CHECKPOINT_TRUNCATE, &result, &err), "checkpoint"));
  CHECK(result.log_frames > 0 && result.backfilled == result.log_frames && result.restarted);
  CHECK(ok(jkv_stats_get(db, &stats, &err), "stats 2") && stats.checkpoints == 1);
  /* Every counter by name, as jkv_stat_name lists them; an unknown name is an error. */
  double value = -1;
  CHECK(ok(jkv_stat_get(db, "checkpoints", &value, &err), "stat checkpoints") && value == 1);
  CHECK(ok(jkv_stat_get(db, "commits", &value, &err), "stat commits") && value == stats.commits);
  int names = 0;
  for (const char* name; (name = jkv_stat_name(names)) != NULL; ++names) {
    CHECK(ok(jkv_stat_get(db, name, &value, &err), name));
  }
  CHECK(names > 40 && jkv_stat_name(-1) == NULL);
  /* The I/O of each kind of file by name too: the log was written and synced, its truncate
   * (TRUNCATE above) counted. */
  CHECK(ok(jkv_stat_get(db, "wal_writes", &value, &err), "stat wal_writes") && value > 0);
  CHECK(ok(jkv_stat_get(db, "wal_truncates", &value, &err), "stat wal_truncates") && value >= 1);
  CHECK(ok(jkv_stat_get(db, "database_bytes_written", &value, &err), "stat db bytes") &&
        value >= 4096);
  CHECK(strcmp(jkv_stat_name(names - 1), "dir_syncs") == 0);
  CHECK(jkv_stat_get(db, "no_such_counter", &value, &err) == JKV_INVALID_ARGUMENT && err != NULL);
  jkv_free(err);
  err = NULL;

  /* Another handle's writer waits for this one's write transaction: busy after its timeout. */
  jkv_txn* first = NULL;
  if (ok(jkv_begin_write(db, &first, &err), "begin write 3")) {
    jkv_db* other = NULL;
    jkv_options quick;
    jkv_options_init(&quick);
    quick.busy_timeout_ms = 50;
    if (ok(jkv_open(path, &quick, &other, &err), "open other")) {
      jkv_txn* second = NULL;
      jkv_code code = jkv_begin_write(other, &second, &err);
      CHECK(code == JKV_BUSY);
      CHECK(err != NULL && strstr(err, "busy") != NULL);
      jkv_free(err);
      err = NULL;
      CHECK(ok(jkv_close(other, &err), "close other"));
    }
    jkv_txn_end(first);
  }
  CHECK(ok(jkv_close(db, &err), "close"));
}

static void test_errors(void) {
  jkv_options options;
  jkv_options_init(&options);
  options.page_size = 3000;
  jkv_db* db = NULL;
  char other[4200];
  snprintf(other, sizeof other, "%s.other", path);
  CHECK(jkv_open(other, &options, &db, &err) == JKV_INVALID_ARGUMENT && db == NULL);
  CHECK(err != NULL && strstr(err, "page size") != NULL);
  jkv_free(err);
  err = NULL;

  jkv_options_init(&options);
  options.create_if_missing = 0;
  CHECK(jkv_open(other, &options, &db, &err) == JKV_NOT_FOUND && db == NULL);
  CHECK(err != NULL && strstr(err, "no such database") != NULL);
  jkv_free(err);
  err = NULL;
  CHECK(access(other, F_OK) != 0);

  jkv_options_init(&options);
  options.read_only = 1;
  if (ok(jkv_open(path, &options, &db, &err), "open read-only")) {
    CHECK(value_is(db, "cherry", "dark red"));
    CHECK(jkv_put(db, "x", 1, "y", 1, &err) == JKV_FAILED_PRECONDITION);
    CHECK(err != NULL && strstr(err, "read-only") != NULL);
    jkv_free(err);
    err = NULL;
    CHECK(ok(jkv_close(db, &err), "close read-only"));
  }
  CHECK(strcmp(jkv_code_name(JKV_BUSY), "JKV_BUSY") == 0);
  CHECK(jkv_close(NULL, &err) == JKV_OK);
}

/* The hooks see each commit that wrote, in order; the WAL hook names contiguous frames. */
struct hook_log {
  int commits;
  uint64_t last_sequence;
  int wal_commits;
  uint32_t next_frame; /* the frame the next commit must start at (0: not known yet) */
  int frames_ok;
};

static void on_commit(void* arg, const jkv_commit_info* info) {
  struct hook_log* log = (struct hook_log*)arg;
  ++log->commits;
  if (info->sequence != log->last_sequence + 1 || info->pages == 0) log->frames_ok = 0;
  log->last_sequence = info->sequence;
}

static void on_wal_commit(void* arg, const jkv_wal_commit_info* info) {
  struct hook_log* log = (struct hook_log*)arg;
  ++log->wal_commits;
  if (info->log != 0 || info->first_frame > info->last_frame) log->frames_ok = 0;
  if (log->next_frame != 0 && info->first_frame != log->next_frame) log->frames_ok = 0;
  log->next_frame = info->last_frame + 1;
}

static void test_hooks_and_backup(void) {
  char hooked[4200], copy[4200];
  snprintf(hooked, sizeof hooked, "%s.hooked", path);
  snprintf(copy, sizeof copy, "%s.copy", path);
  struct hook_log log = {0, 0, 0, 0, 1};
  jkv_options options;
  jkv_options_init(&options);
  CHECK(options.commit_hook == NULL && options.wal_hook == NULL && options.auto_vacuum == 0);
  options.journal_mode = JKV_JOURNAL_WAL;
  options.checkpoint_policy = "manual"; /* the log keeps growing: frames stay contiguous */
  options.commit_hook = on_commit;
  options.commit_hook_arg = &log;
  options.wal_hook = on_wal_commit;
  options.wal_hook_arg = &log;
  jkv_db* db = NULL;
  if (!ok(jkv_open(hooked, &options, &db, &err), "open hooked")) return;
  for (int i = 0; i < 20; ++i) {
    char key[16];
    snprintf(key, sizeof key, "k%02d", i);
    CHECK(ok(jkv_put(db, key, strlen(key), "v", 1, &err), "hooked put"));
  }
  int existed = -1;
  CHECK(ok(jkv_delete(db, "absent", 6, &existed, &err), "delete absent") && existed == 0);
  CHECK(log.commits == 20 && log.wal_commits == 20 && log.last_sequence == 20);
  CHECK(log.frames_ok);

  jkv_backup_result r;
  memset(&r, 0, sizeof r);
  unlink(copy);
  if (ok(jkv_backup(db, copy, 1, &r, &err), "backup")) {
    CHECK(r.keys == 20 && r.pages > 0 && r.bytes == (uint64_t)r.pages * 4096);
  }
  CHECK(jkv_backup(db, copy, 0, NULL, &err) == JKV_ALREADY_EXISTS);
  CHECK(err != NULL && strstr(err, copy) != NULL);
  jkv_free(err);
  err = NULL;

  /* 300 keys put and deleted again leave free pages: jkv_compact gives them back. */
  char big[100];
  memset(big, 'b', sizeof big);
  for (int i = 0; i < 300; ++i) {
    char key[16];
    snprintf(key, sizeof key, "z%03d", i);
    CHECK(ok(jkv_put(db, key, strlen(key), big, sizeof big, &err), "put to delete"));
  }
  for (int i = 0; i < 300; ++i) {
    char key[16];
    snprintf(key, sizeof key, "z%03d", i);
    CHECK(ok(jkv_delete(db, key, strlen(key), &existed, &err), "delete") && existed == 1);
  }
  jkv_compact_result c;
  memset(&c, 0, sizeof c);
  if (ok(jkv_compact(db, &c, &err), "compact")) {
    CHECK(c.free_pages_before > 0 && c.pages < c.pages_before && c.keys == 20);
    CHECK(c.bytes == (uint64_t)c.pages * 4096); /* the log was copied in and the file cut */
    CHECK(!c.checkpoint_blocked);
  }
  CHECK(value_is(db, "k19", "v"));
  CHECK(ok(jkv_close(db, &err), "close hooked"));
  jkv_options_init(&options);
  if (ok(jkv_open(copy, &options, &db, &err), "open the copy")) {
    CHECK(value_is(db, "k19", "v"));
    CHECK(ok(jkv_close(db, &err), "close the copy"));
  }
}

/* A commit that waits past the busy timeout for another connection's reader (rollback modes)
 * stays open: committed again once the reader is gone, it applies everything. */
static void test_busy_commit_is_retried(void) {
  char rb[4200];
  snprintf(rb, sizeof rb, "%s.rollback", path);
  jkv_options options;
  jkv_options_init(&options);
  options.journal_mode = JKV_JOURNAL_DELETE;
  options.busy_timeout_ms = 50;
  jkv_db* writer = NULL;
  jkv_db* reader = NULL;
  if (!ok(jkv_open(rb, &options, &writer, &err), "open writer")) return;
  if (!ok(jkv_open(rb, &options, &reader, &err), "open reader")) return;
  jkv_txn* snapshot = NULL;
  jkv_txn* txn = NULL;
  CHECK(ok(jkv_begin_read(reader, &snapshot, &err), "begin read"));
  CHECK(ok(jkv_begin_write(writer, &txn, &err), "begin write"));
  CHECK(ok(jkv_txn_put(txn, "a", 1, "1", 1, &err), "txn put"));
  CHECK(jkv_txn_commit(txn, &err) == JKV_BUSY);
  CHECK(err != NULL && strstr(err, "still open") != NULL);
  jkv_free(err);
  err = NULL;
  CHECK(ok(jkv_txn_put(txn, "b", 1, "2", 1, &err), "put after busy")); /* still open */
  jkv_txn_end(snapshot);
  CHECK(ok(jkv_txn_commit(txn, &err), "commit again"));
  CHECK(value_is(reader, "a", "1") && value_is(reader, "b", "2"));
  CHECK(ok(jkv_close(reader, &err), "close reader"));
  CHECK(ok(jkv_close(writer, &err), "close writer"));
}

static void test_across(void) {
  char a_path[4200], b_path[4200], c_path[4200];
  snprintf(a_path, sizeof a_path, "%s.across-a", path);
  snprintf(b_path, sizeof b_path, "%s.across-b", path);
  snprintf(c_path, sizeof c_path, "%s.across-c", path);
  jkv_options options;
  jkv_options_init(&options);
  options.journal_mode = JKV_JOURNAL_PERSIST;
  jkv_db* dbs[2] = {NULL, NULL};
  jkv_db* c = NULL;
  if (!ok(jkv_open(a_path, &options, &dbs[0], &err), "open a")) return;
  if (!ok(jkv_open(b_path, &options, &dbs[1], &err), "open b")) return;
  options.journal_mode = JKV_JOURNAL_WAL;
  if (!ok(jkv_open(c_path, &options, &c, &err), "open c")) return;

  jkv_across* across = NULL;
  if (ok(jkv_begin_write_across(dbs, 2, &across, &err), "begin across")) {
    CHECK(jkv_across_txn(across, 2) == NULL);
    CHECK(ok(jkv_txn_put(jkv_across_txn(across, 0), "k", 1, "in a", 4, &err), "put a"));
    CHECK(ok(jkv_txn_put(jkv_across_txn(across, 1), "k", 1, "in b", 4, &err), "put b"));
    /* A part does not commit alone, and ending it leaves it to its jkv_across. */
    CHECK(jkv_txn_commit(jkv_across_txn(across, 0), &err) == JKV_FAILED_PRECONDITION);
    jkv_free(err);
    err = NULL;
    jkv_txn_end(jkv_across_txn(across, 1));
    CHECK(ok(jkv_across_commit(across, &err), "commit across"));
  }
  CHECK(value_is(dbs[0], "k", "in a"));
  CHECK(value_is(dbs[1], "k", "in b"));

  if (ok(jkv_begin_write_across(dbs, 2, &across, &err), "begin across again")) {
    CHECK(ok(jkv_txn_put(jkv_across_txn(across, 0), "k", 1, "gone", 4, &err), "put"));
    jkv_across_end(across); /* rolls back */
  }
  CHECK(value_is(dbs[0], "k", "in a"));

  jkv_db* mixed[2] = {dbs[0], c};
  across = NULL;
  CHECK(jkv_begin_write_across(mixed, 2, &across, &err) == JKV_FAILED_PRECONDITION);
  CHECK(across == NULL && err != NULL && strstr(err, "same journal family") != NULL);
  jkv_free(err);
  err = NULL;
  CHECK(ok(jkv_close(dbs[0], &err), "close a"));
  CHECK(ok(jkv_close(dbs[1], &err), "close b"));
  CHECK(ok(jkv_close(c, &err), "close c"));
}

/* The whole file, NUL-terminated, its length in *len; NULL when it cannot be read. */
static char* read_all(const char* file, size_t* len) {
  FILE* f = fopen(file, "rb");
  if (f == NULL) return NULL;
  char* buf = malloc(1 << 20);
  *len = fread(buf, 1, (1 << 20) - 1, f);
  buf[*len] = 0;
  fclose(f);
  return buf;
}

/* memmem without _GNU_SOURCE. */
static int contains(const char* buf, size_t len, const char* what) {
  const size_t n = strlen(what);
  for (size_t i = 0; i + n <= len; ++i) {
    if (memcmp(buf + i, what, n) == 0) return 1;
  }
  return 0;
}

/* record_path writes a trace (engine/trace.h) of the handle's operations; keys and values are
   kept only when asked, and a trace that cannot be created fails the open. */
static void test_record(void) {
  for (int keep = 0; keep <= 1; ++keep) {
    char db_path[4200], trace_path[4200];
    snprintf(db_path, sizeof db_path, "%s.record-%d", path, keep);
    snprintf(trace_path, sizeof trace_path, "%s.record-%d.jkvtrace", path, keep);
    jkv_options options;
    jkv_options_init(&options);
    CHECK(options.record_path == NULL && options.record_keep_values == 0);
    options.record_path = trace_path;
    options.record_keep_values = keep;
    jkv_db* db = NULL;
    if (!ok(jkv_open(db_path, &options, &db, &err), "open recording")) return;
    CHECK(ok(jkv_put(db, "recorded-key", 12, "recorded-value", 14, &err), "put"));
    CHECK(value_is(db, "recorded-key", "recorded-value"));
    CHECK(ok(jkv_close(db, &err), "close recording"));
    size_t len = 0;
    char* trace = read_all(trace_path, &len);
    CHECK(trace != NULL && len > 16 && memcmp(trace, "JKVTRACE", 8) == 0);
    if (trace != NULL) {
      CHECK(contains(trace, len, "recorded-key") == keep);
      CHECK(contains(trace, len, "recorded-value") == keep);
    }
    free(trace);
  }
  jkv_options options;
  jkv_options_init(&options);
  char db_path[4200];
  snprintf(db_path, sizeof db_path, "%s.record-bad", path);
  options.record_path = "/nonexistent-folder/x.jkvtrace";
  jkv_db* db = NULL;
  CHECK(jkv_open(db_path, &options, &db, &err) != JKV_OK && db == NULL);
  CHECK(err != NULL && strstr(err, "x.jkvtrace") != NULL);
  jkv_free(err);
  err = NULL;
}

/* Pipelined commits: at wal full, handles wait in commit order, each commit is visible once
   its handle is ready, the next transaction builds on a pending one, and jkv_close flushes the
   handles not waited for (which stay valid after it). At normal the handle is ready at once. */
static void test_commit_async(void) {
  for (int full = 0; full <= 1; ++full) {
    char db_path[4200];
    snprintf(db_path, sizeof db_path, "%s.async-%d", path, full);
    jkv_options options;
    jkv_options_init(&options);
    options.journal_mode = JKV_JOURNAL_WAL;
    options.sync = full ? JKV_SYNC_FULL : JKV_SYNC_NORMAL;
    options.checkpoint_policy = "manual";
    jkv_db* db = NULL;
    if (!ok(jkv_open(db_path, &options, &db, &err), "open async")) return;
    enum { kCommits = 8 };
    jkv_commit* commits[kCommits];
    for (int i = 0; i < kCommits; ++i) {
      commits[i] = NULL;
      char key[16];
      snprintf(key, sizeof key, "key%d", i);
      jkv_txn* txn = NULL;
      if (!ok(jkv_begin_write(db, &txn, &err), "begin write")) break;
      if (i > 0) {
        char prev[16];
        char* value = NULL;
        snprintf(prev, sizeof prev, "key%d", i - 1);
        CHECK(ok(jkv_txn_get(txn, prev, strlen(prev), &value, NULL, &err), "sees pending"));
        jkv_free(value);
      }
      CHECK(ok(jkv_txn_put(txn, key, strlen(key), "v", 1, &err), "put"));
      CHECK(ok(jkv_txn_commit_async(txn, &commits[i], &err), "commit async"));
      CHECK(commits[i] != NULL);
      if (!full) CHECK(jkv_commit_ready(commits[i]));
    }
    for (int i = 0; i < kCommits / 2; ++i) {
      if (commits[i] == NULL) continue;
      CHECK(ok(jkv_commit_wait(commits[i], &err), "wait"));
      CHECK(ok(jkv_commit_wait(commits[i], &err), "wait again"));
      for (int j = 0; j <= i; ++j) CHECK(commits[j] != NULL && jkv_commit_ready(commits[j]));
      char key[16];
      snprintf(key, sizeof key, "key%d", i);
      CHECK(value_is(db, key, "v"));
    }
    jkv_commit_free(commits[kCommits - 1]); /* never waited: committed all the same */
    CHECK(ok(jkv_close(db, &err), "close with commits pending"));
    for (int i = kCommits / 2; i < kCommits - 1; ++i) {
      CHECK(commits[i] != NULL && jkv_commit_ready(commits[i]));
      if (commits[i] != NULL) CHECK(ok(jkv_commit_wait(commits[i], &err), "wait after close"));
    }
    for (int i = 0; i < kCommits - 1; ++i) jkv_commit_free(commits[i]);
    jkv_commit_free(NULL);
    if (!ok(jkv_open(db_path, &options, &db, &err), "reopen async")) return;
    CHECK(value_is(db, "key7", "v"));
    CHECK(ok(jkv_close(db, &err), "close"));
  }
}

int main(void) {
  const char* dir = getenv("TEST_TMPDIR");
  snprintf(path, sizeof path, "%s/capi.db", dir != NULL ? dir : "/tmp");
  test_basics();
  test_errors();
  test_hooks_and_backup();
  test_busy_commit_is_retried();
  test_across();
  test_record();
  test_commit_async();
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
