// What tests/compact_test.cc and tests/compact_sweep_test.cc share: the keys, a database's
// contents (after its check), a file's size, and a database with many free pages.
#ifndef JOURNALKV_TESTS_COMPACT_TESTING_H_
#define JOURNALKV_TESTS_COMPACT_TESTING_H_

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/vfs.h"

namespace journalkv {
namespace compact_testing {

using ::journalkv::testing::IsOk;

inline constexpr char kPath[] = "/d/x.db";

inline std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
inline std::string Value(int i) { return absl::StrCat("value-", i, std::string(i % 300, 'v')); }

using Model = std::map<std::string, std::string>;

// The crash sweeps' step between crash points: every mutation, every third under a sanitizer,
// every tenth under TSan.
inline int SweepStride() {
  if (testing::UnderThreadSanitizer()) return 10;
  return testing::ScaledForSanitizer(1, 3);
}

inline absl::StatusOr<Model> Read(Db& db) {
  JKV_ASSIGN_OR_RETURN(CheckResult check, db.Check());
  if (!check.ok()) return absl::DataLossError(check.problems.front());
  Model out;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> txn, db.BeginRead());
  std::unique_ptr<Iterator> it = txn->NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    JKV_ASSIGN_OR_RETURN(std::string value, it->value());
    out[std::string(it->key())] = std::move(value);
  }
  JKV_RETURN_IF_ERROR(it->status());
  return out;
}

inline absl::StatusOr<uint64_t> FileSize(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> f,
                       fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther}));
  return f->Size();
}

// 2,000 keys, then three quarters of them (a run in the middle) deleted: many free pages.
inline constexpr int kKeys = 2000;
inline constexpr int kFirstDeleted = 200;
inline constexpr int kLastDeleted = 1700;

inline Model Fill(Db& db) {
  Model model;
  auto w = *db.BeginWrite();
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_THAT(w->Put(Key(i), Value(i)), IsOk());
    model[Key(i)] = Value(i);
  }
  EXPECT_THAT(w->Commit(), IsOk());
  w = *db.BeginWrite();
  for (int i = kFirstDeleted; i < kLastDeleted; ++i) {
    EXPECT_THAT(w->Delete(Key(i)), IsOk());
    model.erase(Key(i));
  }
  EXPECT_THAT(w->Commit(), IsOk());
  return model;
}

}  // namespace compact_testing
}  // namespace journalkv

#endif  // JOURNALKV_TESTS_COMPACT_TESTING_H_
