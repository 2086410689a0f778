// Counted commits: the workload of the group-commit fault tests (wal_group_fault_test.cc,
// wal_group_fault_sweep_test.cc) and what a state of the database holds of it. The guarantees
// those tests check (P1-P4):
//   P1. A commit acknowledged at FULL or EXTRA survives any later power loss and any process
//       crash, whoever flushed it, whatever the other connections' levels.
//   P2. No transaction is ever partly present after a crash.
//   P3. After a process crash every acknowledged commit is there (any level).
//   P4. A commit that returned an error is never visible to any connection while they stay
//       open, and no commit acknowledged after it builds on it; after a crash it may be
//       present only if no commit acknowledged after its failure is present. Commits that fail
//       because another thread's or connection's flush failed return an error too.
//
// Every commit here is a counted one: it reads the shared keys "counter" and "last", writes
// counter + 1, sets "last" to its own id and writes a key of its own whose value is the "last"
// it read (the commit it built on). So in any whole state the counter equals the number of own
// keys, and the own keys form one chain from "last" back to the first commit: a commit that
// read a lost or failed commit's increment, or a state holding part of a transaction, or a hole
// in the order, breaks one of them. In memory each commit's outcome (acknowledged or failed, in
// one global order) and the commit it built on are kept, so "built on a failed commit" is
// checked directly too.
#ifndef JOURNALKV_TESTS_COUNTED_COMMITS_H_
#define JOURNALKV_TESTS_COUNTED_COMMITS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "engine/db.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"

namespace journalkv::counted {

// One counted commit with id `id` (> 0). *pred is the id of the commit it built on (0: none),
// or -1 when it failed before reading it.
absl::Status CountedCommit(Db& db, int id, int* pred);

// A snapshot's counted commits.
struct Contents {
  std::string error;  // empty: read whole
  int counter = 0;
  int last = 0;
  std::map<int, int> own;  // id -> the id it built on
};
Contents Read(ReadTransaction& r);
Contents Read(Db& db);

// P2 on one state: the counter equals the number of own keys, and the own keys are exactly the
// chain from "last" back to the first commit (whole transactions, in one order, no hole).
// Empty when whole, else what is wrong.
std::string Whole(const Contents& c);

// The options every handle of these tests starts from: small pages, so that commits split
// leaves.
Options BaseOptions(vfs::FileSystem* fs, JournalMode mode, SyncLevel sync);

}  // namespace journalkv::counted

#endif  // JOURNALKV_TESTS_COUNTED_COMMITS_H_
