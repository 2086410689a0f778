// The fixture that wal2_test and wal2_checkpoint_test share: a WAL2 (or WAL) database on an
// in-memory file system, opened through the public API.
#ifndef JOURNALKV_TESTS_WAL2_TESTING_H_
#define JOURNALKV_TESTS_WAL2_TESTING_H_

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {

inline constexpr char kWal2Path[] = "/x.db";

inline std::string Wal2Key(int i) { return absl::StrCat("key", 100000 + i); }

class Wal2Test : public ::testing::Test {
 protected:
  Options ModeOptions(JournalMode mode) {
    Options o;
    o.journal_mode = mode;
    o.file_system = &fs_;
    return o;
  }
  std::unique_ptr<Db> Open(const Options& o) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kWal2Path, o);
    EXPECT_THAT(db, ::journalkv::testing::IsOk());
    return db.ok() ? std::move(*db) : nullptr;
  }
  bool Exists(const std::string& p) { return *fs_.Exists(p); }

  vfs::MemFileSystem fs_;
};

}  // namespace journalkv

#endif  // JOURNALKV_TESTS_WAL2_TESTING_H_
