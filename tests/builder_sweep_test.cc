// A sorted load built bottom-up (btree/builder.h, through WriteTransaction::Put) under power
// loss and process crash at every mutation, in a rollback mode and WAL: with a 16-page cache the
// build spills, so pages of the half-built tree reach the file before the commit. After each
// crash and recovery the database holds either nothing (the old content) or every pair (the
// new), and passes its check; once the commit returned OK, every pair. (The compaction's build
// is swept by compact_sweep_test: Compact's image is built the same way.)
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compact_testing.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using compact_testing::kPath;
using compact_testing::Model;
using compact_testing::Read;

constexpr int kPairs = 1500;

std::string Key(int i) { return absl::StrCat("key", 100000 + i); }
// Some values overflow (chains written during the build).
std::string Value(int i) {
  return absl::StrCat("value-", i, std::string(i % 97 == 0 ? 9000 : i % 200, 'v'));
}

Model Pairs() {
  Model m;
  for (int i = 0; i < kPairs; ++i) m[Key(i)] = Value(i);
  return m;
}

struct Outcome {
  bool committed = false;
  uint64_t built = 0;
  absl::StatusOr<Model> contents = Model();
};

Outcome LoadThenCrash(JournalMode mode, int64_t crash_after, uint64_t seed, bool power_loss) {
  vfs::MemFileSystem base;
  base.MakeDirectoryForTesting("/d");
  vfs::FaultInjectingFileSystem fs(&base);
  Options o;
  o.file_system = &fs;
  o.journal_mode = mode;
  o.cache_pages = 16;
  Outcome out;
  {
    std::unique_ptr<Db> db = *Db::Open(kPath, o);
    if (crash_after >= 0) fs.CrashAfterMutations(crash_after);
    absl::StatusOr<std::unique_ptr<WriteTransaction>> w = db->BeginWrite();
    absl::Status s = w.status();
    for (int i = 0; s.ok() && i < kPairs; ++i) s = (*w)->Put(Key(i), Value(i));
    if (s.ok()) s = (*w)->Commit();
    out.committed = s.ok();
    if (w.ok()) w->reset();
    out.built = db->Stats().built_pairs;
    db.reset();
  }
  if (power_loss) {
    JKV_CHECK(fs.SimulatePowerLoss(seed).ok());
  } else {
    fs.SimulateProcessCrash();
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(kPath, o);
  if (!db.ok()) {
    out.contents = db.status();
    return out;
  }
  out.contents = Read(**db);
  return out;
}

class BuilderSweepTest : public ::testing::TestWithParam<JournalMode> {};

TEST_P(BuilderSweepTest, ACrashAtEveryMutationLeavesTheOldOrTheNewContent) {
  const JournalMode mode = GetParam();
  const Model pairs = Pairs();
  // The load alone, uncrashed: it is built.
  Outcome clean = LoadThenCrash(mode, -1, 0, true);
  ASSERT_TRUE(clean.committed);
  ASSERT_EQ(clean.built, static_cast<uint64_t>(kPairs));
  ASSERT_THAT(clean.contents, IsOk());
  ASSERT_TRUE(*clean.contents == pairs);
  // Every mutation in the default tier (the load makes a few hundred); under a sanitizer every
  // fifth.
  const int stride = testing::ScaledForSanitizer(1, 5);
  int points = 0;
  for (int64_t n = 0;; n += stride) {
    for (const bool power_loss : {true, false}) {
      Outcome r = LoadThenCrash(mode, n, n, power_loss);
      SCOPED_TRACE(absl::StrCat(power_loss ? "power loss" : "process crash", " after ", n,
                                " mutations"));
      ASSERT_THAT(r.contents, IsOk());
      const bool old_content = r.contents->empty();
      const bool new_content = *r.contents == pairs;
      EXPECT_TRUE(old_content || new_content) << r.contents->size() << " pairs";
      if (r.committed) {
        EXPECT_TRUE(new_content) << "a commit that returned OK was lost";
      }
      if (r.committed && power_loss) {
        std::printf("%s: %d crash points\n", std::string(JournalModeName(mode)).c_str(),
                    points);
        return;
      }
    }
    ++points;
    ASSERT_LT(n, 50000) << "the load never completed";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BuilderSweepTest,
                         ::testing::Values(JournalMode::kDelete, JournalMode::kWal),
                         [](const auto& info) { return std::string(JournalModeName(info.param)); });

}  // namespace
}  // namespace journalkv
