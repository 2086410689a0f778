// A small program for the strace cross-check (syscall_counter_test.sh): it commits 20
// single-put transactions in each of journalkv (delete journal, sync full), SQLite (rollback
// journal, synchronous FULL) and LMDB (default), then prints what the interposed counters saw.
#include <lmdb.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/syscall_counter.h"
#include "engine/db.h"

namespace {

void Fail(const std::string& what) {
  std::fprintf(stderr, "syscall_probe: %s\n", what.c_str());
  std::exit(1);
}

void JournalkvCommits(const std::string& dir) {
  auto db = journalkv::Db::Open(dir + "/probe.jkv", journalkv::Options());
  if (!db.ok()) Fail(db.status().ToString());
  for (int i = 0; i < 20; ++i) {
    if (!(*db)->Put(absl::StrCat("k", i), "value").ok()) Fail("journalkv put");
  }
}

void SqliteCommits(const std::string& dir) {
  sqlite3* db = nullptr;
  if (sqlite3_open((dir + "/probe.sqlite").c_str(), &db) != SQLITE_OK) Fail("sqlite open");
  sqlite3_exec(db, "PRAGMA synchronous=FULL; CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB) "
                   "WITHOUT ROWID;", nullptr, nullptr, nullptr);
  for (int i = 0; i < 20; ++i) {
    const std::string sql = absl::StrCat("INSERT INTO kv VALUES('k", i, "', 'value');");
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) Fail("sqlite");
  }
  sqlite3_close(db);
}

void LmdbCommits(const std::string& dir) {
  MDB_env* env = nullptr;
  if (mdb_env_create(&env) != 0) Fail("lmdb create");
  mdb_env_set_mapsize(env, 64 << 20);
  if (mdb_env_open(env, dir.c_str(), 0, 0644) != 0) Fail("lmdb open");
  for (int i = 0; i < 20; ++i) {
    MDB_txn* txn = nullptr;
    MDB_dbi dbi;
    mdb_txn_begin(env, nullptr, 0, &txn);
    mdb_dbi_open(txn, nullptr, 0, &dbi);
    std::string k = absl::StrCat("k", i), v = "value";
    MDB_val key{k.size(), k.data()}, val{v.size(), v.data()};
    if (mdb_put(txn, dbi, &key, &val, 0) != 0 || mdb_txn_commit(txn) != 0) Fail("lmdb put");
  }
  mdb_env_close(env);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) Fail("usage: syscall_probe DIR");
  if (!journalkv::bench::SyscallCountingWorks()) Fail("interposition is not in effect");
  const std::string dir = argv[1];
  JournalkvCommits(dir);
  SqliteCommits(dir);
  LmdbCommits(dir);
  const journalkv::bench::SyscallCounts c = journalkv::bench::SyscallSnapshot();
  // The self-test above issued one fdatasync that strace also sees.
  std::printf("fsync %lu\nfdatasync %lu\nwrites %lu\n", static_cast<unsigned long>(c.fsync),
              static_cast<unsigned long>(c.fdatasync), static_cast<unsigned long>(c.writes));
  return 0;
}
