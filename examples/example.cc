// A complete journalkv program: open a database, write atomically, read a snapshot, scan.
#include <cstdio>
#include <memory>

#include "engine/db.h"

int main() {
  journalkv::Options options;
  options.journal_mode = journalkv::JournalMode::kTruncate;
  auto db = journalkv::Db::Open("/tmp/journalkv-example.db", options);
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }

  // An atomic multi-key write: both keys, or neither.
  auto txn = (*db)->BeginWrite();
  if (!txn.ok()) return 1;
  if (!(*txn)->Put("apple", "red").ok() || !(*txn)->Put("banana", "yellow").ok()) return 1;
  if (absl::Status s = (*txn)->Commit(); !s.ok()) {
    std::fprintf(stderr, "commit: %s\n", s.ToString().c_str());
    return 1;
  }

  // An autocommit write, then a point read.
  if (!(*db)->Put("cherry", "dark red").ok()) return 1;
  auto value = (*db)->Get("banana");
  if (!value.ok() || !value->has_value()) return 1;
  std::printf("banana is %s\n", (*value)->c_str());

  // An ordered scan of one snapshot.
  auto snapshot = (*db)->BeginRead();
  if (!snapshot.ok()) return 1;
  auto it = (*snapshot)->NewIterator();
  for (it->Seek("b"); it->Valid(); it->Next()) {
    auto v = it->value();
    if (!v.ok()) return 1;
    std::printf("%s = %s\n", std::string(it->key()).c_str(), v->c_str());
  }
  return it->status().ok() ? 0 : 1;
}
